/*  mcp_conv.c - one conversation, seen as a Jupyter client sees it.

    The front holds the four client sockets of a conversation the gateway
    opened (shell, stdin, control, iopub) and nothing else: the relay's
    checks, limits and metadata.kennel apply to it as to any host. Shell
    and stdin share one identity so that the kernel's tool_request, routed
    to the identities of the running shell request, reaches our stdin.

    Inside the daemon (the HTTP front's MCP) there are no sockets: the
    front is a peer of the conversation (gw_front.h) and submits and
    receives the same messages, unsigned, through the core.

    Executions are kept in the order they were sent; the gateway runs them
    in that order, so the head is the one running. A timeout or a cancel
    interrupts the head only: a queued one is interrupted when it starts.
    An iopub status "dead" is the gateway saying it stops the kernel (the
    end of a drain, gateway/gw_drain.c): every execution ends then, with
    what it had produced, rather than at the stop with nothing.
*/
#include "mcp.h"
#include "gateway/gw_conv.h"
#include "gateway/gw_core.h"
#include "gateway/gw_front.h"

#include <string.h>

#define MCP_CONV_READY_MS 30000
#define MCP_CONV_PROBE_MS 5
#define MCP_CONV_PROBE_MAX_MS 200
#define MCP_CONV_REINTERRUPTS 5

struct mcp_exec {
    mcp_conv_t *conv;
    char msg_id[WIRE_ID_SIZE + 8];
    json_t *outputs;
    json_t *reply;
    json_t *kennel;
    bool idle;
    bool started;
    bool cancelled;
    bool timed_out;
    bool stopped; /* the gateway is stopping the kernel */
    double timeout_s;
    double started_at;
    int timeout_timer;
    int progress_timer;
    int interrupt_timer; /* interrupts again while it runs on */
    mcp_exec_fn *done;
    mcp_exec_progress_fn *progress;
    void *arg;
};

/* A tool call from the kernel waiting for its host: it outlives its
   conversation, or its cancel (conv set NULL, nothing answered then),
   until the tool server answers. */
typedef struct {
    mcp_conv_t *conv;
    wire_msg_t *request;
} tool_call_t;

struct mcp_conv {
    zloop_t *loop;
    char *id;
    char *workspace;
    wire_key_t *key;
    char session[WIRE_ID_SIZE];
    zsock_t *shell, *stdin_, *control, *iopub;
    gw_peer_t *peer; /* inside the daemon, instead of the sockets; NULL once closed */
    bool iopub_seen, shell_seen, ready;
    int probe_timer;
    size_t probe_ms; /* doubles up to MCP_CONV_PROBE_MAX_MS */
    double opened;
    double last_used; /* ms, monotonic: an execution sent or finished */
    zlistx_t *execs;      /* mcp_exec_t, in order sent */
    zlistx_t *tool_calls; /* tool_call_t pending */
    mcp_tool_serve_fn *serve;
    mcp_tool_cancel_fn *cancel;
    void *serve_arg;
    mcp_conv_ready_fn *on_ready;
    void *ready_arg;
    double progress_interval;
};

static zsock_t *
s_socket_of (mcp_conv_t *self, wire_channel_t channel)
{
    return channel == WIRE_SHELL ? self->shell : channel == WIRE_STDIN ? self->stdin_ : self->control;
}

/* metadata (taken) may be NULL: {} */
static void
s_send_with (mcp_conv_t *self, wire_channel_t channel, const char *msg_type, json_t *content, json_t *metadata,
             const wire_msg_t *parent, char *msg_id_out, size_t out_size)
{
    wire_msg_t *m = wire_msg_new (self->session, msg_type, parent);
    wire_msg_set_content (m, content);
    if (metadata) {
        json_decref (m->metadata);
        m->metadata = metadata;
    }
    if (msg_id_out)
        snprintf (msg_id_out, out_size, "%s", wire_msg_id (m));
    if (self->peer) {
        zmsg_t *msg = wire_msg_encode (m, self->key); /* an empty key: unsigned */
        if (msg)
            gw_front_submit (self->peer, channel, &msg);
        zmsg_destroy (&msg);
    }
    else if (self->shell)
        wire_msg_send (m, zsock_resolve (s_socket_of (self, channel)), self->key);
    wire_msg_destroy (&m);
}

