/*  http_mcp.c - MCP over streamable HTTP at /mcp, inside the daemon.

    The dispatcher is `kennel mcp`'s (gateway/mcp/mcp_server.c): this file
    is only its transport. Its gateway is this daemon's core (mcp_core.c)
    and it is a peer of each conversation (mcp_conv.c), so POST /mcp gets
    the checks, limits, logs and metadata.kennel of every other front.

    POST /mcp carries one JSON-RPC message. A notification or a response
    gets 202. A request is answered with application/json once its answer
    is there, or, from its first progress notification on, with a
    text/event-stream (chunked) that carries the notifications and then
    the answer. A cancelled request's stream ends without an answer (202
    when nothing was sent yet). A connection that goes away before its
    answer abandons the call: the code is interrupted, the conversation
    stays. GET /mcp is 405 (the server sends nothing unasked).

    Sessions: initialize without Mcp-Session-Id gets one the dispatcher
    mints (unguessable, mcp_sessions.c); a request naming a session that
    was not minted, or has ended, is 404 (the client initializes again, as
    the transport spec says), so no client can cancel, end or run in
    another's session by naming it. A session scopes request ids (a cancel
    matches its own session's calls) and has a default conversation of its
    own; DELETE ends it. A request without a session (the stateless
    revision) has neither: its cancel reaches only its own stream, and a
    call names its conversation. Auth and Origin are checked before any
    route (http_server.c), as for the rest of the API.
*/
#include "http.h"
#include "gateway/mcp/mcp.h"

#include <string.h>

#define MCP_SESSION_MAX 64
#define MCP_HTTP_PROGRESS_S 1.0

struct http_mcp {
    mcp_server_t *server;
};

struct http_mcp_req {
    mcp_sink_t sink; /* first: the sink is the request */
    http_front_t *front;
    struct lws *wsi;
    char scope[MCP_SESSION_MAX + 1]; /* its session, or "" for none (sink.scope NULL) */
    bool minted;    /* scope is a session made for this initialize */
    bool sse;       /* answering as an event stream */
    bool head_sent; /* its headers are written */
    bool ended;     /* the dispatcher is done: finish once written */
    json_t *answer; /* application/json: the answer */
    char *out;      /* event stream bytes to write */
    size_t out_len;
};

static const char *
s_setting (const gw_config_t *config, const char *key)
{
    return gw_text (json_object_get (config->mcp, key));
}

/* The MCP server of /mcp with the host tools of config's "mcp" section;
   NULL + *errmsg when its tools file is bad. */
static http_mcp_t *
s_mcp_new (http_front_t *front, const gw_config_t *config, char **errmsg)
{
    mcp_opts_t opts = {.max_line_bytes = 1 << 20,
                       .progress_interval = MCP_HTTP_PROGRESS_S,
                       .core = front->server,
                       .tools_file = s_setting (config, "tools"),
                       .tools_from_mcp = s_setting (config, "tools_from_mcp"),
                       .tools_from_mcp_setting = "mcp.tools_from_mcp"};
    mcp_server_t *server = mcp_server_new (gw_server_loop (front->server), &opts, errmsg);
    if (!server)
        return NULL;
    http_mcp_t *self = wire_xcalloc (1, sizeof *self);
    self->server = server;
    return self;
}

static http_mcp_t *
s_mcp (http_front_t *front)
{
    char *errmsg = NULL;
    if (!front->mcp && !(front->mcp = s_mcp_new (front, gw_server_config (front->server), &errmsg))) {
        gw_log_limited ("http/mcp", "http_mcp_failed", "{s:s}", "error", errmsg ?: "?");
        free (errmsg);
    }
    return front->mcp;
}

/* The front's part of a reload: its http section checked as a start checks
   it (nothing of it applies before a restart), then the "mcp" section: the
   tools file read and checked again, the forwarded server started again
   when its command changed or it is gone (mcp_server_retool). A bad
   section or file refuses the reload; the http check comes first, so a
   refused reload changed nothing. */
