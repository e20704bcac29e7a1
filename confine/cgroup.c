/*  cgroup.c - memory, pids and cpu limits for the whole sandbox.

    The waiter makes one cgroup per sandbox below its own cgroup, writes
    the limits and moves the child in before the child runs any setup (so
    nothing inside ever runs unlimited). cgroup v2: needs a delegated,
    writable subtree with the controllers enabled (systemd Delegate=yes).
    cgroup v1: needs root (v1 cannot be delegated safely). Without either,
    the layer fails, and degrades only when the policy allows "cgroup";
    rlimits still apply then. The child enters a cgroup namespace after it
    was moved, so it sees its own cgroup as the root. */
#include "private.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static const char *v1_controllers[CONFINE_CGROUP_CONTROLLERS] = { "memory", "pids", "cpu" };

/* Our own cgroup path in the hierarchy that has controller ("" = v2). */
static int
own_cgroup (const char *controller, char *out, size_t outlen)
{
    FILE *f = fopen ("/proc/self/cgroup", "re");
    if (!f)
        return -1;
    char line[1024];
    int rc = -1;
    while (fgets (line, sizeof line, f)) {
        line[strcspn (line, "\n")] = 0;
        char *names = strchr (line, ':');
        char *path = names ? strchr (names + 1, ':') : NULL;
        if (!path)
            continue;
        *path++ = 0;
        names++;
        bool match = false;
        if (!*controller)
            match = strcmp (line, "0") == 0 && !*names;
        else
            for (char *save = NULL, *tok = strtok_r (names, ",", &save); tok; tok = strtok_r (NULL, ",", &save))
                match |= strcmp (tok, controller) == 0;
        if (match) {
            snprintf (out, outlen, "%s", strcmp (path, "/") == 0 ? "" : path);
            rc = 0;
            break;
        }
    }
    fclose (f);
    return rc;
}

static int
write_limit (const char *dir, const char *file, const char *value, bool optional)
{
    char path[PATH_MAX + 64];
    snprintf (path, sizeof path, "%s/%s", dir, file);
    if (confine_write_file (path, value) == 0 || (optional && errno == ENOENT))
        return 0;
    return -1;
}

static void
remove_dirs (confine_ctx_t *ctx)
{
    for (int i = 0; i < CONFINE_CGROUP_CONTROLLERS; i++) {
        if (!ctx->cgroup_dirs[i][0])
            continue;
        /* The last tasks may still be leaving: retry briefly on EBUSY. */
        for (int tries = 0; tries < 100 && rmdir (ctx->cgroup_dirs[i]) < 0 && errno == EBUSY; tries++)
            nanosleep (&(struct timespec) { 0, 10 * 1000 * 1000 }, NULL);
        ctx->cgroup_dirs[i][0] = 0;
    }
}

/* mkdir of our cgroup. Its name carries our pid, so an existing one was
   left by an earlier launcher with the same pid that was SIGKILLed before
   it could clean up: its tasks are gone with that sandbox, remove it. */
static int
make_cgroup (char *dir)
{
    if (mkdir (dir, 0755) == 0)
        return 0;
    if (errno != EEXIST || rmdir (dir) < 0)
        return -1;
    return mkdir (dir, 0755);
}

/* Removes cgroups "kennel-<pid>" beside ours whose launcher is gone (the
   waiter was SIGKILLed, so it could not). rmdir fails on one in use. */
static void
remove_stale (const char *parent)
{
    DIR *d = opendir (parent);
    struct dirent *entry;
    while (d && (entry = readdir (d))) {
        int pid;
        char tail;
        if (sscanf (entry->d_name, "kennel-%d%c", &pid, &tail) != 1 || pid <= 0)
            continue;
        if (kill (pid, 0) < 0 && errno == ESRCH) {
            char path[PATH_MAX];
            snprintf (path, sizeof path, "%s/%s", parent, entry->d_name);
            rmdir (path);
        }
    }
    if (d)
        closedir (d);
}

static int
limits_failed (confine_ctx_t *ctx, const char *what, const char *path, int err, const char *hint)
{
    remove_dirs (ctx);
    return confine_layer_fail (ctx, CONFINE_LAYER_CGROUP, CONFINE_UNSUPPORTED, err,
                               "%s %s: %s; %s; memory is then bounded by rlimits only",
                               what, path, strerror (err), hint);
}

