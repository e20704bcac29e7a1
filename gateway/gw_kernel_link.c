/*  gw_kernel_link.c - the relay's sockets to a fresh kernel: connected once,
    the readiness handshake, drops watched.

    The kernel's sockets are files in its run dir, which the kernel can change
    once user code runs: unlink one, bind its own, or plant a symlink to a host
    socket. So the gateway connects once, after the kernel has bound all of
    them (it binds before running any user code) and never reconnects:
    ZeroMQ's reconnection, by path, as root and following symlinks, is off.
    A connection that drops once the kernel is ready is the kernel breaking
    its channel: the kernel is killed and its clients are told.
*/
#include "gw_kernel_link.h"
#include "gw_exec.h"
#include "gw_error.h"
#include "gw_front.h"
#include "gw_io.h"
#include "gw_log.h"
#include "gw_peek.h"
#include "gw_relay_msg.h"
#include "gw_server_access.h"
#include "gw_timer.h"
#include "gw_util.h"
#include "gw_zmtp.h"
#include "wire.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static void kernel_sockets_drop (gw_relay_t *self);
static void kernel_connect_or_wait (gw_relay_t *self);

/* The identity of the relay's three DEALERs: the kernel's ROUTERs send a
   request's input_request back to it on stdin. */
#define KERNEL_IDENTITY "kennel-gateway"

#define KERNEL_CONNECT_RETRY_MS 1000
#define KERNEL_CONNECT_AGAIN_MS 100
/* A dropped connection is acted on after this long, so that a kernel that
   died by itself is reported with its own cause (its exit comes first). */
#define KERNEL_DROP_GRACE_MS 300

static void
probe_send (gw_relay_t *self)
{
    wire_msg_t *m = wire_msg_new (self->session, "kernel_info_request", NULL);
    wire_msg_send (m, self->kernel[WIRE_SHELL], self->kernel_key);
    gw_io_sent (gw_server_io (self->server), self->kernel[WIRE_SHELL]);
    wire_msg_destroy (&m);
}

static int
on_probe_timer (zloop_t *loop, int timer_id, void *arg)
{
    gw_relay_t *self = arg;
    if (self->kernel_ready || !self->kernel[WIRE_SHELL])
        return 0;
    /* a connection refused between the kernel's bind and listen is never
       retried by ZeroMQ (reconnection is off); no user code has run yet,
       so connecting again by path is still safe */
    if (self->handshakes != 0xF && (gw_clock_mono () - self->connected_at) * 1000 > KERNEL_CONNECT_RETRY_MS) {
        gw_log ("kernel_connect_retry", "{s:s, s:i}", "conversation", self->id, "handshakes",
                (int) self->handshakes);
        kernel_sockets_drop (self);
        kernel_connect_or_wait (self);
        return 0;
    }
    probe_send (self);
    return 0;
}

static void
probe_stop (gw_relay_t *self)
{
    if (self->probe_timer)
        gw_timer_end (gw_server_loop (self->server), self->probe_timer);
    self->probe_timer = 0;
}

void
gw_kernel_link_probe_check (gw_relay_t *self)
{
    if (self->kernel_ready || !self->probe_shell_ok || !self->probe_iopub_ok || !self->probe_stdin_ok)
        return;
    probe_stop (self);
    self->kernel_ready = true;
    gw_relay_msg_backlog_flush (self);
    gw_exec_start_head (self);
    self->owner->kernel_ready (self->conv);
}

/* Whether a kernel message answers our own probe (parent session is ours). */
bool
gw_kernel_link_is_probe_answer (gw_relay_t *self, zmsg_t *msg)
{
    char session[sizeof self->session + 1];
    int n = gw_peek_frame (msg, 3, "session", session, sizeof session);
    return n >= 0 && (size_t) n < sizeof session && streq (session, self->session);
}

/* A reply to the gateway's own request: a refused tool list is logged. */
void
gw_kernel_link_own_reply_check (gw_relay_t *self, zmsg_t *msg)
{
    zframe_t *cf = wire_frames_part (msg, 5);
    json_t *content = json_loadb ((const char *) zframe_data (cf), zframe_size (cf), 0, NULL);
    const char *status = json_string_value (json_object_get (content, "status"));
    if (status && streq (status, "error"))
        gw_log ("configure_refused", "{s:s, s:s}", "conversation", self->id, "reason",
                json_string_value (json_object_get (content, "evalue")) ?: "");
    json_decref (content);
}

static void
kernel_monitor_stop (gw_relay_t *self, int ch)
{
    if (!self->monitor[ch])
        return;
    gw_io_reader_end (gw_server_io (self->server), self->monitor[ch]);
    if (self->kernel[ch]) {
        zmq_socket_monitor (zsock_resolve (self->kernel[ch]), NULL, 0);
        gw_io_sent (gw_server_io (self->server), self->kernel[ch]); /* any call on it may take its wake-up */
    }
    zsock_destroy (&self->monitor[ch]);
}

