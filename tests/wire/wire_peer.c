/*  wire_peer.c - the C side of the libwire interop tests (test_interop.py).

    wire_peer serve CONNECTION_FILE [RELAY_KEY]
        Loads a connection file written by jupyter_client, binds a ROUTER on
        its shell endpoint, prints "ready" and answers every message:
        - "relay_request": wire_frames_relay with the file's key in and
          RELAY_KEY out, the relayed frames sent straight back;
        - "peer_exit_request": a reply, then exit 0;
        - anything else: wire_msg_decode, then "<type>_reply" built and
          signed in C, echoing what C parsed (content, header, buffers);
        - a message libwire rejects: "wire_error" {"error": "<name>"}.
        Exits 3 when nothing arrives for 20 s, so a broken test cannot hang.

    wire_peer write-connection PATH TRANSPORT IP KEY KERNEL_NAME SHELL IOPUB STDIN CONTROL HB
        Writes a connection file with wire_connection_save.

    wire_peer parse-date DATE...
        Prints "ok SECONDS MICROSECONDS" (UTC) or "bad" for each DATE.

    wire_peer read-connection PATH
        Loads a connection file and prints it (wire_connection_to_json) and
        its five endpoints, one per line; exit 1 with the error otherwise.
*/
#include "wire.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sends msg_type to ids, signed with key, with content (taken). */
static void
s_send (zsock_t *sock, zmsg_t *ids, const char *session, const wire_msg_t *parent, const char *msg_type,
        json_t *content, const wire_key_t *key)
{
    wire_msg_t *reply = wire_msg_new (session, msg_type, parent);
    zmsg_destroy (&reply->identities);
    reply->identities = zmsg_dup (ids);
    wire_msg_set_content (reply, content);
    if (wire_msg_send (reply, sock, key) != 0)
        fprintf (stderr, "wire_peer: send %s failed\n", msg_type);
    wire_msg_destroy (&reply);
}

/* The reply type jupyter uses: foo_request -> foo_reply. */
static char *
s_reply_type (const char *request)
{
    size_t len = strlen (request);
    const char *suffix = "_request";
    if (len > strlen (suffix) && streq (request + len - strlen (suffix), suffix))
        len -= strlen (suffix);
    char *type = malloc (len + sizeof "_reply");
    if (!type)
        abort ();
    memcpy (type, request, len);
    strcpy (type + len, "_reply");
    return type;
}

/* An echo of what C decoded, for Python to compare with what it sent. */
static json_t *
s_echo (const wire_msg_t *msg)
{
    json_t *buffers = json_array ();
    for (zframe_t *f = zmsg_first (msg->buffers); f; f = zmsg_next (msg->buffers)) {
        char *hex = zframe_strhex (f);
        json_array_append_new (buffers, json_string (hex));
        free (hex);
    }
    const char *date = json_string_value (json_object_get (msg->header, "date"));
    struct timespec ts = {0, 0};
    bool date_ok = date && wire_date_parse (date, &ts);
    return json_pack ("{s:s, s:O, s:O, s:O, s:O, s:o, s:i, s:b, s:I, s:i, s:s}", "status", "ok", "header",
                      msg->header, "parent_header", msg->parent_header, "metadata", msg->metadata, "content",
                      msg->content, "buffers", buffers, "identities", (int) zmsg_size (msg->identities),
                      "date_ok", date_ok, "date_sec", (json_int_t) ts.tv_sec, "date_usec",
                      (int) (ts.tv_nsec / 1000), "text", "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x90\xb6");
}

/* The peer's state while serving. */
typedef struct {
    zsock_t *router;
    wire_key_t *key;     /* the connection file's */
    wire_key_t *key_out; /* relay target, or NULL */
    wire_replay_t *replay;
    char session[33];
} peer_t;

/* The routing frames to answer msg with, even when it has no delimiter
   (then the ROUTER's own identity frame is the first). */
static zmsg_t *
s_reply_ids (zmsg_t *msg)
{
    zmsg_t *copy = zmsg_dup (msg);
    zmsg_t *ids = wire_frames_pop_identities (copy);
    zmsg_destroy (&copy);
    if (!ids) {
        ids = zmsg_new ();
        zframe_t *first = zmsg_first (msg);
        if (first) {
            zframe_t *id = zframe_dup (first);
            zmsg_append (ids, &id);
        }
    }
    return ids;
}

/* Relays msg to key_out and sends the same frames back. */
static wire_error_t
s_relay (peer_t *self, zmsg_t **msg_p)
{
    wire_error_t err = wire_frames_relay (*msg_p, self->key, self->replay, self->key_out, NULL);
    if (err == WIRE_OK)
        zmsg_send (msg_p, self->router);
    zmsg_destroy (msg_p);
    return err;
}

/* Decodes msg and answers with an echo; *quit on peer_exit_request. */
static wire_error_t
s_answer (peer_t *self, zmsg_t **msg_p, bool *quit)
{
    wire_error_t err;
    wire_msg_t *request = wire_msg_decode (msg_p, self->key, self->replay, NULL, &err);
    if (!request)
        return err;
    *quit = streq (wire_msg_type (request), "peer_exit_request");
    char *type = s_reply_type (wire_msg_type (request));
    wire_msg_t *reply = wire_msg_new (self->session, type, request);
    wire_msg_set_content (reply, s_echo (request));
    /* Buffers go back as they came: raw frames after content. */
    zmsg_destroy (&reply->buffers);
    reply->buffers = zmsg_dup (request->buffers);
    if (wire_msg_send (reply, self->router, self->key) != 0)
        fprintf (stderr, "wire_peer: send %s failed\n", type);
    wire_msg_destroy (&reply);
    wire_msg_destroy (&request);
    free (type);
    return WIRE_OK;
}

