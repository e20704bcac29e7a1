/*  wire_msg.c - decoded messages: build, decode (verify first), encode. */
#include "wire_private.h"
#include <string.h>

/* The header fields every message must carry, as strings (messaging spec
   "Message Header"; jupyter_client's msg_header always writes them). `date`
   may be absent: some clients leave it out of replies (input_reply), and
   jupyter_client reads a header without it. When present it is a string. */
static const char *const s_header_fields[] = {"msg_id", "msg_type", "session", "username", "version"};

static wire_msg_t *
s_msg_alloc (void)
{
    wire_msg_t *self = wire_xcalloc (1, sizeof *self);
    self->identities = zmsg_new ();
    self->buffers = zmsg_new ();
    return self;
}

wire_msg_t *
wire_msg_new (const char *session, const char *msg_type, const wire_msg_t *parent)
{
    wire_msg_t *self = s_msg_alloc ();
    char msg_id[WIRE_ID_SIZE], session_id[WIRE_ID_SIZE], date[32];
    wire_id_new (msg_id);
    if (!session) {
        wire_id_new (session_id);
        session = session_id;
    }
    wire_date_now (date);
    self->header = json_pack ("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", msg_id, "session", session, "username",
                              "kennel", "date", date, "msg_type", msg_type ? msg_type : "", "version",
                              WIRE_PROTOCOL_VERSION);
    if (parent) {
        self->parent_header = json_deep_copy (parent->header);
        zmsg_destroy (&self->identities);
        self->identities = zmsg_dup (parent->identities);
    } else {
        self->parent_header = json_object ();
    }
    self->metadata = json_object ();
    self->content = json_object ();
    if (!self->header || !self->parent_header || !self->metadata || !self->content || !self->identities) {
        wire_msg_destroy (&self);
        return NULL;
    }
    return self;
}

void
wire_msg_destroy (wire_msg_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    wire_msg_t *self = *self_p;
    zmsg_destroy (&self->identities);
    json_decref (self->header);
    json_decref (self->parent_header);
    json_decref (self->metadata);
    json_decref (self->content);
    zmsg_destroy (&self->buffers);
    free (self);
    *self_p = NULL;
}

static wire_error_t
s_check_header (const json_t *header)
{
    for (size_t i = 0; i < sizeof s_header_fields / sizeof s_header_fields[0]; i++)
        if (!json_is_string (json_object_get (header, s_header_fields[i])))
            return WIRE_ERR_MISSING_HEADER_FIELD;
    const json_t *date = json_object_get (header, "date");
    if (date && !json_is_string (date))
        return WIRE_ERR_MISSING_HEADER_FIELD;
    return WIRE_OK;
}

/* Parses the four JSON frames into self; *err on the first bad one. */
static wire_error_t
s_parse_parts (wire_msg_t *self, zframe_t *const parts[4])
{
    json_t **slots[4] = {&self->header, &self->parent_header, &self->metadata, &self->content};
    wire_error_t err;
    for (int i = 0; i < 4; i++) {
        *slots[i] = wire_json_parse_frame (parts[i], &err);
        if (err)
            return err;
    }
    return s_check_header (self->header);
}

wire_msg_t *
wire_msg_decode (zmsg_t **msg_p, const wire_key_t *key, wire_replay_t *replay, const wire_limits_t *limits,
                 wire_error_t *err)
{
    wire_error_t dummy;
    if (!err)
        err = &dummy;
    zmsg_t *msg = msg_p ? *msg_p : NULL;
    if (!msg) {
        *err = WIRE_ERR_TOO_FEW_FRAMES;
        return NULL;
    }
    *msg_p = NULL;
    wire_msg_t *self = NULL;
    /* The signature is checked over the raw frames before any JSON parser
       sees bytes from a possibly hostile peer. */
    *err = wire_frames_verify (msg, key, replay, limits);
    if (*err == WIRE_OK) {
        wire_layout_t layout;
        wire_limits_t unlimited = {0, 0};
        wire_layout_find (msg, &unlimited, &layout);
        self = s_msg_alloc ();
        *err = s_parse_parts (self, layout.parts);
    }
    if (*err) {
        wire_msg_destroy (&self);
        zmsg_destroy (&msg);
        return NULL;
    }
    /* Move the frames: identities, then drop delimiter + 5, keep buffers. */
    zmsg_destroy (&self->identities);
    self->identities = wire_frames_pop_identities (msg);
    for (int i = 0; i < 6; i++) {
        zframe_t *frame = zmsg_pop (msg);
        zframe_destroy (&frame);
    }
    zmsg_destroy (&self->buffers);
    self->buffers = msg;
    return self;
}

