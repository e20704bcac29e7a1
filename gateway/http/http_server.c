/*  http_server.c - the HTTP + WebSocket front: the libwebsockets context
    in the gateway's loop, the callback that dispatches HTTP requests,
    websocket upgrades and websocket traffic, and the front's lifetime.

    Every request and every upgrade passes http_auth first. What waits for
    the gateway (a kernel start) is answered from the writable callback;
    the connection may be gone by then, and its wait is cancelled.
    Limits: at most max_connections websockets and HTTP requests held for
    the gateway at once, shared per client and per kernel (http_clients:
    503 beyond), request bodies of at most 1 MiB (413); connections without
    a whole request yet are bounded per client and in all (http_clients),
    and lws's header pool holds all of them and every held request.
*/
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define BODY_MAX (1 << 20)
/* Header buffers besides the pending connections' and the held requests':
   requests being read or answered in a pass, connections closed to make
   room that lws has not freed yet. */
#define HEADER_SPARE 64
/* lws's own timeouts, made explicit: a connection has this long from its
   accept (or TLS handshake) to begin a request head, and a head once
   begun has HEADER_SECONDS to be whole. Neither is extended by bytes
   trickled in (lws sets each once). */
#define ACCEPT_SECONDS 5
#define HEADER_SECONDS 10

static int callback (struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len);

/* protocols[0] serves HTTP and the legacy websocket (no subprotocol); the
   v1 subprotocol is chosen by name when a client offers it. */
static const struct lws_protocols protocols[] = {
    {"kennel-http", callback, sizeof (http_req_t), 65536, 0, NULL, 0},
    {HTTP_WS_V1, callback, sizeof (http_req_t), 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}};

static http_front_t *
front_of (struct lws *wsi)
{
    return lws_context_user (lws_get_context (wsi));
}

/* The request on wsi ended (or a new one begins): what it held is let go,
   but for a websocket's slot, which goes when the websocket closes. */
static void
req_reset (struct lws *wsi, http_req_t *req)
{
    http_front_t *front = req->front;
    ws_conn_t *ws = req->ws;
    http_wait_cancel (req->wait);
    http_file_end (&req->file);
    http_mcp_forget (req);
    http_clients_request_end (front->clients, wsi, &req->busy);
    http_slot_t slot = req->slot;
    if (!ws)
        http_clients_release (front->clients, &slot);
    free (req->body);
    free (req->answer);
    memset (req, 0, sizeof *req);
    req->front = front;
    req->ws = ws;
    req->slot = slot;
}

/* -1 when the request announces no body, else its length. lws reads
   bodies of POST, PATCH and PUT, and sends BODY_COMPLETION for a POST or
   PATCH also for a length 0. */
static long long
content_length (struct lws *wsi)
{
    char text[32];
    if (lws_hdr_copy (wsi, text, sizeof text, WSI_TOKEN_HTTP_CONTENT_LENGTH) <= 0)
        return -1;
    return atoll (text);
}

/* A Contents API model carries a file chunk inline: its own, larger bound. */
static size_t
body_max (const http_req_t *req)
{
    return strncmp (req->path, "/api/contents/", 14) == 0 ? HTTP_CONTENTS_BODY_MAX : BODY_MAX;
}

static int
body_too_large (struct lws *wsi, http_req_t *req)
{
    return http_reply_error (wsi, req, 413,
                             body_max (req) == BODY_MAX ? "the request body is larger than 1 MiB"
                                                        : "the request body is larger than 6 MiB: send a big file "
                                                          "in chunks (\"chunk\") or PUT it raw to /files/<id>/<path>");
}

