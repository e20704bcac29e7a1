/*  gw_zmq_front.c - the ZeroMQ front: one conversation's client sockets.

    shell, control, stdin (ROUTER), iopub (PUB), hb (REP), bound with the
    conversation's own key: tcp on the server's ip (CURVE servers of the
    conversation's own keys), ipc in the 0700 sock dir, or the ports of a
    Jupyter connection file (kernelspec mode). It is one peer of the core
    (gw_front.h) and routes by ROUTER identity itself: the identities are
    the route it submits with. A client's message is verified here (layout,
    size, signature, replay) before the core sees it; what the core
    delivers is signed with the same key here. Heartbeats are answered here.

    After its conversation closed, the shell, control and iopub sockets
    linger a while (gw_linger.h) with no kernel behind them: a request that
    was on its way at the close, which libzmq had not yet queued when the
    loop answered the queue, is answered there, ConversationClosed as the
    queued ones were, instead of being lost with the socket.
*/
#include "gw_zmq_front.h"
#include "gw_answer.h"
#include "gw_conv.h"
#include "gw_curve.h"
#include "gw_error.h"
#include "gw_front.h"
#include "gw_io.h"
#include "gw_linger.h"
#include "gw_log.h"
#include "gw_server_access.h"
#include "gw_util.h"
#include "wire.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* at most this many requests read from a closing conversation's shell
   socket (its queue holds GW_QUEUE_CONVERSATION per peer: gw_io_bound) */
#define DRAIN_AT_CLOSE_MAX 256
/* at most this many requests answered by a closed conversation's sockets;
   what comes after is read and dropped until they close */
#define LINGER_ANSWERS_MAX 256

struct gw_zmq {
    gw_server_t *server;
    gw_peer_t *peer; /* NULL until attached */
    char *conv_id;   /* for log lines, once attached */
    zsock_t *client[WIRE_CHANNEL_COUNT_];
    int ports[WIRE_CHANNEL_COUNT_];
    char *transport;
    char *ip; /* or the ipc path prefix */
    bool curve; /* the sockets are CURVE servers of curve_keys */
    gw_curve_keys_t curve_keys;
    wire_key_t *key;
    wire_replay_t *replay;
    /* from the close on: what a request still arriving is answered, as
       whom (the conversation's gateway session), and how many were */
    char *closed_evalue;
    char session[WIRE_ID_SIZE];
    int closed_answers;
};

static void zmq_deliver (void *arg, wire_channel_t channel, zmsg_t **msg_p);
static void zmq_event (void *arg, gw_event_t event, const char *detail);
static const gw_front_fns_t zmq_fns = {zmq_deliver, zmq_event};
static void zmq_destroy (gw_zmq_t **self_p);
static void linger_answer (gw_zmq_t *self, wire_channel_t channel, zmsg_t **msg_p);

/* ---- client -> core ------------------------------------------------------ */

/* A client's message verified with the conversation's key; NULL (dropped,
   logged) when bad. */
static zmsg_t *
client_recv (gw_zmq_t *self, zsock_t *sock, wire_channel_t channel)
{
    zmsg_t *msg = zmsg_recv (sock);
    if (!msg)
        return NULL;
    wire_error_t err = wire_frames_verify (msg, self->key, self->replay, gw_server_limits (self->server));
    if (err != WIRE_OK) {
        gw_log_bad_message (self->conv_id, gw_channel_name (channel), err, "client");
        zmsg_destroy (&msg);
    }
    return msg;
}

static int
on_client (gw_zmq_t *self, zsock_t *sock, wire_channel_t channel)
{
    zmsg_t *msg = client_recv (self, sock, channel);
    if (msg && self->peer)
        gw_front_submit (self->peer, channel, &msg);
    else if (msg && self->closed_evalue)
        linger_answer (self, channel, &msg);
    zmsg_destroy (&msg);
    return 0;
}

