/*  mcp_line.c - MCP's stdio framing: one JSON-RPC message per line, read
    and written inside the loop.

    The read buffer never holds more than max_bytes plus one read: a longer
    line is dropped as it streams in (everything up to its newline), so a
    peer cannot make the front allocate without end, and the next line is
    read as usual. Writes never block: what the reader does not take waits,
    bounded, and goes when its fd is writable; a reader that lets the bound
    fill is given up (a forwarded MCP server that stops reading must not
    stop the daemon's loop, nor a client that stops reading the front's).
*/
#include "mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define MCP_LINE_READ 65536

struct mcp_line {
    zloop_t *loop;
    zmq_pollitem_t item;
    size_t max_bytes;
    char *buf;
    size_t len;
    size_t dropped; /* > 0: inside a line over the limit, bytes so far */
    mcp_line_fn *on_line;
    mcp_line_eof_fn *on_eof;
    void *arg;
};

/* Hands out the complete lines of buf[0..len); keeps the rest. */
static void
s_split (mcp_line_t *self)
{
    size_t start = 0;
    char *nl;
    while ((nl = memchr (self->buf + start, '\n', self->len - start))) {
        size_t n = (size_t) (nl - (self->buf + start));
        if (self->dropped || n > self->max_bytes) {
            /* over the limit: its start was dropped already, or it came
               whole within one read */
            self->on_line (NULL, self->dropped + n, self->arg);
            self->dropped = 0;
        }
        else {
            *nl = 0;
            size_t len = n;
            if (len && self->buf[start + len - 1] == '\r')
                self->buf[start + --len] = 0; /* tolerated: some clients end lines with CRLF */
            self->on_line (self->buf + start, len, self->arg);
        }
        start += n + 1;
    }
    memmove (self->buf, self->buf + start, self->len - start);
    self->len -= start;
    if (self->len > self->max_bytes) {
        self->dropped += self->len;
        self->len = 0;
    }
}

static int
s_on_readable (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    mcp_line_t *self = arg;
    ssize_t n = read (item->fd, self->buf + self->len, MCP_LINE_READ);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0) {
        zloop_poller_end (loop, item);
        self->item.fd = -1;
        self->on_eof (self->arg);
        return 0;
    }
    self->len += (size_t) n;
    s_split (self);
    return 0;
}

mcp_line_t *
mcp_line_new (zloop_t *loop, int fd, size_t max_bytes, mcp_line_fn *on_line, mcp_line_eof_fn *on_eof, void *arg)
{
    mcp_line_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->max_bytes = max_bytes;
    self->buf = wire_xmalloc (max_bytes + MCP_LINE_READ + 1);
    self->on_line = on_line;
    self->on_eof = on_eof;
    self->arg = arg;
    fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
    self->item = (zmq_pollitem_t) {.fd = fd, .events = ZMQ_POLLIN};
    zloop_poller (loop, &self->item, s_on_readable, self);
    zloop_poller_set_tolerant (loop, &self->item);
    return self;
}

void
mcp_line_destroy (mcp_line_t **self_p)
{
    mcp_line_t *self = *self_p;
    if (!self)
        return;
    if (self->item.fd >= 0)
        zloop_poller_end (self->loop, &self->item);
    free (self->buf);
    free (self);
    *self_p = NULL;
}

/* ---- writing ------------------------------------------------------------ */

struct mcp_line_out {
    zloop_t *loop;
    zmq_pollitem_t item;
    bool polling; /* item is on the loop: bytes wait */
    size_t max_bytes;
    char *buf; /* waiting bytes: buf[head..len) */
    size_t head, len;
    bool failed; /* the fd is gone, or the queue passed its bound */
};

/* Writes what waits until the fd takes no more; -1 when it is gone. */
static int
s_out_write (mcp_line_out_t *self)
{
    while (self->head < self->len) {
        ssize_t n = write (self->item.fd, self->buf + self->head, self->len - self->head);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0)
            return -1;
        self->head += (size_t) n;
    }
    self->head = self->len = 0;
    return 0;
}

static int s_on_writable (zloop_t *loop, zmq_pollitem_t *item, void *arg);

/* Polls for POLLOUT while bytes wait, and only then. */
static void
s_out_poll (mcp_line_out_t *self)
{
    bool waiting = self->len > self->head;
    if (waiting && !self->polling) {
        zloop_poller (self->loop, &self->item, s_on_writable, self);
        zloop_poller_set_tolerant (self->loop, &self->item); /* a gone reader is seen by write () */
    }
    if (!waiting && self->polling)
        zloop_poller_end (self->loop, &self->item);
    self->polling = waiting;
}

static void
s_out_fail (mcp_line_out_t *self, const char *why)
{
    if (!self->failed)
        gw_log ("mcp_line_write_failed", "{s:i, s:s}", "fd", self->item.fd, "why", why);
    self->failed = true;
    self->head = self->len = 0;
    s_out_poll (self);
}

static int
s_on_writable (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    mcp_line_out_t *self = arg;
    if (s_out_write (self) < 0)
        s_out_fail (self, "the reader is gone");
    s_out_poll (self);
    return 0;
}

mcp_line_out_t *
mcp_line_out_new (zloop_t *loop, int fd, size_t max_bytes)
{
    mcp_line_out_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->max_bytes = max_bytes;
    fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
    self->item = (zmq_pollitem_t) {.fd = fd, .events = ZMQ_POLLOUT};
    return self;
}

int
mcp_line_send (mcp_line_out_t *self, json_t *msg)
{
    char *text = json_dumps (msg, JSON_COMPACT);
    json_decref (msg);
    size_t n = text ? strlen (text) : 0;
    if (!text || self->failed || self->len - self->head + n + 1 > self->max_bytes) {
        free (text);
        if (!self->failed && n)
            s_out_fail (self, "the reader does not read: the bytes waiting passed their bound");
        return -1;
    }
    if (self->head) {
        memmove (self->buf, self->buf + self->head, self->len - self->head);
        self->len -= self->head;
        self->head = 0;
    }
    self->buf = wire_xreallocarray (self->buf, self->len + n + 1, 1);
    memcpy (self->buf + self->len, text, n);
    self->buf[self->len + n] = '\n';
    self->len += n + 1;
    free (text);
    if (s_out_write (self) < 0) {
        s_out_fail (self, "the reader is gone");
        return -1;
    }
    s_out_poll (self);
    return 0;
}

void
mcp_line_out_destroy (mcp_line_out_t **self_p, int timeout_ms)
{
    mcp_line_out_t *self = *self_p;
    if (!self)
        return;
    int64_t deadline = zclock_mono () + timeout_ms;
    while (self->len > self->head && !self->failed && zclock_mono () < deadline) {
        zmq_pollitem_t item = {.fd = self->item.fd, .events = ZMQ_POLLOUT};
        if (zmq_poll (&item, 1, (long) (deadline - zclock_mono ())) < 0 || s_out_write (self) < 0)
            break;
    }
    if (self->polling)
        zloop_poller_end (self->loop, &self->item);
    free (self->buf);
    free (self);
    *self_p = NULL;
}
