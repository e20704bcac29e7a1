/*  zygote_client.c - kennel-launch --spec-fd with "zygote" in the spec:
    hands the spec and the status fd to the zygote, then stays as the
    process the gateway waits on: forwards signals to the kernel's waiter
    (through a pidfd) and ends as the kernel ended. */
#include "launch.h"
#include "zygote.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>


/* the signals the waiter forwards too (confine/README.md) */
static const int s_forwarded[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM };
#define FORWARDED_COUNT (sizeof s_forwarded / sizeof s_forwarded[0])

static volatile sig_atomic_t s_pidfd = -1;

static void
forward (int sig)
{
    int saved = errno;
    if (s_pidfd >= 0)
        syscall (SYS_pidfd_send_signal, (int) s_pidfd, sig, NULL, 0);
    errno = saved;
}

static void
forwarded_mask (sigset_t *set)
{
    sigemptyset (set);
    for (size_t i = 0; i < FORWARDED_COUNT; i++)
        sigaddset (set, s_forwarded[i]);
}

static int
connect_to (const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen (path) >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy (addr.sun_path, path);
    int sock = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (sock >= 0 && connect (sock, (struct sockaddr *) &addr, sizeof addr) < 0) {
        int saved = errno;
        close (sock);
        errno = saved;
        return -1;
    }
    return sock;
}

/* The kernel ended with wait status: so does this process. */
static int
end_like (int status)
{
    if (WIFEXITED (status))
        return WEXITSTATUS (status);
    if (!WIFSIGNALED (status))
        return LAUNCH_EXIT_REFUSED;
    return confine_die_by_signal (WTERMSIG (status));
}

/* Start forwarding once the waiter's pidfd is known (signals that came
   earlier were held blocked and arrive now). */
static void
forward_to (int pidfd)
{
    s_pidfd = pidfd;
    struct sigaction action = { .sa_handler = forward };
    sigemptyset (&action.sa_mask);
    for (size_t i = 0; i < FORWARDED_COUNT; i++)
        sigaction (s_forwarded[i], &action, NULL);
    sigset_t set;
    forwarded_mask (&set);
    sigprocmask (SIG_UNBLOCK, &set, NULL);
}

/* Reads {"pid"} (with the pidfd) and {"exit"} until the kernel ended.
   Our copy of the status fd is closed at the first answer: until then no
   child of the zygote holds the request. Returns -1 when the connection is
   lost before any answer (the zygote died with the request still in its
   backlog): nothing has been started or written, so the caller starts the
   kernel directly. */
static int
proxy_wait (int sock, const char *path, int status_fd)
{
    char buf[256];
    bool answered = false;
    for (;;) {
        int fds[ZYGOTE_MAX_FDS];
        size_t nfds = 0;
        ssize_t n = zygote_recv (sock, buf, sizeof buf - 1, fds, &nfds);
        if (n <= 0 && !answered) {
            fprintf (stderr, "kennel-launch: zygote %s: connection lost before the request was taken (%s); "
                             "starting the kernel directly\n",
                     path, n < 0 ? strerror (errno) : "closed");
            return -1;
        }
        if (!answered && status_fd > 2)
            close (status_fd); /* the kernel's child has its own copy: EOF for the gateway comes with the status line */
        answered = true;
        if (n <= 0) {
            /* the zygote is gone: the kernel has no one to report to */
            fprintf (stderr, "kennel-launch: zygote %s: connection lost (%s); killing the kernel\n", path,
                     n < 0 ? strerror (errno) : "closed");
            if (s_pidfd >= 0)
                syscall (SYS_pidfd_send_signal, (int) s_pidfd, SIGKILL, NULL, 0);
            return LAUNCH_EXIT_REFUSED;
        }
        buf[n] = 0;
        json_t *msg = json_loads (buf, 0, NULL);
        json_t *status = json_object_get (msg, "exit");
        bool ended = json_is_integer (status), pid = json_is_integer (json_object_get (msg, "pid"));
        bool failed = json_is_true (json_object_get (msg, "failed"));
        int code = ended ? (int) json_integer_value (status) : -1;
        json_decref (msg);
        if (ended)
            return end_like (code);
        if (failed)
            return LAUNCH_EXIT_REFUSED; /* the zygote's child wrote why on the status fd */
        if (pid && nfds == 1 && s_pidfd < 0)
            forward_to (fds[0]);
        else
            for (size_t i = 0; i < nfds; i++)
                close (fds[i]);
    }
}

int
launch_zygote_proxy (const char *path, const char *text, int status_fd)
{
    if (strlen (text) > ZYGOTE_REQUEST_MAX) {
        fprintf (stderr, "kennel-launch: zygote %s: the spec is larger than %d bytes; starting the kernel "
                         "directly\n", path, ZYGOTE_REQUEST_MAX);
        return -1;
    }
    int sock = connect_to (path);
    if (sock < 0) {
        fprintf (stderr, "kennel-launch: zygote %s unreachable (connect: %s); starting the kernel directly\n",
                 path, strerror (errno));
        return -1;
    }
    sigset_t set, old;
    forwarded_mask (&set);
    sigprocmask (SIG_BLOCK, &set, &old);
    int fds[ZYGOTE_MAX_FDS] = { 0, 1, 2, status_fd };
    if (zygote_send (sock, text, fds, status_fd >= 0 ? 4 : 3) < 0) {
        fprintf (stderr, "kennel-launch: zygote %s: sending the request: %s; starting the kernel directly\n",
                 path, strerror (errno));
        close (sock);
        sigprocmask (SIG_SETMASK, &old, NULL);
        return -1;
    }
    int rc = proxy_wait (sock, path, status_fd);
    close (sock);
    if (s_pidfd >= 0)
        close (s_pidfd);
    if (rc < 0)
        sigprocmask (SIG_SETMASK, &old, NULL); /* the direct launcher must not inherit blocked signals */
    return rc;
}
