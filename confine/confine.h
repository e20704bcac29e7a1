/*  confine.h - libconfine: a sandbox for untrusted code, applied in-process.

    A policy (C struct, loadable from JSON) and one call, confine_enter(),
    that confines the calling process before it runs untrusted code:

        confine_policy_t *policy = confine_policy_new ();   // the defaults
        confine_report_t *report = NULL;
        confine_error_t error;
        if (confine_enter (policy, &report, &error) < 0) {
            // nothing runs: error.stage names the layer, error.message says
            // which call failed, its errno, and the host setting to change
        }
        // here: the confined process (uid 1000 in fresh namespaces, tmpfs
        // root, no capabilities, rlimits, Landlock, seccomp)

    confine_enter() forks into new namespaces. The caller's original process
    never returns on success: it stays outside as the waiter (forwards
    signals, exits with the confined process's exit status or re-raises its
    signal). Setup follows bubblewrap's order; see README.md.
*/
#ifndef CONFINE_H_INCLUDED
#define CONFINE_H_INCLUDED

#include "confine_paths.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* On a setup step or a policy check: ignoring its result would run
   untrusted code less confined than asked, so the compiler refuses. */
#define CONFINE_MUST_CHECK __attribute__ ((warn_unused_result))

/* Every layer that the report describes, in the order they are set up. */
typedef enum {
    CONFINE_LAYER_NO_NEW_PRIVS = 0,
    CONFINE_LAYER_CGROUP,     /* memory, pids, cpu limits (host side) */
    CONFINE_LAYER_USERNS,     /* user namespace, one unprivileged id */
    CONFINE_LAYER_PID,        /* pid namespace + tiny init */
    CONFINE_LAYER_NET,        /* network namespace, loopback only */
    CONFINE_LAYER_IPC,        /* System V IPC / mqueue namespace */
    CONFINE_LAYER_UTS,        /* hostname */
    CONFINE_LAYER_CGROUPNS,   /* cgroup namespace */
    CONFINE_LAYER_MOUNT,      /* tmpfs root, binds, pivot_root */
    CONFINE_LAYER_QUOTA,      /* size limit of /workspace */
    CONFINE_LAYER_GUARD,      /* a host workspace served through the guard (guard.c) */
    CONFINE_LAYER_CAPS,       /* every capability dropped */
    CONFINE_LAYER_RLIMITS,
    CONFINE_LAYER_LANDLOCK,
    CONFINE_LAYER_SECCOMP,
    CONFINE_LAYER_FDS,        /* only the named fds stay open */
    CONFINE_LAYER_ENV,        /* filtered environment */
    CONFINE_LAYER_COUNT_
} confine_layer_t;

/* "no_new_privs", "userns", ... ; NULL when out of range. */
const char *confine_layer_name (confine_layer_t layer);
/* The layer of that name, or -1. */
int confine_layer_from_name (const char *name);
/* Whether the policy may let this layer degrade (allow_degraded). The
   namespaces, caps, seccomp, rlimits, fds and env never degrade. */
bool confine_layer_degradable (confine_layer_t layer);

typedef enum { CONFINE_NET_NONE = 0, CONFINE_NET_LOOPBACK } confine_net_t;

/* The default host uid and gid of the sandbox user when root starts it:
   outside shadow's subordinate ids (100000-600100000 by default) and every
   range systemd documents (system, regular, homed, dynamic, nspawn's
   containers 524288-1879048191, foreign 2147352576-), below 2^31
   (confine/README.md, "Identity"). */
#define CONFINE_HOST_ID 2000000000u

