/*  gw_http_fuzz.c - libFuzzer target: the HTTP front's routes through the
    real handlers (gateway/http: http_route_dispatch and what it routes to,
    the Contents API, /files both ways, checkpoints, sessions, kernels).

    A token holder is authenticated but untrusted: every request here has
    passed the token check, so its method, path (any bytes: the %XX of a
    URL decoded, as libwebsockets hands a path over, or raw), query and
    body reach the routes. The handlers run on fuzz_gateway.h's gateway
    (the real conversation table, config, policy lowering, log; no kernel
    starts) and on a real workspace beside canaries (fuzz_tree.h), and the
    front is built by hand around them. Only libwebsockets is replaced, at
    its API: the functions the routes call to read a query argument, write
    headers and body, ask for a writable callback and end a transaction are
    defined at the end of this file; they record the answer, which is
    checked. The target plays the part of http_server.c's callback: a
    request body handed over whole (or, for PUT /files, in parts to the
    upload calls), then writable callbacks while one is asked for.

    Input: one flags byte, then up to 16 steps separated by "\n==\n". A
    step is one line "M PATH[?QUERY]" and the rest is its body. M:
        G, P, U, D, A, H, X   GET, POST, PUT, DELETE, PATCH, HEAD, an
                              unknown method; with a "!" after it (U! ...)
                              the conversation the path names closes
                              after the first half of the body
        K<kind>               the kernel plants fuzz_tree_plant's kind
                              (0-6) at PATH in the workspace
        C / N                 conversation PATH closes / opens
    flags: bit 0 the workspace with the quota tmpfs; bit 1 conversation
    "a" open at the start; bit 2 kernels fail to start; bit 3 making a
    conversation fails; bit 4 a PATH's %XX is not decoded.
    FUZZ_HTTP_TRACE=1 in the environment prints each step's answer.

    Checked after every step, trapping otherwise:
    - the request was answered exactly once (one head, a body of its
      Content-Length, the transaction ended once), with a status of the
      documented set; a JSON body parses; an error is {"reason" (the
      status' phrase), "message"}, and a Contents or /files error whose
      message starts with an ename has that ename's documented status
      (gateway/http/README.md, "Contents");
    - a file's model (an answer of /api/contents or an upload) names a path
      that resolves beneath the workspace with no symlink followed; a file
      read (inline text or base64, or /files' bytes) is the bytes of that
      file so resolved, a regular file of one name (no canary through a
      hardlink);
    - an upload whose conversation closed midway wrote nothing after the
      close;
    - the outside tree is unchanged; no fd leaks; the quota tmpfs is
      within its limits; no sanitizer report (memory, undefined behaviour,
      leaks). The handlers are built with every automatic variable
      initialised to a pattern (-ftrivial-auto-var-init=pattern), so that
      an error struct read before anything set it crashes here rather
      than reading what an earlier call left on the stack; one that starts
      from GW_FILES_ERROR_INIT and reaches a client with its default
      ("failed without saying why") traps.
*/
#include "gateway/http/http.h"
#include "gateway/gw_server_private.h"
#include "fuzz_gateway.h"
#include "fuzz_tree.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define STEPS_MAX 16
#define WRITABLE_MAX 4096 /* writable callbacks one answer may take */

/* Two conversations at most, a session limit the steps can reach. */
static const char config_text[] = "{\"max_conversations\": 2, \"kernels\": {\"r\": {\"argv\": [\"r\"]}},"
                                  " \"fork_server\": {\"enabled\": false}, \"warm_pool\": 0,"
                                  " \"maxima\": {\"pids\": 100, \"network\": \"none\"},"
                                  " \"defaults\": {\"pids\": 50, \"network\": \"none\"}}";

/* One connection as the routes see it through libwebsockets' API. */
struct lws {
    http_req_t req;     /* the per-connection user data (lws_wsi_user) */
    const char *query;  /* the raw query, "" when none */
    int status;         /* the head's status, 0 until written */
    int pending_status; /* set by lws_add_http_header_status */
    long long length;   /* Content-Length, -1 when none */
    long long pending_length;
    char type[64], pending_type[64];
    char *body;
    size_t body_len;
    int heads, finals, completions;
    bool writable; /* a writable callback was asked for */
};