static int
on_http (struct lws *wsi, http_req_t *req, const char *uri)
{
    http_front_t *front = front_of (wsi);
    if (http_clients_closing (wsi))
        return -1; /* its head came whole just as it was closed to make room */
    req->front = front;
    req_reset (wsi, req);
    http_clients_request_begin (front->clients, wsi, &req->busy);
    char *u;
    int ulen;
    req->method = lws_http_get_uri_and_method (wsi, &u, &ulen);
    if (snprintf (req->path, sizeof req->path, "%s", uri) >= (int) sizeof req->path) {
        snprintf (req->path, sizeof req->path, "%.64s...", uri);
        return http_reply_error (wsi, req, 414, "the path is longer than 4400 bytes");
    }
    if (req->method == LWSHUMETH_OPTIONS) /* a CORS preflight carries no token */
        return http_reply_write (wsi, req, front->settings.allow_origin ? 204 : 403, NULL, NULL);
    if (streq (req->path, "/healthz")) /* liveness: says only that the loop runs */
        return http_ops_healthz (wsi, req);
    if (streq (req->path, "/metrics") && front->settings.metrics_open)
        return http_ops_metrics (wsi, req);
    if (http_mcp_oauth_path (req->path)) /* 404 needs no token: there is no OAuth */
        return http_mcp_no_oauth (wsi, req);
    int status;
    const char *refusal = http_auth_refusal (wsi, &front->settings, &status);
    if (refusal)
        return http_reply_error (wsi, req, status, refusal);
    if (lws_hdr_total_length (wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0)
        return http_reply_error (wsi, req, 411, "a chunked request body is not read here: send Content-Length");
    long long length = content_length (wsi);
    if (http_files_streams_body (req))
        return http_files_upload_begin (wsi, req, length);
    if (length > (long long) body_max (req))
        return body_too_large (wsi, req);
    /* lws sends no BODY_COMPLETION for a PUT of length 0 */
    bool with_body = req->method == LWSHUMETH_POST || req->method == LWSHUMETH_PATCH
                     || (req->method == LWSHUMETH_PUT && length > 0);
    if (with_body && length >= 0)
        return 0; /* answered at LWS_CALLBACK_HTTP_BODY_COMPLETION */
    return http_route_dispatch (wsi, req);
}

static int
on_body (http_req_t *req, const void *in, size_t len)
{
    /* nothing to read for a request answered already (a refused one) */
    if (!len || !req->path[0] || req->status || req->wait)
        return 0;
    if (req->file)
        return http_files_upload_body (req, in, len);
    if (req->body_too_large || req->body_len + len > body_max (req)) {
        req->body_too_large = true;
        return 0;
    }
    req->body = wire_xreallocarray (req->body, req->body_len + len + 1, 1);
    memcpy (req->body + req->body_len, in, len);
    req->body_len += len;
    req->body[req->body_len] = 0;
    return 0;
}

/* The websocket path: /api/kernels/{id}/channels */
static gw_conv_t *
channels_conv (http_front_t *front, const char *path)
{
    char id[HTTP_KERNEL_ID_SIZE + 1];
    const char *prefix = "/api/kernels/";
    size_t n = strlen (prefix);
    if (strncmp (path, prefix, n) != 0)
        return NULL;
    const char *slash = strchr (path + n, '/');
    if (!slash || !streq (slash, "/channels") || (size_t) (slash - path - n) >= sizeof id)
        return NULL;
    snprintf (id, sizeof id, "%.*s", (int) (slash - path - n), path + n);
    return http_kernel_conv (front, id);
}

/* No per-connection data exists yet at an upgrade: the answer to a refusal
   is written from a request record of its own. The head is whole: the
   connection is no longer pending, and once accepted never is again. */
static int
on_confirm_upgrade (struct lws *wsi, const char *upgrade_to)
{
    http_front_t *front = front_of (wsi);
    http_req_t upgrade = {.front = front, .upgrading = true}, *req = &upgrade;
    if (http_clients_closing (wsi) || lws_hdr_copy (wsi, req->path, sizeof req->path, WSI_TOKEN_GET_URI) <= 0)
        return -1;
    http_clients_request_begin (front->clients, wsi, &req->busy);
    int status;
    const char *refusal = http_auth_refusal (wsi, &front->settings, &status);
    gw_conv_t *conv = refusal ? NULL : channels_conv (front, req->path);
    const char *full = conv ? http_clients_refusal (front->clients, wsi, conv) : NULL;
    int rc = 0;
    if (refusal)
        rc = http_reply_error (wsi, req, status, refusal);
    else if (!upgrade_to || strcasecmp (upgrade_to, "websocket") != 0)
        rc = http_reply_error (wsi, req, 400, "only a websocket upgrade is served here");
    else if (!conv)
        rc = http_reply_error (wsi, req, 404, "no kernel has this id");
    else if (full)
        rc = http_reply_error (wsi, req, 503, full);
    else {
        http_clients_websocket (front->clients, wsi);
        http_clients_request_end (front->clients, wsi, &req->busy);
        return 0;
    }
    http_clients_request_end (front->clients, wsi, &req->busy);
    return rc < 0 ? -1 : 1;
}

static int
on_established (struct lws *wsi, http_req_t *req)
{
    http_front_t *front = front_of (wsi);
    memset (req, 0, sizeof *req);
    req->front = front;
    char path[256];
    gw_conv_t *conv = lws_hdr_copy (wsi, path, sizeof path, WSI_TOKEN_GET_URI) > 0 ? channels_conv (front, path) : NULL;
    if (!conv)
        return -1;
    const struct lws_protocols *p = lws_get_protocol (wsi);
    req->ws = ws_conn_new (front, wsi, conv, p && streq (p->name, HTTP_WS_V1) ? WS_V1 : WS_LEGACY);
    http_clients_take (front->clients, wsi, &req->slot, conv); /* checked at the upgrade, in this pass */
    return 0;
}

static void
on_ws_closed (http_req_t *req)
{
    if (!req->ws)
        return;
    ws_conn_destroy (&req->ws);
    http_clients_release (req->front->clients, &req->slot);
}

static int
callback (struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    http_req_t *req = user;
    int rc = 0;
    http_front_t *front = front_of (wsi);
    if (front && front->uv)
        http_loop_note (front->uv);
    switch (reason) {
    case LWS_CALLBACK_HTTP:
        rc = on_http (wsi, req, in);
        break;
    case LWS_CALLBACK_HTTP_BODY:
        rc = on_body (req, in, len);
        break;
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        if (!req->path[0])
            break; /* the body of a request answered already (413, 411) */
        rc = req->file ? http_files_upload_end (wsi, req)
             : req->body_too_large ? body_too_large (wsi, req)
                                   : http_route_dispatch (wsi, req);
        break;
    case LWS_CALLBACK_HTTP_WRITEABLE:
        rc = req->file ? http_files_download_more (wsi, req) : req->mcp ? http_mcp_writable (wsi, req) : http_reply_flush (wsi, req);
        break;
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        rc = on_confirm_upgrade (wsi, in);
        break;
    case LWS_CALLBACK_CLOSED_HTTP:
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
        if (req && req->front)
            req_reset (wsi, req);
        return lws_callback_http_dummy (wsi, reason, user, in, len);
    case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
        rc = front && http_clients_accepted (front->clients, wsi) < 0 ? -1 : 0;
        break;
    case LWS_CALLBACK_WSI_DESTROY:
        if (front && front->clients)
            http_clients_gone (front->clients, wsi);
        return lws_callback_http_dummy (wsi, reason, user, in, len);
    case LWS_CALLBACK_ESTABLISHED:
        rc = on_established (wsi, req);
        break;
    case LWS_CALLBACK_RECEIVE:
        rc = req->ws ? ws_conn_receive (req->ws, in, len) : -1;
        break;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        rc = req->ws ? ws_conn_writable (req->ws) : 0;
        break;
    case LWS_CALLBACK_CLOSED:
        on_ws_closed (req);
        break;
    default:
        return lws_callback_http_dummy (wsi, reason, user, in, len);
    }
    return rc;
}

/* lws's first error line while the context is made: the cause it gives
   only to its log (one context per process, made on the loop's thread). */
static struct {
    bool on;
    char line[256];
} first_error;

static void
lws_log_line (int level, const char *line)
{
    char text[512];
    snprintf (text, sizeof text, "%s", line);
    size_t n = strlen (text);
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        text[--n] = 0;
    if (first_error.on && (level & LLL_ERR) && !first_error.line[0])
        snprintf (first_error.line, sizeof first_error.line, "%s", text);
    gw_log_limited ("http/lws", "http_library", "{s:s}", "message", text);
}

/* The errno of binding the listen address ourselves, 0 when it binds. */
static int
bind_probe (const char *ip, int port)
{
    struct sockaddr_storage ss;
    memset (&ss, 0, sizeof ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *) &ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *) &ss;
    socklen_t len = sizeof *v4;
    if (inet_pton (AF_INET, ip, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons ((uint16_t) port);
    }
    else {
        if (inet_pton (AF_INET6, ip, &v6->sin6_addr) != 1)
            return EINVAL;
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons ((uint16_t) port);
        len = sizeof *v6;
    }
    int fd = socket (ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0)
        return errno;
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); /* as lws binds */
    int err = bind (fd, (struct sockaddr *) &ss, len) < 0 ? errno : 0;
    close (fd);
    return err;
}

