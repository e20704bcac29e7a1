/*  gw_zmtp_guard.c - one kernel connection passed through a ZMTP check
    before ZeroMQ reads it.

    The guard connects to the kernel's socket itself and listens on an
    abstract unix address of its own that the relay's ZeroMQ socket
    connects to; it then copies bytes both ways, unchanged. What the kernel
    sends is scanned on the way (gw_zmtp.c): at the frame header that would
    make one message pass the limits the guard closes both connections, so
    ZeroMQ never holds more than one message's worth of a partial message
    (it drops the partial message with the connection) and the relay sees
    the drop as any other (gw_relay.c), with the cause from gw_zmtp_guard_cut.

    - The kernel's path is opened O_PATH|O_NOFOLLOW and connected through
      /proc/self/fd: a symlink the kernel planted is refused, never
      followed (F10), and there is no sun_path length limit.
    - The listener is autobound (the kernel picks an unused abstract name,
      nobody can squat it) and accepts one connection, from this process
      only (SO_PEERCRED): a local user who reads the name in /proc/net/unix
      and connects first is closed and the guard keeps listening.
    - Bytes are read into one static chunk and written on at once; only
      what the other side cannot take yet is kept (at most one chunk per
      direction), and that side is not read again until it is written: an
      idle guard holds no buffer, a busy one at most 2 x GUARD_CHUNK.
    - All fds are nonblocking, in the loop's epoll set (gw_io).
*/
#include "gw_io.h"
#include "gw_log.h"
#include "gw_zmtp.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define GUARD_CHUNK (64 * 1024)
/* chunks moved per readiness event: one busy connection cannot hold the loop */
#define GUARD_READS_PER_TURN 8

typedef struct {
    uint8_t *data; /* read from one side, not yet taken by the other */
    size_t len;
} guard_pending_t;

struct gw_zmtp_guard {
    gw_io_t *io;
    char *conversation;
    char *channel;
    gw_zmtp_scan_t scan;
    zmq_pollitem_t listener; /* fd -1 once ZeroMQ connected */
    zmq_pollitem_t kernel;
    zmq_pollitem_t gateway; /* ZeroMQ's connection; fd -1 before it */
    short kernel_events, gateway_events; /* as registered */
    bool kernel_registered; /* in the epoll set: from ZeroMQ's connection to the kernel's close */
    bool kernel_hup; /* the kernel closed: what is left is read as ZeroMQ takes it */
    guard_pending_t up, down; /* kernel -> ZeroMQ (scanned), ZeroMQ -> kernel */
    const char *cut;
    bool closed;
};

static uint8_t s_chunk[GUARD_CHUNK]; /* the loop is single-threaded */

static void
guard_fd_close (gw_zmtp_guard_t *self, zmq_pollitem_t *item, bool registered)
{
    if (item->fd < 0)
        return;
    if (registered)
        gw_io_poller_end (self->io, item->fd);
    close (item->fd);
    item->fd = -1;
}

static void
guard_close (gw_zmtp_guard_t *self)
{
    guard_fd_close (self, &self->listener, true);
    guard_fd_close (self, &self->kernel, self->kernel_registered);
    guard_fd_close (self, &self->gateway, true);
    free (self->up.data);
    free (self->down.data);
    self->up = self->down = (guard_pending_t){NULL, 0};
    self->closed = true;
}

static void
guard_cut (gw_zmtp_guard_t *self, const char *reason)
{
    self->cut = reason;
    char source[300];
    snprintf (source, sizeof source, "conversation/%s/kernel_stream", self->conversation);
    gw_log_limited (source, "kernel_stream_cut", "{s:s, s:s, s:s, s:I, s:i}", "conversation", self->conversation,
                    "channel", self->channel, "reason", reason, "max_message_bytes",
                    (json_int_t) self->scan.limits.max_message_bytes, "max_frames", (int) self->scan.limits.max_frames);
    guard_close (self);
}

/* Writes what it can; the rest stays pending. 0, or -1 when the peer is gone. */
static int
guard_write (int fd, const uint8_t *data, size_t len, guard_pending_t *pending)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = send (fd, data + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0)
            return -1;
        done += (size_t) n;
    }
    if (done < len) {
        uint8_t *rest = wire_xmalloc (len - done);
        memcpy (rest, data + done, len - done);
        free (pending->data);
        *pending = (guard_pending_t){rest, len - done};
    }
    return 0;
}

