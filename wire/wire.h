/*  wire.h - libwire: the Jupyter messaging protocol (version 5.3 on the wire).

    One message on a ZeroMQ socket is a multipart message:

        [identity ...] "<IDS|MSG>" signature header parent_header metadata content [buffer ...]

    signature is the lowercase hex HMAC-SHA256 of the four JSON frames, in that
    order, as the exact bytes on the wire, keyed with the connection file's
    "key" string taken as raw bytes. An empty key means no signing.

    Two levels of API:
    - wire_msg_*: a decoded message (jansson objects) for code that must look
      inside every message (the kernel, the gateway's control socket).
    - wire_frames_*: checks and rewrites on raw frames, for the gateway's relay
      hot path, which verifies and re-signs the received bytes without parsing
      or re-encoding JSON.
*/
#ifndef WIRE_H_INCLUDED
#define WIRE_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* On a function whose result says whether untrusted bytes passed a check:
   ignoring it would let them through, so the compiler refuses. */
#define WIRE_MUST_CHECK __attribute__ ((warn_unused_result))

#define WIRE_PROTOCOL_VERSION "5.3"
#define WIRE_DELIMITER "<IDS|MSG>"
#define WIRE_SIGNATURE_SCHEME "hmac-sha256"
#define WIRE_SIGNATURE_HEX_LEN 64 /* hex digits of an HMAC-SHA256 */
#define WIRE_ID_SIZE 33           /* an id of wire_id_new: 32 hex digits and NUL */

/* Every way a message, a key or a connection file can be bad. Each has its
   own code, a short stable name for logs and a sentence for people. */
typedef enum {
    WIRE_OK = 0,
    WIRE_ERR_NO_DELIMITER,         /* no "<IDS|MSG>" frame */
    WIRE_ERR_TOO_FEW_FRAMES,       /* fewer than 5 frames after the delimiter */
    WIRE_ERR_UNSIGNED,             /* empty signature while a key is set */
    WIRE_ERR_BAD_SIGNATURE,        /* wrong length, not hex, or not matching */
    WIRE_ERR_DUPLICATE_SIGNATURE,  /* replay: signature seen before */
    WIRE_ERR_OVERSIZE,             /* a frame or the message over the limit */
    WIRE_ERR_NOT_UTF8,             /* a JSON frame is not valid UTF-8 */
    WIRE_ERR_INVALID_JSON,         /* a JSON frame does not parse */
    WIRE_ERR_NOT_OBJECT,           /* a JSON frame is not an object */
    WIRE_ERR_MISSING_HEADER_FIELD, /* header lacks msg_id, msg_type, session, ... */
    WIRE_ERR_BAD_SCHEME,           /* signature_scheme other than hmac-sha256 */
    WIRE_ERR_BAD_CONNECTION_FILE,  /* unreadable, not JSON, or a field missing */
    WIRE_ERR_IO,                   /* a system call failed; see errno */
    WIRE_ERR_COUNT_
} wire_error_t;

/* A stable snake_case name ("bad_signature") for logs and JSON. */
const char *wire_error_name (wire_error_t err);
/* A sentence for people ("signature does not match the key"). */
const char *wire_strerror (wire_error_t err);

/* ---- keys -------------------------------------------------------------- */

typedef struct wire_key wire_key_t;

/* scheme NULL means hmac-sha256; any other scheme fails with
   WIRE_ERR_BAD_SCHEME. len 0 makes a key that signs with "" and accepts any
   signature, as jupyter_client does with an empty key. The bytes are copied. */
WIRE_MUST_CHECK wire_key_t *wire_key_new (const char *scheme, const void *key, size_t len, wire_error_t *err);
/* A fresh random key (hex text of 32 random bytes), as Jupyter writes them. */
wire_key_t *wire_key_new_random (void);
void wire_key_destroy (wire_key_t **self_p);
bool wire_key_is_empty (const wire_key_t *self);
/* The key's bytes as text, for a connection file (keys are printable). */
const char *wire_key_text (const wire_key_t *self);
/* Signs parts[0..3] (header, parent, metadata, content) into out
   (64 hex digits + NUL, or "" for an empty key). */
void wire_key_sign (const wire_key_t *self, zframe_t *const parts[4], char out[WIRE_SIGNATURE_HEX_LEN + 1]);
/* Checks sig (len bytes, as received) against parts[0..3]: WIRE_OK, or
   WIRE_ERR_UNSIGNED (empty sig, key set) or WIRE_ERR_BAD_SIGNATURE (wrong
   length or mismatch; constant-time compare). An empty key accepts anything. */
