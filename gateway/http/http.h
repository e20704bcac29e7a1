/*  http.h - the HTTP + WebSocket front's internal types (gateway/http/README.md).

    The front speaks the Jupyter Kernel Gateway API (REST + the kernels'
    websockets) through libwebsockets, inside the gateway's one loop. It is
    a front of the core: kernels are the core's conversations (gw_core.h:
    open with conversation_open's checks, find by kernel id, close,
    restart, interrupt), each websocket is a peer of its conversation
    (gw_front.h). So the checks, limits, logs and metadata.kennel are the
    ones the ZeroMQ front gets.
*/
#ifndef HTTP_H_INCLUDED
#define HTTP_H_INCLUDED

#include "gateway/gw_conv.h"
#include "gateway/gw_core.h"
#include "gateway/gw_error.h"
#include "gateway/gw_files.h"
#include "gateway/gw_front.h"
#include "gateway/gw_io.h"
#include "gateway/gw_log.h"
#include "gateway/gw_metrics.h"
#include "gateway/gw_ops.h"
#include "gateway/gw_server_access.h"
#include "gateway/gw_timer.h"
#include "gateway/gw_util.h"

#include <libwebsockets.h>

/* A kernel id is a UUID, 36 characters. */
#define HTTP_KERNEL_ID_SIZE 37
/* The websocket subprotocol of jupyter_server's binary framing. */
#define HTTP_WS_V1 "v1.kernel.websocket.jupyter.org"

/* ---- http_settings: the config's "http" section and the command line --- */

typedef struct {
    char *ip;
    int port;            /* 0: a free one */
    char *token;         /* NULL only when anonymous */
    const char *token_source; /* "KENNEL_AUTH_TOKEN", "KG_AUTH_TOKEN", "config", "generated" */
    bool anonymous;      /* the operator's explicit "anonymous": true */
    bool metrics_open;   /* GET /metrics without the token ("metrics_open": true) */
    char *allow_origin;  /* "*", one origin, or NULL: same origin only */
    json_t *allow_hosts; /* Host names served besides localhost and IP literals (lowercase), array */
    bool host_check;     /* Host is checked: a loopback listener, or allow_hosts given (and not "*") */
    char *certfile;      /* TLS when both are set */
    char *keyfile;
    int max_connections; /* websockets and requests held for the gateway at once */
    int max_connections_per_client; /* of them, one client's (an address; IPv6: a /64) */
    int max_connections_per_kernel; /* of them, one conversation's */
    int max_pending;     /* connections without a whole request yet, of all clients */
    int max_pending_per_client; /* of them, one client's */
    size_t ws_queue_bytes; /* per websocket, waiting to be written */
    int ping_seconds;    /* websocket ping after this long idle */
    json_t *env_allow;   /* names besides KERNEL_* a POST's env may set, array */
} http_settings_t;

/* From the config's http section (NULL: none) and --http [IP:]PORT (NULL:
   the section's "listen"). 0, 1 when HTTP is not asked for, or -1 with
   *errmsg (malloc'd). */
GW_MUST_CHECK int http_settings_load (http_settings_t *self, const json_t *section, const char *listen,
                                      char **errmsg);
void http_settings_clear (http_settings_t *self);
/* http_settings_load's checks on a reloaded config's http section, nothing
   kept: the reload check (gw_reload_check_fn) while HTTP is off, and the
   front's first step while it is on. Every value is checked whatever the
   command line says (arg unused). 0 or -1 with *errmsg. */
GW_MUST_CHECK int http_settings_check (const gw_config_t *fresh, char **errmsg, void *arg);

/* ---- http_loop: libuv (libwebsockets' event library) inside zloop ------ */

typedef struct http_loop http_loop_t;
/* NULL with errno set when libuv's loop or its place in gw_io cannot be made. */
http_loop_t *http_loop_new (zloop_t *loop);
/* Runs what libuv has due and re-arms the timer for its next deadline:
   call after anything that may have given libwebsockets work. */
void http_loop_run (http_loop_t *self);
/* The same from the loop's next turn: what a core callback (a delivery, an
   event) calls, since a pass there could run a request that closes the
   conversation being delivered, which gw_front.h forbids inside a callback. */
void http_loop_run_soon (http_loop_t *self);
/* An lws callback ran (it may have asked for a write): run once more. */
void http_loop_note (http_loop_t *self);
/* Whether libwebsockets can load its libuv event library: Debian ships it
   as a plugin in its own package, and without it lws_create_context fails
   with nothing but a log line. 0, or -1 with *errmsg (malloc'd) naming the
   plugin's path, why it does not load and the package that provides it. */