static int
prepare_v1 (confine_ctx_t *ctx)
{
    const confine_policy_t *p = ctx->policy;
    char own[PATH_MAX / 2], value[64];
    for (int i = 0; i < CONFINE_CGROUP_CONTROLLERS; i++) {
        if (own_cgroup (v1_controllers[i], own, sizeof own) < 0)
            return limits_failed (ctx, "find controller", v1_controllers[i], ENOENT,
                                  "mount the cgroup v1 memory, pids and cpu controllers");
        char parent[PATH_MAX / 2 + 32];
        snprintf (parent, sizeof parent, "/sys/fs/cgroup/%s%s", v1_controllers[i], own);
        remove_stale (parent);
        char *dir = ctx->cgroup_dirs[i];
        snprintf (dir, PATH_MAX, "%s/kennel-%d", parent, (int) getpid ());
        if (make_cgroup (dir) < 0) {
            int err = errno;
            dir[0] = 0;
            return limits_failed (ctx, "cgroup v1: mkdir in", parent, err,
                                  "cgroup v1 limits need root (start as root, or use a host with cgroup v2 delegation)");
        }
    }
    const char *mem = ctx->cgroup_dirs[0], *pids = ctx->cgroup_dirs[1], *cpu = ctx->cgroup_dirs[2];
    if (p->memory_bytes) {
        snprintf (value, sizeof value, "%llu", (unsigned long long) p->memory_bytes);
        if (write_limit (mem, "memory.limit_in_bytes", value, false) < 0
            || write_limit (mem, "memory.memsw.limit_in_bytes", value, true) < 0)
            return limits_failed (ctx, "write memory limit in", mem, errno, "check the memory controller");
    }
    if (p->pids) {
        snprintf (value, sizeof value, "%llu", (unsigned long long) p->pids);
        if (write_limit (pids, "pids.max", value, false) < 0)
            return limits_failed (ctx, "write pids.max in", pids, errno, "check the pids controller");
    }
    if (p->cpus > 0) {
        snprintf (value, sizeof value, "%lld", (long long) (p->cpus * 100000));
        if (write_limit (cpu, "cpu.cfs_period_us", "100000", false) < 0
            || write_limit (cpu, "cpu.cfs_quota_us", value, false) < 0)
            return limits_failed (ctx, "write cpu quota in", cpu, errno, "check the cpu controller (CFS bandwidth)");
    }
    confine_report_set (ctx->report, CONFINE_LAYER_CGROUP, CONFINE_ACTIVE,
                        "cgroup v1 (as root): memory %llu B, pids %llu, cpus %.2f in %s",
                        (unsigned long long) p->memory_bytes, (unsigned long long) p->pids, p->cpus, mem);
    return 0;
}

static int
prepare_v2 (confine_ctx_t *ctx)
{
    const confine_policy_t *p = ctx->policy;
    char own[PATH_MAX / 2], parent[PATH_MAX / 2 + 32], value[64];
    if (own_cgroup ("", own, sizeof own) < 0)
        return limits_failed (ctx, "read", "/proc/self/cgroup", ENOENT, "no cgroup v2 entry");
    snprintf (parent, sizeof parent, "/sys/fs/cgroup%s", own);
    /* Enabling controllers for children fails with EBUSY while processes
       live in the parent itself ("no internal processes"); a delegated
       setup puts the gateway in a leaf and enables them once. */
    if (write_limit (parent, "cgroup.subtree_control", "+memory +pids +cpu", false) < 0) {
        return limits_failed (ctx, "cgroup v2: enable +memory +pids +cpu in", parent, errno,
                              "run the gateway in a delegated cgroup (systemd Delegate=yes) whose "
                              "controllers are enabled for children");
    }
    remove_stale (parent);
    char *dir = ctx->cgroup_dirs[0];
    snprintf (dir, PATH_MAX, "%s/kennel-%d", parent, (int) getpid ());
    if (make_cgroup (dir) < 0) {
        int err = errno;
        dir[0] = 0;
        return limits_failed (ctx, "cgroup v2: mkdir in", parent, err, "delegate a writable cgroup subtree");
    }
    if (p->memory_bytes) {
        snprintf (value, sizeof value, "%llu", (unsigned long long) p->memory_bytes);
        if (write_limit (dir, "memory.max", value, false) < 0 || write_limit (dir, "memory.swap.max", "0", true) < 0
            || write_limit (dir, "memory.oom.group", "1", true) < 0)
            return limits_failed (ctx, "write memory.max in", dir, errno, "check the memory controller");
    }
    if (p->pids) {
        snprintf (value, sizeof value, "%llu", (unsigned long long) p->pids);
        if (write_limit (dir, "pids.max", value, false) < 0)
            return limits_failed (ctx, "write pids.max in", dir, errno, "check the pids controller");
    }
    if (p->cpus > 0) {
        snprintf (value, sizeof value, "%lld 100000", (long long) (p->cpus * 100000));
        if (write_limit (dir, "cpu.max", value, false) < 0)
            return limits_failed (ctx, "write cpu.max in", dir, errno, "check the cpu controller");
    }
    confine_report_set (ctx->report, CONFINE_LAYER_CGROUP, CONFINE_ACTIVE,
                        "cgroup v2: memory %llu B, pids %llu, cpus %.2f in %s",
                        (unsigned long long) p->memory_bytes, (unsigned long long) p->pids, p->cpus, dir);
    return 0;
}

