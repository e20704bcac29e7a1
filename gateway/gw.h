/*  gw.h - the gateway daemon's internal types, shared by the gateway sources.

    One single-threaded czmq event loop (gw_server) owns a control socket and
    the table of conversations (gw_core.h). Each conversation (gw_conv) has
    the peers that fronts attached to it (gw_front.h: the ZeroMQ front's
    five client sockets, gw_zmq_front.c), its relay to the kernel
    (gw_relay.c and its family, gw_relay_private.h) and at most one running
    kernel (gw_kernel, launched by gw_launch). Nothing here blocks on a
    kernel: processes are watched through pidfds in the loop.
*/
#ifndef GW_H_INCLUDED
#define GW_H_INCLUDED

#include "wire.h"
#include "gw_front.h"
#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

/* On a check of untrusted bytes (a peek, a validator, a policy lowering):
   ignoring its result would let them through, so the compiler refuses. */
#define GW_MUST_CHECK __attribute__ ((warn_unused_result))

/* A path built from the state dir and a suffix (an ipc port, a
   sub-directory): PATH_MAX and room for the suffix. */
#define GW_PATH_MAX (PATH_MAX + 104)
/* The longest path of an ipc socket: sun_path less its NUL (107 on Linux). */
#define GW_SUN_PATH_MAX ((int) sizeof ((struct sockaddr_un *) 0)->sun_path - 1)
/* The random part of run/ and sock/ names: 16 of wire_id_new's hex digits,
   short so that the socket paths in them fit GW_SUN_PATH_MAX. */
#define GW_SHORT_ID_LEN 16
/* Signatures each replay cache remembers (client, control and kernel side). */
#define GW_REPLAY_CAPACITY 65536

/* ---- gw_clock: intervals on CLOCK_MONOTONIC, dates on CLOCK_REALTIME -- */

/* Seconds on CLOCK_MONOTONIC: every timeout, age, deadline and duration. */
double gw_clock_mono (void);
/* Seconds since the epoch (CLOCK_REALTIME): only for dates that are shown. */
double gw_clock_wall (void);
/* The wall-clock date of a CLOCK_MONOTONIC instant, for display. */
double gw_clock_wall_of (double mono);
/* t (epoch seconds) as 2026-01-31T12:00:00.000000Z */
void gw_iso_time (double t, char out[40]);

/* ---- gw_log: one JSON line per event ---------------------------------- */

/* Where events go: NULL path means stderr. 0 or -1 with errno. */
int gw_log_open (const char *path);
void gw_log_close (void);
/* event "open", fields as for json_pack ("{s:s, s:i}", ...), or NULL. */
void gw_log (const char *event, const char *fmt, ...);
/* The same for a line about bad input from source (e.g.
   "conversation/ID/shell/client"): rate-limited per source and in total,
   what is held back is counted in a log_dropped line once a second. */
void gw_log_limited (const char *source, const char *event, const char *fmt, ...);
/* A message of a conversation's channel refused (from "client" or
   "kernel"), rate-limited per conversation, channel and side. */
void gw_log_bad_message (const char *conversation, const char *channel, wire_error_t err, const char *from);
/* A message not sent: the receiver's queue was full (rate-limited). */
void gw_log_dropped (const char *conversation, const char *channel);

/* ---- gw_io: one epoll set for the conversations' sockets and fds -------- */

/* zloop polls its whole set on every wake-up; sockets and fds registered
   here sit in one epoll set that zloop sees as a single fd, so a wake-up
   costs O(ready) (gw_io.c). Handlers have zloop's signatures. */
typedef struct gw_io gw_io_t;
/* NULL with errno when the epoll set cannot be made. */
gw_io_t *gw_io_new (zloop_t *loop);
void gw_io_destroy (gw_io_t **self_p);
/* The set registered on loop, or NULL (then use zloop directly). */
gw_io_t *gw_io_of (zloop_t *loop);
/* 0, or -1 with errno (EEXIST: registered already; epoll_ctl's). */
int gw_io_reader (gw_io_t *self, zsock_t *sock, zloop_reader_fn *handler, void *arg);
void gw_io_reader_end (gw_io_t *self, zsock_t *sock);
/* A plain fd (item->fd, POLLIN); item stays the caller's. */
int gw_io_poller (gw_io_t *self, zmq_pollitem_t *item, zloop_fn *handler, void *arg);
void gw_io_poller_end (gw_io_t *self, int fd);
/* Call after sending on a registered socket: a send may consume the
   wake-up of messages waiting to be read, so the socket is re-checked. */
void gw_io_sent (gw_io_t *self, zsock_t *sock);
int gw_io_size (const gw_io_t *self); /* registered sockets and fds */
/* A plain fd's events from now on: ZMQ_POLLIN, ZMQ_POLLOUT or both (0:
   only errors and hang-ups); the handler's item->revents says which. */
int gw_io_poller_events (gw_io_t *self, int fd, short events);
/* Before bind or connect: frames above twice max_message_bytes end the
   peer's connection before they are buffered (ZMQ_MAXMSGSIZE, per frame),
   and at most queue_messages messages wait per peer and direction. */