static int
s_reload_check (const gw_config_t *fresh, char **errmsg, void *arg)
{
    http_front_t *front = arg;
    if (http_settings_check (fresh, errmsg, NULL) < 0)
        return -1;
    if (!front->mcp) {
        /* nothing served yet: only a configured section is made now, so
           that its file is checked when the reload is */
        return !fresh->mcp || (front->mcp = s_mcp_new (front, fresh, errmsg)) ? 0 : -1;
    }
    return mcp_server_retool (front->mcp->server, s_setting (fresh, "tools"), s_setting (fresh, "tools_from_mcp"),
                              errmsg);
}

int
http_mcp_start (http_front_t *front, char **errmsg)
{
    gw_server_set_reload_check (front->server, s_reload_check, front);
    const gw_config_t *config = gw_server_config (front->server);
    if (!config->mcp)
        return 0; /* made at the first request */
    front->mcp = s_mcp_new (front, config, errmsg);
    return front->mcp ? 0 : -1;
}

static void
s_req_free (http_mcp_req_t *mr)
{
    json_decref (mr->answer);
    free (mr->out);
    free (mr);
}

/* ---- the sink ------------------------------------------------------------ */

static void
s_wake (http_mcp_req_t *mr)
{
    if (!mr->wsi)
        return;
    lws_callback_on_writable (mr->wsi);
    http_loop_run_soon (mr->front->uv);
}

static void
s_event_add (http_mcp_req_t *mr, const json_t *msg)
{
    char *text = json_dumps (msg, JSON_COMPACT);
    size_t len = strlen (text);
    mr->out = wire_xreallocarray (mr->out, mr->out_len + len + 24, 1);
    mr->out_len += (size_t) sprintf (mr->out + mr->out_len, "event: message\ndata: %s\n\n", text);
    free (text);
}

static void
s_send (mcp_sink_t *sink, json_t *msg)
{
    http_mcp_req_t *mr = (http_mcp_req_t *) sink;
    bool answer = json_object_get (msg, "id") != NULL;
    if (!answer)
        mr->sse = true; /* a notification first: the answer comes as a stream */
    if (mr->sse)
        s_event_add (mr, msg);
    else {
        json_decref (mr->answer);
        mr->answer = json_incref (msg);
    }
    json_decref (msg);
    s_wake (mr);
}

static void
s_end (mcp_sink_t *sink)
{
    http_mcp_req_t *mr = (http_mcp_req_t *) sink;
    mr->ended = true;
    s_wake (mr);
}

static const mcp_sink_fns_t s_sink_fns = {s_send, s_end};

/* ---- writing ------------------------------------------------------------- */

/* The answer as one JSON body: 200, or 400 for a message refused as a
   whole (an error to id null), 202 when nothing answers it. */
static int
s_write_json (struct lws *wsi, http_req_t *req, http_mcp_req_t *mr)
{
    json_t *answer = mr->answer;
    mr->answer = NULL;
    int status = !answer ? 202 : json_is_null (json_object_get (answer, "id")) ? 400 : 200;
    const char *extra[] = {"mcp-session-id:", mr->minted ? mr->scope : NULL, NULL};
    char *text = answer ? json_dumps (answer, JSON_COMPACT) : NULL;
    json_decref (answer);
    size_t len = text ? strlen (text) : 0;
    int rc = http_reply_head (wsi, req, status, text ? "application/json" : NULL, (long long) len, extra);
    if (rc == 0 && len) {
        unsigned char *buf = wire_xmalloc (LWS_PRE + len);
        memcpy (buf + LWS_PRE, text, len);
        rc = lws_write (wsi, buf + LWS_PRE, len, LWS_WRITE_HTTP_FINAL) < 0 ? -1 : 0;
        free (buf);
    }
    free (text);
    return rc;
}

/* What the stream has waiting, as one chunk, and the last chunk once the
   dispatcher is done. */
