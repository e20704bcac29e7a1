/*  zygote.c - kennel-launch --zygote: a fork server for the builtin Python
    kernel. CPython (and the --preload modules) start once here; each launch
    request forks a child that reads the request, confines itself and
    continues the prepared interpreter into the kernel. The protocol is
    docs/PROTOCOL.md section 11; README.md ("The zygote") says why.

    The zygote stays single-threaded and never reads a request itself: a
    conversation's spec (its env, paths) only ever enters that conversation's
    own child, never the memory that later children inherit. */
#include "launch.h"
#include "zygote.h"
#include "pykernel.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define REQUEST_TIMEOUT_S 10

/* One kernel started here: its waiter's pid and the proxy's connection
   (-1 once the proxy hung up: the waiter was killed, the exit is pending). */
typedef struct {
    pid_t pid;
    int fd;
} child_t;

typedef struct {
    int listen_fd;
    int signal_fd;
    child_t *children;
    size_t count, cap;
    struct pollfd *polled;      /* the loop's poll set (a child frees it too) */
} zygote_t;

/* ---- the child: one launch request ------------------------------------ */

/* Closes everything of the zygote's that this child must not keep. */
static void
child_drop_zygote (zygote_t *self, int conn)
{
    close (self->listen_fd);
    close (self->signal_fd);
    for (size_t i = 0; i < self->count; i++)
        if (self->children[i].fd >= 0 && self->children[i].fd != conn)
            close (self->children[i].fd);
    free (self->children);
    free (self->polled);
    sigset_t none;
    sigemptyset (&none);
    sigprocmask (SIG_SETMASK, &none, NULL);
}

/* The request's fds go where the launcher would have them: 0, 1, 2 and
   the status fd. Returns the status fd or -1. */
static int
child_place_fds (int *fds, size_t nfds)
{
    for (int i = 0; i < 3 && (size_t) i < nfds; i++) {
        dup2 (fds[i], i);
        close (fds[i]);
    }
    return nfds > 3 ? fds[3] : -1;
}

/* The proxy is told the request was answered (on the status fd), so that it
   does not start the kernel directly as it does when no child took it. */
_Noreturn static void
child_fail (int conn, int status_fd, const char *message)
{
    fprintf (stderr, "kennel-launch: zygote: %s\n", message);
    launch_status_error (status_fd, "spec", 0, message);
    zygote_send (conn, "{\"failed\": true}", NULL, 0);
    _exit (LAUNCH_EXIT_REFUSED);
}

_Noreturn static void
child_serve (zygote_t *self, int conn)
{
    child_drop_zygote (self, conn);
    struct timeval timeout = { .tv_sec = REQUEST_TIMEOUT_S };
    setsockopt (conn, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    char *text = confine_xmalloc (ZYGOTE_REQUEST_MAX + 1);
    int fds[ZYGOTE_MAX_FDS];
    size_t nfds = 0;
    ssize_t len = zygote_recv (conn, text, ZYGOTE_REQUEST_MAX, fds, &nfds);
    if (len < 0) {
        fprintf (stderr, "kennel-launch: zygote: reading the launch request: %s\n", strerror (errno));
        _exit (LAUNCH_EXIT_REFUSED);
    }
    text[len] = 0;
    int status_fd = child_place_fds (fds, nfds);

    char err[LAUNCH_ERR_MAX];
    int spec_status_fd;
    confine_policy_t *policy = confine_policy_new ();
    launch_kernel_t kernel = { 0 };
    if (launch_spec_parse (text, policy, &kernel, &spec_status_fd, err, sizeof err) < 0)
        child_fail (conn, status_fd, err);
    free (text);
    if (!kernel.builtin_python)
        child_fail (conn, status_fd, "the zygote serves only {\"kernel\": {\"builtin\": \"python\"}}");
    kernel.forked = true;

    /* the proxy signals this process (the waiter) through a pidfd: no pid
       reuse race once it is reaped */
    int pidfd = (int) syscall (SYS_pidfd_open, getpid (), 0);
    char line[64];
    snprintf (line, sizeof line, "{\"pid\": %d}", (int) getpid ());
    if (pidfd < 0 || zygote_send (conn, line, &pidfd, 1) < 0) {
        fprintf (stderr, "kennel-launch: zygote: answering the proxy: %s\n", strerror (errno));
        _exit (LAUNCH_EXIT_REFUSED);
    }
    close (pidfd);
    close (conn);
    launch_confine_and_run (policy, &kernel, status_fd);
}

/* ---- the zygote's loop ------------------------------------------------- */

static int
zygote_listen (const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen (path) >= sizeof addr.sun_path) {
        fprintf (stderr, "kennel-launch: zygote: socket path too long: %s\n", path);
        return -1;
    }
    strcpy (addr.sun_path, path);
    int fd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct stat st;
    if (lstat (path, &st) == 0 && S_ISSOCK (st.st_mode))
        unlink (path); /* a previous zygote's: bind would fail */
    mode_t old = umask (0177); /* the socket is 0600 from the start */
    int rc = fd < 0 ? -1 : bind (fd, (struct sockaddr *) &addr, sizeof addr);
    umask (old);
    if (rc < 0 || listen (fd, 128) < 0) {
        fprintf (stderr, "kennel-launch: zygote: bind/listen %s: %s\n", path, strerror (errno));
        if (fd >= 0)
            close (fd);
        return -1;
    }
    return fd;
}

