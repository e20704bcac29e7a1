/*  gw_relay.c - a conversation's messages between its peers and its kernel.

    Peer side: what fronts submit (gw_front.h), authenticated by the front,
    checked here (layout, sizes, header) and what is delivered back to them
    through the conversation's peers (gw_peers.c), unsigned. Kernel side:
    DEALERs to the kernel's shell, control and stdin and a SUB to its iopub,
    over ipc:// in the run dir, signed with the kernel key. The three
    DEALERs share one identity, so the kernel's input_request (sent to the
    identities of the shell request) comes back to us on stdin.

    Every kernel message is verified on the way in (layout, size, signature,
    replay); client messages are signed with the kernel key on the way out.
    JSON is parsed only for the header (routing, accounting) and, for
    execute_reply, the metadata frame that receives metadata.kennel.

    Executions are tracked in order: the head of the list is the running one
    (the kernel runs one at a time, in order). The gateway enforces the
    timeout, the output limit and the queue bound, and answers for a kernel
    that died.
*/
#include "gw.h"
#include "gw_peers.h"
#include "kernel-launcher/kennel_launch.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KERNEL_IDENTITY "kennel-gateway"

typedef struct {
    char *msg_id;
    json_t *header; /* the request's header: parent of what we send */
    zmsg_t *ids;    /* the peer's token and route frames */
    bool silent;
    bool started;
    double started_at;
    gw_proc_watch_t usage; /* the kernel's /proc/PID/stat while it runs */
    int64_t output_bytes;
    bool truncated;
    int tool_calls;
    bool allow_stdin;   /* the request's allow_stdin: a client serves tool calls */
    int timer_id;       /* execution timeout, 0 when none */
    int grace_timer_id; /* after SIGINT, 0 when none */
    bool timed_out;
    bool timeout_reported; /* the ExecutionTimeout error output went out */
    /* The reply is held until the request's idle arrived on iopub: only then
       are all its outputs counted (the loop may read the shell reply before
       outputs still queued on iopub). */
    zmsg_t *reply;
    bool idle_seen;
    int idle_timer_id; /* a kernel that never sends idle: the reply goes anyway */
} gw_exec_t;

/* A tool call forwarded to the client and not yet answered. */
typedef struct {
    gw_relay_t *relay;
    char *call_id;
    char *name;
    char *exec_msg_id;  /* the execution it belongs to */
    json_t *header;     /* the kernel's tool_request header: parent of our answer */
    json_t *arguments;  /* only when the operator logs them */
    size_t bytes;       /* the request's content bytes */
    double started_at;
    int timer_id;       /* tool timeout */
} gw_call_t;

struct gw_relay {
    gw_conv_t *conv;
    gw_server_t *server;
    gw_peers_t *peers;
    char *closed_why; /* set by gw_relay_close: what is submitted now is answered, never relayed */
    zsock_t *kernel[WIRE_CHANNEL_COUNT_]; /* shell, iopub, stdin, control; NULL when detached */
    wire_key_t *kernel_key;
    wire_replay_t *kernel_replay;
    zlistx_t *execs;   /* gw_exec_t*, head = running */
    zlistx_t *backlog; /* zmsg_t* verified client messages waiting for a kernel, with channel prefix frame */
    zhashx_t *calls;   /* call_id -> gw_call_t*, tool calls waiting for the client */
    int executions;
    bool state_lost; /* a fresh kernel replaced a dead one: tell the next reply */
    char session[WIRE_ID_SIZE];
    /* A fresh kernel is ready once it answered our kernel_info_request on
       shell AND we saw any iopub message: only then is our SUB's
       subscription live, so no output of the first request is lost. */
    bool kernel_ready;
    bool probe_shell_ok;
    bool probe_iopub_ok;
    /* the kernel routes stdin messages (tool_request, input_request) by our
       identity: its ROUTER drops them until our stdin DEALER's handshake is
       done, which may come later than shell's. So readiness waits for it
       too. */
    bool probe_stdin_ok;
    zsock_t *monitor[4]; /* PAIRs receiving each kernel socket's handshakes and drops */
    gw_zmtp_guard_t *guard[4]; /* each kernel connection's ZMTP check (gw_zmtp_guard.c) */
    unsigned handshakes; /* bit per kernel socket whose handshake succeeded */
    int probe_timer;
    char *run_dir;       /* the kernel's, while attached */
    int kernel_ports[5]; /* shell, iopub, stdin, control, hb: k-N in run_dir */
    int bound_timer;     /* waiting for the kernel to bind */
    double connected_at;
    int drop_timer;      /* a kernel connection dropped: kill after a grace */
    int dropped_channel;
};

/* ---- small helpers ------------------------------------------------------ */

static void
exec_destroy (gw_exec_t **self_p)
{
    gw_exec_t *self = *self_p;
    if (!self)
        return;
    gw_proc_watch_close (&self->usage);
    free (self->msg_id);
    json_decref (self->header);
    zmsg_destroy (&self->ids);
    zmsg_destroy (&self->reply);
    free (self);
    *self_p = NULL;
}

static void
exec_destructor (void **item)
{
    exec_destroy ((gw_exec_t **) item);
}

static void
zmsg_destructor (void **item)
{
    zmsg_destroy ((zmsg_t **) item);
}

/* Index of the delimiter frame, or -1. */
static int
delimiter_index (zmsg_t *msg)
{
    int i = 0;
    for (zframe_t *f = zmsg_first (msg); f; f = zmsg_next (msg), i++)
        if (zframe_streq (f, WIRE_DELIMITER))
            return i;
    return -1;
}

static zframe_t *
frame_at (zmsg_t *msg, int index)
{
    zframe_t *f = zmsg_first (msg);
    for (int i = 0; f && i < index; i++)
        f = zmsg_next (msg);
    return f;
}

/* A string field of a frame (gw_peek: no JSON tree), in a peek_t: its own
   buffer when it fits, else malloc'd. text NULL when absent. */
typedef struct {
    char buf[256];
    char *heap;
    const char *text;
} peek_t;

static const char *
peek (peek_t *pk, zmsg_t *msg, int offset, const char *key)
{
    pk->heap = NULL;
    int n = gw_peek_frame (msg, offset, key, pk->buf, sizeof pk->buf);
    pk->text = n < 0 ? NULL : pk->buf;
    if (n >= (int) sizeof pk->buf) {
        pk->heap = wire_xmalloc ((size_t) n + 1);
        pk->text = gw_peek_frame (msg, offset, key, pk->heap, (size_t) n + 1) == n ? pk->heap : NULL;
    }
    return pk->text;
}

static void
peek_free (peek_t *pk)
{
    free (pk->heap);
    pk->heap = NULL;
}

/* Signs the four JSON frames of an already verified message with key. */
static void
resign (zmsg_t *msg, const wire_key_t *key)
{
    zframe_t *sig = gw_front_msg_sign (msg, key);
    (void) sig; /* a message verified has the frames */
}

static void
log_bad (gw_relay_t *self, const char *channel, wire_error_t err, const char *from)
{
    gw_log_bad_message (gw_conv_id (self->conv), channel, err, from);
}

/* Sends to the kernel without ever blocking the loop: a kernel that stops
   reading fills its DEALER's queue (sndtimeo 0), and what does not fit is
   dropped and logged rather than stalling every other conversation. */