static int
s_write_stream (struct lws *wsi, http_req_t *req, http_mcp_req_t *mr)
{
    if (!mr->head_sent) {
        const char *extra[] = {"cache-control:", "no-cache", "transfer-encoding:", "chunked", "mcp-session-id:",
                               mr->minted ? mr->scope : NULL, NULL};
        if (http_reply_head (wsi, req, 200, "text/event-stream", -1, extra) < 0)
            return -1;
        mr->head_sent = true;
    }
    size_t size = LWS_PRE + mr->out_len + 32;
    unsigned char *buf = wire_xmalloc (size);
    char *p = (char *) buf + LWS_PRE;
    size_t n = 0;
    if (mr->out_len) {
        n += (size_t) sprintf (p, "%zx\r\n", mr->out_len);
        memcpy (p + n, mr->out, mr->out_len);
        n += mr->out_len;
        memcpy (p + n, "\r\n", 2);
        n += 2;
    }
    if (mr->ended) {
        memcpy (p + n, "0\r\n\r\n", 5);
        n += 5;
    }
    free (mr->out);
    mr->out = NULL;
    mr->out_len = 0;
    int rc = n && lws_write (wsi, buf + LWS_PRE, n, LWS_WRITE_HTTP) < 0 ? -1 : 0;
    free (buf);
    return rc;
}

int
http_mcp_writable (struct lws *wsi, http_req_t *req)
{
    http_mcp_req_t *mr = req->mcp;
    if (!mr->sse && !mr->ended)
        return 0; /* the answer is not there yet */
    int rc = mr->sse ? s_write_stream (wsi, req, mr) : s_write_json (wsi, req, mr);
    if (rc < 0 || !mr->ended)
        return rc;
    req->mcp = NULL;
    s_req_free (mr);
    return lws_http_transaction_completed (wsi) ? -1 : 0;
}

void
http_mcp_forget (http_req_t *req)
{
    http_mcp_req_t *mr = req->mcp;
    if (!mr)
        return;
    req->mcp = NULL;
    if (!mr->ended && mr->front->mcp)
        mcp_server_abandon (mr->front->mcp->server, &mr->sink);
    s_req_free (mr);
}

/* ---- routes ---------------------------------------------------------------- */

/* A custom header's value (lws keeps the name as the client sent it). */
static bool
s_header (struct lws *wsi, const char *lower, const char *canonical, char *out, size_t size)
{
    const char *names[] = {lower, canonical};
    for (int i = 0; i < 2; i++)
        if (lws_hdr_custom_copy (wsi, out, (int) size, names[i], (int) strlen (names[i])) > 0)
            return true;
    *out = 0;
    return false;
}

/* A session the server does not know: 404 with a JSON-RPC error (the
   TypeScript SDK's server's code), so that the client starts a new one. */
static int
s_session_unknown (struct lws *wsi, http_req_t *req)
{
    gw_log_limited ("http/mcp", "mcp_session_unknown", "{s:s}", "path", req->path);
    return http_reply_write (
        wsi, req, 404,
        mcp_rpc_error (json_null (), MCP_SESSION_NOT_FOUND,
                       "Session not found: this server did not mint this Mcp-Session-Id, or the session ended "
                       "(DELETE, or pushed out by newer ones): initialize again without it",
                       NULL),
        NULL);
}

/* Mcp-Session-Id: none (*out ""), or one this server minted and that has
   not ended. 0, or -1 answered (400 malformed, 404 unknown). */
static int
s_session (struct lws *wsi, http_req_t *req, mcp_server_t *server, char *out, int *rc)
{
    char value[256];
    *out = 0;
    if (!s_header (wsi, "mcp-session-id:", "Mcp-Session-Id:", value, sizeof value))
        return 0;
    size_t n = strlen (value);
    bool ok = n > 0 && n <= MCP_SESSION_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = value[i] > 0x20 && value[i] < 0x7f;
    if (!ok) {
        *rc = http_reply_error (wsi, req, 400, "Mcp-Session-Id must be 1 to 64 visible ASCII characters");
        return -1;
    }
    if (!mcp_server_session_known (server, value)) {
        *rc = s_session_unknown (wsi, req);
        return -1;
    }
    snprintf (out, MCP_SESSION_MAX + 1, "%s", value);
    return 0;
}

static bool
s_is_initialize (const char *body, size_t len)
{
    json_t *msg, *data;
    int code;
    const char *why;
    bool yes = mcp_rpc_parse (body, len, &msg, &code, &why, &data) == MCP_RPC_REQUEST
               && streq (json_string_value (json_object_get (msg, "method")), "initialize");
    json_decref (msg);
    json_decref (data);
    return yes;
}

