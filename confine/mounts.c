/*  mounts.c - the sandbox's filesystem: a fresh tmpfs root, pivot_root.

    Runs in the child, in its new user + mount namespace, with the caps of
    that namespace. Steps (bubblewrap's, as in its setup_newroot):
    1. open every bind source as an O_PATH fd first (mounts_open, still with
       the caller's own access to host paths: before the switch to the
       sandbox user, so a workspace below a root-only directory works when
       root starts us), so the host paths are resolved before anything is
       covered and a later rename cannot swap them (mounts use
       /proc/self/fd/N);
    2. make every mount private, so nothing propagates back to the host;
    3. mount a tmpfs (the new root) on /tmp and build the tree in it;
    4. pivot_root into it and detach the old root entirely;
    5. remount / read-only.
    Binds get nosuid+nodev(+ro) on the mount and every submount
    (mount_setattr AT_RECURSIVE: bind flags are not recursive otherwise). */
#include "private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NEWROOT "/tmp"

/* The named parts of the host's /etc; nothing else of it is visible. */
/* alternatives: Debian links shared libraries (libblas for numpy) through it. */
static const char *etc_always[] = { "ld.so.cache", "localtime", "fonts", "matplotlibrc", "alternatives" };
static const char *etc_network[] = { "resolv.conf", "ssl/certs", "ssl/openssl.cnf" };
static const char *dev_nodes[] = { "null", "zero", "full", "random", "urandom" };

static int
mount_failed (confine_ctx_t *ctx, const char *what, const char *path)
{
    int err = errno;
    const char *hint = "";
    if (err == EPERM || err == EACCES)
        hint = "; a container runtime or security module may forbid mounts in user namespaces "
               "(a container needs CAP_SYS_ADMIN, with which its runtime's default seccomp profile allows "
               "them; or run on the host)";
    else if (err == ENOSPC)
        hint = "; check sysctl fs.mount-max";
    confine_error_set (ctx->error, "mount", err, "%s %s: %s%s", what, path, strerror (err), hint);
    return -1;
}

/* Sets flags on the mount at path (and its submounts when recursive). */
static int
set_attr (confine_ctx_t *ctx, const char *path, uint64_t attrs, bool recursive)
{
    struct mount_attr attr = { .attr_set = attrs };
    if (mount_setattr (AT_FDCWD, path, AT_NO_AUTOMOUNT | (recursive ? AT_RECURSIVE : 0), &attr, sizeof attr) < 0)
        return mount_failed (ctx, "mount_setattr", path);
    return 0;
}

static int
make_dir (confine_ctx_t *ctx, const char *path, mode_t mode)
{
    if (mkdir (path, mode) < 0 && errno != EEXIST)
        return mount_failed (ctx, "mkdir", path);
    return 0;
}

static int
make_file (confine_ctx_t *ctx, const char *path, const char *content, mode_t mode)
{
    int fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return mount_failed (ctx, "create", path);
    size_t len = strlen (content);
    ssize_t n = len ? write (fd, content, len) : 0;
    close (fd);
    if (n != (ssize_t) len)
        return mount_failed (ctx, "write", path);
    return 0;
}

/* Binds the already-opened source fd at target (created as a directory
   or an empty file to match the source), then sets attrs recursively. */
static int
bind_fd (confine_ctx_t *ctx, int fd, const char *target, uint64_t attrs)
{
    struct stat st;
    if (fstat (fd, &st) < 0)
        return mount_failed (ctx, "fstat source of", target);
    if (S_ISDIR (st.st_mode) ? make_dir (ctx, target, 0755) < 0 : make_file (ctx, target, "", 0644) < 0)
        return -1;
    char source[64];
    snprintf (source, sizeof source, "/proc/self/fd/%d", fd);
    if (mount (source, target, NULL, MS_BIND | MS_REC, NULL) < 0)
        return mount_failed (ctx, "bind mount onto", target);
    return set_attr (ctx, target, attrs, true);
}

