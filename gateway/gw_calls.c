/*  gw_calls.c - the tool-call broker.

    The kernel's tool_request {call_id, name, arguments} goes to the client
    only for a declared tool, during an execution whose client serves stdin,
    within the size and count limits, with arguments that meet the tool's
    declared schema (gw_schema.c); otherwise the kernel gets a tool_reply
    error at once, with an ename saying why (never a hang). A forwarded call
    is pending until the client's tool_reply names its call_id, the tool
    timeout, the end of its execution or of the kernel, or the client that
    serves its stdin going away (a websocket closed: ToolUnavailable at
    once, as when no client serves stdin). A conversation has at most
    max_concurrent_tool_calls calls pending (ToolBusy beyond): each may be
    a process on the host, outside the sandbox. A call the gateway ends
    without the client's reply (timeout, its execution ended, the kernel
    ended, the conversation closed) is told to that client in a
    tool_cancel when it asked for them, so that the host stops its work (a
    host command is killed). Each call is logged once (event tool_call,
    rate-limited per conversation), without argument values unless the
    operator's config asks for them.
*/
#include "gw_calls.h"
#include "gw_config.h"
#include "gw_error.h"
#include "gw_log.h"
#include "gw_metrics.h"
#include "gw_relay_msg.h"
#include "gw_schema.h"
#include "gw_server_access.h"
#include "gw_timer.h"
#include "gw_tools.h"
#include "gw_util.h"
#include "wire.h"

#include <string.h>

#define TOOL_REQUEST_MAX_BYTES (1 << 20)

static void
tool_log (gw_relay_t *self, const char *msg_id, const char *name, size_t bytes, double duration,
          const char *status, const char *ename, const char *reason, json_t *arguments)
{
    json_t *line = json_pack ("{s:s, s:s, s:s, s:I, s:f, s:s}", "conversation", self->id, "msg_id",
                              msg_id ? msg_id : "", "tool", name ? name : "", "bytes", (json_int_t) bytes,
                              "duration", duration, "status", status);
    if (ename)
        json_object_set_new (line, "ename", json_string (ename));
    if (reason)
        json_object_set_new (line, "reason", json_string (reason));
    if (arguments && self->owner->config (self->conv)->log_tool_arguments)
        json_object_set (line, "arguments", arguments);
    /* kernel code makes calls at will: per conversation, at most the
       limiter's rate (log_dropped counts the rest; the metrics count all) */
    char source[200];
    snprintf (source, sizeof source, "conversation/%s/tool_call", self->id);
    gw_log_limited (source, "tool_call", "O", line);
    json_decref (line);
    gw_metrics_tool_call (status);
}

/* tool_reply {call_id, status: error, ename, evalue} to the kernel. */
static void
tool_answer_error (gw_relay_t *self, const json_t *parent, json_t *call_id, const char *ename, const char *evalue)
{
    if (!self->kernel[WIRE_STDIN])
        return;
    wire_msg_t *reply = gw_relay_msg_own (self, "tool_reply", parent, NULL);
    wire_msg_set_content (reply, json_pack ("{s:O?, s:s, s:s, s:s}", "call_id", call_id, "status", "error", "ename",
                                            ename, "evalue", evalue));
    zmsg_t *out = wire_msg_encode (reply, NULL);
    wire_msg_destroy (&reply);
    if (out)
        gw_relay_msg_kernel_send (self, &out, WIRE_STDIN);
}

static void
call_destroy (gw_call_t **self_p)
{
    gw_call_t *self = *self_p;
    if (!self)
        return;
    if (self->timer_id)
        gw_timer_end (gw_server_loop (self->relay->server), self->timer_id);
    free (self->call_id);
    free (self->name);
    free (self->exec_msg_id);
    json_decref (self->header);
    json_decref (self->arguments);
    zmsg_destroy (&self->ids);
    free (self);
    *self_p = NULL;
}

void
gw_calls_destructor (void **item)
{
    call_destroy ((gw_call_t **) item);
}

/* Ends a pending call: logged, forgotten (a late reply is then unknown). */
static void
call_end (gw_relay_t *self, gw_call_t *call, const char *status, const char *ename, const char *reason)
{
    tool_log (self, call->exec_msg_id, call->name, call->bytes, gw_clock_mono () - call->started_at, status, ename,
              reason,
              call->arguments);
    zhashx_delete (self->calls, call->call_id);
}