static int
on_client_shell (zloop_t *loop, zsock_t *sock, void *arg)
{
    return on_client (arg, sock, WIRE_SHELL);
}

static int
on_client_control (zloop_t *loop, zsock_t *sock, void *arg)
{
    return on_client (arg, sock, WIRE_CONTROL);
}

static int
on_client_stdin (zloop_t *loop, zsock_t *sock, void *arg)
{
    return on_client (arg, sock, WIRE_STDIN);
}

/* Heartbeats are answered here: the gateway is what clients talk to, and a
   kernel's death is reported by its pidfd, not by a missed beat. */
static int
on_client_hb (zloop_t *loop, zsock_t *sock, void *arg)
{
    zmsg_t *msg = zmsg_recv (sock);
    if (msg)
        zmsg_send (&msg, sock);
    return 0;
}

/* ---- core -> client ------------------------------------------------------ */

/* Everything the gateway signs for clients is remembered in the clients'
   replay cache: one key and one cache serve both directions, so a message
   the gateway sent (an iopub message any subscriber may have captured) is
   refused as a duplicate when it comes back on shell, control or stdin. */
static void
client_sent (gw_zmq_t *self, zframe_t *sig)
{
    if (wire_key_is_empty (self->key))
        return;
    if (!wire_replay_add (self->replay, (const char *) zframe_data (sig), zframe_size (sig)))
        gw_log_limited ("replay/record", "warning", "{s:s, s:s}", "conversation", self->conv_id, "reason",
                        "a signature sent to clients was already recorded or could not be");
}

/* Signed and sent without ever blocking the loop (sndtimeo 0): what does
   not fit a client's queue is dropped and logged. */
static void
zmq_deliver (void *arg, wire_channel_t channel, zmsg_t **msg_p)
{
    gw_zmq_t *self = arg;
    zframe_t *sig = gw_front_msg_sign (*msg_p, self->key);
    if (!sig) {
        zmsg_destroy (msg_p);
        return;
    }
    client_sent (self, sig);
    zsock_t *sock = self->client[channel];
    int rc = zmsg_send (msg_p, sock);
    gw_io_sent (gw_server_io (self->server), sock); /* a send may take the socket's wake-up (gw_io.c) */
    if (rc == 0 && !*msg_p)
        return;
    zmsg_destroy (msg_p);
    gw_log_dropped (self->conv_id, gw_channel_name (channel));
}

/* Execute requests already in the shell socket's queue when the
   conversation closes (sent before the close, not yet read by the loop,
   which may have dispatched the close first) are submitted, so the core
   answers them with the rest. */
static void
drain_shell (gw_zmq_t *self)
{
    zsock_t *shell = self->client[WIRE_SHELL];
    for (int n = 0; n < DRAIN_AT_CLOSE_MAX && (zsock_events (shell) & ZMQ_POLLIN); n++) {
        zmsg_t *msg = client_recv (self, shell, WIRE_SHELL);
        if (msg)
            gw_front_submit (self->peer, WIRE_SHELL, &msg);
    }
}

/* ---- after the close ---------------------------------------------------- */

/* gw_answer_send_fn: signed and sent as the core's deliveries are. */
static void
linger_send (void *arg, wire_channel_t channel, wire_msg_t *m)
{
    zmsg_t *msg = wire_msg_encode (m, NULL);
    wire_msg_destroy (&m);
    if (msg)
        zmq_deliver (arg, channel, &msg);
}

/* A request verified after the close: answered as the core answered those
   queued at the close (its header is checked as the relay checks one). */
