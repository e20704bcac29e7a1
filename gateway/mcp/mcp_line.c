/*  mcp_line.c - MCP's stdio framing: one JSON-RPC message per line.

    The buffer never holds more than max_bytes plus one read: a longer line
    is dropped as it streams in (everything up to its newline), so a client
    cannot make the front allocate without end, and the next line is read
    as usual.
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

int
mcp_line_write (int fd, const json_t *json)
{
    char *text = json_dumps (json, JSON_COMPACT);
    if (!text)
        return -1;
    size_t len = strlen (text);
    text[len] = '\n'; /* over the NUL: the buffer has len + 1 bytes */
    size_t done = 0;
    int rc = 0;
    while (done < len + 1) {
        ssize_t n = write (fd, text + done, len + 1 - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            /* a non-blocking pipe that is full: wait for the reader */
            zmq_pollitem_t item = {.fd = fd, .events = ZMQ_POLLOUT};
            zmq_poll (&item, 1, -1);
            continue;
        }
        if (n <= 0) {
            rc = -1;
            break;
        }
        done += (size_t) n;
    }
    free (text);
    return rc;
}
