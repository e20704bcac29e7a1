/*  mcp_server.c - the Model Context Protocol: methods, revisions, tool
    calls, cancellation, progress, whatever transport carries them.

    A transport (mcp_stdio.c; gateway/http/http_mcp.c) hands each client
    message in with a sink: the request's answers and progress go there,
    and the sink is told when its request needs nothing more. Two eras of
    the protocol are served on the same transport: the handshake era
    (initialize, then requests; revisions 2024-11-05 to 2025-11-25) and the
    stateless revision 2026-07-28, where each request names its version in
    _meta and the server answers server/discover. Nothing here depends on
    which came first: a request is answered from its own content, and a
    conversation is named in the arguments (a default one otherwise), never
    tied to the connection.
*/
#include "mcp.h"
#include "config.h"
#include "gateway/gw_error.h"
#include "gateway/gw_ops.h"

#include <string.h>
#include <unistd.h>

#define MCP_CONTROL_TIMEOUT_MS 120000
/* A conversation idle this long is confirmed with the gateway before code
   is sent: it may have been culled (idle_ttl) or its kernel's gateway
   restarted, and a request sent to sockets that are gone waits forever. */
#define MCP_REVALIDATE_S 1.0
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
/* MCP sessions held at once (mcp_sessions.c): ~200 bytes each. */
#define MCP_SESSIONS_MAX 4096

static const char *handshake_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL};
static const char *stateless_versions[] = {"2026-07-28", NULL};

static const char *instructions
    = "Python runs in confined, persistent kernels: python_exec keeps variables between calls, in this client's "
      "default conversation (its own: no other client shares it) or in one conversation_open gave (pass its handle "
      "as `conversation`; a handle is the only way to share a kernel). A new kennel mcp process starts a fresh "
      "kernel: to keep one across processes, use --connection-file of a running kennel serve and a handle.";

/* One tools/call in flight. */
typedef struct {
    mcp_server_t *server;
    mcp_sink_t *sink; /* where its answer goes */
    char *scope;      /* its client's (the sink's scope, copied; NULL: none) */
    json_t *id;
    json_t *progress_token; /* or NULL */
    bool stateless;
    char *tool;
    json_t *arguments;
    char *conv_id; /* python_exec: the conversation it waits for or runs in */
    mcp_exec_t *exec;
    double progress;
    bool sent;        /* a request of its own is with the gateway: not dispatched again */
    bool deferred;    /* came before the gateway was ready */
    bool revalidated; /* its conversation was confirmed after an idle spell */
} call_t;

struct mcp_server {
    zloop_t *loop;
    mcp_opts_t opts;
    mcp_gateway_t *gateway;
    mcp_hosttools_t *hosttools;
    gw_config_t *own_config; /* --config without a gateway in this process: its host commands' bounds */
    mcp_upstream_t *upstream;
    char *upstream_cmd; /* what it runs, or NULL */
    bool upstream_ready;
    json_t *catalog; /* the host tools' declarations, as the gateway takes them */
    zhashx_t *convs; /* id -> mcp_conv_t */
    zhashx_t *opening; /* id -> "" while conversation_open is pending */
    zhashx_t *specs;   /* id -> {"tools", "policy", "owner"} it was opened with: to open it again, to list it */
    zhashx_t *renewed; /* id -> "": opened again with a fresh kernel, not yet said */
    char default_id[64]; /* the default conversation of scope "" (stdio's one client) */
    mcp_sessions_t *sessions;
    char *startup_error; /* why conversations cannot be had */
    zlistx_t *calls;     /* call_t */
    unsigned next_conv;
    int exit_code;
};

/* ---- sending -------------------------------------------------------------- */

static void
s_send (mcp_sink_t *sink, json_t *msg)
{
    sink->fns->send (sink, msg);
}

/* The request of sink needs nothing more. */
static void
s_end (mcp_sink_t *sink)
{
    if (sink->fns->end)
        sink->fns->end (sink);
}

static void
s_reply (mcp_sink_t *sink, const json_t *id, json_t *result, bool stateless)
{
    if (stateless)
        json_object_set_new (result, "resultType", json_string ("complete"));
    s_send (sink, mcp_rpc_result (id, result));
    s_end (sink);
}

static void
s_error (mcp_sink_t *sink, const json_t *id, int code, const char *message, json_t *data)
{
    gw_log_limited ("mcp/client", "mcp_error_reply", "{s:i, s:s}", "code", code, "message", message);
    s_send (sink, mcp_rpc_error (id, code, message, data));
    s_end (sink);
}

/* ---- calls ------------------------------------------------------------------ */

static void
s_call_free (call_t *call)
{
    mcp_server_t *self = call->server;
    void *handle = zlistx_find (self->calls, call);
    if (handle)
        zlistx_detach (self->calls, handle);
    if (self->gateway)
        mcp_gateway_forget (self->gateway, call);
    json_decref (call->id);
    json_decref (call->progress_token);
    json_decref (call->arguments);
    free (call->scope);
    free (call->tool);
    free (call->conv_id);
    free (call);
}

/* The call's answer (result taken), then the call is gone. */
static void
s_call_answer (call_t *call, json_t *result)
{
    s_reply (call->sink, call->id, result, call->stateless);
    s_call_free (call);
}

static const char *
s_arg_string (const call_t *call, const char *key)
{
    return gw_text (json_object_get (call->arguments, key));
}

/* ---- conversations -------------------------------------------------------- */