static int
s_post (struct lws *wsi, http_req_t *req, http_mcp_t *mcp)
{
    char version[64];
    if (s_header (wsi, "mcp-protocol-version:", "MCP-Protocol-Version:", version, sizeof version)
        && !mcp_server_version_known (version))
        return http_reply_error (wsi, req, 400, "unsupported MCP-Protocol-Version");
    http_mcp_req_t *mr = wire_xcalloc (1, sizeof *mr);
    int rc = 0;
    if (s_session (wsi, req, mcp->server, mr->scope, &rc) < 0) {
        s_req_free (mr);
        return rc;
    }
    const char *body = req->body ? req->body : "";
    if (!mr->scope[0] && s_is_initialize (body, req->body_len)) {
        snprintf (mr->scope, sizeof mr->scope, "%s", mcp_server_session_open (mcp->server));
        mr->minted = true;
    }
    mr->sink = (mcp_sink_t) {.fns = &s_sink_fns, .scope = mr->scope[0] ? mr->scope : NULL};
    mr->front = req->front;
    mr->wsi = wsi;
    req->mcp = mr;
    /* a call may run long: lws's own timeout must not cut it, and it is
       counted among the connections that wait for the gateway */
    http_reply_wait (wsi);
    http_clients_take (req->front->clients, wsi, &req->slot, NULL);
    mcp_server_receive (mcp->server, body, req->body_len, &mr->sink);
    return 0;
}

/* An MCP client told 401 looks for OAuth: RFC 9728's protected resource
   metadata (/.well-known/oauth-protected-resource[/mcp]), RFC 8414's and
   OpenID's authorization server metadata, and, as the 2025-03-26
   revision's fallback (the TypeScript SDK still takes it), /register,
   /authorize and /token at the origin. No document or endpoint is served
   there, and a token is not needed to learn that: 404 is how the MCP
   authorization spec's discovery ends with "no OAuth" (a 401 would say it
   exists, behind the token), and the body says what does work. */
bool
http_mcp_oauth_path (const char *path)
{
    return strncmp (path, "/.well-known/", 13) == 0 || streq (path, "/register") || streq (path, "/authorize")
           || streq (path, "/token");
}

int
http_mcp_no_oauth (struct lws *wsi, http_req_t *req)
{
    return http_reply_error (wsi, req, 404,
                             "this server has no OAuth: send its token as Authorization: Bearer T (the daemon's "
                             "http.token, KENNEL_AUTH_TOKEN or its connection file's http_token)");
}

int
http_mcp_route (struct lws *wsi, http_req_t *req, const char *rest)
{
    if (*rest)
        return http_reply_error (wsi, req, 404, "no such path");
    if (req->method == LWSHUMETH_GET)
        return http_reply_error (wsi, req, 405, "POST a JSON-RPC message; this server opens no stream of its own");
    if (req->method != LWSHUMETH_POST && req->method != LWSHUMETH_DELETE)
        return http_reply_error (wsi, req, 405, "POST or DELETE");
    const char *full = http_clients_refusal (req->front->clients, wsi, NULL);
    if (full)
        return http_reply_error (wsi, req, 503, full);
    http_mcp_t *mcp = s_mcp (req->front);
    if (!mcp)
        return http_reply_error (wsi, req, 500, "the MCP server could not be started (see the log)");
    if (req->method == LWSHUMETH_POST)
        return s_post (wsi, req, mcp);
    char scope[MCP_SESSION_MAX + 1];
    int rc = 0;
    if (s_session (wsi, req, mcp->server, scope, &rc) < 0)
        return rc;
    if (!scope[0])
        return http_reply_error (wsi, req, 400, "DELETE /mcp needs the Mcp-Session-Id to end");
    mcp_server_session_end (mcp->server, scope);
    return http_reply_write (wsi, req, 204, NULL, NULL);
}

void
http_mcp_destroy (http_mcp_t **self_p)
{
    http_mcp_t *self = *self_p;
    if (!self)
        return;
    mcp_server_destroy (&self->server);
    free (self);
    *self_p = NULL;
}
