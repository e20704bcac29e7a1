/*  private.h - what the modules of libconfine share; not installed.

    Each module (userns.c, mounts.c, ...) sets up one layer and records it in
    the report. A module that fails calls confine_layer_fail(), which either
    records the layer as degraded/unsupported (when the policy allows it by
    name) or fills the error; the module then returns its result.
*/
#ifndef CONFINE_PRIVATE_H_INCLUDED
#define CONFINE_PRIVATE_H_INCLUDED

#include "confine.h"
#include <limits.h>

#define CONFINE_CGROUP_CONTROLLERS 3

typedef struct {
    const confine_policy_t *policy;
    confine_report_t *report;
    confine_error_t *error;
    bool root;                  /* started by uid 0 */
    uid_t host_uid;             /* the host ids of the sandbox user */
    gid_t host_gid;
    int sync_fd;                /* socket to the waiter */
    /* The guard (guard.c), in the waiter: the directory the server works
       on (an idmapped copy when root), the ids it takes, its pid. */
    int guard_dir;
    pid_t guard_pid;
    uid_t guard_uid;
    gid_t guard_gid;
    char guard_who[160];        /* "of host uid N on an idmapped mount (...)" */
    /* cgroup directories made for this sandbox ("" when none). */
    char cgroup_dirs[CONFINE_CGROUP_CONTROLLERS][PATH_MAX];
} confine_ctx_t;

/* A layer could not be set up as the policy asks. When the policy allows
   the layer to degrade, records it with state (degraded or unsupported) and
   returns 0; otherwise fills ctx->error (stage = layer name) and returns -1.
   err is the errno of the failing call (0 if none). */
CONFINE_MUST_CHECK int confine_layer_fail (confine_ctx_t *ctx, confine_layer_t layer, confine_state_t state,
                                           int err, const char *fmt, ...) __attribute__ ((format (printf, 5, 6)));

/* Writes a whole string to a file (O_WRONLY, no create). 0 or -1 (errno). */
int confine_write_file (const char *path, const char *text);

/* Host side, in the original process (cgroup.c). */
CONFINE_MUST_CHECK int cgroup_prepare (confine_ctx_t *ctx);
CONFINE_MUST_CHECK int cgroup_attach (confine_ctx_t *ctx, pid_t pid);
void cgroup_cleanup (confine_ctx_t *ctx);
CONFINE_MUST_CHECK int cgroupns_enter (confine_ctx_t *ctx);

/* userns.c: the waiter writes the maps; the child switches to the user. */
CONFINE_MUST_CHECK int userns_write_maps (confine_ctx_t *ctx, pid_t child);
CONFINE_MUST_CHECK int userns_switch_user (confine_ctx_t *ctx);
CONFINE_MUST_CHECK int userns_prepare_dirs (confine_ctx_t *ctx);
/* Root only: -1 (stage userns) when a user's subordinate ids (/etc/subuid,
   /etc/subgid) hold the host ids. */
CONFINE_MUST_CHECK int userns_check_subids (confine_ctx_t *ctx);
/* The hint for a failed clone(CLONE_NEWUSER|...). */
void userns_clone_failed (confine_ctx_t *ctx, int err);

/* mounts.c: the host sources are opened before the switch to the sandbox
   user (mounts_open), the tree is built after it (mounts_setup frees src). */
typedef struct mounts_sources mounts_sources_t;
CONFINE_MUST_CHECK mounts_sources_t *mounts_open (confine_ctx_t *ctx);
CONFINE_MUST_CHECK int mounts_setup (confine_ctx_t *ctx, mounts_sources_t *src);
CONFINE_MUST_CHECK int net_setup (confine_ctx_t *ctx);
CONFINE_MUST_CHECK int uts_setup (confine_ctx_t *ctx);
CONFINE_MUST_CHECK int ipc_setup (confine_ctx_t *ctx);
CONFINE_MUST_CHECK int caps_drop_bounding (confine_ctx_t *ctx);
CONFINE_MUST_CHECK int caps_drop_all (confine_ctx_t *ctx);
CONFINE_MUST_CHECK int rlimits_setup (confine_ctx_t *ctx);
CONFINE_MUST_CHECK int landlock_setup (confine_ctx_t *ctx);
/* The guard's server: every file right below dir_fd, none elsewhere. 0,
   or -1 with errno (no Landlock on this kernel). */
CONFINE_MUST_CHECK int landlock_only_below (int dir_fd);
CONFINE_MUST_CHECK int seccomp_setup (confine_ctx_t *ctx);
CONFINE_MUST_CHECK int env_setup (confine_ctx_t *ctx);
/* Closes every fd but 0, 1, 2, the policy's and keep (-1 = none). */
CONFINE_MUST_CHECK int fds_close_others (const confine_policy_t *policy, int keep);
CONFINE_MUST_CHECK int fds_setup (confine_ctx_t *ctx);

/* guard.c, in the waiter: guard_prepare before the clone (opens the
   directory, makes the idmapped view when root; refuses a directory of
   root's that cannot be idmapped), guard_serve when the sandbox sends the
   /dev/fuse fd of its /workspace (forks the server, takes fuse_fd),
   guard_end when the sandbox has ended. */
CONFINE_MUST_CHECK int guard_prepare (confine_ctx_t *ctx);
CONFINE_MUST_CHECK int guard_serve (confine_ctx_t *ctx, int fuse_fd);
void guard_end (confine_ctx_t *ctx);

/* Messages on the SOCK_SEQPACKET pair between the waiter and the sandbox. */
/* GO: the id maps are written; CGROUP: the sandbox is in its cgroups (sent
   after GO: the move waits for an RCU grace period, ~5-15 ms, that the
   sandbox spends on its mounts meanwhile). */
typedef enum {
    CONFINE_MSG_GO = 1, CONFINE_MSG_ERROR, CONFINE_MSG_READY, CONFINE_MSG_PID, CONFINE_MSG_EXIT, CONFINE_MSG_CGROUP,
    CONFINE_MSG_GUARD           /* the /dev/fuse fd of /workspace rides along (SCM_RIGHTS) */
} confine_msg_type_t;
typedef struct {
    confine_msg_type_t type;
    int value;                  /* PID: host pid; EXIT: wait status; GUARD: the fd received */
    confine_error_t error;      /* ERROR */
} confine_msg_t;

/* The waiter's end has SO_PASSCRED: every message it receives carries the
   sender's pid as the waiter sees it (READY: the confined process's). */
int confine_msg_send (int fd, confine_msg_type_t type, int value, const confine_error_t *error);
/* GUARD with passed (SCM_RIGHTS). */
int confine_msg_send_fd (int fd, confine_msg_type_t type, int passed);
/* 0, or -1 on EOF/error; *pid from SCM_CREDENTIALS when present. A
   passed fd becomes msg->value of a GUARD message (and is closed with any
   other message). */
CONFINE_MUST_CHECK int confine_msg_recv (int fd, confine_msg_t *msg, pid_t *pid, bool nonblock);

/* pid.c: the init of the pid namespace and the waiter outside. */
#include <signal.h>
/* Blocks the signals the supervisors wait for; old gets the previous mask. */
void pid_block_signals (sigset_t *old);
_Noreturn void pid_init_run (confine_ctx_t *ctx, pid_t child);
_Noreturn void pid_waiter_run (confine_ctx_t *ctx, pid_t init, pid_t child);

#endif