/* Why the listen address cannot be bound (0: it can), as a message. lws
   says it only to its log, and for some errors (EACCES, EADDRNOTAVAIL) it
   still makes the context, without a listener, waiting for the interface. */
static char *
listen_error (const http_front_t *self)
{
    const char *ip = self->settings.ip;
    int port = self->settings.port;
    int err = bind_probe (ip, port);
    if (!err)
        return NULL;
    return wire_xasprintf ("cannot listen for HTTP on %s:%d: %s%s", ip, port, strerror (err),
                           err == EACCES ? " (a port below the host's net.ipv4.ip_unprivileged_port_start "
                                           "needs root or CAP_NET_BIND_SERVICE)"
                                         : "");
}

static bool
listening (http_front_t *self)
{
    struct lws_vhost *vh = self->lws ? lws_get_vhost_by_name (self->lws, "kennel") : NULL;
    return vh && lws_get_vhost_listen_port (vh) > 0;
}

static int
context_create (http_front_t *self, char **errmsg)
{
    static lws_retry_bo_t retry;
    retry.secs_since_valid_ping = (uint16_t) self->settings.ping_seconds;
    retry.secs_since_valid_hangup = (uint16_t) (self->settings.ping_seconds * 10);
    void *foreign[1] = {http_loop_uv (self->uv)};
    struct lws_context_creation_info info;
    memset (&info, 0, sizeof info);
    info.port = self->settings.port; /* 0: a free one */
    info.iface = self->settings.ip;
    info.protocols = protocols;
    info.user = self;
    info.pcontext = &self->lws;
    info.foreign_loops = foreign;
    /* lws closes a text frame that is not UTF-8 with 1007 */
    info.options = LWS_SERVER_OPTION_LIBUV | LWS_SERVER_OPTION_VALIDATE_UTF8;
    /* with IPv6 on, lws 4.1 binds every address for an IPv4 iface */
    if (!strchr (self->settings.ip, ':'))
        info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    info.max_http_header_pool2 = (unsigned int) (self->settings.max_pending + self->settings.max_connections
                                                 + HEADER_SPARE);
    info.timeout_secs = ACCEPT_SECONDS;
    info.timeout_secs_ah_idle = HEADER_SECONDS;
    info.retry_and_idle_policy = &retry;
    info.vhost_name = "kennel";
    if (self->settings.certfile) {
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        info.ssl_cert_filepath = self->settings.certfile;
        info.ssl_private_key_filepath = self->settings.keyfile;
    }
    lws_set_log_level (LLL_ERR | LLL_WARN, lws_log_line);
    if (http_loop_evlib_check (errmsg) < 0 || (*errmsg = listen_error (self)))
        return -1;
    first_error.on = true;
    first_error.line[0] = 0;
    self->lws = lws_create_context (&info);
    first_error.on = false;
    if (listening (self))
        return 0;
    /* taken since the probe, or a TLS file lws cannot read */
    *errmsg = listen_error (self);
    if (!*errmsg)
        *errmsg = wire_xasprintf ("cannot start the HTTP front on %s:%d: libwebsockets: %s", self->settings.ip,
                                  self->settings.port, first_error.line[0] ? first_error.line : "no reason given");
    return -1;
}