static void
kernel_send (gw_relay_t *self, zmsg_t **msg_p, wire_channel_t channel)
{
    zsock_t *sock = self->kernel[channel];
    resign (*msg_p, self->kernel_key);
    int rc = zmsg_send (msg_p, sock);
    gw_io_sent (self->server->io, sock); /* a send may take the socket's wake-up (gw_io.c) */
    if (rc == 0 && !*msg_p)
        return;
    zmsg_destroy (msg_p);
    gw_log_dropped (gw_conv_id (self->conv), gw_channel_name (channel));
}

/* To the peers, unsigned (gw_front.h): the signature frame goes empty. */
static void
client_deliver (gw_relay_t *self, wire_channel_t channel, zmsg_t **msg_p)
{
    zframe_t *sig = gw_front_msg_sign (*msg_p, NULL);
    if (sig)
        gw_peers_deliver (self->peers, channel, msg_p);
    zmsg_destroy (msg_p);
}

/* A message from the gateway itself on behalf of the conversation, with
   req as parent (and its identities, unless ids is given). */
static wire_msg_t *
own_msg (gw_relay_t *self, const char *msg_type, const json_t *parent_header, zmsg_t *ids)
{
    wire_msg_t *m = wire_msg_new (self->session, msg_type, NULL);
    if (parent_header) {
        json_decref (m->parent_header);
        m->parent_header = json_deep_copy (parent_header);
    }
    if (ids) {
        zmsg_destroy (&m->identities);
        m->identities = zmsg_dup (ids);
    }
    return m;
}

/* A message of the gateway's own to the peers, as relayed ones go. */
static void
client_send_own (gw_relay_t *self, wire_msg_t *m, wire_channel_t ch)
{
    zmsg_t *msg = wire_msg_encode (m, NULL);
    if (msg)
        client_deliver (self, ch, &msg);
}

static void
publish (gw_relay_t *self, const char *msg_type, const json_t *parent_header, json_t *content)
{
    wire_msg_t *m = own_msg (self, msg_type, parent_header, NULL);
    char topic[200];
    snprintf (topic, sizeof topic, "kernel.%s.%s", gw_conv_id (self->conv), msg_type);
    zmsg_addstr (m->identities, topic);
    wire_msg_set_content (m, content);
    client_send_own (self, m, WIRE_IOPUB);
    wire_msg_destroy (&m);
}

static void
publish_status (gw_relay_t *self, const json_t *parent_header, const char *state)
{
    publish (self, "status", parent_header, json_pack ("{s:s}", "execution_state", state));
}

static void
publish_error (gw_relay_t *self, const json_t *parent_header, const char *ename, const char *evalue)
{
    char *line = wire_xasprintf ("%s: %s", ename, evalue);
    publish (self, "error", parent_header,
             json_pack ("{s:s, s:s, s:[s]}", "ename", ename, "evalue", evalue, "traceback", line));
    free (line);
}

/* ---- execution accounting ---------------------------------------------- */

static int on_exec_timeout (zloop_t *loop, int timer_id, void *arg);
static void calls_end (gw_relay_t *self, const char *msg_id, const char *status);

static gw_exec_t *
exec_head (gw_relay_t *self)
{
    return zlistx_first (self->execs);
}

/* The head starts running: clock, cpu, timeout. Only while a kernel is attached. */
static void
exec_start_head (gw_relay_t *self)
{
    gw_exec_t *e = exec_head (self);
    if (!e || e->started || !self->kernel_ready)
        return;
    e->started = true;
    e->started_at = gw_clock_mono ();
    gw_launch_t *launch = gw_conv_launch (self->conv);
    gw_proc_watch_start (&e->usage, launch ? gw_launch_kernel_pid (launch) : 0);
    double timeout = gw_conv_policy (self->conv)->execution_timeout;
    if (timeout != GW_UNLIMITED)
        e->timer_id = gw_timer_start (self->server->loop, gw_limit_ms (timeout), 1, on_exec_timeout, self);
    gw_log ("execute_start", "{s:s, s:s}", "conversation", gw_conv_id (self->conv), "msg_id", e->msg_id);
}

static void
exec_stop_timers (gw_relay_t *self, gw_exec_t *e)
{
    if (e->timer_id)
        gw_timer_end (self->server->loop, e->timer_id);
    if (e->grace_timer_id)
        gw_timer_end (self->server->loop, e->grace_timer_id);
    if (e->idle_timer_id)
        gw_timer_end (self->server->loop, e->idle_timer_id);
    e->timer_id = e->grace_timer_id = e->idle_timer_id = 0;
}

static json_t *
exec_cost (gw_relay_t *self, gw_exec_t *e, const char *state)
{
    double cpu = 0, wall = e->started ? gw_clock_mono () - e->started_at : 0;
    int64_t hwm = 0;
    gw_launch_t *launch = gw_conv_launch (self->conv);
    if (launch && gw_launch_state (launch) == GW_LAUNCH_CONFINED)
        gw_proc_watch_end (&e->usage, &cpu, &hwm);
    gw_proc_watch_close (&e->usage);
    json_t *cost = json_pack ("{s:f, s:f, s:I, s:I, s:b, s:i, s:s}", "wall_seconds", wall, "cpu_seconds",
                              cpu < 0 ? 0 : cpu, "max_rss_bytes", (json_int_t) hwm, "output_bytes",
                              (json_int_t) e->output_bytes, "output_truncated", e->truncated, "tool_calls",
                              e->tool_calls, "state", state);
    /* how the kernel ended, when that ended this execution */
    if (launch && gw_launch_state (launch) == GW_LAUNCH_EXITED)
        json_object_set_new (cost, "kernel_ended", json_string (gw_launch_cause (launch)));
    int64_t ws_bytes, ws_files;
    if (gw_quota_usage (gw_conv_workspace (self->conv), &ws_bytes, &ws_files)) {
        json_object_set_new (cost, "workspace_bytes", json_integer ((json_int_t) ws_bytes));
        json_object_set_new (cost, "workspace_files", json_integer ((json_int_t) ws_files));
    }
    return cost;
}

/* Ends the head (or any) execution: log, drop, start the next one. */
static void
exec_finish (gw_relay_t *self, void *handle, gw_exec_t *e, const char *status)
{
    exec_stop_timers (self, e);
    gw_log ("execute_end", "{s:s, s:s, s:s, s:f, s:I, s:b}", "conversation", gw_conv_id (self->conv), "msg_id",
            e->msg_id, "status", status, "duration", e->started ? gw_clock_mono () - e->started_at : 0.0, "output_bytes",
            (json_int_t) e->output_bytes, "truncated", e->truncated);
    self->executions++;
    calls_end (self, e->msg_id, "abandoned");
    zlistx_delete (self->execs, handle);
    exec_start_head (self);
}

static void *
exec_find (gw_relay_t *self, const char *msg_id)
{
    for (gw_exec_t *e = zlistx_first (self->execs); e; e = zlistx_next (self->execs))
        if (streq (e->msg_id, msg_id))
            return zlistx_cursor (self->execs);
    return NULL;
}

/* The gateway answers an execute_request itself (kernel died, timeout kill,
   queue full): error output, error reply, idle. */
static void
exec_fail (gw_relay_t *self, gw_exec_t *e, const char *ename, const char *evalue, const char *state, bool busy)
{
    if (busy)
        publish_status (self, e->header, "busy");
    publish_error (self, e->header, ename, evalue);
    wire_msg_t *reply = own_msg (self, "execute_reply", e->header, e->ids);
    wire_msg_set_content (reply, json_pack ("{s:s, s:i, s:s, s:s, s:[s], s:{}, s:[]}", "status", "error",
                                            "execution_count", 0, "ename", ename, "evalue", evalue, "traceback",
                                            evalue, "user_expressions", "payload"));
    json_object_set_new (reply->metadata, "kennel", exec_cost (self, e, state));
    client_send_own (self, reply, WIRE_SHELL);
    wire_msg_destroy (&reply);
    publish_status (self, e->header, "idle");
}