static int
on_kernel_drop_grace (zloop_t *loop, int timer_id, void *arg)
{
    gw_relay_t *self = arg;
    self->drop_timer = 0;
    char cause[400];
    const char *cut = gw_zmtp_guard_cut (self->guard[self->dropped_channel]);
    if (cut)
        snprintf (cause, sizeof cause,
                  "the gateway cut the kernel's %s connection: %s (%zu bytes, %d frames a message); it was killed "
                  "and the next request starts a fresh kernel, variables are lost",
                  gw_channel_name (self->dropped_channel), cut, 2 * gw_server_limits (self->server)->max_message_bytes,
                  GW_ZMTP_FRAMES_MAX);
    else
        snprintf (cause, sizeof cause,
                  "the kernel closed its %s connection to the gateway (or sent a frame over %zu bytes); it was "
                  "killed and the next request starts a fresh kernel, variables are lost",
                  gw_channel_name (self->dropped_channel), 2 * gw_server_limits (self->server)->max_message_bytes);
    self->owner->kill_kernel (self->conv, gw_error_name (GW_E_KERNEL_DIED), cause);
    return 0;
}

/* A kernel socket's event: the stdin handshake (readiness) or a drop. */
static int
on_kernel_monitor (zloop_t *loop, zsock_t *sock, void *arg)
{
    gw_relay_t *self = arg;
    int ch;
    for (ch = 0; ch < 4 && self->monitor[ch] != sock; ch++)
        ;
    zmsg_t *event = zmsg_recv (sock);
    zframe_t *f = event ? zmsg_first (event) : NULL;
    uint16_t ev = 0;
    if (f && zframe_size (f) >= sizeof ev)
        memcpy (&ev, zframe_data (f), sizeof ev);
    zmsg_destroy (&event);
    if (ch == 4)
        return 0;
    if (ev == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        self->handshakes |= 1u << ch;
        /* the kernel routes stdin messages (tool_request, input_request) by
           our identity and drops them until this handshake is done */
        if (ch == WIRE_STDIN && !self->probe_stdin_ok) {
            self->probe_stdin_ok = true;
            gw_kernel_link_probe_check (self);
        }
    }
    else if (ev == ZMQ_EVENT_DISCONNECTED && self->kernel_ready && !self->drop_timer) {
        gw_log ("kernel_channel_closed", "{s:s, s:s}", "conversation", self->id, "channel",
                gw_channel_name (ch));
        self->dropped_channel = ch;
        self->drop_timer = gw_timer_start (loop, KERNEL_DROP_GRACE_MS, 1, on_kernel_drop_grace, self);
    }
    return 0;
}

/* Watches a kernel socket's handshakes and drops; before it connects. */
static int
kernel_monitor_start (gw_relay_t *self, int ch, zsock_t *s)
{
    char endpoint[80];
    snprintf (endpoint, sizeof endpoint, "inproc://kennel-kernel-%p-%d", (void *) self, ch);
    if (zmq_socket_monitor (zsock_resolve (s), endpoint, ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) < 0)
        return -1;
    self->monitor[ch] = zsock_new (ZMQ_PAIR);
    if (!self->monitor[ch] || zsock_connect (self->monitor[ch], "%s", endpoint) < 0
        || gw_io_reader (gw_server_io (self->server), self->monitor[ch], on_kernel_monitor, self) < 0) {
        zmq_socket_monitor (zsock_resolve (s), NULL, 0);
        zsock_destroy (&self->monitor[ch]);
        return -1;
    }
    return 0;
}

static void
kernel_timers_stop (gw_relay_t *self)
{
    probe_stop (self);
    if (self->bound_timer)
        gw_timer_end (gw_server_loop (self->server), self->bound_timer);
    if (self->drop_timer)
        gw_timer_end (gw_server_loop (self->server), self->drop_timer);
    self->bound_timer = self->drop_timer = 0;
}

/* Closes the kernel sockets, keeps the key (a retry connects again). */
static void
kernel_sockets_drop (gw_relay_t *self)
{
    kernel_timers_stop (self);
    self->kernel_ready = self->probe_shell_ok = self->probe_iopub_ok = self->probe_stdin_ok = false;
    self->handshakes = 0;
    for (int ch = 0; ch < 4; ch++) {
        kernel_monitor_stop (self, ch);
        if (self->kernel[ch]) {
            gw_io_reader_end (gw_server_io (self->server), self->kernel[ch]);
            zsock_destroy (&self->kernel[ch]);
        }
        gw_zmtp_guard_destroy (&self->guard[ch]);
    }
}

void
gw_kernel_link_close (gw_relay_t *self)
{
    kernel_sockets_drop (self);
    wire_key_destroy (&self->kernel_key);
    wire_replay_destroy (&self->kernel_replay);
    zstr_free (&self->run_dir);
}

/* Whether the kernel has bound its sockets: its heartbeat socket, bound
   last, exists, and each socket to connect is a socket, not a symlink. */
