/*  http_contents.c - a conversation's files on the HTTP front:
    /api/contents/<id>/<path>, the Jupyter Contents API's shape (GET, PUT,
    DELETE here; PATCH and POST in http_contents_edit.c, checkpoints in
    http_checkpoints.c; models with type, format, content, ..., and errors
    in http_contents_reply.c), and
    /files/<id>/<path>, the raw bytes streamed both ways (jupyter_server's
    /files is a raw download too). <id> is a kernel id or a conversation id.

    All go through the core's file service (gateway/gw_files.c): paths
    beneath the workspace only, no symlink followed, FIFOs and devices
    refused without blocking, uploads under the workspace's quota. A
    Contents model carries its content inline, so a GET or PUT there holds
    at most one chunk (4 MiB); bigger files go through /files, where a
    download is written from lws's writable callback 256 KiB at a time and
    an upload's body is written as lws hands it over (its receive buffer,
    64 KiB): neither is ever whole in memory, and each step is short on
    the gateway's loop. An upload is a peer of its conversation (of events
    only): it ends when the conversation closes, and writes nothing into a
    workspace that is gone.
*/
#include "http.h"

#include <string.h>
#include <unistd.h>

#define STREAM_CHUNK (256 * 1024)

struct http_file {
    int fd;
    bool upload;
    int64_t offset;    /* bytes sent or written so far */
    int64_t size;      /* a download's length (its Content-Length) */
    bool failed;       /* an upload's write failed: err says why */
    gw_files_error_t err;
    char *conversation; /* the id, found again at the end */
    char *path;         /* normalized */
    struct lws *wsi;    /* an upload's connection */
    gw_peer_t *peer;    /* an upload hears its conversation close (gw_front.h) */
};

void
http_file_end (http_file_t **self_p)
{
    http_file_t *self = *self_p;
    if (!self)
        return;
    gw_front_detach (&self->peer);
    if (self->fd >= 0)
        close (self->fd);
    free (self->conversation);
    free (self->path);
    free (self);
    *self_p = NULL;
}

/* "<id>[/<path>]": the conversation (by kernel id, else conversation id)
   and the normalized path (malloc'd); NULL + err. */
static gw_conv_t *
target_of (http_front_t *front, const char *rest, char **path, gw_files_error_t *err)
{
    const char *slash = strchr (rest, '/');
    size_t n = slash ? (size_t) (slash - rest) : strlen (rest);
    char id[130];
    gw_conv_t *conv = NULL;
    if (n > 0 && n < sizeof id) {
        snprintf (id, sizeof id, "%.*s", (int) n, rest);
        conv = http_kernel_conv (front, id);
        if (!conv && gw_conv_id_valid (id))
            conv = gw_core_find (front->core, id);
    }
    if (!conv) {
        http_contents_fail (err, GW_E_NO_SUCH_CONVERSATION, "no kernel and no conversation has this id");
        return NULL;
    }
    const char *p = slash ? slash + 1 : "";
    *path = gw_files_path (p, strlen (p), err);
    return *path ? conv : NULL;
}

/* A query argument's value ("" when absent); buf holds "name=value". */
static const char *
query (struct lws *wsi, const char *name_eq, char *buf, int size)
{
    const char *v = lws_get_urlarg_by_name (wsi, name_eq, buf, size);
    return v ? v : "";
}

/* ---- /api/contents ------------------------------------------------------ */

/* A file of at most one chunk read whole (malloc'd, *len); NULL + err. */
static char *
read_inline (int root, const char *path, size_t *len, gw_files_error_t *err)
{
    struct stat st;
    int fd = gw_files_open_read (root, path, &st, err);
    if (fd < 0)
        return NULL;
    if (st.st_size > (off_t) GW_FILES_CHUNK_MAX) {
        close (fd);
        http_contents_fail (err, GW_E_TOO_LARGE, "the file is larger than 4 MiB: GET /files/<id>/<path> streams it");
        return NULL;
    }
    char *buf = wire_xmalloc ((size_t) st.st_size + 1);
    ssize_t n = gw_files_read (fd, 0, buf, (size_t) st.st_size, err);
    close (fd);
    if (n < 0) {
        free (buf);
        return NULL;
    }
    *len = (size_t) n;
    return buf;
}