/* Pending bytes out: 0 (all written or still waiting), -1 when the peer is gone. */
static int
guard_flush (int fd, guard_pending_t *pending)
{
    guard_pending_t old = *pending;
    *pending = (guard_pending_t){NULL, 0};
    int rc = guard_write (fd, old.data, old.len, pending);
    free (old.data);
    return rc;
}

/* Moves bytes from one fd to the other until from is empty (1), to is
   full or the turn is over (0), the stream ended or failed (-1), or the
   scan stopped (-2: cut, the reason in scan->stopped). */
static int
guard_move (int from, int to, guard_pending_t *pending, gw_zmtp_scan_t *scan)
{
    for (int i = 0; i < GUARD_READS_PER_TURN && !pending->len; i++) {
        ssize_t n = recv (from, s_chunk, sizeof s_chunk, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 1;
        if (n <= 0)
            return -1;
        if (scan && gw_zmtp_scan (scan, s_chunk, (size_t) n))
            return -2;
        if (guard_write (to, s_chunk, (size_t) n, pending) < 0)
            return -1;
        if ((size_t) n < sizeof s_chunk && !pending->len)
            return 1; /* a short read emptied it: epoll says when more comes, no recv for EAGAIN */
    }
    return 0;
}

static void
guard_want (gw_zmtp_guard_t *self, zmq_pollitem_t *item, short *registered, short events)
{
    if (*registered != events && gw_io_poller_events (self->io, item->fd, events) == 0)
        *registered = events;
}

/* Reads a side only while nothing of it waits for the other side. */
static void
guard_arm (gw_zmtp_guard_t *self)
{
    if (self->closed)
        return;
    if (self->kernel_registered)
        guard_want (self, &self->kernel, &self->kernel_events,
                    (short) ((self->up.len ? 0 : ZMQ_POLLIN) | (self->down.len ? ZMQ_POLLOUT : 0)));
    guard_want (self, &self->gateway, &self->gateway_events,
                (short) ((self->down.len ? 0 : ZMQ_POLLIN) | (self->up.len ? ZMQ_POLLOUT : 0)));
}

/* The kernel to ZeroMQ; -1 when the guard closed. */
static int
guard_up (gw_zmtp_guard_t *self)
{
    int rc = guard_move (self->kernel.fd, self->gateway.fd, &self->up, &self->scan);
    if (rc == -2)
        guard_cut (self, self->scan.stopped);
    else if (rc < 0 || (rc == 1 && self->kernel_hup)) /* a closed kernel has nothing more to come */
        guard_close (self);
    return rc < 0 ? -1 : 0;
}

static int
on_kernel (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    gw_zmtp_guard_t *self = arg;
    if ((item->revents & ZMQ_POLLOUT) && guard_flush (self->kernel.fd, &self->down) < 0) {
        guard_close (self);
        return 0;
    }
    if (item->revents & ZMQ_POLLERR && self->up.len) {
        /* gone, with bytes ZeroMQ has not taken: read the rest as it does */
        gw_io_poller_end (self->io, self->kernel.fd);
        self->kernel_registered = false;
        self->kernel_hup = true;
        free (self->down.data);
        self->down = (guard_pending_t){NULL, 0};
        return 0;
    }
    if (item->revents & (ZMQ_POLLIN | ZMQ_POLLERR) && guard_up (self) < 0)
        return 0;
    guard_arm (self);
    return 0;
}

static int
on_gateway (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    gw_zmtp_guard_t *self = arg;
    if (item->revents & ZMQ_POLLERR) {
        guard_close (self); /* ZeroMQ dropped the connection (a frame over ZMQ_MAXMSGSIZE, a close) */
        return 0;
    }
    if (item->revents & ZMQ_POLLOUT) {
        if (guard_flush (self->gateway.fd, &self->up) < 0) {
            guard_close (self);
            return 0;
        }
        /* no more events come from a closed kernel: read it to its end
           or until ZeroMQ is full again */
        while (self->kernel_hup && !self->up.len)
            if (guard_up (self) < 0)
                return 0;
    }
    if (item->revents & ZMQ_POLLIN && !self->kernel_hup) {
        int rc = guard_move (self->gateway.fd, self->kernel.fd, &self->down, NULL);
        if (rc < 0) {
            guard_close (self);
            return 0;
        }
    }
    guard_arm (self);
    return 0;
}

/* ZeroMQ's connection: ours (this process) or closed at once. */
static int
on_listener (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    gw_zmtp_guard_t *self = arg;
    int fd = accept4 (self->listener.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return 0;
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid != getpid ()) {
        gw_log_limited ("kernel_stream_guard", "kernel_stream_stranger", "{s:s, s:s, s:i}", "conversation",
                        self->conversation, "channel", self->channel, "pid", (int) cred.pid);
        close (fd);
        return 0;
    }
    guard_fd_close (self, &self->listener, true);
    self->gateway = (zmq_pollitem_t){NULL, fd, ZMQ_POLLIN, 0};
    self->kernel_events = self->gateway_events = ZMQ_POLLIN;
    if (gw_io_poller (self->io, &self->gateway, on_gateway, self) < 0) {
        close (fd);
        self->gateway.fd = -1;
        guard_close (self);
        return 0;
    }
    if (gw_io_poller (self->io, &self->kernel, on_kernel, self) < 0)
        guard_close (self);
    else
        self->kernel_registered = true;
    return 0;
}

/* A nonblocking connection to the socket at path, which must be a socket
   and not a symlink to one. -1 with errno. */
static int
guard_connect_kernel (const char *path)
{
    int pfd = open (path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0)
        return -1;
    struct stat st;
    int fd = -1;
    if (fstat (pfd, &st) < 0)
        goto out;
    if (!S_ISSOCK (st.st_mode)) {
        errno = S_ISLNK (st.st_mode) ? ELOOP : ENOTSOCK;
        goto out;
    }
    fd = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto out;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf (addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d", pfd);
    if (connect (fd, (struct sockaddr *) &addr, sizeof addr) < 0) {
        int saved = errno;
        close (fd);
        fd = -1;
        errno = saved;
    }
out:;
    int saved = errno;
    close (pfd);
    errno = saved;
    return fd;
}

/* A listener on a fresh abstract name; endpoint gets its ipc:// form. */
static int
guard_listen (char *endpoint, size_t endpoint_size)
{
    int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    socklen_t len = sizeof (sa_family_t); /* autobind: the kernel picks a free name */
    if (bind (fd, (struct sockaddr *) &addr, len) < 0 || listen (fd, 4) < 0)
        goto fail;
    len = sizeof addr;
    if (getsockname (fd, (struct sockaddr *) &addr, &len) < 0 || len <= offsetof (struct sockaddr_un, sun_path) + 1)
        goto fail;
    size_t name_len = len - offsetof (struct sockaddr_un, sun_path) - 1;
    if ((size_t) snprintf (endpoint, endpoint_size, "ipc://@%.*s", (int) name_len, addr.sun_path + 1)
        >= endpoint_size) {
        errno = ENAMETOOLONG;
        goto fail;
    }
    return fd;
fail:;
    int saved = errno;
    close (fd);
    errno = saved;
    return -1;
}

gw_zmtp_guard_t *
gw_zmtp_guard_new (gw_io_t *io, const char *path, const gw_zmtp_limits_t *limits, const char *conversation,
                   const char *channel, char *endpoint, size_t endpoint_size)
{
    int kernel = guard_connect_kernel (path);
    if (kernel < 0)
        return NULL;
    int listener = guard_listen (endpoint, endpoint_size);
    if (listener < 0) {
        int saved = errno;
        close (kernel);
        errno = saved;
        return NULL;
    }
    gw_zmtp_guard_t *self = wire_xcalloc (1, sizeof *self);
    self->io = io;
    self->conversation = wire_xstrdup (conversation);
    self->channel = wire_xstrdup (channel);
    gw_zmtp_scan_init (&self->scan, limits);
    self->kernel = (zmq_pollitem_t){NULL, kernel, ZMQ_POLLIN, 0};
    self->gateway = (zmq_pollitem_t){NULL, -1, 0, 0};
    self->listener = (zmq_pollitem_t){NULL, listener, ZMQ_POLLIN, 0};
    if (gw_io_poller (io, &self->listener, on_listener, self) < 0) {
        int saved = errno;
        close (listener);
        self->listener.fd = -1;
        gw_zmtp_guard_destroy (&self);
        errno = saved;
        return NULL;
    }
    return self;
}

void
gw_zmtp_guard_destroy (gw_zmtp_guard_t **self_p)
{
    gw_zmtp_guard_t *self = *self_p;
    if (!self)
        return;
    guard_close (self);
    free (self->conversation);
    free (self->channel);
    free (self);
    *self_p = NULL;
}

const char *
gw_zmtp_guard_cut (const gw_zmtp_guard_t *self)
{
    return self ? self->cut : NULL;
}
