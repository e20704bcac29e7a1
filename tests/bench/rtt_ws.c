/*  rtt_ws.c - one websocket client of a kernel of the HTTP front, with
    libwebsockets' client API and its own poll loop, speaking the
    v1.kernel.websocket.jupyter.org binary subprotocol (gateway/http/ws_codec.c:
    u64le count, u64le offsets, channel, header, parent_header, metadata,
    content, buffers).

    Every message received is decoded as a client must (its four JSON
    parts), as rtt_client.c decodes what ZeroMQ brings; a websocket message
    carries no signature, so there is no HMAC on this side.
*/
#include "bench_rtt.h"

#include <libwebsockets.h>
#include <stdio.h>
#include <string.h>

#define V1_PROTOCOL "v1.kernel.websocket.jupyter.org"
#define V1_PARTS 5 /* channel and the four JSON parts: 6 offsets without buffers */

struct rtt_ws {
    struct lws_context *context;
    struct lws *wsi;
    bool established, closed, timed_out;
    char session[WIRE_ID_SIZE];
    unsigned char *rx; /* the message being received */
    size_t rx_len;
    unsigned char *tx; /* LWS_PRE bytes, then the frame to send */
    size_t tx_len;
    rtt_wait_t *wait; /* the request in flight, or NULL (drain) */
    unsigned long frames; /* received so far */
};

static uint64_t
s_le64 (const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void
s_put_le64 (unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char) (v >> (8 * i));
}

/* A v1 frame from the server: its JSON parts folded into the wait. */
static void
s_frame_note (rtt_ws_t *self, const unsigned char *data, size_t size)
{
    uint64_t n = size >= 8 ? s_le64 (data) : 0;
    if (n < V1_PARTS + 1 || size < 8 * (n + 1)) {
        fprintf (stderr, "bench_front: a malformed v1 frame (%zu bytes)\n", size);
        return;
    }
    uint64_t off[V1_PARTS + 1];
    for (int i = 0; i <= V1_PARTS; i++)
        off[i] = s_le64 (data + 8 * (i + 1));
    for (int i = 0; i < V1_PARTS; i++)
        if (off[i] > off[i + 1] || off[i + 1] > size) {
            fprintf (stderr, "bench_front: a malformed v1 frame (offsets)\n");
            return;
        }
    self->frames++;
    bool iopub = off[1] - off[0] == 5 && memcmp (data + off[0], "iopub", 5) == 0;
    json_t *json[4];
    for (int i = 0; i < 4; i++)
        json[i] = json_loadb ((const char *) data + off[i + 1], off[i + 2] - off[i + 1], 0, NULL);
    if (json[0] && json[1] && json[2] && json[3] && self->wait)
        rtt_wait_note (self->wait, iopub, json[0], json[1], json[3]);
    for (int i = 0; i < 4; i++)
        json_decref (json[i]);
}

static int
s_receive (rtt_ws_t *self, struct lws *wsi, const void *in, size_t len)
{
    self->rx = wire_xreallocarray (self->rx, self->rx_len + len + 1, 1);
    memcpy (self->rx + self->rx_len, in, len);
    self->rx_len += len;
    if (!lws_is_final_fragment (wsi) || lws_remaining_packet_payload (wsi))
        return 0;
    s_frame_note (self, self->rx, self->rx_len);
    self->rx_len = 0;
    return 0;
}

static int
s_writable (rtt_ws_t *self, struct lws *wsi)
{
    if (!self->tx)
        return 0;
    int n = lws_write (wsi, self->tx + LWS_PRE, self->tx_len, LWS_WRITE_BINARY);
    free (self->tx);
    self->tx = NULL;
    return n < 0 ? -1 : 0;
}

static int
s_callback (struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    rtt_ws_t *self = lws_context_user (lws_get_context (wsi));
    switch (reason) {
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        self->established = true;
        break;
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        fprintf (stderr, "bench_front: websocket: %s\n", in ? (const char *) in : "connection error");
        self->closed = true;
        self->wsi = NULL;
        break;
    case LWS_CALLBACK_CLIENT_RECEIVE:
        return s_receive (self, wsi, in, len);
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        return s_writable (self, wsi);
    case LWS_CALLBACK_TIMER:
        self->timed_out = true;
        break;
    case LWS_CALLBACK_CLIENT_CLOSED:
        if (!self->closed)
            fprintf (stderr, "bench_front: the server closed the websocket\n");
        self->closed = true;
        self->wsi = NULL;
        break;
    default:
        break;
    }
    return 0;
}