/* The file's bytes inline, as text when asked or when they are UTF-8. */
static json_t *
file_content (int root, const char *path, json_t *model, const char *format, gw_files_error_t *err)
{
    size_t n;
    char *buf = read_inline (root, path, &n, err);
    if (!buf)
        return NULL;
    json_t *text = !streq (format, "base64") ? json_stringn (buf, n) : NULL;
    if (!text && streq (format, "text")) {
        free (buf);
        http_contents_fail (err, GW_E_INVALID_REQUEST, "the file is not UTF-8 text: ask format=base64");
        return NULL;
    }
    char *b64 = text ? NULL : gw_base64_encode (buf, n);
    json_object_set_new (model, "content", text ? text : json_string (b64));
    json_object_set_new (model, "format", json_string (text ? "text" : "base64"));
    json_object_set_new (model, "mimetype", json_string (text ? "text/plain" : "application/octet-stream"));
    json_object_set_new (model, "size", json_integer ((json_int_t) n));
    free (b64);
    free (buf);
    return model;
}

/* A notebook's JSON as the model's content. What is not an nbformat 4
   notebook (JSON with "nbformat": 4 and "cells") is refused with 400, as
   jupyter_server refuses what nbformat cannot read ("Unreadable
   Notebook"); older formats are not converted. */
static json_t *
notebook_content (int root, const char *path, json_t *model, gw_files_error_t *err)
{
    size_t n;
    char *buf = read_inline (root, path, &n, err);
    if (!buf)
        return NULL;
    json_error_t jerr;
    json_t *nb = json_loadb (buf, n, 0, &jerr);
    free (buf);
    json_t *version = json_object_get (nb, "nbformat");
    if (!json_is_array (json_object_get (nb, "cells")) || !json_is_integer (version)
        || json_integer_value (version) != 4) {
        err->ename = gw_error_name (GW_E_UNREADABLE_NOTEBOOK);
        snprintf (err->evalue, sizeof err->evalue, "%.*s is not an nbformat 4 notebook (JSON with cells): %s",
                  gw_text_fit (path, 200), path, nb ? "nbformat or cells missing or wrong" : jerr.text);
        json_decref (nb);
        return NULL;
    }
    json_object_set_new (model, "content", nb);
    json_object_set_new (model, "format", json_string ("json"));
    return model;
}

/* A directory's entries; the checkpoints' own directory is not listed
   (as jupyter_server hides it). */
static json_t *
dir_content (int root, const char *path, json_t *model, gw_files_error_t *err)
{
    bool truncated;
    json_t *list = gw_files_list (root, path, &truncated, err);
    if (!list)
        return NULL;
    for (size_t i = json_array_size (list); i-- > 0;) {
        json_t *entry = json_array_get (list, i);
        if (streq (json_string_value (json_object_get (entry, "name")), HTTP_CHECKPOINTS_DIR))
            json_array_remove (list, i);
        else
            http_contents_model (entry, NULL);
    }
    json_object_set_new (model, "content", list);
    json_object_set_new (model, "format", json_string ("json"));
    json_object_set_new (model, "kennel", json_pack ("{s:b}", "truncated", truncated));
    return model;
}

/* ?type= as jupyter_server takes it: "", file, notebook or directory;
   NULL + err for another. */
static const char *
type_asked (struct lws *wsi, char *buf, int size, gw_files_error_t *err)
{
    const char *type = query (wsi, "type=", buf, size);
    if (!*type || streq (type, "file") || streq (type, "notebook") || streq (type, "directory"))
        return type;
    http_contents_fail (err, GW_E_INVALID_REQUEST, "type must be file, notebook or directory");
    return NULL;
}

