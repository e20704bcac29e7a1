/*  mcp.h - the MCP server: `kennel mcp` on stdio, and POST /mcp on the
    HTTP front (gateway/http/http_mcp.c).

    One dispatcher (mcp_server.c) serves both transports; a transport hands
    it each client message with a sink for what answers it. `kennel mcp` is
    a client of the gateway's authenticated control socket and of each
    conversation's Jupyter sockets, as any host is; inside the daemon the
    same dispatcher opens conversations through gw_core.h and is a peer of
    each (gw_front.h). The core's relay knows nothing of MCP
    (gateway/mcp/README.md). One file per concern:

      mcp_line.c      bounded line framing on file descriptors
      mcp_rpc.c       JSON-RPC 2.0 envelopes: classify, reply, error
      mcp_server.c    the protocol's methods and revisions, cancellation, progress
      mcp_stdio.c     the stdio transport: lines in, lines out, the client gone
      mcp_tools.c     the tools' declarations, arguments and results
      mcp_gateway.c   the gateway: its own `kennel serve` child, a running one, or the daemon itself
      mcp_conv.c      a conversation's sockets (or core peer), executions and tool requests
      mcp_hosttools.c tools served by a host command (--tools FILE)
      mcp_upstream.c  tools served by another MCP server (--tools-from-mcp CMD)
      mcp_main.c      `kennel mcp`: options, start, loop, end
*/
#ifndef KENNEL_MCP_H
#define KENNEL_MCP_H

#include "gateway/gw_curve.h"
#include "gateway/gw_log.h"
#include "gateway/gw_schema.h"
#include "gateway/gw_server.h"
#include "gateway/gw_timer.h"
#include "gateway/gw_tools.h"
#include "gateway/gw_util.h"

/* ---- mcp_line: one message per line, bounded ---------------------------- */

/* Reads lines from a non-blocking fd inside the loop. A line longer than
   max_bytes is dropped whole (up to its newline) and reported once. */
typedef struct mcp_line mcp_line_t;
/* Called with each complete line (NUL-terminated, without its newline);
   line NULL means a line over the limit was dropped; len its size so far. */
typedef void(mcp_line_fn) (const char *line, size_t len, void *arg);
/* Called once at end of file or a read error. */
typedef void(mcp_line_eof_fn) (void *arg);
mcp_line_t *mcp_line_new (zloop_t *loop, int fd, size_t max_bytes, mcp_line_fn *on_line, mcp_line_eof_fn *on_eof,
                          void *arg);
void mcp_line_destroy (mcp_line_t **self_p);

/* Writes messages, one per line, to a fd made non-blocking, from the loop:
   what the reader does not take now waits, up to max_bytes, and goes when
   the fd is writable, so a reader that stalls never stops the loop. */
typedef struct mcp_line_out mcp_line_out_t;
mcp_line_out_t *mcp_line_out_new (zloop_t *loop, int fd, size_t max_bytes);
/* Queues msg (taken) compactly plus a newline (jansson escapes every
   newline inside strings); -1, msg dropped, when the fd is gone or the
   waiting bytes would pass max_bytes (logged once). */
int mcp_line_send (mcp_line_out_t *self, json_t *msg);
/* Waits up to timeout_ms for what still waits to be written (the front
   ends), then destroys. The fd is the caller's. */
void mcp_line_out_destroy (mcp_line_out_t **self_p, int timeout_ms);

/* ---- mcp_rpc: JSON-RPC 2.0 envelopes ------------------------------------ */

#define MCP_PARSE_ERROR (-32700)
#define MCP_INVALID_REQUEST (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS (-32602)
#define MCP_INTERNAL_ERROR (-32603)
#define MCP_UNSUPPORTED_VERSION (-32004)
#define MCP_SESSION_NOT_FOUND (-32001) /* streamable HTTP: 404, as the TypeScript SDK's server answers */

typedef enum { MCP_RPC_REQUEST, MCP_RPC_NOTIFICATION, MCP_RPC_RESPONSE, MCP_RPC_INVALID } mcp_rpc_kind_t;

/* What one line is: *msg the message (new; NULL when it is no JSON). For
   MCP_RPC_INVALID, *code, *why and *data (new, or NULL) are the error
   to send to id null (the sender's id cannot be read). */