void gw_io_bound (zsock_t *sock, size_t max_message_bytes, int queue_messages);
/* Messages queued per peer and direction (gateway/README.md, "Memory"):
   the control socket's peers, and each conversation's sockets. */
#define GW_QUEUE_CONTROL 16
#define GW_QUEUE_CONVERSATION 64

/* ---- gw_zmtp: a kernel's ZMTP stream, checked before ZeroMQ buffers it -- */

/* What one message from a kernel may hold (gateway/README.md, "Memory"):
   its frames' bytes together, and its frames. */
typedef struct {
    uint64_t max_message_bytes;
    uint32_t max_frames;
} gw_zmtp_limits_t;
/* Frames in one kernel message: a Jupyter message has its identities, the
   delimiter, the signature, four JSON frames and its buffers. */
#define GW_ZMTP_FRAMES_MAX 4096

/* The frame-boundary reader of one connection's incoming bytes (gw_zmtp.c). */
typedef struct {
    gw_zmtp_limits_t limits;
    int state;
    uint8_t field[64]; /* the greeting, or a frame's size field, as it arrives */
    size_t have;
    uint8_t flags;
    uint64_t body_left;
    uint64_t message_bytes; /* of the message under way */
    uint32_t message_frames;
    const char *stopped; /* why the stream must be cut, or NULL */
} gw_zmtp_scan_t;
void gw_zmtp_scan_init (gw_zmtp_scan_t *self, const gw_zmtp_limits_t *limits);
/* The next len bytes of the stream: NULL while they keep within the
   limits; else (now and ever after) the reason, a static string: none of
   these bytes may be passed on. */
GW_MUST_CHECK const char *gw_zmtp_scan (gw_zmtp_scan_t *self, const uint8_t *data, size_t len);

/* One kernel connection through the scan (gw_zmtp_guard.c): connects to
   the socket at path (never through a symlink) and fills endpoint
   ("ipc://@...") for the relay's ZeroMQ socket to connect to. NULL with
   errno when the kernel's socket cannot be connected. conversation and
   channel name it in the log. */
typedef struct gw_zmtp_guard gw_zmtp_guard_t;
gw_zmtp_guard_t *gw_zmtp_guard_new (gw_io_t *io, const char *path, const gw_zmtp_limits_t *limits,
                                    const char *conversation, const char *channel, char *endpoint,
                                    size_t endpoint_size);
void gw_zmtp_guard_destroy (gw_zmtp_guard_t **self_p);
/* Why the guard cut the kernel's connection (a static string), or NULL. */
const char *gw_zmtp_guard_cut (const gw_zmtp_guard_t *self);

/* ---- gw_timer: zloop timers that never fire once ended ---------------- */

/* zloop runs a timer that an earlier handler of the same pass ended; a
   timer started here never does (gw_timer.c). One registry per loop, owned
   by the loop's owner; handlers have zloop's signature. */
typedef struct gw_timers gw_timers_t;
gw_timers_t *gw_timers_new (zloop_t *loop);
/* After the loop has stopped, before zloop_destroy. */
void gw_timers_destroy (gw_timers_t **self_p);
size_t gw_timers_size (const gw_timers_t *self); /* timers still to fire */
/* As zloop_timer; -1 (EINVAL) when loop has no registry. */
int gw_timer_start (zloop_t *loop, size_t delay_ms, size_t times, zloop_timer_fn *handler, void *arg);
/* Any id: one that fired its last time, was ended, or is 0 is ignored. */
void gw_timer_end (zloop_t *loop, int timer_id);

/* ---- gw_curve: CurveZMQ on tcp client sockets, the ZAP handler --------- */

/* One set of client sockets' keys (z85) and the ZAP domain naming them. */
typedef struct {
    char server_public[41];
    char server_secret[41];
    char client_public[41];
    char client_secret[41];
    char domain[WIRE_ID_SIZE];
} gw_curve_keys_t;

/* Fresh keypairs and domain; -1 when libzmq cannot do CURVE. */
int gw_curve_keys_new (gw_curve_keys_t *keys);
/* Makes s (before its bind) a CURVE server of keys' domain. */
void gw_curve_server (zsock_t *s, const gw_curve_keys_t *keys);
/* Adds curve_serverkey, curve_publickey, curve_secretkey to a connection. */
void gw_curve_info (const gw_curve_keys_t *keys, json_t *info);
/* Connects s to port of a connection info as a client would (ipc or tcp,
   CURVE when the info has keys). zsock_connect's result. */
int gw_client_connect (zsock_t *s, const json_t *info, int port);

/* Answers libzmq's ZAP requests in the loop: a CURVE client is admitted
   only with the client key of the domain its socket serves. */
typedef struct gw_zap gw_zap_t;
/* NULL + *errmsg when the handler cannot be bound (then CURVE would
   admit anyone: the caller refuses to serve tcp). */