static void s_conv_dispatch (mcp_server_t *self, const char *conv_id);
static void s_call_start (mcp_server_t *self, call_t *call);
static void s_serve_tool (const char *name, json_t *arguments, mcp_tool_done_fn *done, void *done_arg, void *arg);
static void s_cancel_tool (void *done_arg, void *arg);

/* The catalog's declarations named in names (all when names is NULL). */
static json_t *
s_catalog_pick (mcp_server_t *self, const json_t *names, char **unknown)
{
    if (!names)
        return json_deep_copy (self->catalog);
    json_t *picked = json_array ();
    size_t i;
    json_t *name;
    json_array_foreach (names, i, name) {
        const json_t *decl = gw_tools_find (self->catalog, json_string_value (name));
        if (!decl) {
            *unknown = wire_xstrdup (json_string_value (name) ?: "?");
            json_decref (picked);
            return NULL;
        }
        json_array_append (picked, (json_t *) decl);
    }
    return picked;
}

static void
s_on_conv_ready (mcp_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    mcp_server_t *self = arg;
    char *id = wire_xstrdup (mcp_conv_id (conv));
    gw_log ("mcp_conversation", "{s:s, s:b, s:s}", "conversation", id, "ready", ok, "error", errmsg ?: "");
    if (!ok) {
        zhashx_delete (self->convs, id); /* destroys conv */
        free (self->startup_error);
        self->startup_error = wire_xasprintf ("the conversation's sockets did not answer: %s", errmsg);
    }
    s_conv_dispatch (self, id);
    free (id);
}

typedef struct {
    mcp_server_t *server;
    char *id;
    call_t *call; /* conversation_open's call, or NULL for the default */
} opening_t;

/* The front's client of a conversation the gateway opened (its open
   reply), or NULL when the reply is an error. */
static mcp_conv_t *
s_conv_attach (mcp_server_t *self, const char *id, const json_t *content)
{
    const char *status = json_string_value (json_object_get (content, "status"));
    mcp_conv_t *conv = status && streq (status, "ok")
                           ? mcp_conv_new (self->loop, mcp_gateway_core_server (self->gateway), id, content,
                                           s_serve_tool, s_cancel_tool, self, s_on_conv_ready, self)
                           : NULL;
    if (conv) {
        mcp_conv_set_progress_interval (conv, self->opts.progress_interval);
        zhashx_insert (self->convs, id, conv);
    }
    return conv;
}

static char *
s_refusal (const json_t *content, const char *what)
{
    return content ? wire_xasprintf ("%s: %s", json_string_value (json_object_get (content, "ename")) ?: "Error",
                                     json_string_value (json_object_get (content, "evalue")) ?: "")
                   : wire_xasprintf ("the gateway did not answer %s", what);
}

static void
s_on_open_reply (const json_t *content, void *arg)
{
    opening_t *o = arg;
    mcp_server_t *self = o->server;
    zhashx_delete (self->opening, o->id);
    if (!s_conv_attach (self, o->id, content)) {
        free (self->startup_error);
        self->startup_error = s_refusal (content, "conversation_open");
        gw_log ("mcp_open_failed", "{s:s, s:s}", "conversation", o->id, "error", self->startup_error);
        s_conv_dispatch (self, o->id);
    }
    free (o->id);
    free (o);
}

/* Asks the gateway for a conversation for the client of scope owner (its
   conversation_list shows it); its callers wait in s_conv_dispatch. */
static void
s_conv_open (mcp_server_t *self, const char *id, json_t *tools, json_t *policy, const char *owner)
{
    opening_t *o = wire_xcalloc (1, sizeof *o);
    o->server = self;
    o->id = wire_xstrdup (id);
    zhashx_insert (self->opening, id, "");
    json_t *content = json_pack ("{s:s, s:s, s:o}", "conversation_id", id, "kernel", "python", "tools", tools);
    if (policy)
        json_object_set (content, "policy", policy);
    json_t *spec = json_pack ("{s:O, s:O, s:s?}", "tools", tools, "policy", policy ? policy : json_null (), "owner",
                              owner);
    zhashx_update (self->specs, id, spec);
    json_decref (spec);
    mcp_gateway_request (self->gateway, "conversation_open_request", content, MCP_CONTROL_TIMEOUT_MS, s_on_open_reply, o);
}

static bool
s_gateway_usable (mcp_server_t *self)
{
    return self->gateway && mcp_gateway_ready (self->gateway) && (self->upstream_ready || !self->upstream);
}

/* The default conversation of the client of scope: stdio's one client
   has the server's, an MCP session its own, a request of no session none
   (NULL: over HTTP every client would share it). */
static const char *
s_default_of (mcp_server_t *self, const char *scope)
{
    if (!scope)
        return NULL;
    return *scope ? mcp_sessions_find (self->sessions, scope) : self->default_id;
}

/* Opens id, a default conversation, unless it is open or opening. */
static void
s_conv_open_default (mcp_server_t *self, const char *id, const char *owner)
{
    if (!s_gateway_usable (self) || zhashx_lookup (self->convs, id) || zhashx_lookup (self->opening, id))
        return;
    s_conv_open (self, id, json_deep_copy (self->catalog), NULL, owner);
}

/* With its own gateway the front opens the default conversation at once:
   clients list tools first, the kernel starts meanwhile. A shared daemon
   gets it only when a call needs it (it outlives the front, for idle_ttl). */
static void
s_conv_open_early (mcp_server_t *self)
{
    if (mcp_gateway_owned (self->gateway))
        s_conv_open_default (self, self->default_id, "");
}