mcp_rpc_kind_t mcp_rpc_parse (const char *text, size_t len, json_t **msg, int *code, const char **why, json_t **data);
json_t *mcp_rpc_result (const json_t *id, json_t *result);
json_t *mcp_rpc_error (const json_t *id, int code, const char *message, json_t *data);
json_t *mcp_rpc_request (json_int_t id, const char *method, json_t *params);
json_t *mcp_rpc_notification (const char *method, json_t *params);

/* ---- the tool catalog: host tools and forwarded tools ------------------- */

typedef struct mcp_upstream mcp_upstream_t;
typedef struct mcp_hosttools mcp_hosttools_t;

/* The answer to one tool call from kernel code: result (taken) on success,
   else ename and evalue. */
typedef void(mcp_tool_done_fn) (void *arg, json_t *result, const char *ename, const char *evalue);

/* ---- mcp_hosttools: --tools FILE ------------------------------------- */

/* Loads and checks the file: a list of {"name", "description",
   "input_schema", "command": [argv], "timeout": seconds}. Its commands
   run under the bounds of the config of core (the gateway in this
   process, read at each call: a reload's new config applies to the next
   call), else of config (held), else the built-in ones (gw_config.h:
   mcp_max_commands at once, each in a cgroup of mcp_command_memory_bytes
   and mcp_command_pids, without one only where confine.allow_degraded has
   "cgroup"). NULL + *errmsg. */
mcp_hosttools_t *mcp_hosttools_load (zloop_t *loop, const char *path, gw_server_t *core, const gw_config_t *config,
                                     char **errmsg);
/* Kills running commands; their calls are answered ToolUnavailable. */
void mcp_hosttools_destroy (mcp_hosttools_t **self_p);
/* The call whose done_arg is arg is over for its caller (the gateway ended
   it: its execution ended, its tool timeout, the conversation closed): its
   command is killed and done is called with ename ToolCancelled once it
   exited. false when no command of this call runs. */
bool mcp_hosttools_cancel (mcp_hosttools_t *self, void *arg);
/* The declarations of fresh (a reloaded file) from now on; commands that
   run go on and are answered as usual. fresh is destroyed. */
void mcp_hosttools_take (mcp_hosttools_t *self, mcp_hosttools_t **fresh_p);
/* The declarations as the gateway takes them (no command), appended to list. */
void mcp_hosttools_declare (mcp_hosttools_t *self, json_t *list);
/* Whether name is a host tool; when it is, runs it and calls done later. */
bool mcp_hosttools_call (mcp_hosttools_t *self, const char *name, json_t *arguments, mcp_tool_done_fn *done,
                         void *arg);

/* ---- mcp_upstream: --tools-from-mcp CMD ------------------------------ */

typedef void(mcp_upstream_ready_fn) (mcp_upstream_t *up, bool ok, void *arg);
/* Starts `sh -c cmd` and speaks MCP to it; ready is called once its tool
   list is known, or it failed. setting names what set cmd in its log
   lines ("--tools-from-mcp", "mcp.tools_from_mcp"). */
mcp_upstream_t *mcp_upstream_start (zloop_t *loop, const char *cmd, const char *setting, mcp_upstream_ready_fn *ready,
                                    void *arg);
void mcp_upstream_destroy (mcp_upstream_t **self_p);
/* Whether it is still there to serve: not exited, not failed at start. */
bool mcp_upstream_alive (const mcp_upstream_t *self);
void mcp_upstream_declare (mcp_upstream_t *self, json_t *list);
bool mcp_upstream_call (mcp_upstream_t *self, const char *name, json_t *arguments, mcp_tool_done_fn *done,
                        void *arg);

/* Logs one served tool call, the same line for both kinds. */
void mcp_tool_log (const char *via, const char *name, const char *status, double seconds, size_t bytes);
/* Spawns argv with stdin from in_fd (or /dev/null when -1), stdout to
   out_fd, stderr to err_fd (-1: the server's stderr), in a session of its
   own, dying with the server; join: the cgroup.procs files the child
   writes itself into before exec (confine_cgroup_procs), or NULL. When it
   cannot join, the child's stderr has one line "MCP_JOIN_FAILED <errno>"
   and it exits 126. The pid, or -1. */