/* Handles one message; false when the peer should exit. */
static bool
s_handle (peer_t *self, zmsg_t *msg)
{
    zmsg_t *ids = s_reply_ids (msg);
    /* Routing by an unverified peek, as the gateway does; relay verifies. */
    json_t *header = wire_frames_peek (msg, 0, NULL);
    const char *type = json_string_value (json_object_get (header, "msg_type"));
    bool relay = self->key_out && type && streq (type, "relay_request");
    json_decref (header);
    bool quit = false;
    wire_error_t err = relay ? s_relay (self, &msg) : s_answer (self, &msg, &quit);
    if (err)
        s_send (self->router, ids, self->session, NULL, "wire_error",
                json_pack ("{s:s}", "error", wire_error_name (err)), self->key);
    zmsg_destroy (&ids);
    return !quit;
}

static int
s_serve (const char *path, const char *relay_key)
{
    wire_error_t err;
    char *why = NULL;
    wire_connection_t *conn = wire_connection_load (path, &err, &why);
    if (!conn) {
        fprintf (stderr, "wire_peer: %s\n", why);
        free (why);
        return 1;
    }
    peer_t self = {.router = zsock_new (ZMQ_ROUTER), .replay = wire_replay_new (1024)};
    self.key = wire_connection_key (conn, &err);
    if (relay_key)
        self.key_out = wire_key_new (NULL, relay_key, strlen (relay_key), &err);
    wire_id_new (self.session);
    char *endpoint = wire_connection_endpoint (conn, WIRE_SHELL);
    int rc = 1;
    if (!self.key || (relay_key && !self.key_out) || zsock_bind (self.router, "%s", endpoint) < 0) {
        fprintf (stderr, "wire_peer: cannot bind %s or bad key\n", endpoint);
        goto done;
    }
    zsock_set_rcvtimeo (self.router, 20000); /* a broken test must not hang */
    printf ("ready %s\n", endpoint);
    fflush (stdout);
    rc = 3;
    zmsg_t *msg;
    while ((msg = zmsg_recv (self.router)))
        if (!s_handle (&self, msg)) {
            rc = 0;
            break;
        }
done:
    wire_replay_destroy (&self.replay);
    zsock_destroy (&self.router);
    free (endpoint);
    wire_key_destroy (&self.key);
    wire_key_destroy (&self.key_out);
    wire_connection_destroy (&conn);
    return rc;
}

static int
s_write_connection (char *argv[])
{
    wire_connection_t *conn = wire_connection_new ();
    char **fields[] = {&conn->transport, &conn->ip, &conn->key, &conn->kernel_name};
    for (int i = 0; i < 4; i++) {
        free (*fields[i]);
        *fields[i] = strdup (argv[1 + i]);
    }
    conn->shell_port = atoi (argv[5]);
    conn->iopub_port = atoi (argv[6]);
    conn->stdin_port = atoi (argv[7]);
    conn->control_port = atoi (argv[8]);
    conn->hb_port = atoi (argv[9]);
    int rc = wire_connection_save (conn, argv[0]);
    if (rc)
        perror ("wire_peer: save");
    wire_connection_destroy (&conn);
    return rc ? 1 : 0;
}

static int
s_read_connection (const char *path)
{
    wire_error_t err;
    char *why = NULL;
    wire_connection_t *conn = wire_connection_load (path, &err, &why);
    if (!conn) {
        printf ("%s: %s\n", wire_error_name (err), why);
        free (why);
        return 1;
    }
    json_t *json = wire_connection_to_json (conn);
    char *text = json_dumps (json, JSON_COMPACT);
    printf ("%s\n", text);
    free (text);
    json_decref (json);
    for (int c = 0; c < WIRE_CHANNEL_COUNT_; c++) {
        char *url = wire_connection_endpoint (conn, (wire_channel_t) c);
        printf ("%s\n", url);
        free (url);
    }
    wire_connection_destroy (&conn);
    return 0;
}

/* Prints "ok SECONDS MICROSECONDS" or "bad" for each date. */
static int
s_parse_dates (int n, char *dates[])
{
    for (int i = 0; i < n; i++) {
        struct timespec ts;
        if (wire_date_parse (dates[i], &ts))
            printf ("ok %lld %ld\n", (long long) ts.tv_sec, ts.tv_nsec / 1000);
        else
            printf ("bad\n");
    }
    return 0;
}

int
main (int argc, char *argv[])
{
    if (argc >= 3 && streq (argv[1], "serve"))
        return s_serve (argv[2], argc >= 4 ? argv[3] : NULL);
    if (argc == 12 && streq (argv[1], "write-connection"))
        return s_write_connection (argv + 2);
    if (argc == 3 && streq (argv[1], "read-connection"))
        return s_read_connection (argv[2]);
    if (argc >= 2 && streq (argv[1], "parse-date"))
        return s_parse_dates (argc - 2, argv + 2);
    fprintf (stderr, "usage: wire_peer serve FILE [RELAY_KEY] | write-connection ... | read-connection FILE\n");
    return 2;
}
