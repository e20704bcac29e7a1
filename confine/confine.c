/*  confine.c - confine_enter(): the whole setup, in bubblewrap's order.

    caller (P)                          sandbox init (C, pid 1)        confined (D)
    no_new_privs, cgroup dirs
    clone(NEWUSER|NS|PID|NET|IPC|UTS) ─▶ waits for GO
    uid/gid maps
    GO ───────────────────────────────▶ switch to uid 1000,
    move C into its cgroups             mounts + pivot_root, hostname,
                                        lo up; waits for CGROUP
    CGROUP ───────────────────────────▶ cgroupns, caps, rlimits, Landlock,
                                        seccomp; fork ──────────────▶ setsid, env, fds
    ◀──────────────────────────────────────────────────────────── READY (+ creds: host pid)
    PID ─────────────────────────────────────────────────────────▶ returns 0
    waiter: forward signals,            init: reap, forward signals,
    exit like D                         report D's status, exit

    Any failure before READY comes back to P as an ERROR message naming the
    layer; P reaps C and returns -1, so nothing untrusted ever ran.

    Moving a process into a cgroup waits for an RCU grace period (v1 here:
    5-15 ms for the first controller), so C does the steps that do not need
    its cgroup meanwhile. It still enters its cgroup namespace only once it
    is in its cgroups (the namespace's root is the cgroup it is in then),
    and nothing it runs before CGROUP is untrusted. */
#include "private.h"

#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NS_FLAGS (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)

_Noreturn static void
child_fail (confine_ctx_t *ctx)
{
    confine_msg_send (ctx->sync_fd, CONFINE_MSG_ERROR, 0, ctx->error);
    _exit (1);
}

/* D: the confined process, after the fork from init. */
static int
confined_finish (confine_ctx_t *ctx, const sigset_t *caller_mask)
{
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    if (getppid () != 1)        /* init died before we set it */
        _exit (1);
    /* No controlling terminal: nothing to inject keystrokes into. */
    setsid ();
    sigprocmask (SIG_SETMASK, caller_mask, NULL);
    umask (022);
    if (chdir (CONFINE_WORKSPACE_DIR) < 0) {
        confine_error_set (ctx->error, "mount", errno, "chdir " CONFINE_WORKSPACE_DIR ": %s", strerror (errno));
        child_fail (ctx);
    }
    confine_msg_t msg;
    if (confine_msg_send (ctx->sync_fd, CONFINE_MSG_READY, 0, NULL) < 0
        || confine_msg_recv (ctx->sync_fd, &msg, NULL, false) < 0 || msg.type != CONFINE_MSG_PID)
        _exit (1);
    ctx->report->pid = msg.value;
    close (ctx->sync_fd);
    ctx->sync_fd = -1;
    if (fds_setup (ctx) < 0)
        _exit (1);      /* the waiter has gone on already; nothing to report to */
    return 0;
}

/* The parent-death signal is cleared by every credential change, so it is
   set again after the switch to the sandbox user; if the waiter died in
   between, its end of the socket is closed and we stop here. */
static int
watch_parent (confine_ctx_t *ctx)
{
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    char byte;
    ssize_t n = recv (ctx->sync_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0)
        _exit (1);
    return 0;
}