zmsg_t *
wire_msg_encode (const wire_msg_t *self, const wire_key_t *key)
{
    if (!self)
        return NULL;
    zframe_t *parts[4] = {wire_json_frame (self->header), wire_json_frame (self->parent_header),
                          wire_json_frame (self->metadata), wire_json_frame (self->content)};
    zmsg_t *msg = NULL;
    if (parts[0] && parts[1] && parts[2] && parts[3]) {
        char sig[WIRE_SIGNATURE_HEX_LEN + 1];
        wire_key_sign (key, parts, sig);
        msg = self->identities ? zmsg_dup (self->identities) : zmsg_new ();
        zmsg_addstr (msg, WIRE_DELIMITER);
        zmsg_addstr (msg, sig);
        for (int i = 0; i < 4; i++)
            zmsg_append (msg, &parts[i]);
        if (self->buffers)
            for (zframe_t *f = zmsg_first (self->buffers); f; f = zmsg_next (self->buffers)) {
                zframe_t *copy = zframe_dup (f);
                zmsg_append (msg, &copy);
            }
    }
    for (int i = 0; i < 4; i++)
        zframe_destroy (&parts[i]);
    return msg;
}

int
wire_msg_send (const wire_msg_t *self, void *socket, const wire_key_t *key)
{
    zmsg_t *msg = wire_msg_encode (self, key);
    if (!msg)
        return -1;
    int rc = zmsg_send (&msg, socket);
    zmsg_destroy (&msg); /* still here only when the send failed */
    return rc == 0 ? 0 : -1;
}

static const char *
s_header_string (const wire_msg_t *self, const char *field)
{
    const char *value = self ? json_string_value (json_object_get (self->header, field)) : NULL;
    return value ? value : "";
}

const char *
wire_msg_type (const wire_msg_t *self)
{
    return s_header_string (self, "msg_type");
}

const char *
wire_msg_id (const wire_msg_t *self)
{
    return s_header_string (self, "msg_id");
}

void
wire_msg_set_content (wire_msg_t *self, json_t *content)
{
    if (!self) {
        json_decref (content); /* it was ours to take */
        return;
    }
    json_decref (self->content);
    self->content = content ? content : json_object ();
}

/* ---- self-test ---------------------------------------------------------- */

static const char *s_good_header = "{\"msg_id\":\"m1\",\"msg_type\":\"execute_request\",\"session\":\"s1\","
                                   "\"username\":\"u\",\"date\":\"2026-01-01T00:00:00.000000Z\",\"version\":\"5.3\"}";

/* [id] DELIM sig h p m c, signed with key (or with sig when not NULL). */
static zmsg_t *
s_frames (const wire_key_t *key, const char *sig, const char *h, size_t h_len, const char *c)
{
    zmsg_t *msg = zmsg_new ();
    zmsg_addstr (msg, "client-1");
    zmsg_addstr (msg, WIRE_DELIMITER);
    zframe_t *parts[4] = {zframe_new (h, h_len), zframe_new ("{}", 2), zframe_new ("{}", 2),
                          zframe_new (c, strlen (c))};
    char computed[WIRE_SIGNATURE_HEX_LEN + 1];
    wire_key_sign (key, parts, computed);
    zmsg_addstr (msg, sig ? sig : computed);
    for (int i = 0; i < 4; i++)
        zmsg_append (msg, &parts[i]);
    return msg;
}

static wire_error_t
s_decode_error (zmsg_t *msg, const wire_key_t *key, wire_replay_t *replay, const wire_limits_t *limits)
{
    wire_error_t err;
    wire_msg_t *decoded = wire_msg_decode (&msg, key, replay, limits, &err);
    bool consistent = (decoded == NULL) == (err != WIRE_OK) && msg == NULL;
    wire_msg_destroy (&decoded);
    return consistent ? err : WIRE_ERR_COUNT_;
}

