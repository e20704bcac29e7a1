/*  ws_codec.c - Jupyter messages to and from websocket frames, as
    jupyter_server frames them (services/kernels/connection/base.py):

    legacy, text:   one JSON object {header, parent_header, metadata,
                    content, buffers, channel}; a client message without
                    "channel" goes to shell; outgoing ones also carry
                    msg_id and msg_type at the top level.
    A client's header missing session, username, version or date gets
    them (the spec requires all six; the kernel drops a message without).
    Inside, a message is its parts as frames (header, parent_header,
    metadata, content, buffers), the layout of gw_front.h: what the kernel
    sent is passed to the client byte for byte, only framed.
    legacy, binary: only when there are buffers: u32be n, u32be offsets[n],
                    the JSON (without buffers), then the n - 1 buffers.
    v1 (subprotocol v1.kernel.websocket.jupyter.org), always binary:
                    u64le count, u64le offsets[count], the channel, then
                    header, parent_header, metadata, content (JSON each)
                    and the buffers; the last offset is the frame's length.
*/
#include "http.h"

#include <string.h>

#define OFFSETS_MAX 1024

/* Clients send on shell, control and stdin only. */
static bool
channel_parse (const char *name, size_t len, wire_channel_t *out)
{
    static const wire_channel_t sendable[] = {WIRE_SHELL, WIRE_CONTROL, WIRE_STDIN};
    for (int i = 0; i < 3; i++) {
        const char *n = gw_channel_name (sendable[i]);
        if (strlen (n) == len && memcmp (n, name, len) == 0) {
            *out = sendable[i];
            return true;
        }
    }
    return false;
}

/* The header fields the messaging spec requires and kennel's kernel
   insists on, which clients leave out (smolagents sends no date): filled
   in, never replaced. false when one is there but no string. */
static bool
header_complete (json_t *header)
{
    static const char *fields[] = {"session", "username", "version", "date"};
    char now[32];
    wire_date_now (now);
    const char *defaults[] = {"", "", "5.3", now};
    for (int i = 0; i < 4; i++) {
        json_t *v = json_object_get (header, fields[i]);
        if (v && !json_is_string (v))
            return false;
        if (!v)
            json_object_set_new (header, fields[i], json_string (defaults[i]));
    }
    return true;
}

static void
json_frame_add (zmsg_t *parts, const json_t *value)
{
    char *text = json_dumps (value, JSON_COMPACT | JSON_ENCODE_ANY);
    zmsg_addmem (parts, text, strlen (text));
    free (text);
}

/* The four JSON parts as frames; parent_header, metadata and content may
   be NULL (then {}). */
static zmsg_t *
parts_make (json_t *header, json_t *parent, json_t *metadata, json_t *content, const char **problem)
{
    if (!json_is_object (header) || !json_is_string (json_object_get (header, "msg_type"))
        || !json_is_string (json_object_get (header, "msg_id")) || !header_complete (header)) {
        *problem = "the message has no header with msg_id and msg_type, or a header field is not a string";
        return NULL;
    }
    if ((parent && !json_is_object (parent)) || (metadata && !json_is_object (metadata))
        || (content && !json_is_object (content))) {
        *problem = "parent_header, metadata and content must be objects";
        return NULL;
    }
    json_t *empty = json_object ();
    zmsg_t *parts = zmsg_new ();
    json_frame_add (parts, header);
    json_frame_add (parts, parent ? parent : empty);
    json_frame_add (parts, metadata ? metadata : empty);
    json_frame_add (parts, content ? content : empty);
    json_decref (empty);
    return parts;
}

/* The JSON object of a legacy message: channel and the four parts. */
static zmsg_t *
legacy_object (json_t *obj, wire_channel_t *channel, const char **problem)
{
    if (!json_is_object (obj)) {
        *problem = "the frame is not a JSON object";
        return NULL;
    }
    json_t *ch = json_object_get (obj, "channel");
    *channel = WIRE_SHELL;
    if (ch && !json_is_null (ch)
        && (!json_is_string (ch) || !channel_parse (json_string_value (ch), json_string_length (ch), channel))) {
        *problem = "unknown channel (shell, control or stdin)";
        return NULL;
    }
    return parts_make (json_object_get (obj, "header"), json_object_get (obj, "parent_header"),
                       json_object_get (obj, "metadata"), json_object_get (obj, "content"), problem);
}

