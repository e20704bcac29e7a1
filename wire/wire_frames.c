/*  wire_frames.c - checks and rewrites on raw frames (the relay hot path).

    Nothing here parses JSON except wire_frames_peek: the gateway verifies
    the HMAC over the bytes received and re-signs those same bytes, so a
    message is never decoded and re-encoded on its way through.
*/
#include "wire_private.h"
#include <string.h>

const wire_limits_t wire_limits_default = {64u << 20, 64u << 20};

static bool
s_is_delimiter (zframe_t *frame)
{
    return zframe_size (frame) == strlen (WIRE_DELIMITER)
        && memcmp (zframe_data (frame), WIRE_DELIMITER, strlen (WIRE_DELIMITER)) == 0;
}

zframe_t *
wire_frames_delimiter (zmsg_t *msg, size_t *before)
{
    size_t n = 0;
    zframe_t *f = zmsg_first (msg);
    for (; f && !s_is_delimiter (f); f = zmsg_next (msg))
        n++;
    if (before)
        *before = n;
    return f;
}

zframe_t *
wire_frames_part (zmsg_t *msg, size_t offset)
{
    zframe_t *f = wire_frames_delimiter (msg, NULL);
    for (size_t i = 0; f && i < offset; i++)
        f = zmsg_next (msg);
    return f;
}

wire_error_t
wire_layout_find (zmsg_t *msg, const wire_limits_t *limits, wire_layout_t *layout)
{
    if (!limits)
        limits = &wire_limits_default;
    memset (layout, 0, sizeof *layout);
    size_t total = 0, after = 0;
    /* Sizes first, over every frame: a message over the limit is refused
       before anything else looks at it. */
    for (zframe_t *f = zmsg_first (msg); f; f = zmsg_next (msg)) {
        size_t size = zframe_size (f);
        if (limits->max_frame_bytes && size > limits->max_frame_bytes)
            return WIRE_ERR_OVERSIZE;
        total += size;
        if (limits->max_message_bytes && total > limits->max_message_bytes)
            return WIRE_ERR_OVERSIZE;
    }
    layout->delimiter = wire_frames_delimiter (msg, &layout->n_ids);
    if (!layout->delimiter)
        return WIRE_ERR_NO_DELIMITER;
    for (zframe_t *f = zmsg_next (msg); f; f = zmsg_next (msg)) {
        if (after == 0)
            layout->signature = f;
        else if (after <= 4)
            layout->parts[after - 1] = f;
        after++;
    }
    if (after < 5)
        return WIRE_ERR_TOO_FEW_FRAMES;
    layout->n_buffers = after - 5;
    return WIRE_OK;
}

/* Layout, signature, then replay: the order jupyter_client checks in. */
static wire_error_t
s_verify (zmsg_t *msg, const wire_key_t *key, wire_replay_t *replay, const wire_limits_t *limits,
          wire_layout_t *layout)
{
    wire_error_t err = wire_layout_find (msg, limits, layout);
    if (err)
        return err;
    const void *sig = zframe_data (layout->signature);
    size_t sig_len = zframe_size (layout->signature);
    err = wire_key_verify (key, layout->parts, sig, sig_len);
    if (err)
        return err;
    /* Without a key every signature is "": nothing to remember (as in
       jupyter_client, which keeps no digest history when auth is off). */
    if (replay && !wire_key_is_empty (key) && !wire_replay_add (replay, sig, sig_len))
        return WIRE_ERR_DUPLICATE_SIGNATURE;
    return WIRE_OK;
}

wire_error_t
wire_frames_verify (zmsg_t *msg, const wire_key_t *key, wire_replay_t *replay, const wire_limits_t *limits)
{
    wire_layout_t layout;
    return s_verify (msg, key, replay, limits, &layout);
}

wire_error_t
wire_frames_relay (zmsg_t *msg, const wire_key_t *key_in, wire_replay_t *replay, const wire_key_t *key_out,
                   const wire_limits_t *limits)
{
    wire_layout_t layout;
    wire_error_t err = s_verify (msg, key_in, replay, limits, &layout);
    if (err)
        return err;
    char sig[WIRE_SIGNATURE_HEX_LEN + 1];
    wire_key_sign (key_out, layout.parts, sig);
    zframe_reset (layout.signature, sig, strlen (sig));
    return WIRE_OK;
}