static fuzz_gateway_t *s_gw;
static http_front_t *s_front;

/* ---- the front, made once ------------------------------------------------- */

static void
s_teardown (void)
{
    http_sessions_destroy (&s_front->sessions);
    http_clients_destroy (&s_front->clients);
    zlistx_destroy (&s_front->websockets);
    zlistx_destroy (&s_front->waits);
    json_decref (s_front->settings.env_allow);
    free (s_front);
}

static void
s_setup (void)
{
    s_gw = fuzz_gateway_new (config_text);
    s_front = calloc (1, sizeof *s_front);
    s_front->server = s_gw->server;
    s_front->core = s_gw->server->core;
    s_front->settings.max_connections = 8;
    s_front->settings.max_connections_per_client = 8;
    s_front->settings.max_connections_per_kernel = 8;
    s_front->settings.env_allow = json_array ();
    s_front->websockets = zlistx_new ();
    s_front->waits = zlistx_new ();
    s_front->sessions = http_sessions_new ();
    s_front->clients = http_clients_new (&s_front->settings);
    atexit (s_teardown); /* runs before the gateway's teardown */
}

/* ---- one step ---------------------------------------------------------------- */

static int
s_hex (int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* %XX decoded in place, as libwebsockets decodes a URL's path and its
   arguments; a "%" without two hex digits stays. */
static void
s_url_decode (char *s)
{
    char *out = s;
    for (char *p = s; *p; p++) {
        if (p[0] == '%' && s_hex (p[1]) >= 0 && s_hex (p[2]) >= 0) {
            *out++ = (char) (s_hex (p[1]) * 16 + s_hex (p[2]));
            p += 2;
        }
        else
            *out++ = *p;
    }
    *out = 0;
}

static int
s_method (char m)
{
    switch (m) {
    case 'G': return LWSHUMETH_GET;
    case 'P': return LWSHUMETH_POST;
    case 'U': return LWSHUMETH_PUT;
    case 'D': return LWSHUMETH_DELETE;
    case 'A': return LWSHUMETH_PATCH;
    case 'H': return LWSHUMETH_HEAD;
    default: return LWSHUMETH_CONNECT; /* one no route takes */
    }
}

/* The conversation id a route path names: "a" of /files/a/x. */
static void
s_target (const char *path, char *id, size_t size)
{
    const char *rest = strncmp (path, "/files/", 7) == 0 ? path + 7
                       : strncmp (path, "/api/contents/", 14) == 0 ? path + 14
                                                                  : "";
    snprintf (id, size, "%.*s", (int) strcspn (rest, "/"), rest);
}

/* path's file of /files/<id>/<path> resolved as the file service
   promises, or -1. */
static int
s_files_open (const char *path)
{
    const char *rel = path + 7 + strcspn (path + 7, "/");
    rel += *rel == '/';
    gw_files_error_t err;
    char *normal = gw_files_path (rel, strlen (rel), &err);
    int ws = open (s_gw->tree->workspace[s_gw->workspace], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = normal && ws >= 0 ? fuzz_tree_open (ws, normal, O_RDONLY | O_NONBLOCK) : -1;
    if (ws >= 0)
        close (ws);
    free (normal);
    return fd;
}

/* Writable callbacks, as http_server.c's callback dispatches them, while
   the routes ask for one. */
static void
s_writable (struct lws *wsi)
{
    for (int i = 0; wsi->writable; i++) {
        if (i == WRITABLE_MAX)
            __builtin_trap (); /* an answer that never ends */
        wsi->writable = false;
        http_req_t *req = &wsi->req;
        int rc = req->file ? http_files_download_more (wsi, req) : http_reply_flush (wsi, req);
        if (rc < 0)
            __builtin_trap (); /* the stubs never fail a write: nothing here hangs up */
    }
}

static void
s_request (struct lws *wsi, char m, bool close_midway, const char *path, const char *body, size_t body_len)
{
    http_req_t *req = &wsi->req;
    req->front = s_front;
    req->method = s_method (m);
    snprintf (req->path, sizeof req->path, "%s", path);
    int rc;
    if (http_files_streams_body (req)) {
        rc = http_files_upload_begin (wsi, req, (long long) body_len);
        size_t half = body_len / 2;
        /* what http_server.c's body callback does: parts to the upload
           while it is open, nothing once the request was answered */
        if (rc == 0 && req->file && half)
            rc = http_files_upload_body (req, body, half);
        bool writing = req->file != NULL;
        if (close_midway) {
            char id[130];
            s_target (path, id, sizeof id);
            gw_core_close (s_gw->server->core, id, false, "fuzz_close");
        }
        if (rc == 0 && req->file && body_len > half)
            rc = http_files_upload_body (req, body + half, body_len - half);
        if (rc == 0 && body_len && !req->status && !wsi->heads)
            rc = req->file ? http_files_upload_end (wsi, req) : http_route_dispatch (wsi, req);
        /* an upload ends when its conversation closes: nothing of the
           body's second half reached the file */
        struct stat st;
        int fd = writing && close_midway ? s_files_open (path) : -1;
        if (fd >= 0 && (fstat (fd, &st) < 0 || st.st_size > (off_t) half)) {
            fprintf (stderr, "gw_http_fuzz: an upload wrote %lld bytes, %zu of them after its conversation closed\n",
                     (long long) st.st_size, (size_t) st.st_size - half);
            __builtin_trap ();
        }
        if (fd >= 0)
            close (fd);
    }
    else {
        if (close_midway) {
            char id[130];
            s_target (path, id, sizeof id);
            gw_core_close (s_gw->server->core, id, false, "fuzz_close");
        }
        req->body = body_len ? memcpy (malloc (body_len + 1), body, body_len) : NULL;
        if (req->body)
            req->body[body_len] = 0;
        req->body_len = body_len;
        rc = http_route_dispatch (wsi, req);
    }
    if (rc < 0)
        __builtin_trap ();
    fuzz_gateway_run_timer (s_gw);
    s_writable (wsi);
}

/* ---- the checks ---------------------------------------------------------------- */

static bool
s_documented_status (int status)
{
    static const int statuses[] = {200, 201, 204, 400, 403, 404, 405, 409, 413, 414, 500, 503, 507};
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        if (status == statuses[i])
            return true;
    return false;
}

/* The Contents API's enames and statuses (gateway/http/README.md,
   "Contents"), written again here: the contract, not the code's table. */
static int
s_ename_status (const char *ename, size_t len)
{
    static const struct {
        const char *ename;
        int status;
    } enames[] = {{"NoSuchFile", 404},         {"NoSuchConversation", 404}, {"NoSuchCheckpoint", 404},
                  {"SymlinkRefused", 403},     {"HardlinkRefused", 403},    {"NotARegularFile", 403},
                  {"PermissionDenied", 403},   {"FileExists", 409},         {"DirectoryNotEmpty", 409},
                  {"WorkspaceFull", 507},      {"TooLarge", 413},           {"FileApiUnavailable", 503},
                  {"FileError", 500},          {"InvalidPath", 400},        {"InvalidRequest", 400},
                  {"IsADirectory", 400},       {"NotADirectory", 400},      {"UnreadableNotebook", 400},
                  {"InvalidOffset", 400}};
    for (size_t i = 0; i < sizeof enames / sizeof enames[0]; i++)
        if (strlen (enames[i].ename) == len && strncmp (enames[i].ename, ename, len) == 0)
            return enames[i].status;
    return 0;
}

static void
s_check_error (const struct lws *wsi, const json_t *body, bool contents)
{
    const char *reason = json_string_value (json_object_get (body, "reason"));
    const char *message = json_string_value (json_object_get (body, "message"));
    if (!reason || !message || !*message || strcmp (reason, http_reply_reason (wsi->status)) != 0)
        __builtin_trap ();
    if (strcmp (message, "FileError: " GW_FILES_ERROR_UNSAID) == 0)
        __builtin_trap (); /* GW_FILES_ERROR_INIT's default: an error no call set (the whole text: a path a
                              message shows may hold any words) */
    /* "Ename: evalue": a word, then a colon */
    size_t word = strspn (message, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
    if (!contents || word == 0 || message[word] != ':')
        return;
    int status = s_ename_status (message, word);
    if (status == 0 || status != wsi->status) {
        fprintf (stderr, "gw_http_fuzz: %d with an undocumented or misplaced error: %s\n", wsi->status, message);
        __builtin_trap ();
    }
}

/* A file model's path resolves beneath the workspace; a file's inline
   content is that file's bytes. */
static void
s_check_model (const json_t *model, bool read)
{
    const char *path = json_string_value (json_object_get (model, "path"));
    const char *type = json_string_value (json_object_get (model, "type"));
    if (!path || !type)
        __builtin_trap ();
    int ws = open (s_gw->tree->workspace[s_gw->workspace], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ws < 0)
        __builtin_trap ();
    fuzz_tree_check_beneath (ws, path);
    const char *format = json_string_value (json_object_get (model, "format"));
    json_t *content = json_object_get (model, "content");
    if (read && strcmp (type, "file") == 0 && json_is_string (content) && format) {
        size_t len = json_string_length (content);
        void *bytes = strcmp (format, "base64") == 0 ? gw_base64_decode (json_string_value (content), len, &len)
                                                    : memcpy (malloc (len + 1), json_string_value (content), len);
        if (!bytes)
            __builtin_trap ();
        fuzz_tree_check_served (ws, path, 0, bytes, len);
        free (bytes);
    }
    if (read && strcmp (type, "directory") == 0 && json_is_array (content)) {
        size_t i;
        json_t *entry;
        json_array_foreach (content, i, entry)
            s_check_model (entry, false);
    }
    close (ws);
}

static void
s_check_answer (const struct lws *wsi, char m, const char *path)
{
    if (wsi->heads != 1 || wsi->completions != 1 || !s_documented_status (wsi->status)
        || (wsi->length >= 0 && (size_t) wsi->length != wsi->body_len)) {
        fprintf (stderr, "gw_http_fuzz: %s answered %d heads, %d completions, status %d, %zu of %lld bytes\n", path,
                 wsi->heads, wsi->completions, wsi->status, wsi->body_len, wsi->length);
        __builtin_trap ();
    }
    bool contents = strncmp (path, "/api/contents", 13) == 0, files = strncmp (path, "/files", 6) == 0;
    if (files && m == 'G' && wsi->status == 200 && strcmp (wsi->type, "application/octet-stream") == 0) {
        const char *rel = path + 7 + strcspn (path + 7, "/");
        rel += *rel == '/';
        gw_files_error_t err;
        char *normal = gw_files_path (rel, strlen (rel), &err);
        int ws = open (s_gw->tree->workspace[s_gw->workspace], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (!normal || ws < 0)
            __builtin_trap ();
        fuzz_tree_check_served (ws, normal, 0, wsi->body ? wsi->body : "", wsi->body_len);
        close (ws);
        free (normal);
        return;
    }
    if (strcmp (wsi->type, "application/json") != 0)
        return;
    json_t *body = json_loadb (wsi->body, wsi->body_len, 0, NULL);
    if (!body)
        __builtin_trap (); /* a JSON answer that is not JSON */
    if (wsi->status >= 400)
        s_check_error (wsi, body, contents || files);
    else if ((contents || files) && json_object_get (body, "path") && json_object_get (body, "type"))
        s_check_model (body, contents && m == 'G');
    json_decref (body);
}

/* ---- the input ---------------------------------------------------------------- */

/* The next step of [*p, end): its line (a NUL-ended copy) and body. */
static bool
s_next_step (const char **p, const char *end, char **line, const char **body, size_t *body_len)
{
    if (*p >= end)
        return false;
    const char *sep = memmem (*p, (size_t) (end - *p), "\n==\n", 4);
    const char *stop = sep ? sep : end;
    const char *nl = memchr (*p, '\n', (size_t) (stop - *p));
    const char *line_end = nl ? nl : stop;
    *line = strndup (*p, (size_t) (line_end - *p));
    *body = nl ? nl + 1 : stop;
    *body_len = (size_t) (stop - *body);
    *p = sep ? sep + 4 : end;
    return true;
}

static void
s_step (const char *line, const char *body, size_t body_len, bool decode)
{
    char m = line[0];
    bool close_midway = m && line[1] == '!';
    const char *space = strchr (line, ' ');
    char *path = strdup (space ? space + 1 : "");
    char *query = strchr (path, '?');
    if (query)
        *query++ = 0;
    if (decode)
        s_url_decode (path);
    if (m == 'K' || m == 'C' || m == 'N') {
        if (m == 'K' && line[1] >= '0' && line[1] < '0' + FUZZ_TREE_PLANTS) {
            int ws = open (s_gw->tree->workspace[s_gw->workspace], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            fuzz_tree_plant (s_gw->tree, ws, path, line[1] - '0');
            close (ws);
        }
        else if (m == 'C')
            gw_core_close (s_gw->server->core, path, false, "fuzz_close");
        else if (m == 'N' && fuzz_gateway_id_ok (path) && !gw_core_find (s_gw->server->core, path)
                 && gw_core_count (s_gw->server->core) < 2)
            fuzz_gateway_open (s_gw, path);
        free (path);
        return;
    }
    if (strlen (path) >= HTTP_PATH_MAX || path[0] != '/') {
        free (path); /* lws answers these itself (414, 400) */
        return;
    }
    struct lws *wsi = calloc (1, sizeof *wsi);
    wsi->query = query ? query : "";
    wsi->length = wsi->pending_length = -1;
    s_request (wsi, m, close_midway, path, body, body_len);
    if (getenv ("FUZZ_HTTP_TRACE")) /* what a finding did, step by step */
        fprintf (stderr, "%c %s -> %d %.*s\n", m, path, wsi->status, (int) (wsi->body_len < 300 ? wsi->body_len : 300),
                 wsi->body ? wsi->body : "");
    s_check_answer (wsi, m, path);
    /* the connection ends: what http_server.c's close callback frees */
    http_file_end (&wsi->req.file);
    http_wait_cancel (wsi->req.wait);
    http_clients_release (s_front->clients, &wsi->req.slot);
    free (wsi->req.body);
    free (wsi->req.answer);
    free (wsi->body);
    free (wsi);
    free (path);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (!s_gw)
        s_setup ();
    if (size == 0)
        return 0;
    uint8_t flags = data[0];
    s_gw->workspace = (flags & 1) ? FUZZ_TREE_QUOTA : FUZZ_TREE_PLAIN;
    fuzz_tree_reset (s_gw->tree, s_gw->workspace);
    s_gw->start_fails = flags & 4;
    s_gw->new_fails = flags & 8;
    int fds = fuzz_tree_fds ();
    if (flags & 2)
        fuzz_gateway_open (s_gw, "a");
    const char *p = (const char *) data + 1, *end = (const char *) data + size;
    char *line;
    const char *body;
    size_t body_len;
    for (int i = 0; i < STEPS_MAX && s_next_step (&p, end, &line, &body, &body_len); i++) {
        s_step (line, body, body_len, !(flags & 16));
        free (line);
        fuzz_tree_check_outside (s_gw->tree);
        fuzz_tree_check_quota (s_gw->tree);
        if (fuzz_tree_fds () != fds)
            __builtin_trap ();
    }
    fuzz_gateway_empty (s_gw);
    if (http_clients_slots (s_front->clients) != 0 || zlistx_size (s_front->waits) != 0)
        __builtin_trap ();
    return 0;
}

/* ---- libwebsockets, replaced at its API ------------------------------------ */

void *
lws_wsi_user (struct lws *wsi)
{
    return &wsi->req;
}

/* lws_get_urlarg_by_name: the first "&"-separated argument that starts
   with name (e.g. "type="), decoded, copied into buf; its value, or NULL. */
const char *
lws_get_urlarg_by_name (struct lws *wsi, const char *name, char *buf, int len)
{
    size_t n = strlen (name);
    for (const char *a = wsi->query; *a;) {
        size_t alen = strcspn (a, "&");
        if (alen >= n && strncmp (a, name, n) == 0) {
            if ((int) alen >= len)
                return NULL;
            memcpy (buf, a, alen);
            buf[alen] = 0;
            s_url_decode (buf + n);
            return buf + n;
        }
        a += alen + (a[alen] == '&');
    }
    return NULL;
}

int
lws_add_http_header_status (struct lws *wsi, unsigned int code, unsigned char **p, unsigned char *end)
{
    (void) p, (void) end;
    wsi->pending_status = (int) code;
    return 0;
}

int
lws_add_http_header_by_token (struct lws *wsi, enum lws_token_indexes token, const unsigned char *value, int length,
                              unsigned char **p, unsigned char *end)
{
    (void) p, (void) end;
    if (token == WSI_TOKEN_HTTP_CONTENT_TYPE)
        snprintf (wsi->pending_type, sizeof wsi->pending_type, "%.*s", length, (const char *) value);
    return 0;
}

int
lws_add_http_header_by_name (struct lws *wsi, const unsigned char *name, const unsigned char *value, int length,
                             unsigned char **p, unsigned char *end)
{
    (void) wsi, (void) name, (void) value, (void) length, (void) p, (void) end;
    return 0;
}

int
lws_add_http_header_content_length (struct lws *wsi, lws_filepos_t content_length, unsigned char **p,
                                    unsigned char *end)
{
    (void) p, (void) end;
    wsi->pending_length = (long long) content_length;
    return 0;
}

int
lws_finalize_http_header (struct lws *wsi, unsigned char **p, unsigned char *end)
{
    (void) wsi, (void) p, (void) end;
    return 0;
}

int
lws_write (struct lws *wsi, unsigned char *buf, size_t len, enum lws_write_protocol protocol)
{
    if (protocol == LWS_WRITE_HTTP_HEADERS) {
        if (wsi->heads++ || !wsi->pending_status)
            __builtin_trap (); /* a second head, or one without a status */
        wsi->status = wsi->pending_status;
        wsi->length = wsi->pending_length;
        snprintf (wsi->type, sizeof wsi->type, "%s", wsi->pending_type);
        return (int) len;
    }
    if ((protocol != LWS_WRITE_HTTP && protocol != LWS_WRITE_HTTP_FINAL) || !wsi->heads || wsi->finals
        || wsi->completions)
        __builtin_trap (); /* a body before its head, or after its end */
    wsi->finals += protocol == LWS_WRITE_HTTP_FINAL;
    wsi->body = realloc (wsi->body, wsi->body_len + len + 1);
    memcpy (wsi->body + wsi->body_len, buf, len);
    wsi->body_len += len;
    return (int) len;
}

int
lws_http_transaction_completed (struct lws *wsi)
{
    if (!wsi->heads)
        __builtin_trap (); /* ended without an answer */
    wsi->completions++;
    return 0;
}

int
lws_callback_on_writable (struct lws *wsi)
{
    wsi->writable = true;
    return 1;
}

void
lws_set_timeout (struct lws *wsi, enum pending_timeout reason, int secs)
{
    (void) wsi, (void) reason, (void) secs;
}

/* A request here has no network connection of its own: http_clients
   counts its slots without a client's share. */
struct lws *
lws_get_network_wsi (struct lws *wsi)
{
    (void) wsi;
    return NULL;
}

void *
lws_get_opaque_user_data (const struct lws *wsi)
{
    (void) wsi;
    return NULL;
}

void
lws_set_opaque_user_data (struct lws *wsi, void *data)
{
    (void) wsi, (void) data;
}

lws_sockfd_type
lws_get_socket_fd (struct lws *wsi)
{
    (void) wsi;
    return -1;
}

const char *
lws_get_peer_simple (struct lws *wsi, char *name, size_t namelen)
{
    (void) wsi;
    snprintf (name, namelen, "fuzz");
    return name;
}

/* ---- what the routes reach outside them ------------------------------------ */

/* libuv's pass (http_loop.c): the writable callbacks above stand for it. */
void
http_loop_run_soon (http_loop_t *self)
{
    (void) self;
}

/* No websocket is open in this target (ws_conn.c is not linked). */
gw_conv_t *
ws_conn_conv (const ws_conn_t *self)
{
    (void) self;
    return NULL;
}

/* MCP has its own transport and tests (tests/mcp): not a route here. */
int
http_mcp_route (struct lws *wsi, http_req_t *req, const char *rest)
{
    (void) rest;
    return http_reply_error (wsi, req, 404, "no such path");
}

void
http_mcp_forget (http_req_t *req)
{
    (void) req;
}
