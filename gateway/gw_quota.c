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

    Every gateway process mounts in a mount namespace of its own, entered
    at start (gw_quota_prepare, before any thread: unshare refuses a
    threaded process): no host user sees a workspace at its path or in
    /proc/self/mountinfo (a kernel that opens its workspace to everyone
    opens it to nobody outside), and the mounts end with the namespace,
    when its last process has gone, however the gateway ended (a SIGKILL
    included). Root needs only CLONE_NEWNS. Any other user cannot mount in
    the host's user namespace, so it enters a user namespace too, its uid
    and gid mapped to themselves: files and the launcher it runs see the
    same ids, and the launcher (exec'd, so without the namespace's
    capabilities) confines as the same unprivileged user.
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
prepare_failed (const char *step, int err, const char *fix)
{
    quota_unavailable = wire_xasprintf ("%s: %s; the gateway mounts workspaces in a mount namespace of its own: %s",
                                        step, strerror (err), fix);
}

/* An unprivileged gateway's user namespace, with the mount namespace it
   may mount in: its uid and gid mapped to themselves. 0, or -1 with
   quota_unavailable set. */
static int
enter_user_namespace (void)
{
    const char *fix = "enable unprivileged user namespaces (kernel.unprivileged_userns_clone, "
                      "user.max_user_namespaces), or run the gateway as root";
    uid_t uid = geteuid ();
    gid_t gid = getegid ();
    char map[64];
    const char *step = "unshare(CLONE_NEWUSER|CLONE_NEWNS)";
    if (unshare (CLONE_NEWUSER | CLONE_NEWNS) == 0) {
        step = "write /proc/self/uid_map";
        snprintf (map, sizeof map, "%u %u 1\n", (unsigned) uid, (unsigned) uid);
        if (write_text ("/proc/self/uid_map", map) == 0) {
            step = "write /proc/self/gid_map";
            snprintf (map, sizeof map, "%u %u 1\n", (unsigned) gid, (unsigned) gid);
            if (write_text ("/proc/self/setgroups", "deny") == 0 && write_text ("/proc/self/gid_map", map) == 0)
                return 0;
        }
    }
    prepare_failed (step, errno, fix);
    return -1;
}

/* Root: a mount namespace (CAP_SYS_ADMIN); others: a user namespace too.
   Then every mount slave of the host's: what the host mounts or unmounts
   later (a new /tmp, an automount, a disk taken away) reaches the gateway
   as before, so no copy held here keeps a host filesystem busy, and
   nothing mounted here goes back. It copies the host's mount table:
   0.14 ms for 80 mounts, 1.8 ms for 1,029 (gateway/README.md
   "Workspaces"). */
void
gw_quota_prepare (void)
{
    if (geteuid () != 0) {
        if (enter_user_namespace () < 0)
            return;
    }
    else if (unshare (CLONE_NEWNS) < 0) {
        prepare_failed ("unshare(CLONE_NEWNS)", errno,
                        "give it CAP_SYS_ADMIN and let it unshare a mount namespace (systemd: "
                        "RestrictNamespaces= without mnt forbids it; a container's default seccomp "
                        "profile allows it with CAP_SYS_ADMIN)");
        return;
    }
    if (mount ("none", "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
        prepare_failed ("mount --make-rslave /", errno,
                        "let it call mount (systemd: SystemCallFilter= needs @mount)");
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

int
gw_quota_apply (const gw_config_t *config, const char *dir, int64_t bytes, int64_t files, char **errmsg)
{
    char *why = NULL;
    if (quota_mount (dir, bytes, files, &why) == 0)
        return 0;
    if (!gw_config_allows_degraded (config, "quota")) {
        char *fix = gw_config_degrade_fix ("quota");
        *errmsg = wire_xasprintf ("%s; %s", why, fix);
        free (fix);
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