static void
s_progress (double seconds, void *arg)
{
    call_t *call = arg;
    if (!call->progress_token)
        return;
    call->progress = seconds;
    char message[64];
    snprintf (message, sizeof message, "running for %.0f s", seconds);
    json_t *params = json_pack ("{s:O, s:f, s:s}", "progressToken", call->progress_token, "progress", seconds,
                                "message", message);
    s_send (call->sink, mcp_rpc_notification ("notifications/progress", params));
}

/* The call's JSON-RPC error (data taken), then the call is gone. */
static void
s_call_fail (call_t *call, int code, const char *message, json_t *data)
{
    s_error (call->sink, call->id, code, message, data);
    s_call_free (call);
}

static void
s_on_exec_done (mcp_exec_result_t *r, void *arg)
{
    call_t *call = arg;
    call->exec = NULL;
    if (r && r->stopped) {
        /* not the code's failure but the server's end: a protocol error,
           with what the code printed before it */
        json_t *partial = mcp_tools_exec_result (call->conv_id, r);
        s_call_fail (call, MCP_INTERNAL_ERROR,
                     GW_DRAINING " and stopped the kernel before the code finished: its variables are lost; open "
                                 "a conversation on another gateway",
                     json_pack ("{s:s, s:s, s:O}", "ename", gw_error_name (GW_E_GATEWAY_DRAINING), "conversation",
                                call->conv_id, "content", json_object_get (partial, "content")));
        json_decref (partial);
    }
    else if (!r)
        s_call_answer (call, mcp_tools_error_result ("the conversation %s was closed before the code finished",
                                                     call->conv_id));
    else {
        json_t *result = mcp_tools_exec_result (call->conv_id, r);
        if (zhashx_lookup (call->server->renewed, call->conv_id)) {
            zhashx_delete (call->server->renewed, call->conv_id);
            json_array_insert_new (json_object_get (result, "content"), 0,
                                   json_pack ("{s:s, s:s}", "type", "text", "text",
                                              "[kennel: this conversation had ended (idle past its idle_ttl, or its "
                                              "gateway restarted); the code ran in a fresh kernel: earlier variables "
                                              "are gone, /workspace too]"));
        }
        s_call_answer (call, result);
    }
}

static void s_conv_call (call_t *call, mcp_conv_t *conv);
static void s_conv_revalidate (call_t *call);

/* The calls that wait for conv_id: run them, or fail them when it could
   not be had. */
static void
s_conv_dispatch (mcp_server_t *self, const char *conv_id)
{
    mcp_conv_t *conv = zhashx_lookup (self->convs, conv_id);
    if ((conv && !mcp_conv_ready (conv)) || (!conv && zhashx_lookup (self->opening, conv_id)))
        return; /* called again once it is ready or failed */
    zlistx_t *waiting = zlistx_new ();
    for (call_t *call = zlistx_first (self->calls); call; call = zlistx_next (self->calls))
        if (call->conv_id && !call->exec && !call->sent && streq (call->conv_id, conv_id))
            zlistx_add_end (waiting, call);
    for (call_t *call = zlistx_first (waiting); call; call = zlistx_next (waiting)) {
        if (conv)
            s_conv_call (call, conv);
        else
            s_call_answer (call, mcp_tools_error_result ("no conversation %s: %s", conv_id,
                                                         self->startup_error ?: "it could not be opened"));
    }
    zlistx_destroy (&waiting);
}

/* The gateway's answer to opening the call's conversation again: the same
   (go on), or a new one with a fresh kernel (the old one had ended: its
   sockets are gone; attach to the new one and say so in the result). */
static void
s_on_revalidate (const json_t *content, void *arg)
{
    call_t *call = arg;
    call->sent = false;
    mcp_server_t *self = call->server;
    mcp_conv_t *conv = zhashx_lookup (self->convs, call->conv_id);
    const char *status = json_string_value (json_object_get (content, "status"));
    if (!status || !streq (status, "ok")) {
        char *why = s_refusal (content, "conversation_open");
        s_call_answer (call, mcp_tools_error_result ("conversation %s: %s", call->conv_id, why));
        free (why);
        return;
    }
    if (json_is_true (json_object_get (content, "created"))) {
        gw_log ("mcp_conversation_renewed", "{s:s}", "conversation", call->conv_id);
        zhashx_delete (self->convs, call->conv_id);
        zhashx_update (self->renewed, call->conv_id, "");
        if (!s_conv_attach (self, call->conv_id, content))
            s_call_answer (call, mcp_tools_error_result ("conversation %s could not be attached", call->conv_id));
        return; /* the call runs once the new client is ready (s_conv_dispatch) */
    }
    if (conv && mcp_conv_ready (conv))
        s_conv_call (call, conv);
    else
        s_conv_dispatch (self, call->conv_id);
}

static void
s_conv_revalidate (call_t *call)
{
    mcp_server_t *self = call->server;
    call->revalidated = true;
    call->sent = true;
    json_t *spec = zhashx_lookup (self->specs, call->conv_id);
    json_t *content = json_pack ("{s:s, s:s}", "conversation_id", call->conv_id, "kernel", "python");
    if (spec) {
        json_object_set (content, "tools", json_object_get (spec, "tools"));
        if (!json_is_null (json_object_get (spec, "policy")))
            json_object_set (content, "policy", json_object_get (spec, "policy"));
    }
    mcp_gateway_request (self->gateway, "conversation_open_request", content, MCP_CONTROL_TIMEOUT_MS, s_on_revalidate,
                         call);
}

static void
s_on_files_reply (const json_t *content, void *arg)
{
    call_t *call = arg;
    s_call_answer (call, mcp_files_result (call->tool, content));
}

