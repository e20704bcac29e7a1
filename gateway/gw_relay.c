/*  gw_relay.c - a conversation's messages between its peers and its kernel.

    Peer side: what fronts submit (gw_front.h), authenticated by the front,
    checked here (layout, sizes, header) and routed by channel and type; what
    goes back is delivered to the peers (gw_peers.c), unsigned. Kernel side:
    DEALERs to the kernel's shell, control and stdin and a SUB to its iopub
    (gw_kernel_link.c), signed with the kernel key. The three DEALERs share
    one identity, so the kernel's input_request (sent to the identities of
    the shell request) comes back to us on stdin.

    Every kernel message is verified on the way in (layout, size, signature,
    replay); client messages are signed with the kernel key on the way out.
    JSON is parsed only for the header (routing, accounting) and, for
    execute_reply, the metadata frame that receives metadata.kennel
    (gw_reply.c). Executions (gw_exec.c) and tool calls (gw_calls.c) are
    tracked on the way.

    This file is the top of the relay's family (gw_relay_private.h): it
    calls the others, none calls it; the kernel's sockets that
    gw_kernel_link.c opens are read by the readers it hands that file.
*/
#include "gw_relay.h"
#include "gw_calls.h"
#include "gw_exec.h"
#include "gw_error.h"
#include "gw_front.h"
#include "gw_kernel_link.h"
#include "gw_log.h"
#include "gw_ops.h"
#include "gw_output.h"
#include "gw_peek.h"
#include "gw_peers.h"
#include "gw_relay_msg.h"
#include "gw_server_access.h"
#include "wire.h"

#include <string.h>

/* ---- kernel -> peers ------------------------------------------------------ */

static void
zmsg_destructor (void **item)
{
    zmsg_destroy ((zmsg_t **) item);
}

/* A signed kernel message still reaches a client only when a client can
   read it: header, parent header, metadata and content each a JSON object
   that Python's json loads (gw_peek_check: GW_JSON_DEPTH_MAX levels at
   most), and a header with string msg_id and msg_type. A kernel is
   untrusted code; its key proves only which kernel sent the message. */
static wire_error_t
kernel_frames_check (zmsg_t *msg)
{
    zframe_t *f = wire_frames_part (msg, 2);
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
    wire_error_t err = wire_frames_verify (msg, self->kernel_key, self->kernel_replay, gw_server_limits (self->server));
    if (err == WIRE_OK)
        err = kernel_frames_check (msg);
    if (err != WIRE_OK) {
        gw_relay_msg_log_bad (self, gw_channel_name (channel), err, "kernel");
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
    if (gw_kernel_link_is_probe_answer (self, msg)) {
        gw_kernel_link_own_reply_check (self, msg);
        self->probe_shell_ok = true;
        gw_kernel_link_probe_check (self);
        zmsg_destroy (&msg);
        return 0;
    }
    char msg_type[32];
    int n = gw_peek_frame (msg, 2, "msg_type", msg_type, sizeof msg_type);
    void *handle = NULL;
    if (n == 13 && streq (msg_type, "execute_reply")) {
        gw_relay_peek_t parent_id;
        if (gw_relay_msg_peek (&parent_id, msg, 3, "msg_id"))
            handle = gw_exec_find (self, parent_id.text);
        gw_relay_msg_peek_free (&parent_id);
    }
    if (handle)
        gw_exec_reply_hold (self, handle, msg);
    else
        gw_relay_msg_deliver (self, WIRE_SHELL, &msg);
    return 0;
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
        gw_kernel_link_probe_check (self);
    }
    if (gw_kernel_link_is_probe_answer (self, msg)) {
        zmsg_destroy (&msg);
        return 0;
    }
    char msg_type[32];
    if (gw_peek_frame (msg, 2, "msg_type", msg_type, sizeof msg_type) < 0)
        msg_type[0] = 0; /* too long a type is none we look at: cut is fine */
    gw_relay_peek_t parent_id;
    gw_relay_msg_peek (&parent_id, msg, 3, "msg_id");
    bool marker = false;
    bool admit = gw_output_admit (self, msg, msg_type, parent_id.text, &marker);
    /* the reply goes out before this idle, so a client sees the cost first */
    void *finished = streq (msg_type, "status") ? gw_exec_idle_seen (self, msg, parent_id.text) : NULL;
    gw_relay_msg_peek_free (&parent_id);
    if (admit) {
        gw_relay_msg_deliver (self, WIRE_IOPUB, &msg);
    }
    zmsg_destroy (&msg);
    if (marker)
        gw_output_marker (self);
    if (finished) {
        gw_exec_t *e = zlistx_handle_item (finished);
        gw_exec_finish (self, finished, e, e->timed_out ? "timeout" : "ok");
    }
    return 0;
}

