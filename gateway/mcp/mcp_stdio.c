/*  mcp_stdio.c - MCP on stdio: one JSON-RPC message per line on stdin,
    one per line on stdout, logs never there.

    Every request of the one client shares one sink (stdout). stdin at its
    end, or a signal (mcp_main.c), means the client is gone: the code its
    calls run is interrupted and the front ends. The sink is forgotten by
    the dispatcher before it is freed (mcp_stdio_end, at the latest in
    mcp_stdio_destroy): the dispatcher outlives the transport, and a call
    it ends later (its conversation closed at the front's end) has nowhere
    to go.
*/
#include "mcp.h"

/* Answers waiting for a client that does not read stdout, at most; more
   and the client is taken as gone. */
#define MCP_STDIO_OUT_MAX ((size_t) 256 << 20)
/* How long the end waits for the client to read what is still queued. */
#define MCP_STDIO_FLUSH_MS 5000

struct mcp_stdio {
    mcp_sink_t sink; /* first: the sink is the transport */
    mcp_server_t *server;
    mcp_line_t *in;
    mcp_line_out_t *out;
    bool closed;    /* the client is gone, or stdout is */
    bool abandoned; /* the dispatcher forgot the sink */
};

static void
s_send (mcp_sink_t *sink, json_t *msg)
{
    mcp_stdio_t *self = (mcp_stdio_t *) sink;
    if (mcp_line_send (self->out, msg) < 0 && !self->closed) {
        gw_log ("mcp_client_gone", "{s:s}", "reason", "stdout closed or not read");
        self->closed = true;
    }
}

static const mcp_sink_fns_t s_fns = {s_send, NULL};

static void
s_on_line (const char *line, size_t len, void *arg)
{
    mcp_stdio_t *self = arg;
    if (line && len == 0)
        return; /* a blank line is no message */
    mcp_server_receive (self->server, line, len, &self->sink);
}

static void
s_on_eof (void *arg)
{
    mcp_stdio_end (arg, "stdin closed");
}

void
mcp_stdio_end (mcp_stdio_t *self, const char *reason)
{
    if (self->abandoned)
        return;
    gw_log ("mcp_client_gone", "{s:s}", "reason", reason);
    mcp_line_destroy (&self->in); /* nothing more is read */
    mcp_server_abandon (self->server, &self->sink);
    self->abandoned = self->closed = true;
}

mcp_stdio_t *
mcp_stdio_new (zloop_t *loop, mcp_server_t *server, size_t max_line_bytes, int out)
{
    mcp_stdio_t *self = wire_xcalloc (1, sizeof *self);
    self->out = mcp_line_out_new (loop, out, MCP_STDIO_OUT_MAX);
    self->sink = (mcp_sink_t) {.fns = &s_fns, .scope = ""};
    self->server = server;
    self->in = mcp_line_new (loop, 0, max_line_bytes, s_on_line, s_on_eof, self);
    return self;
}

bool
mcp_stdio_closed (const mcp_stdio_t *self)
{
    return self->closed;
}

void
mcp_stdio_destroy (mcp_stdio_t **self_p)
{
    mcp_stdio_t *self = *self_p;
    if (!self)
        return;
    mcp_stdio_end (self, "the front ends");
    mcp_line_out_destroy (&self->out, MCP_STDIO_FLUSH_MS);
    free (self);
    *self_p = NULL;
}