static json_t *
contents_get (struct lws *wsi, int root, const char *path, gw_files_error_t *err)
{
    char cbuf[32], fbuf[32], tbuf[32];
    bool content = !streq (query (wsi, "content=", cbuf, sizeof cbuf), "0");
    const char *format = query (wsi, "format=", fbuf, sizeof fbuf);
    const char *asked = type_asked (wsi, tbuf, sizeof tbuf, err);
    json_t *model = asked ? gw_files_stat (root, path, err) : NULL;
    if (!model)
        return NULL;
    bool dir = streq (json_string_value (json_object_get (model, "type")), "directory");
    if (*asked && dir != streq (asked, "directory")) {
        json_decref (model);
        http_contents_fail (err, GW_E_INVALID_REQUEST, dir ? "a directory, not the type asked" : "not a directory");
        return NULL;
    }
    http_contents_model (model, *asked ? asked : NULL);
    const char *type = json_string_value (json_object_get (model, "type"));
    if (!content)
        return model;
    json_t *out = streq (type, "file")       ? file_content (root, path, model, format, err)
                  : streq (type, "notebook") ? notebook_content (root, path, model, err)
                                             : dir_content (root, path, model, err);
    if (!out)
        json_decref (model);
    return out;
}

/* A PUT model's bytes (malloc'd, *len); NULL + err. */
static char *
put_bytes (const json_t *body, size_t *len, gw_files_error_t *err)
{
    const char *format = gw_text (json_object_get (body, "format"));
    json_t *content = json_object_get (body, "content");
    const char *type = gw_text (json_object_get (body, "type"));
    char *out = NULL;
    if (type && streq (type, "notebook") && json_is_object (content)) {
        out = json_dumps (content, JSON_INDENT (1));
        *len = strlen (out);
    }
    else if (json_is_string (content) && format && streq (format, "base64"))
        out = gw_base64_decode (json_string_value (content), json_string_length (content), len);
    else if (json_is_string (content) && (!format || streq (format, "text"))) {
        *len = json_string_length (content);
        out = memcpy (wire_xmalloc (*len + 1), json_string_value (content), *len);
    }
    if (!out)
        http_contents_fail (err, GW_E_INVALID_REQUEST,
                   "a file's model needs content: a string with format \"text\" or \"base64\" (a notebook: an object)");
    return out;
}

/* A file written from a model; Jupyter's chunked upload ("chunk": 1, 2,
   ..., -1 for the last) appends every chunk after the first. */
static int
put_file (int root, const char *path, const json_t *body, gw_files_error_t *err)
{
    json_t *chunk = json_object_get (body, "chunk");
    if (chunk && !json_is_integer (chunk)) {
        http_contents_fail (err, GW_E_INVALID_REQUEST, "chunk must be an integer (1 first, -1 last)");
        return -1;
    }
    int64_t offset = 0;
    if (chunk && json_integer_value (chunk) != 1) {
        json_t *model = gw_files_stat (root, path, err);
        if (!model)
            return -1;
        offset = (int64_t) json_integer_value (json_object_get (model, "size"));
        json_decref (model);
    }
    size_t len;
    char *data = put_bytes (body, &len, err);
    if (!data)
        return -1;
    int fd = gw_files_open_write (root, path, offset, err);
    int rc = fd >= 0 ? gw_files_write (fd, offset, data, len, err) : -1;
    if (fd >= 0)
        close (fd);
    free (data);
    return rc;
}

static int
contents_put (struct lws *wsi, http_req_t *req, int root, const char *path, gw_files_error_t *err)
{
    json_t *body = req->body_len ? json_loadb (req->body, req->body_len, 0, NULL) : NULL;
    const char *type = gw_text (json_object_get (body, "type"));
    bool dir = type && streq (type, "directory");
    int rc = -1;
    if (!json_is_object (body) || !type)
        http_contents_fail (err, GW_E_INVALID_REQUEST, "the body must be a model: {\"type\", \"format\", \"content\"}");
    else if (dir)
        rc = gw_files_mkdir (root, path, err);
    else if (streq (type, "file") || streq (type, "notebook")) {
        json_t *before = gw_files_stat (root, path, err);
        bool created = before == NULL;
        json_decref (before);
        rc = put_file (root, path, body, err);
        if (rc == 0 && created)
            rc = 1;
    }
    else
        http_contents_fail (err, GW_E_INVALID_REQUEST, "type must be \"file\", \"directory\" or \"notebook\"");
    json_decref (body);
    if (rc < 0)
        return http_contents_error (wsi, req, err);
    json_t *model = gw_files_stat (root, path, err);
    if (!model)
        return http_contents_error (wsi, req, err);
    return http_reply_write (wsi, req, rc == 1 || dir ? 201 : 200, http_contents_model (model, NULL), NULL);
}