/* file_put, file_get, file_list: one file request of the gateway's. */
static void
s_files_call (call_t *call)
{
    const char *type = NULL;
    char *problem = NULL;
    json_t *content = mcp_files_request (call->tool, call->conv_id, call->arguments, &type, &problem);
    if (!content) {
        s_call_answer (call, mcp_tools_error_result ("invalid arguments: %s", problem));
        free (problem);
        return;
    }
    call->sent = true;
    mcp_gateway_request (call->server->gateway, type, content, MCP_CONTROL_TIMEOUT_MS, s_on_files_reply, call);
}

/* A call whose conversation is ready. */
static void
s_conv_call (call_t *call, mcp_conv_t *conv)
{
    if (streq (call->tool, "conversation_open")) {
        json_t *names = json_object_get (call->arguments, "tools");
        s_call_answer (call, mcp_tools_text_result (json_pack ("{s:s, s:s, s:O}", "conversation", mcp_conv_id (conv),
                                                               "workspace", mcp_conv_workspace (conv), "tools",
                                                               names ? names : json_null ()),
                                                    "conversation %s is open; pass it as `conversation`",
                                                    mcp_conv_id (conv)));
        return;
    }
    if (!call->revalidated && mcp_conv_idle_seconds (conv) > MCP_REVALIDATE_S) {
        s_conv_revalidate (call);
        return;
    }
    if (mcp_files_tool (call->tool)) {
        s_files_call (call);
        return;
    }
    json_t *timeout = json_object_get (call->arguments, "timeout");
    call->exec = mcp_conv_execute (conv, s_arg_string (call, "code"), timeout ? json_number_value (timeout) : 0,
                                   s_on_exec_done, call->progress_token ? s_progress : NULL, call);
}

/* A shared daemon's conversation this front did not open (a handle from an
   earlier front): reattached when the daemon has it, with this front's
   tools, so its variables are there. */
static void
s_on_adopt_list (const json_t *content, void *arg)
{
    call_t *call = arg;
    mcp_server_t *self = call->server;
    size_t i;
    json_t *entry;
    json_array_foreach (json_object_get (content, "conversations"), i, entry)
        if (streq (json_string_value (json_object_get (entry, "conversation_id")) ?: "", call->conv_id)) {
            if (!zhashx_lookup (self->convs, call->conv_id) && !zhashx_lookup (self->opening, call->conv_id))
                s_conv_open (self, call->conv_id, json_deep_copy (self->catalog), NULL, call->scope);
            s_conv_dispatch (self, call->conv_id);
            return;
        }
    s_call_answer (call, mcp_tools_error_result ("no conversation %s (conversation_open gives handles; omit "
                                                 "`conversation` for the default one)",
                                                 call->conv_id));
}

/* A call naming no conversation from a client that has no default one. */
static json_t *
s_no_default (void)
{
    return mcp_tools_error_result (
        "no conversation named: this request has no MCP session (no Mcp-Session-Id), and without one there is no "
        "default conversation (clients of one server would share it). Call conversation_open and pass its handle as "
        "`conversation`, or initialize a session: each session has a default conversation of its own");
}

/* Whether the conversation id was opened for the client of scope. */
static bool
s_owned_by (mcp_server_t *self, const char *id, const char *scope)
{
    const char *owner = json_string_value (json_object_get (zhashx_lookup (self->specs, id), "owner"));
    return owner ? scope && streq (owner, scope) : !scope;
}

/* python_exec and the file tools: the call runs once its conversation is
   ready. */
static void
s_tool_in_conversation (mcp_server_t *self, call_t *call)
{
    const char *named = s_arg_string (call, "conversation");
    const char *fallback = s_default_of (self, call->scope);
    const char *conv_id = named ?: fallback;
    if (!conv_id) {
        s_call_answer (call, s_no_default ());
        return;
    }
    call->conv_id = wire_xstrdup (conv_id);
    if (fallback && streq (conv_id, fallback))
        s_conv_open_default (self, conv_id, call->scope);
    else if (!zhashx_lookup (self->convs, conv_id) && !zhashx_lookup (self->opening, conv_id)) {
        if (mcp_gateway_owned (self->gateway))
            s_call_answer (call, mcp_tools_error_result ("no conversation %s in this server (conversation_open "
                                                         "gives handles; omit `conversation` for the default one)",
                                                         conv_id));
        else
            mcp_gateway_request (self->gateway, "conversation_list_request", json_object (), MCP_CONTROL_TIMEOUT_MS,
                                 s_on_adopt_list, call);
        return;
    }
    s_conv_dispatch (self, conv_id);
}

static void
s_tool_open (mcp_server_t *self, call_t *call)
{
    char *unknown = NULL;
    json_t *tools = s_catalog_pick (self, json_object_get (call->arguments, "tools"), &unknown);
    if (!tools) {
        s_call_answer (call, mcp_tools_error_result ("no host tool %s in this server", unknown));
        free (unknown);
        return;
    }
    char id[WIRE_ID_SIZE];
    wire_id_new (id);
    call->conv_id = wire_xasprintf ("mcp-%.12s-%u", id, ++self->next_conv);
    s_conv_open (self, call->conv_id, tools, json_object_get (call->arguments, "policy"), call->scope);
}