static void
linger_answer (gw_zmq_t *self, wire_channel_t channel, zmsg_t **msg_p)
{
    if (channel == WIRE_STDIN || self->closed_answers >= LINGER_ANSWERS_MAX)
        return;
    wire_error_t err;
    json_t *header = wire_frames_peek (*msg_p, 0, &err);
    zmsg_t *ids = header ? wire_frames_pop_identities (*msg_p) : NULL;
    if (ids && json_is_string (json_object_get (header, "msg_type"))
        && json_is_string (json_object_get (header, "msg_id"))) {
        gw_answer_to_t to = {self->session, self->conv_id, linger_send, self};
        gw_answer_refuse (&to, channel, header, ids, gw_error_name (GW_E_CONVERSATION_CLOSED), self->closed_evalue,
                          NULL, true);
        if (++self->closed_answers == LINGER_ANSWERS_MAX)
            gw_log_limited ("linger/answers", "linger_answers_max", "{s:s, s:i}", "conversation", self->conv_id,
                            "answered", LINGER_ANSWERS_MAX);
    }
    else
        gw_log_bad_message (self->conv_id, gw_channel_name (channel), header ? WIRE_ERR_MISSING_HEADER_FIELD : err,
                            "client");
    zmsg_destroy (&ids);
    json_decref (header);
}

static void
channel_close (gw_zmq_t *self, wire_channel_t ch)
{
    if (!self->client[ch])
        return;
    gw_io_reader_end (gw_server_io (self->server), self->client[ch]);
    zsock_destroy (&self->client[ch]);
    if (streq (self->transport, "ipc")) {
        char path[GW_PATH_MAX];
        snprintf (path, sizeof path, "%s-%d", self->ip, self->ports[ch]);
        unlink (path);
    }
}

static void
linger_end (void *obj)
{
    gw_zmq_t *self = obj;
    zmq_destroy (&self);
}

/* The kernel is gone: no heartbeat is echoed and nothing is read from
   stdin any more; shell, control and iopub answer until the linger ends.
   A gateway that stops (or kernelspec mode, whose process exits with its
   conversation) closes them at once. */
static void
linger_start (gw_zmq_t *self)
{
    gw_server_t *server = self->server;
    if (!self->closed_evalue || gw_server_stopping (server) || gw_server_kernel_mode (server)) {
        zmq_destroy (&self);
        return;
    }
    channel_close (self, WIRE_HB);
    channel_close (self, WIRE_STDIN);
    gw_linger_add (gw_server_lingers (server), self, linger_end);
}

/* At the close: the conversation's words for requests that come too late,
   and what was already queued goes to the core with the rest. */
static void
closing (gw_zmq_t *self, const char *cause)
{
    char evalue[512];
    gw_answer_not_run (evalue, sizeof evalue, "the conversation was closed before it", cause);
    free (self->closed_evalue);
    self->closed_evalue = wire_xstrdup (evalue);
    snprintf (self->session, sizeof self->session, "%s", gw_conv_session (gw_front_conv (self->peer)));
    drain_shell (self);
}

static void
zmq_event (void *arg, gw_event_t event, const char *detail)
{
    gw_zmq_t *self = arg;
    if (event == GW_EVENT_CLOSING)
        closing (self, detail);
    else if (event == GW_EVENT_SHELL_FLUSH)
        drain_shell (self);
    else if (event == GW_EVENT_CLOSED) {
        self->peer = NULL; /* detached by the core */
        linger_start (self);
    }
}

/* ---- lifecycle ----------------------------------------------------------- */

