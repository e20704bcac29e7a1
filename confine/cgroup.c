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

/* The inode of our pid namespace, which every cgroup name of ours
   carries beside our pid: a pid means something only in its namespace.
   Gateways in other pid namespaces (containers given the host's
   /sys/fs/cgroup, a gateway as a container's PID 1) share the cgroup tree
   and may make cgroups beside ours; 0 when /proc cannot tell. */
static unsigned long
pid_namespace (void)
{
    struct stat st;
    return stat ("/proc/self/ns/pid", &st) == 0 ? (unsigned long) st.st_ino : 0;
}

/* Our cgroup's name: "kennel-p<pid namespace>-<pid>" for a sandbox,
   "...-<serial>" when serial is not 0 (confine_cgroup_new's). */
static void
cgroup_name (char *out, size_t size, unsigned serial)
{
    int n = snprintf (out, size, "kennel-p%lu-%d", pid_namespace (), (int) getpid ());
    if (serial && n > 0 && (size_t) n < size)
        snprintf (out + n, size - n, "-%u", serial);
}

/* Whether a cgroup beside ours was made by a process of our pid namespace
   that is gone (a waiter or a gateway SIGKILLed, so it could not remove
   it). One named by another namespace's process is never ours to judge:
   its pid may be alive there, between its mkdir and its move into it
   (the cgroup still empty, so rmdir would take it). "kennel-<pid>", the
   names of older versions, are judged by the pid alone, as they were. */
static bool
stale (const char *name, unsigned long ns)
{
    unsigned long their_ns;
    int pid;
    unsigned serial;
    char tail;
    int got = sscanf (name, "kennel-p%lu-%d-%u%c", &their_ns, &pid, &serial, &tail);
    if (got == 2 || got == 3) {
        if (their_ns != ns || ns == 0)
            return false;
    }
    else if (sscanf (name, "kennel-%d%c", &pid, &tail) != 1)
        return false;
    return pid > 0 && kill (pid, 0) < 0 && errno == ESRCH;
}

/* Removes the cgroups beside ours that stale() says were left behind.
   rmdir fails on one in use. */
static void
remove_stale (const char *parent)
{
    unsigned long ns = pid_namespace ();
    DIR *d = opendir (parent);
    struct dirent *entry;
    while (d && (entry = readdir (d))) {
        if (stale (entry->d_name, ns)) {
            char path[PATH_MAX];
            snprintf (path, sizeof path, "%s/%s", parent, entry->d_name);
            rmdir (path);
        }
    }
    if (d)
        closedir (d);
}

/* Why a cgroup could not be made: the step, its path, the errno and the
   host setting to change. One sentence for the sandbox's layer report and
   for a caller's own cgroup (confine_cgroup_new). */
typedef struct {
    const char *what;
    char path[PATH_MAX];
    int err;
    const char *hint;
} cg_failure_t;

typedef struct {
    uint64_t memory_bytes, pids;
    double cpus;
} cg_limits_t;

static int
cg_fail (cg_failure_t *why, const char *what, const char *path, int err, const char *hint)
{
    why->what = what;
    snprintf (why->path, sizeof why->path, "%s", path);
    why->err = err;
    why->hint = hint;
    return -1;
}

static void
cg_remove_dirs (char (*dirs)[PATH_MAX])
{
    for (int i = 0; i < CONFINE_CGROUP_CONTROLLERS; i++) {
        if (!dirs[i][0])
            continue;
        /* The last tasks may still be leaving: retry briefly on EBUSY. */
        for (int tries = 0; tries < 100 && rmdir (dirs[i]) < 0 && errno == EBUSY; tries++)
            nanosleep (&(struct timespec) { 0, 10 * 1000 * 1000 }, NULL);
        dirs[i][0] = 0;
    }
}

/* v1: one directory per controller hierarchy (memory, pids, and cpu when a
   quota is asked for). */
