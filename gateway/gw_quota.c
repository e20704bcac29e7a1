/*  gw_quota.c - a workspace's limits: a tmpfs of workspace_bytes with
    workspace_files inodes, mounted by the gateway on the workspace
    directory before the kernel starts.

    The launcher binds the directory at /workspace, so the kernel writes
    into the tmpfs: a write past the limit fails with ENOSPC inside the
    kernel, which keeps running. confine checks the limit on the filesystem
    itself (confine/README.md "quota"). Why a tmpfs (gateway/README.md
    "Workspaces"): it needs no device, no image and no tool, mounts in
    ~0.1 ms, is measured by one statfs and removed by one umount; the
    mount follows the directory when the warm pool renames the directory
    above it, and outlives kernel restarts (the gateway holds it). Its
    pages, and each file's inode and dentry, are memory: Linux charges them
    to the memory cgroup of the process that writes them, whoever mounted
    the tmpfs, i.e. to the kernel's memory_bytes. A kernel's run dir
    (bound writable at /run/kennel) gets a tmpfs too, a small one
    (GW_RUN_DIR_BYTES, GW_RUN_DIR_FILES), or the kernel could fill the
    disk there instead.

    Root mounts in the host's mount namespace (kernelspec mode: in one of
    its own, gone with the process). Any other user cannot mount
    there, so an unprivileged gateway enters a user and mount namespace of
    its own at start (gw_quota_prepare, before any thread: unshare refuses
    a threaded process), where it may mount a tmpfs; its uid and gid map
    to themselves, so files and the launcher it runs see the same ids, and
    the launcher (exec'd, so without the namespace's capabilities) confines
    as the same unprivileged user. Those mounts are seen by the gateway and
    its kernels only, and end with the gateway.
*/
#include "gw_quota.h"
#include "gw_config.h"
#include "gw_log.h"
#include "gw_util.h"
#include "wire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

static char *quota_unavailable; /* why no mount can be made, or NULL */