/* Ends a pending call that its client is still serving: a client that asked
   (its execute_request's metadata.kennel.tool_cancel) gets tool_cancel
   {call_id, reason} on stdin (parent: the kernel's tool_request), so that
   the work stops with the call. Others never see a message they did not
   ask for on stdin (jupyter_client hands every one to its stdin hook). */
static void
call_cancel (gw_relay_t *self, gw_call_t *call, const char *status)
{
    if (call->tell) {
        wire_msg_t *m = gw_relay_msg_own (self, "tool_cancel", call->header, call->ids);
        wire_msg_set_content (m, json_pack ("{s:s, s:s}", "call_id", call->call_id, "reason", status));
        gw_relay_msg_send_own (self, m, WIRE_STDIN);
        wire_msg_destroy (&m);
    }
    call_end (self, call, status, status && streq (status, "timeout") ? gw_error_name (GW_E_TOOL_TIMEOUT) : NULL, NULL);
}

static int
on_tool_timeout (zloop_t *loop, int timer_id, void *arg)
{
    gw_call_t *call = arg;
    gw_relay_t *self = call->relay;
    call->timer_id = 0; /* a one-shot timer, already gone */
    char evalue[300];
    snprintf (evalue, sizeof evalue, "the host did not answer tool '%.*s' within %g s",
              gw_text_fit (call->name, 200), call->name, self->owner->policy (self->conv)->tool_timeout);
    json_t *call_id = json_string (call->call_id);
    tool_answer_error (self, call->header, call_id, gw_error_name (GW_E_TOOL_TIMEOUT), evalue);
    json_decref (call_id);
    call_cancel (self, call, "timeout");
    return 0;
}

#define NO_STDIN "no client is serving stdin for this execution: the client that sent it went away"

void
gw_calls_end_peer (void *arg, zframe_t *token)
{
    gw_relay_t *self = arg;
    zlistx_t *ids = zhashx_keys (self->calls);
    for (const char *id = zlistx_first (ids); id; id = zlistx_next (ids)) {
        gw_call_t *call = zhashx_lookup (self->calls, id);
        if (!call || !zframe_eq (zmsg_first (call->ids), token))
            continue;
        json_t *call_id = json_string (call->call_id);
        tool_answer_error (self, call->header, call_id, gw_error_name (GW_E_TOOL_UNAVAILABLE), NO_STDIN);
        json_decref (call_id);
        call_end (self, call, "refused", gw_error_name (GW_E_TOOL_UNAVAILABLE), NO_STDIN);
    }
    zlistx_destroy (&ids);
}

/* Ends the pending calls of one execution (msg_id) or of all (NULL); their
   clients are told. */
void
gw_calls_end (gw_relay_t *self, const char *msg_id, const char *status)
{
    zlistx_t *ids = zhashx_keys (self->calls);
    for (const char *id = zlistx_first (ids); id; id = zlistx_next (ids)) {
        gw_call_t *call = zhashx_lookup (self->calls, id);
        if (call && (!msg_id || streq (call->exec_msg_id, msg_id)))
            call_cancel (self, call, status);
    }
    zlistx_destroy (&ids);
}

/* Why a tool_request may not go to the client: ename and evalue, or false. */
static bool
tool_request_refusal (gw_relay_t *self, gw_exec_t *e, json_t *content, size_t bytes, const char **ename,
                      char *why, size_t size)
{
    const char *name = json_string_value (json_object_get (content, "name"));
    const char *call_id = json_string_value (json_object_get (content, "call_id"));
    int max_calls = self->owner->config (self->conv)->max_tool_calls;
    int max_pending = self->owner->config (self->conv)->max_concurrent_tool_calls;
    const json_t *tool = NULL;
    char problem[300];
    if (!e || !e->started) {
        *ename = gw_error_name (GW_E_TOOL_UNAVAILABLE);
        snprintf (why, size, "no execution is running to serve a tool call");
    }
    else if (!e->allow_stdin) {
        *ename = gw_error_name (GW_E_TOOL_UNAVAILABLE);
        snprintf (why, size, "no client is serving stdin for this execution (allow_stdin is false)");
    }
    else if (!gw_peers_attached (self->peers, zmsg_first (e->ids))) {
        *ename = gw_error_name (GW_E_TOOL_UNAVAILABLE);
        snprintf (why, size, NO_STDIN);
    }
    else if (bytes > TOOL_REQUEST_MAX_BYTES) {
        *ename = gw_error_name (GW_E_TOOL_ARGUMENTS_TOO_LARGE);
        snprintf (why, size, "the call's arguments take %zu bytes, the limit is %d", bytes, TOOL_REQUEST_MAX_BYTES);
    }
    else if (!call_id || !*call_id || zhashx_lookup (self->calls, call_id)) {
        *ename = gw_error_name (GW_E_BAD_TOOL_REQUEST);
        snprintf (why, size, "a tool_request needs a call_id string not already pending");
    }
    else if (!name || !(tool = self->owner->tool (self->conv, name))) {
        *ename = gw_error_name (GW_E_UNKNOWN_TOOL);
        snprintf (why, size, "this conversation declared no tool named '%.*s'", name ? gw_text_fit (name, 200) : 0,
                  name ? name : "");
    }
    else if (e->tool_calls >= max_calls) {
        *ename = gw_error_name (GW_E_TOOL_LIMIT);
        snprintf (why, size, "this execution already made %d tool calls, the limit", max_calls);
    }
    else if (!gw_schema_check_arguments (gw_tools_schema (tool), json_object_get (content, "arguments"), problem,
                                         sizeof problem)) {
        *ename = gw_error_name (GW_E_INVALID_TOOL_ARGUMENTS);
        snprintf (why, size, "tool '%.*s': %s", gw_text_fit (name, 100), name, problem);
    }
    else if ((int) zhashx_size (self->calls) >= max_pending) {
        *ename = gw_error_name (GW_E_TOOL_BUSY);
        snprintf (why, size,
                  "this conversation already has %d tool calls waiting for their host, the limit "
                  "(max_concurrent_tool_calls); call again once one has returned",
                  max_pending);
    }
    else
        return false;
    return true;
}