static void
s_send (mcp_conv_t *self, wire_channel_t channel, const char *msg_type, json_t *content, const wire_msg_t *parent,
        char *msg_id_out, size_t out_size)
{
    s_send_with (self, channel, msg_type, content, NULL, parent, msg_id_out, out_size);
}

static void
s_interrupt (mcp_conv_t *self)
{
    s_send (self, WIRE_CONTROL, "interrupt_request", json_object (), NULL, NULL, 0);
}

static wire_msg_t *
s_decode (mcp_conv_t *self, zmsg_t *msg)
{
    wire_error_t err;
    bool had = msg != NULL;
    wire_msg_t *m = msg ? wire_msg_decode (&msg, self->key, NULL, &wire_limits_default, &err) : NULL;
    if (!m && had)
        gw_log_limited ("mcp/conversation", "mcp_bad_message", "{s:s, s:s}", "conversation", self->id, "reason",
                        wire_error_name (err));
    return m;
}

/* ---- readiness ---------------------------------------------------------- */

static void
s_ready (mcp_conv_t *self, bool ok, const char *errmsg)
{
    gw_timer_end (self->loop, self->probe_timer);
    self->probe_timer = 0;
    self->ready = ok;
    mcp_conv_ready_fn *fn = self->on_ready;
    self->on_ready = NULL;
    if (fn)
        fn (self, ok, errmsg, self->ready_arg); /* may destroy self */
}

/* kernel_info until iopub carries a message: a SUB sees nothing published
   before its subscription reached the gateway. */
static int
s_on_probe (zloop_t *loop, int timer_id, void *arg)
{
    mcp_conv_t *self = arg;
    self->probe_timer = 0;
    if (zclock_mono () - self->opened > MCP_CONV_READY_MS) {
        s_ready (self, false, "the conversation's sockets carried nothing within 30 s");
        return 0;
    }
    s_send (self, WIRE_SHELL, "kernel_info_request", json_object (), NULL, NULL, 0);
    /* soon at first (the first result waits on it), then ever more rarely */
    self->probe_ms = self->probe_ms * 2 < MCP_CONV_PROBE_MAX_MS ? self->probe_ms * 2 : MCP_CONV_PROBE_MAX_MS;
    self->probe_timer = gw_timer_start (loop, self->probe_ms, 1, s_on_probe, self);
    return 0;
}

/* Ready from the loop's next turn: the caller keeps it first. */
static int
s_on_attached (zloop_t *loop, int timer_id, void *arg)
{
    mcp_conv_t *self = arg;
    self->probe_timer = 0;
    s_ready (self, true, NULL);
    return 0;
}

static void
s_maybe_ready (mcp_conv_t *self)
{
    if (!self->ready && self->iopub_seen && self->shell_seen && self->on_ready)
        s_ready (self, true, NULL);
}

/* ---- executions ------------------------------------------------------ */

static void
s_exec_free (mcp_exec_t **exec_p)
{
    mcp_exec_t *exec = *exec_p;
    if (!exec)
        return;
    gw_timer_end (exec->conv->loop, exec->timeout_timer);
    gw_timer_end (exec->conv->loop, exec->progress_timer);
    gw_timer_end (exec->conv->loop, exec->interrupt_timer);
    json_decref (exec->outputs);
    json_decref (exec->reply);
    json_decref (exec->kennel);
    free (exec);
    *exec_p = NULL;
}

static int
s_on_reinterrupt (zloop_t *loop, int timer_id, void *arg)
{
    mcp_exec_t *exec = arg;
    s_interrupt (exec->conv);
    return 0;
}

/* A SIGINT that reaches the kernel before it runs the code is lost: while
   the execution runs on, it is sent again each second, a few times (then
   the gateway's execution_timeout is the backstop). */
static void
s_exec_interrupt (mcp_exec_t *exec)
{
    s_interrupt (exec->conv);
    if (!exec->interrupt_timer)
        exec->interrupt_timer = gw_timer_start (exec->conv->loop, 1000, MCP_CONV_REINTERRUPTS, s_on_reinterrupt, exec);
}

