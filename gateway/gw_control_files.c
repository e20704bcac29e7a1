/*  gw_control_files.c - file_list, file_stat, file_get, file_put,
    file_delete, file_rename and file_copy: the file requests of the
    control vocabulary (gw_request.h; docs/PROTOCOL.md §3, "Files").

    Each request is one bounded step on the event loop: a listing of at
    most GW_FILES_LIST_MAX entries, or one chunk of at most
    GW_FILES_CHUNK_MAX bytes read or written on the workspace's tmpfs. A
    big file is a series of requests with offset and length, so neither
    the gateway nor the client ever holds it whole, and other
    conversations wait at most one chunk's time. Content travels as base64
    in the JSON or, with "encoding": "buffer", as the message's first raw
    frame after content (Jupyter's buffers): no base64 cost.
*/
#include "gw_conv.h"
#include "gw_core.h"
#include "gw_error.h"
#include "gw_files.h"
#include "gw_request.h"
#include "gw_util.h"
#include "wire.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const json_t *content;
    zmsg_t *buffers; /* the request's raw frames, or NULL */
    int root;
    const char *path; /* normalized */
    zmsg_t *out;
    gw_files_error_t *err;
} call_t;

typedef json_t *(handler_fn) (call_t *c);

static json_t *
refuse (call_t *c, const char *ename, const char *evalue)
{
    c->err->ename = ename;
    snprintf (c->err->evalue, sizeof c->err->evalue, "%s", evalue);
    return NULL;
}

/* An integer field in [min, max], dflt when absent; false when invalid. */
static bool
int_field (call_t *c, const char *name, int64_t min, int64_t max, int64_t dflt, int64_t *v)
{
    json_t *value = json_object_get (c->content, name);
    *v = value ? (int64_t) json_integer_value (value) : dflt;
    if (value && (!json_is_integer (value) || *v < min || *v > max)) {
        c->err->ename = gw_error_name (GW_E_INVALID_REQUEST);
        snprintf (c->err->evalue, sizeof c->err->evalue, "%s must be an integer from %lld to %lld", name,
                  (long long) min, (long long) max);
        return false;
    }
    return true;
}

/* "base64" (the default) or "buffer", or NULL after refusing. */
static const char *
encoding_field (call_t *c)
{
    json_t *value = json_object_get (c->content, "encoding");
    const char *enc = value ? gw_text (value) : "base64";
    if (!enc || !(streq (enc, "base64") || streq (enc, "buffer"))) {
        refuse (c, gw_error_name (GW_E_INVALID_REQUEST), "encoding must be \"base64\" or \"buffer\"");
        return NULL;
    }
    return enc;
}

static json_t *
do_stat (call_t *c)
{
    json_t *model = gw_files_stat (c->root, c->path, c->err);
    if (model)
        json_object_set_new (model, "status", json_string ("ok"));
    return model;
}

static json_t *
do_list (call_t *c)
{
    bool truncated;
    json_t *list = gw_files_list (c->root, c->path, &truncated, c->err);
    if (!list)
        return NULL;
    return json_pack ("{s:s, s:s, s:o, s:b}", "status", "ok", "path", c->path, "entries", list, "truncated",
                      truncated);
}

static json_t *
do_get (call_t *c)
{
    int64_t offset, length;
    const char *enc = encoding_field (c);
    if (!enc || !int_field (c, "offset", 0, INT64_MAX, 0, &offset)
        || !int_field (c, "length", 1, (int64_t) GW_FILES_CHUNK_MAX, (int64_t) GW_FILES_CHUNK_DEFAULT, &length))
        return NULL;
    struct stat st;
    int fd = gw_files_open_read (c->root, c->path, &st, c->err);
    if (fd < 0)
        return NULL;
    char *buf = wire_xmalloc ((size_t) length);
    ssize_t n = gw_files_read (fd, offset, buf, (size_t) length, c->err);
    close (fd);
    json_t *reply = NULL;
    if (n >= 0) {
        char modified[40];
        gw_iso_time ((double) st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9, modified);
        reply = json_pack ("{s:s, s:s, s:I, s:I, s:I, s:b, s:s, s:s}", "status", "ok", "path", c->path, "offset",
                           (json_int_t) offset, "length", (json_int_t) n, "size", (json_int_t) st.st_size, "eof",
                           offset + n >= st.st_size, "last_modified", modified, "encoding", enc);
        if (streq (enc, "buffer"))
            zmsg_addmem (c->out, buf, (size_t) n);
        else {
            char *text = gw_base64_encode (buf, (size_t) n);
            json_object_set_new (reply, "content", json_string_nocheck (text));
            free (text);
        }
    }
    free (buf);
    return reply;
}

/* The chunk of a put: the first raw frame's bytes, or content decoded
   (then *owned, to free); NULL after refusing. */
static const void *
put_data (call_t *c, size_t *len, void **owned)
{
    json_t *content = json_object_get (c->content, "content");
    zframe_t *frame = c->buffers ? zmsg_first (c->buffers) : NULL;
    if (frame && content) {
        refuse (c, gw_error_name (GW_E_INVALID_REQUEST), "content and a raw frame were both given");
        return NULL;
    }
    if (frame) {
        *len = zframe_size (frame);
        return zframe_data (frame);
    }
    void *data = *owned = json_is_string (content)
                     ? gw_base64_decode (json_string_value (content), json_string_length (content), len)
                     : NULL;
    if (!data)
        refuse (c, gw_error_name (GW_E_INVALID_REQUEST), "content must be base64 (RFC 4648, padded), or the data a raw frame");
    return data;
}

