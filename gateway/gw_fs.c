/*  gw_fs.c - the gateway's own access to workspaces, which kernels control.

    A kernel (or a process it left behind for a few milliseconds) may swap a
    directory for a symlink while the gateway, as root, walks the tree. So
    every step goes through directory fds: openat(O_NOFOLLOW|O_DIRECTORY)
    refuses a symlink, and unlinkat/fstatat act on names beneath an fd we
    opened, never on a path that is resolved again.

    A kernel also chooses the tree's shape: any depth, and directories of
    mode 000 (an unprivileged gateway owns the sandbox's files but cannot
    read such a directory until it gives itself the permission back). The
    walk is iterative: the levels it is inside are an array on the heap (32
    bytes each), at most WINDOW of them hold an open directory stream, and a
    level closed on the way down is reopened on the way back up with
    openat(child, "..") only if it is the same directory (dev, inode) that
    was left. No recursion, a fixed number of fds, whatever the depth.
    Removal makes each directory the gateway owns 0700 before reading it,
    and passes over a directory until a pass finds it empty. Nothing here
    logs or touches the event loop: callable from any thread. The gateway's
    own directories (state dir, conversations, pool) are made here too
    (gw_fs_make_dir).
*/
#include "gw_util.h"
#include "wire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WINDOW 16 /* directory streams open at once, at most */

typedef struct {
    DIR *dir;  /* NULL while closed (above the window) */
    long pos;  /* measure: where reading resumes after a reopen */
    dev_t dev; /* which directory a reopen must find */
    ino_t ino;
    bool busy;    /* remove: this pass met an entry */
    int64_t mark; /* remove: walk_t.removed when this pass began */
} level_t;

typedef struct {
    level_t *levels;
    size_t depth, cap; /* levels[depth - 1] is the directory being read */
    bool remove;       /* else measure */
    int64_t bytes;
    int64_t removed; /* entries removed so far */
    int error;       /* the errno that stopped a removal, 0 */
} walk_t;

static DIR *
top_dir (walk_t *w)
{
    return w->levels[w->depth - 1].dir;
}

static void
walk_grow (walk_t *w)
{
    size_t cap = w->cap ? w->cap * 2 : 64;
    w->levels = wire_xreallocarray (w->levels, cap, sizeof *w->levels);
    w->cap = cap;
}

/* Enters a directory (takes fd): the level above keeps its position, and
   the oldest open stream closes when the window is full. */
static int
walk_push (walk_t *w, int fd)
{
    struct stat st;
    if (w->depth == w->cap)
        walk_grow (w);
    if (fstat (fd, &st) < 0) {
        close (fd);
        return -1;
    }
    DIR *dir = fdopendir (fd);
    if (!dir) {
        close (fd);
        return -1;
    }
    if (w->depth > 0)
        w->levels[w->depth - 1].pos = telldir (top_dir (w));
    if (w->depth >= WINDOW && w->levels[w->depth - WINDOW].dir) {
        closedir (w->levels[w->depth - WINDOW].dir);
        w->levels[w->depth - WINDOW].dir = NULL;
    }
    w->levels[w->depth++] = (level_t) {.dir = dir, .dev = st.st_dev, .ino = st.st_ino, .mark = w->removed};
    return 0;
}

/* Leaves the current directory for its parent, reopened through ".." when
   its stream was closed: -1 (ESTALE) when ".." is no longer the directory
   that was left (the tree was moved meanwhile). */
