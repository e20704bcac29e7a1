/*  pid.c - the two supervisors: init inside the pid namespace, and the
    waiter outside.

    init (pid 1 inside): reaps every zombie (orphans of daemonized code are
    re-parented to it), forwards termination signals to the confined
    process, and when that process ends sends its wait status to the
    waiter and exits, which makes the kernel kill whatever is left in the
    namespace. pid 1 only receives signals it has a handler for, so the
    forwarded ones get a no-op handler and are taken with sigwaitinfo.

    The waiter (the caller's original process): forwards the same signals to
    the confined process, reaps init, removes the cgroup, runs the policy's
    on_exit hook and ends the way the confined process ended (exit code, or
    the same signal re-raised, with core dumps off). */
#include "private.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const int forwarded[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM };

static void
noop_handler (int sig)
{
    (void) sig;
}

static void
wait_set (sigset_t *set)
{
    sigemptyset (set);
    sigaddset (set, SIGCHLD);
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaddset (set, forwarded[i]);
}

void
pid_block_signals (sigset_t *old)
{
    sigset_t set;
    wait_set (&set);
    sigprocmask (SIG_BLOCK, &set, old);
}

/* Takes the signals of set (blocked) one by one, passing every one but
   SIGCHLD on to child, and returns when SIGCHLD comes. */
static void
forward_until_sigchld (const sigset_t *set, pid_t child)
{
    for (;;) {
        siginfo_t info;
        int sig = sigwaitinfo (set, &info);
        if (sig == SIGCHLD)
            return;
        if (sig > 0)
            kill (child, sig);
    }
}

_Noreturn void
pid_init_run (confine_ctx_t *ctx, pid_t child)
{
    sigset_t set;
    wait_set (&set);
    struct sigaction sa = { .sa_handler = noop_handler };
    sigemptyset (&sa.sa_mask);
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember (&set, sig))
            sigaction (sig, &sa, NULL);
    for (;;) {
        forward_until_sigchld (&set, child);
        int status;
        pid_t pid;
        while ((pid = waitpid (-1, &status, WNOHANG)) > 0) {
            if (pid != child)
                continue;
            confine_msg_send (ctx->sync_fd, CONFINE_MSG_EXIT, status, NULL);
            _exit (0);
        }
    }
}

int
confine_die_by_signal (int sig)
{
    struct rlimit none = { 0, 0 };
    setrlimit (RLIMIT_CORE, &none);
    signal (sig, SIG_DFL);
    sigset_t set;
    sigemptyset (&set);
    sigaddset (&set, sig);
    sigprocmask (SIG_UNBLOCK, &set, NULL);
    raise (sig);
    return 128 + sig;
}

_Noreturn static void
end_like (int status)
{
    if (WIFSIGNALED (status))
        exit (confine_die_by_signal (WTERMSIG (status)));
    exit (WIFEXITED (status) ? WEXITSTATUS (status) : 1);
}

_Noreturn void
pid_waiter_run (confine_ctx_t *ctx, pid_t init, pid_t child)
{
    sigset_t set;
    wait_set (&set);
    for (;;) {
        forward_until_sigchld (&set, child);
        int init_status;
        pid_t pid = waitpid (init, &init_status, WNOHANG);
        if (pid != init)
            continue;
        /* init reports the confined process's status; without a report
           (init was killed, e.g. by the OOM killer) its own status is the
           best we know. */
        int status = init_status;
        confine_msg_t msg;
        while (confine_msg_recv (ctx->sync_fd, &msg, NULL, true) == 0)
            if (msg.type == CONFINE_MSG_EXIT)
                status = msg.value;
        close (ctx->sync_fd);
        guard_end (ctx);
        cgroup_cleanup (ctx);
        if (ctx->policy->on_exit)
            ctx->policy->on_exit (status, ctx->policy->on_exit_arg);
        end_like (status);
    }
}