static json_t *
put_file (call_t *c)
{
    int64_t offset;
    size_t len;
    if (!int_field (c, "offset", 0, INT64_MAX, 0, &offset))
        return NULL;
    void *owned = NULL;
    const void *data = put_data (c, &len, &owned);
    if (!data)
        return NULL;
    json_t *reply = NULL;
    if (len > GW_FILES_CHUNK_MAX)
        refuse (c, gw_error_name (GW_E_INVALID_REQUEST), "a chunk holds at most 4194304 bytes: send a big file in chunks with offset");
    else {
        int fd = gw_files_open_write (c->root, c->path, offset, c->err);
        if (fd >= 0 && gw_files_write (fd, offset, data, len, c->err) == 0)
            reply = json_pack ("{s:s, s:s, s:s, s:I, s:I, s:I}", "status", "ok", "path", c->path, "type", "file",
                               "offset", (json_int_t) offset, "length", (json_int_t) len, "size",
                               (json_int_t) (offset + (int64_t) len));
        if (fd >= 0)
            close (fd);
    }
    free (owned);
    return reply;
}

static json_t *
do_put (call_t *c)
{
    json_t *value = json_object_get (c->content, "type");
    const char *type = value ? gw_text (value) : "file";
    if (!type || !(streq (type, "file") || streq (type, "directory")))
        return refuse (c, gw_error_name (GW_E_INVALID_REQUEST), "type must be \"file\" or \"directory\"");
    if (streq (type, "file"))
        return put_file (c);
    if (gw_files_mkdir (c->root, c->path, c->err) < 0)
        return NULL;
    return json_pack ("{s:s, s:s, s:s}", "status", "ok", "path", c->path, "type", "directory");
}

static json_t *
do_delete (call_t *c)
{
    if (gw_files_delete (c->root, c->path, c->err) < 0)
        return NULL;
    return json_pack ("{s:s, s:s}", "status", "ok", "path", c->path);
}

/* new_path of a rename or copy, normalized (malloc'd); NULL after refusing. */
static char *
new_path_field (call_t *c)
{
    json_t *value = json_object_get (c->content, "new_path");
    if (!json_is_string (value)) {
        refuse (c, gw_error_name (GW_E_INVALID_PATH), "new_path must be a string");
        return NULL;
    }
    return gw_files_path (json_string_value (value), json_string_length (value), c->err);
}

/* A rename or copy: the reply names both paths. */
static json_t *
move (call_t *c, bool copy)
{
    char *to = new_path_field (c);
    if (!to)
        return NULL;
    int rc = copy ? gw_files_copy (c->root, c->path, to, false, c->err) : gw_files_rename (c->root, c->path, to, c->err);
    json_t *reply = rc == 0 ? json_pack ("{s:s, s:s, s:s}", "status", "ok", "path", c->path, "new_path", to) : NULL;
    free (to);
    return reply;
}

static json_t *
do_rename (call_t *c)
{
    return move (c, false);
}

static json_t *
do_copy (call_t *c)
{
    return move (c, true);
}

static const struct {
    const char *type;
    handler_fn *fn;
} HANDLERS[] = {
    {"file_list_request", do_list}, {"file_stat_request", do_stat},     {"file_get_request", do_get},
    {"file_put_request", do_put},   {"file_delete_request", do_delete}, {"file_rename_request", do_rename},
    {"file_copy_request", do_copy},
};

static handler_fn *
handler_of (const char *type)
{
    for (size_t i = 0; i < sizeof HANDLERS / sizeof HANDLERS[0]; i++)
        if (streq (HANDLERS[i].type, type))
            return HANDLERS[i].fn;
    return NULL;
}

bool
gw_control_files_handles (const char *type)
{
    return handler_of (type) != NULL;
}

json_t *
gw_control_files (gw_core_t *core, const char *type, const json_t *content, zmsg_t *buffers, zmsg_t *out,
                  gw_files_error_t *err)
{
    call_t c = {.content = content, .buffers = buffers, .out = out, .err = err};
    err->ename = NULL;
    const char *id = gw_text (json_object_get (content, "conversation_id"));
    if (!id || !gw_conv_id_valid (id))
        return refuse (&c, gw_error_name (GW_E_INVALID_CONVERSATION_ID),
                       "conversation_id must match [A-Za-z0-9._-]{1,128} and not be \".\" or \"..\"");
    gw_conv_t *conv = gw_core_find (core, id);
    if (!conv)
        return refuse (&c, gw_error_name (GW_E_NO_SUCH_CONVERSATION), "no conversation has this id");
    json_t *path = json_object_get (content, "path");
    if (path && !json_is_string (path))
        return refuse (&c, gw_error_name (GW_E_INVALID_PATH), "path must be a string");
    char *normal = gw_files_path (path ? json_string_value (path) : "", path ? json_string_length (path) : 0, err);
    if (!normal)
        return NULL;
    json_t *reply = NULL;
    c.path = normal;
    c.root = gw_files_root (gw_conv_workspace (conv), err);
    if (c.root >= 0) {
        reply = handler_of (type) (&c);
        close (c.root);
    }
    if (reply)
        json_object_set_new (reply, "conversation_id", json_string (id));
    else if (!err->ename) /* every refusal names its reason: never an unset error */
        refuse (&c, gw_error_name (GW_E_FILE_ERROR), GW_FILES_ERROR_UNSAID);
    free (normal);
    return reply;
}