static int
on_grace_over (zloop_t *loop, int timer_id, void *arg)
{
    gw_relay_t *self = arg;
    gw_exec_t *e = exec_head (self); /* only the head runs, and its end ends its timers */
    e->grace_timer_id = 0;
    char cause[256];
    snprintf (cause, sizeof cause,
              "execution exceeded %g s and did not stop on interrupt; the kernel was killed and restarts, "
              "variables are lost",
              gw_conv_policy (self->conv)->execution_timeout);
    gw_log ("kill", "{s:s, s:s, s:s}", "conversation", gw_conv_id (self->conv), "msg_id", e->msg_id, "reason",
            "timeout");
    gw_conv_kill_kernel (self->conv, "ExecutionTimeout", cause);
    return 0;
}

static int
on_exec_timeout (zloop_t *loop, int timer_id, void *arg)
{
    gw_relay_t *self = arg;
    gw_exec_t *e = exec_head (self); /* only the head runs, and its end ends its timers */
    e->timer_id = 0;
    e->timed_out = true;
    gw_log ("timeout", "{s:s, s:s, s:f}", "conversation", gw_conv_id (self->conv), "msg_id", e->msg_id, "limit",
            gw_conv_policy (self->conv)->execution_timeout);
    gw_launch_t *launch = gw_conv_launch (self->conv);
    if (launch)
        gw_launch_signal (launch, SIGINT);
    e->grace_timer_id = gw_timer_start (loop, (size_t) (self->server->config->interrupt_grace * 1000) + 1, 1,
                                        on_grace_over, self);
    return 0;
}

/* ---- fresh kernel handshake -------------------------------------------- */

static void backlog_flush (gw_relay_t *self);

static void
probe_send (gw_relay_t *self)
{
    wire_msg_t *m = wire_msg_new (self->session, "kernel_info_request", NULL);
    wire_msg_send (m, self->kernel[WIRE_SHELL], self->kernel_key);
    gw_io_sent (self->server->io, self->kernel[WIRE_SHELL]);
    wire_msg_destroy (&m);
}

static void kernel_sockets_drop (gw_relay_t *self);
static void kernel_sockets_close (gw_relay_t *self);
static void kernel_connect_or_wait (gw_relay_t *self);
#define KERNEL_CONNECT_RETRY_MS 1000
#define KERNEL_CONNECT_AGAIN_MS 100

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
        gw_log ("kernel_connect_retry", "{s:s, s:i}", "conversation", gw_conv_id (self->conv), "handshakes",
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
        gw_timer_end (self->server->loop, self->probe_timer);
    self->probe_timer = 0;
}

static void
probe_check (gw_relay_t *self)
{
    if (self->kernel_ready || !self->probe_shell_ok || !self->probe_iopub_ok || !self->probe_stdin_ok)
        return;
    probe_stop (self);
    self->kernel_ready = true;
    backlog_flush (self);
    exec_start_head (self);
    gw_conv_kernel_ready (self->conv);
}

/* Whether a kernel message answers our own probe (parent session is ours). */
static bool
is_probe_answer (gw_relay_t *self, zmsg_t *msg)
{
    char session[sizeof self->session + 1];
    int n = gw_peek_frame (msg, 3, "session", session, sizeof session);
    return n >= 0 && (size_t) n < sizeof session && streq (session, self->session);
}

/* ---- kernel -> client --------------------------------------------------- */

/* The one ExecutionTimeout error output of an execution the interrupt
   ended, before its idle (whichever of reply and idle comes first). */
static void
timeout_report (gw_relay_t *self, gw_exec_t *e)
{
    if (e->timeout_reported)
        return;
    e->timeout_reported = true;
    char evalue[200];
    snprintf (evalue, sizeof evalue, "execution exceeded %g s; it was interrupted and the variables are kept",
              gw_conv_policy (self->conv)->execution_timeout);
    publish_error (self, e->header, "ExecutionTimeout", evalue);
}

/* Rewrites an execute_reply: metadata.kennel always; after a timeout that the
   interrupt ended, the content becomes ExecutionTimeout (variables kept). */
static void
reply_rewrite (gw_relay_t *self, zmsg_t *msg, gw_exec_t *e)
{
    int d = delimiter_index (msg);
    zframe_t *meta_frame = frame_at (msg, d + 4);
    zframe_t *content_frame = zmsg_next (msg);
    gw_meta_add_kennel (meta_frame, exec_cost (self, e, self->state_lost ? "lost" : "kept"));
    self->state_lost = false;
    if (e->timed_out) {
        char *text;
        json_t *content
            = json_loadb ((const char *) zframe_data (content_frame), zframe_size (content_frame), 0, NULL);
        char evalue[200];
        snprintf (evalue, sizeof evalue, "execution exceeded %g s; it was interrupted and the variables are kept",
                  gw_conv_policy (self->conv)->execution_timeout);
        json_t *fresh = json_pack ("{s:s, s:O?, s:s, s:s, s:[s], s:{}, s:[]}", "status", "error", "execution_count",
                                   json_object_get (content, "execution_count"), "ename", "ExecutionTimeout",
                                   "evalue", evalue, "traceback", evalue, "user_expressions", "payload");
        text = json_dumps (fresh, JSON_COMPACT);
        zframe_reset (content_frame, text, strlen (text));
        free (text);
        json_decref (fresh);
        json_decref (content);
        timeout_report (self, e);
    }
}

/* A reply to the gateway's own request: a refused tool list is logged. */
static void
own_reply_check (gw_relay_t *self, zmsg_t *msg)
{
    int d = delimiter_index (msg);
    zframe_t *cf = frame_at (msg, d + 5);
    json_t *content = json_loadb ((const char *) zframe_data (cf), zframe_size (cf), 0, NULL);
    const char *status = json_string_value (json_object_get (content, "status"));
    if (status && streq (status, "error"))
        gw_log ("configure_refused", "{s:s, s:s}", "conversation", gw_conv_id (self->conv), "reason",
                json_string_value (json_object_get (content, "evalue")) ?: "");
    json_decref (content);
}

/* The request's reply and idle are both in: send the reply with its cost. */
static void
reply_send (gw_relay_t *self, gw_exec_t *e)
{
    zmsg_t *msg = e->reply;
    e->reply = NULL;
    reply_rewrite (self, msg, e);
    client_deliver (self, WIRE_SHELL, &msg);
}

static void
reply_complete (gw_relay_t *self, void *handle, gw_exec_t *e)
{
    reply_send (self, e);
    exec_finish (self, handle, e, e->timed_out ? "timeout" : "ok");
}

/* The reply waits at most this long for its idle (a kernel that does not
   publish one must not hold its client forever). */
#define IDLE_WAIT_MS 2000
static int
on_idle_wait_over (zloop_t *loop, int timer_id, void *arg)
{
    gw_relay_t *self = arg;
    for (gw_exec_t *e = zlistx_first (self->execs); e; e = zlistx_next (self->execs))
        if (e->idle_timer_id == timer_id) {
            e->idle_timer_id = 0;
            if (e->reply) {
                gw_log ("no_idle", "{s:s, s:s}", "conversation", gw_conv_id (self->conv), "msg_id", e->msg_id);
                reply_complete (self, zlistx_cursor (self->execs), e);
            }
            break;
        }
    return 0;
}

