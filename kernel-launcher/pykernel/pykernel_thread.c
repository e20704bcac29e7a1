/*  pykernel_thread.c - a worker thread that is told to stop through a pipe.
    The heartbeat, control and output threads block in poll on their own
    sockets or fds; a pipe's read end can sit in the same poll set (ZeroMQ's
    too), which a condition variable or a flag could not. */
#include "pykernel_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int
pykernel_thread_start (pykernel_thread_t *self, void *(*run) (void *), void *arg)
{
    self->running = false;
    if (pipe2 (self->stop_pipe, O_CLOEXEC) != 0)
        return -1;
    int rc = pthread_create (&self->id, NULL, run, arg);
    if (rc != 0) {
        close (self->stop_pipe[0]);
        close (self->stop_pipe[1]);
        errno = rc;
        return -1;
    }
    self->running = true;
    return 0;
}

void
pykernel_thread_stop (pykernel_thread_t *self)
{
    if (!self->running)
        return;
    /* the thread only polls the read end: any byte means stop */
    ssize_t rc = write (self->stop_pipe[1], "x", 1);
    (void) rc;
    pthread_join (self->id, NULL);
    close (self->stop_pipe[0]);
    close (self->stop_pipe[1]);
    self->running = false;
}
