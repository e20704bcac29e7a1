/*  ws_conn.c - one websocket on /api/kernels/{id}/channels: a peer of its
    conversation (gw_front.h).

    The core delivers to this peer the replies and stdin messages
    (tool_request, input_request) of the requests it submitted, every iopub
    message, and events; the websocket submits its client's messages on
    shell, control and stdin. A peer is attached before the upgrade
    completes, so nothing published after the connect is missed: a client's
    first execute_request right after connecting gets all its outputs.

    Bounds: a client message is at most max_message_bytes (close 1009);
    what waits to be written to a client that does not read is at most
    http.ws_queue_bytes, passed by one message only when the queue was
    empty (beyond: close 1008 and a log line; the kernel and other
    websockets go on). Bad frames (not JSON, no header, unknown channel)
    close with 1007 and a log line naming the problem. The kernel's death
    is told as iopub status "dead" (as jupyter_server tells it); the
    conversation's close closes the websocket with 1001.
*/
#include "http.h"

#include <string.h>

/* lws's own write type for a close frame: its public header reserves 4 for
   it ("handled by lws_close_reason") without naming it. */
#define WS_WRITE_CLOSE ((enum lws_write_protocol) 4)

typedef struct {
    unsigned char *data; /* LWS_PRE bytes, then size bytes */
    size_t size;
    bool binary;
} frame_t;

struct ws_conn {
    http_front_t *front;
    struct lws *wsi;
    gw_peer_t *peer; /* NULL once the conversation closed */
    gw_conv_t *conv; /* NULL once the conversation closed: the core frees it */
    char kernel_id[40]; /* for the log lines after that */
    ws_protocol_t proto;
    zlistx_t *out; /* frame_t* for the client */
    size_t out_bytes;
    unsigned char *rx; /* the client message being received */
    size_t rx_len;
    int close_code;
    char close_reason[120];
    char source[96];
    char session[WIRE_ID_SIZE];
};

static void
frame_destroy (frame_t **self_p)
{
    if (*self_p) {
        free ((*self_p)->data);
        free (*self_p);
        *self_p = NULL;
    }
}

static void
out_clear (ws_conn_t *self)
{
    frame_t *f;
    while ((f = zlistx_detach (self->out, NULL)))
        frame_destroy (&f);
    self->out_bytes = 0;
}

static void
log_close (ws_conn_t *self, const char *event, int code, const char *reason)
{
    gw_log_limited (self->source, event, "{s:s, s:s, s:i, s:s}", "websocket", self->source, "kernel",
                    self->kernel_id, "code", code, "reason", reason);
}

void
ws_conn_close (ws_conn_t *self, int code, const char *reason)
{
    if (self->close_code)
        return;
    self->close_code = code;
    snprintf (self->close_reason, sizeof self->close_reason, "%s", reason);
    out_clear (self);
    lws_callback_on_writable (self->wsi);
}

/* Closes from inside an lws callback: -1 ends the connection there. */
static int
close_now (ws_conn_t *self, int code, const char *reason)
{
    log_close (self, "websocket_closed", code, reason);
    lws_close_reason (self->wsi, (enum lws_close_status) code, (unsigned char *) reason, strlen (reason));
    return -1;
}

static void
queue (ws_conn_t *self, unsigned char *data, size_t size, bool binary)
{
    if (self->close_code) {
        free (data);
        return;
    }
    /* a big output still reaches a client that reads */
    if (self->out_bytes && self->out_bytes + size > self->front->settings.ws_queue_bytes) {
        free (data);
        char why[120];
        snprintf (why, sizeof why, "the client does not read: over %zu bytes waiting (http.ws_queue_bytes)",
                  self->front->settings.ws_queue_bytes);
        log_close (self, "websocket_slow_reader", LWS_CLOSE_STATUS_POLICY_VIOLATION, why);
        ws_conn_close (self, LWS_CLOSE_STATUS_POLICY_VIOLATION, why);
        return;
    }
    frame_t *f = wire_xcalloc (1, sizeof *f);
    f->data = data;
    f->size = size;
    f->binary = binary;
    zlistx_add_end (self->out, f);
    self->out_bytes += size;
    lws_callback_on_writable (self->wsi);
}

static void
on_deliver (void *arg, wire_channel_t channel, zmsg_t **msg_p)
{
    ws_conn_t *self = arg;
    zmsg_t *parts = gw_front_msg_unwrap (msg_p, NULL);
    size_t size;
    bool binary;
    unsigned char *data = parts ? ws_codec_encode (self->proto, parts, channel, &size, &binary) : NULL;
    zmsg_destroy (&parts);
    if (data)
        queue (self, data, size, binary);
    http_loop_run_soon (self->front->uv);
}

/* iopub status as the core would publish it, for an event of ours */
static void
status_send (ws_conn_t *self, const char *state)
{
    wire_msg_t *m = wire_msg_new (self->session, "status", NULL);
    wire_msg_set_content (m, json_pack ("{s:s}", "execution_state", state));
    zmsg_t *parts = zmsg_new ();
    json_t *json[4] = {m->header, m->parent_header, m->metadata, m->content};
    for (int i = 0; i < 4; i++) {
        char *text = json_dumps (json[i], JSON_COMPACT);
        zmsg_addmem (parts, text, strlen (text));
        free (text);
    }
    wire_msg_destroy (&m);
    size_t size;
    bool binary;
    unsigned char *data = ws_codec_encode (self->proto, parts, WIRE_IOPUB, &size, &binary);
    zmsg_destroy (&parts);
    if (data)
        queue (self, data, size, binary);
}