#define MCP_JOIN_FAILED "kennel: cannot join the command's cgroup:"
pid_t mcp_spawn (char *const argv[], int in_fd, int out_fd, int err_fd, const char *const *join);
int mcp_pidfd_open (pid_t pid);

/* ---- mcp_gateway: the gateway the front uses --------------------------- */

typedef struct mcp_gateway mcp_gateway_t;
/* Reply content (borrowed) of a control request; NULL when none came. */
typedef void(mcp_control_fn) (const json_t *content, void *arg);
typedef void(mcp_gateway_ready_fn) (mcp_gateway_t *gw, bool ok, const char *errmsg, void *arg);

/* The running daemon of connection_file; ready is called once it
   answered gateway_info, or it did not. */
mcp_gateway_t *mcp_gateway_start (zloop_t *loop, const char *connection_file, mcp_gateway_ready_fn *ready, void *arg);
/* The gateway in this process: embedded for the front (owned: `kennel
   mcp`), or the daemon the front lives in (the HTTP front's /mcp).
   Requests run against its core (mcp_core.c); ready at once. */
mcp_gateway_t *mcp_gateway_core (zloop_t *loop, gw_server_t *server, bool owned);
void mcp_gateway_destroy (mcp_gateway_t **self_p);
/* The gateway in this process, or NULL for one reached over its socket. */
gw_server_t *mcp_gateway_core_server (const mcp_gateway_t *self);
/* Whether its control socket can be used. */
bool mcp_gateway_ready (const mcp_gateway_t *self);
/* Whether it is the front's own (its conversations end with it). */
bool mcp_gateway_owned (const mcp_gateway_t *self);
/* Sends one control request (content taken); done gets the reply's
   content, or NULL when the gateway did not answer within timeout_ms or
   the front stops first (mcp_gateway_destroy). */
void mcp_gateway_request (mcp_gateway_t *self, const char *msg_type, json_t *content, int timeout_ms,
                          mcp_control_fn *done, void *arg);
/* Forgets the callbacks that carry arg (their owner is going). */
void mcp_gateway_forget (mcp_gateway_t *self, void *arg);

/* ---- mcp_core: control requests inside the daemon ------------------------ */

typedef struct mcp_core_req mcp_core_req_t;
/* Runs a control request (content taken) against server's core from the
   loop's next turn; fn gets the reply content the control socket would
   have sent (no "connection"). */
mcp_core_req_t *mcp_core_request (zloop_t *loop, gw_server_t *server, const char *msg_type, json_t *content,
                                  mcp_control_fn *fn, void *arg);
/* fn is never called; the request is freed when the core is done with it. */
void mcp_core_cancel (mcp_core_req_t *req);

/* ---- mcp_conv: one conversation as a Jupyter client --------------------- */

typedef struct mcp_conv mcp_conv_t;
typedef struct mcp_exec mcp_exec_t;

/* What the tool server of a conversation does with a kernel's tool call. */
typedef void(mcp_tool_serve_fn) (const char *name, json_t *arguments, mcp_tool_done_fn *done, void *done_arg,
                                 void *arg);
/* The call of done_arg is over (the gateway sent tool_cancel, or the
   conversation goes): its work stops; its done may still come, and is
   then not answered to the kernel. */
typedef void(mcp_tool_cancel_fn) (void *done_arg, void *arg);
typedef void(mcp_conv_ready_fn) (mcp_conv_t *conv, bool ok, const char *errmsg, void *arg);
/* Called once per execution with everything it produced. */
typedef struct {
    json_t *outputs; /* [{"msg_type", "content"}] in order */
    json_t *reply;   /* the execute_reply's content, or NULL */
    json_t *kennel;  /* metadata.kennel, or NULL */
    bool timed_out;  /* the front's timeout interrupted it */
    bool stopped;    /* the gateway stopped the kernel first (the end of a drain): outputs so far */
} mcp_exec_result_t;
typedef void(mcp_exec_fn) (mcp_exec_result_t *result, void *arg);
typedef void(mcp_exec_progress_fn) (double seconds, void *arg);