gw_zap_t *gw_zap_new (zloop_t *loop, char **errmsg);
void gw_zap_destroy (gw_zap_t **self_p);
void gw_zap_allow (gw_zap_t *self, const gw_curve_keys_t *keys);
void gw_zap_forget (gw_zap_t *self, const gw_curve_keys_t *keys);

/* ---- gw_peek: one string field of a JSON frame, no tree ---------------- */

/* The string value of key in the JSON object data, as jansson would decode
   it, copied into out (cut to out_size - 1 like snprintf). Its length (>=
   out_size: cut), or -1 when absent, not a string or not valid JSON. */
GW_MUST_CHECK int gw_peek_string (const void *data, size_t size, const char *key, char *out, size_t out_size);
/* 1 when data is one JSON object jansson would take, 0 when it would
   refuse it (or it is no object), -1 when only jansson can tell. */
GW_MUST_CHECK int gw_peek_object (const void *data, size_t size);
/* 1 when data is one JSON object that Python's json loads (escapes,
   UTF-8, numbers of any form up to 4096 characters) nested at most
   max_depth deep (the object itself is depth 1), else 0. Never calls
   jansson: the relay checks every kernel frame with it. */
GW_MUST_CHECK int gw_peek_check (const void *data, size_t size, int max_depth);
/* What the relay lets a kernel's JSON frames nest: Python's json loads
   about 990 levels from an empty stack (recursion limit 1000), a client
   calls it from some hundreds of frames deep at most. */
#define GW_JSON_DEPTH_MAX 512
/* The same on frame delimiter + offset of a wire message (2 header, 3
   parent header, 4 metadata, 5 content). */
GW_MUST_CHECK int gw_peek_frame (zmsg_t *msg, int offset, const char *key, char *out, size_t out_size);

/* ---- gw_meta: metadata.kennel spliced into a kernel's metadata frame --- */

/* Sets "kennel" to cost (taken) in the JSON object of frame (rewritten in
   place); a frame that is no JSON object becomes {"kennel": cost}. */
void gw_meta_add_kennel (zframe_t *frame, json_t *cost);

/* ---- gw_text: strings from clients, whole or refused -------------------- */

/* The string of value when it is a JSON string without a NUL, else NULL
   (a NUL would cut the C string: "a\u0000b" read as "a"). */
GW_MUST_CHECK const char *gw_text (const json_t *value);
/* Whether no string and no object key anywhere in value holds a NUL: what
   the gateway passes on in a launch spec (the launcher's parser refuses
   NUL) or reads with json_object_foreach (keys as C strings). */
GW_MUST_CHECK bool gw_text_clean (const json_t *value);
/* The number of characters (code points) in bytes bytes of UTF-8. */
size_t gw_text_chars (const char *s, size_t bytes);
/* How many bytes of s to print ("%.*s") to show at most max bytes of it
   without splitting a character: a message must stay valid UTF-8. */
int gw_text_fit (const char *s, int max);
/* Replaces a malloc'd string field (wire_connection_new fills defaults). */
void gw_set_string (char **field, const char *value);

/* ---- gw_id: kernel and session ids, routable by shard ------------------ */

#define GW_SHARD_MAX 8     /* hex digits: a UUID's first group */
#define GW_ID_UUID_SIZE 37 /* 8-4-4-4-12 and the NUL */
/* A random UUID-shaped id whose first group is shard (1 to GW_SHARD_MAX
   lowercase hex digits: gw_config checks it) zero-padded; "" or NULL: all
   random. */
void gw_id_new (const char *shard, char out[GW_ID_UUID_SIZE]);

/* ---- gw_config: the operator's defaults and maxima --------------------- */

/* The value of a limit the operator's config made "unlimited" (a client
   cannot): a consumer tests for it by name, so that 0 or any other value
   that reached it still limits. */
#define GW_UNLIMITED (-1)

/* A conversation's effective limits and kernel settings. */
typedef struct {
    double execution_timeout; /* s, elapsed per execution, or GW_UNLIMITED */
    double tool_timeout;      /* s */
    double idle_ttl;          /* s, or GW_UNLIMITED: never culled */
    int64_t memory_bytes;     /* or GW_UNLIMITED */
    int64_t pids;             /* or GW_UNLIMITED */
    int64_t workspace_bytes;
    int64_t workspace_files;
    int64_t output_bytes; /* per execution, or GW_UNLIMITED */
    char network[16];     /* "none" or "loopback" */
    char builtins[16];    /* "agent", "notebook", "none" */
    json_t *imports;      /* {"deny": [...]} or {"allow": [...]} or NULL */
    json_t *env;          /* object name -> string, never NULL once made */
} gw_policy_t;