typedef struct {
    /* Filesystem. workspace = NULL: a fresh tmpfs of workspace_bytes at
       /workspace (gone with the sandbox). run_dir = NULL: no /run/kennel. */
    char *workspace;
    char *run_dir;
    /* A person's directory as workspace: served at /workspace through a
       filesystem that refuses symlinks, hardlinks, special files, exec and
       set-id bits, dot-entries, directory modes (guard.c). */
    bool workspace_guard;
    char *hostname;             /* "kennel" */
    confine_net_t network;      /* none (default): AF_UNIX only */

    /* Identity inside, and the host ids it maps to when root starts us
       (an unprivileged caller always maps to its own ids). */
    uid_t uid, host_uid;        /* 1000, CONFINE_HOST_ID */
    gid_t gid, host_gid;        /* 1000, CONFINE_HOST_ID */

    /* cgroup limits (0 = no limit of that kind). */
    uint64_t memory_bytes;      /* 2 GiB */
    uint64_t pids;              /* 256 */
    double cpus;                /* 1.0 = one core */

    /* tmpfs sizes. workspace_bytes and workspace_files (inodes) also are
       what a host workspace must be limited to (a filesystem of its own,
       mounted by the caller) for the quota layer to be active. */
    uint64_t workspace_bytes;   /* 1 GiB */
    uint64_t workspace_files;   /* 65536 */
    uint64_t tmp_bytes;         /* 256 MiB */
    uint64_t shm_bytes;         /* 256 MiB */

    /* rlimits, soft = hard (0 = leave as inherited, except core). */
    uint64_t rlimit_nofile, rlimit_fsize, rlimit_nproc, rlimit_stack,
             rlimit_data, rlimit_core, rlimit_cpu;

    /* Environment given to the confined process: "NAME=value" strings,
       on top of a fixed minimal one (PATH, HOME, LANG, TERM, ...). */
    char **env;
    size_t env_count;

    /* fds that stay open inside besides 0, 1, 2 (e.g. a status fd). */
    int keep_fds[16];
    size_t keep_fd_count;

    /* Bit (1 << layer) set: that layer may run degraded or be missing. */
    unsigned allow_degraded;

    /* Called in the waiter (outside) after the sandbox ended, before it
       exits: e.g. to remove a temporary directory. Not from JSON. */
    void (*on_exit) (int wait_status, void *arg);
    void *on_exit_arg;
} confine_policy_t;

/* In the waiter, e.g. from on_exit: how many processes the sandbox's
   memory limit killed (cgroup v1 memory.oom_control, v2 memory.events
   "oom_kill"), read just before its cgroup was removed; -1 when there is no
   such count (no memory limit, the cgroup layer degraded, or a kernel
   without the counter). */
long confine_oom_kills (void);

/* Allocation that cannot fail (README.md, "Allocation"): on out of memory
   they write "kennel: out of memory" to stderr and abort(). Safe between
   clone() and exec (no stdio). */
void *confine_xmalloc (size_t size) __attribute__ ((malloc, returns_nonnull));
void *confine_xcalloc (size_t n, size_t size) __attribute__ ((malloc, returns_nonnull));
/* reallocarray(3): n * size is checked for overflow. */
void *confine_xreallocarray (void *ptr, size_t n, size_t size) __attribute__ ((returns_nonnull));
char *confine_xstrdup (const char *s) __attribute__ ((malloc, returns_nonnull));
void confine_alloc_fail (void) __attribute__ ((noreturn));
/* Makes jansson allocate through confine_xmalloc, so that a NULL from
   json_* means bad input, never out of memory. Once, first thing in main. */
void confine_alloc_json (void);

/* The defaults (documented in README.md). Never NULL (aborts on OOM). */
confine_policy_t *confine_policy_new (void);
/* Applies the fields of a JSON object on top of the current values.
   Unknown keys and bad values are errors: returns -1 and writes one line
   naming the field into err (errlen bytes). */
CONFINE_MUST_CHECK int confine_policy_load_json (confine_policy_t *self, const json_t *json, char *err, size_t errlen);
CONFINE_MUST_CHECK int confine_policy_load_file (confine_policy_t *self, const char *path, char *err, size_t errlen);
/* Adds one "NAME=value" (copied). */
void confine_policy_setenv (confine_policy_t *self, const char *name, const char *value);
/* Replaces this process's environment with the sandbox's fixed minimal one
   (PATH, HOME, LANG, ...: README.md, "env"), which every confined process
   starts from before the policy's env. -1 when clearenv fails. */
CONFINE_MUST_CHECK int confine_env_reset (void);
/* Keeps fd open inside. Returns -1 when the table is full. */
CONFINE_MUST_CHECK int confine_policy_keep_fd (confine_policy_t *self, int fd);
void confine_policy_destroy (confine_policy_t **self_p);

/* Layer report. */
typedef enum { CONFINE_ACTIVE = 0, CONFINE_DEGRADED, CONFINE_UNSUPPORTED } confine_state_t;
const char *confine_state_name (confine_state_t state);