/* Connects to an open conversation (its control reply content), or with
   core (the daemon the front lives in) becomes a peer of it; ready once
   messages pass both ways. NULL when the reply has no key or the core no
   such conversation. */
mcp_conv_t *mcp_conv_new (zloop_t *loop, gw_server_t *core, const char *id, const json_t *open_reply,
                          mcp_tool_serve_fn *serve, mcp_tool_cancel_fn *cancel, void *serve_arg,
                          mcp_conv_ready_fn *ready, void *ready_arg);
void mcp_conv_destroy (mcp_conv_t **self_p);
/* Seconds between progress calls of a running execution. */
void mcp_conv_set_progress_interval (mcp_conv_t *self, double seconds);
const char *mcp_conv_id (const mcp_conv_t *self);
const char *mcp_conv_workspace (const mcp_conv_t *self);
bool mcp_conv_ready (const mcp_conv_t *self);
/* Seconds since an execution was sent or ended; 0 while one is pending. */
double mcp_conv_idle_seconds (const mcp_conv_t *self);
/* Runs code; timeout_s > 0 interrupts it then. done is called once. */
mcp_exec_t *mcp_conv_execute (mcp_conv_t *self, const char *code, double timeout_s, mcp_exec_fn *done,
                              mcp_exec_progress_fn *progress, void *arg);
/* Interrupts exec if it runs; its done is then never called. */
void mcp_conv_cancel (mcp_conv_t *self, mcp_exec_t *exec);
/* Interrupts whatever runs (the client went away); nothing is answered. */
void mcp_conv_abandon (mcp_conv_t *self);
/* Ends every execution with done(NULL result): the conversation is going. */
void mcp_conv_fail_all (mcp_conv_t *self);

/* ---- mcp_tools: the tools the front offers ---------------------------- */