/* An idle status on iopub for a tracked execution: its reply goes out now
   if it was held for it. Returns the execution to finish once the idle
   itself went out (its log line and the next execution's start are not on
   the client's path), or NULL. */
static void *
iopub_idle_seen (gw_relay_t *self, zmsg_t *msg, const char *parent_id)
{
    char state[8];
    if (gw_peek_frame (msg, 5, "execution_state", state, sizeof state) != 4 || !streq (state, "idle"))
        return NULL;
    void *handle = parent_id ? exec_find (self, parent_id) : NULL;
    if (!handle)
        return NULL;
    gw_exec_t *e = zlistx_handle_item (handle);
    e->idle_seen = true;
    if (e->timed_out)
        timeout_report (self, e);
    if (!e->reply)
        return NULL;
    reply_send (self, e);
    return handle;
}

/* A signed kernel message still reaches a client only when a client can
   read it: header, parent header, metadata and content each a JSON object
   that Python's json loads (gw_peek_check: GW_JSON_DEPTH_MAX levels at
   most), and a header with string msg_id and msg_type. A kernel is
   untrusted code; its key proves only which kernel sent the message. */
static wire_error_t
kernel_frames_check (zmsg_t *msg)
{
    int d = delimiter_index (msg);
    zframe_t *f = frame_at (msg, d + 2);
    for (int i = 0; i < 4 && f; i++, f = zmsg_next (msg))
        if (!gw_peek_check (zframe_data (f), zframe_size (f), GW_JSON_DEPTH_MAX))
            return WIRE_ERR_INVALID_JSON;
    char id[8];
    if (gw_peek_frame (msg, 2, "msg_id", id, sizeof id) < 0 || gw_peek_frame (msg, 2, "msg_type", id, sizeof id) < 0)
        return WIRE_ERR_MISSING_HEADER_FIELD;
    return WIRE_OK;
}

/* A message from the kernel, verified with the kernel key (and its replay
   cache); NULL when there was none or it was bad (dropped and logged). */
static zmsg_t *
recv_from_kernel (gw_relay_t *self, zsock_t *sock, wire_channel_t channel)
{
    zmsg_t *msg = zmsg_recv (sock);
    if (!msg)
        return NULL;
    wire_error_t err = wire_frames_verify (msg, self->kernel_key, self->kernel_replay, &self->server->limits);
    if (err == WIRE_OK)
        err = kernel_frames_check (msg);
    if (err != WIRE_OK) {
        log_bad (self, gw_channel_name (channel), err, "kernel");
        zmsg_destroy (&msg);
    }
    return msg;
}

static int
on_kernel_shell (zloop_t *loop, zsock_t *sock, void *arg)
{
    gw_relay_t *self = arg;
    zmsg_t *msg = recv_from_kernel (self, sock, WIRE_SHELL);
    if (!msg)
        return 0;
    if (is_probe_answer (self, msg)) {
        own_reply_check (self, msg);
        self->probe_shell_ok = true;
        probe_check (self);
        zmsg_destroy (&msg);
        return 0;
    }
    char msg_type[32];
    int n = gw_peek_frame (msg, 2, "msg_type", msg_type, sizeof msg_type);
    void *handle = NULL;
    if (n == 13 && streq (msg_type, "execute_reply")) {
        peek_t parent_id;
        if (peek (&parent_id, msg, 3, "msg_id"))
            handle = exec_find (self, parent_id.text);
        peek_free (&parent_id);
    }
    if (handle) {
        gw_exec_t *e = zlistx_handle_item (handle);
        zmsg_destroy (&e->reply);
        e->reply = msg;
        if (e->idle_seen)
            reply_complete (self, handle, e);
        else if (!e->idle_timer_id)
            e->idle_timer_id = gw_timer_start (loop, IDLE_WAIT_MS, 1, on_idle_wait_over, self);
        return 0;
    }
    client_deliver (self, WIRE_SHELL, &msg);
    return 0;
}

/* Cuts a stream message's text to at most room bytes (on a UTF-8
   boundary): the part of the output that still fits goes out. */
static void
stream_cut (zmsg_t *msg, int64_t room)
{
    int d = delimiter_index (msg);
    zframe_t *content_frame = frame_at (msg, d + 5);
    json_t *content = json_loadb ((const char *) zframe_data (content_frame), zframe_size (content_frame), 0, NULL);
    const char *text = json_string_value (json_object_get (content, "text"));
    if (text) {
        size_t n = strlen (text) < (size_t) room ? strlen (text) : (size_t) room;
        while (n > 0 && ((unsigned char) text[n] & 0xC0) == 0x80)
            n--;
        json_object_set_new (content, "text", json_stringn (text, n));
        char *dumped = json_dumps (content, JSON_COMPACT);
        zframe_reset (content_frame, dumped, strlen (dumped));
        free (dumped);
    }
    json_decref (content);
}

/* Output accounting and truncation for iopub messages of the running
   request: false = drop. *marker: send the truncation marker after it. */
static bool
iopub_admit (gw_relay_t *self, zmsg_t *msg, const char *msg_type, const char *pid, bool *marker)
{
    static const char *outputs[] = {"stream", "display_data", "update_display_data", "execute_result", "error", NULL};
    int i;
    for (i = 0; outputs[i] && !streq (outputs[i], msg_type); i++)
        ;
    if (!outputs[i])
        return true;
    gw_exec_t *e = exec_head (self);
    bool admit = true;
    if (e && pid && streq (pid, e->msg_id) && e->timed_out && streq (msg_type, "error"))
        admit = false; /* the interrupt's KeyboardInterrupt: ExecutionTimeout replaces it */
    else if (e && pid && streq (pid, e->msg_id)) {
        int d = delimiter_index (msg);
        int64_t bytes = (int64_t) zframe_size (frame_at (msg, d + 5));
        int64_t limit = gw_conv_policy (self->conv)->output_bytes;
        int64_t room = limit - e->output_bytes;
        e->output_bytes += bytes;
        if (limit != GW_UNLIMITED && e->output_bytes > limit) {
            admit = !e->truncated && room > 0 && streq (msg_type, "stream");
            if (admit)
                stream_cut (msg, room);
            if (!e->truncated) {
                e->truncated = true;
                *marker = true;
                gw_log ("output_truncated", "{s:s, s:s, s:I}", "conversation", gw_conv_id (self->conv), "msg_id",
                        e->msg_id, "limit", (json_int_t) limit);
            }
        }
    }
    return admit;
}

static void
publish_marker (gw_relay_t *self)
{
    gw_exec_t *e = exec_head (self);
    char text[200];
    snprintf (text, sizeof text, "\n[kennel: output truncated: this execution reached its limit of %lld bytes]\n",
              (long long) gw_conv_policy (self->conv)->output_bytes);
    publish (self, "stream", e->header, json_pack ("{s:s, s:s}", "name", "stderr", "text", text));
}

static int
on_kernel_iopub (zloop_t *loop, zsock_t *sock, void *arg)
{
    gw_relay_t *self = arg;
    zmsg_t *msg = recv_from_kernel (self, sock, WIRE_IOPUB);
    if (!msg)
        return 0;
    if (!self->kernel_ready) {
        self->probe_iopub_ok = true;
        probe_check (self);
    }
    if (is_probe_answer (self, msg)) {
        zmsg_destroy (&msg);
        return 0;
    }
    char msg_type[32];
    if (gw_peek_frame (msg, 2, "msg_type", msg_type, sizeof msg_type) < 0)
        msg_type[0] = 0; /* too long a type is none we look at: cut is fine */
    peek_t parent_id;
    peek (&parent_id, msg, 3, "msg_id");
    bool marker = false;
    bool admit = iopub_admit (self, msg, msg_type, parent_id.text, &marker);
    /* the reply goes out before this idle, so a client sees the cost first */
    void *finished = streq (msg_type, "status") ? iopub_idle_seen (self, msg, parent_id.text) : NULL;
    peek_free (&parent_id);
    if (admit) {
        client_deliver (self, WIRE_IOPUB, &msg);
    }
    zmsg_destroy (&msg);
    if (marker)
        publish_marker (self);
    if (finished) {
        gw_exec_t *e = zlistx_handle_item (finished);
        exec_finish (self, finished, e, e->timed_out ? "timeout" : "ok");
    }
    return 0;
}