/* A file's checkpoint goes with it; a directory that holds only the
   checkpoints' directory is deleted with it (as jupyter_server does). */
static int
contents_delete (struct lws *wsi, http_req_t *req, int root, const char *path, gw_files_error_t *err)
{
    int rc = gw_files_delete (root, path, err);
    gw_files_error_t scratch;
    if (rc < 0 && streq (err->ename, gw_error_name (GW_E_DIRECTORY_NOT_EMPTY))
        && http_checkpoints_clear_dir (root, path, &scratch) == 0)
        rc = gw_files_delete (root, path, err);
    if (rc < 0)
        return http_contents_error (wsi, req, err);
    http_checkpoints_dropped (root, path);
    return http_reply_write (wsi, req, 204, NULL, NULL);
}

/* .../<file>/checkpoints[/<id>] of a file that exists: the checkpoints'
   route (a directory named "checkpoints" stays a directory). */
static bool
names_checkpoints (int root, const char *path, char **file, char **id)
{
    if (!http_checkpoints_split (path, file, id))
        return false;
    gw_files_error_t err = GW_FILES_ERROR_INIT;
    json_t *model = gw_files_stat (root, *file, &err);
    bool yes = model && streq (json_string_value (json_object_get (model, "type")), "file");
    json_decref (model);
    if (!yes) {
        free (*file);
        free (*id);
    }
    return yes;
}

static int
contents_serve (struct lws *wsi, http_req_t *req, int root, const char *path, gw_files_error_t *err)
{
    char *file, *id;
    if (names_checkpoints (root, path, &file, &id)) {
        int rc = http_checkpoints_serve (wsi, req, root, file, id, err);
        free (file);
        free (id);
        return rc;
    }
    switch (req->method) {
    case LWSHUMETH_GET: {
        json_t *model = contents_get (wsi, root, path, err);
        return model ? http_reply_write (wsi, req, 200, model, NULL) : http_contents_error (wsi, req, err);
    }
    case LWSHUMETH_PUT:
        return contents_put (wsi, req, root, path, err);
    case LWSHUMETH_DELETE:
        return contents_delete (wsi, req, root, path, err);
    case LWSHUMETH_PATCH:
        return http_contents_rename (wsi, req, root, path, err);
    case LWSHUMETH_POST:
        return http_contents_post (wsi, req, root, path, err);
    default:
        return http_reply_error (wsi, req, 405, "GET, PUT, DELETE, PATCH (rename) or POST (copy, new untitled)");
    }
}

int
http_contents_route (struct lws *wsi, http_req_t *req, const char *rest)
{
    gw_files_error_t err = GW_FILES_ERROR_INIT;
    char *path = NULL;
    gw_conv_t *conv = *rest ? target_of (req->front, rest + 1, &path, &err) : NULL;
    if (!*rest)
        http_contents_fail (&err, GW_E_NO_SUCH_CONVERSATION,
                            "name a kernel or conversation: /api/contents/<id>/<path>");
    int root = conv ? gw_files_root (gw_conv_workspace (conv), &err) : -1;
    int rc = root < 0 ? http_contents_error (wsi, req, &err) : contents_serve (wsi, req, root, path, &err);
    if (root >= 0)
        close (root);
    free (path);
    return rc;
}

/* ---- /files: raw, streamed ---------------------------------------------- */