static int
on_kernel_route (gw_relay_t *self, zsock_t *sock, wire_channel_t channel)
{
    zmsg_t *msg = recv_from_kernel (self, sock, channel);
    if (!msg)
        return 0;
    char msg_type[16];
    if (channel == WIRE_STDIN && gw_peek_frame (msg, 2, "msg_type", msg_type, sizeof msg_type) == 12
        && streq (msg_type, "tool_request")) {
        wire_error_t err;
        json_t *header = wire_frames_peek (msg, 0, &err); /* the parent of a refusal */
        bool refused = !gw_calls_request_admit (self, gw_exec_head (self), msg, header);
        json_decref (header);
        if (refused) {
            zmsg_destroy (&msg);
            return 0;
        }
    }
    gw_relay_msg_deliver (self, channel, &msg);
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

/* ---- peers -> kernel ------------------------------------------------------ */

/* A peer's message (token, route, delimiter, signature, parts) checked as
   the relay reads every client message: layout and sizes, a header with
   string msg_type and msg_id. The header, or NULL (dropped, logged). */
static json_t *
client_check (gw_relay_t *self, zmsg_t *msg, wire_channel_t channel)
{
    json_t *header = NULL;
    wire_error_t err = wire_frames_verify (msg, NULL, NULL, gw_server_limits (self->server));
    if (err == WIRE_OK)
        header = wire_frames_peek (msg, 0, &err);
    if (header && (!json_is_string (json_object_get (header, "msg_type"))
                   || !json_is_string (json_object_get (header, "msg_id")))) {
        json_decref (header);
        header = NULL;
        err = WIRE_ERR_MISSING_HEADER_FIELD;
    }
    if (!header) {
        gw_relay_msg_log_bad (self, gw_channel_name (channel), err, "client");
        return NULL;
    }
    self->owner->touch (self->conv);
    return header;
}

static void
on_client_shell (gw_relay_t *self, zmsg_t **msg_p, const char *msg_type, json_t *header)
{
    gw_output_renew (self);
    if (streq (msg_type, "execute_request"))
        gw_exec_track (self, msg_p, header);
    else
        gw_relay_msg_to_kernel (self, WIRE_SHELL, msg_p);
}

/* interrupt and shutdown are the gateway's to answer: it owns the process */
static void
control_answer (gw_relay_t *self, zmsg_t **msg_p, const char *msg_type)
{
    wire_error_t err;
    wire_msg_t *req = wire_msg_decode (msg_p, NULL, NULL, gw_server_limits (self->server), &err);
    if (!req)
        return;
    gw_relay_msg_status (self, req->header, "busy");
    wire_msg_t *reply;
    if (streq (msg_type, "interrupt_request")) {
        int rc = self->owner->interrupt (self->conv);
        reply = wire_msg_new (self->session, "interrupt_reply", req);
        wire_msg_set_content (reply, rc == 0 ? json_pack ("{s:s}", "status", "ok")
                                             : json_pack ("{s:s, s:s, s:s, s:[]}", "status", "error", "ename",
                                                          gw_error_name (GW_E_NO_KERNEL), "evalue",
                                                          gw_error_text (GW_E_NO_KERNEL), "traceback"));
        char source[200];
        snprintf (source, sizeof source, "conversation/%s/interrupt", self->id);
        gw_log_limited (source, "interrupt", "{s:s, s:b}", "conversation", self->id, "delivered", rc == 0);
    }
    else if (json_is_true (json_object_get (req->content, "restart")) && gw_drain_active (self->server)) {
        /* refused: the kernel runs on until the drain ends */
        reply = wire_msg_new (self->session, "shutdown_reply", req);
        wire_msg_set_content (reply, json_pack ("{s:s, s:s, s:s, s:[], s:b}", "status", "error", "ename",
                                                gw_error_name (GW_E_GATEWAY_DRAINING), "evalue", GW_DRAIN_NO_RESTART,
                                                "traceback", "restart", true));
    }
    else {
        bool restart = json_is_true (json_object_get (req->content, "restart"));
        reply = wire_msg_new (self->session, "shutdown_reply", req);
        wire_msg_set_content (reply, json_pack ("{s:s, s:b}", "status", "ok", "restart", restart));
        gw_relay_msg_send_own (self, reply, WIRE_CONTROL);
        wire_msg_destroy (&reply);
        /* ipykernel also broadcasts it on iopub, as a message of its own:
           clients keep one replay cache across channels */
        gw_relay_msg_publish (self, "shutdown_reply", req->header, json_pack ("{s:s, s:b}", "status", "ok", "restart", restart));
        /* kernelspec mode exits either way, as ipykernel does: the front
           end's kernel manager starts the next process */
        gw_relay_msg_status (self, req->header, "idle");
        wire_msg_destroy (&req);
        if (restart && !gw_server_kernel_mode (self->server))
            self->owner->restart (self->conv, "shutdown_request with restart");
        else
            self->owner->request_close (self->conv);
        return;
    }
    gw_relay_msg_send_own (self, reply, WIRE_CONTROL);
    gw_relay_msg_status (self, req->header, "idle");
    wire_msg_destroy (&reply);
    wire_msg_destroy (&req);
}

static void
on_client_control (gw_relay_t *self, zmsg_t **msg_p, const char *msg_type)
{
    if (streq (msg_type, "interrupt_request") || streq (msg_type, "shutdown_request"))
        control_answer (self, msg_p, msg_type);
    else
        gw_relay_msg_to_kernel (self, WIRE_CONTROL, msg_p);
}

static void
on_client_stdin (gw_relay_t *self, zmsg_t **msg_p, const char *msg_type)
{
    if (streq (msg_type, "tool_reply") && !gw_calls_reply_admit (self, *msg_p))
        return;
    if (self->kernel[WIRE_STDIN] && self->kernel_ready)
        gw_relay_msg_kernel_send (self, msg_p, WIRE_STDIN);
    /* else an answer for a kernel that is gone: dropped */
}

/* A closing conversation relays nothing: its execute requests are queued
   to be answered with the rest (gw_relay_close), anything else is dropped. */
static void
on_client_closing (gw_relay_t *self, zmsg_t **msg_p, const char *msg_type, json_t *header, wire_channel_t channel)
{
    if (channel == WIRE_SHELL && streq (msg_type, "execute_request"))
        zlistx_add_end (self->execs, gw_exec_new (*msg_p, header));
}

/* During a drain nothing new starts: no execution (the drain waits for
   those it found, never for new ones) and no fresh kernel for a request to
   a dead one. interrupt and shutdown are the gateway's own answers. */
static bool
drain_refuses (gw_relay_t *self, wire_channel_t channel, const char *msg_type)
{
    if (!gw_drain_active (self->server) || channel == WIRE_STDIN)
        return false;
    if (channel == WIRE_SHELL && streq (msg_type, "execute_request"))
        return true;
    bool own = channel == WIRE_CONTROL
               && (streq (msg_type, "interrupt_request") || streq (msg_type, "shutdown_request"));
    return !own && self->owner->kernel_dead (self->conv);
}

static void
drain_refuse (gw_relay_t *self, zmsg_t *msg, const char *msg_type, json_t *header, wire_channel_t channel)
{
    zmsg_t *ids = wire_frames_pop_identities (msg);
    gw_answer_refuse (&self->answer_to, channel, header, ids, gw_error_name (GW_E_GATEWAY_DRAINING),
                      GW_DRAIN_NO_RUN,
                      gw_answer_cost_none ("kept"), true);
    zmsg_destroy (&ids);
    gw_log_limited ("drain/refused", "drain_refused", "{s:s, s:s}", "conversation", self->id, "msg_type", msg_type);
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
    else if (drain_refuses (self, channel, msg_type))
        drain_refuse (self, *msg_p, msg_type, header, channel);
    else if (channel == WIRE_SHELL)
        on_client_shell (self, msg_p, msg_type, header);
    else if (channel == WIRE_CONTROL)
        on_client_control (self, msg_p, msg_type);
    else
        on_client_stdin (self, msg_p, msg_type);
    json_decref (header);
    zmsg_destroy (msg_p);
}

/* ---- lifecycle ------------------------------------------------------------ */

static zloop_reader_fn *const kernel_readers[] = {on_kernel_shell, on_kernel_iopub, on_kernel_stdin, on_kernel_control};

gw_relay_t *
gw_relay_new (gw_conv_t *conv, const gw_relay_owner_t *owner, gw_server_t *server)
{
    gw_relay_t *self = wire_xcalloc (1, sizeof *self);
    self->conv = conv;
    self->owner = owner;
    self->kernel_readers = kernel_readers;
    self->id = owner->id (conv);
    self->server = server;
    self->peers = gw_peers_new (conv, relay_submit, gw_calls_end_peer, self);
    self->execs = zlistx_new ();
    zlistx_set_destructor (self->execs, gw_exec_destructor);
    self->backlog = zlistx_new ();
    zlistx_set_destructor (self->backlog, zmsg_destructor);
    self->calls = zhashx_new ();
    zhashx_set_destructor (self->calls, gw_calls_destructor);
    wire_id_new (self->session);
    self->answer_to = (gw_answer_to_t){self->session, self->id, gw_relay_msg_answer_send, self};
    return self;
}

void
gw_relay_destroy (gw_relay_t **self_p)
{
    gw_relay_t *self = *self_p;
    if (!self)
        return;
    gw_kernel_link_close (self);
    for (gw_exec_t *e = zlistx_first (self->execs); e; e = zlistx_next (self->execs))
        gw_exec_stop_timers (self, e);
    zlistx_destroy (&self->execs);
    zlistx_destroy (&self->backlog);
    zhashx_destroy (&self->calls);
    gw_peers_destroy (&self->peers, self->closed_why ? self->closed_why : "closed");
    gw_sanitize_destroy (&self->sanitize);
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

int
gw_relay_kernel_attach (gw_relay_t *self, const char *run_dir, const wire_connection_t *kernel, char **errmsg)
{
    return gw_kernel_link_attach (self, run_dir, kernel, errmsg);
}

void
gw_relay_kernel_detach (gw_relay_t *self, const char *ename, const char *cause, bool lost)
{
    gw_kernel_link_close (self);
    gw_calls_end (self, NULL, "kernel_ended"); /* nothing is waiting for them any more */
    /* they were in the dead kernel's queue */
    gw_exec_answer_all (self, ename, cause, "the kernel ended before it", lost ? "lost" : "kept");
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
    gw_peers_event (self->peers, GW_EVENT_CLOSING, cause);
    gw_calls_end (self, NULL, "closed");
    /* sent before the peers are told the conversation closed (the ZeroMQ
       front's sockets then linger to deliver them) */
    gw_exec_answer_all (self, gw_error_name (GW_E_CONVERSATION_CLOSED), cause, "the conversation was closed before it", "lost");
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
        gw_relay_msg_to_kernel (self, WIRE_SHELL, &msg);
}

void
gw_relay_announce_starting (gw_relay_t *self)
{
    gw_relay_msg_status (self, NULL, "starting");
}

void
gw_relay_announce_dead (gw_relay_t *self)
{
    gw_relay_msg_status (self, NULL, "dead");
}

/* jupyter_client shows an execution's streams (execute_interactive's
   output hook prints them to stderr); it does nothing with a status it
   did not ask about, so the notice is a stream of each execution's. */
void
gw_relay_announce_draining (gw_relay_t *self, double grace)
{
    char text[300];
    snprintf (text, sizeof text,
              "\n[kennel: the gateway is stopping (SIGTERM): this execution has at most %g s to finish, then the "
              "kernel is stopped and its variables are lost; new executions are refused (GatewayDraining)]\n",
              grace);
    for (gw_exec_t *e = zlistx_first (self->execs); e; e = zlistx_next (self->execs))
        gw_relay_msg_publish (self, "stream", e->header, json_pack ("{s:s, s:s}", "name", "stderr", "text", text));
}

const char *
gw_relay_session (const gw_relay_t *self)
{
    return self->session;
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