static void
url_publish (http_front_t *self)
{
    struct lws_vhost *vh = lws_get_vhost_by_name (self->lws, "kennel");
    int port = lws_get_vhost_listen_port (vh);
    bool v6 = strchr (self->settings.ip, ':') != NULL;
    self->url = wire_xasprintf ("%s://%s%s%s:%d/", self->settings.certfile ? "https" : "http", v6 ? "[" : "",
                                self->settings.ip, v6 ? "]" : "", port);
    json_t *info = gw_server_connection_info (self->server);
    json_object_set_new (info, "http_url", json_string (self->url));
    /* the connection file is 0600: a generated token is found there and
       never in a log */
    if (self->settings.token && streq (self->settings.token_source, "generated"))
        json_object_set_new (info, "http_token", json_string (self->settings.token));
    char shown[8] = "";
    if (self->settings.token)
        snprintf (shown, sizeof shown, "%.4s", self->settings.token);
    const http_settings_t *s = &self->settings;
    gw_log ("http_listen", "{s:s, s:s, s:s, s:b, s:i, s:i, s:i, s:i, s:i}", "url", self->url, "token",
            s->token ? s->token_source : "none (anonymous)", "token_prefix", shown, "tls", s->certfile != NULL,
            "max_connections", s->max_connections, "max_connections_per_client", s->max_connections_per_client,
            "max_connections_per_kernel", s->max_connections_per_kernel, "max_pending_connections", s->max_pending,
            "max_pending_per_client", s->max_pending_per_client);
}

