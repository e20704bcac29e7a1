/*  pykernel_control.c - the control channel on its own thread, so that an
    interrupt or a shutdown is never queued behind a running execute_request.
    It needs no GIL: interrupt is a signal to the main thread, kernel_info is
    answered from content prepared at start, shutdown asks the main loop to
    end. */
#include "pykernel_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* After a shutdown_request, how long the main thread may take to come back
   from the running request before the process exits without cleanup. */
#define CONTROL_SHUTDOWN_GRACE_MS 5000

struct pykernel_control {
    zsock_t *sock;
    pykernel_shared_t *shared;
    wire_replay_t *replay;
    pykernel_thread_t worker;
};

static void
s_reply (pykernel_control_t *self, const wire_msg_t *request, const char *type, json_t *content)
{
    wire_msg_t *reply = wire_msg_new (self->shared->session, type, request);
    if (!reply) {
        json_decref (content);
        return;
    }
    wire_msg_set_content (reply, content);
    if (wire_msg_send (reply, self->sock, self->shared->key) != 0)
        pykernel_log ("control: sending %s failed", type);
    wire_msg_destroy (&reply);
}

/* Sends SIGINT to the main thread while it runs a request; an interrupt
   while idle has nothing to interrupt and is dropped here. */
static void
s_interrupt_main (pykernel_shared_t *shared)
{
    if (atomic_load (&shared->busy))
        pthread_kill (shared->main_thread, SIGINT);
}

static void
s_handle (pykernel_control_t *self, wire_msg_t *request)
{
    const char *type = wire_msg_type (request);
    pykernel_iopub_t *iopub = self->shared->iopub;
    pykernel_iopub_status (iopub, "busy", request->header);
    if (strcmp (type, "interrupt_request") == 0) {
        s_interrupt_main (self->shared);
        s_reply (self, request, "interrupt_reply", json_pack ("{ss}", "status", "ok"));
    }
    else if (strcmp (type, "shutdown_request") == 0) {
        int restart = json_is_true (json_object_get (request->content, "restart"));
        s_reply (self, request, "shutdown_reply", json_pack ("{ss sb}", "status", "ok", "restart", restart));
        pykernel_shell_stop (self->shared);
        /* a running cell would delay the exit until it ends: stop it */
        s_interrupt_main (self->shared);
    }
    else if (strcmp (type, "kernel_info_request") == 0 && self->shared->kernel_info) {
        json_t *content = json_loads (self->shared->kernel_info, 0, NULL);
        s_reply (self, request, "kernel_info_reply", content ? content : json_object ());
    }
    else
        pykernel_log ("control: %s is not served on control; ignored", type);
    pykernel_iopub_status (iopub, "idle", request->header);
}

static void *
s_thread (void *arg)
{
    pykernel_control_t *self = arg;
    int64_t deadline = 0; /* set once shutdown was asked */
    for (;;) {
        zmq_pollitem_t items[2] = {
            { .socket = zsock_resolve (self->sock), .events = ZMQ_POLLIN },
            { .fd = self->worker.stop_pipe[0], .events = ZMQ_POLLIN },
        };
        long timeout = -1;
        if (deadline) {
            timeout = (long) (deadline - zclock_mono ());
            if (timeout <= 0) {
                pykernel_log ("shutdown: the running request did not end within %d ms; exiting",
                              CONTROL_SHUTDOWN_GRACE_MS);
                _exit (0);
            }
        }
        int rc = zmq_poll (items, 2, timeout);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0 || items[1].revents)
            break;
        if (!items[0].revents)
            continue;
        zmsg_t *frames = zmsg_recv (self->sock);
        if (!frames)
            continue;
        wire_error_t err;
        wire_msg_t *request = wire_msg_decode (&frames, self->shared->key, self->replay, &wire_limits_default, &err);
        if (!request) {
            pykernel_log ("control: message dropped: %s", wire_strerror (err));
            continue;
        }
        s_handle (self, request);
        wire_msg_destroy (&request);
        if (atomic_load (&self->shared->stopping) && !deadline)
            deadline = zclock_mono () + CONTROL_SHUTDOWN_GRACE_MS;
    }
    return NULL;
}

pykernel_control_t *
pykernel_control_new (zsock_t *sock, pykernel_shared_t *shared)
{
    pykernel_control_t *self = wire_xcalloc (1, sizeof *self);
    self->sock = sock;
    self->shared = shared;
    self->replay = wire_replay_new (4096);
    if (pykernel_thread_start (&self->worker, s_thread, self) != 0) {
        wire_replay_destroy (&self->replay);
        free (self);
        return NULL;
    }
    return self;
}

void
pykernel_control_destroy (pykernel_control_t **self_p)
{
    pykernel_control_t *self = *self_p;
    if (!self)
        return;
    pykernel_thread_stop (&self->worker);
    zsock_destroy (&self->sock);
    wire_replay_destroy (&self->replay);
    free (self);
    *self_p = NULL;
}