zmsg_t *
wire_frames_pop_identities (zmsg_t *msg)
{
    zframe_t *delimiter = wire_frames_delimiter (msg, NULL);
    if (!delimiter)
        return NULL;
    zmsg_t *ids = zmsg_new ();
    while (zmsg_first (msg) != delimiter) {
        zframe_t *id = zmsg_pop (msg);
        zmsg_append (ids, &id);
    }
    return ids;
}

void
wire_frames_push_identities (zmsg_t *msg, zmsg_t *ids)
{
    size_t n = ids ? zmsg_size (ids) : 0;
    if (n == 0)
        return;
    /* zmsg has no reverse walk: collect, then push last to first. */
    zframe_t **frames = wire_xcalloc (n, sizeof *frames);
    size_t i = 0;
    for (zframe_t *f = zmsg_first (ids); f && i < n; f = zmsg_next (ids))
        frames[i++] = f;
    while (i > 0) {
        zframe_t *copy = zframe_dup (frames[--i]);
        zmsg_prepend (msg, &copy);
    }
    free (frames);
}

json_t *
wire_frames_peek (zmsg_t *msg, int which, wire_error_t *err)
{
    wire_error_t dummy;
    if (!err)
        err = &dummy;
    if (which != 0 && which != 1) {
        *err = WIRE_ERR_TOO_FEW_FRAMES; /* no such frame */
        return NULL;
    }
    wire_layout_t layout;
    /* Sizes were checked when the message was verified. */
    wire_limits_t unlimited = {0, 0};
    *err = wire_layout_find (msg, &unlimited, &layout);
    if (*err)
        return NULL;
    return wire_json_parse_frame (layout.parts[which], err);
}

/* ---- self-test ---------------------------------------------------------- */

/* A signed message [ids..] DELIM sig h p m c [bufs..] from strings. */
static zmsg_t *
s_build (const wire_key_t *key, int n_ids, const char *h, const char *p, const char *m, const char *c,
         int n_bufs)
{
    zmsg_t *msg = zmsg_new ();
    for (int i = 0; i < n_ids; i++)
        zmsg_addstrf (msg, "id%d", i);
    zmsg_addstr (msg, WIRE_DELIMITER);
    zframe_t *parts[4] = {zframe_new (h, strlen (h)), zframe_new (p, strlen (p)), zframe_new (m, strlen (m)),
                          zframe_new (c, strlen (c))};
    char sig[WIRE_SIGNATURE_HEX_LEN + 1];
    wire_key_sign (key, parts, sig);
    zmsg_addstr (msg, sig);
    for (int i = 0; i < 4; i++)
        zmsg_append (msg, &parts[i]);
    for (int i = 0; i < n_bufs; i++)
        zmsg_addmem (msg, "\0\xff", 2);
    return msg;
}

static const char *s_header = "{\"msg_id\":\"a\",\"msg_type\":\"t\",\"session\":\"s\","
                              "\"username\":\"u\",\"date\":\"2026-01-01T00:00:00.000000Z\",\"version\":\"5.3\"}";

