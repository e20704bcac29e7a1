/*  gw_relay_private.h - the state the relay's files share: the relay, its
    executions and tool calls. Types only: each file of the family declares
    what it offers the files above it in a header of its own.

    The family, top to bottom (a file calls only the ones below it):
    gw_relay.c routes between peers and kernel and is the relay's face
    (gw_relay.h); gw_kernel_link.c connects to a fresh kernel and makes sure
    it is ready; gw_output.c counts and cuts the kernel's output; gw_exec.c
    keeps the execution queue, its timeout ladder and held replies;
    gw_calls.c brokers tool calls; gw_reply.c rewrites an execute reply (its
    cost, a timeout); gw_relay_msg.c reads frames and sends messages, toward
    the kernel and to the peers.
*/
#ifndef GW_RELAY_PRIVATE_H_INCLUDED
#define GW_RELAY_PRIVATE_H_INCLUDED

#include "gw_answer.h"
#include "gw_config.h"
#include "gw_front.h"
#include "gw_peers.h"
#include "gw_proc.h"
#include "gw_relay_owner.h"
#include "gw_sanitize.h"
#include "gw_zmtp.h"
#include "wire.h"
#include "kernel-launcher/kennel_launch.h"

typedef struct gw_server gw_server_t; /* gw_server_access.h */
typedef struct gw_relay gw_relay_t;   /* gw_relay.h */

typedef struct {
    char *msg_id;
    json_t *header; /* the request's header: parent of what we send */
    zmsg_t *ids;    /* the peer's token and route frames */
    zmsg_t *request; /* the execute_request, held here until it is the head (then sent to the kernel) */
    bool silent;
    bool stop_on_error; /* the request's (default true): a failure aborts the executions queued behind it */
    bool failed;        /* its reply is an error */
    /* how many executions waited behind it when its reply went out (after
       or with its idle): if it failed (stop_on_error), gw_exec_finish answers
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
    /* gw_relay.c's readers of the kernel's shell, iopub, stdin and control
       sockets, which gw_kernel_link.c opens */
    zloop_reader_fn *const *kernel_readers;
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
       shell (gw_output.c): at most output_bytes */
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

#endif