static int
cg_make_v1 (char (*dirs)[PATH_MAX], const char *name, const cg_limits_t *lim, cg_failure_t *why, char *desc,
            size_t desclen)
{
    char own[PATH_MAX / 2], value[64];
    for (int i = 0; i < CONFINE_CGROUP_CONTROLLERS; i++) {
        if (i == 2 && lim->cpus <= 0)
            continue;
        if (own_cgroup (v1_controllers[i], own, sizeof own) < 0)
            return cg_fail (why, "find controller", v1_controllers[i], ENOENT,
                            "mount the cgroup v1 memory, pids and cpu controllers");
        char parent[PATH_MAX / 2 + 32];
        snprintf (parent, sizeof parent, "/sys/fs/cgroup/%s%s", v1_controllers[i], own);
        remove_stale (parent);
        snprintf (dirs[i], PATH_MAX, "%s/%s", parent, name);
        if (make_cgroup (dirs[i]) < 0) {
            dirs[i][0] = 0;
            return cg_fail (why, "cgroup v1: mkdir in", parent, errno,
                            "cgroup v1 limits need root (start as root, or use a host with cgroup v2 delegation)");
        }
    }
    const char *mem = dirs[0], *pids = dirs[1], *cpu = dirs[2];
    if (lim->memory_bytes) {
        snprintf (value, sizeof value, "%llu", (unsigned long long) lim->memory_bytes);
        if (write_limit (mem, "memory.limit_in_bytes", value, false) < 0
            || write_limit (mem, "memory.memsw.limit_in_bytes", value, true) < 0)
            return cg_fail (why, "write memory limit in", mem, errno, "check the memory controller");
    }
    if (lim->pids) {
        snprintf (value, sizeof value, "%llu", (unsigned long long) lim->pids);
        if (write_limit (pids, "pids.max", value, false) < 0)
            return cg_fail (why, "write pids.max in", pids, errno, "check the pids controller");
    }
    if (lim->cpus > 0) {
        snprintf (value, sizeof value, "%lld", (long long) (lim->cpus * 100000));
        if (write_limit (cpu, "cpu.cfs_period_us", "100000", false) < 0
            || write_limit (cpu, "cpu.cfs_quota_us", value, false) < 0)
            return cg_fail (why, "write cpu quota in", cpu, errno, "check the cpu controller (CFS bandwidth)");
    }
    snprintf (desc, desclen, "cgroup v1 (as root): memory %llu B, pids %llu, cpus %.2f in %s",
              (unsigned long long) lim->memory_bytes, (unsigned long long) lim->pids, lim->cpus, mem);
    return 0;
}

static int
cg_make_v2 (char (*dirs)[PATH_MAX], const char *name, const cg_limits_t *lim, cg_failure_t *why, char *desc,
            size_t desclen)
{
    char own[PATH_MAX / 2], parent[PATH_MAX / 2 + 32], value[64];
    if (own_cgroup ("", own, sizeof own) < 0)
        return cg_fail (why, "read", "/proc/self/cgroup", ENOENT, "no cgroup v2 entry");
    snprintf (parent, sizeof parent, "/sys/fs/cgroup%s", own);
    /* Enabling controllers for children fails with EBUSY while processes
       live in the parent itself ("no internal processes"); a delegated
       setup puts the gateway in a leaf and enables them once. */
    if (write_limit (parent, "cgroup.subtree_control", lim->cpus > 0 ? "+memory +pids +cpu" : "+memory +pids", false)
        < 0)
        return cg_fail (why, lim->cpus > 0 ? "cgroup v2: enable +memory +pids +cpu in" : "cgroup v2: enable +memory +pids in",
                        parent, errno,
                        "run the gateway in a delegated cgroup (systemd Delegate=yes) whose "
                        "controllers are enabled for children");
    remove_stale (parent);
    char *dir = dirs[0];
    snprintf (dir, PATH_MAX, "%s/%s", parent, name);
    if (make_cgroup (dir) < 0) {
        dir[0] = 0;
        return cg_fail (why, "cgroup v2: mkdir in", parent, errno, "delegate a writable cgroup subtree");
    }
    if (lim->memory_bytes) {
        snprintf (value, sizeof value, "%llu", (unsigned long long) lim->memory_bytes);
        if (write_limit (dir, "memory.max", value, false) < 0 || write_limit (dir, "memory.swap.max", "0", true) < 0
            || write_limit (dir, "memory.oom.group", "1", true) < 0)
            return cg_fail (why, "write memory.max in", dir, errno, "check the memory controller");
    }
    if (lim->pids) {
        snprintf (value, sizeof value, "%llu", (unsigned long long) lim->pids);
        if (write_limit (dir, "pids.max", value, false) < 0)
            return cg_fail (why, "write pids.max in", dir, errno, "check the pids controller");
    }
    if (lim->cpus > 0) {
        snprintf (value, sizeof value, "%lld 100000", (long long) (lim->cpus * 100000));
        if (write_limit (dir, "cpu.max", value, false) < 0)
            return cg_fail (why, "write cpu.max in", dir, errno, "check the cpu controller");
    }
    snprintf (desc, desclen, "cgroup v2: memory %llu B, pids %llu, cpus %.2f in %s",
              (unsigned long long) lim->memory_bytes, (unsigned long long) lim->pids, lim->cpus, dir);
    return 0;
}

