/*  gw_signal.c - SIGTERM, SIGINT and SIGHUP read from a signalfd in the
    loop, so that the daemon decides what each means (gw_server.c: drain,
    reload) instead of czmq's handler, which only ends the loop.

    The three are blocked before any thread starts (every thread inherits
    the mask): a handler would interrupt zloop's poll, which zloop takes as
    the end of the loop, and a thread without the mask would take the
    signal from the signalfd. The launcher's child unblocks them
    (gw_launch_exec), so kernels keep the default dispositions.
*/
#include "gw_log.h"
#include "gw_ops.h"
#include "wire.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

struct gw_signals {
    zloop_t *loop;
    zmq_pollitem_t item;
    gw_signal_fn *fn;
    void *arg;
};

static void
signal_set (sigset_t *set)
{
    sigemptyset (set);
    sigaddset (set, SIGTERM);
    sigaddset (set, SIGINT);
    sigaddset (set, SIGHUP);
}

void
gw_signal_block (void)
{
    sigset_t set;
    signal_set (&set);
    pthread_sigmask (SIG_BLOCK, &set, NULL);
}

static int
on_readable (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    gw_signals_t *self = arg;
    struct signalfd_siginfo info;
    while (read (self->item.fd, &info, sizeof info) == (ssize_t) sizeof info)
        self->fn ((int) info.ssi_signo, self->arg);
    return 0;
}

gw_signals_t *
gw_signals_new (zloop_t *loop, gw_signal_fn *fn, void *arg)
{
    sigset_t set, blocked;
    signal_set (&set);
    if (pthread_sigmask (SIG_BLOCK, NULL, &blocked) != 0 || !sigismember (&blocked, SIGTERM))
        return NULL;
    int fd = signalfd (-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) {
        gw_log ("error", "{s:s, s:s}", "message", "cannot read signals (signalfd): SIGTERM stops at once",
                "reason", strerror (errno));
        pthread_sigmask (SIG_UNBLOCK, &set, NULL); /* czmq's handler then ends the loop */
        return NULL;
    }
    gw_signals_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->fn = fn;
    self->arg = arg;
    self->item = (zmq_pollitem_t){NULL, fd, ZMQ_POLLIN, 0};
    zloop_poller (loop, &self->item, on_readable, self);
    return self;
}

void
gw_signals_destroy (gw_signals_t **self_p)
{
    gw_signals_t *self = *self_p;
    if (!self)
        return;
    zloop_poller_end (self->loop, &self->item);
    close (self->item.fd);
    free (self);
    *self_p = NULL;
}
