/*  pykernel.c - pykernel_run(): binds the five sockets of a connection file,
    starts the heartbeat, output, and control threads and CPython, serves the
    shell channel on the calling (main) thread until shutdown_request, then
    takes everything down again in reverse order. */
#include "pykernel_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* how long a port in use may take to free itself (see s_socket) */
#define BIND_RETRY_MS 2000

static const char *s_channel_names[WIRE_CHANNEL_COUNT_] = { "shell", "iopub", "stdin", "control", "hb" };

/* CPython is up and kernel.py loaded (s_prepare) */
static bool s_prepared;

static int s_prepare (bool preload);

typedef struct {
    wire_connection_t *connection;
    pykernel_shared_t shared;
    zsock_t *sock[WIRE_CHANNEL_COUNT_];
    pykernel_beat_t *beat;
    pykernel_control_t *control;
    bool python_started;
} kernel_t;

static zsock_t *
s_socket (kernel_t *self, wire_channel_t channel)
{
    int type = channel == WIRE_IOPUB ? ZMQ_PUB : ZMQ_ROUTER;
    zsock_t *sock = zsock_new (type);
    if (!sock)
        return NULL;
    /* replies and final status messages get a moment to leave at exit */
    zsock_set_linger (sock, 1000);
    if (type == ZMQ_ROUTER && channel != WIRE_HB)
        /* a reconnecting client takes its identity back (ipykernel#270) */
        zsock_set_router_handover (sock, 1);
    if (channel == WIRE_IOPUB)
        zsock_set_sndhwm (sock, 0); /* never drop output to a slow reader */
    char *endpoint = wire_connection_endpoint (self->connection, channel);
    int rc = endpoint ? zsock_bind (sock, "%s", endpoint) : -1;
    /* The client chose the ports by binding port 0 and letting go, and it
       is already trying to connect: a connection attempt of its own (or of
       anyone) can hold one of them as its ephemeral source port for a
       moment. Such a port frees itself; a real listener does not. */
    int64_t deadline = zclock_mono () + BIND_RETRY_MS;
    while (rc < 0 && endpoint && zmq_errno () == EADDRINUSE && zclock_mono () < deadline) {
        zclock_sleep (20);
        rc = zsock_bind (sock, "%s", endpoint);
    }
    if (rc < 0) {
        pykernel_log ("binding the %s socket to %s: %s", s_channel_names[channel], endpoint ? endpoint : "?",
                      zmq_strerror (zmq_errno ()));
        zsock_destroy (&sock);
    }
    free (endpoint);
    return sock;
}

static int
s_bind_all (kernel_t *self)
{
    for (int channel = 0; channel < WIRE_CHANNEL_COUNT_; channel++)
        if (!(self->sock[channel] = s_socket (self, channel)))
            return -1;
    return 0;
}

/* Everything up to the shell loop. Threads are created with SIGINT blocked
   so that only the main thread (Python's) ever receives it. */
