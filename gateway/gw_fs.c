/*  gw_fs.c - the gateway's own access to workspaces, which kernels control.

    A kernel (or a process it left behind for a few milliseconds) may swap a
    directory for a symlink while the gateway, as root, walks the tree. So
    every step goes through directory fds: openat(O_NOFOLLOW|O_DIRECTORY)
    refuses a symlink, and unlinkat/fstatat act on names beneath an fd we
    opened, never on a path that is resolved again.
*/
#include "gw.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 256 /* a deeper tree is left in place, never a stack overflow */

typedef void (entry_fn) (int dirfd, const char *name, const struct stat *st, void *arg);

/* Calls fn for every entry below dirfd, depth first (children before their
   directory). Takes ownership of dirfd. */
static void
walk (int dirfd, int depth, entry_fn *fn, void *arg)
{
    DIR *dir = fdopendir (dirfd);
    if (!dir) {
        close (dirfd);
        return;
    }
    struct dirent *de;
    while ((de = readdir (dir))) {
        if (streq (de->d_name, ".") || streq (de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat (dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR (st.st_mode) && depth < MAX_DEPTH) {
            int sub = openat (dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                walk (sub, depth + 1, fn, arg);
        }
        fn (dirfd, de->d_name, &st, arg);
    }
    closedir (dir);
}

static void
remove_entry (int dirfd, const char *name, const struct stat *st, void *arg)
{
    (void) arg;
    unlinkat (dirfd, name, S_ISDIR (st->st_mode) ? AT_REMOVEDIR : 0);
}

void
gw_fs_remove_tree (const char *path)
{
    if (!path)
        return;
    int fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        unlink (path); /* a file or a symlink where a directory was expected */
        return;
    }
    walk (fd, 0, remove_entry, NULL);
    rmdir (path);
}

static void
add_entry (int dirfd, const char *name, const struct stat *st, void *arg)
{
    (void) dirfd, (void) name;
    *(int64_t *) arg += (int64_t) st->st_blocks * 512;
}

int64_t
gw_fs_tree_bytes (const char *path)
{
    int64_t total = 0;
    int fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        walk (fd, 0, add_entry, &total);
    return total;
}
