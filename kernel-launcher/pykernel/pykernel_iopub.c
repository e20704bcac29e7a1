/*  pykernel_iopub.c - the iopub PUB socket, shared by the main thread
    (Python's publish), the output thread (captured fd output) and the control
    thread (status around control requests). A ZeroMQ socket is not
    thread-safe, so every send happens under one mutex. */
#include "pykernel_internal.h"

#include <stdlib.h>
#include <string.h>

struct pykernel_iopub {
    pthread_mutex_t lock;
    zsock_t *sock;
    wire_key_t *key;     /* a private copy */
    char session[64];
    json_t *parent;      /* header of the current request, or NULL */
    size_t sent_bytes;
};

pykernel_iopub_t *
pykernel_iopub_new (zsock_t *sock, const wire_key_t *key, const char *session)
{
    pykernel_iopub_t *self = wire_xcalloc (1, sizeof *self);
    wire_error_t err;
    const char *text = wire_key_text (key);
    self->key = wire_key_new (NULL, text, strlen (text), &err);
    if (!self->key) {
        free (self);
        return NULL;
    }
    pthread_mutex_init (&self->lock, NULL);
    self->sock = sock;
    snprintf (self->session, sizeof self->session, "%s", session);
    return self;
}

void
pykernel_iopub_destroy (pykernel_iopub_t **self_p)
{
    pykernel_iopub_t *self = *self_p;
    if (!self)
        return;
    zsock_destroy (&self->sock);
    wire_key_destroy (&self->key);
    json_decref (self->parent);
    pthread_mutex_destroy (&self->lock);
    free (self);
    *self_p = NULL;
}

void
pykernel_iopub_set_parent (pykernel_iopub_t *self, const json_t *parent_header)
{
    json_t *copy = parent_header ? json_deep_copy (parent_header) : NULL;
    pthread_mutex_lock (&self->lock);
    json_decref (self->parent);
    self->parent = copy;
    pthread_mutex_unlock (&self->lock);
}

int
pykernel_iopub_send (pykernel_iopub_t *self, const char *msg_type, json_t *content, json_t *metadata,
                     const json_t *parent_header)
{
    return pykernel_iopub_send_buffers (self, msg_type, content, metadata, parent_header, NULL);
}

int
pykernel_iopub_send_buffers (pykernel_iopub_t *self, const char *msg_type, json_t *content, json_t *metadata,
                             const json_t *parent_header, zmsg_t **buffers_p)
{
    wire_msg_t *msg = wire_msg_new (self->session, msg_type, NULL);
    if (!msg) {
        json_decref (content);
        json_decref (metadata);
        if (buffers_p)
            zmsg_destroy (buffers_p);
        return -1;
    }
    wire_msg_set_content (msg, content ? content : json_object ());
    if (metadata) {
        json_decref (msg->metadata);
        msg->metadata = metadata;
    }
    if (buffers_p && *buffers_p) {
        zmsg_destroy (&msg->buffers);
        msg->buffers = *buffers_p;
        *buffers_p = NULL;
    }
    /* the topic frame, as ipykernel names it: kernel.<session>.<msg_type> */
    char topic[256];
    snprintf (topic, sizeof topic, "kernel.%s.%s", self->session, msg_type);
    zmsg_addstr (msg->identities, topic);

    pthread_mutex_lock (&self->lock);
    const json_t *parent = parent_header ? parent_header : self->parent;
    if (parent) {
        json_decref (msg->parent_header);
        msg->parent_header = json_deep_copy (parent);
    }
    int rc = -1;
    zmsg_t *frames = wire_msg_encode (msg, self->key);
    if (frames) {
        self->sent_bytes += zmsg_content_size (frames);
        /* A send handles the socket's pending commands (a subscriber that
           has just connected, its subscription) at most once per ~1 ms;
           ZMQ_EVENTS handles them now. Without it a status sent just after
           a new SUB's subscription arrived was dropped for that SUB: the
           gateway's handshake with a claimed pooled kernel then waited for
           its next probe (9 of 20 warm starts; 2 of 20 with this). One
           poll(2) per status message. */
        if (strcmp (msg_type, "status") == 0)
            zsock_events (self->sock);
        rc = zmsg_send (&frames, self->sock);
        zmsg_destroy (&frames);
    }
    pthread_mutex_unlock (&self->lock);
    if (rc != 0)
        pykernel_log ("iopub: sending %s failed", msg_type);
    wire_msg_destroy (&msg);
    return rc;
}