static bool
kernel_bound (gw_relay_t *self)
{
    struct stat st;
    char path[GW_PATH_MAX];
    for (int i = 4; i >= 0; i--) {
        snprintf (path, sizeof path, "%s/" LAUNCH_KERNEL_SOCKET, self->run_dir, self->kernel_ports[i]);
        if (lstat (path, &st) != 0 || !S_ISSOCK (st.st_mode))
            return false;
    }
    return true;
}

/* s connects to the kernel through a guard that cuts a message over the
   limits before ZeroMQ holds it (the frame limit of gw_io_bound, summed). */
static int
kernel_guard_connect (gw_relay_t *self, int ch, zsock_t *s)
{
    char path[GW_PATH_MAX], endpoint[64];
    snprintf (path, sizeof path, "%s/" LAUNCH_KERNEL_SOCKET, self->run_dir, self->kernel_ports[ch]);
    size_t max = gw_server_limits (self->server)->max_message_bytes;
    gw_zmtp_limits_t limits = {max && max <= UINT64_MAX / 2 ? 2 * (uint64_t) max : UINT64_MAX, GW_ZMTP_FRAMES_MAX};
    self->guard[ch] = gw_zmtp_guard_new (gw_server_io (self->server), path, &limits, self->id,
                                         gw_channel_name (ch), endpoint, sizeof endpoint);
    return self->guard[ch] ? zsock_connect (s, "%s", endpoint) : -1;
}

static int
kernel_socket_open (gw_relay_t *self, int ch)
{
    zsock_t *s = zsock_new (ch == WIRE_IOPUB ? ZMQ_SUB : ZMQ_DEALER);
    if (!s)
        return -1;
    self->kernel[ch] = s;
    zsock_set_linger (s, 0);
    zsock_set_sndtimeo (s, 0);
    zsock_set_reconnect_ivl (s, -1);
    gw_io_bound (s, gw_server_limits (self->server)->max_message_bytes, GW_QUEUE_CONVERSATION);
    if (ch == WIRE_IOPUB)
        zsock_set_subscribe (s, "");
    else
        zsock_set_identity (s, KERNEL_IDENTITY);
    if (kernel_monitor_start (self, ch, s) < 0)
        return -1;
    if (kernel_guard_connect (self, ch, s) < 0)
        return -1;
    return gw_io_reader (gw_server_io (self->server), s, self->kernel_readers[ch], self);
}

/* Connects the four sockets and starts the readiness probe. */
static int
kernel_connect (gw_relay_t *self)
{
    for (int ch = 0; ch < 4; ch++)
        if (kernel_socket_open (self, ch) < 0) {
            char source[200];
            snprintf (source, sizeof source, "conversation/%s/kernel_connect", self->id);
            gw_log_limited (source, "kernel_connect_failed", "{s:s, s:s, s:s}", "conversation",
                            self->id, "channel", gw_channel_name (ch), "reason", strerror (errno));
            kernel_sockets_drop (self);
            return -1;
        }
    self->connected_at = gw_clock_mono ();
    /* repeated until the answer and an iopub message arrived: the first
       probe's busy/idle can be published before our SUB's subscription
       reached the kernel (a warm kernel answers at once) */
    probe_send (self);
    self->probe_timer = gw_timer_start (gw_server_loop (self->server), 10, 0, on_probe_timer, self);
    return 0;
}

static int
on_kernel_bound_check (zloop_t *loop, int timer_id, void *arg)
{
    gw_relay_t *self = arg;
    if (!kernel_bound (self))
        return 0;
    gw_timer_end (loop, self->bound_timer);
    self->bound_timer = 0;
    kernel_connect_or_wait (self);
    return 0;
}

/* Connects, or (no sockets or fds left just now) tries again in a while:
   the kernel is still one that ran no user code, its launch slot and the
   conversation's waiters wait for it as for a slow start. */
static void
kernel_connect_or_wait (gw_relay_t *self)
{
    if (kernel_connect (self) == 0 || self->bound_timer)
        return;
    self->bound_timer
        = gw_timer_start (gw_server_loop (self->server), KERNEL_CONNECT_AGAIN_MS, 0, on_kernel_bound_check, self);
}

int
gw_kernel_link_attach (gw_relay_t *self, const char *run_dir, const wire_connection_t *kc, char **errmsg)
{
    gw_kernel_link_close (self);
    wire_error_t err;
    self->kernel_key = wire_connection_key (kc, &err);
    if (!self->kernel_key) {
        *errmsg = wire_xstrdup ("kernel connection: bad signature scheme");
        return -1;
    }
    self->kernel_replay = wire_replay_new (GW_REPLAY_CAPACITY);
    self->run_dir = wire_xstrdup (run_dir);
    const int ports[] = {kc->shell_port, kc->iopub_port, kc->stdin_port, kc->control_port, kc->hb_port};
    memcpy (self->kernel_ports, ports, sizeof ports);
    if (kernel_bound (self))
        return kernel_connect (self) < 0 ? (*errmsg = wire_xstrdup ("cannot connect to the kernel's sockets"), -1) : 0;
    /* a cold kernel binds a moment after the status line */
    self->bound_timer = gw_timer_start (gw_server_loop (self->server), 2, 0, on_kernel_bound_check, self);
    return 0;
}