http_front_t *
http_front_new (gw_server_t *server, http_settings_t *settings, char **errmsg)
{
    http_front_t *self = wire_xcalloc (1, sizeof *self);
    self->server = server;
    self->core = gw_server_core (server);
    self->settings = *settings;
    memset (settings, 0, sizeof *settings);
    self->websockets = zlistx_new ();
    self->waits = zlistx_new ();
    self->sessions = http_sessions_new ();
    self->clients = http_clients_new (&self->settings);
    self->uv = http_loop_new (gw_server_loop (server));
    if (!self->uv) {
        *errmsg = wire_xasprintf ("cannot set up the HTTP front's event loop (libuv): %s", strerror (errno));
        http_front_destroy (&self);
        return NULL;
    }
    if (context_create (self, errmsg) < 0 || http_mcp_start (self, errmsg) < 0) {
        http_front_destroy (&self);
        return NULL;
    }
    http_loop_run (self->uv);
    url_publish (self);
    return self;
}

/* Each websocket is told (close 1001) before the context goes: its close
   frame is written from the writable callback, run here once more. */
static void
websockets_close (http_front_t *self)
{
    for (ws_conn_t *ws = zlistx_first (self->websockets); ws; ws = zlistx_next (self->websockets))
        ws_conn_close (ws, LWS_CLOSE_STATUS_GOINGAWAY, "the gateway is stopping");
    http_loop_run (self->uv);
}

void
http_front_destroy (http_front_t **self_p)
{
    http_front_t *self = *self_p;
    if (!self)
        return;
    if (self->uv)
        websockets_close (self);
    /* websockets close first (their peers detach). On a foreign loop lws closes its libuv handles from the
       loop, and finishes (clearing self->lws, info.pcontext) when
       destroyed again after that */
    if (self->lws) {
        lws_context_destroy (self->lws);
        http_loop_drain (self->uv);
    }
    if (self->lws)
        lws_context_destroy (self->lws);
    http_loop_destroy (&self->uv);
    http_wait_forget_all (self);
    gw_server_set_reload_check (self->server, NULL, NULL);
    http_mcp_destroy (&self->mcp); /* after the connections: they abandoned their calls */
    zlistx_destroy (&self->waits);
    zlistx_destroy (&self->websockets);
    http_sessions_destroy (&self->sessions);
    http_clients_destroy (&self->clients); /* after the context: its connections are gone */
    http_settings_clear (&self->settings);
    free (self->url);
    free (self);
    *self_p = NULL;
}