/* tools/list's "tools". */
json_t *mcp_tools_list (void);
/* A CallToolResult for code's outcome. */
json_t *mcp_tools_exec_result (const char *conversation, const mcp_exec_result_t *r);
/* A CallToolResult with isError and one text. */
json_t *mcp_tools_error_result (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
/* A CallToolResult with a text and structuredContent (taken). */
json_t *mcp_tools_text_result (json_t *structured, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
/* Checks arguments against the named tool's schema: NULL when valid, else
   a malloc'd sentence. Unknown names: "unknown". */
char *mcp_tools_check (const char *name, const json_t *arguments, bool *unknown);

/* ---- mcp_files: file_put, file_get, file_list ------------------------- */

bool mcp_files_tool (const char *name);
/* The gateway file request of a call: its content (new) and *msg_type;
   NULL + *problem (malloc'd) when the arguments cannot make one. */
json_t *mcp_files_request (const char *tool, const char *conversation, const json_t *arguments, const char **msg_type,
                           char **problem);
/* The CallToolResult of the gateway's reply (NULL: none came). */
json_t *mcp_files_result (const char *tool, const json_t *reply);

/* ---- mcp_sessions: the sessions a server minted ----------------------- */

typedef struct mcp_sessions mcp_sessions_t;
mcp_sessions_t *mcp_sessions_new (size_t max);
void mcp_sessions_destroy (mcp_sessions_t **self_p);
/* A fresh session: its id (128 random bits, hex; valid until removed), with
   a default conversation id of its own; NULL when max are there (the
   caller ends mcp_sessions_oldest first). */
const char *mcp_sessions_add (mcp_sessions_t *self);
/* The default conversation's id of session id, which counts as used now;
   NULL when there is no such session. */
const char *mcp_sessions_find (mcp_sessions_t *self, const char *id);
/* The session used least recently, or NULL. */
const char *mcp_sessions_oldest (mcp_sessions_t *self);
void mcp_sessions_remove (mcp_sessions_t *self, const char *id);
size_t mcp_sessions_size (const mcp_sessions_t *self);

/* ---- mcp_server: the protocol, whatever carries it ------------------- */

typedef struct {
    const char *connection_file; /* NULL: own gateway */
    const char *config;
    const char *tools_file;     /* read at mcp_server_new only */
    const char *tools_from_mcp; /* copied */
    const char *tools_from_mcp_setting; /* how log lines name it; default "--tools-from-mcp" */
    size_t max_line_bytes;
    double progress_interval; /* s */
    gw_server_t *core;        /* the gateway in this process (embedded, or the daemon of /mcp), or NULL */
    bool own_core;            /* core is embedded for this front: its conversations end with it */
} mcp_opts_t;

/* Where what answers a client's message goes: stdout for the stdio
   transport, one POST's response for streamable HTTP. */
typedef struct mcp_sink mcp_sink_t;
typedef struct {
    /* A message for the client (taken): progress notifications, then the answer. */
    void (*send) (mcp_sink_t *sink, json_t *msg);
    /* The message needs nothing more: answered, cancelled, or a
       notification (nothing sent then). May be NULL. */
    void (*end) (mcp_sink_t *sink);
} mcp_sink_fns_t;
struct mcp_sink {
    const mcp_sink_fns_t *fns;
    /* Whose message this is. Request ids are unique per client only, so a
       cancellation matches the calls of its own scope, and a call without
       `conversation` runs in its scope's default conversation:
       ""   the process's one client (stdio): the server's default;
       id   an MCP session the server minted (mcp_server_session_open): the
            session's own default;
       NULL a request of no session (streamable HTTP without
            Mcp-Session-Id, the stateless revision): a cancel reaches only
            calls on this same sink, and there is no default conversation. */
    const char *scope;
};

typedef struct mcp_server mcp_server_t;
mcp_server_t *mcp_server_new (zloop_t *loop, const mcp_opts_t *opts, char **errmsg);
void mcp_server_destroy (mcp_server_t **self_p);
/* One client message (text NULL: one over the limit was dropped, len its
   size); what answers it goes to sink, which must stay valid until its end
   is called or mcp_server_abandon forgets it. */
void mcp_server_receive (mcp_server_t *self, const char *text, size_t len, mcp_sink_t *sink);
/* sink's client is gone: the code its calls run is interrupted (the
   conversations stay), nothing more goes to sink. */
void mcp_server_abandon (mcp_server_t *self, mcp_sink_t *sink);
/* A new MCP session (initialize over streamable HTTP): its id, valid until
   it ends. When the server holds its maximum of sessions the one used
   least recently ends first, as mcp_server_session_end. */
const char *mcp_server_session_open (mcp_server_t *self);
/* Whether id is a session this server minted and that has not ended (it
   counts as used now). */
bool mcp_server_session_known (mcp_server_t *self, const char *id);
/* The session ends (its client's DELETE): its calls are cancelled, its
   default conversation closed, and its id is unknown from now on. */
void mcp_server_session_end (mcp_server_t *self, const char *id);
/* The host tools from now on (a reload): the commands of tools_file and
   the tools of `sh -c tools_from_mcp` (NULL: none). Conversations opened
   later get them; open ones keep the names they were opened with, served
   by the new commands (a name gone is UnknownTool). A changed, exited or
   failed forwarded server is started again. -1 + *errmsg when tools_file
   is bad: nothing changed. */
int mcp_server_retool (mcp_server_t *self, const char *tools_file, const char *tools_from_mcp, char **errmsg);
/* Exit status once the loop ended. */
int mcp_server_exit_code (const mcp_server_t *self);
/* Whether version is a protocol revision the server speaks. */
bool mcp_server_version_known (const char *version);

/* ---- mcp_stdio: the stdio transport ----------------------------------- */

typedef struct mcp_stdio mcp_stdio_t;
/* Reads messages from stdin, one per line, writes them to out (stdout,
   moved away from fd 1: see mcp_main.c). */
mcp_stdio_t *mcp_stdio_new (zloop_t *loop, mcp_server_t *server, size_t max_line_bytes, int out);
/* Forgets the sink (mcp_stdio_end) before it frees it: the server may be
   destroyed after the transport, never before. */
void mcp_stdio_destroy (mcp_stdio_t **self_p);
/* Whether the client is gone (stdin at its end, a signal, or stdout closed). */
bool mcp_stdio_closed (const mcp_stdio_t *self);
/* The client is gone (reason logged once): nothing more is read, the code
   its calls run is interrupted, and the server forgets the sink. */
void mcp_stdio_end (mcp_stdio_t *self, const char *reason);

/* `kennel mcp ...` (main.c's dispatch). */
int mcp_main (int argc, char **argv);

#endif
