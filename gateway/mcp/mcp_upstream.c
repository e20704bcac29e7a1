/*  mcp_upstream.c - tools forwarded to another MCP server
    (`kennel mcp --tools-from-mcp CMD`).

    kennel is then an MCP client of `sh -c CMD` over its stdin and stdout:
    initialize, notifications/initialized, tools/list (every page), and a
    tools/call for each call kernel code makes. Its tools become Python
    functions in the kernel, so one cell can call many of them ("code
    mode"). A schema outside the subset the gateway checks arguments with
    is replaced by a loose one with the same parameter names (the upstream
    server checks its own arguments) and logged. A result with isError, a JSON-RPC error, or no
    answer within the timeout is a ToolError in the kernel, as for a host
    command (mcp_hosttools.c): ToolFailed, ToolFailed, ToolTimeout.

    A call's result in the kernel: structuredContent when the server sent
    it, else the text of its text content when that is all it sent, else
    the content list as is.
*/
#include "mcp.h"
#include "gateway/gw_error.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MCP_UPSTREAM_TIMEOUT_MS 60000
#define MCP_UPSTREAM_LINE_MAX (16 * 1024 * 1024)

typedef void(reply_fn) (mcp_upstream_t *self, const json_t *msg, void *arg);

typedef struct {
    json_int_t id;
    reply_fn *fn;
    void *arg;
    int timer;
    mcp_upstream_t *owner;
    /* a kernel's call */
    char *tool;
    mcp_tool_done_fn *done;
    void *done_arg;
    double started;
} request_t;

struct mcp_upstream {
    zloop_t *loop;
    char *cmd;
    const char *setting; /* what named cmd, for log lines */
    pid_t pid;
    int to_fd;   /* its stdin */
    int from_fd; /* its stdout */
    mcp_line_out_t *to; /* its stdin */
    mcp_line_t *from;   /* its stdout */
    json_int_t next_id;
    zlistx_t *requests; /* request_t */
    json_t *tools;      /* its tools, as declarations for the gateway */
    mcp_upstream_ready_fn *ready;
    void *ready_arg;
    bool stopping;
    bool gone; /* it closed its stdout: every call fails at once */
    bool failed; /* it did not start */
};

static void
s_request_free (request_t *r)
{
    gw_timer_end (r->owner->loop, r->timer);
    free (r->tool);
    free (r);
}

static void
s_request_end (mcp_upstream_t *self, request_t *r, const json_t *msg)
{
    void *handle = zlistx_find (self->requests, r);
    if (handle)
        zlistx_detach (self->requests, handle);
    r->fn (self, msg, r);
    s_request_free (r);
}

static int
s_on_timeout (zloop_t *loop, int timer_id, void *arg)
{
    request_t *r = arg;
    r->timer = 0;
    s_request_end (r->owner, r, NULL);
    return 0;
}

static request_t *
s_send_request (mcp_upstream_t *self, const char *method, json_t *params, reply_fn *fn)
{
    request_t *r = wire_xcalloc (1, sizeof *r);
    r->id = ++self->next_id;
    r->fn = fn;
    r->owner = self;
    r->timer = gw_timer_start (self->loop, MCP_UPSTREAM_TIMEOUT_MS, 1, s_on_timeout, r);
    zlistx_add_end (self->requests, r);
    /* unsent (it does not read): the request ends at its timeout */
    mcp_line_send (self->to, mcp_rpc_request (r->id, method, params));
    return r;
}

static void
s_fail (mcp_upstream_t *self, const char *why)
{
    if (self->stopping)
        return;
    self->failed = true;
    gw_log ("mcp_upstream_failed", "{s:s, s:s, s:s}", "setting", self->setting, "command", self->cmd, "error", why);
    mcp_upstream_ready_fn *ready = self->ready;
    self->ready = NULL;
    if (ready)
        ready (self, false, self->ready_arg);
}

/* ---- start: initialize, then every page of tools/list ------------------- */

static void s_on_tools_page (mcp_upstream_t *self, const json_t *msg, void *arg);

/* A schema the gateway can take in place of one it cannot check: the same
   parameter names (the kernel's functions are made from them), each of any
   value, and the same required list. */
static json_t *
s_schema_loose (const json_t *schema)
{
    json_t *loose = json_pack ("{s:s, s:b}", "type", "object", "additionalProperties", 1);
    json_t *props = json_object_get (schema, "properties");
    json_t *required = json_object_get (schema, "required");
    if (json_is_object (props) && gw_text_clean (props)) {
        json_t *names = json_object ();
        const char *key;
        json_t *value;
        json_object_foreach (props, key, value)
            json_object_set_new (names, key, json_object ());
        json_object_set_new (loose, "properties", names);
    }
    if (json_is_array (required) && gw_text_clean (required))
        json_object_set (loose, "required", required);
    return loose;
}