static const struct lws_protocols s_protocols[] = {
    {V1_PROTOCOL, s_callback, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* Runs lws's loop until done(self) or the websocket closed or timed out. */
static bool
s_run_until (rtt_ws_t *self, bool (*done) (const rtt_ws_t *))
{
    while (!done (self) && !self->closed && !self->timed_out)
        if (lws_service (self->context, 0) < 0)
            return false;
    return done (self);
}

static bool
s_established (const rtt_ws_t *self)
{
    return self->established;
}

static bool
s_complete (const rtt_ws_t *self)
{
    return self->wait->replied && self->wait->idle;
}

rtt_ws_t *
rtt_ws_new (const char *base_url, const char *token, const char *kernel_id)
{
    rtt_ws_t *self = wire_xcalloc (1, sizeof *self);
    wire_id_new (self->session);
    lws_set_log_level (LLL_ERR, NULL);
    struct lws_context_creation_info info = {0};
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = s_protocols;
    info.user = self;
    self->context = lws_create_context (&info);
    char *url = wire_xstrdup (base_url);
    const char *scheme, *address, *rest;
    int port;
    if (!self->context || lws_parse_uri (url, &scheme, &address, &port, &rest) != 0) {
        fprintf (stderr, "bench_front: cannot use %s\n", base_url);
        free (url);
        rtt_ws_destroy (&self);
        return NULL;
    }
    char *path = wire_xasprintf ("/api/kernels/%s/channels%s%s", kernel_id, token ? "?token=" : "",
                                 token ? token : "");
    struct lws_client_connect_info ci = {0};
    ci.context = self->context;
    ci.address = address;
    ci.port = port;
    ci.path = path;
    ci.host = address;
    ci.origin = address;
    ci.protocol = V1_PROTOCOL;
    ci.pwsi = &self->wsi;
    lws_client_connect_via_info (&ci);
    if (self->wsi)
        lws_set_timer_usecs (self->wsi, 30 * LWS_USEC_PER_SEC);
    bool ok = self->wsi && s_run_until (self, s_established);
    if (self->wsi)
        lws_set_timer_usecs (self->wsi, LWS_SET_TIMER_USEC_CANCEL);
    free (path);
    free (url);
    if (!ok) {
        fprintf (stderr, "bench_front: no websocket to %s, kernel %s\n", base_url, kernel_id);
        rtt_ws_destroy (&self);
    }
    return self;
}

void
rtt_ws_destroy (rtt_ws_t **self_p)
{
    rtt_ws_t *self = *self_p;
    if (!self)
        return;
    if (self->context)
        lws_context_destroy (self->context);
    free (self->rx);
    free (self->tx);
    free (self);
    *self_p = NULL;
}

/* The v1 frame of a shell request: msg_id copied into id. */
static void
s_frame_make (rtt_ws_t *self, const char *msg_type, json_t *content, char id[WIRE_ID_SIZE])
{
    wire_msg_t *msg = wire_msg_new (self->session, msg_type, NULL);
    wire_msg_set_content (msg, content);
    snprintf (id, WIRE_ID_SIZE, "%s", wire_msg_id (msg));
    char *part[V1_PARTS] = {wire_xstrdup ("shell"), json_dumps (msg->header, JSON_COMPACT),
                            json_dumps (msg->parent_header, JSON_COMPACT), json_dumps (msg->metadata, JSON_COMPACT),
                            json_dumps (msg->content, JSON_COMPACT)};
    wire_msg_destroy (&msg);
    size_t head = 8 * (V1_PARTS + 2), size = head;
    for (int i = 0; i < V1_PARTS; i++)
        size += strlen (part[i]);
    self->tx = wire_xmalloc (LWS_PRE + size);
    self->tx_len = size;
    unsigned char *p = self->tx + LWS_PRE;
    s_put_le64 (p, V1_PARTS + 1);
    size_t at = head;
    for (int i = 0; i < V1_PARTS; i++) {
        s_put_le64 (p + 8 * (i + 1), at);
        memcpy (p + at, part[i], strlen (part[i]));
        at += strlen (part[i]);
        free (part[i]);
    }
    s_put_le64 (p + 8 * (V1_PARTS + 1), at);
}

int64_t
rtt_ws_execute (rtt_ws_t *self, const char *code, int timeout_ms)
{
    if (self->closed)
        return -1;
    char id[WIRE_ID_SIZE];
    int64_t start = rtt_now_ns ();
    s_frame_make (self, "execute_request", rtt_execute_content (code), id);
    rtt_wait_t w = {.id = id, .reply_type = "execute_reply"};
    self->wait = &w;
    self->timed_out = false;
    lws_set_timer_usecs (self->wsi, (lws_usec_t) timeout_ms * 1000);
    lws_callback_on_writable (self->wsi);
    bool done = s_run_until (self, s_complete);
    self->wait = NULL;
    if (self->wsi)
        lws_set_timer_usecs (self->wsi, LWS_SET_TIMER_USEC_CANCEL);
    if (!done) {
        fprintf (stderr, "bench_front: no execute_reply and idle over the websocket within %d ms\n", timeout_ms);
        return -1;
    }
    if (w.failed) {
        fprintf (stderr, "bench_front: execute_reply status is not ok for %s\n", code);
        return -1;
    }
    return rtt_now_ns () - start;
}

void
rtt_ws_drain (rtt_ws_t *self)
{
    /* a negative timeout: lws handles what is pending without waiting; until
       two passes in a row bring nothing */
    for (int quiet = 0; quiet < 2 && !self->closed;) {
        unsigned long before = self->frames;
        if (lws_service (self->context, -1) < 0)
            break;
        quiet = self->frames == before ? quiet + 1 : 0;
    }
}