GW_MUST_CHECK int http_loop_evlib_check (char **errmsg);
/* The uv_loop_t* for lws_context_creation_info.foreign_loops. */
void *http_loop_uv (http_loop_t *self);
/* After lws_context_destroy: runs libuv until lws's handles are closed
   (bounded); lws_context_destroy then has to be called once more. */
void http_loop_drain (http_loop_t *self);
void http_loop_destroy (http_loop_t **self_p);

/* ---- http_clients: who holds the front's connections --------------------- */

typedef struct http_clients http_clients_t;
typedef struct http_client http_client_t;

/* One of max_connections, held by a request or a websocket while it lasts. */
typedef struct {
    bool taken;
    http_client_t *client; /* whose share it is (NULL: no client known) */
    char *conv;            /* the conversation's id whose share it is, or NULL */
} http_slot_t;

/* settings (kept, not copied) bound it. */
http_clients_t *http_clients_new (const http_settings_t *settings);
/* After the libwebsockets context: its connections went first. */
void http_clients_destroy (http_clients_t **self_p);
/* LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED: a connection accepted; it is
   pending until its request arrives. Room is made by closing the oldest
   pending one of its client, or of the client with the most; -1 when its
   client holds all the connections it may and none is pending (refuse it). */
int http_clients_accepted (http_clients_t *self, struct lws *wsi);
/* LWS_CALLBACK_WSI_DESTROY (any wsi: others are ignored). */
void http_clients_gone (http_clients_t *self, struct lws *wsi);
/* A request arrived whole on wsi's connection (busy: the request's flag,
   set here) / it ended (busy cleared; the connection is pending again when
   it serves no other). Each is done once whatever the calls. */
void http_clients_request_begin (http_clients_t *self, struct lws *wsi, bool *busy);
void http_clients_request_end (http_clients_t *self, struct lws *wsi, bool *busy);
/* wsi's connection became a websocket: never pending again. */
void http_clients_websocket (http_clients_t *self, struct lws *wsi);
/* Whether wsi's connection was closed to make room (lws has not yet). */
bool http_clients_closing (struct lws *wsi);
/* NULL when wsi's request may hold one more of max_connections (within
   its client's share and, conv not NULL, that conversation's), else the
   refusal's message (answer 503). */
const char *http_clients_refusal (http_clients_t *self, struct lws *wsi, gw_conv_t *conv);
/* Holds one for slot (released first if held), whether or not refused. */
void http_clients_take (http_clients_t *self, struct lws *wsi, http_slot_t *slot, gw_conv_t *conv);
void http_clients_release (http_clients_t *self, http_slot_t *slot);
/* How many of max_connections are held. */
int http_clients_slots (const http_clients_t *self);

/* ---- http_front: the server ------------------------------------------- */

typedef struct http_front http_front_t;
typedef struct ws_conn ws_conn_t;
typedef struct http_sessions http_sessions_t;
typedef struct http_wait http_wait_t;
typedef struct http_mcp http_mcp_t;
typedef struct http_mcp_req http_mcp_req_t;

struct http_front {
    gw_server_t *server;
    gw_core_t *core; /* the server's conversations (gw_core.h) */
    http_settings_t settings;
    http_loop_t *uv;
    struct lws_context *lws;
    zlistx_t *websockets; /* ws_conn_t* (not owning) */
    zlistx_t *waits;      /* http_wait_t*: requests waiting for a kernel */
    http_sessions_t *sessions;
    http_mcp_t *mcp; /* the MCP server of /mcp: at start with an "mcp" section, else at its first request */
    char *url;
    http_clients_t *clients; /* connections per client, slots of max_connections */
};

/* Listens (settings taken); adds http_url (and the generated token) to the
   gateway connection file. NULL + *errmsg. */
http_front_t *http_front_new (gw_server_t *server, http_settings_t *settings, char **errmsg);
void http_front_destroy (http_front_t **self_p);

/* ---- http_reply: responses ------------------------------------------- */

typedef struct http_file http_file_t;

/* A request's path, at most: /api/contents/<id>/ and a file path of
   GW_FILES_PATH_MAX (longer: 414). */
#define HTTP_PATH_MAX 4400
/* An answer's body is written this much at a time, each piece once the
   one before left (libwebsockets sends at most its 64 KiB buffer a call
   and would copy the rest). */