static int
s_on_exec_timeout (zloop_t *loop, int timer_id, void *arg)
{
    mcp_exec_t *exec = arg;
    exec->timeout_timer = 0;
    exec->timed_out = true;
    s_exec_interrupt (exec);
    return 0;
}

static int
s_on_exec_progress (zloop_t *loop, int timer_id, void *arg)
{
    mcp_exec_t *exec = arg;
    if (exec->progress && !exec->cancelled)
        exec->progress ((zclock_mono () - exec->started_at) / 1000.0, exec->arg);
    return 0;
}

/* The head of the queue runs: its clocks start now. */
static void
s_head_started (mcp_conv_t *self)
{
    mcp_exec_t *exec = zlistx_first (self->execs);
    if (!exec || exec->started || exec->stopped)
        return;
    exec->started = true;
    exec->started_at = (double) zclock_mono ();
    if (exec->cancelled) {
        s_exec_interrupt (exec);
        return;
    }
    if (exec->timeout_s > 0)
        exec->timeout_timer = gw_timer_start (self->loop, (size_t) (exec->timeout_s * 1000), 1, s_on_exec_timeout, exec);
    if (exec->progress && self->progress_interval > 0)
        exec->progress_timer
            = gw_timer_start (self->loop, (size_t) (self->progress_interval * 1000), 0, s_on_exec_progress, exec);
}

static void
s_exec_finish (mcp_conv_t *self, mcp_exec_t *exec, bool failed)
{
    self->last_used = (double) zclock_mono ();
    void *handle = zlistx_find (self->execs, exec);
    if (handle)
        zlistx_detach (self->execs, handle);
    if (!exec->cancelled && exec->done) {
        mcp_exec_result_t r = {.outputs = exec->outputs, .reply = exec->reply, .kennel = exec->kennel,
                               .timed_out = exec->timed_out, .stopped = exec->stopped};
        exec->done (failed ? NULL : &r, exec->arg);
    }
    s_exec_free (&exec);
    if (!failed)
        s_head_started (self);
}

static mcp_exec_t *
s_exec_of (mcp_conv_t *self, const wire_msg_t *m)
{
    const char *parent = json_string_value (json_object_get (m->parent_header, "msg_id"));
    if (!parent)
        return NULL;
    for (mcp_exec_t *e = zlistx_first (self->execs); e; e = zlistx_next (self->execs))
        if (streq (e->msg_id, parent))
            return e;
    return NULL;
}

mcp_exec_t *
mcp_conv_execute (mcp_conv_t *self, const char *code, double timeout_s, mcp_exec_fn *done,
                  mcp_exec_progress_fn *progress, void *arg)
{
    mcp_exec_t *exec = wire_xcalloc (1, sizeof *exec);
    exec->conv = self;
    exec->outputs = json_array ();
    exec->timeout_s = timeout_s;
    exec->done = done;
    exec->progress = progress;
    exec->arg = arg;
    /* allow_stdin: the kernel's tool calls travel on stdin; stop_on_error
       off: each call stands alone, an interrupted one must not abort the
       calls queued behind it; tool_cancel: the gateway says when it ended
       a call we serve, so that its host command stops */
    s_send_with (self, WIRE_SHELL, "execute_request",
                 json_pack ("{s:s, s:b, s:b, s:{}, s:b, s:b}", "code", code, "silent", 0, "store_history", 1,
                            "user_expressions", "allow_stdin", 1, "stop_on_error", 0),
                 json_pack ("{s:{s:b}}", "kennel", "tool_cancel", 1), NULL, exec->msg_id, sizeof exec->msg_id);
    zlistx_add_end (self->execs, exec);
    self->last_used = (double) zclock_mono ();
    s_head_started (self);
    return exec;
}

void
mcp_conv_cancel (mcp_conv_t *self, mcp_exec_t *exec)
{
    if (exec->cancelled)
        return;
    exec->cancelled = true;
    if (exec->started)
        s_exec_interrupt (exec);
}