/* C: runs in the new namespaces; returns only in D. */
static int
child_main (confine_ctx_t *ctx, const sigset_t *caller_mask)
{
    static const confine_policy_t keep_none;
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    confine_msg_t msg;
    if (confine_msg_recv (ctx->sync_fd, &msg, NULL, false) < 0 || msg.type != CONFINE_MSG_GO)
        _exit (1);
    /* Nothing of the caller's but 0, 1, 2, the kept fds and our socket. */
    if (fds_close_others (ctx->policy, ctx->sync_fd) < 0) {
        confine_error_set (ctx->error, "fds", errno, "close_range: %s", strerror (errno));
        child_fail (ctx);
    }
    confine_report_set (ctx->report, CONFINE_LAYER_PID, CONFINE_ACTIVE,
                        "own pid namespace; an init reaps orphans, forwards signals, and takes every process down "
                        "with the confined one");
    mounts_sources_t *sources = NULL;
    /* setresuid from an unmapped id to 1000 keeps the namespace's
       capabilities: cgroupns_enter can come after the mounts */
    if (env_setup (ctx) < 0 || !(sources = mounts_open (ctx)) || userns_switch_user (ctx) < 0
        || watch_parent (ctx) < 0 || mounts_setup (ctx, sources) < 0 || uts_setup (ctx) < 0 || net_setup (ctx) < 0
        || ipc_setup (ctx) < 0)
        child_fail (ctx);
    if (confine_msg_recv (ctx->sync_fd, &msg, NULL, false) < 0 || msg.type != CONFINE_MSG_CGROUP)
        _exit (1);
    if (cgroupns_enter (ctx) < 0 || caps_drop_bounding (ctx) < 0 || caps_drop_all (ctx) < 0
        || rlimits_setup (ctx) < 0 || landlock_setup (ctx) < 0 || seccomp_setup (ctx) < 0)
        child_fail (ctx);
    pid_t pid = fork ();
    if (pid < 0) {
        confine_error_set (ctx->error, "pid", errno, "fork the confined process: %s", strerror (errno));
        child_fail (ctx);
    }
    if (pid == 0)
        return confined_finish (ctx, caller_mask);
    /* init keeps only its socket to the waiter. */
    if (fds_close_others (&keep_none, ctx->sync_fd) < 0)
        _exit (1);
    pid_init_run (ctx, pid);
}

static int
refuse (confine_ctx_t *ctx, const sigset_t *old_mask, pid_t child, int sync_fd)
{
    if (child > 0) {
        kill (child, SIGKILL);
        waitpid (child, NULL, 0);
    }
    if (sync_fd >= 0)
        close (sync_fd);
    guard_end (ctx);
    cgroup_cleanup (ctx);
    if (old_mask)
        sigprocmask (SIG_SETMASK, old_mask, NULL);
    confine_report_destroy (&ctx->report);
    return -1;
}

/* C ended before it said why: killed by a seccomp filter from outside
   (systemd's SystemCallFilter= without SystemCallErrorNumber=, a container
   runtime's profile) at its first forbidden call, or by the OOM killer. Its
   wait status is then all there is. Waits for C and reaps it; false when
   it cannot be waited for. */
static bool
setup_ended (confine_ctx_t *ctx, pid_t child)
{
    int status = 0;
    if (waitpid (child, &status, 0) != child)
        return false;
    if (WIFSIGNALED (status) && WTERMSIG (status) == SIGSYS)
        confine_error_set (ctx->error, "setup", 0,
                           "the sandbox ended during setup (signal %d, SIGSYS): a seccomp filter from outside "
                           "kennel forbids a call it needs (systemd: SystemCallFilter= lacks @mount, seccomp, "
                           "landlock_*, sethostname; a container runtime's seccomp profile)", SIGSYS);
    else
        confine_error_set (ctx->error, "setup", 0, "the sandbox ended during setup (%s %d)",
                           WIFSIGNALED (status) ? "signal" : "exit status",
                           WIFSIGNALED (status) ? WTERMSIG (status) : WEXITSTATUS (status));
    return true;
}

/* P: C into its cgroups while C sets up its mounts, then CGROUP. If C
   failed meanwhile (the move then fails too), C's own error names the
   cause. */
static int
move_to_cgroup (confine_ctx_t *ctx, pid_t child)
{
    if (cgroup_attach (ctx, child) == 0 && confine_msg_send (ctx->sync_fd, CONFINE_MSG_CGROUP, 0, NULL) == 0)
        return 0;
    confine_msg_t msg;
    if (confine_msg_recv (ctx->sync_fd, &msg, NULL, true) == 0 && msg.type == CONFINE_MSG_ERROR)
        *ctx->error = msg.error;
    return -1;
}

