/*  rlimits.c - per-process limits, soft = hard so the sandbox can only
    lower them. RLIMIT_DATA rather than RLIMIT_AS: AS counts reservations
    (thread stacks, malloc arenas) and stops threads long before memory is
    used. RLIMIT_NPROC counts per (user namespace, uid) since Linux 5.14,
    so with a fresh user namespace it is a per-sandbox thread limit. */
#include "private.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* AddressSanitizer maps terabytes of shadow memory as private writable
   memory, which RLIMIT_DATA counts: set as is, every later mmap of the
   sanitized process would fail. Sanitizer builds therefore allow the data
   limit on top of what is mapped already (the growth stays bounded), and
   the exact limit is set right before exec (confine_exec_limits), when
   the new image has no shadow. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

int
confine_exec_limits (const confine_policy_t *policy)
{
    if (!policy->rlimit_data)
        return 0;
    struct rlimit rl = { policy->rlimit_data, policy->rlimit_data };
    return setrlimit (RLIMIT_DATA, &rl);
}

/* VmData of this process in bytes, 0 if unknown. */
static uint64_t
current_data (void)
{
    FILE *f = fopen ("/proc/self/status", "re");
    unsigned long long kib = 0;
    char line[256];
    while (f && fgets (line, sizeof line, f))
        if (sscanf (line, "VmData: %llu", &kib) == 1)
            break;
    if (f)
        fclose (f);
    return (uint64_t) kib * 1024;
}

int
rlimits_setup (confine_ctx_t *ctx)
{
    const confine_policy_t *p = ctx->policy;
    const struct { int resource; const char *name; uint64_t value; bool always; } limits[] = {
        { RLIMIT_NOFILE, "nofile", p->rlimit_nofile, false },
        { RLIMIT_FSIZE, "fsize", p->rlimit_fsize, false },
        { RLIMIT_NPROC, "nproc", p->rlimit_nproc, false },
        { RLIMIT_STACK, "stack", p->rlimit_stack, false },
        { RLIMIT_DATA, "data", SANITIZED && p->rlimit_data ? current_data () + p->rlimit_data : p->rlimit_data, false },
        { RLIMIT_CORE, "core", p->rlimit_core, true },
        { RLIMIT_CPU, "cpu", p->rlimit_cpu, false },
        { RLIMIT_MEMLOCK, "memlock", 64 * 1024, true },
        { RLIMIT_RTPRIO, "rtprio", 0, true },
    };
    char summary[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        if (!limits[i].value && !limits[i].always)
            continue;
        struct rlimit rl = { limits[i].value, limits[i].value };
        if (setrlimit (limits[i].resource, &rl) < 0) {
            int err = errno;
            char lower[128] = "";
            if (!limits[i].always)
                snprintf (lower, sizeof lower, ", or lower the policy's rlimits.%s (the gateway config's "
                          "\"confine\": {\"rlimits\": {\"%s\": N}})", limits[i].name, limits[i].name);
            char upper[16];
            size_t n = 0;
            for (; limits[i].name[n] && n < sizeof upper - 1; n++)
                upper[n] = (char) (limits[i].name[n] - 'a' + 'A');
            upper[n] = 0;
            confine_error_set (ctx->error, "rlimits", err, "setrlimit(RLIMIT_%s, %llu): %s (a hard limit "
                               "inherited from the caller is lower: raise the caller's, with ulimit -H or "
                               "systemd's Limit%s=%s)", upper, (unsigned long long) limits[i].value,
                               strerror (err), upper, lower);
            return -1;
        }
        if (used < sizeof summary)
            used += (size_t) snprintf (summary + used, sizeof summary - used, "%s%s=%llu", used ? " " : "",
                                       limits[i].name, (unsigned long long) limits[i].value);
    }
    if (SANITIZED && p->rlimit_data && used < sizeof summary)
        snprintf (summary + used, sizeof summary - used, " (sanitizer build: %llu on top of its shadow memory "
                  "in-process, exact from exec on)", (unsigned long long) p->rlimit_data);
    confine_report_set (ctx->report, CONFINE_LAYER_RLIMITS, CONFINE_ACTIVE, "%s", summary);
    return 0;
}