/* Answers a control reply for call: ok_text, or the gateway's error. */
static void
s_on_control_reply (const json_t *content, void *arg)
{
    call_t *call = arg;
    mcp_server_t *self = call->server;
    const char *status = json_string_value (json_object_get (content, "status"));
    if (!content)
        s_call_answer (call, mcp_tools_error_result ("the gateway did not answer"));
    else if (!status || !streq (status, "ok"))
        s_call_answer (call, mcp_tools_error_result ("%s: %s", json_string_value (json_object_get (content, "ename")) ?: "Error",
                                                     json_string_value (json_object_get (content, "evalue")) ?: ""));
    else if (streq (call->tool, "conversation_list")) {
        json_t *mine = json_array ();
        size_t i;
        json_t *entry;
        json_array_foreach (json_object_get (content, "conversations"), i, entry) {
            const char *id = json_string_value (json_object_get (entry, "conversation_id")) ?: "";
            if (zhashx_lookup (self->convs, id) && s_owned_by (self, id, call->scope))
                json_array_append (mine, entry);
        }
        char *text = json_dumps (mine, JSON_INDENT (1));
        s_call_answer (call, mcp_tools_text_result (json_pack ("{s:o}", "conversations", mine), "%s", text));
        free (text);
    }
    else {
        if (streq (call->tool, "conversation_close")) {
            zhashx_delete (self->convs, call->conv_id);
            zhashx_delete (self->specs, call->conv_id);
        }
        s_call_answer (call, mcp_tools_text_result (json_pack ("{s:s}", "conversation", call->conv_id), "%s: done",
                                                    call->tool));
    }
}

static void
s_tool_control (mcp_server_t *self, call_t *call)
{
    if (streq (call->tool, "conversation_list")) {
        mcp_gateway_request (self->gateway, "conversation_list_request", json_object (), MCP_CONTROL_TIMEOUT_MS,
                             s_on_control_reply, call);
        return;
    }
    const char *conv_id = s_arg_string (call, "conversation") ?: s_default_of (self, call->scope);
    if (!conv_id) {
        s_call_answer (call, s_no_default ());
        return;
    }
    if (!zhashx_lookup (self->convs, conv_id) && mcp_gateway_owned (self->gateway)) {
        s_call_answer (call, mcp_tools_error_result ("no open conversation %s in this server", conv_id));
        return;
    }
    call->conv_id = wire_xstrdup (conv_id);
    const char *type = streq (call->tool, "conversation_close") ? "conversation_close_request"
                                                                : "conversation_restart_request";
    mcp_gateway_request (self->gateway, type, json_pack ("{s:s}", "conversation_id", conv_id), MCP_CONTROL_TIMEOUT_MS,
                         s_on_control_reply, call);
}

/* A kernel's call of a host tool: a command, or the forwarded server. */
static void
s_serve_tool (const char *name, json_t *arguments, mcp_tool_done_fn *done, void *done_arg, void *arg)
{
    mcp_server_t *self = arg;
    if (self->hosttools && mcp_hosttools_call (self->hosttools, name, arguments, done, done_arg))
        return;
    if (self->upstream && mcp_upstream_call (self->upstream, name, arguments, done, done_arg))
        return;
    done (done_arg, NULL, gw_error_name (GW_E_UNKNOWN_TOOL), "this MCP server serves no tool of that name");
}

/* The gateway ended a call its host still serves: a command is killed (a
   forwarded server's call is answered at its own end, and dropped). */
static void
s_cancel_tool (void *done_arg, void *arg)
{
    mcp_server_t *self = arg;
    if (self->hosttools)
        mcp_hosttools_cancel (self->hosttools, done_arg);
}

static void
s_call_start (mcp_server_t *self, call_t *call)
{
    call->deferred = false;
    if (!s_gateway_usable (self))
        s_call_answer (call, mcp_tools_error_result ("kennel cannot run code: %s", self->startup_error));
    else if (streq (call->tool, "python_exec") || mcp_files_tool (call->tool))
        s_tool_in_conversation (self, call);
    else if (streq (call->tool, "conversation_open"))
        s_tool_open (self, call);
    else
        s_tool_control (self, call);
}

/* The calls that came while the gateway started: it is ready, or failed. */
static void
s_start_deferred (mcp_server_t *self)
{
    if (!s_gateway_usable (self) && !self->startup_error)
        return; /* the other half (gateway or forwarded server) still starts */
    zlistx_t *deferred = zlistx_new ();
    for (call_t *call = zlistx_first (self->calls); call; call = zlistx_next (self->calls))
        if (call->deferred)
            zlistx_add_end (deferred, call);
    for (call_t *call = zlistx_first (deferred); call; call = zlistx_next (deferred))
        s_call_start (self, call);
    zlistx_destroy (&deferred);
}

static void
s_tools_call (mcp_server_t *self, mcp_sink_t *sink, const json_t *id, const json_t *params, bool stateless)
{
    const char *name = gw_text (json_object_get (params, "name"));
    json_t *arguments = json_object_get (params, "arguments");
    if (!name || (arguments && !json_is_object (arguments))) {
        s_error (sink, id, MCP_INVALID_PARAMS, "tools/call needs a string name and an object arguments", NULL);
        return;
    }
    bool unknown = false;
    json_t *args = arguments ? json_incref (arguments) : json_object ();
    char *problem = mcp_tools_check (name, args, &unknown);
    if (unknown) {
        char *message = wire_xasprintf ("Unknown tool: %.200s", name);
        s_error (sink, id, MCP_INVALID_PARAMS, message, NULL);
        free (message);
        free (problem);
        json_decref (args);
        return;
    }
    if (problem) {
        s_reply (sink, id, mcp_tools_error_result ("invalid arguments: %s", problem), stateless);
        free (problem);
        json_decref (args);
        return;
    }
    call_t *call = wire_xcalloc (1, sizeof *call);
    call->server = self;
    call->sink = sink;
    call->scope = sink->scope ? wire_xstrdup (sink->scope) : NULL;
    call->id = json_deep_copy (id);
    call->stateless = stateless;
    call->tool = wire_xstrdup (name);
    call->arguments = args;
    json_t *token = json_object_get (json_object_get (params, "_meta"), "progressToken");
    if (json_is_string (token) || json_is_integer (token))
        call->progress_token = json_incref (token);
    zlistx_add_end (self->calls, call);
    if (s_gateway_usable (self) || self->startup_error)
        s_call_start (self, call);
    else
        call->deferred = true; /* started once the gateway is */
}

