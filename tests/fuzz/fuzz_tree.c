/*  fuzz_tree.c - a real workspace beside an outside tree of canaries
    (fuzz_tree.h).

    The harness's own path resolution (fuzz_tree_open) is written here
    again, not taken from gateway/gw_files.c: the checks must hold even
    when the code under test resolves wrongly.
*/
#include "fuzz_tree.h"
#include "gateway/gw_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The uid a root harness gives the workspaces, as the gateway gives the
   sandbox's: a file the service makes is chowned to it, so a chown that
   escaped would show outside. */
#define WS_UID 4242
#define DEEP_LEVELS 16
/* outside/ and the workspaces sit this deep below the base: a path of
   four ".." (the most a program's path holds) from a workspace stays on
   the base's tmpfs, where the snapshot sees what it touched */
#define TOP "u/u/u"

static fuzz_tree_t *s_tree;

int
fuzz_tree_open (int dir, const char *path, int flags)
{
    struct open_how how = {.flags = (uint64_t) (flags | O_NOFOLLOW | O_CLOEXEC),
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
                                      | RESOLVE_NO_XDEV};
    return (int) syscall (SYS_openat2, dir, *path ? path : ".", &how, sizeof how);
}

static void
s_write_at (int dir, const char *name, const void *data, size_t len, mode_t mode)
{
    int fd = openat (dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 || write (fd, data, len) != (ssize_t) len)
        __builtin_trap (); /* the harness's own tree */
    fchmod (fd, mode);
    close (fd);
}

/* ---- walking a tree, names in order ---------------------------------------- */

typedef bool (visit_fn) (int dir, const char *name, const char *path, const struct stat *st, void *arg);

static int
s_name_cmp (const void *a, const void *b)
{
    return strcmp (*(char *const *) a, *(char *const *) b);
}

/* fn on every entry below dir (path its name from the top), sorted so that
   two walks of one tree say the same; fn says whether to descend. */
static void
s_walk (int dir, const char *path, visit_fn *fn, void *arg)
{
    int fd = dup (dir);
    DIR *d = fd >= 0 ? fdopendir (fd) : NULL;
    if (!d)
        __builtin_trap ();
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir (d)))
        if (strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0) {
            names = realloc (names, (n + 1) * sizeof *names);
            names[n++] = strdup (de->d_name);
        }
    closedir (d);
    if (n > 1)
        qsort (names, n, sizeof *names, s_name_cmp);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        char child[4096];
        snprintf (child, sizeof child, "%s%s%s", path, *path ? "/" : "", names[i]);
        if (fstatat (dir, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && fn (dir, names[i], child, &st, arg)
            && S_ISDIR (st.st_mode)) {
            int sub = openat (dir, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                s_walk (sub, child, fn, arg);
                close (sub);
            }
        }
        free (names[i]);
    }
    free (names);
}

/* ---- the outside tree's snapshot --------------------------------------------- */