typedef struct {
    gw_policy_t defaults;
    gw_policy_t maxima; /* numeric fields only are used */
    int max_conversations;
    int max_parallel_launches; /* kernels confined and started at once */
    int queue_limit;            /* execute requests waiting per conversation */
    double idle_check_interval; /* s */
    double interrupt_grace;     /* s between SIGINT and SIGKILL on timeout */
    double launch_timeout;      /* s to wait for the launcher's status line */
    size_t max_message_bytes;
    int max_tool_calls;      /* tool calls per execution */
    int warm_pool;           /* pre-started kernels without identity; 0 = none */
    bool log_tool_arguments; /* tool_call log lines carry the arguments */
    bool fork_server;        /* fork_server.enabled: one zygote for python kernels */
    json_t *fork_preload;    /* fork_server.preload: module names, array */
    char *launcher;  /* path of kennel-launch */
    json_t *confine; /* extra confine policy fields passed through, object */
    json_t *kernels; /* name -> {"argv": [...]} besides the builtin "python" */
    json_t *http;    /* the "http" section, read by the HTTP front (gateway/http), or NULL */
    char shard[9];   /* "shard" (KENNEL_SHARD wins): leads every kernel and session id, or "" */
    double drain_grace; /* s that running executions get after SIGTERM (gw_drain.c) */
    int refs;        /* the server and each conversation opened under it (gw_conv_config) */
} gw_config_t;

/* Defaults, then the file (NULL = none). NULL with *errmsg (malloc'd) on error. */
GW_MUST_CHECK gw_config_t *gw_config_load (const char *path, char **errmsg);
/* One holder less; freed with the last. */
void gw_config_destroy (gw_config_t **self_p);
/* One holder more: the same config. */
gw_config_t *gw_config_ref (const gw_config_t *self);
/* The operator's defaults lowered by a request's policy object. Returns 0, or
   -1 with *errmsg naming the field (an attempt to raise a limit, a bad type). */
GW_MUST_CHECK int gw_policy_lower (const gw_config_t *config, const json_t *request, gw_policy_t *out, char **errmsg);
void gw_policy_clear (gw_policy_t *policy);
void gw_policy_copy (gw_policy_t *dst, const gw_policy_t *src);
json_t *gw_policy_to_json (const gw_policy_t *policy);
/* The confine policy of a kernel's launch spec: the config's confine
   settings with the policy's memory_bytes, pids, workspace_bytes,
   workspace_files, network. */
json_t *gw_confine_policy_json (const gw_config_t *config, const gw_policy_t *policy);
/* A timer's delay in ms for a finite limit in seconds: at least 1, so that
   no value arms "no timer". */
size_t gw_limit_ms (double seconds);
json_t *gw_config_limits_json (const gw_config_t *config);

/* ---- gw_fs: workspaces, walked without following symlinks --------------- */

/* Removes a tree through directory fds (any depth, at most 16 directory
   streams open; a symlink is removed, never followed; a directory the
   gateway owns is made 0700 before it is read). 0 when path is gone, else
   -1 with errno. Callable from any thread. */
int gw_fs_remove_tree (const char *path);
/* Retries the removal of what graveyard holds (removed once empty);
   returns how many entries are left. */
int gw_fs_graveyard_empty (const char *graveyard);
/* Disk usage (allocated blocks) of a tree, symlinks not followed. */
int64_t gw_fs_tree_bytes (const char *path);

/* ---- gw_remove.c: removal off the event loop ---------------------------- */
typedef struct gw_remover gw_remover_t;
/* The worker thread that empties graveyard (starting with what an earlier
   run left there), reporting to the loop of io. NULL with *errmsg. */
gw_remover_t *gw_remover_new (gw_io_t *io, const char *graveyard, char **errmsg);
/* Renames path into the graveyard (its id is free at once) for the worker
   to remove: 0 (also when path is gone), or -1 with errno, path in place. */
int gw_remover_bury (gw_remover_t *self, const char *path);
/* One last pass of the worker (everything removable is removed), then ends it. */
void gw_remover_destroy (gw_remover_t **self_p);

/* ---- gw_quota.c: a workspace's limits (a tmpfs mounted on it) ---------- */
/* Once, before any thread: an unprivileged gateway enters a user and mount
   namespace of its own, where it may mount (else every later mount fails
   with the reason, naming the host setting). */
void gw_quota_prepare (void);
/* Why this gateway cannot mount workspaces, or NULL. */
const char *gw_quota_unavailable (void);
/* Mounts a tmpfs of bytes with files inodes on dir (a kept one gets the
   new limits): a workspace gets its policy's workspace_bytes and
   workspace_files, a run dir GW_RUN_DIR_BYTES and GW_RUN_DIR_FILES (what
   kernel.json and five sockets need). 0; or -1 with *errmsg (malloc'd,
   naming the layer "quota" and the host setting) unless the config's
   allow_degraded names "quota", which logs and returns 0 with no mount. */
#define GW_RUN_DIR_BYTES (1 << 20)
#define GW_RUN_DIR_FILES 64
GW_MUST_CHECK int gw_quota_apply (const gw_config_t *config, const char *dir, int64_t bytes, int64_t files,
                                  char **errmsg);
/* Detaches the tmpfs on dir, if any; its pages go when the kernel's last
   process has left it. */
void gw_quota_unmount (const char *dir);
/* At start: unmounts what a gateway of this state dir that did not stop
   cleanly (SIGKILL) left mounted: the probe's, pooled kernels' and run
   dirs' tmpfs. Conversations' workspaces stay (kept ones are reused). */
