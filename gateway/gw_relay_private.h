/*  gw_relay_private.h - what the relay's files share: the relay, its
    executions and tool calls, and the functions one file offers the others.

    The relay (gw_relay.c) is one conversation's messages between its peers
    and its kernel; gw_relay_msg.c reads frames and sends messages for it,
    gw_exec.c keeps its execution queue and timeout ladder, gw_reply.c
    holds and rewrites execute replies, gw_calls.c brokers tool calls,
    gw_kernel_link.c connects to a fresh kernel and makes sure it is ready.
*/
#ifndef GW_RELAY_PRIVATE_H_INCLUDED
#define GW_RELAY_PRIVATE_H_INCLUDED

#include "gw_answer.h"
#include "gw_config.h"
#include "gw_front.h"
#include "gw_peers.h"
#include "gw_proc.h"
#include "gw_relay.h"
#include "gw_sanitize.h"
#include "gw_zmtp.h"
#include "wire.h"
#include "kernel-launcher/kennel_launch.h"

#define KERNEL_IDENTITY "kennel-gateway"

typedef struct {
    char *msg_id;
    json_t *header; /* the request's header: parent of what we send */
    zmsg_t *ids;    /* the peer's token and route frames */
    zmsg_t *request; /* the execute_request, held here until it is the head (then sent to the kernel) */
    bool silent;
    bool stop_on_error; /* the request's (default true): a failure aborts the executions queued behind it */
    bool failed;        /* its reply is an error */
    /* how many executions waited behind it when its reply went out (after
       or with its idle): if it failed (stop_on_error), exec_finish answers
       those aborted */
    size_t waiting_at_end;
    bool end_seen;      /* waiting_at_end is set */
    int64_t request_bytes; /* the request's frames: what its execute_input may echo without cost */
    bool started;
    double started_at;
    gw_proc_watch_t usage; /* the kernel's /proc/PID/stat while it runs */
    int64_t output_bytes;
    bool truncated;
    int tool_calls;
    bool allow_stdin;   /* the request's allow_stdin: a client serves tool calls */
    bool tool_cancel;   /* metadata.kennel.tool_cancel: its client is told of calls ended without its reply */
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
    zmsg_t *ids;        /* the execution's peer token (gw_peers.h) and route: who serves its stdin */
    bool tell;          /* that client asked for tool_cancel (its execution's tool_cancel) */
} gw_call_t;

struct gw_relay {
    gw_conv_t *conv;
    const gw_relay_owner_t *owner; /* conv's side: the relay never calls gw_conv.c by name */
    const char *id;                /* conv's id, for the log: as long-lived as the relay */
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
    /* output outside a running execution since the last client request on
       shell (gw_exec.c): at most output_bytes */
    int64_t background_bytes;
    bool background_truncated;
    bool state_lost; /* a fresh kernel replaced a dead one: tell the next reply */
    char session[WIRE_ID_SIZE];
    gw_answer_to_t answer_to; /* the gateway's own messages: as this session, to the peers */
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
    gw_sanitize_t *sanitize; /* what the kernel may leave in a browser; made at the first delivery */
};

/* A string field of a frame (gw_peek: no JSON tree), in a peek_t: its own
   buffer when it fits, else malloc'd. text NULL when absent. */
typedef struct {
    char buf[256];
    char *heap;
    const char *text;
} peek_t;

/* ---- gw_relay.c: routing between peers and kernel ----------------------- */

int on_kernel_shell (zloop_t *loop, zsock_t *sock, void *arg);
int on_kernel_iopub (zloop_t *loop, zsock_t *sock, void *arg);
int on_kernel_stdin (zloop_t *loop, zsock_t *sock, void *arg);
int on_kernel_control (zloop_t *loop, zsock_t *sock, void *arg);
void to_kernel (gw_relay_t *self, wire_channel_t channel, zmsg_t **msg_p);
void backlog_flush (gw_relay_t *self);