bool
http_files_streams_body (const http_req_t *req)
{
    return req->method == LWSHUMETH_PUT && strncmp (req->path, "/files/", 7) == 0;
}

/* The conversation of an upload closes (its workspace goes: lazily
   unmounted, it would go on taking what is written): the upload ends now,
   its file closed, answered NoSuchConversation at the next writable
   callback; libwebsockets then reads and drops the rest of the body
   itself (the connection is kept for the client's next request). */
static void
upload_on_event (void *arg, gw_event_t event, const char *detail)
{
    (void) detail;
    http_file_t *f = arg;
    if (event != GW_EVENT_CLOSING && event != GW_EVENT_CLOSED)
        return;
    if (event == GW_EVENT_CLOSED)
        f->peer = NULL; /* detached already: no more calls */
    struct lws *wsi = f->wsi;
    http_req_t *req = lws_wsi_user (wsi);
    char message[160];
    snprintf (message, sizeof message, "%s: the conversation closed during the upload, after %lld bytes; nothing "
              "more was written", gw_error_name (GW_E_NO_SUCH_CONVERSATION), (long long) f->offset);
    http_file_end (&req->file); /* f is freed */
    http_reply_error_later (wsi, req, gw_error_status (GW_E_NO_SUCH_CONVERSATION), message);
    http_loop_run_soon (req->front->uv);
}

static const gw_front_fns_t upload_fns = {NULL, upload_on_event};

/* The file of a /files request opened (upload: emptied or created), in
   req->file, holding one of max_connections while it streams; -1 + err,
   or -1 + *full when its client or kernel holds its share (a 503). */
static int
stream_open (struct lws *wsi, http_req_t *req, bool upload, gw_files_error_t *err, const char **full)
{
    char *path = NULL;
    gw_conv_t *conv = target_of (req->front, req->path + 7, &path, err);
    if (conv && (*full = http_clients_refusal (req->front->clients, wsi, conv)))
        conv = NULL;
    int root = conv ? gw_files_root (gw_conv_workspace (conv), err) : -1;
    if (root < 0) {
        free (path);
        return -1;
    }
    struct stat st;
    int fd = upload ? gw_files_open_write (root, path, 0, err) : gw_files_open_read (root, path, &st, err);
    close (root);
    if (fd < 0) {
        free (path);
        return -1;
    }
    http_file_t *f = wire_xcalloc (1, sizeof *f);
    *f = (http_file_t){.fd = fd, .upload = upload, .size = upload ? 0 : (int64_t) st.st_size,
                       .conversation = wire_xstrdup (gw_conv_id (conv)), .path = path};
    if (upload)
        f->peer = gw_conv_attach (conv, &upload_fns, f);
    req->file = f;
    http_clients_take (req->front->clients, wsi, &req->slot, conv);
    return 0;
}

/* The model of an upload's file once its body is written. */
static int
upload_answer (struct lws *wsi, http_req_t *req)
{
    http_file_t *f = req->file;
    gw_files_error_t err = GW_FILES_ERROR_INIT;
    gw_conv_t *conv = gw_core_find (req->front->core, f->conversation);
    if (f->failed)
        err = f->err;
    else if (!conv)
        http_contents_fail (&err, GW_E_NO_SUCH_CONVERSATION, "the conversation closed during the upload");
    int root = conv && !f->failed ? gw_files_root (gw_conv_workspace (conv), &err) : -1;
    json_t *model = root >= 0 ? gw_files_stat (root, f->path, &err) : NULL;
    if (root >= 0)
        close (root);
    http_file_end (&req->file);
    return model ? http_reply_write (wsi, req, 201, http_contents_model (model, NULL), NULL) : http_contents_error (wsi, req, &err);
}

int
http_files_upload_begin (struct lws *wsi, http_req_t *req, long long length)
{
    gw_files_error_t err = GW_FILES_ERROR_INIT;
    const char *full = NULL;
    if (stream_open (wsi, req, true, &err, &full) < 0)
        return full ? http_reply_error (wsi, req, 503, full) : http_contents_error (wsi, req, &err);
    req->file->wsi = wsi;
    if (length <= 0) /* no body will come: an empty file */
        return upload_answer (wsi, req);
    return 0;
}