void gw_quota_sweep (const char *state_dir);
/* Bytes and files in use on dir's tmpfs: false when dir has none. */
bool gw_quota_usage (const char *dir, int64_t *bytes, int64_t *files);

/* ---- gw_tools: tool declarations ------------------------------------- */

/* A checked copy of a conversation_open tool list (OpenAI's {"type":
   "function", "function": {...}} unwrapped), or NULL with *errmsg
   (malloc'd) naming the tool and the problem. */
GW_MUST_CHECK json_t *gw_tools_validate (const json_t *tools, char **errmsg);
/* The declaration named name in a checked list, or NULL. */
const json_t *gw_tools_find (const json_t *tools, const char *name);
/* A declaration's parameters schema (or its input_schema/inputSchema
   alias), NULL when it takes no parameters. */
const json_t *gw_tools_schema (const json_t *tool);

/* ---- gw_schema: the JSON Schema subset of tool parameters -------------- */

/* Whether schema uses only the supported keywords, well formed; otherwise
   false with problem naming the place (where + path) and the keyword. */
GW_MUST_CHECK bool gw_schema_supported (const json_t *schema, const char *where, char *problem, size_t size);
/* Whether a call's arguments meet a supported parameters schema (NULL: no
   parameters); otherwise false with problem naming the argument and the
   rule it breaks. */
GW_MUST_CHECK bool gw_schema_check_arguments (const json_t *parameters, const json_t *arguments, char *problem, size_t size);

/* ---- gw_launch: one kennel-launch process ------------------------------ */

typedef struct gw_launch gw_launch_t;
typedef enum { GW_LAUNCH_WAITING, GW_LAUNCH_CONFINED, GW_LAUNCH_FAILED, GW_LAUNCH_EXITED } gw_launch_state_t;
/* Called from the loop when the status line arrived (or the launcher failed
   before sending one) and when the process has exited. */
typedef void (gw_launch_fn) (gw_launch_t *launch, void *arg);

/* fork+exec launcher --spec-fd 3 with spec written on fd 3 and the status
   line read from fd 4; stdout and stderr go to log_path. NULL with *errmsg. */
gw_launch_t *gw_launch_start (zloop_t *loop, const char *launcher, json_t *spec, const char *log_path,
                              gw_launch_fn *on_status, gw_launch_fn *on_exit, void *arg, char **errmsg);
/* Removes log_path and the older log a launch rotated it to (log_path.1). */
void gw_launch_log_remove (const char *log_path);
/* In a forked child whose fds are in place: a new session that dies with the
   gateway, default signals, an environment with nothing of the gateway's
   (PATH and the sanitizers' settings only), then exec of launcher with argv.
   Never returns (exit 125 when the gateway is already gone, 127 when exec
   fails). Used for kernels' launchers and for the zygote. */
_Noreturn void gw_launch_exec (const char *launcher, const char *const argv[]);
/* Kills the whole process group with SIGKILL and forgets the callbacks; the
   process is reaped later by the loop (gw_launch_reap_all at exit). Frees self
   once reaped. */
void gw_launch_abandon (gw_launch_t **self_p);
/* Hands a running launch to another owner (a warm-pool kernel claimed by a
   conversation): later events go to the new callbacks. */
void gw_launch_rebind (gw_launch_t *self, gw_launch_fn *on_status, gw_launch_fn *on_exit, void *arg);
/* Waits (bounded) for every abandoned launcher; for a clean exit. */
void gw_launch_reap_all (double timeout_s);
gw_launch_state_t gw_launch_state (const gw_launch_t *self);
pid_t gw_launch_pid (const gw_launch_t *self);        /* the launcher */
pid_t gw_launch_kernel_pid (const gw_launch_t *self); /* from the status line, or 0 */
/* The status line (object) or NULL. Owned by self. */
json_t *gw_launch_status (const gw_launch_t *self);
/* After GW_LAUNCH_EXITED: "exit status 3", "killed by signal 9 (SIGKILL)". */
const char *gw_launch_cause (const gw_launch_t *self);
/* A one-line reason for GW_LAUNCH_FAILED (stage + message). */
const char *gw_launch_error (const gw_launch_t *self);
/* SIGKILL to the kernel; the launcher's session too if it lingers. */
void gw_launch_kill (gw_launch_t *self);
/* Sends sig to the kernel (falls back to the launcher). */
int gw_launch_signal (gw_launch_t *self, int sig);
/* ---- gw_proc: a kernel's cost from /proc -------------------------------- */

/* Kernel cpu seconds (utime+stime of the kernel and reaped children), rss, peak rss. */
void gw_proc_usage (pid_t pid, double *cpu_seconds, int64_t *rss_bytes, int64_t *max_rss_bytes);
void gw_proc_reset_peak (pid_t pid);
/* One execution's reading: /proc/PID/stat and status held open from start
   to end. */