void
mcp_conv_abandon (mcp_conv_t *self)
{
    for (mcp_exec_t *e = zlistx_first (self->execs); e; e = zlistx_next (self->execs))
        mcp_conv_cancel (self, e);
}

void
mcp_conv_fail_all (mcp_conv_t *self)
{
    mcp_exec_t *exec;
    while ((exec = zlistx_first (self->execs)))
        s_exec_finish (self, exec, true);
}

/* The gateway stops the kernel: every execution ends now, stopped. */
static void
s_stopping (mcp_conv_t *self)
{
    for (mcp_exec_t *e = zlistx_first (self->execs); e; e = zlistx_next (self->execs))
        e->stopped = true;
    mcp_exec_t *exec;
    while ((exec = zlistx_first (self->execs)))
        s_exec_finish (self, exec, false);
}

/* ---- sockets ---------------------------------------------------------- */

static void
s_on_iopub (mcp_conv_t *self, wire_msg_t *m)
{
    self->iopub_seen = true;
    s_maybe_ready (self);
    mcp_exec_t *exec = s_exec_of (self, m);
    const char *type = wire_msg_type (m);
    const char *state = streq (type, "status") ? json_string_value (json_object_get (m->content, "execution_state")) : NULL;
    if (state && streq (state, "dead")) {
        s_stopping (self);
        return;
    }
    if (exec && state) {
        if (streq (state, "idle"))
            exec->idle = true;
    }
    else if (exec && (streq (type, "stream") || streq (type, "display_data") || streq (type, "execute_result")
                      || streq (type, "error") || streq (type, "update_display_data")))
        json_array_append_new (exec->outputs, json_pack ("{s:s, s:O}", "msg_type", type, "content", m->content));
    if (exec && exec->idle && exec->reply)
        s_exec_finish (self, exec, false);
}

static void
s_on_shell (mcp_conv_t *self, wire_msg_t *m)
{
    self->shell_seen = true;
    s_maybe_ready (self);
    mcp_exec_t *exec = streq (wire_msg_type (m), "execute_reply") ? s_exec_of (self, m) : NULL;
    if (exec && !exec->reply) {
        exec->reply = json_incref (m->content);
        exec->kennel = json_incref (json_object_get (m->metadata, "kennel"));
        if (exec->idle)
            s_exec_finish (self, exec, false);
    }
}

static void
s_tool_done (void *arg, json_t *result, const char *ename, const char *evalue)
{
    tool_call_t *call = arg;
    mcp_conv_t *self = call->conv;
    if (self) {
        const char *call_id = json_string_value (json_object_get (call->request->content, "call_id"));
        json_t *content = result ? json_pack ("{s:s, s:s, s:o}", "call_id", call_id ?: "", "status", "ok", "result", result)
                                 : json_pack ("{s:s, s:s, s:s, s:s}", "call_id", call_id ?: "", "status", "error",
                                              "ename", ename, "evalue", evalue);
        s_send (self, WIRE_STDIN, "tool_reply", content, call->request, NULL, 0);
        void *handle = zlistx_find (self->tool_calls, call);
        if (handle)
            zlistx_detach (self->tool_calls, handle);
    }
    else
        json_decref (result);
    wire_msg_destroy (&call->request);
    free (call);
}

/* The pending call of call_id (any with NULL); the list's cursor on it. */
static tool_call_t *
s_tool_call_find (mcp_conv_t *self, const char *call_id)
{
    for (tool_call_t *call = zlistx_first (self->tool_calls); call; call = zlistx_next (self->tool_calls)) {
        const char *id = json_string_value (json_object_get (call->request->content, "call_id"));
        if (!call_id || (id && streq (id, call_id)))
            return call;
    }
    return NULL;
}

/* The pending call of call_id (all with NULL) is over for the kernel. */
static void
s_tool_cancel (mcp_conv_t *self, const char *call_id)
{
    tool_call_t *call;
    while ((call = s_tool_call_find (self, call_id))) {
        zlistx_detach (self->tool_calls, zlistx_cursor (self->tool_calls));
        call->conv = NULL;
        if (self->cancel)
            self->cancel (call, self->serve_arg); /* may answer, and free it, at once */
        if (call_id)
            break;
    }
}