/* The bad-input table: one case for every way a message can be bad. */
static int
s_bad_input_table (void)
{
    int failures = 0;
    wire_key_t *key = wire_key_new (NULL, "secret", 6, NULL);
    wire_replay_t *replay = wire_replay_new (8);
    size_t hl = strlen (s_good_header);
    const char *no_date = "{\"msg_id\":\"m\",\"msg_type\":\"t\",\"session\":\"s\",\"username\":\"u\",\"version\":\"5.3\"}";
    const char *int_id = "{\"msg_id\":1,\"msg_type\":\"t\",\"session\":\"s\",\"username\":\"u\","
                         "\"date\":\"d\",\"version\":\"5.3\"}";
    const char *int_date = "{\"msg_id\":\"m\",\"msg_type\":\"t\",\"session\":\"s\",\"username\":\"u\","
                           "\"date\":1,\"version\":\"5.3\"}";
    wire_limits_t small = {64, 0};

    zmsg_t *msg = s_frames (key, NULL, s_good_header, hl, "{}");
    WIRE_CHECK (s_decode_error (msg, key, replay, NULL) == WIRE_OK);
    msg = s_frames (key, NULL, s_good_header, hl, "{}");
    WIRE_CHECK (s_decode_error (msg, key, replay, NULL) == WIRE_ERR_DUPLICATE_SIGNATURE);

    msg = s_frames (key, NULL, s_good_header, hl, "{}");
    zframe_t *delim = zmsg_first (msg);
    delim = zmsg_next (msg);
    zframe_reset (delim, "<IDS|MSG", 8);
    WIRE_CHECK (s_decode_error (msg, key, NULL, NULL) == WIRE_ERR_NO_DELIMITER);

    msg = s_frames (key, NULL, s_good_header, hl, "{}");
    zframe_t *last = zmsg_last (msg);
    zmsg_remove (msg, last);
    zframe_destroy (&last);
    WIRE_CHECK (s_decode_error (msg, key, NULL, NULL) == WIRE_ERR_TOO_FEW_FRAMES);

    msg = s_frames (key, "", s_good_header, hl, "{}");
    WIRE_CHECK (s_decode_error (msg, key, NULL, NULL) == WIRE_ERR_UNSIGNED);
    msg = s_frames (key, "0123", s_good_header, hl, "{}");
    WIRE_CHECK (s_decode_error (msg, key, NULL, NULL) == WIRE_ERR_BAD_SIGNATURE);
    msg = s_frames (key, "0000000000000000000000000000000000000000000000000000000000000000", s_good_header, hl,
                    "{}");
    WIRE_CHECK (s_decode_error (msg, key, NULL, NULL) == WIRE_ERR_BAD_SIGNATURE);

    msg = s_frames (key, NULL, s_good_header, hl, "{}");
    WIRE_CHECK (s_decode_error (msg, key, NULL, &small) == WIRE_ERR_OVERSIZE);

    msg = s_frames (key, NULL, s_good_header, hl, "{\"text\":\"\xc3\x28\"}");
    WIRE_CHECK (s_decode_error (msg, key, NULL, NULL) == WIRE_ERR_NOT_UTF8);
    msg = s_frames (key, NULL, s_good_header, hl, "{\"text\":");
    WIRE_CHECK (s_decode_error (msg, key, NULL, NULL) == WIRE_ERR_INVALID_JSON);
    msg = s_frames (key, NULL, s_good_header, hl, "[\"text\"]");
    WIRE_CHECK (s_decode_error (msg, key, NULL, NULL) == WIRE_ERR_NOT_OBJECT);
    msg = s_frames (key, NULL, no_date, strlen (no_date), "{}");
    WIRE_CHECK (s_decode_error (msg, key, NULL, NULL) == WIRE_OK);
    msg = s_frames (key, NULL, int_date, strlen (int_date), "{}");
    WIRE_CHECK (s_decode_error (msg, key, NULL, NULL) == WIRE_ERR_MISSING_HEADER_FIELD);
    msg = s_frames (key, NULL, int_id, strlen (int_id), "{}");
    WIRE_CHECK (s_decode_error (msg, key, NULL, NULL) == WIRE_ERR_MISSING_HEADER_FIELD);

    /* The rest of the codes come from keys and connection files. */
    wire_error_t err;
    WIRE_CHECK (wire_key_new ("hmac-sha512", "k", 1, &err) == NULL && err == WIRE_ERR_BAD_SCHEME);
    WIRE_CHECK (wire_connection_load ("/nonexistent/kernel.json", &err, NULL) == NULL
                && err == WIRE_ERR_BAD_CONNECTION_FILE);
    wire_connection_t *conn = wire_connection_new ();
    WIRE_CHECK (wire_connection_save (conn, "/nonexistent/kernel.json") == -1);
    wire_connection_destroy (&conn);

    /* A NULL message is an error too, not a crash. */
    WIRE_CHECK (wire_msg_decode (NULL, key, NULL, NULL, &err) == NULL && err == WIRE_ERR_TOO_FEW_FRAMES);
    msg = NULL;
    WIRE_CHECK (wire_msg_decode (&msg, key, NULL, NULL, NULL) == NULL);
    wire_replay_destroy (&replay);
    wire_key_destroy (&key);
    return failures;
}