/* P: host-side steps before the clone. */
static int
prepare_host (confine_ctx_t *ctx)
{
    /* An ignored SIGCHLD survives exec (a parent may set it) and would make
       the kernel reap our children behind our back: the waiter and init
       need to wait for them. */
    signal (SIGCHLD, SIG_DFL);
    if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        confine_error_set (ctx->error, "no_new_privs", errno, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror (errno));
        return -1;
    }
    confine_report_set (ctx->report, CONFINE_LAYER_NO_NEW_PRIVS, CONFINE_ACTIVE,
                        "no_new_privs set: exec cannot gain privileges (setuid bits, file capabilities)");
    if (ctx->root) {
        if (userns_check_subids (ctx) < 0)
            return -1;
        /* Root's supplementary groups (0) must not follow it in: the maps
           deny setgroups inside, so drop them here, in the waiter. */
        if (setgroups (0, NULL) < 0) {
            confine_error_set (ctx->error, "userns", errno, "setgroups(0): %s", strerror (errno));
            return -1;
        }
        if (userns_prepare_dirs (ctx) < 0)
            return -1;
    }
    if (guard_prepare (ctx) < 0)
        return -1;
    return cgroup_prepare (ctx);
}

int
confine_enter (const confine_policy_t *policy, confine_report_t **report_p, confine_error_t *error)
{
    confine_ctx_t ctx;
    memset (&ctx, 0, sizeof ctx);
    ctx.policy = policy;
    ctx.report = confine_report_new ();
    ctx.error = error;
    ctx.root = geteuid () == 0;
    ctx.host_uid = ctx.root ? policy->host_uid : geteuid ();
    ctx.host_gid = ctx.root ? policy->host_gid : getegid ();
    ctx.sync_fd = -1;
    ctx.guard_dir = ctx.guard_pid = -1;
    memset (error, 0, sizeof *error);
    if (prepare_host (&ctx) < 0)
        return refuse (&ctx, NULL, -1, -1);

    int sp[2];
    if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0
        || setsockopt (sp[0], SOL_SOCKET, SO_PASSCRED, &(int) { 1 }, sizeof (int)) < 0) {
        confine_error_set (error, "setup", errno, "socketpair: %s", strerror (errno));
        return refuse (&ctx, NULL, -1, -1);
    }
    sigset_t old_mask;
    pid_block_signals (&old_mask);
    /* One clone for all namespaces; a raw syscall so it behaves like fork. */
    pid_t child = (pid_t) syscall (SYS_clone, SIGCHLD | NS_FLAGS, NULL, NULL, NULL, NULL);
    if (child < 0) {
        userns_clone_failed (&ctx, errno);
        close (sp[1]);
        return refuse (&ctx, &old_mask, -1, sp[0]);
    }
    if (child == 0) {
        close (sp[0]);
        ctx.sync_fd = sp[1];
        int rc = child_main (&ctx, &old_mask);
        *report_p = ctx.report;
        return rc;
    }
    close (sp[1]);
    ctx.sync_fd = sp[0];
    if (userns_write_maps (&ctx, child) < 0 || confine_msg_send (ctx.sync_fd, CONFINE_MSG_GO, 0, NULL) < 0
        || move_to_cgroup (&ctx, child) < 0) {
        /* nothing said why: GO found C's end closed, C is ending (C's own
           error, sent before it exits, is kept when there is one) */
        if (error->stage[0] == 0 && setup_ended (&ctx, child))
            child = -1;
        return refuse (&ctx, &old_mask, child, ctx.sync_fd);
    }

    confine_msg_t msg;
    pid_t confined = 0;
    int rc;
    /* the guard's /dev/fuse fd comes first when /workspace is guarded:
       its server must answer before the sandbox's first look at it */
    while ((rc = confine_msg_recv (ctx.sync_fd, &msg, &confined, false)) == 0 && msg.type == CONFINE_MSG_GUARD)
        if (guard_serve (&ctx, msg.value) < 0)
            return refuse (&ctx, &old_mask, child, ctx.sync_fd);
    if (rc < 0) {
        setup_ended (&ctx, child);
        return refuse (&ctx, &old_mask, -1, ctx.sync_fd);
    }
    if (msg.type == CONFINE_MSG_ERROR) {
        *error = msg.error;
        return refuse (&ctx, &old_mask, child, ctx.sync_fd);
    }
    if (msg.type != CONFINE_MSG_READY || confined <= 0
        || confine_msg_send (ctx.sync_fd, CONFINE_MSG_PID, confined, NULL) < 0) {
        confine_error_set (error, "setup", 0, "unexpected message %d from the sandbox", (int) msg.type);
        return refuse (&ctx, &old_mask, child, ctx.sync_fd);
    }
    confine_report_destroy (&ctx.report);
    pid_waiter_run (&ctx, child, confined);
}