typedef struct {
    int stat_fd; /* -1 when none */
    int status_fd;
    bool held;   /* counted in the fds held by executions */
    pid_t pid;
    double cpu_start;
} gw_proc_watch_t;
/* Opens both (at most 64 executions hold them: others read by pid at the
   end), reads the kernel's stat, resets its peak rss. */
void gw_proc_watch_start (gw_proc_watch_t *self, pid_t pid);
/* cpu seconds since the start and the peak rss since then (0 when the
   kernel is gone); closes the fds. */
void gw_proc_watch_end (gw_proc_watch_t *self, double *cpu_seconds, int64_t *max_rss_bytes);
void gw_proc_watch_close (gw_proc_watch_t *self);

/* ---- gw_conv: one conversation ----------------------------------------- */

typedef struct gw_server gw_server_t;
typedef struct gw_conv gw_conv_t;

/* Conversation ids: [A-Za-z0-9._-]{1,128}, not "." or ".." (gw_text.c). */
GW_MUST_CHECK bool gw_conv_id_valid (const char *id);
/* Creates the directories (claims a warm-pool kernel when pooled and the
   pool has one that fits). NULL + *errmsg. Only the table (gw_core.c)
   makes conversations. */
gw_conv_t *gw_conv_new (gw_server_t *server, const char *id, const char *kernel, json_t *tools,
                        const gw_policy_t *policy, bool pooled, char **errmsg);
/* Starts its kernel (or adopts the claimed one). */
void gw_conv_start (gw_conv_t *self);
/* Stops the kernel, closes the sockets, removes the directories (the
   workspace too unless keep_workspace). */
void gw_conv_destroy (gw_conv_t **self_p, bool keep_workspace);
/* Before a close (why: "close_request", "idle", "shutdown", ...): every
   execution still running or queued gets a ConversationClosed reply. */
void gw_conv_closing (gw_conv_t *self, const char *why);
const char *gw_conv_id (const gw_conv_t *self);
gw_server_t *gw_conv_server (const gw_conv_t *self);
/* The kernel id: a UUID (8-4-4-4-12 hex digits) made with the conversation. */
const char *gw_conv_kernel_id (const gw_conv_t *self);
const char *gw_conv_workspace (const gw_conv_t *self);
json_t *gw_conv_list_entry (const gw_conv_t *self);
/* Kills the kernel (if any) and starts a fresh one; state "lost". */
void gw_conv_restart (gw_conv_t *self, const char *reason);
/* SIGINT to the running kernel: 0, or -1 when none runs. */
int gw_conv_interrupt (gw_conv_t *self);
/* Calls done(reply_ok, errmsg, arg) once the kernel is confined or failed. */
typedef void (gw_conv_ready_fn) (gw_conv_t *conv, bool ok, const char *errmsg, void *arg);
void gw_conv_when_ready (gw_conv_t *self, gw_conv_ready_fn *fn, void *arg);
bool gw_conv_idle_expired (const gw_conv_t *self, double now);
/* "starting", "dead", "busy" (executions running or queued) or "idle". */
const char *gw_conv_state (const gw_conv_t *self);
/* Executions running or queued. */
int gw_conv_pending (const gw_conv_t *self);
/* The gateway stops after a drain: the clients hear iopub status "dead". */
void gw_conv_announce_stopping (gw_conv_t *self);
/* The config the conversation was opened under (a reload changes only
   later conversations'). */
const gw_config_t *gw_conv_config (const gw_conv_t *self);
/* Internal to gw_conv.c and gw_relay.c */
void gw_conv_kernel_start (gw_conv_t *self);

/* ---- gw_slots: the launch scheduler ------------------------------------- */

/* At most max kernels launch at a time, the others wait in order. */
typedef struct gw_slots gw_slots_t;
/* Called when a waiter's turn came: it holds a slot from then. */
typedef void (gw_slots_fn) (void *arg);
gw_slots_t *gw_slots_new (int max);
void gw_slots_destroy (gw_slots_t **self_p);
/* true: a slot is the caller's now; false: fn (arg) is called when one is. */
bool gw_slots_take (gw_slots_t *self, gw_slots_fn *fn, void *arg);
/* arg waits no longer. */
void gw_slots_cancel (gw_slots_t *self, void *arg);
/* A held slot is given back (to the first waiter, at once). */
void gw_slots_release (gw_slots_t *self);
/* Whether every slot is taken or someone waits. */
bool gw_slots_busy (const gw_slots_t *self);

/* ---- gw_pool: the warm pool ------------------------------------------- */

typedef struct gw_kernel gw_kernel_t; /* gw_kernel.h */
typedef struct gw_pool gw_pool_t;
/* Starts filling in the background (one launch at a time, after the
   conversations' own launches). */
gw_pool_t *gw_pool_new (gw_server_t *server, int size);
void gw_pool_destroy (gw_pool_t **self_p);
/* Whether a conversation of this kernel and policy can take a pooled kernel:
   the sandbox and settings fixed at pool time must be the defaults. */
