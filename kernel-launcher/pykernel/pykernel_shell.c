/*  pykernel_shell.c - the shell loop on the main thread: one request at a
    time, each wrapped in status busy/idle with its reply and all its output
    before idle (README "C → Python"). */
#include "pykernel_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    pykernel_shared_t *shared;
    zsock_t *sock;
    wire_replay_t *replay;
    /* requests drained from the socket after a failed execute; the first
       `aborting` of them are answered "aborted" if they are executes */
    zlist_t *queue;
    size_t aborting;
    json_int_t execution_count; /* last one a reply carried */
} shell_t;

static void
s_send_reply (shell_t *self, const wire_msg_t *request, const char *type, json_t *content, json_t *metadata)
{
    wire_msg_t *reply = wire_msg_new (self->shared->session, type, request);
    if (!reply) {
        json_decref (content);
        json_decref (metadata);
        return;
    }
    wire_msg_set_content (reply, content);
    if (metadata) {
        json_decref (reply->metadata);
        reply->metadata = metadata;
    }
    if (wire_msg_send (reply, self->sock, self->shared->key) != 0)
        pykernel_log ("shell: sending %s failed", type);
    wire_msg_destroy (&reply);
}

/* Receives and verifies one message; NULL when none or dropped. */
static wire_msg_t *
s_receive (shell_t *self)
{
    zmsg_t *frames = zmsg_recv (self->sock);
    if (!frames)
        return NULL;
    wire_error_t err;
    wire_msg_t *request = wire_msg_decode (&frames, self->shared->key, self->replay, &wire_limits_default, &err);
    if (!request)
        pykernel_log ("shell: message dropped: %s", wire_strerror (err));
    return request;
}

/* After an execute failed with stop_on_error: everything already queued is
   taken now, and the executes among it will be aborted. */
static void
s_drain_for_abort (shell_t *self)
{
    while (zsock_events (self->sock) & ZMQ_POLLIN) {
        wire_msg_t *request = s_receive (self);
        if (request)
            zlist_append (self->queue, request);
    }
    self->aborting = zlist_size (self->queue);
}

static void
s_run_in_python (shell_t *self, wire_msg_t *request)
{
    char *type;
    json_t *content, *metadata;
    bool abort_queue;
    pykernel_python_forget_interrupt ();
    atomic_store (&self->shared->busy, true);
    pykernel_python_dispatch (request, &type, &content, &metadata, &abort_queue);
    if (getpid () != self->shared->pid) {
        /* a child forked by the cell (os.fork without os._exit) came back
           here: it must not answer on the parent's sockets, nor run exit
           handlers that would tear down the parent's ZeroMQ context */
        fflush (stdout);
        fflush (stderr);
        _exit (0);
    }
    atomic_store (&self->shared->busy, false);
    pykernel_output_flush (self->shared->output);
    /* before the reply: whatever a client queued before it could see the
       error is aborted, and nothing sent after it */
    if (abort_queue)
        s_drain_for_abort (self);
    if (type) {
        json_t *count = json_object_get (content, "execution_count");
        if (json_is_integer (count))
            self->execution_count = json_integer_value (count);
        s_send_reply (self, request, type, content, metadata);
        free (type);
    }
    else {
        json_decref (content);
        json_decref (metadata);
    }
}

static void
s_handle (shell_t *self, wire_msg_t *request, bool aborting)
{
    const char *type = wire_msg_type (request);
    pykernel_iopub_t *iopub = self->shared->iopub;
    pykernel_iopub_set_parent (iopub, request->header);
    pykernel_python_set_request (request);
    pykernel_iopub_status (iopub, "busy", request->header);
    if (aborting && strcmp (type, "execute_request") == 0)
        s_send_reply (self, request, "execute_reply",
                      json_pack ("{ss sI}", "status", "aborted", "execution_count", self->execution_count),
                      NULL);
    else if (strcmp (type, "shutdown_request") == 0) {
        /* deprecated on shell since 5.4, still honoured */
        int restart = json_is_true (json_object_get (request->content, "restart"));
        s_send_reply (self, request, "shutdown_reply", json_pack ("{ss sb}", "status", "ok", "restart", restart), NULL);
        pykernel_shell_stop (self->shared);
    }
    else
        s_run_in_python (self, request);
    pykernel_output_flush (self->shared->output);
    pykernel_iopub_status (iopub, "idle", request->header);
    pykernel_python_set_request (NULL);
}

/* Waits for the next request: the drained queue first, then the socket.
   NULL when the kernel is stopping. */
static wire_msg_t *
s_next (shell_t *self, bool *aborting)
{
    if (zlist_size (self->queue)) {
        *aborting = self->aborting > 0;
        if (self->aborting)
            self->aborting--;
        return zlist_pop (self->queue);
    }
    *aborting = false;
    while (!atomic_load (&self->shared->stopping)) {
        zmq_pollitem_t items[2] = {
            { .socket = zsock_resolve (self->sock), .events = ZMQ_POLLIN },
            { .fd = self->shared->wake_fd[0], .events = ZMQ_POLLIN },
        };
        int rc = zmq_poll (items, 2, -1);
        if (rc < 0 && errno == EINTR)
            continue; /* SIGINT while idle: consumed before the next request */
        if (rc < 0) {
            pykernel_log ("shell: polling failed: %s", zmq_strerror (errno));
            pykernel_shell_stop (self->shared);
            break;
        }
        if (items[0].revents) {
            wire_msg_t *request = s_receive (self);
            if (request)
                return request;
        }
    }
    return NULL;
}

void
pykernel_shell_stop (pykernel_shared_t *shared)
{
    if (!atomic_exchange (&shared->stopping, true)) {
        ssize_t rc = write (shared->wake_fd[1], "x", 1);
        (void) rc;
    }
}

int
pykernel_shell_run (pykernel_shared_t *shared, zsock_t *sock)
{
    shell_t self = { .shared = shared, .sock = sock };
    self.replay = wire_replay_new (65536);
    self.queue = zlist_new ();
    if (!self.replay || !self.queue) {
        pykernel_log ("shell: out of memory");
        wire_replay_destroy (&self.replay);
        zlist_destroy (&self.queue);
        return -1;
    }
    wire_msg_t *request;
    bool aborting;
    while ((request = s_next (&self, &aborting))) {
        s_handle (&self, request, aborting);
        wire_msg_destroy (&request);
    }
    /* requests still queued at shutdown are never answered */
    while ((request = zlist_pop (self.queue)))
        wire_msg_destroy (&request);
    zlist_destroy (&self.queue);
    wire_replay_destroy (&self.replay);
    return 0;
}