/* ---- the protocol's methods ---------------------------------------------- */

static bool
s_listed (const char **list, const char *v)
{
    for (; v && *list; list++)
        if (streq (*list, v))
            return true;
    return false;
}

bool
mcp_server_version_known (const char *version)
{
    return s_listed (handshake_versions, version) || s_listed (stateless_versions, version);
}

static json_t *
s_versions (void)
{
    json_t *all = json_array ();
    for (const char **v = stateless_versions; *v; v++)
        json_array_append_new (all, json_string (*v));
    for (const char **v = handshake_versions; *v; v++)
        json_array_append_new (all, json_string (*v));
    return all;
}

static json_t *
s_server_info (void)
{
    return json_pack ("{s:s, s:s}", "name", "kennel", "version", PACKAGE_VERSION);
}

static void
s_initialize (mcp_sink_t *sink, const json_t *id, const json_t *params)
{
    const char *asked = gw_text (json_object_get (params, "protocolVersion"));
    if (!asked) {
        s_error (sink, id, MCP_INVALID_PARAMS, "initialize needs a protocolVersion string", NULL);
        return;
    }
    /* the client's revision when we speak it, else our newest of that era */
    const char *version = s_listed (handshake_versions, asked) ? asked : handshake_versions[0];
    gw_log_limited ("mcp/initialize", "mcp_initialize", "{s:s, s:s, s:O}", "asked", asked, "version", version,
                    "client", json_object_get (params, "clientInfo") ?: json_null ());
    s_reply (sink, id,
             json_pack ("{s:s, s:{s:{s:b}}, s:o, s:s}", "protocolVersion", version, "capabilities", "tools",
                        "listChanged", 0, "serverInfo", s_server_info (), "instructions", instructions),
             false);
}

/* Interrupts the call's execution (a queued one when it starts) and
   forgets the call: no answer is sent for it. end_sink: its sink still
   waits (a cancel), else the sink is gone with its client. */
static void
s_call_drop (call_t *call, bool end_sink)
{
    if (call->exec) {
        mcp_conv_t *conv = zhashx_lookup (call->server->convs, call->conv_id);
        if (conv)
            mcp_conv_cancel (conv, call->exec);
    }
    if (end_sink)
        s_end (call->sink);
    s_call_free (call);
}

/* Whether call is of the client that sent a cancel on sink: the same
   scope, or for a request of no session the same sink (its own stream). */
static bool
s_same_client (const call_t *call, const mcp_sink_t *sink)
{
    return sink->scope ? call->scope && streq (call->scope, sink->scope) : call->sink == sink;
}

static void
s_cancelled (mcp_server_t *self, const json_t *params, mcp_sink_t *sink)
{
    json_t *request_id = json_object_get (params, "requestId");
    for (call_t *call = zlistx_first (self->calls); call; call = zlistx_next (self->calls)) {
        if (!json_equal (call->id, request_id) || !s_same_client (call, sink))
            continue;
        gw_log_limited ("mcp/cancelled", "mcp_cancelled", "{s:O, s:s}", "request", request_id, "tool", call->tool);
        /* the spec: no response for a cancelled request */
        s_call_drop (call, true);
        return;
    }
}

/* The stateless revision's check of a request's own version: true when
   the request may go on (*stateless set), else answered already. */
static bool
s_version_ok (mcp_sink_t *sink, const json_t *id, const json_t *params, bool *stateless)
{
    json_t *v = json_object_get (json_object_get (params, "_meta"), MCP_META_VERSION);
    *stateless = v != NULL;
    if (!v || s_listed (stateless_versions, gw_text (v)))
        return true;
    s_error (sink, id, MCP_UNSUPPORTED_VERSION, "unsupported protocol version",
             json_pack ("{s:o, s:O}", "supported", s_versions (), "requested", v));
    return false;
}

static void
s_request (mcp_server_t *self, mcp_sink_t *sink, const json_t *msg)
{
    const char *method = json_string_value (json_object_get (msg, "method"));
    json_t *id = json_object_get (msg, "id");
    json_t *params = json_object_get (msg, "params");
    if (streq (method, "initialize")) {
        s_initialize (sink, id, params);
        return;
    }
    bool stateless = false;
    if (!s_version_ok (sink, id, params, &stateless))
        return;
    if (streq (method, "ping"))
        s_reply (sink, id, json_object (), stateless);
    else if (streq (method, "server/discover"))
        s_reply (sink, id,
                 json_pack ("{s:o, s:{s:{s:b}}, s:o, s:s}", "supportedVersions", s_versions (), "capabilities", "tools",
                            "listChanged", 0, "serverInfo", s_server_info (), "instructions", instructions),
                 stateless);
    else if (streq (method, "tools/list"))
        s_reply (sink, id, json_pack ("{s:o}", "tools", mcp_tools_list ()), stateless);
    else if (streq (method, "tools/call"))
        s_tools_call (self, sink, id, params, stateless);
    else {
        char *message = wire_xasprintf ("Method not found: %.200s", method);
        s_error (sink, id, MCP_METHOD_NOT_FOUND, message, NULL);
        free (message);
    }
}

