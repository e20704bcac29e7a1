/*  uts.c - the UTS namespace: the sandbox's own hostname. */
#include "private.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int
uts_setup (confine_ctx_t *ctx)
{
    const char *name = ctx->policy->hostname;
    if (sethostname (name, strlen (name)) < 0 || setdomainname ("", 0) < 0) {
        int err = errno;
        confine_error_set (ctx->error, "uts", err, "sethostname(\"%s\"): %s", name, strerror (err));
        return -1;
    }
    confine_report_set (ctx->report, CONFINE_LAYER_UTS, CONFINE_ACTIVE, "own UTS namespace, hostname \"%s\"", name);
    return 0;
}