/* Takes *m_p when it keeps the message. */
static void
s_on_stdin (mcp_conv_t *self, wire_msg_t **m_p)
{
    wire_msg_t *m = *m_p;
    const char *type = wire_msg_type (m);
    if (streq (type, "input_request"))
        /* no one can type: input() gets an empty line rather than hanging */
        s_send (self, WIRE_STDIN, "input_reply", json_pack ("{s:s}", "value", ""), m, NULL, 0);
    else if (streq (type, "tool_request")) {
        tool_call_t *call = wire_xcalloc (1, sizeof *call);
        call->conv = self;
        call->request = m;
        *m_p = NULL;
        zlistx_add_end (self->tool_calls, call);
        const char *name = json_string_value (json_object_get (call->request->content, "name"));
        json_t *arguments = json_object_get (call->request->content, "arguments");
        self->serve (name ?: "", arguments, s_tool_done, call, self->serve_arg);
    }
    else if (streq (type, "tool_cancel") && json_string_value (json_object_get (m->content, "call_id")))
        /* the gateway ended the call (its execution ended, its timeout,
           ...): its host stops; no tool_reply is sent for it */
        s_tool_cancel (self, json_string_value (json_object_get (m->content, "call_id")));
}

/* One message from the kernel's side, on channel. */
static void
s_on_message (mcp_conv_t *self, wire_channel_t channel, zmsg_t *msg)
{
    wire_msg_t *m = s_decode (self, msg);
    if (!m)
        return;
    if (channel == WIRE_IOPUB)
        s_on_iopub (self, m);
    else if (channel == WIRE_SHELL)
        s_on_shell (self, m);
    else if (channel == WIRE_STDIN)
        s_on_stdin (self, &m);
    wire_msg_destroy (&m);
}

static int
s_on_socket (zloop_t *loop, zsock_t *sock, void *arg)
{
    mcp_conv_t *self = arg;
    wire_channel_t channel = sock == self->iopub ? WIRE_IOPUB : sock == self->shell ? WIRE_SHELL : WIRE_STDIN;
    s_on_message (self, channel, zmsg_recv (sock));
    return 0;
}

/* ---- a peer of the conversation, inside the daemon -------------------- */

static void
s_on_deliver (void *arg, wire_channel_t channel, zmsg_t **msg_p)
{
    zmsg_t *msg = *msg_p;
    *msg_p = NULL;
    s_on_message (arg, channel, msg);
}

static void
s_on_event (void *arg, gw_event_t event, const char *detail)
{
    mcp_conv_t *self = arg;
    if (event != GW_EVENT_CLOSED)
        return;
    /* detached by the core: an execution still waiting gets no more
       messages, and ends as closed */
    self->peer = NULL;
    gw_log ("mcp_conversation_closed", "{s:s, s:s}", "conversation", self->id, "why", detail ?: "");
    mcp_conv_fail_all (self);
}

static const gw_front_fns_t s_peer_fns = {s_on_deliver, s_on_event};

/* ---- lifetime ---------------------------------------------------------- */

static zsock_t *
s_socket (mcp_conv_t *self, int type, const json_t *c, const char *port_field, const char *identity,
          zloop_reader_fn *handler)
{
    zsock_t *s = zsock_new (type);
    zsock_set_linger (s, 0);
    if (identity)
        zsock_set_identity (s, identity);
    if (type == ZMQ_SUB)
        zsock_set_subscribe (s, "");
    gw_client_connect (s, c, (int) json_integer_value (json_object_get (c, port_field)));
    if (handler)
        zloop_reader (self->loop, s, handler, self);
    return s;
}

