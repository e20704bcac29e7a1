/*  fds.c - only the named file descriptors enter the sandbox: 0, 1, 2 and
    the policy's keep_fds. Everything else inherited from the caller (a
    leaked directory fd is an escape: runc CVE-2024-21626) is closed. */
#include "private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
cmp_int (const void *a, const void *b)
{
    return *(const int *) a - *(const int *) b;
}

int
fds_close_others (const confine_policy_t *policy, int keep)
{
    int kept[20];
    size_t n = 0;
    for (size_t i = 0; i < policy->keep_fd_count && n < 19; i++)
        if (policy->keep_fds[i] > 2)
            kept[n++] = policy->keep_fds[i];
    if (keep > 2)
        kept[n++] = keep;
    qsort (kept, n, sizeof *kept, cmp_int);
    unsigned lo = 3;
    for (size_t i = 0; i < n; i++) {
        if ((unsigned) kept[i] > lo && close_range (lo, (unsigned) kept[i] - 1, 0) < 0)
            return -1;
        lo = (unsigned) kept[i] + 1;
    }
    return close_range (lo, ~0U, 0);
}

int
fds_setup (confine_ctx_t *ctx)
{
    if (fds_close_others (ctx->policy, -1) < 0) {
        int err = errno;
        confine_error_set (ctx->error, "fds", err, "close_range: %s (needs Linux 5.9)", strerror (err));
        return -1;
    }
    confine_report_set (ctx->report, CONFINE_LAYER_FDS, CONFINE_ACTIVE,
                        "only fds 0, 1, 2 and %zu named by the policy are open", ctx->policy->keep_fd_count);
    return 0;
}