typedef struct {
    bool set;
    confine_state_t state;
    char reason[320];
} confine_layer_report_t;

typedef struct {
    confine_layer_report_t layers[CONFINE_LAYER_COUNT_];
    pid_t pid;          /* the confined process as the caller's pid ns sees it */
    int landlock_abi;   /* 0 when none */
} confine_report_t;

confine_report_t *confine_report_new (void);
void confine_report_set (confine_report_t *self, confine_layer_t layer, confine_state_t state,
                         const char *fmt, ...) __attribute__ ((format (printf, 4, 5)));
/* {"userns": {"state": "active", "reason": "..."}, ...}; new reference. */
json_t *confine_report_json (const confine_report_t *self);
void confine_report_destroy (confine_report_t **self_p);

/* Why confinement failed: the layer ("userns", ...) or step ("setup"),
   the errno of the failing call (0 if none) and one line for people. */
typedef struct {
    char stage[32];
    int err;
    char message[480];
} confine_error_t;

void confine_error_set (confine_error_t *self, const char *stage, int err,
                        const char *fmt, ...) __attribute__ ((format (printf, 4, 5)));
/* {"stage", "errno", "message"}; new reference. */
json_t *confine_error_json (const confine_error_t *self);

/* A cgroup of its own, with the sandbox's cgroup code, for a process the
   caller starts outside any sandbox (the gateway's host tool commands):
   "kennel-<pid>-<n>" below the caller's own cgroup (cgroup v2 with a
   delegated subtree, or as root the v1 memory and pids hierarchies), with
   memory.max / memory.limit_in_bytes (+memsw) and pids.max (0 = none of
   that kind). NULL when the host cannot give one: error names the step,
   its errno and the host setting, as the sandbox's cgroup layer does
   (stage "cgroup"). Making one costs ~0.6 ms (v1, two hierarchies). */
typedef struct confine_cgroup confine_cgroup_t;
confine_cgroup_t *confine_cgroup_new (uint64_t memory_bytes, uint64_t pids, confine_error_t *error);
/* "cgroup v1 (as root): memory N B, pids N in DIR" */
const char *confine_cgroup_describe (const confine_cgroup_t *self);
/* The cgroup.procs files a child writes "0" into to join it, NULL-ended:
   joining waits for an RCU grace period (~10 ms on v1), so the child does
   it, between fork and exec (plain open and write: safe after fork). */
const char *const *confine_cgroup_procs (const confine_cgroup_t *self);
/* SIGKILL to every process in it now (v2: cgroup.kill); never waits.
   How many were signalled (v2: 1 when the kernel took the kill). */
int confine_cgroup_kill (confine_cgroup_t *self);
/* Removes its directories: 0, or -1 (errno EBUSY while processes are
   still leaving: try again later). Never waits. */
int confine_cgroup_remove (confine_cgroup_t *self);
/* How many processes its memory limit killed, -1 when unknown. */
long confine_cgroup_oom_kills (const confine_cgroup_t *self);
/* Frees it, removing what it can (a directory still in use stays until a
   later sweep, once this process is gone). */
void confine_cgroup_destroy (confine_cgroup_t **self_p);

/* Applies policy to the calling process. Returns 0 in the confined
   process (report filled, caller frees it). Returns -1 in the original
   process when confinement could not be set up (nothing ran; error filled).
   On success the original process does not return: it waits and exits with
   the confined process's status. The caller must be single-threaded. */
CONFINE_MUST_CHECK int confine_enter (const confine_policy_t *policy, confine_report_t **report, confine_error_t *error);

/* Call in the confined process right before exec: sets the limits that a
   sanitizer build can only approximate in-process (RLIMIT_DATA; see
   rlimits.c). Harmless otherwise. 0 or -1 (errno). */
CONFINE_MUST_CHECK int confine_exec_limits (const confine_policy_t *policy);

/* Ends this process by signal sig the way a process killed by it ends
   (default action, unblocked, core dumps off), so that a supervisor's own
   caller sees the confined process's death. Returns 128 + sig, the shell's
   code for it, only if the signal did not end the process. */
int confine_die_by_signal (int sig);

/* Self-tests of the pure parts (policy, report); 0 when they pass. */
int confine_selftest (bool verbose);

#ifdef __cplusplus
}
#endif
#endif