void
mcp_server_receive (mcp_server_t *self, const char *text, size_t len, mcp_sink_t *sink)
{
    if (!text) {
        char message[128];
        snprintf (message, sizeof message, "message over %zu bytes dropped", self->opts.max_line_bytes);
        s_error (sink, NULL, MCP_INVALID_REQUEST, message, json_pack ("{s:I}", "bytes", (json_int_t) len));
        return;
    }
    json_t *msg, *data;
    int code;
    const char *why = NULL;
    switch (mcp_rpc_parse (text, len, &msg, &code, &why, &data)) {
    case MCP_RPC_INVALID:
        s_error (sink, NULL, code, why, data);
        break;
    case MCP_RPC_REQUEST:
        s_request (self, sink, msg);
        break;
    case MCP_RPC_NOTIFICATION:
        if (streq (json_string_value (json_object_get (msg, "method")), "notifications/cancelled"))
            s_cancelled (self, json_object_get (msg, "params"), sink);
        s_end (sink); /* never answered */
        break;
    case MCP_RPC_RESPONSE:
        s_end (sink); /* the front sends the client no requests */
        break;
    }
    json_decref (msg);
}

/* The client went away: its running code is interrupted, its conversations
   stay (for their idle_ttl on a shared gateway). */
void
mcp_server_abandon (mcp_server_t *self, mcp_sink_t *sink)
{
    zlistx_t *gone = zlistx_new ();
    for (call_t *call = zlistx_first (self->calls); call; call = zlistx_next (self->calls))
        if (call->sink == sink)
            zlistx_add_end (gone, call);
    if (zlistx_size (gone))
        gw_log_limited ("mcp/client_gone", "mcp_client_gone", "{s:s, s:i}", "scope", sink->scope ?: "", "running",
                        (int) zlistx_size (gone));
    for (call_t *call = zlistx_first (gone); call; call = zlistx_next (gone))
        s_call_drop (call, false);
    zlistx_destroy (&gone);
}

static void
s_on_closed (const json_t *content, void *arg)
{
}

void
mcp_server_session_end (mcp_server_t *self, const char *id)
{
    const char *conv = mcp_sessions_find (self->sessions, id);
    if (!conv)
        return;
    char *scope = wire_xstrdup (id); /* id may be the table's own */
    zlistx_t *ended = zlistx_new ();
    for (call_t *call = zlistx_first (self->calls); call; call = zlistx_next (self->calls))
        if (call->scope && streq (call->scope, scope))
            zlistx_add_end (ended, call);
    for (call_t *call = zlistx_first (ended); call; call = zlistx_next (ended))
        s_call_drop (call, true);
    zlistx_destroy (&ended);
    /* its default conversation is of no one else's: closed (one opened by
       conversation_open stays, its handle may have been passed on) */
    if (zhashx_lookup (self->convs, conv) || zhashx_lookup (self->opening, conv)) {
        mcp_gateway_request (self->gateway, "conversation_close_request", json_pack ("{s:s}", "conversation_id", conv),
                             MCP_CONTROL_TIMEOUT_MS, s_on_closed, self);
        zhashx_delete (self->convs, conv);
    }
    zhashx_delete (self->specs, conv);
    gw_log ("mcp_session_end", "{s:i}", "sessions", (int) mcp_sessions_size (self->sessions) - 1);
    mcp_sessions_remove (self->sessions, scope);
    free (scope);
}

const char *
mcp_server_session_open (mcp_server_t *self)
{
    const char *id;
    while (!(id = mcp_sessions_add (self->sessions))) {
        gw_log_limited ("mcp/sessions", "mcp_session_evicted", "{s:i}", "max", MCP_SESSIONS_MAX);
        mcp_server_session_end (self, mcp_sessions_oldest (self->sessions));
    }
    return id;
}

bool
mcp_server_session_known (mcp_server_t *self, const char *id)
{
    return mcp_sessions_find (self->sessions, id) != NULL;
}

/* ---- start and end ---------------------------------------------------------- */

/* A part the front cannot serve without failed: every call gets why (the
   waiting ones now), and the front's exit status is 1 when its client goes. */
static void
s_start_failed (mcp_server_t *self, const char *why)
{
    gw_log ("mcp_start_failed", "{s:s}", "error", why);
    free (self->startup_error);
    self->startup_error = wire_xstrdup (why);
    self->exit_code = 1;
    s_start_deferred (self);
}

static void
s_on_gateway_ready (mcp_gateway_t *gw, bool ok, const char *errmsg, void *arg)
{
    mcp_server_t *self = arg;
    if (!ok) {
        s_start_failed (self, errmsg ?: "the gateway is gone");
        return;
    }
    s_conv_open_early (self);
    s_start_deferred (self);
}

/* The declarations conversations are opened with: the host commands',
   then the forwarded server's once it is ready. */
static void
s_catalog_build (mcp_server_t *self)
{
    json_array_clear (self->catalog);
    if (self->hosttools)
        mcp_hosttools_declare (self->hosttools, self->catalog);
    if (self->upstream && self->upstream_ready)
        mcp_upstream_declare (self->upstream, self->catalog);
}