static int
bind_client (gw_zmq_t *self, wire_channel_t ch, int port, char **errmsg)
{
    static const int types[] = {ZMQ_ROUTER, ZMQ_PUB, ZMQ_ROUTER, ZMQ_ROUTER, ZMQ_REP};
    const char *transport = self->transport, *ip = self->ip;
    zsock_t *s = zsock_new (types[ch]);
    if (!s) {
        *errmsg = wire_xstrdup ("cannot create a socket");
        return -1;
    }
    zsock_set_linger (s, 200);
    zsock_set_sndtimeo (s, 0);
    /* zmq refuses frames far above the limit before they are buffered;
       those between 1x and 2x reach the wire check and are logged */
    size_t max = gw_server_limits (self->server)->max_message_bytes;
    if (max > 0 && max < INT32_MAX / 2)
        zsock_set_maxmsgsize (s, (int) (2 * max));
    if (self->curve)
        gw_curve_server (s, &self->curve_keys);
    /* a peer naming another's identity takes its routing: only among
       authenticated peers; kernelspec mode keeps ipykernel's choice */
    if (types[ch] == ZMQ_ROUTER && (gw_server_authenticates (self->server) || gw_server_kernel_mode (self->server)))
        zsock_set_router_handover (s, 1);
    int rc;
    if (streq (transport, "ipc"))
        rc = zsock_bind (s, "ipc://%s-%d", ip, port) == 0 ? port : -1;
    else if (port > 0) {
        /* a front end's fixed ports (kernelspec mode): right after a
           restart, one may still be held a moment by its client's
           reconnection attempts, whose ephemeral local ports come from the
           same range; so retry briefly. czmq returns the port for tcp. */
        for (int tries = 0; (rc = zsock_bind (s, "tcp://%s:%d", ip, port)) == -1 && zmq_errno () == EADDRINUSE
                            && tries < 60;
             tries++)
            zclock_sleep (50);
        rc = rc == -1 ? -1 : port;
    }
    else {
        /* port 0: the kernel picks a free port in one bind. czmq's own ":*"
           walks its dynamic range one bind at a time from the bottom, which
           took seconds per conversation with thousands of ports in use */
        rc = zsock_bind (s, "tcp://%s:0", ip) == 0 ? 0 : -1;
        char *endpoint = rc == 0 ? zsock_last_endpoint (s) : NULL;
        const char *colon = endpoint ? strrchr (endpoint, ':') : NULL;
        rc = colon ? atoi (colon + 1) : -1;
        freen (endpoint);
    }
    if (rc <= 0) {
        *errmsg = wire_xasprintf ("cannot bind the %s socket on %s %s port %d: %s", gw_channel_name (ch), transport,
                                  ip, port, zmq_strerror (zmq_errno ()));
        zsock_destroy (&s);
        return -1;
    }
    self->client[ch] = s;
    self->ports[ch] = rc;
    /* per peer: a slow iopub subscriber holds at most this many messages */
    gw_io_bound (s, max, GW_QUEUE_CONVERSATION);
    return 0;
}

/* This conversation's own keys, admitted on its own ZAP domain only. */
static int
curve_start (gw_zmq_t *self, char **errmsg)
{
    if (!gw_server_zap (self->server) || gw_curve_keys_new (&self->curve_keys) < 0) {
        *errmsg = wire_xstrdup ("cannot set up CurveZMQ for the client sockets (no ZAP handler or no CURVE in libzmq)");
        return -1;
    }
    gw_zap_allow (gw_server_zap (self->server), &self->curve_keys);
    self->curve = true;
    return 0;
}

/* ipc: state/sock/<random>-<n>, never inside a kernel's view; the sock dir
   is 0700 and checked at start (gw_server.c). A name in use (an open or a
   lingering conversation's: libzmq would take the path over, and the
   linger's end would unlink the new socket) is drawn again. */
static char *
ipc_prefix (gw_server_t *server)
{
    for (;;) {
        char rnd[WIRE_ID_SIZE];
        wire_id_new (rnd);
        rnd[GW_SHORT_ID_LEN] = 0;
        char *prefix = wire_xasprintf ("%s/sock/%s", gw_server_state_dir (server), rnd);
        char path[GW_PATH_MAX];
        struct stat st;
        snprintf (path, sizeof path, "%s-1", prefix);
        if (lstat (path, &st) < 0)
            return prefix;
        free (prefix);
    }
}

