/*  gw_error.h - the error names kennel answers with, each defined once
    (gw_error.c): its name (a reply's ename), its default text (the evalue
    when the caller has nothing more precise) and, where the HTTP front
    answers it as one, its HTTP status. docs/PROTOCOL.md's "Error names"
    lists the same table: tests/error_table.py checks both ways. Depends on
    nothing of the gateway.
*/
#ifndef GW_ERROR_H_INCLUDED
#define GW_ERROR_H_INCLUDED

#include <stdbool.h>

typedef enum {
    /* the control API (docs/PROTOCOL.md §3) */
    GW_E_INVALID_CONVERSATION_ID,
    GW_E_NO_SUCH_CONVERSATION,
    GW_E_INVALID_REQUEST,
    GW_E_UNKNOWN_REQUEST,
    GW_E_INVALID_TOOLS,
    GW_E_UNKNOWN_KERNEL,
    GW_E_TOO_MANY_CONVERSATIONS,
    GW_E_CAPACITY_ERROR,
    GW_E_POLICY_ERROR,
    GW_E_OPEN_FAILED,
    GW_E_KERNEL_START_FAILED,
    GW_E_CONFINEMENT_UNAVAILABLE,
    GW_E_GATEWAY_DRAINING,
    /* the file service (§3 "Files") */
    GW_E_INVALID_PATH,
    GW_E_INVALID_OFFSET,
    GW_E_NO_SUCH_FILE,
    GW_E_NOT_A_DIRECTORY,
    GW_E_IS_A_DIRECTORY,
    GW_E_SYMLINK_REFUSED,
    GW_E_HARDLINK_REFUSED,
    GW_E_NOT_A_REGULAR_FILE,
    GW_E_PERMISSION_DENIED,
    GW_E_WORKSPACE_FULL,
    GW_E_DIRECTORY_NOT_EMPTY,
    GW_E_FILE_EXISTS,
    GW_E_TOO_LARGE,
    GW_E_FILE_API_UNAVAILABLE,
    GW_E_FILE_ERROR,
    /* the HTTP front's own (gateway/http/README.md) */
    GW_E_NO_SUCH_CHECKPOINT,
    GW_E_UNREADABLE_NOTEBOOK,
    GW_E_TOO_MANY_SESSIONS,
    /* a conversation's executions and requests (§6, §9) */
    GW_E_CONVERSATION_CLOSED,
    GW_E_KERNEL_DIED,
    GW_E_KERNEL_RESTARTED,
    GW_E_EXECUTION_TIMEOUT,
    GW_E_QUEUE_FULL,
    GW_E_NO_KERNEL,
    /* tool calls refused or ended by the gateway (§8) */
    GW_E_TOOL_UNAVAILABLE,
    GW_E_TOOL_ARGUMENTS_TOO_LARGE,
    GW_E_BAD_TOOL_REQUEST,
    GW_E_UNKNOWN_TOOL,
    GW_E_TOOL_LIMIT,
    GW_E_INVALID_TOOL_ARGUMENTS,
    GW_E_TOOL_BUSY,
    GW_E_TOOL_TIMEOUT,
    /* tool calls answered by the MCP front's hosts (gateway/mcp/README.md) */
    GW_E_TOOL_FAILED,
    GW_E_BAD_TOOL_RESULT,
    GW_E_TOOL_CANCELLED,
    GW_E_COUNT
} gw_error_t;

/* The texts that other texts are built on at compile time, so literals. */
/* What every front tells a client refused by the drain (GatewayDraining),
   the whole evalue for a new execution (GW_DRAIN_NO_RUN) and for a
   restart, whose fresh kernel would only be killed at the stop. */
#define GW_DRAINING "the gateway is stopping (draining after SIGTERM)"
#define GW_DRAIN_NO_RUN                                                                                             \
    GW_DRAINING ": it runs no new execution and starts no kernel; open the conversation on another gateway"
#define GW_DRAIN_NO_RESTART                                                                                         \
    GW_DRAINING ": it starts no kernel, a restart included; open the conversation on another gateway"
/* FileError's text: a file call that failed and set no reason. */
#define GW_FILES_ERROR_UNSAID "the file service failed without saying why"

/* The ename, e.g. "NoSuchConversation". */
const char *gw_error_name (gw_error_t error);
/* One sentence, without the name. */
const char *gw_error_text (gw_error_t error);
/* The HTTP status the HTTP front answers it with; 0 for an error that
   never reaches an HTTP client as a status (tool calls, executions). */
int gw_error_status (gw_error_t error);
/* The error of that name: true and *error, else false. */
bool gw_error_lookup (const char *name, gw_error_t *error);
/* The HTTP status of an ename, 400 for one without a status of its own
   (or not in the table): the HTTP front's default for a refusal. */
int gw_error_http_status (const char *name);

#endif