/* ---- tool calls ----------------------------------------------------------

   The kernel's tool_request {call_id, name, arguments} goes to the client
   only for a declared tool, during an execution whose client serves stdin,
   within the size and count limits, with arguments that meet the tool's
   declared schema (gw_schema.c); otherwise the kernel gets a tool_reply
   error at once, with an ename saying why (never a hang). A forwarded call
   is pending until the client's tool_reply names its call_id, the tool
   timeout, the end of its execution or of the kernel. Each call is logged
   once (event tool_call), without argument values unless the operator's
   config asks for them. */
#define TOOL_REQUEST_MAX_BYTES (1 << 20)

static json_t *
frame_json (zmsg_t *msg, int offset, size_t *bytes)
{
    int d = delimiter_index (msg);
    zframe_t *f = frame_at (msg, d + offset);
    if (bytes)
        *bytes = f ? zframe_size (f) : 0;
    return f ? json_loadb ((const char *) zframe_data (f), zframe_size (f), 0, NULL) : NULL;
}

static void
tool_log (gw_relay_t *self, const char *msg_id, const char *name, size_t bytes, double duration,
          const char *status, const char *ename, const char *reason, json_t *arguments)
{
    json_t *line = json_pack ("{s:s, s:s, s:s, s:I, s:f, s:s}", "conversation", gw_conv_id (self->conv), "msg_id",
                              msg_id ? msg_id : "", "tool", name ? name : "", "bytes", (json_int_t) bytes,
                              "duration", duration, "status", status);
    if (ename)
        json_object_set_new (line, "ename", json_string (ename));
    if (reason)
        json_object_set_new (line, "reason", json_string (reason));
    if (arguments && self->server->config->log_tool_arguments)
        json_object_set (line, "arguments", arguments);
    gw_log ("tool_call", "O", line);
    json_decref (line);
}

/* tool_reply {call_id, status: error, ename, evalue} to the kernel. */
static void
tool_answer_error (gw_relay_t *self, const json_t *parent, json_t *call_id, const char *ename, const char *evalue)
{
    if (!self->kernel[WIRE_STDIN])
        return;
    wire_msg_t *reply = own_msg (self, "tool_reply", parent, NULL);
    wire_msg_set_content (reply, json_pack ("{s:O?, s:s, s:s, s:s}", "call_id", call_id, "status", "error", "ename",
                                            ename, "evalue", evalue));
    zmsg_t *out = wire_msg_encode (reply, NULL);
    wire_msg_destroy (&reply);
    if (out)
        kernel_send (self, &out, WIRE_STDIN);
}

static void
call_destroy (gw_call_t **self_p)
{
    gw_call_t *self = *self_p;
    if (!self)
        return;
    if (self->timer_id)
        gw_timer_end (self->relay->server->loop, self->timer_id);
    free (self->call_id);
    free (self->name);
    free (self->exec_msg_id);
    json_decref (self->header);
    json_decref (self->arguments);
    free (self);
    *self_p = NULL;
}

static void
call_destructor (void **item)
{
    call_destroy ((gw_call_t **) item);
}

/* Ends a pending call: logged, forgotten (a late reply is then unknown). */
static void
call_end (gw_relay_t *self, gw_call_t *call, const char *status, const char *ename, const char *reason)
{
    tool_log (self, call->exec_msg_id, call->name, call->bytes, gw_clock_mono () - call->started_at, status, ename, reason,
              call->arguments);
    zhashx_delete (self->calls, call->call_id);
}

static int
on_tool_timeout (zloop_t *loop, int timer_id, void *arg)
{
    gw_call_t *call = arg;
    gw_relay_t *self = call->relay;
    call->timer_id = 0; /* a one-shot timer, already gone */
    char evalue[300];
    snprintf (evalue, sizeof evalue, "the host did not answer tool '%.*s' within %g s",
              gw_text_fit (call->name, 200), call->name, gw_conv_policy (self->conv)->tool_timeout);
    json_t *call_id = json_string (call->call_id);
    tool_answer_error (self, call->header, call_id, "ToolTimeout", evalue);
    json_decref (call_id);
    call_end (self, call, "timeout", "ToolTimeout", NULL);
    return 0;
}

/* Ends the pending calls of one execution (msg_id) or of all (NULL). */
static void
calls_end (gw_relay_t *self, const char *msg_id, const char *status)
{
    zlistx_t *ids = zhashx_keys (self->calls);
    for (const char *id = zlistx_first (ids); id; id = zlistx_next (ids)) {
        gw_call_t *call = zhashx_lookup (self->calls, id);
        if (call && (!msg_id || streq (call->exec_msg_id, msg_id)))
            call_end (self, call, status, NULL, NULL);
    }
    zlistx_destroy (&ids);
}

/* Why a tool_request may not go to the client: ename and evalue, or false. */
static bool
tool_request_refusal (gw_relay_t *self, gw_exec_t *e, json_t *content, size_t bytes, const char **ename,
                      char *why, size_t size)
{
    const char *name = json_string_value (json_object_get (content, "name"));
    const char *call_id = json_string_value (json_object_get (content, "call_id"));
    int max_calls = self->server->config->max_tool_calls;
    const json_t *tool = NULL;
    char problem[300];
    if (!e || !e->started) {
        *ename = "ToolUnavailable";
        snprintf (why, size, "no execution is running to serve a tool call");
    }
    else if (!e->allow_stdin) {
        *ename = "ToolUnavailable";
        snprintf (why, size, "no client is serving stdin for this execution (allow_stdin is false)");
    }
    else if (bytes > TOOL_REQUEST_MAX_BYTES) {
        *ename = "ToolArgumentsTooLarge";
        snprintf (why, size, "the call's arguments take %zu bytes, the limit is %d", bytes, TOOL_REQUEST_MAX_BYTES);
    }
    else if (!call_id || !*call_id || zhashx_lookup (self->calls, call_id)) {
        *ename = "BadToolRequest";
        snprintf (why, size, "a tool_request needs a call_id string not already pending");
    }
    else if (!name || !(tool = gw_conv_tool (self->conv, name))) {
        *ename = "UnknownTool";
        snprintf (why, size, "this conversation declared no tool named '%.*s'", name ? gw_text_fit (name, 200) : 0,
                  name ? name : "");
    }
    else if (e->tool_calls >= max_calls) {
        *ename = "ToolLimit";
        snprintf (why, size, "this execution already made %d tool calls, the limit", max_calls);
    }
    else if (!gw_schema_check_arguments (gw_tools_schema (tool), json_object_get (content, "arguments"), problem,
                                         sizeof problem)) {
        *ename = "InvalidToolArguments";
        snprintf (why, size, "tool '%.*s': %s", gw_text_fit (name, 100), name, problem);
    }
    else
        return false;
    return true;
}