bool gw_pool_fits (const gw_config_t *config, const char *kernel, const gw_policy_t *policy);
/* A ready kernel, the caller's from now (the pool refills), or NULL. It was
   started and confined ahead of need with no identity: default policy, no
   tools, a workspace in *dir (state/pool/<random>/workspace, its log
   beside it; malloc'd), which the caller renames to its own. */
gw_kernel_t *gw_pool_claim (gw_pool_t *self, char **dir);
/* {size, ready, starting, claimed} */
json_t *gw_pool_info (gw_pool_t *self);

/* ---- gw_capacity: conversations the fds and ZeroMQ sockets allow ------- */

typedef struct {
    int64_t nofile;    /* RLIMIT_NOFILE (soft) at start */
    int max_sockets;   /* ZMQ_MAX_SOCKETS of czmq's context */
    int by_fds;        /* conversations the fds allow (warm pool deducted) */
    int by_sockets;    /* the same for ZeroMQ sockets */
    int conversations; /* the least of those and max_conversations */
    int max_conversations, pool, launches; /* from the config */
} gw_capacity_t;

/* From the process's limits (raised in main.c) and the config. */
void gw_capacity_init (gw_capacity_t *self, const gw_config_t *config);
/* 0 when one more conversation fits; else -1 with *evalue (malloc'd)
   naming the limit (ename CapacityError). */
GW_MUST_CHECK int gw_capacity_check (gw_capacity_t *self, int open_conversations, char **evalue);
/* Whether one more kernel's sockets fit in the fds left now. */
bool gw_capacity_fds_room (const gw_capacity_t *self, int open_conversations);
json_t *gw_capacity_json (gw_capacity_t *self);

/* ---- gw_zygote: the fork server ---------------------------------------- */

typedef struct gw_zygote gw_zygote_t;
/* Starts `launcher --zygote <state>/zygote.sock [--preload ...]`; readiness
   and restarts are handled in the server's loop. */
gw_zygote_t *gw_zygote_new (gw_server_t *server);
/* Stops it (SIGTERM, bounded wait, SIGKILL) and removes the socket. */
void gw_zygote_destroy (gw_zygote_t **self_p);
/* The socket while the zygote is ready, else NULL (self may be NULL). */
const char *gw_zygote_socket (const gw_zygote_t *self);
/* Adds "zygote" to a builtin kernel's launch spec when ready. */
void gw_zygote_apply (const gw_zygote_t *self, json_t *spec);
/* {enabled, ready, preload, pid, restarts} for gateway_info. */
json_t *gw_zygote_info (const gw_zygote_t *self, const gw_config_t *config);

/* ---- gw_server: the loop, the control socket, the table --------------- */

/* The server's fields are its own (gw_server_private.h: gw_server.c and
   the control socket's handler, gw_control.c); the rest of the gateway
   reads them through these. */
zloop_t *gw_server_loop (const gw_server_t *self);
const gw_config_t *gw_server_config (const gw_server_t *self);
const char *gw_server_state_dir (const gw_server_t *self);
gw_io_t *gw_server_io (const gw_server_t *self);
/* What a message may weigh (frames and total): the config's maximum. */
const wire_limits_t *gw_server_limits (const gw_server_t *self);
/* Kernelspec mode or the selftest: one conversation, the loop ends with it. */
bool gw_server_kernel_mode (const gw_server_t *self);
void gw_server_set_kernel_mode (gw_server_t *self);
/* The loop is ending. */
bool gw_server_stopping (const gw_server_t *self);
/* Ends the loop with exit code code. */
void gw_server_exit (gw_server_t *self, int code);
gw_zygote_t *gw_server_zygote (const gw_server_t *self); /* NULL when none */
gw_pool_t *gw_server_pool (const gw_server_t *self);     /* NULL when none */
gw_capacity_t *gw_server_capacity (gw_server_t *self);
gw_remover_t *gw_server_remover (const gw_server_t *self); /* empties state/graveyard off the loop */
gw_slots_t *gw_server_slots (const gw_server_t *self);
/* The conversation table (gw_core.c's): id -> conv, kernel id -> conv. */
zhashx_t *gw_server_table (const gw_server_t *self);
zhashx_t *gw_server_kernel_table (const gw_server_t *self);
/* The start-up probe ended: the connection file is written, the control
   socket answers. */
bool gw_server_ready (const gw_server_t *self);
/* Why the start-up probe failed (conversations are refused) and at which
   layer, or NULL. */
const char *gw_server_startup_error (const gw_server_t *self, const char **layer);
/* The client sockets' transport and ip; whether tcp ones are CURVE
   servers (false for ipc, --insecure-tcp and kernelspec mode) and the ZAP
   handler that admits their clients. */
const char *gw_server_transport (const gw_server_t *self);
const char *gw_server_ip (const gw_server_t *self);
bool gw_server_curve (const gw_server_t *self);
void gw_server_set_insecure (gw_server_t *self); /* --insecure-tcp: no CURVE */
gw_zap_t *gw_server_zap (const gw_server_t *self);
const char *gw_server_connection_file (const gw_server_t *self);
int gw_server_control_port (const gw_server_t *self);
/* The most recent confined layer report, or NULL. */
json_t *gw_server_last_layers (const gw_server_t *self); /* the server's */
/* The gateway connection file's content: a front adds its address to it
   before gw_server_run writes the file. */