static uint32_t
be32 (const unsigned char *p)
{
    return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static uint64_t
le64 (const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* off[0..n-1] rise within size: part i is [off[i], off[i+1]). */
static bool
offsets_valid (const uint64_t *off, size_t n, size_t size)
{
    for (size_t i = 0; i < n; i++)
        if (off[i] > size || (i && off[i] < off[i - 1]))
            return false;
    return true;
}

static zmsg_t *
legacy_binary (const unsigned char *data, size_t size, wire_channel_t *channel, const char **problem)
{
    *problem = "a malformed binary frame (u32be count, u32be offsets, JSON, buffers)";
    if (size < 8)
        return NULL;
    uint32_t n = be32 (data);
    if (n < 1 || n > OFFSETS_MAX || size < 4 * ((size_t) n + 1))
        return NULL;
    uint64_t off[OFFSETS_MAX + 1];
    for (uint32_t i = 0; i < n; i++)
        off[i] = be32 (data + 4 * (i + 1));
    off[n] = size;
    if (off[0] < 4 * ((size_t) n + 1) || !offsets_valid (off, n + 1, size))
        return NULL;
    json_t *obj = json_loadb ((const char *) data + off[0], off[1] - off[0], 0, NULL);
    zmsg_t *parts = obj ? legacy_object (obj, channel, problem) : NULL;
    json_decref (obj);
    for (uint32_t i = 1; parts && i < n; i++)
        zmsg_addmem (parts, data + off[i], off[i + 1] - off[i]);
    return parts;
}

static zmsg_t *
v1_decode (const unsigned char *data, size_t size, wire_channel_t *channel, const char **problem)
{
    *problem = "a malformed v1 frame (u64le count, u64le offsets, channel, header, parent_header, metadata, "
               "content, buffers)";
    if (size < 8)
        return NULL;
    uint64_t n = le64 (data);
    if (n < 6 || n > OFFSETS_MAX || size < 8 * (n + 1))
        return NULL;
    uint64_t off[OFFSETS_MAX];
    for (uint64_t i = 0; i < n; i++)
        off[i] = le64 (data + 8 * (i + 1));
    if (off[0] < 8 * (n + 1) || !offsets_valid (off, n, size))
        return NULL;
    if (!channel_parse ((const char *) data + off[0], off[1] - off[0], channel)) {
        *problem = "unknown channel (shell, control or stdin)";
        return NULL;
    }
    json_t *json[4];
    for (int i = 0; i < 4; i++)
        json[i] = json_loadb ((const char *) data + off[i + 1], off[i + 2] - off[i + 1], 0, NULL);
    zmsg_t *parts = NULL;
    if (json[0] && json[1] && json[2] && json[3])
        parts = parts_make (json[0], json[1], json[2], json[3], problem);
    else
        *problem = "a part of the v1 frame is not JSON";
    for (int i = 0; i < 4; i++)
        json_decref (json[i]);
    for (uint64_t i = 5; parts && i + 1 < n; i++)
        zmsg_addmem (parts, data + off[i], off[i + 1] - off[i]);
    return parts;
}

zmsg_t *
ws_codec_decode (ws_protocol_t proto, const unsigned char *data, size_t size, bool binary, wire_channel_t *channel,
                 const char **problem)
{
    if (proto == WS_V1) {
        if (!binary) {
            *problem = "the v1 subprotocol takes binary frames only";
            return NULL;
        }
        return v1_decode (data, size, channel, problem);
    }
    if (binary)
        return legacy_binary (data, size, channel, problem);
    json_t *obj = json_loadb ((const char *) data, size, 0, NULL);
    if (!obj) {
        *problem = "the frame is not valid JSON";
        return NULL;
    }
    zmsg_t *parts = legacy_object (obj, channel, problem);
    json_decref (obj);
    return parts;
}

/* ---- encoding ------------------------------------------------------------ */

static void
put_be32 (unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char) (v >> 24);
    p[1] = (unsigned char) (v >> 16);
    p[2] = (unsigned char) (v >> 8);
    p[3] = (unsigned char) v;
}

static void
put_le64 (unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char) (v >> (8 * i));
}

/* A growing frame with LWS_PRE bytes free before it. */
typedef struct {
    unsigned char *data;
    size_t len, cap;
} buf_t;

static void
buf_add (buf_t *b, const void *data, size_t len)
{
    if (b->len + len > b->cap) {
        b->cap = (b->len + len) * 2;
        b->data = wire_xreallocarray (b->data, LWS_PRE + b->cap, 1);
    }
    memcpy (b->data + LWS_PRE + b->len, data, len);
    b->len += len;
}

static void
buf_str (buf_t *b, const char *s)
{
    buf_add (b, s, strlen (s));
}

