/*  env.c - the environment of the confined process: a fixed minimal one
    plus what the policy names. Nothing of the caller's environment passes
    (the gateway's secrets stay outside), not even as bytes in memory. */
#include "private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *base_env[][2] = {
    { "PATH", "/usr/local/bin:/usr/bin:/bin" },
    { "SHELL", "/bin/sh" },
    { "HOME", "/workspace" },
    { "USER", "sandbox" },
    { "LOGNAME", "sandbox" },
    { "LANG", "C.UTF-8" },
    { "TERM", "dumb" },
    { "TMPDIR", "/tmp" },
    { "MPLBACKEND", "Agg" },
};

/* clearenv() only drops the pointer array: the inherited strings stay in
   memory, where /proc/self/environ (and any code reading its own memory)
   still finds them. Overwrite them first. */
static void
scrub_inherited (void)
{
    extern char **environ;
    for (char **entry = environ; entry && *entry; entry++)
        explicit_bzero (*entry, strlen (*entry));
}

int
env_setup (confine_ctx_t *ctx)
{
    const confine_policy_t *p = ctx->policy;
    scrub_inherited ();
    if (clearenv () != 0) {
        confine_error_set (ctx->error, "env", ENOMEM, "clearenv failed");
        return -1;
    }
    for (size_t i = 0; i < sizeof base_env / sizeof *base_env; i++)
        setenv (base_env[i][0], base_env[i][1], 1);
    for (size_t i = 0; i < p->env_count; i++) {
        const char *eq = strchr (p->env[i], '=');
        if (!eq)
            continue;
        char name[256];
        size_t len = (size_t) (eq - p->env[i]);
        if (len == 0 || len >= sizeof name)
            continue;
        memcpy (name, p->env[i], len);
        name[len] = 0;
        setenv (name, eq + 1, 1);
    }
    confine_report_set (ctx->report, CONFINE_LAYER_ENV, CONFINE_ACTIVE,
                        "minimal environment (PATH, HOME=/workspace, LANG, TERM, TMPDIR, MPLBACKEND) + %zu from the policy",
                        p->env_count);
    return 0;
}