json_t *gw_server_connection_info (gw_server_t *self);
/* gateway_info's content (docs/PROTOCOL.md section 3). */
json_t *gw_server_info (gw_server_t *self);


gw_server_t *gw_server_new (gw_config_t **config_p, const char *state_dir, const char *ip, const char *transport,
                            char **errmsg);
void gw_server_destroy (gw_server_t **self_p);
/* True when every client socket admits only authenticated peers: CURVE,
   or ipc in the 0700 sock dir (not --insecure-tcp, not kernelspec mode's
   tcp, where Jupyter's connection file decides). */
bool gw_server_authenticates (const gw_server_t *self);
/* Binds the control socket; the connection file is written (and the socket
   read) by gw_server_run once the start-up confinement probe has ended. */
int gw_server_listen (gw_server_t *self, const char *connection_file, char **errmsg);
/* A layer report (copied) and how it was taken: by whom, the confined
   pid, and the monotonic start of the launch (-1: unknown) for its
   duration - shown in gateway_info. */
void gw_server_set_layers (gw_server_t *self, json_t *layers, const char *by, pid_t pid, double started);
int gw_server_run (gw_server_t *self);
/* Asks the loop to end after the current handler. */
void gw_server_stop (gw_server_t *self);

/* ---- gw_selftest: `kennel selftest` ------------------------------------ */

/* 0 when a confined kernel started and passed every check from inside. */
int gw_selftest_run (const char *config_path);

/* ---- gw_control: the control API -------------------------------------- */

int gw_control_on_message (zloop_t *loop, zsock_t *sock, void *arg);

/* ---- gw_relay: per-conversation sockets and the relay ------------------ */

typedef struct gw_relay gw_relay_t;
gw_relay_t *gw_relay_new (gw_conv_t *conv, gw_server_t *server);
/* Tells the peers GW_EVENT_CLOSED, detaches them, frees. */
void gw_relay_destroy (gw_relay_t **self_p);
/* The conversation's peers (gw_peers.h). */
struct gw_peers *gw_relay_peers (gw_relay_t *self);
/* An event to every peer (gw_front.h). */
void gw_relay_event (gw_relay_t *self, gw_event_t event, const char *detail);
/* Connects to a fresh kernel's ipc sockets under run_dir with its key. */
int gw_relay_kernel_attach (gw_relay_t *self, const char *run_dir, const wire_connection_t *kernel,
                            char **errmsg);
/* Drops the kernel sockets; running and queued requests get an error naming cause. */
void gw_relay_kernel_detach (gw_relay_t *self, const char *ename, const char *cause, bool lost);
/* The conversation closes (why: as gw_core_close's): the peers are told
   GW_EVENT_CLOSING, the running execution and the queued ones get an error
   reply (ename ConversationClosed, evalue cause), an iopub error and idle;
   pending tool calls end. Call before gw_relay_destroy. */
void gw_relay_close (gw_relay_t *self, const char *why, const char *cause);
/* Sends kennel_configure_request {tools} to the kernel (now, or first
   thing when it is ready). */
void gw_relay_configure_tools (gw_relay_t *self, json_t *tools);
/* The same with the tool timeout too (tool_timeout <= 0: left as it is). */
void gw_relay_configure (gw_relay_t *self, json_t *tools, double tool_timeout);
/* Publishes status "starting" (fresh kernel announced to clients). */
void gw_relay_announce_starting (gw_relay_t *self);
/* Publishes status "dead" (the gateway stops: the kernel goes with it). */
void gw_relay_announce_dead (gw_relay_t *self);
int gw_relay_pending (const gw_relay_t *self);
int gw_relay_executions (const gw_relay_t *self);

/* ---- gw_conv accessors used by gw_relay -------------------------------- */

const gw_policy_t *gw_conv_policy (const gw_conv_t *self);
gw_launch_t *gw_conv_launch (gw_conv_t *self);
bool gw_conv_kernel_alive (const gw_conv_t *self);
/* The kernel is gone (dead and not yet restarted). */
bool gw_conv_kernel_dead (const gw_conv_t *self);
void gw_conv_touch (gw_conv_t *self);
/* The declared tool named name, or NULL. */
const json_t *gw_conv_tool (const gw_conv_t *self, const char *name);
/* Replaces the declared tools; a running kernel is reconfigured. */
void gw_conv_set_tools (gw_conv_t *self, json_t *tools);
/* Kills the kernel now (timeout past grace); its death is handled as usual
   but reported as the given cause. */
void gw_conv_kill_kernel (gw_conv_t *self, const char *ename, const char *cause);
/* The relay's handshake with a fresh kernel succeeded. */
void gw_conv_kernel_ready (gw_conv_t *self);
/* shutdown_request restart:false: close after the reply went out. */
void gw_conv_request_close (gw_conv_t *self);

#endif