#define HTTP_REPLY_PIECE (64 * 1024)
/* A client that takes nothing of an answer or a download for this long is
   dropped (lws's own 5 s transaction timeout would cut any long one). */
#define HTTP_STALL_SECONDS 30

/* One HTTP request in flight on a connection: its body and, when the
   answer waits for the gateway, the answer to write once writable. */
typedef struct {
    http_front_t *front;
    int method;         /* LWSHUMETH_* */
    char path[HTTP_PATH_MAX];
    char *body;         /* the request body so far */
    size_t body_len;
    bool body_too_large;
    int status;         /* the pending answer, 0 when none */
    char *answer;       /* its JSON; or, while an answer is written in pieces, that answer (LWS_PRE bytes, its body) */
    size_t answer_len;  /* that body's length, 0 when none is being written */
    size_t answer_sent; /* how much of it was written */
    char location[96];  /* Location header, or "" */
    http_wait_t *wait;  /* waiting for a kernel to be ready, or NULL */
    http_slot_t slot;   /* one of max_connections while held for the gateway */
    bool busy;          /* a request is being served (http_clients_request_begin) */
    bool upgrading;     /* answering a websocket upgrade: lws ends the transaction */
    ws_conn_t *ws;      /* after a websocket upgrade */
    http_file_t *file;  /* a file streamed in or out (/files), or NULL */
    http_mcp_req_t *mcp; /* a POST /mcp being answered */
} http_req_t;

/* Writes the status line and headers: content_type (NULL: none), a
   Content-Length unless length < 0, the CORS headers, extra (NULL or
   name, value, ..., NULL; a NULL or empty value is left out). 0 or -1. */
int http_reply_head (struct lws *wsi, http_req_t *req, int status, const char *content_type, long long length,
                     const char *const *extra);
/* Writes status, the CORS headers and body (taken; NULL: none) now. 0 or -1
   (hang up). */
int http_reply_write (struct lws *wsi, http_req_t *req, int status, json_t *body, const char *location);
/* The same with a body of another type (text/plain for /metrics). */
int http_reply_text (struct lws *wsi, http_req_t *req, int status, const char *type, const char *text, size_t len);
/* {"reason", "message"} and a log line (rate-limited per peer). */
int http_reply_error (struct lws *wsi, http_req_t *req, int status, const char *message);
/* The same, written once writable (http_reply_later). */
void http_reply_error_later (struct lws *wsi, http_req_t *req, int status, const char *message);
/* The answer waits for the gateway: the connection is kept meanwhile. */
void http_reply_wait (struct lws *wsi);
/* The answer is ready later: keep it and ask for a writable callback. */
void http_reply_later (struct lws *wsi, http_req_t *req, int status, json_t *body, const char *location);
/* The writable callback: writes the kept answer, or the next piece of
   one being written. */
int http_reply_flush (struct lws *wsi, http_req_t *req);
/* The standard reason phrase of status. */
const char *http_reply_reason (int status);
/* The status line (HTTP/1.x: with its reason phrase), as
   lws_add_http_header_status. 0 or -1. */
int http_reply_status (struct lws *wsi, int status, unsigned char **p, unsigned char *end);
/* The peer's address, for logs. */
void http_peer (struct lws *wsi, char *out, size_t size);

/* ---- http_auth: token and origin -------------------------------------- */

/* NULL when the request may pass, else the refusal's message; *status is
   401 (token) or 403 (origin). */
const char *http_auth_refusal (struct lws *wsi, const http_settings_t *settings, int *status);

/* ---- http_route: a request to its route -------------------------------- */

/* The request is complete (headers and body): answer it now or later. */
int http_route_dispatch (struct lws *wsi, http_req_t *req);

/* ---- http_api: kernelspecs and kernels --------------------------------- */

/* /api/kernelspecs (rest: "" or "/NAME"), GET only. */
int http_api_kernelspecs_route (struct lws *wsi, http_req_t *req, const char *rest);
/* /api/kernels (rest: "", "/ID" or "/ID/ACTION"). */
int http_api_kernels_route (struct lws *wsi, http_req_t *req, const char *rest);
/* Whether GET /api/kernelspecs may answer 200: a kernel can be started. */
bool http_api_ready (const http_front_t *front, const char **why);

/* ---- http_contents: a conversation's files ------------------------------ */

/* A Contents API request's body (a model with its content inline), at
   most: a 4 MiB chunk in base64 and the model around it. */