int
pykernel_iopub_status (pykernel_iopub_t *self, const char *state, const json_t *parent_header)
{
    return pykernel_iopub_send (self, "status", json_pack ("{ss}", "execution_state", state), NULL,
                                parent_header);
}

size_t
pykernel_iopub_sent_bytes (pykernel_iopub_t *self)
{
    pthread_mutex_lock (&self->lock);
    size_t n = self->sent_bytes;
    pthread_mutex_unlock (&self->lock);
    return n;
}

int
pykernel_iopub_test (bool verbose)
{
    int failures = 0;
#define CHECK(cond) PYKERNEL_CHECK ("iopub", cond)
    wire_error_t err;
    wire_key_t *key = wire_key_new (NULL, "secret", 6, &err);
    zsock_t *pub = zsock_new_pub ("inproc://pykernel-iopub-test");
    zsock_t *sub = zsock_new_sub ("inproc://pykernel-iopub-test", "");
    pykernel_iopub_t *iopub = pykernel_iopub_new (pub, key, "sess");
    CHECK (iopub);
    /* inproc subscriptions are synchronous enough after a short pause */
    zclock_sleep (50);
    json_t *parent = json_pack ("{ss ss}", "msg_id", "req1", "msg_type", "execute_request");
    pykernel_iopub_set_parent (iopub, parent);
    CHECK (pykernel_iopub_status (iopub, "busy", NULL) == 0);
    CHECK (pykernel_iopub_send (iopub, "stream", json_pack ("{ss ss}", "name", "stdout", "text", "hi"),
                                NULL, NULL) == 0);
    zsock_set_rcvtimeo (sub, 1000);
    zmsg_t *frames = zmsg_recv (sub);
    CHECK (frames);
    char *topic = frames ? zmsg_popstr (frames) : NULL;
    CHECK (topic && strcmp (topic, "kernel.sess.status") == 0);
    free (topic);
    wire_replay_t *replay = wire_replay_new (16);
    /* put back a topic so decode finds identities before the delimiter */
    if (frames)
        zmsg_pushstr (frames, "t");
    wire_msg_t *msg = frames ? wire_msg_decode (&frames, key, replay, &wire_limits_default, &err) : NULL;
    CHECK (msg && strcmp (wire_msg_type (msg), "status") == 0);
    CHECK (msg && json_equal (msg->parent_header, parent));
    CHECK (msg && strcmp (json_string_value (json_object_get (msg->content, "execution_state")), "busy") == 0);
    wire_msg_destroy (&msg);
    frames = zmsg_recv (sub);
    msg = frames ? wire_msg_decode (&frames, key, replay, &wire_limits_default, &err) : NULL;
    CHECK (msg && strcmp (wire_msg_type (msg), "stream") == 0);
    CHECK (msg && strcmp (json_string_value (json_object_get (msg->content, "text")), "hi") == 0);
    wire_msg_destroy (&msg);
    zmsg_t *buffers = zmsg_new ();
    zmsg_addmem (buffers, "\0\xff", 2);
    zmsg_addmem (buffers, "", 0);
    CHECK (pykernel_iopub_send_buffers (iopub, "comm_msg", json_pack ("{ss}", "comm_id", "c"), NULL, NULL,
                                        &buffers) == 0);
    CHECK (!buffers);
    frames = zmsg_recv (sub);
    msg = frames ? wire_msg_decode (&frames, key, replay, &wire_limits_default, &err) : NULL;
    CHECK (msg && zmsg_size (msg->buffers) == 2);
    CHECK (msg && zframe_size (zmsg_first (msg->buffers)) == 2
           && memcmp (zframe_data (zmsg_first (msg->buffers)), "\0\xff", 2) == 0);
    wire_msg_destroy (&msg);
    CHECK (pykernel_iopub_sent_bytes (iopub) > 0);
    json_decref (parent);
    wire_replay_destroy (&replay);
    pykernel_iopub_destroy (&iopub);
    zsock_destroy (&sub);
    wire_key_destroy (&key);
#undef CHECK
    if (verbose)
        pykernel_log ("iopub self-test: %s", failures ? "FAILED" : "ok");
    return failures;
}
