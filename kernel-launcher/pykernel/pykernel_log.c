/*  pykernel_log.c - log lines on the kernel's own stderr.

    fd 2 is replaced by a pipe whose contents go to the client as a stream,
    so log lines (a dropped message, a failed step) are written to a private
    duplicate of the original fd 2 taken before the swap. */
#include "pykernel_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int s_log_fd = -1;

void
pykernel_log_init (void)
{
    if (s_log_fd < 0)
        s_log_fd = fcntl (STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
}

void
pykernel_log_close (void)
{
    if (s_log_fd >= 0)
        close (s_log_fd);
    s_log_fd = -1;
}

int
pykernel_log_fd (void)
{
    return s_log_fd >= 0 ? s_log_fd : STDERR_FILENO;
}

void
pykernel_log (const char *fmt, ...)
{
    char line[1024];
    int prefix = snprintf (line, sizeof line, "kennel-pykernel: ");
    va_list args;
    va_start (args, fmt);
    int n = vsnprintf (line + prefix, sizeof line - prefix - 1, fmt, args);
    va_end (args);
    size_t len = prefix + (n < 0 ? 0 : (size_t) n);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    /* one write() per line so lines from threads do not interleave */
    int saved = errno;
    ssize_t rc = write (pykernel_log_fd (), line, len);
    (void) rc;
    errno = saved;
}
