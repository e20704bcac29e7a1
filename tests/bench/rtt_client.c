/*  rtt_client.c - one shell + iopub client speaking raw ZeroMQ with libwire.

    Every message received is fully verified and decoded (HMAC, JSON), as a
    real client must: that cost is the same whether the peer is the gateway
    or the kernel itself, so it cancels out of the gateway's added latency.
*/
#include "bench_rtt.h"

#include <stdio.h>
#include <string.h>

struct rtt_client {
    zsock_t *shell;
    zsock_t *iopub;
    zpoller_t *poller;
    wire_key_t *key;
    char session[33];
};

/* A socket of type connected to endpoint, a CURVE client when info has
   the keys of a gateway serving tcp (gateway/README.md). */
static zsock_t *
s_connect (int type, const char *endpoint, const json_t *info)
{
    zsock_t *s = zsock_new (type);
    if (!s)
        return NULL;
    if (type == ZMQ_SUB)
        zsock_set_subscribe (s, "");
    const char *server = json_string_value (json_object_get (info, "curve_serverkey"));
    if (server) {
        zsock_set_curve_serverkey (s, server);
        zsock_set_curve_publickey (s, json_string_value (json_object_get (info, "curve_publickey")));
        zsock_set_curve_secretkey (s, json_string_value (json_object_get (info, "curve_secretkey")));
    }
    if (zsock_connect (s, "%s", endpoint) < 0)
        zsock_destroy (&s);
    return s;
}

rtt_client_t *
rtt_client_new (const wire_connection_t *conn, const json_t *info)
{
    rtt_client_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    zsys_set_linger (0); /* the benchmark's end drops what is unsent */
    wire_error_t err;
    self->key = wire_connection_key (conn, &err);
    char *shell = wire_connection_endpoint (conn, WIRE_SHELL);
    char *iopub = wire_connection_endpoint (conn, WIRE_IOPUB);
    /* SUB subscribes before it connects so no early message is lost. */
    self->shell = s_connect (ZMQ_DEALER, shell, info);
    self->iopub = s_connect (ZMQ_SUB, iopub, info);
    if (!self->key || !self->shell || !self->iopub)
        fprintf (stderr, "bench_rtt: cannot connect to %s / %s: %s\n", shell, iopub,
                 self->key ? zmq_strerror (zmq_errno ()) : wire_strerror (err));
    free (shell);
    free (iopub);
    if (!self->key || !self->shell || !self->iopub) {
        rtt_client_destroy (&self);
        return NULL;
    }
    self->poller = zpoller_new (self->shell, self->iopub, NULL);
    wire_id_new (self->session);
    return self;
}

rtt_client_t *
rtt_client_from_file (const char *path)
{
    wire_connection_t *conn = rtt_connection_load (path);
    json_t *info = conn ? json_load_file (path, 0, NULL) : NULL;
    rtt_client_t *self = conn ? rtt_client_new (conn, info) : NULL;
    json_decref (info);
    wire_connection_destroy (&conn);
    return self;
}

void
rtt_client_destroy (rtt_client_t **self_p)
{
    rtt_client_t *self = *self_p;
    if (!self)
        return;
    zpoller_destroy (&self->poller);
    zsock_destroy (&self->shell);
    zsock_destroy (&self->iopub);
    wire_key_destroy (&self->key);
    free (self);
    *self_p = NULL;
}

/* Sends a request with content (taken); copies its msg_id into id. */
static int
s_send (rtt_client_t *self, const char *msg_type, json_t *content, char id[33])
{
    wire_msg_t *msg = wire_msg_new (self->session, msg_type, NULL);
    wire_msg_set_content (msg, content);
    snprintf (id, 33, "%s", wire_msg_id (msg));
    int rc = wire_msg_send (msg, zsock_resolve (self->shell), self->key);
    wire_msg_destroy (&msg);
    return rc;
}

/* Receives one message from sock and records what it means for w. */
static void
s_receive (rtt_client_t *self, zsock_t *sock, rtt_wait_t *w)
{
    zmsg_t *raw = zmsg_recv (sock);
    wire_error_t err;
    wire_msg_t *msg = wire_msg_decode (&raw, self->key, NULL, NULL, &err);
    if (!msg) {
        fprintf (stderr, "bench_rtt: dropped a message: %s\n", wire_error_name (err));
        return;
    }
    rtt_wait_note (w, sock == self->iopub, msg->header, msg->parent_header, msg->content);
    wire_msg_destroy (&msg);
}

/* Waits until w is complete (reply and idle; any_iopub too when asked) or
   the deadline (monotonic ns) passes. */
static bool
s_wait (rtt_client_t *self, rtt_wait_t *w, int64_t deadline, bool need_iopub)
{
    while (!(w->replied && w->idle && (!need_iopub || w->any_iopub))) {
        int64_t left_ms = (deadline - rtt_now_ns ()) / 1000000;
        if (left_ms <= 0)
            return false;
        zsock_t *which = zpoller_wait (self->poller, (int) left_ms);
        if (which)
            s_receive (self, which, w);
        else if (zpoller_terminated (self->poller))
            return false;
    }
    return true;
}

void
rtt_client_drain (rtt_client_t *self)
{
    rtt_wait_t none = {.id = "", .reply_type = ""};
    zsock_t *which;
    while ((which = zpoller_wait (self->poller, 0)))
        s_receive (self, which, &none);
}

int
rtt_client_wait_ready (rtt_client_t *self, int timeout_ms)
{
    int64_t deadline = rtt_now_ns () + (int64_t) timeout_ms * 1000000;
    /* A kernel that is still starting or a SUB not yet subscribed misses
       messages: ask again every 200 ms, as jupyter_client's nudge does. */
    while (rtt_now_ns () < deadline) {
        char id[33];
        if (s_send (self, "kernel_info_request", json_object (), id) != 0)
            return -1;
        rtt_wait_t w = {.id = id, .reply_type = "kernel_info_reply"};
        int64_t step = rtt_now_ns () + 200 * 1000000LL;
        if (s_wait (self, &w, step < deadline ? step : deadline, true))
            return 0;
    }
    fprintf (stderr, "bench_rtt: the kernel did not answer kernel_info within %d ms\n", timeout_ms);
    return -1;
}

int64_t
rtt_client_execute (rtt_client_t *self, const char *code, int timeout_ms)
{
    char id[33];
    int64_t start = rtt_now_ns ();
    if (s_send (self, "execute_request", rtt_execute_content (code), id) != 0)
        return -1;
    rtt_wait_t w = {.id = id, .reply_type = "execute_reply"};
    if (!s_wait (self, &w, start + (int64_t) timeout_ms * 1000000, false)) {
        fprintf (stderr, "bench_rtt: no execute_reply and idle within %d ms\n", timeout_ms);
        return -1;
    }
    if (w.failed) {
        fprintf (stderr, "bench_rtt: execute_reply status is not ok for %s\n", code);
        return -1;
    }
    return rtt_now_ns () - start;
}