/* true: forward to the client (the call is now pending). */
bool
gw_calls_request_admit (gw_relay_t *self, gw_exec_t *e, zmsg_t *msg, json_t *header)
{
    size_t bytes;
    json_t *content = gw_relay_msg_json (msg, 5, &bytes);
    const char *ename = NULL;
    char why[512];
    const char *name = json_string_value (json_object_get (content, "name"));
    if (tool_request_refusal (self, e, content, bytes, &ename, why, sizeof why)) {
        tool_log (self, e ? e->msg_id : NULL, name, bytes, 0, "refused", ename, why,
                  json_object_get (content, "arguments"));
        tool_answer_error (self, header, json_object_get (content, "call_id"), ename, why);
        json_decref (content);
        return false;
    }
    e->tool_calls++;
    gw_call_t *call = wire_xcalloc (1, sizeof *call);
    call->relay = self;
    call->call_id = wire_xstrdup (json_string_value (json_object_get (content, "call_id")));
    call->name = wire_xstrdup (name);
    call->exec_msg_id = wire_xstrdup (e->msg_id);
    call->header = json_incref (header);
    if (self->owner->config (self->conv)->log_tool_arguments)
        call->arguments = json_incref (json_object_get (content, "arguments"));
    call->ids = zmsg_dup (e->ids);
    call->tell = e->tool_cancel;
    call->bytes = bytes;
    call->started_at = gw_clock_mono ();
    double timeout = self->owner->policy (self->conv)->tool_timeout;
    if (timeout != GW_UNLIMITED)
        call->timer_id
            = gw_timer_start (gw_server_loop (self->server), gw_limit_ms (timeout) + 1, 1, on_tool_timeout, call);
    zhashx_insert (self->calls, call->call_id, call);
    json_decref (content);
    return true;
}

/* A client's tool_reply reaches the kernel only for a pending call of this
   conversation; anything else is dropped and logged. */
bool
gw_calls_reply_admit (gw_relay_t *self, zmsg_t *msg)
{
    size_t bytes;
    json_t *content = gw_relay_msg_json (msg, 5, &bytes);
    const char *call_id = json_string_value (json_object_get (content, "call_id"));
    gw_call_t *call = call_id ? zhashx_lookup (self->calls, call_id) : NULL;
    if (!call) {
        char source[200];
        snprintf (source, sizeof source, "conversation/%s/tool_reply_dropped", self->id);
        gw_log_limited (source, "tool_reply_dropped", "{s:s, s:s, s:s}", "conversation", self->id, "call_id",
                        call_id ? call_id : "", "reason", "no pending tool call of this conversation has this call_id");
        json_decref (content);
        return false;
    }
    const char *status = json_string_value (json_object_get (content, "status"));
    const char *ename = json_string_value (json_object_get (content, "ename"));
    call->bytes += bytes;
    call_end (self, call, status && streq (status, "ok") ? "ok" : "error",
              status && streq (status, "ok") ? NULL : ename, NULL);
    json_decref (content);
    return true;
}