static void
on_event (void *arg, gw_event_t event, const char *detail)
{
    ws_conn_t *self = arg;
    if (event == GW_EVENT_KERNEL_DIED)
        status_send (self, "dead");
    else if (event == GW_EVENT_CLOSED) {
        self->peer = NULL; /* detached by the core */
        self->conv = NULL;
        ws_conn_close (self, LWS_CLOSE_STATUS_GOINGAWAY, "the kernel was shut down");
    }
    http_loop_run_soon (self->front->uv);
}

static const gw_front_fns_t ws_fns = {on_deliver, on_event};

ws_conn_t *
ws_conn_new (http_front_t *front, struct lws *wsi, gw_conv_t *conv, ws_protocol_t proto)
{
    ws_conn_t *self = wire_xcalloc (1, sizeof *self);
    self->front = front;
    self->wsi = wsi;
    self->conv = conv;
    snprintf (self->kernel_id, sizeof self->kernel_id, "%s", gw_conv_kernel_id (conv));
    self->proto = proto;
    self->out = zlistx_new ();
    wire_id_new (self->session);
    char peer[64];
    http_peer (wsi, peer, sizeof peer);
    snprintf (self->source, sizeof self->source, "websocket/%s/%p", peer, (void *) self);
    self->peer = gw_conv_attach (conv, &ws_fns, self);
    zlistx_add_end (front->websockets, self);
    gw_log ("websocket_open", "{s:s, s:s, s:s}", "websocket", self->source, "kernel", gw_conv_kernel_id (conv),
            "protocol", proto == WS_V1 ? HTTP_WS_V1 : "legacy");
    return self;
}

void
ws_conn_destroy (ws_conn_t **self_p)
{
    ws_conn_t *self = *self_p;
    if (!self)
        return;
    gw_front_detach (&self->peer);
    void *handle = zlistx_find (self->front->websockets, self);
    if (handle)
        zlistx_delete (self->front->websockets, handle);
    out_clear (self);
    zlistx_destroy (&self->out);
    free (self->rx);
    free (self);
    *self_p = NULL;
}

gw_conv_t *
ws_conn_conv (const ws_conn_t *self)
{
    return self->peer ? self->conv : NULL;
}

static int
message_handle (ws_conn_t *self, bool binary)
{
    const char *problem = NULL;
    wire_channel_t channel;
    zmsg_t *parts = ws_codec_decode (self->proto, self->rx, self->rx_len, binary, &channel, &problem);
    if (!parts)
        return close_now (self, LWS_CLOSE_STATUS_INVALID_PAYLOAD, problem);
    if (!self->peer) {
        zmsg_destroy (&parts);
        return close_now (self, LWS_CLOSE_STATUS_GOINGAWAY, "the kernel was shut down");
    }
    zmsg_t *msg = gw_front_msg_wrap (NULL, &parts);
    gw_front_submit (self->peer, channel, &msg);
    zmsg_destroy (&msg);
    return 0;
}

int
ws_conn_receive (ws_conn_t *self, const void *data, size_t len)
{
    if (self->close_code)
        return 0;
    size_t max = gw_server_config (self->front->server)->max_message_bytes;
    if (self->rx_len + len > max) {
        char why[120];
        snprintf (why, sizeof why, "a message larger than %zu bytes (max_message_bytes)", max);
        return close_now (self, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, why);
    }
    self->rx = wire_xreallocarray (self->rx, self->rx_len + len + 1, 1);
    if (len)
        memcpy (self->rx + self->rx_len, data, len);
    self->rx_len += len;
    if (!lws_is_final_fragment (self->wsi) || lws_remaining_packet_payload (self->wsi))
        return 0;
    int rc = message_handle (self, lws_frame_is_binary (self->wsi) != 0);
    free (self->rx);
    self->rx = NULL;
    self->rx_len = 0;
    return rc;
}

/* A close decided outside lws's callbacks, from the writable callback:
   lws 4.1 hangs up there without the frame lws_close_reason prepares, so
   the frame is written here first. */
static int
close_written (ws_conn_t *self)
{
    unsigned char frame[LWS_PRE + 125];
    size_t len = strlen (self->close_reason);
    len = len > 120 ? 120 : len;
    frame[LWS_PRE] = (unsigned char) (self->close_code >> 8);
    frame[LWS_PRE + 1] = (unsigned char) self->close_code;
    memcpy (frame + LWS_PRE + 2, self->close_reason, len);
    log_close (self, "websocket_closed", self->close_code, self->close_reason);
    /* behind a frame lws has only partly sent, a close frame would land in
       its payload: the connection is dropped instead */
    if (!lws_partial_buffered (self->wsi))
        lws_write (self->wsi, frame + LWS_PRE, len + 2, WS_WRITE_CLOSE);
    return -1;
}

int
ws_conn_writable (ws_conn_t *self)
{
    if (self->close_code)
        return close_written (self);
    frame_t *f = zlistx_detach (self->out, NULL);
    if (!f)
        return 0;
    self->out_bytes -= f->size;
    int n = lws_write (self->wsi, f->data + LWS_PRE, f->size, f->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
    frame_destroy (&f);
    if (n < 0)
        return -1;
    if (zlistx_size (self->out))
        lws_callback_on_writable (self->wsi);
    return 0;
}