static void
s_add_tool (mcp_upstream_t *self, const json_t *tool)
{
    const char *name = gw_text (json_object_get (tool, "name"));
    if (!name)
        return;
    json_t *decl = json_pack ("{s:s, s:O}", "name", name, "description",
                              json_object_get (tool, "description") ?: json_null ());
    json_t *schema = json_object_get (tool, "inputSchema");
    char problem[256];
    if (schema && gw_schema_supported (schema, "inputSchema", problem, sizeof problem))
        json_object_set (decl, "input_schema", schema);
    else {
        gw_log ("mcp_upstream_schema_replaced", "{s:s, s:s}", "tool", name, "reason", schema ? problem : "none");
        json_object_set_new (decl, "input_schema", s_schema_loose (schema));
    }
    json_array_append_new (self->tools, decl);
}

static void
s_on_tools_page (mcp_upstream_t *self, const json_t *msg, void *arg)
{
    json_t *result = json_object_get (msg, "result");
    json_t *tools = json_object_get (result, "tools");
    if (!json_is_array (tools)) {
        s_fail (self, msg ? "tools/list gave no tools" : "no answer to tools/list");
        return;
    }
    size_t i;
    json_t *tool;
    json_array_foreach (tools, i, tool)
        s_add_tool (self, tool);
    const char *cursor = gw_text (json_object_get (result, "nextCursor"));
    if (cursor) {
        s_send_request (self, "tools/list", json_pack ("{s:s}", "cursor", cursor), s_on_tools_page);
        return;
    }
    gw_log ("mcp_upstream_ready", "{s:s, s:i}", "command", self->cmd, "tools", (int) json_array_size (self->tools));
    mcp_upstream_ready_fn *ready = self->ready;
    self->ready = NULL;
    if (ready)
        ready (self, true, self->ready_arg);
}

static void
s_on_initialized (mcp_upstream_t *self, const json_t *msg, void *arg)
{
    if (!json_is_object (json_object_get (msg, "result"))) {
        s_fail (self, msg ? "initialize failed" : "no answer to initialize");
        return;
    }
    mcp_line_send (self->to, mcp_rpc_notification ("notifications/initialized", NULL));
    s_send_request (self, "tools/list", NULL, s_on_tools_page);
}

/* ---- messages from it -------------------------------------------------- */

static void
s_on_line (const char *line, size_t len, void *arg)
{
    mcp_upstream_t *self = arg;
    json_t *msg = NULL, *data = NULL;
    int code;
    const char *why;
    mcp_rpc_kind_t kind = line ? mcp_rpc_parse (line, len, &msg, &code, &why, &data) : MCP_RPC_INVALID;
    json_decref (data);
    if (kind != MCP_RPC_RESPONSE) {
        /* its requests (sampling, roots) and notifications are not served */
        if (kind == MCP_RPC_REQUEST)
            mcp_line_send (self->to, mcp_rpc_error (json_object_get (msg, "id"), MCP_METHOD_NOT_FOUND,
                                                    "kennel serves no client features", NULL));
        json_decref (msg);
        return;
    }
    json_int_t id = json_integer_value (json_object_get (msg, "id"));
    for (request_t *r = zlistx_first (self->requests); r; r = zlistx_next (self->requests))
        if (r->id == id) {
            s_request_end (self, r, msg);
            break;
        }
    json_decref (msg);
}

static void
s_on_eof (void *arg)
{
    mcp_upstream_t *self = arg;
    self->gone = true;
    gw_log ("mcp_upstream_gone", "{s:s}", "command", self->cmd);
    request_t *r;
    while ((r = zlistx_first (self->requests)))
        s_request_end (self, r, NULL);
    s_fail (self, "it closed its stdout");
}

/* ---- a kernel's call ------------------------------------------------------ */

/* What the kernel gets for a successful CallToolResult. */
static json_t *
s_result_value (const json_t *result)
{
    json_t *structured = json_object_get (result, "structuredContent");
    if (structured)
        return json_incref (structured);
    json_t *content = json_object_get (result, "content");
    char *text = wire_xstrdup ("");
    size_t i;
    json_t *item;
    json_array_foreach (content, i, item) {
        const char *t = json_string_value (json_object_get (item, "text"));
        if (!t || !streq (json_string_value (json_object_get (item, "type")) ?: "", "text")) {
            free (text);
            return json_incref (content ? content : json_null ());
        }
        char *joined = wire_xasprintf ("%s%s", text, t);
        free (text);
        text = joined;
    }
    json_t *value = json_string (text);
    free (text);
    return value;
}

