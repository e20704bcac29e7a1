/*  gw_peek_fuzz.c - libFuzzer target: gateway/gw_peek.c against jansson.

    The relay routes kernel and client messages on what gw_peek reads in
    place, and a kernel's frames are untrusted even when its signature is
    good (it holds its own key). The scanner must answer exactly what a
    jansson parse would, so this is a differential check that traps on any
    disagreement.

    Input: one selector byte, then the frame's bytes.
        bits 0-2  the key: msg_type, msg_id, session, execution_state,
                  status, "", or the key "a" / "kennel"
        bits 3-4  the output buffer: 64 bytes, 1, 5, or none (size 0)
    Checked: gw_peek_string's length and its (cut) copy equal jansson's
    string value, cut the same way; gw_peek_object is 1 only for what
    jansson loads as an object and 0 only for what it refuses or is no
    object; gw_peek_frame at offset 2 answers as gw_peek_string on that
    frame.
*/
#include "gateway/gw_peek.h"
#include "wire.h"
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static const char *keys[] = {"msg_type", "msg_id", "session", "execution_state", "status", "", "a", "kennel"};
static const size_t out_sizes[] = {64, 1, 5, 0};

/* jansson's answer, cut as gw_peek_string cuts (snprintf). */
static int
s_jansson (const json_t *obj, const char *key, char *out, size_t out_size)
{
    json_t *v = json_object_get (obj, key);
    if (!json_is_string (v))
        return -1;
    if (out_size > 0)
        snprintf (out, out_size, "%s", json_string_value (v));
    return (int) json_string_length (v);
}

static void
s_check_object (const json_t *obj, const uint8_t *frame, size_t size)
{
    int rc = gw_peek_object (frame, size);
    if ((rc == 1 && !json_is_object (obj)) || (rc == 0 && json_is_object (obj)) || rc < -1 || rc > 1)
        __builtin_trap ();
}

/* A wire message whose header frame is the input: gw_peek_frame must read
   the same value there. */
static void
s_check_frame (const uint8_t *frame, size_t size, const char *key, int expected, const char *value)
{
    zmsg_t *msg = zmsg_new ();
    zmsg_addstr (msg, "identity");
    zmsg_addstr (msg, WIRE_DELIMITER);
    zmsg_addstr (msg, "signature");
    zmsg_addmem (msg, frame, size);
    char out[64];
    int rc = gw_peek_frame (msg, 2, key, out, sizeof out);
    if (rc != expected || (rc >= 0 && strcmp (out, value) != 0))
        __builtin_trap ();
    zmsg_destroy (&msg);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *key = keys[data[0] & 7];
    size_t out_size = out_sizes[(data[0] >> 3) & 3];
    const uint8_t *frame = data + 1;
    size--;

    json_t *obj = json_loadb ((const char *) frame, size, 0, NULL);
    s_check_object (obj, frame, size);

    /* a canary past the buffer: a copy must never write beyond out_size */
    char a[65], b[65];
    memset (a, 'X', sizeof a);
    memset (b, 'X', sizeof b);
    int ra = gw_peek_string (frame, size, key, out_size ? a : NULL, out_size);
    int rb = s_jansson (obj, key, b, out_size);
    if (ra != rb || a[out_size] != 'X' || (ra >= 0 && out_size > 0 && strcmp (a, b) != 0))
        __builtin_trap ();

    char full[64];
    int rf = s_jansson (obj, key, full, sizeof full);
    s_check_frame (frame, size, key, rf, full);
    json_decref (obj);
    return 0;
}
