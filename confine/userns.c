/*  userns.c - the user namespace: one unprivileged id inside.

    The waiter (outside, in the parent user namespace) writes the child's
    maps: "setgroups deny" first (CVE-2014-8989: an unprivileged map must
    not let the sandbox drop supplementary groups that deny it access),
    then a single line each for uid and gid. Nothing maps to 0 inside.
    Started by root, the sandbox user is host_uid/host_gid (an id nobody
    else uses, CONFINE_HOST_ID by default), refused when a user's
    subordinate ids (/etc/subuid, /etc/subgid) hold it; started by anyone
    else, it is the caller's own ids (the only map an unprivileged writer
    may set). */
#include "private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
write_proc (confine_ctx_t *ctx, pid_t child, const char *file, const char *text)
{
    char path[64];
    snprintf (path, sizeof path, "/proc/%d/%s", (int) child, file);
    if (confine_write_file (path, text) == 0)
        return 0;
    int err = errno;
    return confine_layer_fail (ctx, CONFINE_LAYER_USERNS, CONFINE_UNSUPPORTED, err,
                               "write %s: %s; a security module may restrict user namespaces "
                               "(Ubuntu: sysctl kernel.apparmor_restrict_unprivileged_userns=0)",
                               path, strerror (err));
}

int
userns_write_maps (confine_ctx_t *ctx, pid_t child)
{
    char line[64];
    if (write_proc (ctx, child, "setgroups", "deny") < 0)
        return -1;
    snprintf (line, sizeof line, "%u %u 1\n", (unsigned) ctx->policy->uid, (unsigned) ctx->host_uid);
    if (write_proc (ctx, child, "uid_map", line) < 0)
        return -1;
    snprintf (line, sizeof line, "%u %u 1\n", (unsigned) ctx->policy->gid, (unsigned) ctx->host_gid);
    return write_proc (ctx, child, "gid_map", line);
}

int
userns_switch_user (confine_ctx_t *ctx)
{
    uid_t uid = ctx->policy->uid;
    gid_t gid = ctx->policy->gid;
    /* Still holding CAP_SETUID/SETGID of the new namespace here; the
       capabilities themselves are dropped right after (caps.c). */
    if (setresgid (gid, gid, gid) < 0 || setresuid (uid, uid, uid) < 0) {
        int err = errno;
        confine_error_set (ctx->error, "userns", err, "setresuid/setresgid(%u/%u): %s",
                           (unsigned) uid, (unsigned) gid, strerror (err));
        return -1;
    }
    confine_report_set (ctx->report, CONFINE_LAYER_USERNS, CONFINE_ACTIVE,
                        "uid %u/gid %u inside = host %u/%u%s, nothing maps to root, setgroups denied",
                        (unsigned) uid, (unsigned) gid, (unsigned) ctx->host_uid, (unsigned) ctx->host_gid,
                        ctx->root ? " (in no range of /etc/subuid, /etc/subgid)" : "");
    return 0;
}

static long
read_sysctl (const char *path)
{
    FILE *f = fopen (path, "re");
    long value = -1;
    if (f) {
        if (fscanf (f, "%ld", &value) != 1)
            value = -1;
        fclose (f);
    }
    return value;
}

void
userns_clone_failed (confine_ctx_t *ctx, int err)
{
    const char *hint = "unprivileged user namespaces are not allowed here (a container's seccomp "
                       "profile, or a sysctl); run on a host that allows them";
    if (read_sysctl ("/proc/sys/kernel/unprivileged_userns_clone") == 0)
        hint = "enable unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1";
    else if (read_sysctl ("/proc/sys/user/max_user_namespaces") == 0)
        hint = "user namespaces are disabled: sysctl user.max_user_namespaces=15000";
    else if (err == ENOSPC)
        hint = "the user namespace limit is reached: raise sysctl user.max_user_namespaces";
    else if (err == EINVAL)
        hint = "the kernel lacks user namespaces (CONFIG_USER_NS)";
    else if (read_sysctl ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1)
        hint = "AppArmor restricts user namespaces: sysctl kernel.apparmor_restrict_unprivileged_userns=0";
    confine_error_set (ctx->error, "userns", err,
                       "clone(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS): %s; %s",
                       strerror (err), hint);
}

/* A decimal field of a subid line: digits only, as shadow's parser takes. */
static bool
subid_number (const char *text, unsigned long long *value)
{
    char *end;
    if (text[0] < '0' || text[0] > '9')
        return false;
    errno = 0;
    *value = strtoull (text, &end, 10);
    return errno == 0 && *end == 0;
}

/* One line of subuid(5)/subgid(5), "owner:first:count" (newline cut). A
   line shadow would not parse grants no range: false. */