WIRE_MUST_CHECK wire_error_t wire_key_verify (const wire_key_t *self, zframe_t *const parts[4], const void *sig, size_t len);

/* ---- replay protection ------------------------------------------------- */

/* A bounded set of recently seen signatures, one per receiver. When full the
   oldest are forgotten. */
typedef struct wire_replay wire_replay_t;
wire_replay_t *wire_replay_new (size_t capacity);
void wire_replay_destroy (wire_replay_t **self_p);
/* true and remembered when sig is new; false when seen before. */
WIRE_MUST_CHECK bool wire_replay_add (wire_replay_t *self, const char *sig, size_t len);

/* ---- limits -------------------------------------------------------------- */

typedef struct {
    size_t max_frame_bytes;   /* any single frame; 0 = no limit */
    size_t max_message_bytes; /* all frames together; 0 = no limit */
} wire_limits_t;

/* 64 MiB per message and per frame: large enough for a figure or a dataframe,
   small enough that one client cannot make the gateway allocate without end. */
extern const wire_limits_t wire_limits_default;

/* ---- raw frames: the relay hot path ------------------------------------ */

/* Checks frame layout, sizes, the signature with key and (when replay is not
   NULL) replay. Parses no JSON. msg is not modified. */
WIRE_MUST_CHECK wire_error_t wire_frames_verify (zmsg_t *msg, const wire_key_t *key, wire_replay_t *replay,
                                                 const wire_limits_t *limits);
/* wire_frames_verify with key_in, then replaces the signature frame with the
   signature of the same bytes under key_out. On error msg is unchanged. */
WIRE_MUST_CHECK wire_error_t wire_frames_relay (zmsg_t *msg, const wire_key_t *key_in, wire_replay_t *replay,
                                                const wire_key_t *key_out, const wire_limits_t *limits);
/* The delimiter frame of msg, or NULL when it has none, with zmsg's cursor
   left on it (zmsg_next walks on to the signature, the four JSON parts and
   the buffers); *before (when not NULL): the number of frames before it.
   Every reader of the frame layout finds the delimiter here. */
zframe_t *wire_frames_delimiter (zmsg_t *msg, size_t *before);
/* The frame at the delimiter + offset (0 the delimiter, 1 the signature,
   2 header, 3 parent header, 4 metadata, 5 content, 6 on the buffers), or
   NULL; the cursor is left on it, as wire_frames_delimiter leaves it. */
zframe_t *wire_frames_part (zmsg_t *msg, size_t offset);
/* Removes the frames before the delimiter and returns them (possibly an
   empty zmsg), or NULL when there is no delimiter. */
zmsg_t *wire_frames_pop_identities (zmsg_t *msg);
/* Puts ids (copied) back in front of msg. */
void wire_frames_push_identities (zmsg_t *msg, zmsg_t *ids);
/* Parses only the header (which = 0) or parent_header (which = 1) frame of a
   message that still has or no longer has its identities. Caller owns the
   result. Used to read msg_type, msg_id, parent msg_id for routing. */
WIRE_MUST_CHECK json_t *wire_frames_peek (zmsg_t *msg, int which, wire_error_t *err);

/* ---- decoded messages -------------------------------------------------- */

typedef struct {
    zmsg_t *identities; /* routing frames before the delimiter (never NULL) */
    json_t *header;     /* objects, never NULL */
    json_t *parent_header;
    json_t *metadata;
    json_t *content;
    zmsg_t *buffers; /* raw frames after content (never NULL, may be empty) */
} wire_msg_t;

/* A new message with a fresh header (msg_id, session, username "kennel",
   date now, msg_type, version 5.3). With a parent, parent_header is a copy of
   the parent's header and the identities are the parent's (a reply goes back
   to whoever asked). session may be NULL for a random one. */
wire_msg_t *wire_msg_new (const char *session, const char *msg_type, const wire_msg_t *parent);
void wire_msg_destroy (wire_msg_t **self_p);
/* Verifies (frames, signature, replay) BEFORE parsing any JSON, then parses.
   Consumes *msg_p in every case. NULL on error, with *err set. */
WIRE_MUST_CHECK wire_msg_t *wire_msg_decode (zmsg_t **msg_p, const wire_key_t *key, wire_replay_t *replay,
                                             const wire_limits_t *limits, wire_error_t *err);