static int
write_text (const char *path, const char *text)
{
    int fd = open (path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write (fd, text, strlen (text));
    int saved = errno;
    close (fd);
    errno = saved;
    return n == (ssize_t) strlen (text) ? 0 : -1;
}

static void
prepare_failed (const char *step, int err)
{
    quota_unavailable = wire_xasprintf ("%s: %s; an unprivileged gateway mounts workspaces in a user namespace of its "
                                        "own: enable unprivileged user namespaces (kernel.unprivileged_userns_clone, "
                                        "user.max_user_namespaces), or run the gateway as root",
                                        step, strerror (err));
}

/* Root's mounts (the run dir's tmpfs) in a namespace that ends with this
   process, so that none outlives a SIGKILL. */
static void
prepare_root (void)
{
    const char *step = "unshare(CLONE_NEWNS)";
    if (unshare (CLONE_NEWNS) == 0) {
        step = "mount --make-rprivate /";
        if (mount ("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0)
            return;
    }
    quota_unavailable = wire_xasprintf ("%s: %s; kernelspec mode mounts in a mount namespace of its own (a "
                                        "container's seccomp profile may refuse unshare)",
                                        step, strerror (errno));
}

void
gw_quota_prepare (bool own_mounts)
{
    if (geteuid () == 0) {
        if (own_mounts)
            prepare_root ();
        return;
    }
    uid_t uid = geteuid ();
    gid_t gid = getegid ();
    if (unshare (CLONE_NEWUSER | CLONE_NEWNS) < 0) {
        prepare_failed ("unshare(CLONE_NEWUSER|CLONE_NEWNS)", errno);
        return;
    }
    char map[64];
    snprintf (map, sizeof map, "%u %u 1\n", (unsigned) uid, (unsigned) uid);
    if (write_text ("/proc/self/uid_map", map) < 0) {
        prepare_failed ("write /proc/self/uid_map", errno);
        return;
    }
    snprintf (map, sizeof map, "%u %u 1\n", (unsigned) gid, (unsigned) gid);
    if (write_text ("/proc/self/setgroups", "deny") < 0 || write_text ("/proc/self/gid_map", map) < 0) {
        prepare_failed ("write /proc/self/gid_map", errno);
        return;
    }
    /* our workspace mounts never propagate anywhere */
    if (mount ("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        prepare_failed ("mount --make-rprivate /", errno);
}

const char *
gw_quota_unavailable (void)
{
    return quota_unavailable;
}

/* The tmpfs this module mounted at dir (a mount root of type tmpfs). */
static bool
quota_mounted (const char *dir)
{
    struct statx stx;
    struct statfs fs;
    if (statx (AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) < 0 || statfs (dir, &fs) < 0)
        return false;
    return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) && fs.f_type == TMPFS_MAGIC;
}

/* Whether dir holds anything: a plain directory kept by a gateway that ran
   without this layer, whose files a mount would hide. */
static bool
dir_has_entries (const char *dir)
{
    DIR *d = opendir (dir);
    if (!d)
        return false;
    struct dirent *de;
    bool found = false;
    while (!found && (de = readdir (d)))
        found = !streq (de->d_name, ".") && !streq (de->d_name, "..");
    closedir (d);
    return found;
}

static int
quota_mount (const char *dir, int64_t bytes, int64_t files, char **errmsg)
{
    char options[128];
    snprintf (options, sizeof options, "size=%lld,nr_inodes=%lld,mode=0700", (long long) bytes, (long long) files);
    /* a workspace kept at close and opened again keeps its files; the
       limits become the new policy's */
    unsigned long flags = MS_NOSUID | MS_NODEV | (quota_mounted (dir) ? MS_REMOUNT : 0);
    if (quota_unavailable) {
        *errmsg = wire_xasprintf ("quota: %s", quota_unavailable);
        return -1;
    }
    if (!(flags & MS_REMOUNT) && dir_has_entries (dir)) {
        *errmsg = wire_xasprintf ("quota: %s is a kept workspace without a limit (a plain directory with files); "
                                  "a tmpfs would hide them: move them away first",
                                  dir);
        return -1;
    }
    if (mount ("tmpfs", dir, "tmpfs", flags, options) < 0) {
        *errmsg = wire_xasprintf ("quota: mount tmpfs (%s) on %s: %s%s", options, dir, strerror (errno),
                                  errno == EINVAL && (flags & MS_REMOUNT)
                                      ? " (the kept workspace holds more than the new limits)"
                                      : "; the gateway needs root or a user namespace of its own");
        return -1;
    }
    return 0;
}

static bool
quota_degradable (const gw_config_t *config)
{
    size_t i;
    json_t *layer;
    json_array_foreach (json_object_get (config->confine, "allow_degraded"), i, layer)
    {
        if (json_is_string (layer) && streq (json_string_value (layer), "quota"))
            return true;
    }
    return false;
}

int
gw_quota_apply (const gw_config_t *config, const char *dir, int64_t bytes, int64_t files, char **errmsg)
{
    char *why = NULL;
    if (quota_mount (dir, bytes, files, &why) == 0)
        return 0;
    if (!quota_degradable (config)) {
        *errmsg = wire_xasprintf ("%s (or allow_degraded \"quota\" in the config's confine settings)", why);
        free (why);
        return -1;
    }
    gw_log_limited ("quota", "quota_degraded", "{s:s, s:s}", "workspace", dir, "reason", why);
    free (why);
    return 0;
}

void
gw_quota_unmount (const char *dir)
{
    if (dir && quota_mounted (dir))
        umount2 (dir, MNT_DETACH | UMOUNT_NOFOLLOW);
}

bool
gw_quota_usage (const char *dir, int64_t *bytes, int64_t *files)
{
    struct statfs fs;
    if (!quota_mounted (dir) || statfs (dir, &fs) < 0)
        return false;
    *bytes = (int64_t) (fs.f_blocks - fs.f_bfree) * (int64_t) fs.f_bsize;
    *files = (int64_t) (fs.f_files - fs.f_ffree);
    return true;
}

/* Whether a mount point is one a gateway of state_dir left behind: the
   probe's workspace, a pooled kernel's, a run dir, a buried one. A
   conversation's workspace is not: it may be a kept one. */
static bool
sweep_wanted (const char *point, const char *state_dir)
{
    size_t n = strlen (state_dir);
    if (strncmp (point, state_dir, n) != 0 || point[n] != '/')
        return false;
    const char *rest = point + n + 1;
    return streq (rest, "probe") || strncmp (rest, "pool/", 5) == 0 || strncmp (rest, "run/", 4) == 0
           || strncmp (rest, "graveyard/", 10) == 0;
}

void
gw_quota_sweep (const char *state_dir)
{
    FILE *f = fopen ("/proc/self/mountinfo", "re");
    if (!f)
        return;
    char line[GW_PATH_MAX + 512];
    while (fgets (line, sizeof line, f)) {
        char point[GW_PATH_MAX];
        /* id parent major:minor root point ... (a point with a space is
           octal-escaped: never one of ours, whose names we chose) */
        if (sscanf (line, "%*s %*s %*s %*s %4095s", point) == 1 && sweep_wanted (point, state_dir)
            && quota_mounted (point) && umount2 (point, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
            gw_log ("quota_swept", "{s:s}", "path", point);
    }
    fclose (f);
}