/* A message serialized by jupyter_client 7.4.9's Session.serialize (key
   below, ident route-1): C must verify and decode it as sent. */
static int
s_jupyter_vector (void)
{
    int failures = 0;
    const char *key_text = "a0436f6c-1916-498b-8eb9-e81ab9368e84";
    const char *sig = "e46dc56b063bd90af5ad3d51d8a18eb0732cd4e3e6964ac31795fe11d7a42883";
    const char *header = "{\"msg_id\": \"f00dcafe-0123456789abcdef01234567_1234_0\", \"msg_type\": "
                         "\"execute_request\", \"username\": \"alice\", \"session\": "
                         "\"f00dcafe-0123456789abcdef01234567\", \"date\": \"2026-01-01T12:00:00.000042Z\", "
                         "\"version\": \"5.3\"}";
    const char *content = "{\"code\": \"print(\\\"caf\xc3\xa9\\\")\", \"silent\": false}";
    wire_key_t *key = wire_key_new (WIRE_SIGNATURE_SCHEME, key_text, strlen (key_text), NULL);
    zmsg_t *msg = zmsg_new ();
    zmsg_addstr (msg, "route-1");
    zmsg_addstr (msg, WIRE_DELIMITER);
    zmsg_addstr (msg, sig);
    zmsg_addstr (msg, header);
    zmsg_addstr (msg, "{}");
    zmsg_addstr (msg, "{}");
    zmsg_addstr (msg, content);
    zmsg_t *relay = zmsg_dup (msg);
    WIRE_CHECK (wire_frames_relay (relay, key, NULL, key, NULL) == WIRE_OK);
    WIRE_CHECK (zmsg_eq (relay, msg)); /* C's HMAC of the same bytes is jupyter's */
    zmsg_destroy (&relay);
    wire_error_t err;
    wire_msg_t *decoded = wire_msg_decode (&msg, key, NULL, NULL, &err);
    WIRE_CHECK (decoded && err == WIRE_OK);
    if (decoded) {
        WIRE_CHECK (streq (wire_msg_type (decoded), "execute_request"));
        WIRE_CHECK (streq (wire_msg_id (decoded), "f00dcafe-0123456789abcdef01234567_1234_0"));
        WIRE_CHECK (streq (json_string_value (json_object_get (decoded->content, "code")), "print(\"caf\xc3\xa9\")"));
        WIRE_CHECK (json_is_false (json_object_get (decoded->content, "silent")));
        WIRE_CHECK (zframe_streq (zmsg_first (decoded->identities), "route-1"));
    }
    wire_msg_destroy (&decoded);
    wire_key_destroy (&key);
    return failures;
}