/* true: forward to the client (the call is now pending). */
static bool
tool_request_admit (gw_relay_t *self, zmsg_t *msg, json_t *header)
{
    size_t bytes;
    json_t *content = frame_json (msg, 5, &bytes);
    gw_exec_t *e = exec_head (self);
    const char *ename = NULL;
    char why[512];
    const char *name = json_string_value (json_object_get (content, "name"));
    if (tool_request_refusal (self, e, content, bytes, &ename, why, sizeof why)) {
        tool_log (self, e ? e->msg_id : NULL, name, bytes, 0, "refused", ename, why,
                  json_object_get (content, "arguments"));
        tool_answer_error (self, header, json_object_get (content, "call_id"), ename, why);
        json_decref (content);
        return false;
    }
    e->tool_calls++;
    gw_call_t *call = wire_xcalloc (1, sizeof *call);
    call->relay = self;
    call->call_id = wire_xstrdup (json_string_value (json_object_get (content, "call_id")));
    call->name = wire_xstrdup (name);
    call->exec_msg_id = wire_xstrdup (e->msg_id);
    call->header = json_incref (header);
    if (self->server->config->log_tool_arguments)
        call->arguments = json_incref (json_object_get (content, "arguments"));
    call->bytes = bytes;
    call->started_at = gw_clock_mono ();
    double timeout = gw_conv_policy (self->conv)->tool_timeout;
    if (timeout != GW_UNLIMITED)
        call->timer_id = gw_timer_start (self->server->loop, gw_limit_ms (timeout) + 1, 1, on_tool_timeout, call);
    zhashx_insert (self->calls, call->call_id, call);
    json_decref (content);
    return true;
}

/* A client's tool_reply reaches the kernel only for a pending call of this
   conversation; anything else is dropped and logged. */
static bool
tool_reply_admit (gw_relay_t *self, zmsg_t *msg)
{
    size_t bytes;
    json_t *content = frame_json (msg, 5, &bytes);
    const char *call_id = json_string_value (json_object_get (content, "call_id"));
    gw_call_t *call = call_id ? zhashx_lookup (self->calls, call_id) : NULL;
    if (!call) {
        gw_log ("tool_reply_dropped", "{s:s, s:s, s:s}", "conversation", gw_conv_id (self->conv), "call_id",
                call_id ? call_id : "", "reason", "no pending tool call of this conversation has this call_id");
        json_decref (content);
        return false;
    }
    const char *status = json_string_value (json_object_get (content, "status"));
    const char *ename = json_string_value (json_object_get (content, "ename"));
    call->bytes += bytes;
    call_end (self, call, status && streq (status, "ok") ? "ok" : "error",
              status && streq (status, "ok") ? NULL : ename, NULL);
    json_decref (content);
    return true;
}

static int
on_kernel_route (gw_relay_t *self, zsock_t *sock, wire_channel_t channel)
{
    zmsg_t *msg = zmsg_recv (sock);
    if (!msg)
        return 0;
    wire_error_t err = wire_frames_verify (msg, self->kernel_key, self->kernel_replay, &self->server->limits);
    if (err == WIRE_OK)
        err = kernel_frames_check (msg);
    if (err != WIRE_OK) {
        log_bad (self, gw_channel_name (channel), err, "kernel");
        zmsg_destroy (&msg);
        return 0;
    }
    char msg_type[16];
    if (channel == WIRE_STDIN && gw_peek_frame (msg, 2, "msg_type", msg_type, sizeof msg_type) == 12
        && streq (msg_type, "tool_request")) {
        json_t *header = wire_frames_peek (msg, 0, &err); /* the parent of a refusal */
        bool refused = !tool_request_admit (self, msg, header);
        json_decref (header);
        if (refused) {
            zmsg_destroy (&msg);
            return 0;
        }
    }
    client_deliver (self, channel, &msg);
    return 0;
}

static int
on_kernel_stdin (zloop_t *loop, zsock_t *sock, void *arg)
{
    return on_kernel_route (arg, sock, WIRE_STDIN);
}

static int
on_kernel_control (zloop_t *loop, zsock_t *sock, void *arg)
{
    return on_kernel_route (arg, sock, WIRE_CONTROL);
}

/* ---- client -> kernel --------------------------------------------------- */

static void
to_kernel (gw_relay_t *self, wire_channel_t channel, zmsg_t **msg_p)
{
    if (self->kernel[channel] && self->kernel_ready) {
        kernel_send (self, msg_p, channel);
        return;
    }
    /* no kernel yet (starting) or any more (died): hold it, start one */
    zmsg_pushmem (*msg_p, &channel, sizeof channel);
    zlistx_add_end (self->backlog, *msg_p);
    *msg_p = NULL;
    if (gw_conv_kernel_dead (self->conv))
        gw_conv_kernel_start (self->conv);
}

/* A peer's message (token, route, delimiter, signature, parts) checked as
   the relay reads every client message: layout and sizes, a header with
   string msg_type and msg_id. The header, or NULL (dropped, logged). */
static json_t *
client_check (gw_relay_t *self, zmsg_t *msg, wire_channel_t channel)
{
    json_t *header = NULL;
    wire_error_t err = wire_frames_verify (msg, NULL, NULL, &self->server->limits);
    if (err == WIRE_OK)
        header = wire_frames_peek (msg, 0, &err);
    if (header && (!json_is_string (json_object_get (header, "msg_type"))
                   || !json_is_string (json_object_get (header, "msg_id")))) {
        json_decref (header);
        header = NULL;
        err = WIRE_ERR_MISSING_HEADER_FIELD;
    }
    if (!header) {
        log_bad (self, gw_channel_name (channel), err, "client");
        return NULL;
    }
    gw_conv_touch (self->conv);
    return header;
}

/* A client's execute_request as the relay tracks it (not yet queued). */
static gw_exec_t *
exec_new (zmsg_t *msg, json_t *header)
{
    zmsg_t *ids = zmsg_new ();
    int d = delimiter_index (msg);
    zframe_t *f = zmsg_first (msg);
    for (int i = 0; i < d; i++, f = zmsg_next (msg))
        zmsg_append (ids, &(zframe_t *){zframe_dup (f)});
    gw_exec_t *e = wire_xcalloc (1, sizeof *e);
    e->usage.stat_fd = e->usage.status_fd = -1;
    e->msg_id = wire_xstrdup (json_string_value (json_object_get (header, "msg_id")));
    e->header = json_incref (header);
    e->ids = ids;
    /* the protocol's default is true; false means no client answers stdin */
    json_t *content = frame_json (msg, 5, NULL);
    json_t *allow = json_object_get (content, "allow_stdin");
    e->allow_stdin = !json_is_false (allow);
    json_decref (content);
    return e;
}

static void
track_execute (gw_relay_t *self, zmsg_t **msg_p, json_t *header)
{
    int limit = self->server->config->queue_limit;
    gw_exec_t *e = exec_new (*msg_p, header);
    if ((int) zlistx_size (self->execs) > limit) {
        char evalue[160];
        snprintf (evalue, sizeof evalue, "too many queued requests: %d are waiting, the limit is %d",
                  (int) zlistx_size (self->execs) - 1, limit);
        gw_log ("queue_full", "{s:s, s:s}", "conversation", gw_conv_id (self->conv), "msg_id", e->msg_id);
        exec_fail (self, e, "QueueFull", evalue, "kept", true);
        exec_destroy (&e);
        zmsg_destroy (msg_p);
        return;
    }
    zlistx_add_end (self->execs, e);
    to_kernel (self, WIRE_SHELL, msg_p);
    exec_start_head (self);
}