int
cgroup_prepare (confine_ctx_t *ctx)
{
    const confine_policy_t *p = ctx->policy;
    if (!p->memory_bytes && !p->pids && p->cpus <= 0) {
        confine_report_set (ctx->report, CONFINE_LAYER_CGROUP, CONFINE_ACTIVE, "no cgroup limits requested");
        return 0;
    }
    struct statfs fs;
    if (statfs ("/sys/fs/cgroup", &fs) < 0)
        return limits_failed (ctx, "statfs", "/sys/fs/cgroup", errno, "mount cgroup2 on /sys/fs/cgroup");
    if (fs.f_type == CGROUP2_SUPER_MAGIC)
        return prepare_v2 (ctx);
    if (!ctx->root)
        return limits_failed (ctx, "cgroup v1 hierarchy at", "/sys/fs/cgroup", EPERM,
                              "cgroup v1 cannot be delegated: start as root, or use a host with cgroup v2 delegation");
    return prepare_v1 (ctx);
}

int
cgroup_attach (confine_ctx_t *ctx, pid_t pid)
{
    char value[32];
    snprintf (value, sizeof value, "%d", (int) pid);
    for (int i = 0; i < CONFINE_CGROUP_CONTROLLERS; i++) {
        if (!ctx->cgroup_dirs[i][0])
            continue;
        if (write_limit (ctx->cgroup_dirs[i], "cgroup.procs", value, false) < 0) {
            int err = errno;
            confine_error_set (ctx->error, "cgroup", err, "move pid %d into %s/cgroup.procs: %s",
                               (int) pid, ctx->cgroup_dirs[i], strerror (err));
            return -1;
        }
    }
    return 0;
}

/* How many processes the memory limit killed (v1 memory.oom_control,
   v2 memory.events: "oom_kill N"); -1 when neither file has that count. */
static long
oom_kills (const char *dir)
{
    const char *files[] = { "memory.events", "memory.oom_control" };
    for (size_t i = 0; i < 2; i++) {
        char path[PATH_MAX + 32], line[128];
        snprintf (path, sizeof path, "%s/%s", dir, files[i]);
        FILE *f = fopen (path, "re");
        if (!f)
            continue;
        long n = -1;
        while (fgets (line, sizeof line, f))
            if (sscanf (line, "oom_kill %ld", &n) == 1)
                break;
        fclose (f);
        return n;
    }
    return -1;
}

/* The waiter's last reading, for confine_oom_kills: its cgroup is gone by
   the time the policy's on_exit hook runs. One sandbox per process. */
static long s_oom_kills = -1;

long
confine_oom_kills (void)
{
    return s_oom_kills;
}

void
cgroup_cleanup (confine_ctx_t *ctx)
{
    /* The only place the cause of a SIGKILL is known: kept for on_exit. */
    if (ctx->cgroup_dirs[0][0] && ctx->policy->memory_bytes)
        s_oom_kills = oom_kills (ctx->cgroup_dirs[0]);
    remove_dirs (ctx);
}

int
cgroupns_enter (confine_ctx_t *ctx)
{
    if (unshare (CLONE_NEWCGROUP) < 0) {
        int err = errno;
        return confine_layer_fail (ctx, CONFINE_LAYER_CGROUPNS, CONFINE_UNSUPPORTED, err,
                                   "unshare(CLONE_NEWCGROUP): %s; the kernel lacks CONFIG_CGROUPS namespaces",
                                   strerror (err));
    }
    confine_report_set (ctx->report, CONFINE_LAYER_CGROUPNS, CONFINE_ACTIVE,
                        "own cgroup namespace: the sandbox's cgroup is its root");
    return 0;
}