/* A cgroup named name below our own with lim, in dirs (what was made is
   removed again on failure). cgroup v1 needs root: it cannot be delegated. */
static int
cg_make (char (*dirs)[PATH_MAX], const char *name, const cg_limits_t *lim, bool root, cg_failure_t *why, char *desc,
         size_t desclen)
{
    for (int i = 0; i < CONFINE_CGROUP_CONTROLLERS; i++)
        dirs[i][0] = 0;
    struct statfs fs;
    int rc;
    if (statfs ("/sys/fs/cgroup", &fs) < 0)
        rc = cg_fail (why, "statfs", "/sys/fs/cgroup", errno, "mount cgroup2 on /sys/fs/cgroup");
    else if (fs.f_type == CGROUP2_SUPER_MAGIC)
        rc = cg_make_v2 (dirs, name, lim, why, desc, desclen);
    else if (!root)
        rc = cg_fail (why, "cgroup v1 hierarchy at", "/sys/fs/cgroup", EPERM,
                      "cgroup v1 cannot be delegated: start as root, or use a host with cgroup v2 delegation");
    else
        rc = cg_make_v1 (dirs, name, lim, why, desc, desclen);
    if (rc < 0)
        cg_remove_dirs (dirs);
    return rc;
}

int
cgroup_prepare (confine_ctx_t *ctx)
{
    const confine_policy_t *p = ctx->policy;
    if (!p->memory_bytes && !p->pids && p->cpus <= 0) {
        confine_report_set (ctx->report, CONFINE_LAYER_CGROUP, CONFINE_ACTIVE, "no cgroup limits requested");
        return 0;
    }
    cg_limits_t lim = { p->memory_bytes, p->pids, p->cpus };
    cg_failure_t why;
    char name[64], desc[320];
    cgroup_name (name, sizeof name, 0);
    if (cg_make (ctx->cgroup_dirs, name, &lim, ctx->root, &why, desc, sizeof desc) < 0)
        return confine_layer_fail (ctx, CONFINE_LAYER_CGROUP, CONFINE_UNSUPPORTED, why.err,
                                   "%s %s: %s; %s; memory is then bounded by rlimits only", why.what, why.path,
                                   strerror (why.err), why.hint);
    confine_report_set (ctx->report, CONFINE_LAYER_CGROUP, CONFINE_ACTIVE, "%s", desc);
    return 0;
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
    cg_remove_dirs (ctx->cgroup_dirs);
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

/* ---- a cgroup of its own for a process the caller starts ------------------ */

struct confine_cgroup {
    char *dirs[CONFINE_CGROUP_CONTROLLERS]; /* NULL when none */
    char *procs[CONFINE_CGROUP_CONTROLLERS + 1];
    char description[320];
};

confine_cgroup_t *
confine_cgroup_new (uint64_t memory_bytes, uint64_t pids, confine_error_t *error)
{
    static unsigned s_serial;
    char (*dirs)[PATH_MAX] = confine_xcalloc (CONFINE_CGROUP_CONTROLLERS, PATH_MAX);
    char name[64], desc[320];
    cgroup_name (name, sizeof name, ++s_serial);
    cg_limits_t lim = { memory_bytes, pids, 0 };
    cg_failure_t why;
    confine_cgroup_t *self = NULL;
    if (cg_make (dirs, name, &lim, geteuid () == 0, &why, desc, sizeof desc) < 0)
        confine_error_set (error, confine_layer_name (CONFINE_LAYER_CGROUP), why.err, "%s %s: %s; %s", why.what,
                           why.path, strerror (why.err), why.hint);
    else {
        self = confine_xcalloc (1, sizeof *self);
        snprintf (self->description, sizeof self->description, "%s", desc);
        size_t n = 0;
        for (int i = 0; i < CONFINE_CGROUP_CONTROLLERS; i++)
            if (dirs[i][0]) {
                self->dirs[n] = confine_xstrdup (dirs[i]);
                self->procs[n] = confine_xmalloc (strlen (dirs[i]) + sizeof "/cgroup.procs");
                sprintf (self->procs[n], "%s/cgroup.procs", dirs[i]);
                n++;
            }
    }
    free (dirs);
    return self;
}

const char *
confine_cgroup_describe (const confine_cgroup_t *self)
{
    return self->description;
}

const char *const *
confine_cgroup_procs (const confine_cgroup_t *self)
{
    return (const char *const *) self->procs;
}

/* The first directory not yet removed (each holds every process), or -1. */
static int
cg_first (const confine_cgroup_t *self)
{
    for (int i = 0; i < CONFINE_CGROUP_CONTROLLERS; i++)
        if (self->dirs[i])
            return i;
    return -1;
}

int
confine_cgroup_kill (confine_cgroup_t *self)
{
    int i = cg_first (self);
    if (i < 0)
        return 0;
    char path[PATH_MAX + 32];
    snprintf (path, sizeof path, "%s/cgroup.kill", self->dirs[i]);
    if (confine_write_file (path, "1") == 0)
        return 1; /* v2 since Linux 5.14: the kernel kills them all, forks included */
    int signalled = 0;
    FILE *f = fopen (self->procs[i], "re");
    int pid;
    while (f && fscanf (f, "%d", &pid) == 1)
        if (pid > 0 && kill (pid, SIGKILL) == 0)
            signalled++;
    if (f)
        fclose (f);
    return signalled;
}

int
confine_cgroup_remove (confine_cgroup_t *self)
{
    for (int i = 0; i < CONFINE_CGROUP_CONTROLLERS; i++) {
        if (!self->dirs[i])
            continue;
        if (rmdir (self->dirs[i]) < 0 && errno != ENOENT)
            return -1;
        free (self->dirs[i]);
        self->dirs[i] = NULL;
    }
    return 0;
}

long
confine_cgroup_oom_kills (const confine_cgroup_t *self)
{
    return self->dirs[0] ? oom_kills (self->dirs[0]) : -1; /* v1's memory, or v2's one directory */
}

void
confine_cgroup_destroy (confine_cgroup_t **self_p)
{
    confine_cgroup_t *self = *self_p;
    if (!self)
        return;
    int rc = confine_cgroup_remove (self);
    (void) rc; /* one still in use stays, for remove_stale once its maker is gone */
    for (int i = 0; i < CONFINE_CGROUP_CONTROLLERS; i++) {
        free (self->dirs[i]);
        free (self->procs[i]);
    }
    free (self);
    *self_p = NULL;
}