static void
s_on_upstream_ready (mcp_upstream_t *up, bool ok, void *arg)
{
    mcp_server_t *self = arg;
    const char *setting = self->opts.tools_from_mcp_setting;
    if (!ok) {
        char *why = wire_xasprintf ("the %s server did not start (see the log)", setting);
        s_start_failed (self, why);
        free (why);
        return;
    }
    self->upstream_ready = true;
    s_catalog_build (self);
    char *problem = NULL;
    json_t *checked = gw_tools_validate (self->catalog, &problem);
    if (!checked) {
        self->upstream_ready = false;
        s_catalog_build (self);
        char *why = wire_xasprintf ("the tools of %s: %s", setting, problem ?: "invalid");
        s_start_failed (self, why);
        free (why);
        free (problem);
        return;
    }
    json_decref (checked);
    free (problem);
    s_conv_open_early (self);
    s_start_deferred (self);
}

/* The forwarded server of cmd (NULL: none) in place of the one there was:
   calls wait for its tool list again, and an earlier start's failure is
   forgotten. */
static void
s_upstream_restart (mcp_server_t *self, const char *cmd)
{
    mcp_upstream_destroy (&self->upstream);
    self->upstream_ready = false;
    free (self->upstream_cmd);
    self->upstream_cmd = cmd ? wire_xstrdup (cmd) : NULL;
    free (self->startup_error);
    self->startup_error = NULL;
    if (cmd)
        self->upstream = mcp_upstream_start (self->loop, cmd, self->opts.tools_from_mcp_setting, s_on_upstream_ready,
                                             self);
}

int
mcp_server_retool (mcp_server_t *self, const char *tools_file, const char *tools_from_mcp, char **errmsg)
{
    mcp_hosttools_t *fresh = NULL;
    if (tools_file
        && !(fresh = mcp_hosttools_load (self->loop, tools_file, self->opts.core, self->own_config, errmsg)))
        return -1;
    if (fresh && self->hosttools)
        mcp_hosttools_take (self->hosttools, &fresh);
    else if (fresh)
        self->hosttools = fresh;
    else
        mcp_hosttools_destroy (&self->hosttools);
    if (!streq (self->upstream_cmd ?: "", tools_from_mcp ?: "")
        || (self->upstream && !mcp_upstream_alive (self->upstream)))
        s_upstream_restart (self, tools_from_mcp);
    s_catalog_build (self);
    gw_log ("mcp_retool", "{s:s?, s:s?}", "tools", tools_file, "tools_from_mcp", tools_from_mcp);
    return 0;
}

static void
s_json_free (void **item)
{
    json_decref (*(json_t **) item);
    *item = NULL;
}

static void *
s_json_dup (const void *item)
{
    return json_incref ((json_t *) item);
}

static void
s_conv_free (void **item)
{
    mcp_conv_destroy ((mcp_conv_t **) item);
}

mcp_server_t *
mcp_server_new (zloop_t *loop, const mcp_opts_t *opts, char **errmsg)
{
    mcp_server_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->opts = *opts;
    self->catalog = json_array ();
    self->convs = zhashx_new ();
    zhashx_set_destructor (self->convs, s_conv_free);
    self->opening = zhashx_new ();
    self->specs = zhashx_new ();
    zhashx_set_destructor (self->specs, s_json_free);
    zhashx_set_duplicator (self->specs, s_json_dup);
    self->renewed = zhashx_new ();
    self->calls = zlistx_new ();
    self->sessions = mcp_sessions_new (MCP_SESSIONS_MAX);
    char id[WIRE_ID_SIZE];
    wire_id_new (id);
    snprintf (self->default_id, sizeof self->default_id, "mcp-%.12s-default", id);
    if (!self->opts.tools_from_mcp_setting)
        self->opts.tools_from_mcp_setting = "--tools-from-mcp";
    if (!opts->core && opts->config && !(self->own_config = gw_config_load (opts->config, errmsg))) {
        mcp_server_destroy (&self);
        return NULL;
    }
    if (mcp_server_retool (self, opts->tools_file, opts->tools_from_mcp, errmsg) < 0) {
        mcp_server_destroy (&self);
        return NULL;
    }
    self->opts.tools_file = self->opts.tools_from_mcp = NULL; /* the caller's: gone after a reload */
    self->gateway = opts->core ? mcp_gateway_core (loop, opts->core, opts->own_core)
                               : mcp_gateway_start (loop, opts->connection_file, s_on_gateway_ready, self);
    if (!self->gateway) {
        *errmsg = wire_xstrdup ("cannot use the gateway");
        mcp_server_destroy (&self);
        return NULL;
    }
    s_conv_open_early (self); /* an own gateway is ready at once */
    return self;
}

int
mcp_server_exit_code (const mcp_server_t *self)
{
    return self->exit_code;
}

void
mcp_server_destroy (mcp_server_t **self_p)
{
    mcp_server_t *self = *self_p;
    if (!self)
        return;
    /* first: its pending requests end (NULL) while the calls they belong to
       still exist */
    mcp_gateway_destroy (&self->gateway);
    zhashx_destroy (&self->convs); /* answers the calls running in them */
    call_t *call;
    while ((call = zlistx_first (self->calls))) {
        call->exec = NULL;
        s_call_free (call);
    }
    zlistx_destroy (&self->calls);
    zhashx_destroy (&self->opening);
    zhashx_destroy (&self->specs);
    zhashx_destroy (&self->renewed);
    mcp_sessions_destroy (&self->sessions);
    mcp_hosttools_destroy (&self->hosttools);
    gw_config_destroy (&self->own_config);
    mcp_upstream_destroy (&self->upstream);
    free (self->upstream_cmd);
    json_decref (self->catalog);
    free (self->startup_error);
    free (self);
    *self_p = NULL;
}