static void
on_client_shell (gw_relay_t *self, zmsg_t **msg_p, const char *msg_type, json_t *header)
{
    if (streq (msg_type, "execute_request"))
        track_execute (self, msg_p, header);
    else
        to_kernel (self, WIRE_SHELL, msg_p);
}

/* interrupt and shutdown are the gateway's to answer: it owns the process */
static void
control_answer (gw_relay_t *self, zmsg_t **msg_p, const char *msg_type)
{
    wire_error_t err;
    wire_msg_t *req = wire_msg_decode (msg_p, NULL, NULL, &self->server->limits, &err);
    if (!req)
        return;
    publish_status (self, req->header, "busy");
    wire_msg_t *reply;
    if (streq (msg_type, "interrupt_request")) {
        int rc = gw_conv_interrupt (self->conv);
        reply = wire_msg_new (self->session, "interrupt_reply", req);
        wire_msg_set_content (reply, rc == 0 ? json_pack ("{s:s}", "status", "ok")
                                             : json_pack ("{s:s, s:s, s:s, s:[]}", "status", "error", "ename",
                                                          "NoKernel", "evalue", "no kernel is running", "traceback"));
        gw_log ("interrupt", "{s:s, s:b}", "conversation", gw_conv_id (self->conv), "delivered", rc == 0);
    }
    else {
        bool restart = json_is_true (json_object_get (req->content, "restart"));
        reply = wire_msg_new (self->session, "shutdown_reply", req);
        wire_msg_set_content (reply, json_pack ("{s:s, s:b}", "status", "ok", "restart", restart));
        client_send_own (self, reply, WIRE_CONTROL);
        wire_msg_destroy (&reply);
        /* ipykernel also broadcasts it on iopub, as a message of its own:
           clients keep one replay cache across channels */
        publish (self, "shutdown_reply", req->header, json_pack ("{s:s, s:b}", "status", "ok", "restart", restart));
        /* kernelspec mode exits either way, as ipykernel does: the front
           end's kernel manager starts the next process */
        publish_status (self, req->header, "idle");
        wire_msg_destroy (&req);
        if (restart && !self->server->kernel_mode)
            gw_conv_restart (self->conv, "shutdown_request with restart");
        else
            gw_conv_request_close (self->conv);
        return;
    }
    client_send_own (self, reply, WIRE_CONTROL);
    publish_status (self, req->header, "idle");
    wire_msg_destroy (&reply);
    wire_msg_destroy (&req);
}

static void
on_client_control (gw_relay_t *self, zmsg_t **msg_p, const char *msg_type)
{
    if (streq (msg_type, "interrupt_request") || streq (msg_type, "shutdown_request"))
        control_answer (self, msg_p, msg_type);
    else
        to_kernel (self, WIRE_CONTROL, msg_p);
}

static void
on_client_stdin (gw_relay_t *self, zmsg_t **msg_p, const char *msg_type)
{
    if (streq (msg_type, "tool_reply") && !tool_reply_admit (self, *msg_p))
        return;
    if (self->kernel[WIRE_STDIN] && self->kernel_ready)
        kernel_send (self, msg_p, WIRE_STDIN);
    /* else an answer for a kernel that is gone: dropped */
}

/* A closing conversation relays nothing: its execute requests are queued
   to be answered with the rest (gw_relay_close), anything else is dropped. */
static void
on_client_closing (gw_relay_t *self, zmsg_t **msg_p, const char *msg_type, json_t *header, wire_channel_t channel)
{
    if (channel == WIRE_SHELL && streq (msg_type, "execute_request"))
        zlistx_add_end (self->execs, exec_new (*msg_p, header));
}

/* What a peer submits (gw_peers_submit_fn): checked, then routed by
   channel and type. */
static void
relay_submit (void *arg, wire_channel_t channel, zmsg_t **msg_p)
{
    gw_relay_t *self = arg;
    json_t *header = channel == WIRE_IOPUB || channel == WIRE_HB ? NULL : client_check (self, *msg_p, channel);
    if (!header) {
        zmsg_destroy (msg_p);
        return;
    }
    const char *msg_type = json_string_value (json_object_get (header, "msg_type"));
    if (self->closed_why)
        on_client_closing (self, msg_p, msg_type, header, channel);
    else if (channel == WIRE_SHELL)
        on_client_shell (self, msg_p, msg_type, header);
    else if (channel == WIRE_CONTROL)
        on_client_control (self, msg_p, msg_type);
    else
        on_client_stdin (self, msg_p, msg_type);
    json_decref (header);
    zmsg_destroy (msg_p);
}

/* ---- lifecycle ---------------------------------------------------------- */

gw_relay_t *
gw_relay_new (gw_conv_t *conv, gw_server_t *server)
{
    gw_relay_t *self = wire_xcalloc (1, sizeof *self);
    self->conv = conv;
    self->server = server;
    self->peers = gw_peers_new (conv, relay_submit, self);
    self->execs = zlistx_new ();
    zlistx_set_destructor (self->execs, exec_destructor);
    self->backlog = zlistx_new ();
    zlistx_set_destructor (self->backlog, zmsg_destructor);
    self->calls = zhashx_new ();
    zhashx_set_destructor (self->calls, call_destructor);
    wire_id_new (self->session);
    return self;
}

void
gw_relay_destroy (gw_relay_t **self_p)
{
    gw_relay_t *self = *self_p;
    if (!self)
        return;
    kernel_sockets_close (self);
    for (gw_exec_t *e = zlistx_first (self->execs); e; e = zlistx_next (self->execs))
        exec_stop_timers (self, e);
    zlistx_destroy (&self->execs);
    zlistx_destroy (&self->backlog);
    zhashx_destroy (&self->calls);
    gw_peers_destroy (&self->peers, self->closed_why ? self->closed_why : "closed");
    free (self->closed_why);
    free (self);
    *self_p = NULL;
}

gw_peers_t *
gw_relay_peers (gw_relay_t *self)
{
    return self->peers;
}

void
gw_relay_event (gw_relay_t *self, gw_event_t event, const char *detail)
{
    gw_peers_event (self->peers, event, detail);
}

/* ---- kernel connections --------------------------------------------------

   The kernel's sockets are files in its run dir, which the kernel can change
   once user code runs: unlink one, bind its own, or plant a symlink to a host
   socket. So the gateway connects once, after the kernel has bound all of
   them (it binds before running any user code) and never reconnects:
   ZeroMQ's reconnection, by path, as root and following symlinks, is off.
   A connection that drops once the kernel is ready is the kernel breaking
   its channel: the kernel is killed and its clients are told. */

/* A dropped connection is acted on after this long, so that a kernel that
   died by itself is reported with its own cause (its exit comes first). */
#define KERNEL_DROP_GRACE_MS 300

