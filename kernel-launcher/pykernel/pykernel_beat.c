/*  pykernel_beat.c - the heartbeat: a thread that echoes every message on
    the hb socket. It never touches Python, so a long computation holding the
    GIL does not make the client declare the kernel dead. The socket is a
    ROUTER (as ipykernel's echo device is) so a client that vanishes in the
    middle of a ping cannot wedge it the way a REP's state machine can. */
#include "pykernel_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pykernel_beat {
    zsock_t *sock;
    pykernel_thread_t worker;
};

static void *
s_thread (void *arg)
{
    pykernel_beat_t *self = arg;
    void *handle = zsock_resolve (self->sock);
    for (;;) {
        zmq_pollitem_t items[2] = {
            { .socket = handle, .events = ZMQ_POLLIN },
            { .fd = self->worker.stop_pipe[0], .events = ZMQ_POLLIN },
        };
        int rc = zmq_poll (items, 2, -1);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0 || items[1].revents)
            break;
        zmsg_t *msg = zmsg_recv (self->sock);
        if (msg && zmsg_send (&msg, self->sock) != 0)
            zmsg_destroy (&msg);
    }
    return NULL;
}

pykernel_beat_t *
pykernel_beat_new (zsock_t *sock)
{
    pykernel_beat_t *self = wire_xcalloc (1, sizeof *self);
    self->sock = sock;
    if (pykernel_thread_start (&self->worker, s_thread, self) != 0) {
        free (self);
        return NULL;
    }
    return self;
}

void
pykernel_beat_destroy (pykernel_beat_t **self_p)
{
    pykernel_beat_t *self = *self_p;
    if (!self)
        return;
    pykernel_thread_stop (&self->worker);
    zsock_destroy (&self->sock);
    free (self);
    *self_p = NULL;
}

int
pykernel_beat_test (bool verbose)
{
    int failures = 0;
    zsock_t *router = zsock_new_router ("inproc://pykernel-beat-test");
    zsock_t *req = zsock_new_req ("inproc://pykernel-beat-test");
    pykernel_beat_t *beat = router ? pykernel_beat_new (router) : NULL;
    if (!beat) {
        pykernel_log ("beat self-test failed: no thread");
        failures++;
        zsock_destroy (&router);
    }
    zsock_set_rcvtimeo (req, 2000);
    for (int i = 0; beat && i < 3; i++) {
        /* the heartbeat's payload is opaque bytes, echoed unchanged */
        zstr_sendf (req, "ping %d\x01", i);
        char *pong = zstr_recv (req);
        char expected[16];
        snprintf (expected, sizeof expected, "ping %d\x01", i);
        if (!pong || strcmp (pong, expected) != 0) {
            pykernel_log ("beat self-test failed: ping %d came back as %s", i, pong ? pong : "nothing");
            failures++;
        }
        zstr_free (&pong);
    }
    pykernel_beat_destroy (&beat);
    zsock_destroy (&req);
    if (verbose)
        pykernel_log ("beat self-test: %s", failures ? "FAILED" : "ok");
    return failures;
}
