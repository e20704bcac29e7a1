/*  wire_fuzz.c - libFuzzer target for libwire's parser (make fuzz).

    Input: one flags byte, then frames separated by 0x1f (ASCII unit
    separator, which valid JSON never holds raw):
        bit 0  sign with a key (else the empty key: nothing checked)
        bit 1  let the harness write the correct signature, so inputs reach
               the JSON parser even with a key set
        bit 2  small limits (64 bytes per frame, 256 per message)
        bit 3  a replay cache, fed the message twice
    Every input goes through wire_frames_verify/relay/peek, identity pop and
    push, and wire_msg_decode; a decoded message must encode and decode back
    to equal JSON (trap otherwise). Header dates go to wire_date_parse, the
    content object to wire_connection_from_json.
*/
#include "wire.h"
#include <stdlib.h>
#include <string.h>

static wire_key_t *s_key, *s_key2, *s_empty;

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static zmsg_t *
s_split (const uint8_t *data, size_t size)
{
    zmsg_t *msg = zmsg_new ();
    size_t start = 0;
    for (size_t i = 0; i <= size; i++)
        if (i == size || data[i] == 0x1f) {
            zmsg_addmem (msg, data + start, i - start);
            start = i + 1;
        }
    return msg;
}

/* Writes the right signature for key into the frame after the delimiter. */
static void
s_sign (zmsg_t *msg, const wire_key_t *key)
{
    zframe_t *f = zmsg_first (msg);
    while (f && !(zframe_size (f) == 9 && memcmp (zframe_data (f), WIRE_DELIMITER, 9) == 0))
        f = zmsg_next (msg);
    zframe_t *sig = f ? zmsg_next (msg) : NULL;
    zframe_t *parts[4];
    for (int i = 0; i < 4; i++)
        if (!sig || !(parts[i] = zmsg_next (msg)))
            return;
    char hex[WIRE_SIGNATURE_HEX_LEN + 1];
    wire_key_sign (key, parts, hex);
    zframe_reset (sig, hex, strlen (hex));
}

static void
s_check_roundtrip (const wire_msg_t *msg, const wire_key_t *key)
{
    zmsg_t *frames = wire_msg_encode (msg, key);
    if (!frames)
        __builtin_trap (); /* a decoded message must always encode */
    wire_error_t err;
    wire_msg_t *back = wire_msg_decode (&frames, key, NULL, NULL, &err);
    if (!back || !json_equal (back->header, msg->header) || !json_equal (back->parent_header, msg->parent_header)
        || !json_equal (back->metadata, msg->metadata) || !json_equal (back->content, msg->content)
        || zmsg_size (back->buffers) != zmsg_size (msg->buffers)
        || zmsg_size (back->identities) != zmsg_size (msg->identities))
        __builtin_trap ();
    wire_msg_destroy (&back);
}

static void
s_side_parsers (const wire_msg_t *msg)
{
    const char *date = json_string_value (json_object_get (msg->header, "date"));
    struct timespec ts;
    if (date && wire_date_parse (date, &ts) && (ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000))
        __builtin_trap ();
    wire_error_t err;
    char *why = NULL;
    wire_connection_t *conn = wire_connection_from_json (msg->content, &err, &why);
    free (why);
    if (conn) {
        json_t *json = wire_connection_to_json (conn);
        json_decref (json);
        char *url = wire_connection_endpoint (conn, WIRE_HB);
        free (url);
        wire_key_t *key = wire_connection_key (conn, &err);
        wire_key_destroy (&key);
        wire_connection_destroy (&conn);
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (!s_key) {
        s_key = wire_key_new (NULL, "fuzz-key", 8, NULL);
        s_key2 = wire_key_new (NULL, "other-key", 9, NULL);
        s_empty = wire_key_new (NULL, "", 0, NULL);
    }
    if (size == 0)
        return 0;
    uint8_t flags = data[0];
    const wire_key_t *key = (flags & 1) ? s_key : s_empty;
    wire_limits_t small = {64, 256};
    const wire_limits_t *limits = (flags & 4) ? &small : NULL;
    wire_replay_t *replay = (flags & 8) ? wire_replay_new (4) : NULL;

    zmsg_t *msg = s_split (data + 1, size - 1);
    if (flags & 2)
        s_sign (msg, key);

    wire_error_t err;
    wire_error_t verified = wire_frames_verify (msg, key, NULL, limits);
    zmsg_t *relayed = zmsg_dup (msg);
    wire_error_t relay_err = wire_frames_relay (relayed, key, NULL, s_key2, limits);
    if (relay_err != verified)
        __builtin_trap (); /* relaying checks exactly what verifying does */
    if (relay_err == WIRE_OK && wire_frames_verify (relayed, s_key2, NULL, NULL) != WIRE_OK)
        __builtin_trap (); /* a relayed message must verify with the new key
                              (without limits: the new signature may be longer) */
    zmsg_destroy (&relayed);
    json_t *peek = wire_frames_peek (msg, 0, &err);
    json_decref (peek);
    peek = wire_frames_peek (msg, 1, &err);
    json_decref (peek);

    zmsg_t *copy = zmsg_dup (msg);
    zmsg_t *ids = wire_frames_pop_identities (copy);
    if (ids) {
        wire_frames_push_identities (copy, ids);
        if (!zmsg_eq (copy, msg))
            __builtin_trap (); /* pop then push must restore the message */
    }
    zmsg_destroy (&ids);
    zmsg_destroy (&copy);

    for (int round = 0; round < ((flags & 8) ? 2 : 1); round++) {
        zmsg_t *input = zmsg_dup (msg);
        wire_msg_t *decoded = wire_msg_decode (&input, key, replay, limits, &err);
        if ((decoded == NULL) != (err != WIRE_OK) || input != NULL)
            __builtin_trap ();
        if (round == 1 && decoded && !wire_key_is_empty (key))
            __builtin_trap (); /* the replay cache must have caught it */
        if (decoded) {
            s_check_roundtrip (decoded, key);
            s_side_parsers (decoded);
        }
        wire_msg_destroy (&decoded);
    }
    zmsg_destroy (&msg);
    wire_replay_destroy (&replay);
    return 0;
}