/* Serializes (compact UTF-8 JSON) and signs. */
zmsg_t *wire_msg_encode (const wire_msg_t *self, const wire_key_t *key);
/* wire_msg_encode + zmsg_send; 0 on success, -1 on error. */
int wire_msg_send (const wire_msg_t *self, void *socket, const wire_key_t *key);
/* The header's msg_type, or "" when absent. */
const char *wire_msg_type (const wire_msg_t *self);
/* The header's msg_id, or "". */
const char *wire_msg_id (const wire_msg_t *self);
/* Replaces content (takes the reference). */
void wire_msg_set_content (wire_msg_t *self, json_t *content);

/* ---- header fields ----------------------------------------------------- */

/* A new unique id: 32 lowercase hex digits from libsodium's random source. */
void wire_id_new (char out[WIRE_ID_SIZE]);
/* Now as UTC ISO 8601 with six zero-padded microsecond digits and Z:
   "2026-01-01T12:00:00.000042Z". */
void wire_date_now (char out[32]);
/* Parses every date jupyter_client accepts (jsonutil ISO8601_PAT): optional
   fraction of 1..6 digits, Z, +HH:MM, +HHMM or no zone (local time). */
WIRE_MUST_CHECK bool wire_date_parse (const char *text, struct timespec *out);
/* true when data[0..len) is well-formed UTF-8 (no overlongs, no surrogates,
   nothing above U+10FFFF). Jansson rejects bad UTF-8 too, but as a generic
   parse error; checking first gives the caller its own error code. */
bool wire_utf8_valid (const unsigned char *data, size_t len);

/* ---- connection files -------------------------------------------------- */

typedef struct {
    char *transport; /* "tcp" or "ipc" */
    char *ip;        /* host for tcp; path prefix for ipc */
    int shell_port, iopub_port, stdin_port, control_port, hb_port;
    char *key;       /* text, may be "" */
    char *signature_scheme;
    char *kernel_name; /* may be "" */
} wire_connection_t;

typedef enum { WIRE_SHELL, WIRE_IOPUB, WIRE_STDIN, WIRE_CONTROL, WIRE_HB, WIRE_CHANNEL_COUNT_ } wire_channel_t;

wire_connection_t *wire_connection_new (void);
void wire_connection_destroy (wire_connection_t **self_p);
/* Reads the JSON jupyter_client writes. On error returns NULL, sets *err and,
   when errmsg is not NULL, a malloc'd sentence naming the file and field. */
WIRE_MUST_CHECK wire_connection_t *wire_connection_load (const char *path, wire_error_t *err, char **errmsg);
WIRE_MUST_CHECK wire_connection_t *wire_connection_from_json (const json_t *json, wire_error_t *err, char **errmsg);
json_t *wire_connection_to_json (const wire_connection_t *self);
/* Writes with mode 0600 (created so, never widened). 0 or -1 with errno. */
int wire_connection_save (const wire_connection_t *self, const char *path);
/* "tcp://127.0.0.1:5555" or "ipc://{ip}-{port}"; caller frees. */
char *wire_connection_endpoint (const wire_connection_t *self, wire_channel_t channel);
/* The connection's key as a wire_key_t (checks the scheme). */
WIRE_MUST_CHECK wire_key_t *wire_connection_key (const wire_connection_t *self, wire_error_t *err);

/* Allocation that cannot fail (README.md, "Allocation"): on out of memory
   they write "kennel: out of memory" to stderr and abort(). Sizes that come
   from a peer must be bounded by the caller before it calls them. */
void *wire_xmalloc (size_t size) __attribute__ ((malloc, returns_nonnull));
void *wire_xcalloc (size_t n, size_t size) __attribute__ ((malloc, returns_nonnull));
/* reallocarray(3): n * size is checked for overflow. */
void *wire_xreallocarray (void *ptr, size_t n, size_t size) __attribute__ ((returns_nonnull));
char *wire_xstrdup (const char *s) __attribute__ ((malloc, returns_nonnull));
char *wire_xstrndup (const char *s, size_t n) __attribute__ ((malloc, returns_nonnull));
char *wire_xasprintf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2), malloc, returns_nonnull));
/* Writes the line and aborts; async-signal-safe. */
void wire_alloc_fail (void) __attribute__ ((noreturn));
/* Makes jansson allocate through wire_xmalloc, so that a NULL from json_*
   means bad input, never out of memory. Call once, first thing in main. */
void wire_alloc_json (void);

/* Runs every self-test of libwire; 0 when all pass. */
int wire_selftest (bool verbose);

#ifdef __cplusplus
}
#endif
#endif
