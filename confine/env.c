/*  env.c - the environment of the confined process: a fixed minimal one
    plus what the policy names. Nothing of the caller's environment passes
    (the gateway's secrets stay outside), not even as bytes in memory; nor
    does its command line (the install path, a policy or spec path), which
    /proc/PID/cmdline would show for init and a built-in kernel. */
#include "private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TITLE "kennel-launch"

static const char *base_env[][2] = {
    { "PATH", "/usr/local/bin:/usr/bin:/bin" },
    { "SHELL", "/bin/sh" },
    { "HOME", CONFINE_WORKSPACE_DIR },
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

/* arg_start and arg_end of this process (fields 48 and 49 of
   /proc/self/stat; the fields after the ")" that ends comm start at 3). */
static int
args_area (char **start, char **end)
{
    char buf[2048];
    FILE *f = fopen ("/proc/self/stat", "re");
    size_t n = f ? fread (buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose (f);
    buf[n] = 0;
    char *field = strrchr (buf, ')');
    unsigned long values[2] = { 0, 0 };
    char *save = NULL;
    int index = 3;
    for (char *tok = field ? strtok_r (field + 1, " ", &save) : NULL; tok && index <= 49;
         tok = strtok_r (NULL, " ", &save), index++)
        if (index >= 48)
            values[index - 48] = strtoul (tok, NULL, 10);
    *start = (char *) values[0];
    *end = (char *) values[1];
    return values[0] && values[1] > values[0] ? 0 : -1;
}

/* The caller's argv strings are overwritten in place with TITLE. The last
   byte stays non-zero: the kernel then reads the command line only up to
   the first NUL (its setproctitle rule), so it is exactly TITLE. The caller
   copies what it needs from argv before confining (kennel-launch does). */
static void
scrub_args (void)
{
    char *start, *end;
    if (args_area (&start, &end) < 0 || (size_t) (end - start) < 3)
        return;
    size_t len = (size_t) (end - start), title = strlen (TITLE);
    if (title > len - 2)
        title = len - 2;
    explicit_bzero (start, len);
    memcpy (start, TITLE, title);
    end[-1] = ' ';
}

int
confine_env_reset (void)
{
    if (clearenv () != 0)
        return -1;
    for (size_t i = 0; i < sizeof base_env / sizeof *base_env; i++)
        setenv (base_env[i][0], base_env[i][1], 1);
    return 0;
}

int
env_setup (confine_ctx_t *ctx)
{
    const confine_policy_t *p = ctx->policy;
    scrub_inherited ();
    scrub_args ();
    if (confine_env_reset () < 0) {
        confine_error_set (ctx->error, "env", ENOMEM, "clearenv failed");
        return -1;
    }
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
                        "minimal environment (PATH, HOME=" CONFINE_WORKSPACE_DIR ", LANG, TERM, TMPDIR, MPLBACKEND) + %zu from the policy",
                        p->env_count);
    return 0;
}