/* The four client sockets the open reply names; -1 without its key. */
static int
s_connect (mcp_conv_t *self, const json_t *open_reply)
{
    json_t *c = json_object_get (open_reply, "connection");
    const char *key = json_string_value (json_object_get (c, "key"));
    wire_error_t err;
    self->key = key ? wire_key_new (json_string_value (json_object_get (c, "signature_scheme")), key, strlen (key), &err)
                    : NULL;
    if (!self->key)
        return -1;
    self->shell = s_socket (self, ZMQ_DEALER, c, "shell_port", self->session, s_on_socket);
    self->stdin_ = s_socket (self, ZMQ_DEALER, c, "stdin_port", self->session, s_on_socket);
    self->control = s_socket (self, ZMQ_DEALER, c, "control_port", NULL, NULL);
    /* an interrupt sent as the client goes away still leaves at exit */
    zsock_set_linger (self->control, 1000);
    self->iopub = s_socket (self, ZMQ_SUB, c, "iopub_port", NULL, s_on_socket);
    return 0;
}

/* A peer of the daemon's conversation id; -1 when it has none. */
static int
s_attach (mcp_conv_t *self, gw_server_t *core)
{
    gw_conv_t *conv = gw_core_find (gw_server_core (core), self->id);
    if (!conv)
        return -1;
    self->key = wire_key_new (NULL, "", 0, NULL);
    self->peer = gw_conv_attach (conv, &s_peer_fns, self);
    return 0;
}

mcp_conv_t *
mcp_conv_new (zloop_t *loop, gw_server_t *core, const char *id, const json_t *open_reply, mcp_tool_serve_fn *serve,
              mcp_tool_cancel_fn *cancel, void *serve_arg, mcp_conv_ready_fn *ready, void *ready_arg)
{
    mcp_conv_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->id = wire_xstrdup (id);
    self->workspace = wire_xstrdup (json_string_value (json_object_get (open_reply, "workspace")) ?: "");
    wire_id_new (self->session);
    self->execs = zlistx_new ();
    self->tool_calls = zlistx_new ();
    self->serve = serve;
    self->cancel = cancel;
    self->serve_arg = serve_arg;
    self->on_ready = ready;
    self->ready_arg = ready_arg;
    self->progress_interval = 1.0;
    if ((core ? s_attach (self, core) : s_connect (self, open_reply)) < 0) {
        self->on_ready = NULL;
        mcp_conv_destroy (&self);
        return NULL;
    }
    self->opened = self->last_used = (double) zclock_mono ();
    if (core) {
        /* a peer misses nothing the kernel sends (no subscription to wait
           for), and the core answered the open once the kernel was ready */
        self->probe_timer = gw_timer_start (loop, 0, 1, s_on_attached, self);
        return self;
    }
    s_send (self, WIRE_SHELL, "kernel_info_request", json_object (), NULL, NULL, 0);
    self->probe_ms = MCP_CONV_PROBE_MS;
    self->probe_timer = gw_timer_start (loop, self->probe_ms, 1, s_on_probe, self);
    return self;
}

void
mcp_conv_set_progress_interval (mcp_conv_t *self, double seconds)
{
    self->progress_interval = seconds;
}

const char *
mcp_conv_id (const mcp_conv_t *self)
{
    return self->id;
}

const char *
mcp_conv_workspace (const mcp_conv_t *self)
{
    return self->workspace;
}

double
mcp_conv_idle_seconds (const mcp_conv_t *self)
{
    if (zlistx_size (self->execs))
        return 0;
    return (zclock_mono () - self->last_used) / 1000.0;
}

bool
mcp_conv_ready (const mcp_conv_t *self)
{
    return self->ready;
}

void
mcp_conv_destroy (mcp_conv_t **self_p)
{
    mcp_conv_t *self = *self_p;
    if (!self)
        return;
    mcp_conv_fail_all (self);
    zlistx_destroy (&self->execs);
    s_tool_cancel (self, NULL); /* their host commands stop with the conversation */
    zlistx_destroy (&self->tool_calls);
    gw_timer_end (self->loop, self->probe_timer);
    gw_front_detach (&self->peer);
    zsock_t **socks[] = {&self->shell, &self->stdin_, &self->iopub};
    for (size_t i = 0; i < sizeof socks / sizeof *socks; i++) {
        if (*socks[i])
            zloop_reader_end (self->loop, *socks[i]);
        zsock_destroy (socks[i]);
    }
    zsock_destroy (&self->control);
    wire_key_destroy (&self->key);
    free (self->id);
    free (self->workspace);
    free (self);
    *self_p = NULL;
}