static void
s_on_call_reply (mcp_upstream_t *self, const json_t *msg, void *arg)
{
    request_t *r = arg;
    double seconds = (zclock_mono () - r->started) / 1000.0;
    json_t *result = json_object_get (msg, "result");
    json_t *error = json_object_get (msg, "error");
    if (!msg && (self->stopping || self->gone)) {
        char *evalue = self->stopping ? wire_xstrdup ("the MCP server that serves this tool is stopping")
                                      : wire_xasprintf ("the MCP server of tool '%s' exited", r->tool);
        mcp_tool_log ("mcp", r->tool, gw_error_name (GW_E_TOOL_UNAVAILABLE), seconds, 0);
        r->done (r->done_arg, NULL, gw_error_name (GW_E_TOOL_UNAVAILABLE), evalue);
        free (evalue);
    }
    else if (!msg) {
        char *evalue = wire_xasprintf ("the MCP server of tool '%s' did not answer within %d s", r->tool,
                                       MCP_UPSTREAM_TIMEOUT_MS / 1000);
        mcp_tool_log ("mcp", r->tool, gw_error_name (GW_E_TOOL_TIMEOUT), seconds, 0);
        r->done (r->done_arg, NULL, gw_error_name (GW_E_TOOL_TIMEOUT), evalue);
        free (evalue);
    }
    else if (error || json_is_true (json_object_get (result, "isError"))) {
        json_t *value = error ? NULL : s_result_value (result);
        const char *text = error ? json_string_value (json_object_get (error, "message")) : json_string_value (value);
        char *evalue = wire_xasprintf ("tool '%s' failed: %s", r->tool, text ?: "(no message)");
        mcp_tool_log ("mcp", r->tool, gw_error_name (GW_E_TOOL_FAILED), seconds, 0);
        r->done (r->done_arg, NULL, gw_error_name (GW_E_TOOL_FAILED), evalue);
        free (evalue);
        json_decref (value);
    }
    else {
        mcp_tool_log ("mcp", r->tool, "ok", seconds, 0);
        r->done (r->done_arg, s_result_value (result), NULL, NULL);
    }
}

bool
mcp_upstream_call (mcp_upstream_t *self, const char *name, json_t *arguments, mcp_tool_done_fn *done, void *arg)
{
    if (!gw_tools_find (self->tools, name))
        return false;
    if (self->gone) {
        char *evalue = wire_xasprintf ("the MCP server of tool '%s' exited", name);
        mcp_tool_log ("mcp", name, gw_error_name (GW_E_TOOL_UNAVAILABLE), 0, 0);
        done (arg, NULL, gw_error_name (GW_E_TOOL_UNAVAILABLE), evalue);
        free (evalue);
        return true;
    }
    request_t *r = s_send_request (self, "tools/call",
                                   json_pack ("{s:s, s:O}", "name", name, "arguments", arguments ?: json_object ()),
                                   s_on_call_reply);
    r->tool = wire_xstrdup (name);
    r->done = done;
    r->done_arg = arg;
    r->started = (double) zclock_mono ();
    return true;
}

void
mcp_upstream_declare (mcp_upstream_t *self, json_t *list)
{
    size_t i;
    json_t *tool;
    json_array_foreach (self->tools, i, tool)
        json_array_append (list, tool);
}

bool
mcp_upstream_alive (const mcp_upstream_t *self)
{
    return !self->gone && !self->failed;
}

mcp_upstream_t *
mcp_upstream_start (zloop_t *loop, const char *cmd, const char *setting, mcp_upstream_ready_fn *ready, void *arg)
{
    mcp_upstream_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->cmd = wire_xstrdup (cmd);
    self->setting = setting;
    self->requests = zlistx_new ();
    self->tools = json_array ();
    self->ready = ready;
    self->ready_arg = arg;
    self->to_fd = self->from_fd = -1;
    int in[2], out[2];
    if (pipe2 (in, O_CLOEXEC) < 0 || pipe2 (out, O_CLOEXEC) < 0) {
        s_fail (self, "no pipes");
        return self;
    }
    char *argv[] = {"/bin/sh", "-c", self->cmd, NULL};
    self->pid = mcp_spawn (argv, in[0], out[1], -1, NULL);
    close (in[0]);
    close (out[1]);
    self->to_fd = in[1];
    self->from_fd = out[0];
    self->to = mcp_line_out_new (loop, in[1], MCP_UPSTREAM_LINE_MAX);
    self->from = mcp_line_new (loop, out[0], MCP_UPSTREAM_LINE_MAX, s_on_line, s_on_eof, self);
    s_send_request (self, "initialize",
                    json_pack ("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", "2025-06-18", "capabilities",
                               "clientInfo", "name", "kennel", "version", "mcp-client"),
                    s_on_initialized);
    return self;
}

void
mcp_upstream_destroy (mcp_upstream_t **self_p)
{
    mcp_upstream_t *self = *self_p;
    if (!self)
        return;
    self->ready = NULL;
    self->stopping = true;
    request_t *r;
    while ((r = zlistx_first (self->requests)))
        s_request_end (self, r, NULL);
    zlistx_destroy (&self->requests);
    mcp_line_destroy (&self->from);
    mcp_line_out_destroy (&self->to, 0);
    if (self->from_fd >= 0)
        close (self->from_fd);
    if (self->to_fd >= 0)
        close (self->to_fd); /* its stdin closes: an MCP server's signal to stop */
    if (self->pid > 0) {
        for (int i = 0; i < 100 && waitpid (self->pid, NULL, WNOHANG) == 0; i++)
            zclock_sleep (10);
        if (kill (-self->pid, SIGKILL) == 0)
            waitpid (self->pid, NULL, 0);
    }
    json_decref (self->tools);
    free (self->cmd);
    free (self);
    *self_p = NULL;
}
