/*  gw_error.c - the error table: one row per name kennel answers with.

    A row is {name, HTTP status or 0, default text}, indexed by its
    gw_error_t. Each row keeps to one line from its `[GW_E_` to its name
    and status: tests/error_table.py reads them so, to check them against
    docs/PROTOCOL.md's "Error names".
*/
#include "gw_error.h"

#include <stddef.h>
#include <string.h>

typedef struct {
    const char *name;
    int status;
    const char *text;
} row_t;

static const row_t table[GW_E_COUNT] = {
    [GW_E_INVALID_CONVERSATION_ID] = {"InvalidConversationId", 400,
                                      "conversation_id must match [A-Za-z0-9._-]{1,128} and not be \".\" or \"..\""},
    [GW_E_NO_SUCH_CONVERSATION] = {"NoSuchConversation", 404, "no conversation has this id"},
    [GW_E_INVALID_REQUEST] = {"InvalidRequest", 400, "a field of the request breaks its rule"},
    [GW_E_UNKNOWN_REQUEST] = {"UnknownRequest", 0, "unknown control request type"},
    [GW_E_INVALID_TOOLS] = {"InvalidTools", 400, "invalid tool list"},
    [GW_E_UNKNOWN_KERNEL] = {"UnknownKernel", 400, "kernel must be \"python\" or a kernel named in the config file"},
    [GW_E_TOO_MANY_CONVERSATIONS] = {"TooManyConversations", 403,
                                     "the gateway already holds its maximum of conversations (max_conversations)"},
    [GW_E_CAPACITY_ERROR] = {"CapacityError", 403, "no room for another conversation"},
    [GW_E_POLICY_ERROR] = {"PolicyError", 400, "bad policy"},
    [GW_E_OPEN_FAILED] = {"OpenFailed", 500, "the conversation could not be created"},
    [GW_E_KERNEL_START_FAILED] = {"KernelStartFailed", 500, "the kernel could not be started"},
    [GW_E_CONFINEMENT_UNAVAILABLE] = {"ConfinementUnavailable", 503,
                                      "this host cannot confine kernels as configured: the start-up probe failed"},
    [GW_E_GATEWAY_DRAINING] = {"GatewayDraining", 503,
                               GW_DRAINING ": it opens no new conversation; open it on another gateway"},

    [GW_E_INVALID_PATH] = {"InvalidPath", 400, "the path is not a relative path beneath the workspace"},
    [GW_E_INVALID_OFFSET] = {"InvalidOffset", 400, "offset must be 0 or the file's size"},
    [GW_E_NO_SUCH_FILE] = {"NoSuchFile", 404, "no such file or directory"},
    [GW_E_NOT_A_DIRECTORY] = {"NotADirectory", 400, "not a directory"},
    [GW_E_IS_A_DIRECTORY] = {"IsADirectory", 400, "a directory, not a file"},
    [GW_E_SYMLINK_REFUSED] = {"SymlinkRefused", 403, "a symlink (links are never followed)"},
    [GW_E_HARDLINK_REFUSED] = {"HardlinkRefused", 403, "the file has more than one name (a hardlink)"},
    [GW_E_NOT_A_REGULAR_FILE] = {"NotARegularFile", 403, "not a regular file (a FIFO, socket or device)"},
    [GW_E_PERMISSION_DENIED] = {"PermissionDenied", 403, "permission denied"},
    [GW_E_WORKSPACE_FULL] = {"WorkspaceFull", 507,
                             "the workspace's quota (workspace_bytes or workspace_files) is full"},
    [GW_E_DIRECTORY_NOT_EMPTY] = {"DirectoryNotEmpty", 409, "the directory is not empty"},
    [GW_E_FILE_EXISTS] = {"FileExists", 409, "a file or directory of this name exists"},
    [GW_E_TOO_LARGE] = {"TooLarge", 413, "the file is larger than one step of 4 MiB"},
    [GW_E_FILE_API_UNAVAILABLE] = {"FileApiUnavailable", 503, "openat2 is unavailable (Linux 5.6 or later is needed)"},
    [GW_E_FILE_ERROR] = {"FileError", 500, GW_FILES_ERROR_UNSAID},

    [GW_E_NO_SUCH_CHECKPOINT] = {"NoSuchCheckpoint", 404, "no checkpoint has this id"},
    [GW_E_UNREADABLE_NOTEBOOK] = {"UnreadableNotebook", 400, "the file is not a notebook"},
    [GW_E_TOO_MANY_SESSIONS] = {"TooManySessions", 403, "the kernel holds its maximum of sessions"},

    [GW_E_CONVERSATION_CLOSED] = {"ConversationClosed", 0, "the conversation was closed; the kernel is gone"},
    [GW_E_KERNEL_DIED] = {"KernelDied", 0,
                          "the kernel died; the next request starts a fresh kernel, variables are lost"},
    [GW_E_KERNEL_RESTARTED] = {"KernelRestarted", 0, "the kernel was restarted; variables are lost"},
    [GW_E_EXECUTION_TIMEOUT] = {"ExecutionTimeout", 0, "execution exceeded its execution_timeout"},
    [GW_E_QUEUE_FULL] = {"QueueFull", 0, "too many queued requests"},
    [GW_E_NO_KERNEL] = {"NoKernel", 0, "no kernel is running"},

    [GW_E_TOOL_UNAVAILABLE] = {"ToolUnavailable", 0, "no client is serving stdin for a tool call"},
    [GW_E_TOOL_ARGUMENTS_TOO_LARGE] = {"ToolArgumentsTooLarge", 0, "the call's arguments are over the limit"},
    [GW_E_BAD_TOOL_REQUEST] = {"BadToolRequest", 0, "a tool_request needs a call_id string not already pending"},
    [GW_E_UNKNOWN_TOOL] = {"UnknownTool", 0, "no tool of that name is declared"},
    [GW_E_TOOL_LIMIT] = {"ToolLimit", 0, "this execution already made its maximum of tool calls (max_tool_calls)"},
    [GW_E_INVALID_TOOL_ARGUMENTS] = {"InvalidToolArguments", 0, "the arguments do not meet the tool's schema"},
    /* too many calls wait for their host: a conversation's
       max_concurrent_tool_calls (gw_calls.c), or the host commands running
       at once in a process (mcp.max_commands) */
    [GW_E_TOOL_BUSY] = {"ToolBusy", 0, "too many tool calls are waiting for their host"},
    [GW_E_TOOL_TIMEOUT] = {"ToolTimeout", 0, "the host did not answer the tool call in time (tool_timeout)"},

    [GW_E_TOOL_FAILED] = {"ToolFailed", 0, "the tool's host failed"},
    [GW_E_BAD_TOOL_RESULT] = {"BadToolResult", 0, "the tool's host answered no JSON value"},
    [GW_E_TOOL_CANCELLED] = {"ToolCancelled", 0, "the call was cancelled"},
};

/* An out-of-range value is a programming error; FileError's row answers
   it rather than a read past the table. */
static const row_t *
row_of (gw_error_t error)
{
    return (unsigned) error < GW_E_COUNT ? &table[error] : &table[GW_E_FILE_ERROR];
}

const char *
gw_error_name (gw_error_t error)
{
    return row_of (error)->name;
}

const char *
gw_error_text (gw_error_t error)
{
    return row_of (error)->text;
}

int
gw_error_status (gw_error_t error)
{
    return row_of (error)->status;
}

bool
gw_error_lookup (const char *name, gw_error_t *error)
{
    for (size_t i = 0; name && i < GW_E_COUNT; i++)
        if (table[i].name && strcmp (table[i].name, name) == 0) {
            *error = (gw_error_t) i;
            return true;
        }
    return false;
}

int
gw_error_http_status (const char *name)
{
    gw_error_t error;
    int status = gw_error_lookup (name, &error) ? gw_error_status (error) : 0;
    return status ? status : 400;
}