int
http_files_upload_body (http_req_t *req, const void *in, size_t len)
{
    http_file_t *f = req->file;
    if (f->failed || !len)
        return 0; /* the rest of the body is read and dropped; the answer says why */
    if (gw_files_write (f->fd, f->offset, in, len, &f->err) < 0)
        f->failed = true;
    else
        f->offset += (int64_t) len;
    return 0;
}

int
http_files_upload_end (struct lws *wsi, http_req_t *req)
{
    return upload_answer (wsi, req);
}

static int
download_begin (struct lws *wsi, http_req_t *req)
{
    gw_files_error_t err = GW_FILES_ERROR_INIT;
    const char *full = NULL;
    if (stream_open (wsi, req, false, &err, &full) < 0)
        return full ? http_reply_error (wsi, req, 503, full) : http_contents_error (wsi, req, &err);
    unsigned char headers[LWS_PRE + 1024];
    unsigned char *start = headers + LWS_PRE, *p = start, *end = headers + sizeof headers - 1;
    if (lws_add_http_header_status (wsi, 200, &p, end)
        || lws_add_http_header_by_token (wsi, WSI_TOKEN_HTTP_CONTENT_TYPE,
                                         (const unsigned char *) "application/octet-stream", 24, &p, end)
        || lws_add_http_header_content_length (wsi, (lws_filepos_t) req->file->size, &p, end)
        || lws_finalize_http_header (wsi, &p, end)
        || lws_write (wsi, start, (size_t) (p - start), LWS_WRITE_HTTP_HEADERS) < 0)
        return -1;
    if (req->file->size == 0) {
        http_file_end (&req->file);
        return lws_http_transaction_completed (wsi) ? -1 : 0;
    }
    lws_set_timeout (wsi, PENDING_TIMEOUT_HTTP_CONTENT, HTTP_STALL_SECONDS);
    lws_callback_on_writable (wsi);
    return 0;
}

int
http_files_download_more (struct lws *wsi, http_req_t *req)
{
    http_file_t *f = req->file;
    int64_t left = f->size - f->offset;
    size_t want = left < STREAM_CHUNK ? (size_t) left : STREAM_CHUNK;
    unsigned char *buf = wire_xmalloc (LWS_PRE + want);
    gw_files_error_t err = GW_FILES_ERROR_INIT;
    ssize_t n = gw_files_read (f->fd, f->offset, buf + LWS_PRE, want, &err);
    /* the kernel cut the file meanwhile: the length promised cannot be
       kept, so the connection ends (the client sees a short body) */
    bool last = n == (ssize_t) left;
    int rc = n == (ssize_t) want
                 ? lws_write (wsi, buf + LWS_PRE, want, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP)
                 : -1;
    free (buf);
    if (rc < 0) {
        gw_log_limited ("http/files", "http_download_cut", "{s:s, s:I, s:I, s:s}", "path", f->path, "offset",
                        (json_int_t) f->offset, "size", (json_int_t) f->size, "reason",
                        n != (ssize_t) want ? "the file is shorter than when the download began" : "write failed");
        return -1;
    }
    f->offset += (int64_t) want;
    if (!last) {
        lws_set_timeout (wsi, PENDING_TIMEOUT_HTTP_CONTENT, HTTP_STALL_SECONDS);
        lws_callback_on_writable (wsi);
        return 0;
    }
    http_file_end (&req->file);
    return lws_http_transaction_completed (wsi) ? -1 : 0;
}

int
http_files_route (struct lws *wsi, http_req_t *req, const char *rest)
{
    if (req->method != LWSHUMETH_GET)
        return http_reply_error (wsi, req, 405, "GET (PUT streams an upload with Content-Length)");
    if (!*rest)
        return http_reply_error (wsi, req, 404, "name a kernel or conversation: /files/<id>/<path>");
    return download_begin (wsi, req);
}