static int
walk_pop (walk_t *w)
{
    level_t *child = &w->levels[w->depth - 1];
    level_t *parent = w->depth > 1 ? &w->levels[w->depth - 2] : NULL;
    int rc = 0;
    if (parent && !parent->dir) {
        int up = openat (dirfd (child->dir), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct stat st;
        if (up >= 0 && (fstat (up, &st) < 0 || st.st_dev != parent->dev || st.st_ino != parent->ino)) {
            close (up);
            up = -1;
            errno = ESTALE;
        }
        /* a removal reads it again from the start (what it removed is
           gone); a measure resumes after the entry it was in */
        if (up >= 0 && (parent->dir = fdopendir (up))) {
            if (!w->remove)
                seekdir (parent->dir, parent->pos);
        }
        else {
            if (up >= 0)
                close (up);
            rc = -1;
        }
    }
    closedir (child->dir);
    w->depth--;
    return rc;
}

static void
walk_close_all (walk_t *w)
{
    while (w->depth > 0) {
        level_t *l = &w->levels[--w->depth];
        if (l->dir)
            closedir (l->dir);
    }
    free (w->levels);
    w->levels = NULL;
}

/* A subdirectory to descend into: fd or -1. Removal gives a directory the
   gateway owns its owner permissions back (mode 000 cannot be opened, 0500
   cannot be emptied); fchmodat(AT_SYMLINK_NOFOLLOW) refuses a symlink. */
static int
child_open (walk_t *w, int dirfd, const char *name)
{
    int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat (dirfd, name, flags);
    if (fd < 0 && errno == EACCES && w->remove && fchmodat (dirfd, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
        fd = openat (dirfd, name, flags);
    struct stat st;
    if (fd >= 0 && w->remove && fstat (fd, &st) == 0 && st.st_uid == geteuid () && (st.st_mode & 0700) != 0700)
        fchmod (fd, 0700);
    return fd;
}

/* Enters a subdirectory. One swapped for a symlink or a file meanwhile is
   left to the next pass, which sees what it is now. */
static int
walk_descend (walk_t *w, int dirfd, const char *name)
{
    int fd = child_open (w, dirfd, name);
    if (fd >= 0)
        return walk_push (w, fd);
    return !w->remove || errno == ENOENT || errno == ELOOP || errno == ENOTDIR ? 0 : -1;
}

/* One entry of the current directory: counted, or removed (a non-empty
   directory is entered). 0, or -1 when the removal cannot go on. */
static int
walk_entry (walk_t *w, const char *name)
{
    int dfd = dirfd (top_dir (w));
    struct stat st;
    if (fstatat (dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT || !w->remove ? 0 : -1;
    w->levels[w->depth - 1].busy = true;
    w->bytes += (int64_t) st.st_blocks * 512;
    if (!w->remove)
        return S_ISDIR (st.st_mode) ? walk_descend (w, dfd, name) : 0;
    if (unlinkat (dfd, name, S_ISDIR (st.st_mode) ? AT_REMOVEDIR : 0) == 0) {
        w->removed++;
        return 0;
    }
    if (errno == ENOENT)
        return 0;
    if (!S_ISDIR (st.st_mode))
        return -1;
    return walk_descend (w, dfd, name);
}

/* A removal passes over a directory until a pass finds it empty; a pass
   that met entries and removed nothing anywhere below cannot end (a mount
   point, an entry the gateway may not remove): ENOTEMPTY. */
static int
walk_next_pass (walk_t *w, level_t *l)
{
    if (w->removed == l->mark) {
        errno = ENOTEMPTY;
        return -1;
    }
    l->busy = false;
    l->mark = w->removed;
    rewinddir (l->dir);
    return 0;
}

/* Reads the tree under fd (taken) to the end: 0, or -1 with w->error. */
static int
walk_run (walk_t *w, int fd)
{
    if (walk_push (w, fd) < 0) {
        w->error = errno;
        return -1;
    }
    while (w->depth > 0) {
        level_t *l = &w->levels[w->depth - 1];
        errno = 0;
        struct dirent *de = readdir (l->dir);
        int rc = 0;
        if (de && !streq (de->d_name, ".") && !streq (de->d_name, ".."))
            rc = walk_entry (w, de->d_name);
        else if (!de && errno == 0 && w->remove && l->busy)
            rc = walk_next_pass (w, l);
        else if (!de)
            rc = errno ? -1 : walk_pop (w);
        if (rc < 0) {
            w->error = errno ? errno : EIO;
            walk_close_all (w);
            return -1;
        }
    }
    walk_close_all (w);
    return 0;
}

int
gw_fs_remove_tree (const char *path)
{
    if (!path)
        return 0;
    int fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return unlink (path) == 0 || errno == ENOENT ? 0 : -1; /* a file or a symlink */
    }
    walk_t w = {.remove = true};
    if (walk_run (&w, fd) < 0) {
        errno = w.error;
        return -1;
    }
    return rmdir (path) == 0 || errno == ENOENT ? 0 : -1;
}

int
gw_fs_graveyard_empty (const char *graveyard)
{
    DIR *dir = opendir (graveyard);
    if (!dir)
        return 0;
    int left = 0;
    struct dirent *de;
    while ((de = readdir (dir))) {
        if (streq (de->d_name, ".") || streq (de->d_name, ".."))
            continue;
        char *grave = wire_xasprintf ("%s/%s", graveyard, de->d_name);
        if (gw_fs_remove_tree (grave) < 0)
            left++;
        free (grave);
    }
    closedir (dir);
    if (left == 0)
        rmdir (graveyard);
    return left;
}

int64_t
gw_fs_tree_bytes (const char *path)
{
    int fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    walk_t w = {.remove = false};
    walk_run (&w, fd);
    return w.bytes;
}

int
gw_fs_make_dir (const char *path, mode_t mode, bool parents)
{
    if (parents) {
        char *copy = wire_xstrdup (path);
        for (char *p = copy + 1; *p; p++)
            if (*p == '/') {
                *p = 0;
                int rc = gw_fs_make_dir (copy, mode, false);
                *p = '/';
                if (rc < 0) {
                    free (copy);
                    return -1;
                }
            }
        free (copy);
    }
    return mkdir (path, mode) < 0 && errno != EEXIST ? -1 : 0;
}
