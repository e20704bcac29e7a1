/*  no_userns.c - simulates a host that forbids user namespaces (as Docker's
    default seccomp profile or kernel.unprivileged_userns_clone=0 do): a
    seccomp filter makes clone/unshare with CLONE_NEWUSER fail with EPERM
    (clone3 with ENOSYS, so callers fall back to clone), then execs argv.

        no_userns PROGRAM [ARGS...] */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int
main (int argc, char **argv)
{
    if (argc < 2) {
        fprintf (stderr, "usage: no_userns PROGRAM [ARGS...]\n");
        return 2;
    }
    scmp_filter_ctx filter = seccomp_init (SCMP_ACT_ALLOW);
    if (!filter
        || seccomp_rule_add (filter, SCMP_ACT_ERRNO (EPERM), SCMP_SYS (clone), 1,
                             SCMP_A0 (SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)) < 0
        || seccomp_rule_add (filter, SCMP_ACT_ERRNO (EPERM), SCMP_SYS (unshare), 1,
                             SCMP_A0 (SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)) < 0
        || seccomp_rule_add (filter, SCMP_ACT_ERRNO (ENOSYS), SCMP_SYS (clone3), 0) < 0
        || prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_load (filter) < 0) {
        fprintf (stderr, "no_userns: cannot install the filter\n");
        return 2;
    }
    seccomp_release (filter);
    execv (argv[1], argv + 1);
    fprintf (stderr, "no_userns: exec %s: %s\n", argv[1], strerror (errno));
    return 127;
}