static bool
s_record (int dir, const char *name, const char *path, const struct stat *st, void *arg)
{
    FILE *out = arg;
    bool workspace = strcmp (path, TOP "/plain") == 0 || strcmp (path, TOP "/quota") == 0;
    fprintf (out, "%s\n", path);
    if (workspace)
        return false; /* its content is the fuzzer's */
    fprintf (out, "mode %o owner %d:%d size %lld\n", (unsigned) st->st_mode, (int) st->st_uid, (int) st->st_gid,
             (long long) st->st_size);
    char buf[4096];
    if (S_ISLNK (st->st_mode)) {
        ssize_t n = readlinkat (dir, name, buf, sizeof buf);
        fprintf (out, "-> %.*s\n", (int) (n < 0 ? 0 : n), buf);
    } else if (S_ISREG (st->st_mode)) {
        int fd = openat (dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read (fd, buf, sizeof buf) : -1;
        if (n > 0)
            fwrite (buf, 1, (size_t) n, out);
        if (fd >= 0)
            close (fd);
    }
    return true;
}

static char *
s_snapshot (const fuzz_tree_t *self, size_t *len)
{
    char *text = NULL;
    FILE *out = open_memstream (&text, len);
    int base = open (self->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (!out || base < 0 || fstat (base, &st) < 0)
        __builtin_trap ();
    fprintf (out, "base mode %o\n", (unsigned) st.st_mode);
    s_walk (base, "", s_record, out);
    close (base);
    fclose (out);
    return text;
}

void
fuzz_tree_check_outside (const fuzz_tree_t *self)
{
    size_t len;
    char *now = s_snapshot (self, &len);
    if (len != self->snapshot_len || memcmp (now, self->snapshot, len) != 0) {
        fprintf (stderr, "fuzz_tree: the outside tree changed; was:\n%s\nnow:\n%s\n", self->snapshot, now);
        __builtin_trap ();
    }
    free (now);
}

/* ---- making and removing ----------------------------------------------------- */

/* Everything below dir removed, mode 000 directories included. */
static void
s_empty (int dir)
{
    int fd = dup (dir);
    DIR *d = fd >= 0 ? fdopendir (fd) : NULL;
    if (!d)
        __builtin_trap ();
    struct dirent *de;
    while ((de = readdir (d))) {
        struct stat st;
        if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0
            || fstatat (dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR (st.st_mode)) {
            if (fchmodat (dir, de->d_name, 0700, 0) < 0) {
                /* the opening below then says whether it can be entered */
            }
            int sub = openat (dir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                s_empty (sub);
                close (sub);
            }
        }
        unlinkat (dir, de->d_name, S_ISDIR (st.st_mode) ? AT_REMOVEDIR : 0);
    }
    closedir (d);
}

static void
s_make_outside (fuzz_tree_t *self)
{
    if (getrandom (self->canary, sizeof self->canary, 0) != (ssize_t) sizeof self->canary)
        __builtin_trap ();
    for (size_t i = 0; i < sizeof self->canary; i++)
        self->canary[i] |= 0x80; /* a byte no file the fuzzer writes holds */
    static const char *levels[] = {"u", "u/u", TOP};
    char dir_path[96];
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        snprintf (dir_path, sizeof dir_path, "%s/%s", self->base, levels[i]);
        if (mkdir (dir_path, 0755) < 0)
            __builtin_trap ();
    }
    snprintf (self->outside, sizeof self->outside, "%s/outside", dir_path);
    if (mkdir (self->outside, 0755) < 0)
        __builtin_trap ();
    int dir = open (self->outside, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 || mkdirat (dir, "secret", 0700) < 0)
        __builtin_trap ();
    s_write_at (dir, "canary", self->canary, sizeof self->canary, 0600);
    s_write_at (dir, "secret/key", self->canary, sizeof self->canary, 0600);
    s_write_at (dir, "readonly", self->canary, 16, 0444);
    if (symlinkat ("canary", dir, "link") < 0)
        __builtin_trap ();
    close (dir);
}

/* The user and mount namespace of an unprivileged harness: its ids map to
   themselves, as gw_quota_prepare does for the gateway. */
static int
s_enter_userns (void)
{
    char map[64];
    uid_t uid = geteuid ();
    gid_t gid = getegid ();
    if (unshare (CLONE_NEWUSER) < 0)
        return -1;
    FILE *f;
    if (!(f = fopen ("/proc/self/setgroups", "w")) || fputs ("deny", f) < 0 || fclose (f) != 0)
        return -1;
    snprintf (map, sizeof map, "%d %d 1", (int) uid, (int) uid);
    if (!(f = fopen ("/proc/self/uid_map", "w")) || fputs (map, f) < 0 || fclose (f) != 0)
        return -1;
    snprintf (map, sizeof map, "%d %d 1", (int) gid, (int) gid);
    if (!(f = fopen ("/proc/self/gid_map", "w")) || fputs (map, f) < 0 || fclose (f) != 0)
        return -1;
    return 0;
}

/* A mount namespace of this process's own (nothing it mounts is seen on
   the host) with a tmpfs on the base directory, so that a reset costs no
   disk journal; false + why. */
static bool
s_mount_base (fuzz_tree_t *self, const char **why)
{
    if (geteuid () != 0 && s_enter_userns () < 0)
        *why = "unshare(CLONE_NEWUSER) (kernel.unprivileged_userns_clone, or a threaded process)";
    else if (unshare (CLONE_NEWNS) < 0)
        *why = "unshare(CLONE_NEWNS)";
    else if (mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        *why = "making / private";
    else if (mount ("tmpfs", self->base, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0700") < 0)
        *why = "mount tmpfs";
    else
        return true;
    return false;
}

/* The quota workspace's tmpfs, as gw_quota_apply mounts one. */
static bool
s_mount_quota (fuzz_tree_t *self)
{
    char opts[96];
    snprintf (opts, sizeof opts, "size=%d,nr_inodes=%d,mode=0755%s", FUZZ_TREE_BYTES, FUZZ_TREE_FILES,
              geteuid () == 0 ? ",uid=4242,gid=4242" : "");
    return mount ("tmpfs", self->workspace[FUZZ_TREE_QUOTA], "tmpfs", MS_NOSUID | MS_NODEV, opts) == 0;
}

static void
s_destroy (void)
{
    fuzz_tree_t *self = s_tree;
    if (self->quota_mounted)
        umount2 (self->workspace[FUZZ_TREE_QUOTA], MNT_DETACH);
    if (self->base_mounted)
        umount2 (self->base, MNT_DETACH);
    int base = open (self->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (base >= 0) {
        s_empty (base);
        close (base);
    }
    rmdir (self->base);
    free (self->snapshot);
    free (self);
    s_tree = NULL;
}

fuzz_tree_t *
fuzz_tree_new (void)
{
    if (s_tree)
        return s_tree;
    fuzz_tree_t *self = calloc (1, sizeof *self);
    snprintf (self->base, sizeof self->base, "/tmp/kennel-fuzz-files-XXXXXX");
    if (!mkdtemp (self->base))
        __builtin_trap ();
    const char *why = NULL;
    self->base_mounted = s_mount_base (self, &why);
    s_make_outside (self);
    const char *names[2] = {"plain", "quota"};
    for (int i = 0; i < 2; i++) {
        snprintf (self->workspace[i], sizeof self->workspace[i], "%s/" TOP "/%s", self->base, names[i]);
        if (mkdir (self->workspace[i], 0755) < 0)
            __builtin_trap ();
        if (geteuid () == 0 && chown (self->workspace[i], WS_UID, WS_UID) < 0)
            __builtin_trap ();
    }
    self->quota_mounted = self->base_mounted && s_mount_quota (self);
    if (!self->quota_mounted)
        fprintf (stderr, "fuzz_tree: no tmpfs on the quota workspace (%s: %s): its inputs run on a plain directory\n",
                 why ? why : "mount tmpfs", strerror (errno));
    self->snapshot = s_snapshot (self, &self->snapshot_len);
    s_tree = self;
    atexit (s_destroy);
    return self;
}

void
fuzz_tree_reset (fuzz_tree_t *self, fuzz_tree_ws_t ws)
{
    int dir = open (self->workspace[ws], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        __builtin_trap ();
    s_empty (dir);
    static const char text[] = "0123456789abcdef";
    if (mkdirat (dir, "a", 0755) < 0 || mkdirat (dir, "locked", 0755) < 0)
        __builtin_trap ();
    s_write_at (dir, "a/f", text, 10, 0644);
    s_write_at (dir, "c.txt", text, 16, 0644);
    s_write_at (dir, "locked/f", text, 4, 0644);
    char target[160];
    snprintf (target, sizeof target, "%s/canary", self->outside);
    if (symlinkat (self->outside, dir, "ln_dir") < 0 || symlinkat (target, dir, "ln_file") < 0
        || symlinkat ("../outside/canary", dir, "ln_rel") < 0 || symlinkat ("../outside/secret", dir, "ln_sec") < 0
        || symlinkat ("a", dir, "ln_in") < 0 || mkfifoat (dir, "fifo", 0644) < 0
        || mknodat (dir, "sock", S_IFSOCK | 0644, 0) < 0 || fchmodat (dir, "locked", 0, 0) < 0)
        __builtin_trap ();
    /* a hardlink needs one filesystem: none on the quota tmpfs */
    int outside = open (self->outside, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (linkat (outside, "canary", dir, "hl", 0) < 0 && errno != EXDEV)
        __builtin_trap ();
    close (outside);
    char deep[2 * DEEP_LEVELS + 8] = "d";
    for (int i = 0; i < DEEP_LEVELS; i++) {
        if (mkdirat (dir, deep, 0755) < 0)
            __builtin_trap ();
        strcat (deep, "/d");
    }
    close (dir);
}

void
fuzz_tree_plant (const fuzz_tree_t *self, int ws_fd, const char *path, int kind)
{
    const char *slash = strrchr (path, '/');
    const char *name = slash ? slash + 1 : path;
    char parent[4096], aside[512];
    snprintf (parent, sizeof parent, "%.*s", slash ? (int) (slash - path) : 0, path);
    int dir = fuzz_tree_open (ws_fd, parent, O_RDONLY | O_DIRECTORY);
    if (dir < 0 || !*name)
        goto done;
    /* a plant that fails (the name is taken) leaves the workspace as it was */
    int outside = open (self->outside, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;
    switch (kind % FUZZ_TREE_PLANTS) {
    case 0: rc = symlinkat (self->outside, dir, name); break;
    case 1: rc = symlinkat ("../outside/canary", dir, name); break;
    case 2: rc = linkat (outside, "canary", dir, name, 0); break;
    case 3: rc = mkfifoat (dir, name, 0644); break;
    case 4: rc = mkdirat (dir, name, 0); break;
    case 5:
        snprintf (aside, sizeof aside, "%s~", name);
        rc = renameat (dir, name, dir, aside) == 0 ? symlinkat (self->outside, dir, name) : -1;
        break;
    default: rc = symlinkat ("a", dir, name); break;
    }
    (void) rc;
    close (outside);
done:
    if (dir >= 0)
        close (dir);
}

/* ---- the other checks ------------------------------------------------------------ */

void
fuzz_tree_check_bytes (const fuzz_tree_t *self, const void *data, size_t len)
{
    for (size_t i = 0; i + 8 <= sizeof self->canary; i++)
        if (memmem (data, len, self->canary + i, 8))
            __builtin_trap ();
}

void
fuzz_tree_check_beneath (int ws_fd, const char *path)
{
    int fd = fuzz_tree_open (ws_fd, path, O_PATH);
    if (fd < 0) {
        fprintf (stderr, "fuzz_tree: \"%s\" does not resolve beneath the workspace: %s\n", path, strerror (errno));
        __builtin_trap ();
    }
    close (fd);
}

void
fuzz_tree_check_read (int ws_fd, const char *path, int64_t offset, const void *data, size_t len)
{
    int fd = fuzz_tree_open (ws_fd, path, O_RDONLY | O_NONBLOCK);
    char *again = malloc (len + 1);
    ssize_t n = fd >= 0 ? pread (fd, again, len, (off_t) offset) : -1;
    if (n != (ssize_t) len || memcmp (again, data, len) != 0) {
        fprintf (stderr, "fuzz_tree: %zu bytes read at %lld of \"%s\" are not the workspace file's\n", len,
                 (long long) offset, path);
        __builtin_trap ();
    }
    free (again);
    close (fd);
}

void
fuzz_tree_check_served (int ws_fd, const char *path, int64_t offset, const void *data, size_t len)
{
    fuzz_tree_check_read (ws_fd, path, offset, data, len);
    struct stat st;
    int fd = fuzz_tree_open (ws_fd, path, O_RDONLY | O_NONBLOCK);
    if (fd < 0 || fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) || st.st_nlink != 1) {
        fprintf (stderr, "fuzz_tree: \"%s\" was served, and it is no regular file of one name\n", path);
        __builtin_trap ();
    }
    close (fd);
}

/* The enames of the file service's table. */
static const char *ENAMES[] = {
    "InvalidConversationId", "NoSuchConversation", "InvalidPath",     "InvalidRequest",    "InvalidOffset",
    "NoSuchFile",            "NotADirectory",      "IsADirectory",    "SymlinkRefused",    "HardlinkRefused",
    "NotARegularFile",       "PermissionDenied",   "WorkspaceFull",   "DirectoryNotEmpty", "FileExists",
    "TooLarge",              "FileApiUnavailable", "FileError"};

void
fuzz_tree_check_error (const char *ename, const char *evalue)
{
    /* the whole text: a path a message shows may hold any words */
    if (evalue && strcmp (evalue, GW_FILES_ERROR_UNSAID) == 0) {
        fprintf (stderr, "fuzz_tree: a refusal no call of the file service set: %s: %s\n", ename, evalue);
        __builtin_trap (); /* GW_FILES_ERROR_INIT's default reached a client */
    }
    for (size_t i = 0; i < sizeof ENAMES / sizeof ENAMES[0]; i++)
        if (ename && strcmp (ename, ENAMES[i]) == 0 && evalue && *evalue)
            return;
    fprintf (stderr, "fuzz_tree: undocumented error %s: %s\n", ename ? ename : "(none)", evalue ? evalue : "");
    __builtin_trap ();
}

static bool
s_add_size (int dir, const char *name, const char *path, const struct stat *st, void *arg)
{
    (void) dir, (void) name, (void) path;
    if (S_ISREG (st->st_mode))
        *(int64_t *) arg += st->st_size;
    return true;
}

void
fuzz_tree_check_quota (const fuzz_tree_t *self)
{
    if (!self->quota_mounted)
        return;
    struct statfs fs;
    int dir = open (self->workspace[FUZZ_TREE_QUOTA], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int64_t bytes = 0;
    if (dir < 0 || fstatfs (dir, &fs) < 0)
        __builtin_trap ();
    s_walk (dir, "", s_add_size, &bytes);
    close (dir);
    if (fs.f_blocks * fs.f_bsize != FUZZ_TREE_BYTES || fs.f_bfree > fs.f_blocks || fs.f_files != FUZZ_TREE_FILES
        || fs.f_ffree > fs.f_files || bytes < 0 || bytes > FUZZ_TREE_BYTES)
        __builtin_trap ();
}

int
fuzz_tree_fds (void)
{
    DIR *d = opendir ("/proc/self/fd");
    int n = 0;
    if (!d)
        __builtin_trap ();
    while (readdir (d))
        n++;
    closedir (d);
    return n;
}