/* inodes 0: one per 4 KiB of size, at least 1024. */
static int
mount_tmpfs (confine_ctx_t *ctx, const char *target, const char *mode, uint64_t bytes, uint64_t inodes,
             unsigned long flags)
{
    char options[96];
    if (!inodes)
        inodes = bytes / 4096 < 1024 ? 1024 : bytes / 4096;
    if (bytes)
        snprintf (options, sizeof options, "mode=%s,size=%llu,nr_inodes=%llu", mode, (unsigned long long) bytes,
                  (unsigned long long) inodes);
    else
        snprintf (options, sizeof options, "mode=%s", mode);
    if (make_dir (ctx, target, 0755) < 0)
        return -1;
    if (mount ("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | flags, options) < 0)
        return mount_failed (ctx, "mount tmpfs on", target);
    return 0;
}

/* O_PATH fds of the host sources, opened before the host tree is covered. */
struct mounts_sources {
    int usr, workspace, run_dir;
    int fuse, fuse_err;         /* /dev/fuse for a guarded workspace, or the errno of its open */
    int etc[sizeof etc_always / sizeof *etc_always + sizeof etc_network / sizeof *etc_network];
    const char *etc_names[sizeof etc_always / sizeof *etc_always + sizeof etc_network / sizeof *etc_network];
    size_t etc_count;
    int dev[sizeof dev_nodes / sizeof *dev_nodes];
};
typedef mounts_sources_t sources_t;

static void
sources_close (sources_t *src)
{
    int *all[] = { &src->usr, &src->workspace, &src->run_dir, &src->fuse };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (*all[i] >= 0)
            close (*all[i]);
    for (size_t i = 0; i < src->etc_count; i++)
        close (src->etc[i]);
    for (size_t i = 0; i < sizeof src->dev / sizeof *src->dev; i++)
        if (src->dev[i] >= 0)
            close (src->dev[i]);
}

static int
open_required (confine_ctx_t *ctx, const char *path, int flags)
{
    int fd = open (path, O_PATH | O_CLOEXEC | flags);
    if (fd < 0)
        mount_failed (ctx, "open", path);
    return fd;
}

static void
add_etc (sources_t *src, const char *name)
{
    char path[128];
    snprintf (path, sizeof path, "/etc/%s", name);
    int fd = open (path, O_PATH | O_CLOEXEC);   /* follows /etc/localtime's link */
    if (fd < 0)
        return;                                 /* optional: fonts, matplotlibrc */
    src->etc[src->etc_count] = fd;
    src->etc_names[src->etc_count++] = name;
}

static int
sources_open (confine_ctx_t *ctx, sources_t *src)
{
    const confine_policy_t *p = ctx->policy;
    memset (src, 0, sizeof *src);
    src->usr = src->workspace = src->run_dir = src->fuse = -1;
    for (size_t i = 0; i < sizeof src->dev / sizeof *src->dev; i++)
        src->dev[i] = -1;
    if ((src->usr = open_required (ctx, "/usr", O_DIRECTORY)) < 0)
        return -1;
    if (p->workspace && (src->workspace = open_required (ctx, p->workspace, O_DIRECTORY)) < 0)
        return -1;
    if (p->run_dir && (src->run_dir = open_required (ctx, p->run_dir, O_DIRECTORY)) < 0)
        return -1;
    /* with the caller's own access: /dev/fuse is root's 0600 where no udev
       rule made it 0666; the mount must come from the user namespace that
       opened it (fs/fuse: f_cred->user_ns) */
    if (p->workspace && p->workspace_guard && (src->fuse = open ("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0)
        src->fuse_err = errno;
    for (size_t i = 0; i < sizeof etc_always / sizeof *etc_always; i++)
        add_etc (src, etc_always[i]);
    if (p->network != CONFINE_NET_NONE)
        for (size_t i = 0; i < sizeof etc_network / sizeof *etc_network; i++)
            add_etc (src, etc_network[i]);
    for (size_t i = 0; i < sizeof dev_nodes / sizeof *dev_nodes; i++) {
        char path[32];
        snprintf (path, sizeof path, "/dev/%s", dev_nodes[i]);
        if ((src->dev[i] = open_required (ctx, path, 0)) < 0)
            return -1;
    }
    return 0;
}

static int
build_etc (confine_ctx_t *ctx, sources_t *src)
{
    const confine_policy_t *p = ctx->policy;
    char text[512];
    if (make_dir (ctx, NEWROOT "/etc", 0755) < 0 || make_dir (ctx, NEWROOT "/etc/ssl", 0755) < 0)
        return -1;
    /* Our own passwd/group: the host's never enter. */
    snprintf (text, sizeof text, "sandbox:x:%u:%u:kennel sandbox:/workspace:/bin/sh\n"
              "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
              (unsigned) p->uid, (unsigned) p->gid);
    if (make_file (ctx, NEWROOT "/etc/passwd", text, 0644) < 0)
        return -1;
    snprintf (text, sizeof text, "sandbox:x:%u:\nnogroup:x:65534:\n", (unsigned) p->gid);
    if (make_file (ctx, NEWROOT "/etc/group", text, 0644) < 0)
        return -1;
    snprintf (text, sizeof text, "%s\n", p->hostname);
    if (make_file (ctx, NEWROOT "/etc/hostname", text, 0644) < 0)
        return -1;
    snprintf (text, sizeof text, "127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost\n", p->hostname);
    if (make_file (ctx, NEWROOT "/etc/hosts", text, 0644) < 0)
        return -1;
    for (size_t i = 0; i < src->etc_count; i++) {
        char target[PATH_MAX];
        snprintf (target, sizeof target, NEWROOT "/etc/%s", src->etc_names[i]);
        if (bind_fd (ctx, src->etc[i], target, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) < 0)
            return -1;
    }
    return 0;
}

static int
build_dev (confine_ctx_t *ctx, sources_t *src)
{
    /* A tmpfs mounted in a user namespace cannot hold usable device nodes
       (nodev is forced), so each allowed node is a bind of the host's. */
    if (mount_tmpfs (ctx, NEWROOT "/dev", "0755", 1 << 20, 0, MS_NOEXEC) < 0)
        return -1;
    for (size_t i = 0; i < sizeof dev_nodes / sizeof *dev_nodes; i++) {
        char target[64];
        snprintf (target, sizeof target, NEWROOT "/dev/%s", dev_nodes[i]);
        if (make_file (ctx, target, "", 0666) < 0)
            return -1;
        char source[64];
        snprintf (source, sizeof source, "/proc/self/fd/%d", src->dev[i]);
        if (mount (source, target, NULL, MS_BIND, NULL) < 0)
            return mount_failed (ctx, "bind mount onto", target);
        if (set_attr (ctx, target, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false) < 0)
            return -1;
    }
    static const char *links[][2] = {
        { "/proc/self/fd", "fd" }, { "/proc/self/fd/0", "stdin" },
        { "/proc/self/fd/1", "stdout" }, { "/proc/self/fd/2", "stderr" },
    };
    for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
        char target[64];
        snprintf (target, sizeof target, NEWROOT "/dev/%s", links[i][1]);
        if (symlink (links[i][0], target) < 0)
            return mount_failed (ctx, "symlink", target);
    }
    /* multiprocessing's semaphores and shared memory live here. */
    return mount_tmpfs (ctx, NEWROOT "/dev/shm", "1777", ctx->policy->shm_bytes, 0, MS_NOEXEC);
}

static int
build_proc (confine_ctx_t *ctx)
{
    if (make_dir (ctx, NEWROOT "/proc", 0555) < 0)
        return -1;
    if (mount ("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
        /* a masked or read-only entry of the host's /proc, not a seccomp
           filter: the kernel refuses a procfs more revealing than it */
        int err = errno;
        confine_error_set (ctx->error, "mount", err,
                           "mount proc on " NEWROOT "/proc (the host's /proc may be partly masked, as container "
                           "runtimes and systemd's ProtectKernelTunables= do): %s; unmask it (podman --security-opt "
                           "unmask=/proc/*, Docker --security-opt systempaths=unconfined, Kubernetes procMount: "
                           "Unmasked)",
                           strerror (err));
        return -1;
    }
    /* Host-global knobs stay read-only even where permissions would allow. */
    static const char *ro[] = { "sys", "sysrq-trigger", "irq", "bus" };
    for (size_t i = 0; i < sizeof ro / sizeof *ro; i++) {
        char path[64];
        snprintf (path, sizeof path, NEWROOT "/proc/%s", ro[i]);
        if (access (path, F_OK) < 0)
            continue;
        if (mount (path, path, NULL, MS_BIND | MS_REC, NULL) < 0)
            return mount_failed (ctx, "bind mount", path);
        if (set_attr (ctx, path, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, true) < 0)
            return -1;
    }
    return 0;
}

/* A host workspace is limited when it is a filesystem of its own (a mount
   root) no larger than workspace_bytes with no more than workspace_files
   inodes: what the gateway mounts there (gateway/README.md "Workspaces").
   The limit is read from the filesystem itself, whoever made it. */
static int
quota_check (confine_ctx_t *ctx, int fd)
{
    const confine_policy_t *p = ctx->policy;
    struct statx stx;
    struct statfs fs;
    if (statx (fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) < 0 || fstatfs (fd, &fs) < 0)
        return mount_failed (ctx, "statx/fstatfs", "the workspace");
    uint64_t bytes = (uint64_t) fs.f_blocks * (uint64_t) fs.f_bsize;
    uint64_t allowed = (p->workspace_bytes + 4095) / 4096 * 4096; /* a tmpfs size is whole pages */
    bool root = (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
    if (root && bytes <= allowed && (uint64_t) fs.f_files <= p->workspace_files) {
        confine_report_set (ctx->report, CONFINE_LAYER_QUOTA, CONFINE_ACTIVE,
                            "/workspace is a filesystem of its own: %llu bytes, %llu files",
                            (unsigned long long) bytes, (unsigned long long) fs.f_files);
        return 0;
    }
    return confine_layer_fail (ctx, CONFINE_LAYER_QUOTA, CONFINE_UNSUPPORTED, 0,
                               "the host workspace directory is %s of %llu bytes, %llu files, not one of at most "
                               "workspace_bytes %llu, workspace_files %llu; only rlimits.fsize bounds each file; "
                               "the gateway mounts one as root or in its own user namespace (gateway/README.md), "
                               "else allow_degraded \"quota\"",
                               root ? "a filesystem" : "on a filesystem", (unsigned long long) bytes,
                               (unsigned long long) fs.f_files, (unsigned long long) p->workspace_bytes,
                               (unsigned long long) p->workspace_files);
}

/* The guard: FUSE at /workspace, its /dev/fuse fd to the waiter, whose
   server (guard.c) does every operation on the host directory. 1 when
   the guard cannot be had and the policy lets it degrade (then the
   directory is bound as is), 0 when mounted, -1 refused. */
static int
guard_mount (confine_ctx_t *ctx, sources_t *src)
{
    const confine_policy_t *p = ctx->policy;
    const char *target = NEWROOT CONFINE_WORKSPACE_DIR;
    const char *what = "open /dev/fuse";
    int err = src->fuse_err;
    if (src->fuse >= 0) {
        char options[128];
        snprintf (options, sizeof options, "fd=%d,rootmode=40000,user_id=%u,group_id=%u,default_permissions", src->fuse,
                  (unsigned) p->uid, (unsigned) p->gid);
        what = "mount fuse on " CONFINE_WORKSPACE_DIR;
        if (make_dir (ctx, target, 0755) < 0)
            return -1;
        if (mount ("kennel", target, "fuse", MS_NOSUID | MS_NODEV, options) == 0) {
            if (confine_msg_send_fd (ctx->sync_fd, CONFINE_MSG_GUARD, src->fuse) < 0)
                return mount_failed (ctx, "send the guard's /dev/fuse fd for", target);
            close (src->fuse);
            src->fuse = -1;
            confine_report_set (ctx->report, CONFINE_LAYER_GUARD, CONFINE_ACTIVE,
                                CONFINE_WORKSPACE_DIR " is %s through FUSE, served by a process %s: no symlinks, "
                                "hardlinks, special files, exec or set-id bits, dot-entries or directory modes",
                                p->workspace, ctx->guard_who);
            return 0;
        }
        err = errno;
    }
    if (confine_layer_fail (ctx, CONFINE_LAYER_GUARD, CONFINE_UNSUPPORTED, err,
                            "%s: %s; the workspace %s is served through FUSE so that the kernel leaves nothing the "
                            "host would run: make /dev/fuse usable by uid %u (mode 0666, as udev's default rule "
                            "sets it; a container: --device /dev/fuse), or allow_degraded \"guard\" to bind it "
                            "directly (symlinks and special files still refused; set-id and exec bits, dot-files "
                            "and directory modes not)",
                            what, strerror (err), p->workspace, (unsigned) ctx->host_uid) < 0)
        return -1;
    return 1;
}

static int
build_workspace (confine_ctx_t *ctx, sources_t *src)
{
    const confine_policy_t *p = ctx->policy;
    const uint64_t rw = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if (src->workspace < 0) {
        if (mount_tmpfs (ctx, NEWROOT CONFINE_WORKSPACE_DIR, "0755", p->workspace_bytes, p->workspace_files, 0) < 0)
            return -1;
        if (chown (NEWROOT CONFINE_WORKSPACE_DIR, p->uid, p->gid) < 0)
            return mount_failed (ctx, "chown", NEWROOT CONFINE_WORKSPACE_DIR);
        confine_report_set (ctx->report, CONFINE_LAYER_QUOTA, CONFINE_ACTIVE,
                            "/workspace is a private tmpfs of %llu bytes, %llu files",
                            (unsigned long long) p->workspace_bytes, (unsigned long long) p->workspace_files);
    } else {
        int guard = p->workspace_guard ? 1 : 2;
        if (quota_check (ctx, src->workspace) < 0 || (guard == 1 && (guard = guard_mount (ctx, src)) < 0))
            return -1;
        if (guard > 0 && bind_fd (ctx, src->workspace, NEWROOT CONFINE_WORKSPACE_DIR, rw) < 0)
            return -1;
    }
    if (src->run_dir >= 0) {
        if (make_dir (ctx, NEWROOT "/run", 0755) < 0 || bind_fd (ctx, src->run_dir, NEWROOT CONFINE_RUN_DIR, rw) < 0)
            return -1;
    }
    return 0;
}

static int
build_usr (confine_ctx_t *ctx, sources_t *src)
{
    if (bind_fd (ctx, src->usr, NEWROOT "/usr", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) < 0)
        return -1;
    /* Debian's merged /usr: /bin, /lib, ... are links into /usr. */
    static const char *links[] = { "bin", "lib", "lib32", "lib64", "libx32", "sbin" };
    for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
        char usr_path[64], target[64], dest[32];
        snprintf (usr_path, sizeof usr_path, NEWROOT "/usr/%s", links[i]);
        if (access (usr_path, F_OK) < 0)
            continue;
        snprintf (target, sizeof target, NEWROOT "/%s", links[i]);
        snprintf (dest, sizeof dest, "usr/%s", links[i]);
        if (symlink (dest, target) < 0)
            return mount_failed (ctx, "symlink", target);
    }
    return 0;
}

static int
pivot (confine_ctx_t *ctx)
{
    /* pivot_root(".", ".") stacks the old root under the new one; the
       detach then removes every host mount from this namespace. */
    if (chdir (NEWROOT) < 0)
        return mount_failed (ctx, "chdir", NEWROOT);
    if (syscall (SYS_pivot_root, ".", ".") < 0)
        return mount_failed (ctx, "pivot_root", NEWROOT);
    if (umount2 (".", MNT_DETACH) < 0)
        return mount_failed (ctx, "detach the old root", "/");
    if (chdir ("/") < 0)
        return mount_failed (ctx, "chdir", "/");
    return set_attr (ctx, "/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false);
}

static int
build_tree (confine_ctx_t *ctx, sources_t *src)
{
    const confine_policy_t *p = ctx->policy;
    if (mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return mount_failed (ctx, "make mounts private", "/");
    if (mount ("kennel", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4096") < 0)
        return mount_failed (ctx, "mount the root tmpfs on", NEWROOT);
    if (build_usr (ctx, src) < 0 || build_etc (ctx, src) < 0 || build_workspace (ctx, src) < 0)
        return -1;
    if (mount_tmpfs (ctx, NEWROOT "/tmp", "1777", p->tmp_bytes, 0, 0) < 0)
        return -1;
    if (build_dev (ctx, src) < 0 || build_proc (ctx) < 0)
        return -1;
    return pivot (ctx);
}

mounts_sources_t *
mounts_open (confine_ctx_t *ctx)
{
    sources_t *src = confine_xmalloc (sizeof *src);
    if (sources_open (ctx, src) < 0) {
        sources_close (src);
        free (src);
        return NULL;
    }
    return src;
}

int
mounts_setup (confine_ctx_t *ctx, mounts_sources_t *src)
{
    int rc = build_tree (ctx, src);
    sources_close (src);
    free (src);
    if (rc == 0)
        confine_report_set (ctx->report, CONFINE_LAYER_MOUNT, CONFINE_ACTIVE,
                            "tmpfs root (read-only), /usr and named /etc files read-only, " CONFINE_WORKSPACE_DIR "%s rw, "
                            "private /tmp and /dev/shm, new /proc, minimal /dev",
                            ctx->policy->run_dir ? " and " CONFINE_RUN_DIR : "");
    return rc;
}