static int
s_start (kernel_t *self, const char *connection_file, const pykernel_options_t *options)
{
    wire_error_t err;
    char *errmsg = NULL;
    self->connection = wire_connection_load (connection_file, &err, &errmsg);
    if (!self->connection) {
        pykernel_log ("reading the connection file: %s", errmsg ? errmsg : wire_strerror (err));
        free (errmsg);
        return -1;
    }
    self->shared.key = wire_connection_key (self->connection, &err);
    if (!self->shared.key) {
        pykernel_log ("the connection file's key: %s", wire_strerror (err));
        return -1;
    }
    wire_id_new (self->shared.session);
    self->shared.main_thread = pthread_self ();
    self->shared.pid = getpid ();
    if (pipe2 (self->shared.wake_fd, O_CLOEXEC) != 0) {
        pykernel_log ("creating the wake pipe: %s", strerror (errno));
        return -1;
    }
    if (s_bind_all (self) != 0)
        return -1;
    if (options && options->on_bound)
        options->on_bound (options->on_bound_arg);

    sigset_t sigint, old;
    sigemptyset (&sigint);
    sigaddset (&sigint, SIGINT);
    pthread_sigmask (SIG_BLOCK, &sigint, &old);
    self->shared.iopub = pykernel_iopub_new (self->sock[WIRE_IOPUB], self->shared.key, self->shared.session);
    if (self->shared.iopub)
        self->sock[WIRE_IOPUB] = NULL;
    self->beat = pykernel_beat_new (self->sock[WIRE_HB]);
    if (self->beat)
        self->sock[WIRE_HB] = NULL;
    self->shared.output = self->shared.iopub ? pykernel_output_new (self->shared.iopub) : NULL;
    pthread_sigmask (SIG_SETMASK, &old, NULL);
    if (!self->shared.iopub || !self->beat || !self->shared.output) {
        pykernel_log ("starting the iopub, heartbeat and output threads failed");
        return -1;
    }

    self->python_started = true;
    /* on its own, the kernel builds IPython's shell when something needs it
       (kernel.py _ipython()): plain Python answers sooner */
    if (s_prepare (false) != 0)
        return -1;
    pykernel_python_attach (&self->shared, self->sock[WIRE_STDIN]);
    if (pykernel_python_configure (options ? options->settings : NULL) != 0)
        return -1;
    self->shared.kernel_info = pykernel_python_kernel_info ();
    if (!self->shared.kernel_info) {
        pykernel_log ("kernel.py gave no kernel_info_reply content");
        return -1;
    }

    pthread_sigmask (SIG_BLOCK, &sigint, &old);
    self->control = pykernel_control_new (self->sock[WIRE_CONTROL], &self->shared);
    pthread_sigmask (SIG_SETMASK, &old, NULL);
    if (!self->control) {
        pykernel_log ("starting the control thread failed");
        return -1;
    }
    self->sock[WIRE_CONTROL] = NULL;
    return 0;
}

static void
s_stop (kernel_t *self)
{
    /* control first: no interrupt may reach a finalizing interpreter */
    pykernel_control_destroy (&self->control);
    if (self->python_started) {
        pykernel_python_stop ();
        s_prepared = false;
    }
    pykernel_output_destroy (&self->shared.output);
    pykernel_beat_destroy (&self->beat);
    pykernel_iopub_destroy (&self->shared.iopub);
    for (int channel = 0; channel < WIRE_CHANNEL_COUNT_; channel++)
        zsock_destroy (&self->sock[channel]);
    for (int i = 0; i < 2; i++)
        if (self->shared.wake_fd[i] >= 0)
            close (self->shared.wake_fd[i]);
    free (self->shared.kernel_info);
    wire_key_destroy (&self->shared.key);
    wire_connection_destroy (&self->connection);
}

static int
s_prepare (bool preload)
{
    if (s_prepared)
        return 0;
    pykernel_log_init ();
    /* czmq's own SIGINT handler would make it treat an interrupt as "stop
       everything"; SIGINT belongs to Python's KeyboardInterrupt here, and
       Python installs its handler only over the default one */
    zsys_handler_set (NULL);
    signal (SIGINT, SIG_DFL);
    if (pykernel_python_start (preload) != 0)
        return -1;
    s_prepared = true;
    return 0;
}

int
pykernel_prepare (void)
{
    return s_prepare (true);
}

pid_t
pykernel_fork (void)
{
    pid_t pid = pykernel_python_fork ();
    /* the log's copy of fd 2 was taken in the parent: a fork server's child
       gets its own fd 2 (and confinement closes the copy), so pykernel_run
       takes a fresh one */
    if (pid == 0)
        pykernel_log_close ();
    return pid;
}

int
pykernel_run (const char *connection_file, const pykernel_options_t *options)
{
    pykernel_log_init ();
    kernel_t self;
    memset (&self, 0, sizeof self);
    self.shared.wake_fd[0] = self.shared.wake_fd[1] = -1;
    atomic_init (&self.shared.busy, false);
    atomic_init (&self.shared.stopping, false);

    int status = 1;
    if (s_start (&self, connection_file, options) == 0 && pykernel_shell_run (&self.shared, self.sock[WIRE_SHELL]) == 0)
        status = 0;
    s_stop (&self);
    pykernel_log_close ();
    return status;
}

int
pykernel_selftest (bool verbose)
{
    pykernel_log_init ();
    int failures = pykernel_utf8_test (verbose);
    failures += pykernel_iopub_test (verbose);
    failures += pykernel_output_test (verbose);
    failures += pykernel_beat_test (verbose);
    return failures;
}