static bool
subid_parse (char *line, const char **owner, unsigned long long *first, unsigned long long *count)
{
    char *first_text = strchr (line, ':');
    char *count_text = first_text ? strchr (first_text + 1, ':') : NULL;
    if (!count_text || first_text == line)
        return false;
    *first_text++ = 0;
    *count_text++ = 0;
    *owner = line;
    return subid_number (first_text, first) && subid_number (count_text, count);
}

static int
subid_unreadable (confine_ctx_t *ctx, const char *call, const char *file, const char *kind, unsigned long long id)
{
    int err = errno;
    return confine_layer_fail (ctx, CONFINE_LAYER_USERNS, CONFINE_UNSUPPORTED, err,
                               "%s %s: %s; it says whether a user's containers own host %s %llu", call, file,
                               strerror (err), kind, id);
}

/* Refuses when id lies in a range of file (kind "uid" or "gid"): that
   user's rootless containers would run as the sandbox's user (signals,
   files). No file: no ranges. One that cannot be read refuses: whether a
   user owns the id cannot be told. */
static int
subid_check (confine_ctx_t *ctx, const char *file, const char *kind, unsigned long long id)
{
    FILE *f = fopen (file, "re");
    if (!f && errno == ENOENT)
        return 0;
    if (!f)
        return subid_unreadable (ctx, "open", file, kind, id);
    char *line = NULL;
    size_t size = 0;
    const char *owner = NULL;
    unsigned long long first = 0, count = 0;
    bool hit = false;
    while (!hit && getline (&line, &size, f) >= 0) {
        line[strcspn (line, "\n")] = 0;
        hit = subid_parse (line, &owner, &first, &count) && id >= first && id - first < count;
    }
    int rc = !hit && ferror (f) ? subid_unreadable (ctx, "read", file, kind, id) : 0;
    if (hit) {
        unsigned long long last = count - 1 > ULLONG_MAX - first ? ULLONG_MAX : first + count - 1;
        rc = confine_layer_fail (ctx, CONFINE_LAYER_USERNS, CONFINE_UNSUPPORTED, 0,
                                 "host %s %llu is in %.64s's subordinate range %llu-%llu (%s): that user's "
                                 "containers would run as the sandbox's user; set host_%s (the gateway "
                                 "config's confine.host_%s) to an id outside every range of %s, reserved "
                                 "as the kennel-sandbox account, or move that range",
                                 kind, id, owner, first, last, file, kind, kind, file);
    }
    free (line);
    fclose (f);
    return rc;
}

int
userns_check_subids (confine_ctx_t *ctx)
{
    if (subid_check (ctx, "/etc/subuid", "uid", ctx->host_uid) < 0)
        return -1;
    return subid_check (ctx, "/etc/subgid", "gid", ctx->host_gid);
}

/* The regular files in the run dir (DIR_FD) go to the sandbox user: one it
   cannot read (the connection file) would fail later, far from the cause. */
static int
prepare_files (confine_ctx_t *ctx, int dir_fd, const char *name)
{
    DIR *dir = fdopendir (dup (dir_fd));
    struct dirent *entry;
    int err = dir ? 0 : errno;
    while (!err && (entry = readdir (dir)))
        if (entry->d_type == DT_REG
            && fchownat (dir_fd, entry->d_name, ctx->host_uid, ctx->host_gid, AT_SYMLINK_NOFOLLOW) < 0)
            err = errno;
    if (dir)
        closedir (dir);
    if (err)
        confine_error_set (ctx->error, "mount", err, "give the files of %s to the sandbox user (uid %u): %s", name,
                           (unsigned) ctx->host_uid, strerror (err));
    return err ? -1 : 0;
}

/* Started by root, the sandbox user (host_uid) must be able to use the
   workspace and the run dir: they get that owner, the run dir's files
   (the connection file) too. Never follows symlinks. */
int
userns_prepare_dirs (confine_ctx_t *ctx)
{
    /* a guarded workspace is the person's: its server works on it as
       them (guard.c), the sandbox never touches it directly */
    const char *dirs[] = { ctx->policy->workspace_guard ? NULL : ctx->policy->workspace, ctx->policy->run_dir };
    for (size_t i = 0; i < 2; i++) {
        if (!dirs[i])
            continue;
        int fd = open (dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fchown (fd, ctx->host_uid, ctx->host_gid) < 0) {
            int err = errno;
            if (fd >= 0)
                close (fd);
            confine_error_set (ctx->error, "mount", err, "give %s to the sandbox user (uid %u): %s%s", dirs[i],
                               (unsigned) ctx->host_uid, strerror (err),
                               err == EINVAL ? "; that id has no mapping here (a user-namespaced container maps "
                                               "few ids, Kubernetes' hostUsers: false 0-65535): set confine.host_uid "
                                               "and host_gid to one it maps"
                                             : "");
            return -1;
        }
        int rc = dirs[i] == ctx->policy->run_dir ? prepare_files (ctx, fd, dirs[i]) : 0;
        close (fd);
        if (rc < 0)
            return -1;
    }
    return 0;
}