static void
zygote_accept (zygote_t *self)
{
    int conn = accept4 (self->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (conn < 0)
        return;
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt (conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0
        || (cred.uid != getuid () && cred.uid != 0)) {
        fprintf (stderr, "kennel-launch: zygote: refused a connection from uid %d\n", (int) cred.uid);
        close (conn);
        return;
    }
    if (self->count == self->cap) {
        self->cap = self->cap ? self->cap * 2 : 16;
        self->children = confine_xreallocarray (self->children, self->cap, sizeof (child_t));
    }
    fflush (NULL);
    pid_t pid = pykernel_fork ();
    if (pid == 0)
        child_serve (self, conn);
    if (pid < 0) {
        fprintf (stderr, "kennel-launch: zygote: fork: %s\n", strerror (errno));
        close (conn);
        return;
    }
    self->children[self->count++] = (child_t) { .pid = pid, .fd = conn };
}

/* Tells each ended child's proxy how it ended. */
static void
zygote_reap (zygote_t *self)
{
    int status;
    pid_t pid;
    while ((pid = waitpid (-1, &status, WNOHANG)) > 0)
        for (size_t i = 0; i < self->count; i++) {
            if (self->children[i].pid != pid)
                continue;
            if (self->children[i].fd >= 0) {
                char line[64];
                snprintf (line, sizeof line, "{\"exit\": %d}", status);
                zygote_send (self->children[i].fd, line, NULL, 0);
                close (self->children[i].fd);
            }
            self->children[i] = self->children[--self->count];
            break;
        }
}

/* A proxy that hung up (killed, even with SIGKILL) takes its kernel along. */
static void
zygote_hangup (zygote_t *self, size_t i)
{
    kill (self->children[i].pid, SIGKILL);
    close (self->children[i].fd);
    self->children[i].fd = -1;
}

/* Returns false when asked to stop. */
static bool
zygote_signal (zygote_t *self)
{
    struct signalfd_siginfo info;
    bool go_on = true;
    while (read (self->signal_fd, &info, sizeof info) == sizeof info)
        if (info.ssi_signo != SIGCHLD)
            go_on = false;
    zygote_reap (self);
    return go_on;
}

static void
zygote_loop (zygote_t *self)
{
    for (;;) {
        size_t n = 2 + self->count;
        struct pollfd *fds = self->polled = confine_xreallocarray (self->polled, n, sizeof *fds);
        fds[0] = (struct pollfd) { .fd = self->listen_fd, .events = POLLIN };
        fds[1] = (struct pollfd) { .fd = self->signal_fd, .events = POLLIN };
        for (size_t i = 0; i < self->count; i++)
            fds[2 + i] = (struct pollfd) { .fd = self->children[i].fd, .events = 0 };
        if (poll (fds, n, -1) < 0 && errno != EINTR)
            break;
        /* hang-ups first: the table's indexes are those of this poll */
        for (size_t i = self->count; i-- > 0;)
            if (fds[2 + i].revents & (POLLHUP | POLLERR) && self->children[i].fd >= 0)
                zygote_hangup (self, i);
        if (fds[1].revents & POLLIN && !zygote_signal (self))
            break;
        if (fds[0].revents & POLLIN)
            zygote_accept (self);
    }
}

/* CPython starts in the sandbox's fixed minimal environment
   (confine_env_reset), so that what a preloaded module caches at import (HOME, TMPDIR,
   the locale) agrees with the sandbox, and nothing of the host's reaches the
   heap every kernel inherits; the kernel gets its exact environment after
   confinement (launch_zygote_child_fixup). BLAS and OpenMP pools stay at
   one thread so the zygote remains single-threaded. */
static void
zygote_environment (void)
{
    static const char *one_thread[] = { "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS" };
    if (confine_env_reset () < 0)
        fprintf (stderr, "kennel-launch: zygote: clearenv failed; the host's environment stays\n");
    for (size_t i = 0; i < sizeof one_thread / sizeof one_thread[0]; i++)
        setenv (one_thread[i], "1", 1);
}

/* A module that started a thread makes every fork a gamble (a lock held by
   that thread stays held in the child): say so. */
static void
zygote_check_threads (void)
{
    FILE *status = fopen ("/proc/self/status", "re");
    char line[128];
    int threads = 0;
    while (status && fgets (line, sizeof line, status))
        if (sscanf (line, "Threads: %d", &threads) == 1)
            break;
    if (status)
        fclose (status);
    if (threads > 1)
        fprintf (stderr, "kennel-launch: zygote: WARNING: %d threads after --preload; forking a "
                         "multi-threaded process can deadlock its children\n", threads);
}

int
launch_zygote_serve (const char *socket_path, const char *preload)
{
    zygote_environment ();
    if (pykernel_prepare () != 0 || launch_zygote_preload (preload) != 0)
        return 1;
    zygote_check_threads ();
    zygote_t self = { .listen_fd = zygote_listen (socket_path) };
    if (self.listen_fd < 0)
        return 1;
    sigset_t mask;
    sigemptyset (&mask);
    sigaddset (&mask, SIGCHLD);
    sigaddset (&mask, SIGTERM);
    sigaddset (&mask, SIGINT);
    sigaddset (&mask, SIGHUP);
    sigprocmask (SIG_BLOCK, &mask, NULL);
    self.signal_fd = signalfd (-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    fprintf (stderr, "kennel-launch: zygote %d" LAUNCH_ZYGOTE_READY "%s (preloaded: %s)\n", (int) getpid (), socket_path,
             preload ? preload : "nothing");
    zygote_loop (&self);
    /* The kernels started here end with us: each proxy sees its connection
       close and kills its kernel. */
    for (size_t i = 0; i < self.count; i++)
        if (self.children[i].fd >= 0)
            close (self.children[i].fd);
    free (self.children);
    free (self.polled);
    close (self.signal_fd);
    close (self.listen_fd);
    unlink (socket_path);
    fprintf (stderr, "kennel-launch: zygote %d stopped\n", (int) getpid ());
    return 0;
}