#define HTTP_CONTENTS_BODY_MAX (6 << 20)
/* /api/contents/<kernel or conversation id>/<path>: GET, PUT, DELETE,
   PATCH, POST, and a file's checkpoints. */
int http_contents_route (struct lws *wsi, http_req_t *req, const char *rest);

/* ---- http_contents_reply: what every Contents route answers with -------- */

/* The answer to a file service error: its status, {"reason", "message":
   "ename: evalue"}. */
int http_contents_error (struct lws *wsi, http_req_t *req, const gw_files_error_t *err);
void http_contents_fail (gw_files_error_t *err, gw_error_t error, const char *evalue);
/* A Contents model from the file service's: content, format and mimetype
   null, and a file "notebook" when type says so (NULL: when its name ends
   in .ipynb). Returns model. */
json_t *http_contents_model (json_t *model, const char *type);

/* ---- http_contents_edit: PATCH (rename), POST (copy, new untitled) ------ */

int http_contents_rename (struct lws *wsi, http_req_t *req, int root, const char *path, gw_files_error_t *err);
int http_contents_post (struct lws *wsi, http_req_t *req, int root, const char *dir, gw_files_error_t *err);

/* ---- http_checkpoints: a file's checkpoints ----------------------------- */

/* Where a file's checkpoints are kept, in the file's directory. */
#define HTTP_CHECKPOINTS_DIR ".ipynb_checkpoints"
/* Whether path is <file>/checkpoints (*id NULL) or <file>/checkpoints/<id>
   (then both malloc'd). */
bool http_checkpoints_split (const char *path, char **file, char **id);
/* GET lists, POST makes one; with id, POST restores, DELETE removes. */
int http_checkpoints_serve (struct lws *wsi, http_req_t *req, int root, const char *file, const char *id,
                            gw_files_error_t *err);
/* The file was renamed: its checkpoint follows when it can. */
void http_checkpoints_moved (int root, const char *from, const char *to);
/* The file was deleted: its checkpoint goes too. */
void http_checkpoints_dropped (int root, const char *file);
/* A directory that holds only the checkpoints' directory: that emptied
   and removed, 0; else -1. */
int http_checkpoints_clear_dir (int root, const char *path, gw_files_error_t *err);
/* /files/<id>/<path>: GET streams the file out. */
int http_files_route (struct lws *wsi, http_req_t *req, const char *rest);
/* Whether the request's body is streamed into a file (PUT /files/...):
   then upload_begin at the headers (length: Content-Length, -1 none),
   upload_body for each part, upload_end at its end; each answers or
   returns 0 as http_route_dispatch does. */
bool http_files_streams_body (const http_req_t *req);
int http_files_upload_begin (struct lws *wsi, http_req_t *req, long long length);
int http_files_upload_body (http_req_t *req, const void *in, size_t len);
int http_files_upload_end (struct lws *wsi, http_req_t *req);
/* The writable callback of a download: its next part. */
int http_files_download_more (struct lws *wsi, http_req_t *req);
void http_file_end (http_file_t **self_p);

/* ---- http_kernel: kernels over the core's conversation table --------- */

/* The conversation of a kernel id (a UUID), or NULL. */
gw_conv_t *http_kernel_conv (http_front_t *front, const char *kernel_id);
/* The kernel model {id, name, last_activity, execution_state, connections,
   kennel: {conversation_id}}. */
json_t *http_kernel_model (http_front_t *front, gw_conv_t *conv);
/* The kernelspec name of a conversation's kernel ("python" -> "python3"). */
const char *http_kernel_spec_name (const char *kernel);

/* A request that waits for a conversation's kernel: fn(front, conv, ok,
   errmsg, arg) from gw_conv_when_ready (maybe at once), unless the request
   went away (http_wait_cancel) or the front stopped first; free_fn (may be
   NULL) frees arg in every case, after fn. *slot holds the wait until it
   ends. */
typedef void (http_wait_fn) (http_front_t *front, gw_conv_t *conv, bool ok, const char *errmsg, void *arg);
void http_wait (http_front_t *front, gw_conv_t *conv, http_wait_fn *fn, void *arg, void (*free_fn) (void *),
                http_wait_t **slot);
void http_wait_cancel (http_wait_t *wait);
/* The front stops: every wait is cancelled (the core may still call). */
void http_wait_forget_all (http_front_t *front);

/* ---- ws_codec: Jupyter messages <-> websocket frames -------------------- */

typedef enum { WS_LEGACY, WS_V1 } ws_protocol_t;
/* A client frame as the parts of a Jupyter message (header,
   parent_header, metadata, content as JSON frames, then the buffers) and
   its channel; NULL with *problem. */
