/*  waiter.c - what the launcher's waiter (the process that stays outside
    the sandbox) does besides confine's own work: from a launch spec, the
    log pump before confinement; when the sandbox ended, the kernel's last
    output logged, the memory limit's kills said, and the "ended" line on
    the status fd (README.md). */
#include "launch.h"

#include <signal.h>
#include <stdio.h>

/* What the waiter (outside) says once the sandbox ended. */
static struct {
    int status_fd;                  /* a spec's: the "ended" line goes there; -1 */
    unsigned long long memory_bytes;
} s_waiter = { -1, 0 };

/* policy->on_exit: the launcher's own fds back (the kernel's last output
   logged first), the memory limit's kills said on stderr, then the
   "ended" line for the gateway, which tells an OOM kill from any other
   SIGKILL by it. */
static void
waiter_exit (int wait_status, void *arg)
{
    (void) arg;
    /* a reader gone (the gateway stopped) must not change how we end */
    signal (SIGPIPE, SIG_IGN);
    launch_logpump_finish ();
    long kills = confine_oom_kills ();
    if (kills > 0)
        fprintf (stderr, "kennel-launch: the sandbox reached its memory limit (%llu bytes): %ld process(es) "
                 "killed by the OOM killer\n", s_waiter.memory_bytes, kills);
    launch_status_ended (s_waiter.status_fd, wait_status, kills, s_waiter.memory_bytes);
}

int
launch_waiter_prepare (confine_policy_t *policy, const launch_kernel_t *kernel, int status_fd)
{
    s_waiter.memory_bytes = policy->memory_bytes;
    policy->on_exit = waiter_exit;
    if (!kernel->from_spec)
        return 0;
    s_waiter.status_fd = status_fd > 2 ? status_fd : -1;
    return launch_logpump_start ();
}