static gw_zmq_t *
zmq_new (gw_server_t *server, const wire_connection_t *fixed, char **errmsg)
{
    gw_zmq_t *self = wire_xcalloc (1, sizeof *self);
    self->server = server;
    self->transport = wire_xstrdup (fixed ? fixed->transport : gw_server_transport (server));
    if (fixed)
        self->ip = wire_xstrdup (fixed->ip);
    else
        self->ip = streq (self->transport, "ipc") ? ipc_prefix (server) : wire_xstrdup (gw_server_ip (server));
    wire_error_t err;
    self->key = fixed ? wire_connection_key (fixed, &err) : wire_key_new_random ();
    if (!self->key) {
        *errmsg = wire_xstrdup ("the connection file's signature_scheme is not hmac-sha256");
        zmq_destroy (&self);
        return NULL;
    }
    self->replay = wire_replay_new (GW_REPLAY_CAPACITY);
    int ports[WIRE_CHANNEL_COUNT_] = {0};
    if (fixed) {
        const int given[] = {fixed->shell_port, fixed->iopub_port, fixed->stdin_port, fixed->control_port,
                             fixed->hb_port};
        memcpy (ports, given, sizeof ports);
    }
    else if (streq (self->transport, "ipc"))
        for (int ch = 0; ch < WIRE_CHANNEL_COUNT_; ch++)
            ports[ch] = ch + 1;
    if (!fixed && gw_server_curve (server) && curve_start (self, errmsg) < 0) {
        zmq_destroy (&self);
        return NULL;
    }
    for (int ch = 0; ch < WIRE_CHANNEL_COUNT_; ch++)
        if (bind_client (self, (wire_channel_t) ch, ports[ch], errmsg) < 0) {
            zmq_destroy (&self);
            return NULL;
        }
    /* read from the loop's next turn on, once attached (gw_zmq_attach) */
    static zloop_reader_fn *readers[] = {on_client_shell, NULL, on_client_stdin, on_client_control, on_client_hb};
    for (int ch = 0; ch < WIRE_CHANNEL_COUNT_; ch++)
        if (readers[ch] && gw_io_reader (gw_server_io (server), self->client[ch], readers[ch], self) < 0) {
            *errmsg = wire_xasprintf ("cannot watch the client sockets (epoll): %s", strerror (errno));
            zmq_destroy (&self);
            return NULL;
        }
    return self;
}

int
gw_zmq_open (gw_conv_t *conv, void *fixed, char **errmsg)
{
    gw_zmq_t *self = zmq_new (gw_conv_server (conv), fixed, errmsg);
    if (!self)
        return -1;
    self->conv_id = wire_xstrdup (gw_conv_id (conv));
    self->peer = gw_conv_attach (conv, &zmq_fns, self);
    return 0;
}

gw_zmq_t *
gw_zmq_of (gw_conv_t *conv)
{
    return gw_conv_find_front (conv, &zmq_fns);
}

static void
zmq_destroy (gw_zmq_t **self_p)
{
    gw_zmq_t *self = *self_p;
    if (!self)
        return;
    gw_front_detach (&self->peer);
    for (int ch = 0; ch < WIRE_CHANNEL_COUNT_; ch++)
        channel_close (self, (wire_channel_t) ch);
    if (self->curve)
        gw_zap_forget (gw_server_zap (self->server), &self->curve_keys);
    wire_key_destroy (&self->key);
    wire_replay_destroy (&self->replay);
    free (self->transport);
    free (self->ip);
    free (self->conv_id);
    free (self->closed_evalue);
    free (self);
    *self_p = NULL;
}

json_t *
gw_zmq_connection_json (const gw_zmq_t *self)
{
    json_t *info = json_pack ("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:s}", "transport", self->transport,
                              "ip", self->ip, "shell_port", self->ports[WIRE_SHELL], "iopub_port",
                              self->ports[WIRE_IOPUB], "stdin_port", self->ports[WIRE_STDIN], "control_port",
                              self->ports[WIRE_CONTROL], "hb_port", self->ports[WIRE_HB], "key",
                              wire_key_text (self->key), "signature_scheme", WIRE_SIGNATURE_SCHEME, "kernel_name",
                              "kennel");
    if (self->curve)
        gw_curve_info (&self->curve_keys, info);
    return info;
}