zmsg_t *ws_codec_decode (ws_protocol_t proto, const unsigned char *data, size_t size, bool binary,
                         wire_channel_t *channel, const char **problem);
/* The parts of a message (as decode makes them) as a frame for a client:
   bytes (malloc'd, LWS_PRE bytes free before them) and whether the frame
   is binary; NULL when the header has no msg_id or msg_type. */
unsigned char *ws_codec_encode (ws_protocol_t proto, zmsg_t *parts, wire_channel_t channel, size_t *size,
                                bool *binary);

/* ---- ws_conn: one kernel websocket ------------------------------------- */

/* Made at the upgrade: a peer of conv. */
ws_conn_t *ws_conn_new (http_front_t *front, struct lws *wsi, gw_conv_t *conv, ws_protocol_t proto);
void ws_conn_destroy (ws_conn_t **self_p);
/* LWS_CALLBACK_RECEIVE: a fragment of a client frame. -1: close. */
int ws_conn_receive (ws_conn_t *self, const void *data, size_t len);
/* LWS_CALLBACK_SERVER_WRITEABLE. -1: close. */
int ws_conn_writable (ws_conn_t *self);
/* Closes with code and reason from outside lws's callbacks. */
void ws_conn_close (ws_conn_t *self, int code, const char *reason);
/* The conversation of a websocket, or NULL once it closed. */
gw_conv_t *ws_conn_conv (const ws_conn_t *self);

/* ---- http_mcp: MCP over streamable HTTP at /mcp ------------------------ */

/* /mcp and below (rest: what follows "/mcp"). */
int http_mcp_route (struct lws *wsi, http_req_t *req, const char *rest);
/* Where an MCP client looks for OAuth after a 401: /.well-known/ and
   below, and the 2025-03-26 revision's default endpoints. */
bool http_mcp_oauth_path (const char *path);
/* Answers such a path, before the token is checked: 404, no OAuth here. */
int http_mcp_no_oauth (struct lws *wsi, http_req_t *req);
/* The writable callback of a request answered by MCP. */
int http_mcp_writable (struct lws *wsi, http_req_t *req);
/* The request's connection closed or carries a new request: a call still
   running is abandoned (its code interrupted). */
void http_mcp_forget (http_req_t *req);
/* At the front's end, after the connections closed. */
void http_mcp_destroy (http_mcp_t **self_p);
/* The config's "mcp" section served from start (its tools file checked:
   -1 + *errmsg when bad), and checked again at each reload. */
int http_mcp_start (http_front_t *front, char **errmsg);

/* ---- http_sessions: /api/sessions -------------------------------------- */

http_sessions_t *http_sessions_new (void);
void http_sessions_destroy (http_sessions_t **self_p);
int http_sessions_route (struct lws *wsi, http_req_t *req, const char *rest);

/* ---- http_ops: /healthz and /metrics ------------------------------------ */

/* GET /healthz: 200 {"status": "ok", "draining"} while the loop runs; no
   token (it tells nothing of the conversations). */
int http_ops_healthz (struct lws *wsi, http_req_t *req);
/* GET /metrics: the core's metrics (gw_metrics.h) in Prometheus' text
   format 0.0.4; the token unless http.metrics_open. */
int http_ops_metrics (struct lws *wsi, http_req_t *req);

/* ---- shared by http_api and http_sessions ------------------------------ */

/* The longest kernelspec or session name taken. */
#define HTTP_NAME_MAX 4096
/* Whether body's field (shown: its name in a message, "kernel.id") is
   absent, null, or of type: an object, or a string without NUL of at most
   max bytes; else false with *message (static) naming it. */
bool http_api_field_ok (const json_t *body, const char *field, const char *shown, json_type type, size_t max,
                        const char **message);

/* Opens a conversation for POST /api/kernels or a session: body is the
   kernel request ({name, env, path, kennel}). The new (or, named by
   kennel.conversation_id, open) conversation and *created, or NULL with
   the error's status and *message (malloc'd). */
gw_conv_t *http_api_open (http_front_t *front, const json_t *body, bool *created, int *status, char **message);
/* The answer to a kernel request once its kernel is ready (or failed),
   written to req's connection: 201/200 + model, or the error. */
void http_api_answer_ready (struct lws *wsi, http_req_t *req, gw_conv_t *conv, bool ok, const char *errmsg,
                            bool created);

#endif