int
wire_msg_test (bool verbose)
{
    int failures = 0;
    if (verbose)
        printf (" * wire_msg: ");
    wire_key_t *key = wire_key_new (NULL, "secret", 6, NULL);

    /* A request with identities and a buffer, encoded and decoded. */
    wire_msg_t *request = wire_msg_new ("session-1", "execute_request", NULL);
    WIRE_CHECK (request && streq (wire_msg_type (request), "execute_request"));
    WIRE_CHECK (strlen (wire_msg_id (request)) == 32);
    WIRE_CHECK (streq (json_string_value (json_object_get (request->header, "version")), "5.3"));
    WIRE_CHECK (streq (json_string_value (json_object_get (request->header, "session")), "session-1"));
    WIRE_CHECK (streq (json_string_value (json_object_get (request->header, "username")), "kennel"));
    WIRE_CHECK (wire_date_parse (json_string_value (json_object_get (request->header, "date")), NULL));
    WIRE_CHECK (json_object_size (request->parent_header) == 0);
    zmsg_addstr (request->identities, "router-id");
    zmsg_addmem (request->buffers, "\0\1\2", 3);
    wire_msg_set_content (request, json_pack ("{s:s, s:b}", "code", "print('\xc3\xa9')", "silent", 0));
    zmsg_t *frames = wire_msg_encode (request, key);
    WIRE_CHECK (frames && zmsg_size (frames) == 1 + 1 + 5 + 1);
    WIRE_CHECK (wire_frames_verify (frames, key, NULL, NULL) == WIRE_OK);
    /* Compact UTF-8 JSON on the wire. */
    zmsg_first (frames);
    for (int i = 0; i < 5; i++)
        zmsg_next (frames);
    zframe_t *content = zmsg_next (frames);
    const char *expect = "{\"code\":\"print('\xc3\xa9')\",\"silent\":false}";
    WIRE_CHECK (content && zframe_size (content) == strlen (expect)
                && memcmp (zframe_data (content), expect, strlen (expect)) == 0);

    wire_error_t err;
    wire_msg_t *decoded = wire_msg_decode (&frames, key, NULL, NULL, &err);
    WIRE_CHECK (decoded && err == WIRE_OK && frames == NULL);
    if (decoded) {
        WIRE_CHECK (json_equal (decoded->header, request->header));
        WIRE_CHECK (json_equal (decoded->content, request->content));
        WIRE_CHECK (zmsg_size (decoded->identities) == 1 && zmsg_size (decoded->buffers) == 1);
        WIRE_CHECK (zframe_streq (zmsg_first (decoded->identities), "router-id"));
        WIRE_CHECK (zframe_size (zmsg_first (decoded->buffers)) == 3);
    }

    /* A reply: parent header and identities from the request, fresh id. */
    wire_msg_t *reply = wire_msg_new (NULL, "execute_reply", decoded);
    WIRE_CHECK (reply && json_equal (reply->parent_header, request->header));
    WIRE_CHECK (reply && !streq (wire_msg_id (reply), wire_msg_id (request)));
    WIRE_CHECK (reply && zmsg_size (reply->identities) == 1 && zmsg_size (reply->buffers) == 0);
    WIRE_CHECK (reply && strlen (json_string_value (json_object_get (reply->header, "session"))) == 32);
    wire_msg_set_content (reply, NULL);
    WIRE_CHECK (json_is_object (reply->content) && json_object_size (reply->content) == 0);

    /* An empty key: signature "", and decoding with no key accepts it. */
    wire_key_t *none = wire_key_new (NULL, "", 0, NULL);
    frames = wire_msg_encode (reply, none);
    zmsg_first (frames), zmsg_next (frames);
    WIRE_CHECK (zframe_size (zmsg_next (frames)) == 0);
    wire_msg_t *again = wire_msg_decode (&frames, none, NULL, NULL, &err);
    WIRE_CHECK (again && err == WIRE_OK);
    WIRE_CHECK (again && json_equal (again->parent_header, request->header));
    wire_msg_destroy (&again);

    /* wire_msg_send over a real socket pair. */
    zsock_t *server = zsock_new_pair ("@inproc://wire-msg-test");
    zsock_t *client = zsock_new_pair (">inproc://wire-msg-test");
    zmsg_destroy (&reply->identities);
    reply->identities = zmsg_new ();
    WIRE_CHECK (wire_msg_send (reply, client, key) == 0);
    zsock_set_rcvtimeo (server, 5000); /* a failure, not a hang */
    zmsg_t *received = zmsg_recv (server);
    again = wire_msg_decode (&received, key, NULL, NULL, &err);
    WIRE_CHECK (again && streq (wire_msg_id (again), wire_msg_id (reply)));
    wire_msg_destroy (&again);
    zsock_destroy (&client);
    zsock_destroy (&server);

    /* Accessors on a message without the fields. */
    json_object_clear (reply->header);
    WIRE_CHECK (streq (wire_msg_type (reply), "") && streq (wire_msg_id (reply), ""));
    WIRE_CHECK (streq (wire_msg_type (NULL), ""));
    WIRE_CHECK (wire_msg_encode (NULL, key) == NULL);
    wire_msg_set_content (NULL, json_object ()); /* no leak, no crash */

    wire_msg_destroy (&reply);
    wire_msg_destroy (&decoded);
    wire_msg_destroy (&request);
    WIRE_CHECK (request == NULL);
    wire_msg_destroy (&request);
    wire_key_destroy (&none);
    wire_key_destroy (&key);

    failures += s_bad_input_table ();
    failures += s_jupyter_vector ();
    if (verbose)
        printf ("%s\n", failures ? "FAILED" : "OK");
    return failures;
}