static void
buf_frame (buf_t *b, zframe_t *f)
{
    buf_add (b, zframe_data (f), zframe_size (f));
}

/* "key":<the JSON string of header's field> */
static bool
buf_header_field (buf_t *b, const json_t *header, const char *key)
{
    const json_t *v = json_object_get (header, key);
    if (!json_is_string (v))
        return false;
    char *text = json_dumps (v, JSON_ENCODE_ANY);
    buf_str (b, ",\"");
    buf_str (b, key);
    buf_str (b, "\":");
    buf_str (b, text);
    free (text);
    return true;
}

/* The legacy JSON object: the parts as they are, msg_id and msg_type
   from the header (the only part parsed), channel. */
static bool
legacy_json (buf_t *b, zmsg_t *parts, wire_channel_t channel, bool with_buffers)
{
    static const char *keys[] = {"{\"header\":", ",\"parent_header\":", ",\"metadata\":", ",\"content\":"};
    zframe_t *f = zmsg_first (parts);
    json_t *header = f ? json_loadb ((const char *) zframe_data (f), zframe_size (f), 0, NULL) : NULL;
    for (int i = 0; i < 4 && f; i++, f = zmsg_next (parts)) {
        buf_str (b, keys[i]);
        buf_frame (b, f);
    }
    bool ok = header && buf_header_field (b, header, "msg_id") && buf_header_field (b, header, "msg_type");
    json_decref (header);
    buf_str (b, ",\"channel\":\"");
    buf_str (b, gw_channel_name (channel));
    buf_str (b, with_buffers ? "\",\"buffers\":[]}" : "\"}");
    return ok;
}

static unsigned char *
legacy_encode (zmsg_t *parts, wire_channel_t channel, size_t *size, bool *binary)
{
    size_t nbufs = zmsg_size (parts) - 4;
    buf_t b = {0};
    *binary = nbufs > 0;
    if (!nbufs) {
        if (!legacy_json (&b, parts, channel, true)) {
            free (b.data);
            return NULL;
        }
        *size = b.len;
        return b.data;
    }
    buf_t json = {0};
    bool ok = legacy_json (&json, parts, channel, false);
    size_t n = nbufs + 1;
    unsigned char word[4];
    put_be32 (word, (uint32_t) n);
    buf_add (&b, word, 4);
    size_t at = 4 * (n + 1);
    put_be32 (word, (uint32_t) at);
    buf_add (&b, word, 4);
    at += json.len;
    zframe_t *f = zmsg_first (parts);
    for (int i = 0; i < 4; i++)
        f = zmsg_next (parts);
    for (; f; f = zmsg_next (parts)) {
        put_be32 (word, (uint32_t) at);
        buf_add (&b, word, 4);
        at += zframe_size (f);
    }
    buf_add (&b, json.data + LWS_PRE, json.len);
    free (json.data);
    f = zmsg_first (parts);
    for (int i = 0; i < 4; i++)
        f = zmsg_next (parts);
    for (; f; f = zmsg_next (parts))
        buf_frame (&b, f);
    if (!ok) {
        free (b.data);
        return NULL;
    }
    *size = b.len;
    return b.data;
}

static unsigned char *
v1_encode (zmsg_t *parts, wire_channel_t channel, size_t *size)
{
    const char *name = gw_channel_name (channel);
    size_t n = 2 + zmsg_size (parts), at = 8 * (n + 1);
    buf_t b = {0};
    unsigned char word[8];
    put_le64 (word, n);
    buf_add (&b, word, 8);
    put_le64 (word, at);
    buf_add (&b, word, 8);
    at += strlen (name);
    for (zframe_t *f = zmsg_first (parts); f; f = zmsg_next (parts)) {
        put_le64 (word, at); /* where this part starts; the last: the end */
        buf_add (&b, word, 8);
        at += zframe_size (f);
    }
    put_le64 (word, at);
    buf_add (&b, word, 8);
    buf_str (&b, name);
    for (zframe_t *f = zmsg_first (parts); f; f = zmsg_next (parts))
        buf_frame (&b, f);
    *size = b.len;
    return b.data;
}

unsigned char *
ws_codec_encode (ws_protocol_t proto, zmsg_t *parts, wire_channel_t channel, size_t *size, bool *binary)
{
    if (zmsg_size (parts) < 4)
        return NULL;
    if (proto == WS_V1) {
        *binary = true;
        return v1_encode (parts, channel, size);
    }
    return legacy_encode (parts, channel, size, binary);
}