int
wire_frames_test (bool verbose)
{
    int failures = 0;
    if (verbose)
        printf (" * wire_frames: ");
    wire_key_t *k1 = wire_key_new (NULL, "key-one", 7, NULL);
    wire_key_t *k2 = wire_key_new (NULL, "key-two", 7, NULL);
    wire_key_t *k0 = wire_key_new (NULL, "", 0, NULL);
    wire_replay_t *replay = wire_replay_new (16);

    /* Verify, then replay, then relay to k2 and verify with k2. */
    zmsg_t *msg = s_build (k1, 2, s_header, "{}", "{}", "{\"x\":1}", 1);
    WIRE_CHECK (wire_frames_verify (msg, k1, NULL, NULL) == WIRE_OK);
    WIRE_CHECK (wire_frames_verify (msg, k2, NULL, NULL) == WIRE_ERR_BAD_SIGNATURE);
    WIRE_CHECK (wire_frames_verify (msg, k0, NULL, NULL) == WIRE_OK);
    WIRE_CHECK (wire_frames_verify (msg, k1, replay, NULL) == WIRE_OK);
    WIRE_CHECK (wire_frames_verify (msg, k1, replay, NULL) == WIRE_ERR_DUPLICATE_SIGNATURE);
    zmsg_t *before = zmsg_dup (msg);
    WIRE_CHECK (wire_frames_relay (msg, k2, NULL, k1, NULL) == WIRE_ERR_BAD_SIGNATURE);
    WIRE_CHECK (zmsg_eq (msg, before)); /* unchanged on error */
    WIRE_CHECK (wire_frames_relay (msg, k1, NULL, k2, NULL) == WIRE_OK);
    WIRE_CHECK (wire_frames_verify (msg, k2, NULL, NULL) == WIRE_OK);
    WIRE_CHECK (wire_frames_verify (msg, k1, NULL, NULL) == WIRE_ERR_BAD_SIGNATURE);
    WIRE_CHECK (zmsg_size (msg) == zmsg_size (before));
    /* Same JSON bytes: only the signature frame (index 3) changed. */
    zframe_t *fa = zmsg_first (msg), *fb = zmsg_first (before);
    for (int i = 0; fa && fb; i++, fa = zmsg_next (msg), fb = zmsg_next (before))
        WIRE_CHECK (i == 3 ? !zframe_eq (fa, fb) : zframe_eq (fa, fb));
    /* Relay to an empty key: signature "". */
    WIRE_CHECK (wire_frames_relay (msg, k2, NULL, k0, NULL) == WIRE_OK);
    zmsg_first (msg), zmsg_next (msg), zmsg_next (msg);
    WIRE_CHECK (zframe_size (zmsg_next (msg)) == 0);
    WIRE_CHECK (wire_frames_verify (msg, k1, NULL, NULL) == WIRE_ERR_UNSIGNED);
    zmsg_destroy (&before);

    /* The delimiter and the parts after it, found in place. */
    size_t n_before = 99;
    WIRE_CHECK (wire_frames_delimiter (msg, &n_before) == wire_frames_part (msg, 0) && n_before == 2);
    WIRE_CHECK (zframe_streq (zmsg_next (msg), "") && zframe_size (wire_frames_part (msg, 1)) == 0);
    WIRE_CHECK (zframe_streq (wire_frames_part (msg, 2), s_header));
    WIRE_CHECK (zframe_streq (zmsg_next (msg), "{}")); /* the cursor stays on the part */
    WIRE_CHECK (zframe_size (wire_frames_part (msg, 6)) == 2 && !wire_frames_part (msg, 7));

    /* Identities: pop, peek without them, push back. */
    zmsg_t *ids = wire_frames_pop_identities (msg);
    WIRE_CHECK (ids && zmsg_size (ids) == 2);
    WIRE_CHECK (s_is_delimiter (zmsg_first (msg)));
    wire_error_t err;
    json_t *header = wire_frames_peek (msg, 0, &err);
    WIRE_CHECK (header && err == WIRE_OK && streq (json_string_value (json_object_get (header, "msg_type")), "t"));
    json_decref (header);
    json_t *parent = wire_frames_peek (msg, 1, &err);
    WIRE_CHECK (parent && json_object_size (parent) == 0);
    json_decref (parent);
    WIRE_CHECK (wire_frames_peek (msg, 2, &err) == NULL && err);
    wire_frames_push_identities (msg, ids);
    WIRE_CHECK (zmsg_size (msg) == 9);
    char *first = zmsg_popstr (msg);
    WIRE_CHECK (first && streq (first, "id0"));
    freen (first);
    zmsg_t *ids2 = wire_frames_pop_identities (msg);
    WIRE_CHECK (ids2 && zmsg_size (ids2) == 1);
    zmsg_t *ids3 = wire_frames_pop_identities (msg);
    WIRE_CHECK (ids3 && zmsg_size (ids3) == 0);
    wire_frames_push_identities (msg, ids3);
    wire_frames_push_identities (msg, NULL);
    WIRE_CHECK (zmsg_size (msg) == 7);
    zmsg_destroy (&ids);
    zmsg_destroy (&ids2);
    zmsg_destroy (&ids3);
    zmsg_destroy (&msg);

    /* Layout errors. */
    msg = zmsg_new ();
    zmsg_addstr (msg, "id");
    zmsg_addstr (msg, "sig");
    WIRE_CHECK (wire_frames_verify (msg, k0, NULL, NULL) == WIRE_ERR_NO_DELIMITER);
    n_before = 99;
    WIRE_CHECK (!wire_frames_delimiter (msg, &n_before) && n_before == 2 && !wire_frames_part (msg, 0));
    WIRE_CHECK (wire_frames_pop_identities (msg) == NULL);
    WIRE_CHECK (zmsg_size (msg) == 2);
    WIRE_CHECK (wire_frames_peek (msg, 0, &err) == NULL && err == WIRE_ERR_NO_DELIMITER);
    zmsg_addstr (msg, WIRE_DELIMITER);
    for (int i = 0; i < 4; i++) {
        WIRE_CHECK (wire_frames_verify (msg, k0, NULL, NULL) == WIRE_ERR_TOO_FEW_FRAMES);
        zmsg_addstr (msg, "{}");
    }
    WIRE_CHECK (wire_frames_verify (msg, k0, NULL, NULL) == WIRE_ERR_TOO_FEW_FRAMES);
    zmsg_addstr (msg, "{}");
    WIRE_CHECK (wire_frames_verify (msg, k0, NULL, NULL) == WIRE_OK);
    WIRE_CHECK (wire_frames_verify (msg, k1, NULL, NULL) == WIRE_ERR_BAD_SIGNATURE);
    zmsg_destroy (&msg);

    /* Limits: per frame and per message. */
    msg = s_build (k1, 0, s_header, "{}", "{}", "{\"x\":\"0123456789\"}", 0);
    wire_limits_t frame_limit = {strlen (s_header), 0};
    WIRE_CHECK (wire_frames_verify (msg, k1, NULL, &frame_limit) == WIRE_OK);
    frame_limit.max_frame_bytes--;
    WIRE_CHECK (wire_frames_verify (msg, k1, NULL, &frame_limit) == WIRE_ERR_OVERSIZE);
    size_t total = 0;
    for (zframe_t *f = zmsg_first (msg); f; f = zmsg_next (msg))
        total += zframe_size (f);
    wire_limits_t msg_limit = {0, total};
    WIRE_CHECK (wire_frames_verify (msg, k1, NULL, &msg_limit) == WIRE_OK);
    msg_limit.max_message_bytes--;
    WIRE_CHECK (wire_frames_verify (msg, k1, NULL, &msg_limit) == WIRE_ERR_OVERSIZE);
    WIRE_CHECK (wire_frames_relay (msg, k1, NULL, k2, &msg_limit) == WIRE_ERR_OVERSIZE);
    zmsg_destroy (&msg);

    /* The default: 64 MiB per frame and per message (NULL limits). */
    WIRE_CHECK (wire_limits_default.max_frame_bytes == 64u << 20);
    WIRE_CHECK (wire_limits_default.max_message_bytes == 64u << 20);
    msg = s_build (k0, 0, s_header, "{}", "{}", "{}", 0);
    zframe_t *huge = zframe_new (NULL, (64u << 20) + 1);
    zmsg_append (msg, &huge);
    WIRE_CHECK (wire_frames_verify (msg, k0, NULL, NULL) == WIRE_ERR_OVERSIZE);
    wire_limits_t unlimited = {0, 0};
    WIRE_CHECK (wire_frames_verify (msg, k0, NULL, &unlimited) == WIRE_OK);
    zmsg_destroy (&msg);

    /* peek reports bad JSON in the frame it reads. */
    msg = s_build (k1, 0, "{", "[]", "{}", "{}", 0);
    WIRE_CHECK (wire_frames_peek (msg, 0, &err) == NULL && err == WIRE_ERR_INVALID_JSON);
    WIRE_CHECK (wire_frames_peek (msg, 1, NULL) == NULL);
    WIRE_CHECK (wire_frames_peek (msg, 1, &err) == NULL && err == WIRE_ERR_NOT_OBJECT);
    zmsg_destroy (&msg);

    wire_replay_destroy (&replay);
    wire_key_destroy (&k0);
    wire_key_destroy (&k1);
    wire_key_destroy (&k2);
    if (verbose)
        printf ("%s\n", failures ? "FAILED" : "OK");
    return failures;
}
