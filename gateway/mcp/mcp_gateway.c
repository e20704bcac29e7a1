/*  mcp_gateway.c - the gateway the front is a client of.

    With --connection-file it is a running daemon, reached on its
    authenticated control socket as `kennel info` reaches it. Otherwise it
    is a gateway embedded in this very process (mcp_main.c), or the daemon
    the front lives in (the HTTP front's /mcp): control requests then run
    against its core (mcp_core.c), nothing of MCP in the core either way.
*/
#include "mcp.h"

#include <string.h>

#define MCP_GATEWAY_INFO_MS 5000

typedef struct {
    char msg_id[WIRE_ID_SIZE + 8];
    mcp_control_fn *done;
    void *arg;
    int timer;
    mcp_gateway_t *gw;
    mcp_core_req_t *core_req; /* inside the daemon: the request being run */
} pending_t;

struct mcp_gateway {
    zloop_t *loop;
    gw_server_t *core;     /* the gateway in this process, or NULL */
    bool owned;            /* embedded for this front: its conversations end with it */
    char *connection_file; /* the file read */
    zsock_t *control;
    wire_key_t *key;
    char session[WIRE_ID_SIZE];
    zlistx_t *pending; /* pending_t */
    bool ready;
    mcp_gateway_ready_fn *on_ready;
    void *ready_arg;
};

static void
s_pending_free (pending_t **p_p)
{
    pending_t *p = *p_p;
    if (!p)
        return;
    gw_timer_end (p->gw->loop, p->timer);
    mcp_core_cancel (p->core_req);
    free (p);
    *p_p = NULL;
}

static void
s_pending_finish (mcp_gateway_t *self, pending_t *p, const json_t *content)
{
    void *handle = zlistx_find (self->pending, p);
    if (handle)
        zlistx_detach (self->pending, handle);
    mcp_control_fn *done = p->done;
    void *arg = p->arg;
    s_pending_free (&p);
    if (done)
        done (content, arg);
}

static int
s_on_control (zloop_t *loop, zsock_t *sock, void *arg)
{
    mcp_gateway_t *self = arg;
    zmsg_t *msg = zmsg_recv (sock);
    wire_error_t err;
    wire_msg_t *m = msg ? wire_msg_decode (&msg, self->key, NULL, &wire_limits_default, &err) : NULL;
    const char *parent = m ? json_string_value (json_object_get (m->parent_header, "msg_id")) : NULL;
    pending_t *p = NULL;
    if (parent)
        for (p = zlistx_first (self->pending); p && !streq (p->msg_id, parent); p = zlistx_next (self->pending))
            ;
    if (p)
        s_pending_finish (self, p, m->content);
    else if (!m)
        gw_log_limited ("mcp/gateway", "mcp_bad_message", "{s:s}", "reason", wire_error_name (err));
    wire_msg_destroy (&m);
    return 0;
}

static int
s_on_request_timeout (zloop_t *loop, int timer_id, void *arg)
{
    pending_t *p = arg;
    p->timer = 0;
    gw_log ("mcp_gateway_timeout", "{s:s}", "msg_id", p->msg_id);
    s_pending_finish (p->gw, p, NULL);
    return 0;
}

static void
s_on_core_reply (const json_t *content, void *arg)
{
    pending_t *p = arg;
    p->core_req = NULL;
    s_pending_finish (p->gw, p, content);
}

/* Inside the daemon: the request runs against its core. */
static void
s_core_request (mcp_gateway_t *self, const char *msg_type, json_t *content, int timeout_ms, mcp_control_fn *done,
                void *arg)
{
    pending_t *p = wire_xcalloc (1, sizeof *p);
    p->done = done;
    p->arg = arg;
    p->gw = self;
    p->timer = gw_timer_start (self->loop, (size_t) timeout_ms, 1, s_on_request_timeout, p);
    zlistx_add_end (self->pending, p);
    p->core_req = mcp_core_request (self->loop, self->core, msg_type, content, s_on_core_reply, p);
}

void
mcp_gateway_request (mcp_gateway_t *self, const char *msg_type, json_t *content, int timeout_ms, mcp_control_fn *done,
                     void *arg)
{
    if (self->core) {
        s_core_request (self, msg_type, content, timeout_ms, done, arg);
        return;
    }
    wire_msg_t *req = wire_msg_new (self->session, msg_type, NULL);
    wire_msg_set_content (req, content);
    pending_t *p = wire_xcalloc (1, sizeof *p);
    snprintf (p->msg_id, sizeof p->msg_id, "%s", wire_msg_id (req));
    p->done = done;
    p->arg = arg;
    p->gw = self;
    p->timer = gw_timer_start (self->loop, (size_t) timeout_ms, 1, s_on_request_timeout, p);
    zlistx_add_end (self->pending, p);
    wire_msg_send (req, zsock_resolve (self->control), self->key);
    wire_msg_destroy (&req);
}