static void
kernel_monitor_stop (gw_relay_t *self, int ch)
{
    if (!self->monitor[ch])
        return;
    gw_io_reader_end (self->server->io, self->monitor[ch]);
    if (self->kernel[ch]) {
        zmq_socket_monitor (zsock_resolve (self->kernel[ch]), NULL, 0);
        gw_io_sent (self->server->io, self->kernel[ch]); /* any call on it may take its wake-up */
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
                  gw_channel_name (self->dropped_channel), cut, 2 * self->server->limits.max_message_bytes,
                  GW_ZMTP_FRAMES_MAX);
    else
        snprintf (cause, sizeof cause,
                  "the kernel closed its %s connection to the gateway (or sent a frame over %zu bytes); it was "
                  "killed and the next request starts a fresh kernel, variables are lost",
                  gw_channel_name (self->dropped_channel), 2 * self->server->limits.max_message_bytes);
    gw_conv_kill_kernel (self->conv, "KernelDied", cause);
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
            probe_check (self);
        }
    }
    else if (ev == ZMQ_EVENT_DISCONNECTED && self->kernel_ready && !self->drop_timer) {
        gw_log ("kernel_channel_closed", "{s:s, s:s}", "conversation", gw_conv_id (self->conv), "channel",
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
        || gw_io_reader (self->server->io, self->monitor[ch], on_kernel_monitor, self) < 0) {
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
        gw_timer_end (self->server->loop, self->bound_timer);
    if (self->drop_timer)
        gw_timer_end (self->server->loop, self->drop_timer);
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
            gw_io_reader_end (self->server->io, self->kernel[ch]);
            zsock_destroy (&self->kernel[ch]);
        }
        gw_zmtp_guard_destroy (&self->guard[ch]);
    }
}

static void
kernel_sockets_close (gw_relay_t *self)
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
    size_t max = self->server->limits.max_message_bytes;
    gw_zmtp_limits_t limits = {max && max <= UINT64_MAX / 2 ? 2 * (uint64_t) max : UINT64_MAX, GW_ZMTP_FRAMES_MAX};
    self->guard[ch] = gw_zmtp_guard_new (self->server->io, path, &limits, gw_conv_id (self->conv),
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
    gw_io_bound (s, self->server->limits.max_message_bytes, GW_QUEUE_CONVERSATION);
    if (ch == WIRE_IOPUB)
        zsock_set_subscribe (s, "");
    else
        zsock_set_identity (s, KERNEL_IDENTITY);
    if (kernel_monitor_start (self, ch, s) < 0)
        return -1;
    if (kernel_guard_connect (self, ch, s) < 0)
        return -1;
    static zloop_reader_fn *readers[] = {on_kernel_shell, on_kernel_iopub, on_kernel_stdin, on_kernel_control};
    return gw_io_reader (self->server->io, s, readers[ch], self);
}

/* Connects the four sockets and starts the readiness probe. */
static int
kernel_connect (gw_relay_t *self)
{
    for (int ch = 0; ch < 4; ch++)
        if (kernel_socket_open (self, ch) < 0) {
            char source[200];
            snprintf (source, sizeof source, "conversation/%s/kernel_connect", gw_conv_id (self->conv));
            gw_log_limited (source, "kernel_connect_failed", "{s:s, s:s, s:s}", "conversation",
                            gw_conv_id (self->conv), "channel", gw_channel_name (ch), "reason", strerror (errno));
            kernel_sockets_drop (self);
            return -1;
        }
    self->connected_at = gw_clock_mono ();
    /* repeated until the answer and an iopub message arrived: the first
       probe's busy/idle can be published before our SUB's subscription
       reached the kernel (a warm kernel answers at once) */
    probe_send (self);
    self->probe_timer = gw_timer_start (self->server->loop, 10, 0, on_probe_timer, self);
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
    self->bound_timer = gw_timer_start (self->server->loop, KERNEL_CONNECT_AGAIN_MS, 0, on_kernel_bound_check, self);
}

int
gw_relay_kernel_attach (gw_relay_t *self, const char *run_dir, const wire_connection_t *kc, char **errmsg)
{
    kernel_sockets_close (self);
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
    self->bound_timer = gw_timer_start (self->server->loop, 2, 0, on_kernel_bound_check, self);
    return 0;
}

/* What arrived while there was no kernel goes out now, in order. */
static void
backlog_flush (gw_relay_t *self)
{
    zmsg_t *msg;
    while ((msg = zlistx_detach (self->backlog, NULL))) {
        zframe_t *chf = zmsg_pop (msg);
        wire_channel_t ch = WIRE_SHELL;
        if (chf && zframe_size (chf) == sizeof ch)
            memcpy (&ch, zframe_data (chf), sizeof ch);
        zframe_destroy (&chf);
        kernel_send (self, &msg, ch);
    }
}

/* The running request and those queued behind it each get an answer, in
   order, none is silently lost: the running one's evalue is cause, a queued
   one's "not run: <queued> (cause)"; state goes to metadata.kennel. */
static void
execs_answer_all (gw_relay_t *self, const char *ename, const char *cause, const char *queued, const char *state)
{
    gw_exec_t *e;
    bool first = true;
    while ((e = zlistx_first (self->execs))) {
        exec_stop_timers (self, e);
        char evalue[512];
        if (first)
            snprintf (evalue, sizeof evalue, "%s", cause);
        else
            snprintf (evalue, sizeof evalue, "not run: %s (%s)", queued, cause);
        if (e->reply) {
            /* it had finished; only its idle was missing */
            zmsg_t *msg = e->reply;
            e->reply = NULL;
            reply_rewrite (self, msg, e);
            client_deliver (self, WIRE_SHELL, &msg);
            publish_status (self, e->header, "idle");
        }
        else
            exec_fail (self, e, ename, evalue, state, !first || !e->started);
        gw_log ("execute_end", "{s:s, s:s, s:s, s:s}", "conversation", gw_conv_id (self->conv), "msg_id",
                e->msg_id, "status", "error", "reason", evalue);
        self->executions++;
        zlistx_delete (self->execs, zlistx_cursor (self->execs));
        first = false;
    }
}

void
gw_relay_kernel_detach (gw_relay_t *self, const char *ename, const char *cause, bool lost)
{
    kernel_sockets_close (self);
    calls_end (self, NULL, "kernel_ended"); /* nothing is waiting for them any more */
    /* they were in the dead kernel's queue */
    execs_answer_all (self, ename, cause, "the kernel ended before it", lost ? "lost" : "kept");
    zlistx_purge (self->backlog);
    if (lost)
        self->state_lost = true;
}

void
gw_relay_close (gw_relay_t *self, const char *why, const char *cause)
{
    free (self->closed_why);
    self->closed_why = wire_xstrdup (why);
    /* a front submits what its clients sent before the close (execute
       requests not yet read): they are answered with the rest */
    gw_peers_event (self->peers, GW_EVENT_CLOSING, why);
    calls_end (self, NULL, "closed");
    /* sent before the peers are told the conversation closed (the ZeroMQ
       front's sockets then linger to deliver them) */
    execs_answer_all (self, "ConversationClosed", cause, "the conversation was closed before it", "lost");
    zlistx_purge (self->backlog);
}

void
gw_relay_configure_tools (gw_relay_t *self, json_t *tools)
{
    gw_relay_configure (self, tools, 0);
}

void
gw_relay_configure (gw_relay_t *self, json_t *tools, double tool_timeout)
{
    /* the kernel answers between executions; its reply (our session) is
       consumed like the readiness probe's, a refusal is logged */
    wire_msg_t *m = wire_msg_new (self->session, "kennel_configure_request", NULL);
    json_t *content = json_object ();
    if (tools)
        json_object_set (content, "tools", tools);
    if (tool_timeout > 0)
        json_object_set_new (content, "tool_timeout", json_real (tool_timeout));
    wire_msg_set_content (m, content);
    zmsg_t *msg = wire_msg_encode (m, NULL);
    wire_msg_destroy (&m);
    if (msg)
        to_kernel (self, WIRE_SHELL, &msg);
}

void
gw_relay_announce_starting (gw_relay_t *self)
{
    publish_status (self, NULL, "starting");
}

int
gw_relay_pending (const gw_relay_t *self)
{
    return (int) zlistx_size (self->execs);
}

int
gw_relay_executions (const gw_relay_t *self)
{
    return self->executions;
}