/* ---- gw_relay_msg.c: frames in place, messages out ---------------------- */

int delimiter_index (zmsg_t *msg);
zframe_t *frame_at (zmsg_t *msg, int index);
const char *frame_peek (peek_t *pk, zmsg_t *msg, int offset, const char *key);
void frame_peek_free (peek_t *pk);
void log_bad (gw_relay_t *self, const char *channel, wire_error_t err, const char *from);
void kernel_send (gw_relay_t *self, zmsg_t **msg_p, wire_channel_t channel);
void client_deliver (gw_relay_t *self, wire_channel_t channel, zmsg_t **msg_p);
wire_msg_t *own_msg (gw_relay_t *self, const char *msg_type, const json_t *parent_header, zmsg_t *ids);
void client_send_own (gw_relay_t *self, wire_msg_t *m, wire_channel_t ch);
void answer_send (void *arg, wire_channel_t channel, wire_msg_t *m);
void publish (gw_relay_t *self, const char *msg_type, const json_t *parent_header, json_t *content);
void publish_status (gw_relay_t *self, const json_t *parent_header, const char *state);
void publish_error (gw_relay_t *self, const json_t *parent_header, const char *ename, const char *evalue);
json_t *frame_json (zmsg_t *msg, int offset, size_t *bytes);

/* ---- gw_exec.c: the execution queue, the timeout ladder, output limits -- */

void exec_destructor (void **item);
gw_exec_t *exec_head (gw_relay_t *self);
void exec_start_head (gw_relay_t *self);
void exec_stop_timers (gw_relay_t *self, gw_exec_t *e);
void exec_finish (gw_relay_t *self, void *handle, gw_exec_t *e, const char *status);
void *exec_find (gw_relay_t *self, const char *msg_id);
void timeout_report (gw_relay_t *self, gw_exec_t *e);
bool iopub_admit (gw_relay_t *self, zmsg_t *msg, const char *msg_type, const char *pid, bool *marker);
/* A client's request on shell: the window for output outside executions starts again. */
void output_window_renew (gw_relay_t *self);
void publish_marker (gw_relay_t *self);
gw_exec_t *exec_new (zmsg_t *msg, json_t *header);
void track_execute (gw_relay_t *self, zmsg_t **msg_p, json_t *header);
void execs_answer_all (gw_relay_t *self, const char *ename, const char *cause, const char *queued, const char *state);

/* ---- gw_reply.c: execute replies held for idle, metadata.kennel -------- */

json_t *exec_cost (gw_relay_t *self, gw_exec_t *e, const char *state);
void reply_rewrite (gw_relay_t *self, zmsg_t *msg, gw_exec_t *e);
/* A kernel's execute_reply (taken) of the execution at handle: sent once
   its idle is in, or after a while without one. */
void reply_hold (gw_relay_t *self, void *handle, zmsg_t *msg);
void *iopub_idle_seen (gw_relay_t *self, zmsg_t *msg, const char *parent_id);

/* ---- gw_calls.c: the tool-call broker ----------------------------------- */

void call_destructor (void **item);
void calls_end (gw_relay_t *self, const char *msg_id, const char *status);
/* gw_peers_gone_fn: the calls of the executions of a peer that detached
   are answered ToolUnavailable at once. */
void calls_end_peer (void *arg, zframe_t *token);
bool tool_request_admit (gw_relay_t *self, zmsg_t *msg, json_t *header);
bool tool_reply_admit (gw_relay_t *self, zmsg_t *msg);

/* ---- gw_kernel_link.c: a fresh kernel's sockets and handshake ----------- */

void probe_check (gw_relay_t *self);
bool is_probe_answer (gw_relay_t *self, zmsg_t *msg);
void own_reply_check (gw_relay_t *self, zmsg_t *msg);
void kernel_sockets_close (gw_relay_t *self);

#endif