void
mcp_gateway_forget (mcp_gateway_t *self, void *arg)
{
    for (pending_t *p = zlistx_first (self->pending); p; p = zlistx_next (self->pending))
        if (p->arg == arg)
            p->done = NULL;
}

/* Connects to the gateway of a connection file; -1 + *errmsg. */
static int
s_connect (mcp_gateway_t *self, char **errmsg)
{
    json_error_t jerr;
    json_t *file = json_load_file (self->connection_file, 0, &jerr);
    const char *key = json_string_value (json_object_get (file, "key"));
    int port = (int) json_integer_value (json_object_get (file, "control_port"));
    wire_error_t err;
    self->key = key ? wire_key_new (json_string_value (json_object_get (file, "signature_scheme")), key, strlen (key),
                                    &err)
                    : NULL;
    self->control = zsock_new (ZMQ_DEALER);
    zsock_set_linger (self->control, 0);
    int rc = self->key && port > 0 ? gw_client_connect (self->control, file, port) : -1;
    if (rc < 0)
        *errmsg = wire_xasprintf ("%s is not a usable gateway connection file (%s)", self->connection_file,
                                  file ? "a field is missing" : jerr.text);
    else
        zloop_reader (self->loop, self->control, s_on_control, self);
    json_decref (file);
    return rc < 0 ? -1 : 0;
}

static void
s_ready (mcp_gateway_t *self, bool ok, const char *errmsg)
{
    self->ready = ok;
    if (self->on_ready)
        self->on_ready (self, ok, errmsg, self->ready_arg);
}

/* A running daemon is used once it answered, as `kennel info` asks: a
   file left by a daemon that is gone fails at start, not at each call. */
static void
s_on_info (const json_t *content, void *arg)
{
    mcp_gateway_t *self = arg;
    if (!content) {
        char *why = wire_xasprintf ("no answer from the gateway of %s within %d s", self->connection_file,
                                    MCP_GATEWAY_INFO_MS / 1000);
        s_ready (self, false, why);
        free (why);
        return;
    }
    gw_log ("mcp_gateway_attached", "{s:s, s:O}", "connection_file", self->connection_file, "ready",
            json_object_get (content, "ready") ?: json_null ());
    s_ready (self, true, NULL);
}

mcp_gateway_t *
mcp_gateway_start (zloop_t *loop, const char *connection_file, mcp_gateway_ready_fn *ready, void *arg)
{
    mcp_gateway_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->pending = zlistx_new ();
    self->on_ready = ready;
    self->ready_arg = arg;
    char id[WIRE_ID_SIZE];
    wire_id_new (id);
    snprintf (self->session, sizeof self->session, "%s", id);
    char *errmsg = NULL;
    self->connection_file = wire_xstrdup (connection_file);
    if (s_connect (self, &errmsg) < 0) {
        fprintf (stderr, "kennel mcp: %s\n", errmsg);
        free (errmsg);
        mcp_gateway_destroy (&self);
        return NULL;
    }
    mcp_gateway_request (self, "gateway_info_request", json_object (), MCP_GATEWAY_INFO_MS, s_on_info, self);
    return self;
}

mcp_gateway_t *
mcp_gateway_core (zloop_t *loop, gw_server_t *server, bool owned)
{
    mcp_gateway_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->core = server;
    self->owned = owned;
    self->pending = zlistx_new ();
    self->ready = true;
    return self;
}

gw_server_t *
mcp_gateway_core_server (const mcp_gateway_t *self)
{
    return self->core;
}

bool
mcp_gateway_ready (const mcp_gateway_t *self)
{
    return self->ready;
}

bool
mcp_gateway_owned (const mcp_gateway_t *self)
{
    return self->owned;
}

void
mcp_gateway_destroy (mcp_gateway_t **self_p)
{
    mcp_gateway_t *self = *self_p;
    if (!self)
        return;
    self->on_ready = NULL; /* the front is stopping: no news of readiness now */
    /* every request is answered, NULL: its owner frees what it holds */
    pending_t *p;
    while ((p = zlistx_first (self->pending)))
        s_pending_finish (self, p, NULL);
    zlistx_destroy (&self->pending);
    if (self->control)
        zloop_reader_end (self->loop, self->control);
    zsock_destroy (&self->control);
    wire_key_destroy (&self->key);
    free (self->connection_file);
    free (self);
    *self_p = NULL;
}
