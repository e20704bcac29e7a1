/*  gw_fs_test.c - self-test of workspace removal and measurement (make check):

    gw_fs    a tree 3000 levels deep (files at the bottom) is measured and
             removed with RLIMIT_NOFILE lowered to 64 (a walk holding one fd
             per level would fail); a symlink to a directory outside is
             removed and its target kept; as an unprivileged user (uid 65534
             in a child when run as root), directories of mode 000 and 0500
             it owns are removed; a tree holding an entry that user may not
             remove is moved into the graveyard (nothing stays at its path)
             and removed from there once possible.

    Exit 0 when every check passed; each failure prints one line.
*/
#include "gateway/gw_util.h"
#include "tests/gateway/gw_check.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>


#define NOBODY 65534

static bool
exists (const char *path)
{
    struct stat st;
    return lstat (path, &st) == 0;
}

static void
write_file (int dirfd, const char *name, const char *text)
{
    int fd = openat (dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        CHECK (write (fd, text, strlen (text)) == (ssize_t) strlen (text));
        close (fd);
    }
}

/* root/d/d/.../d (levels deep) with a file at the bottom, built by fds. */
static void
deep_tree (const char *root, int levels)
{
    CHECK (mkdir (root, 0700) == 0);
    int fd = open (root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; i < levels && fd >= 0; i++) {
        CHECK (mkdirat (fd, "d", 0700) == 0);
        int sub = openat (fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        close (fd);
        fd = sub;
    }
    write_file (fd, "f", "secret of the first owner");
    close (fd);
}

static int
open_fds (void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl (fd, F_GETFD) != -1;
    return n;
}

static void
test_deep (const char *base)
{
    char root[4096];
    snprintf (root, sizeof root, "%s/deep", base);
    deep_tree (root, 3000);
    int before = open_fds ();
    struct rlimit saved, low = {64, 64};
    getrlimit (RLIMIT_NOFILE, &saved);
    low.rlim_max = saved.rlim_max;
    CHECK (setrlimit (RLIMIT_NOFILE, &low) == 0);
    CHECK (gw_fs_tree_bytes (root) >= 3000 * 512);
    int rc = gw_fs_remove_tree (root);
    if (rc != 0)
        fprintf (stderr, "removing %d levels under RLIMIT_NOFILE 64: %s\n", 3000, strerror (errno));
    setrlimit (RLIMIT_NOFILE, &saved);
    CHECK (rc == 0);
    CHECK (!exists (root));
    CHECK (open_fds () == before);
}

static void
test_symlink_kept (const char *base)
{
    char root[4096], outside[4096], link[4200], kept[4200];
    snprintf (root, sizeof root, "%s/links", base);
    snprintf (outside, sizeof outside, "%s/outside", base);
    CHECK (mkdir (root, 0700) == 0 && mkdir (outside, 0700) == 0);
    snprintf (kept, sizeof kept, "%s/keep", outside);
    int fd = open (outside, O_RDONLY | O_DIRECTORY);
    write_file (fd, "keep", "host data");
    close (fd);
    snprintf (link, sizeof link, "%s/to-outside", root);
    CHECK (symlink (outside, link) == 0);
    CHECK (gw_fs_remove_tree (root) == 0);
    CHECK (!exists (root) && exists (kept));
}

/* As the tree's owner without privileges: modes 000 and 0500 are undone. */
static int
locked_dirs (const char *base)
{
    char root[4200], path[4300];
    snprintf (root, sizeof root, "%s/locked", base);
    deep_tree (root, 3);
    snprintf (path, sizeof path, "%s/d/d", root);
    int fd = open (path, O_RDONLY | O_DIRECTORY);
    CHECK (mkdirat (fd, "inner", 0700) == 0);
    int inner = openat (fd, "inner", O_RDONLY | O_DIRECTORY);
    write_file (inner, "hidden", "secret");
    close (inner);
    CHECK (fchmodat (fd, "inner", 0, 0) == 0);
    close (fd);
    snprintf (path, sizeof path, "%s/d", root);
    CHECK (chmod (path, 0500) == 0);
    int before = failures;
    CHECK (gw_fs_remove_tree (root) == 0);
    CHECK (!exists (root));
    return failures > before;
}

/* A tree the unprivileged user cannot finish removing (root made
   stuck/foreign/root-owned) goes to the graveyard. */
static int
buried (const char *base)
{
    char root[4200], graveyard[4200];
    snprintf (root, sizeof root, "%s/stuck", base);
    snprintf (graveyard, sizeof graveyard, "%s/graveyard", base);
    int before = failures;
    CHECK (gw_fs_remove_tree (root) == -1);
    char grave[4300];
    snprintf (grave, sizeof grave, "%s/x", graveyard);
    CHECK (mkdir (graveyard, 0700) == 0 && rename (root, grave) == 0); /* as gw_remover_bury does */
    CHECK (gw_fs_graveyard_empty (graveyard) == 1); /* still not ours to remove */
    return failures > before;
}

/* As root, a tree whose removal an unprivileged user cannot finish. */
static void
foreign_tree (const char *mine)
{
    char stuck[4200], foreign[4300];
    snprintf (stuck, sizeof stuck, "%s/stuck", mine);
    snprintf (foreign, sizeof foreign, "%s/foreign", stuck);
    CHECK (mkdir (stuck, 0700) == 0 && chown (stuck, NOBODY, NOBODY) == 0);
    CHECK (mkdir (foreign, 0755) == 0);
    int fd = open (foreign, O_RDONLY | O_DIRECTORY);
    write_file (fd, "root-owned", "x");
    close (fd);
}

/* Runs the unprivileged cases as NOBODY in a child when we are root. */
static void
test_unprivileged (const char *base)
{
    char mine[4096];
    snprintf (mine, sizeof mine, "%s/unpriv", base);
    CHECK (mkdir (mine, 0700) == 0);
    bool root = geteuid () == 0;
    if (root) {
        CHECK (chown (mine, NOBODY, NOBODY) == 0);
        foreign_tree (mine);
    }
    pid_t pid = root ? fork () : 0;
    if (pid == 0) {
        if (root && (setgroups (0, NULL) < 0 || setresgid (NOBODY, NOBODY, NOBODY) < 0
                     || setresuid (NOBODY, NOBODY, NOBODY) < 0))
            _exit (3);
        int rc = locked_dirs (mine);
        if (!root)
            return;
        _exit (rc | buried (mine));
    }
    int status = 0;
    CHECK (waitpid (pid, &status, 0) == pid && WIFEXITED (status) && WEXITSTATUS (status) == 0);
    char graveyard[4200];
    snprintf (graveyard, sizeof graveyard, "%s/graveyard", mine);
    CHECK (gw_fs_graveyard_empty (graveyard) == 0); /* as root it can go now */
    CHECK (!exists (graveyard));
}

int
main (void)
{
    char base[] = "/tmp/gw_fs_test-XXXXXX";
    if (!mkdtemp (base)) {
        perror ("mkdtemp");
        return 1;
    }
    chmod (base, 0755);
    test_deep (base);
    test_symlink_kept (base);
    test_unprivileged (base);
    CHECK (gw_fs_remove_tree (base) == 0);
    printf ("gw_fs_test: %s (%d failures)\n", failures ? "FAILED" : "OK", failures);
    return failures ? 1 : 0;
}
