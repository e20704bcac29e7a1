/*  guard.c - a person's directory at /workspace, through a filesystem that
    keeps the kernel from leaving anything the host would run or load.

    The sandbox mounts FUSE at /workspace (mounts.c) and hands the
    /dev/fuse fd to the waiter, which forks this server: a host process,
    outside the sandbox, that does every file operation of the kernel on the
    person's directory itself and refuses what the host could later run:

    - no symlinks, hardlinks, devices, FIFOs or sockets made (EPERM);
    - a new file gets no exec or set-id bits (its mode & 0666), a new
      directory none beyond 0755; chmod never adds an exec bit, never sets
      set-id or sticky bits, never changes a directory; no chown, no xattrs;
    - a name starting with "." is never made, renamed to, written, removed
      or changed, nor anything below such a directory (.bashrc, .local,
      .git/hooks, .envrc, .vscode): dot-entries are read-only;
    - a file with an exec or set-id bit, or with more than one link, is
      never written into, truncated or renamed (the person's programs stay
      theirs; a hardlink could lead anywhere on that filesystem).

    Reads and ordinary files (results, figures, CSVs) behave as on the
    directory itself, live both ways: the kernel's caches hold a name or an
    attribute at most GUARD_TIMEOUT seconds, and cached contents are dropped
    when a file's size or mtime changed (FUSE_CAP_AUTO_INVAL_DATA), so a file
    the person edits is seen within that time.

    The server never follows a symlink and never resolves a path twice: each
    inode it has shown the kernel is an O_PATH fd (libfuse's passthrough_ll
    design), every name is looked up relative to its parent's fd with
    O_NOFOLLOW, files are reopened through /proc/self/fd.

    Whose files: started by an ordinary user, the server is that user.
    Started by root, the server takes the sandbox's host uid and gid and
    sees the directory through an idmapped mount (mount_setattr
    MOUNT_ATTR_IDMAP) that shows the directory's owner and group as those
    ids: what the kernel writes belongs to the owner, root included, and
    neither the sandbox nor this server ever runs as host root or as the
    person. Where the directory's filesystem or the host kernel cannot
    idmap, the server runs as the owner instead; a directory of root's is
    then refused (stage guard), naming the missing feature. */
#define FUSE_USE_VERSION 34
#include "private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse3/fuse_lowlevel.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long the kernel may trust a name or an attribute it got (seconds):
   the lag after which a change the person made outside is seen. */
#define GUARD_TIMEOUT 1.0
#define NOBODY 65534

#define EXEC_OR_SETID (S_IXUSR | S_IXGRP | S_IXOTH | S_ISUID | S_ISGID)

/* One inode the kernel knows: an O_PATH fd, and whether it is a
   dot-entry or lies below one (then it is read-only). */
typedef struct node {
    struct node *next;          /* hash chain */
    int fd;
    dev_t dev;
    ino_t ino;
    uint64_t nlookup;
    bool dot;
} node_t;

typedef struct {
    node_t root;
    node_t **buckets;
    size_t bucket_count, count;
    uid_t uid, inner_uid;       /* the server's ids, and the sandbox's that show them */
    gid_t gid, inner_gid;
} guard_t;

/* --- the host side, before the sandbox starts (the waiter) ------------- */

/* A user namespace that maps the owner's ids to the sandbox's host ids:
   the idmap of the server's view. Its fd, or -1 with errno. */
static int
idmap_userns (uid_t owner, gid_t group, uid_t uid, gid_t gid)
{
    int ready[2];
    if (pipe2 (ready, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork ();
    if (pid == 0) {
        char c = unshare (CLONE_NEWUSER) == 0 ? 'y' : 'n';
        (void) !write (ready[1], &c, 1);
        pause ();
        _exit (0);
    }
    close (ready[1]);
    char c = 0;
    int fd = -1, err = EAGAIN;
    if (pid > 0 && read (ready[0], &c, 1) == 1 && c == 'y') {
        char path[64], line[64];
        snprintf (line, sizeof line, "%u %u 1\n", (unsigned) owner, (unsigned) uid);
        snprintf (path, sizeof path, "/proc/%d/uid_map", (int) pid);
        if (confine_write_file (path, line) == 0) {
            snprintf (line, sizeof line, "%u %u 1\n", (unsigned) group, (unsigned) gid);
            snprintf (path, sizeof path, "/proc/%d/gid_map", (int) pid);
            if (confine_write_file (path, line) == 0) {
                snprintf (path, sizeof path, "/proc/%d/ns/user", (int) pid);
                fd = open (path, O_RDONLY | O_CLOEXEC);
            }
        }
        err = errno;
    }
    else if (pid < 0)
        err = errno;
    close (ready[0]);
    if (pid > 0) {
        kill (pid, SIGKILL);
        waitpid (pid, NULL, 0);
    }
    errno = err;
    return fd;
}

/* A detached copy of the directory's mount, idmapped: owner -> uid. Its
   fd, or -1 with *what naming the failing call and errno set. */
static int
idmap_tree (int dir, uid_t owner, gid_t group, uid_t uid, gid_t gid, const char **what)
{
    *what = "open_tree(OPEN_TREE_CLONE)";
    int tree = (int) syscall (SYS_open_tree, dir, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
    if (tree < 0)
        return -1;
    *what = "a user namespace for the idmap";
    int userns = idmap_userns (owner, group, uid, gid);
    if (userns < 0) {
        int err = errno;
        close (tree);
        errno = err;
        return -1;
    }
    *what = "mount_setattr(MOUNT_ATTR_IDMAP)";
    struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t) userns };
    int rc = mount_setattr (tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr);
    int err = errno;
    close (userns);
    if (rc < 0) {
        close (tree);
        errno = err;
        return -1;
    }
    return tree;
}

static const char *
idmap_hint (int err)
{
    if (err == ENOSYS)
        return "the host kernel has no idmapped mounts (Linux 5.12+)";
    if (err == EINVAL)
        return "its filesystem cannot be idmapped (ext4, xfs, btrfs and tmpfs can; NFS and most FUSE cannot)";
    return "idmapped mounts need root in the host's user namespace";
}

int
guard_prepare (confine_ctx_t *ctx)
{
    const confine_policy_t *p = ctx->policy;
    ctx->guard_dir = ctx->guard_pid = -1;
    if (!p->workspace_guard || !p->workspace)
        return 0;
    int dir = open (p->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (dir < 0 || fstat (dir, &st) < 0) {
        int err = errno;
        if (dir >= 0)
            close (dir);
        confine_error_set (ctx->error, "guard", err, "open %s: %s", p->workspace, strerror (err));
        return -1;
    }
    ctx->guard_uid = ctx->host_uid;
    ctx->guard_gid = ctx->host_gid;
    if (!ctx->root) {
        ctx->guard_dir = dir;
        snprintf (ctx->guard_who, sizeof ctx->guard_who, "of uid %u (the caller)", (unsigned) ctx->host_uid);
        return 0;
    }
    const char *what;
    int tree = idmap_tree (dir, st.st_uid, st.st_gid, ctx->host_uid, ctx->host_gid, &what);
    int err = errno;
    if (tree >= 0) {
        close (dir);
        ctx->guard_dir = tree;
        snprintf (ctx->guard_who, sizeof ctx->guard_who,
                  "of host uid %u on an idmapped mount (the owner %u/%u shown as %u/%u)", (unsigned) ctx->host_uid,
                  (unsigned) st.st_uid, (unsigned) st.st_gid, (unsigned) ctx->host_uid, (unsigned) ctx->host_gid);
        return 0;
    }
    if (st.st_uid == 0) {
        /* stage "workspace", not the guard layer: a guard let degrade would
           not show root's directory to the sandbox either, so the refusal
           names no allow_degraded (gw_launch.c names it for a layer) */
        close (dir);
        confine_error_set (ctx->error, "workspace", err,
                           "the notebook directory %s belongs to root and cannot be shown to the sandbox's uid %u: "
                           "%s: %s; %s; the sandbox never runs as host root: run Jupyter as the user whose files "
                           "these are, or give them the directory (chown)",
                           p->workspace, (unsigned) ctx->host_uid, what, strerror (err), idmap_hint (err));
        return -1;
    }
    ctx->guard_dir = dir;
    ctx->guard_uid = st.st_uid;
    ctx->guard_gid = st.st_gid;
    snprintf (ctx->guard_who, sizeof ctx->guard_who, "of the owner's uid %u (no idmapped mount: %s: %s)",
              (unsigned) st.st_uid, what, strerror (err));
    return 0;
}

/* --- the rules ---------------------------------------------------------- */

static guard_t *
guard_of (fuse_req_t req)
{
    return fuse_req_userdata (req);
}

static node_t *
node_of (fuse_req_t req, fuse_ino_t ino)
{
    return ino == FUSE_ROOT_ID ? &guard_of (req)->root : (node_t *) (uintptr_t) ino;
}

/* 0 when a new entry called name may be made in (or moved into) parent. */
static int
may_name (const node_t *parent, const char *name)
{
    if (parent->dot || name[0] == '.' || strchr (name, '/'))
        return EPERM;
    return 0;
}

/* 0 when the file's contents may change: a regular file, no dot-entry,
   no exec or set-id bit, one link. */
static int
may_write (const node_t *node, const struct stat *st)
{
    if (node->dot || !S_ISREG (st->st_mode) || (st->st_mode & EXEC_OR_SETID) || st->st_nlink > 1)
        return EPERM;
    return 0;
}

static int
stat_node (const node_t *node, struct stat *st)
{
    return fstatat (node->fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
}

/* What the sandbox sees: the server's own ids as the sandbox's user,
   anyone else as nobody. */
static void
shown (const guard_t *g, struct stat *st)
{
    st->st_uid = st->st_uid == g->uid ? g->inner_uid : NOBODY;
    st->st_gid = st->st_gid == g->gid ? g->inner_gid : NOBODY;
}

static char *
proc_path (char buf[32], int fd)
{
    snprintf (buf, 32, "/proc/self/fd/%d", fd);
    return buf;
}

/* --- the inode table ---------------------------------------------------- */

static size_t
bucket_of (const guard_t *g, dev_t dev, ino_t ino)
{
    return (size_t) ((ino * 0x9E3779B97F4A7C15ull) ^ dev) % g->bucket_count;
}

static void
table_grow (guard_t *g)
{
    size_t count = g->bucket_count ? g->bucket_count * 2 : 1024;
    node_t **buckets = confine_xcalloc (count, sizeof *buckets);
    size_t old_count = g->bucket_count;
    node_t **old = g->buckets;
    g->buckets = buckets;
    g->bucket_count = count;
    for (size_t i = 0; i < old_count; i++)
        for (node_t *n = old[i], *next; n; n = next) {
            next = n->next;
            size_t b = bucket_of (g, n->dev, n->ino);
            n->next = buckets[b];
            buckets[b] = n;
        }
    free (old);
}

/* The node of (fd, st), taking fd, one lookup more; dot marks it
   read-only for good (a name once seen as a dot-entry stays one). */
static node_t *
table_add (guard_t *g, int fd, const struct stat *st, bool dot)
{
    if (g->count >= g->bucket_count)
        table_grow (g);
    size_t b = bucket_of (g, st->st_dev, st->st_ino);
    for (node_t *n = g->buckets[b]; n; n = n->next)
        if (n->dev == st->st_dev && n->ino == st->st_ino) {
            close (fd);
            n->nlookup++;
            n->dot = n->dot || dot;
            return n;
        }
    node_t *n = confine_xcalloc (1, sizeof *n);
    n->fd = fd;
    n->dev = st->st_dev;
    n->ino = st->st_ino;
    n->nlookup = 1;
    n->dot = dot;
    n->next = g->buckets[b];
    g->buckets[b] = n;
    g->count++;
    return n;
}

static void
table_forget (guard_t *g, node_t *node, uint64_t count)
{
    if (node == &g->root)
        return;
    node->nlookup = count < node->nlookup ? node->nlookup - count : 0;
    if (node->nlookup)
        return;
    for (node_t **link = &g->buckets[bucket_of (g, node->dev, node->ino)]; *link; link = &(*link)->next)
        if (*link == node) {
            *link = node->next;
            break;
        }
    close (node->fd);
    free (node);
    g->count--;
}

/* --- operations --------------------------------------------------------- */

/* Looks name up below parent and fills e (the kernel's new reference). */
static int
entry_of (fuse_req_t req, node_t *parent, const char *name, struct fuse_entry_param *e)
{
    guard_t *g = guard_of (req);
    if (strchr (name, '/') || strcmp (name, "..") == 0 || strcmp (name, ".") == 0)
        return EINVAL;
    int fd = openat (parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno;
    memset (e, 0, sizeof *e);
    if (fstatat (fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
        int err = errno;
        close (fd);
        return err;
    }
    node_t *node = table_add (g, fd, &e->attr, parent->dot || name[0] == '.');
    shown (g, &e->attr);
    e->ino = (fuse_ino_t) (uintptr_t) node;
    e->attr_timeout = e->entry_timeout = GUARD_TIMEOUT;
    return 0;
}

static void
reply_entry (fuse_req_t req, node_t *parent, const char *name)
{
    struct fuse_entry_param e;
    int err = entry_of (req, parent, name, &e);
    if (err)
        fuse_reply_err (req, err);
    else
        fuse_reply_entry (req, &e);
}

static void
op_lookup (fuse_req_t req, fuse_ino_t parent, const char *name)
{
    reply_entry (req, node_of (req, parent), name);
}

static void
op_forget (fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    table_forget (guard_of (req), node_of (req, ino), nlookup);
    fuse_reply_none (req);
}

static void
op_forget_multi (fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    for (size_t i = 0; i < count; i++)
        table_forget (guard_of (req), node_of (req, forgets[i].ino), forgets[i].nlookup);
    fuse_reply_none (req);
}

static void
reply_attr (fuse_req_t req, node_t *node)
{
    struct stat st;
    int err = stat_node (node, &st);
    if (err) {
        fuse_reply_err (req, err);
        return;
    }
    shown (guard_of (req), &st);
    fuse_reply_attr (req, &st, GUARD_TIMEOUT);
}

static void
op_getattr (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void) fi;
    reply_attr (req, node_of (req, ino));
}

/* chmod: only to fewer rights on a file that is no dot-entry. */
static int
may_chmod (const node_t *node, const struct stat *st, mode_t mode)
{
    mode &= 07777;
    if (mode == (st->st_mode & 07777))
        return 0;
    if (node->dot || !S_ISREG (st->st_mode) || (mode & (S_ISUID | S_ISGID | S_ISVTX))
        || (mode & (S_IXUSR | S_IXGRP | S_IXOTH) & ~st->st_mode))
        return EPERM;
    return 0;
}

static int
set_attrs (node_t *node, const struct stat *st, const struct stat *attr, int to_set, struct fuse_file_info *fi)
{
    char proc[32];
    int err = 0;
    if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
        return EPERM;
    if ((to_set & FUSE_SET_ATTR_MODE) && (err = may_chmod (node, st, attr->st_mode)) == 0
        && (fi ? fchmod ((int) fi->fh, attr->st_mode & 07777) : chmod (proc_path (proc, node->fd), attr->st_mode & 07777)) < 0)
        return errno;
    if (err)
        return err;
    if (to_set & FUSE_SET_ATTR_SIZE) {
        if ((err = may_write (node, st)))
            return err;
        int fd = fi ? (int) fi->fh : open (proc_path (proc, node->fd), O_WRONLY | O_CLOEXEC);
        int rc = fd < 0 ? -1 : ftruncate (fd, attr->st_size);
        err = rc < 0 ? errno : 0;
        if (!fi && fd >= 0)
            close (fd);
        if (err)
            return err;
    }
    if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW)) {
        if (node->dot)
            return EPERM;
        struct timespec times[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };
        if (to_set & FUSE_SET_ATTR_ATIME_NOW)
            times[0].tv_nsec = UTIME_NOW;
        else if (to_set & FUSE_SET_ATTR_ATIME)
            times[0] = attr->st_atim;
        if (to_set & FUSE_SET_ATTR_MTIME_NOW)
            times[1].tv_nsec = UTIME_NOW;
        else if (to_set & FUSE_SET_ATTR_MTIME)
            times[1] = attr->st_mtim;
        int rc = fi ? futimens ((int) fi->fh, times) : utimensat (AT_FDCWD, proc_path (proc, node->fd), times, 0);
        if (rc < 0)
            return errno;
    }
    return 0;
}

static void
op_setattr (fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
    node_t *node = node_of (req, ino);
    struct stat st;
    int err = stat_node (node, &st);
    if (!err && S_ISLNK (st.st_mode))
        err = EPERM;
    if (!err)
        err = set_attrs (node, &st, attr, to_set, fi);
    if (err)
        fuse_reply_err (req, err);
    else
        reply_attr (req, node);
}

static void
op_readlink (fuse_req_t req, fuse_ino_t ino)
{
    char buf[PATH_MAX + 1];
    ssize_t n = readlinkat (node_of (req, ino)->fd, "", buf, sizeof buf - 1);
    if (n < 0) {
        fuse_reply_err (req, errno);
        return;
    }
    buf[n] = 0;
    fuse_reply_readlink (req, buf);
}

static void
op_mkdir (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    node_t *p = node_of (req, parent);
    int err = may_name (p, name);
    if (!err && mkdirat (p->fd, name, mode & 0755) < 0)
        err = errno;
    if (err)
        fuse_reply_err (req, err);
    else
        reply_entry (req, p, name);
}

static void
op_mknod (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
    (void) rdev;
    node_t *p = node_of (req, parent);
    int err = S_ISREG (mode) ? may_name (p, name) : EPERM;
    int fd = err ? -1 : openat (p->fd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, mode & 0666);
    if (!err && fd < 0)
        err = errno;
    if (fd >= 0)
        close (fd);
    if (err)
        fuse_reply_err (req, err);
    else
        reply_entry (req, p, name);
}

static void
op_refuse (fuse_req_t req)
{
    fuse_reply_err (req, EPERM);
}

static void
op_symlink (fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    (void) link, (void) parent, (void) name;
    op_refuse (req);
}

static void
op_link (fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name)
{
    (void) ino, (void) parent, (void) name;
    op_refuse (req);
}

static void
op_setxattr (fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size, int flags)
{
    (void) ino, (void) name, (void) value, (void) size, (void) flags;
    op_refuse (req);
}

static void
op_removexattr (fuse_req_t req, fuse_ino_t ino, const char *name)
{
    (void) ino, (void) name;
    op_refuse (req);
}

static void
remove_entry (fuse_req_t req, fuse_ino_t parent, const char *name, int flags)
{
    node_t *p = node_of (req, parent);
    int err = may_name (p, name);
    if (!err && unlinkat (p->fd, name, flags) < 0)
        err = errno;
    fuse_reply_err (req, err);
}

static void
op_unlink (fuse_req_t req, fuse_ino_t parent, const char *name)
{
    remove_entry (req, parent, name, 0);
}

static void
op_rmdir (fuse_req_t req, fuse_ino_t parent, const char *name)
{
    remove_entry (req, parent, name, AT_REMOVEDIR);
}

static void
op_rename (fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
           unsigned int flags)
{
    node_t *p = node_of (req, parent), *np = node_of (req, newparent);
    struct stat st;
    int err = may_name (p, name) ? EPERM : may_name (np, newname);
    if (!err && (flags & ~(unsigned) (RENAME_NOREPLACE | RENAME_EXCHANGE)))
        err = EPERM; /* RENAME_WHITEOUT makes a device */
    if (!err && fstatat (p->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        err = errno;
    /* the person's programs stay where they are, under their names */
    if (!err && S_ISREG (st.st_mode) && (st.st_mode & EXEC_OR_SETID))
        err = EPERM;
    if (!err && (flags & RENAME_EXCHANGE) && fstatat (np->fd, newname, &st, AT_SYMLINK_NOFOLLOW) == 0
        && S_ISREG (st.st_mode) && (st.st_mode & EXEC_OR_SETID))
        err = EPERM;
    if (!err && renameat2 (p->fd, name, np->fd, newname, flags) < 0)
        err = errno;
    fuse_reply_err (req, err);
}

/* open(2) flags the server passes on: never create, follow or bypass. */
static int
open_flags (int flags)
{
    return (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_DIRECTORY | O_PATH | O_DIRECT | O_NOCTTY)) | O_CLOEXEC;
}

static bool
wants_write (int flags)
{
    return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

static void
reply_open (fuse_req_t req, int fd, struct fuse_file_info *fi)
{
    fi->fh = (uint64_t) fd;
    /* cached pages stay across opens; AUTO_INVAL_DATA drops them when the
       size or mtime the kernel sees changes (the person's edits) */
    fi->keep_cache = 1;
    fi->direct_io = 0;
    if (fuse_reply_open (req, fi) == -ENOENT)
        close (fd);             /* interrupted: the kernel will not release it */
}

static void
op_open (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    node_t *node = node_of (req, ino);
    struct stat st;
    char proc[32];
    int err = stat_node (node, &st);
    if (!err && !S_ISREG (st.st_mode))
        err = EPERM;
    if (!err && wants_write (fi->flags))
        err = may_write (node, &st);
    int fd = err ? -1 : open (proc_path (proc, node->fd), open_flags (fi->flags));
    if (!err && fd < 0)
        err = errno;
    if (err)
        fuse_reply_err (req, err);
    else
        reply_open (req, fd, fi);
}

static void
op_create (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
    node_t *p = node_of (req, parent);
    int err = may_name (p, name);
    int fd = err ? -1 : openat (p->fd, name, open_flags (fi->flags) | O_CREAT | O_EXCL | O_NOFOLLOW, mode & 0666);
    if (!err && fd < 0)
        err = errno;
    struct fuse_entry_param e;
    if (!err && (err = entry_of (req, p, name, &e)) == 0) {
        struct stat st;
        /* the name must still be the file just made */
        if (fstat (fd, &st) < 0 || st.st_ino != e.attr.st_ino) {
            table_forget (guard_of (req), (node_t *) (uintptr_t) e.ino, 1);
            err = EAGAIN;
        }
    }
    if (err) {
        if (fd >= 0)
            close (fd);
        fuse_reply_err (req, err);
        return;
    }
    fi->fh = (uint64_t) fd;
    fi->keep_cache = 1;
    fi->direct_io = 0;
    if (fuse_reply_create (req, &e, fi) == -ENOENT)
        close (fd);
}

static void
op_read (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void) ino;
    struct fuse_bufvec buf = FUSE_BUFVEC_INIT (size);
    buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    buf.buf[0].fd = (int) fi->fh;
    buf.buf[0].pos = off;
    fuse_reply_data (req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void
op_write_buf (fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off, struct fuse_file_info *fi)
{
    (void) ino;
    struct fuse_bufvec out = FUSE_BUFVEC_INIT (fuse_buf_size (in));
    out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    out.buf[0].fd = (int) fi->fh;
    out.buf[0].pos = off;
    ssize_t n = fuse_buf_copy (&out, in, 0);
    if (n < 0)
        fuse_reply_err (req, (int) -n);
    else
        fuse_reply_write (req, (size_t) n);
}

static void
op_flush (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void) ino;
    /* what close(2) would report (NFS-style errors), as the file's own close */
    int dup_fd = dup ((int) fi->fh);
    fuse_reply_err (req, dup_fd < 0 ? errno : close (dup_fd) < 0 ? errno : 0);
}

static void
op_release (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void) ino;
    close ((int) fi->fh);
    fuse_reply_err (req, 0);
}

static void
op_fsync (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void) ino;
    int rc = datasync ? fdatasync ((int) fi->fh) : fsync ((int) fi->fh);
    fuse_reply_err (req, rc < 0 ? errno : 0);
}

static void
op_fallocate (fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, struct fuse_file_info *fi)
{
    (void) ino;
    fuse_reply_err (req, fallocate ((int) fi->fh, mode, offset, length) < 0 ? errno : 0);
}

static void
op_opendir (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    int fd = openat (node_of (req, ino)->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = fd < 0 ? NULL : fdopendir (fd);
    if (!dir) {
        int err = errno;
        if (fd >= 0)
            close (fd);
        fuse_reply_err (req, err);
        return;
    }
    fi->fh = (uint64_t) (uintptr_t) dir;
    if (fuse_reply_open (req, fi) == -ENOENT)
        closedir (dir);
}

static void
op_readdir (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void) ino;
    DIR *dir = (DIR *) (uintptr_t) fi->fh;
    char *buf = confine_xmalloc (size);
    size_t used = 0;
    seekdir (dir, off);
    struct dirent *d;
    errno = 0;
    while ((d = readdir (dir))) {
        struct stat st = { .st_ino = d->d_ino, .st_mode = (mode_t) d->d_type << 12 };
        size_t n = fuse_add_direntry (req, buf + used, size - used, d->d_name, &st, telldir (dir));
        if (n > size - used)
            break;              /* the next call starts at this entry again */
        used += n;
    }
    if (!d && errno && !used)
        fuse_reply_err (req, errno);
    else
        fuse_reply_buf (req, buf, used);
    free (buf);
}

static void
op_releasedir (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void) ino;
    closedir ((DIR *) (uintptr_t) fi->fh);
    fuse_reply_err (req, 0);
}

static void
op_statfs (fuse_req_t req, fuse_ino_t ino)
{
    struct statvfs st;
    if (fstatvfs (node_of (req, ino)->fd, &st) < 0)
        fuse_reply_err (req, errno);
    else
        fuse_reply_statfs (req, &st);
}

static void
op_init (void *userdata, struct fuse_conn_info *conn)
{
    (void) userdata;
    /* the kernel's write-back cache would trust its own sizes and times */
    conn->want &= ~(unsigned) FUSE_CAP_WRITEBACK_CACHE;
    if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
        conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
}

static const struct fuse_lowlevel_ops guard_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readlink = op_readlink,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .open = op_open,
    .read = op_read,
    .write_buf = op_write_buf,
    .flush = op_flush,
    .release = op_release,
    .fsync = op_fsync,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
    .statfs = op_statfs,
    .setxattr = op_setxattr,
    .removexattr = op_removexattr,
    .create = op_create,
    .fallocate = op_fallocate,
};

/* --- the server process ------------------------------------------------- */

/* Takes the server's ids (root only) and as many fds as the hard limit
   allows (one per inode the kernel holds). */
static int
server_identity (confine_ctx_t *ctx)
{
    if (ctx->root && (setgroups (0, NULL) < 0 || setresgid (ctx->guard_gid, ctx->guard_gid, ctx->guard_gid) < 0
                      || setresuid (ctx->guard_uid, ctx->guard_uid, ctx->guard_uid) < 0))
        return -1;
    /* should a request ever subvert it: no file outside the directory;
       where the kernel has no Landlock the rules above are all there is */
    if (landlock_only_below (3) < 0 && errno != ENOSYS && errno != EOPNOTSUPP)
        return -1;
    struct rlimit lim;
    if (getrlimit (RLIMIT_NOFILE, &lim) == 0) {
        lim.rlim_cur = lim.rlim_max;
        setrlimit (RLIMIT_NOFILE, &lim);
    }
    return 0;
}

_Noreturn static void
server_run (confine_ctx_t *ctx, int fuse_fd)
{
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    if (getppid () == 1)
        _exit (1);
    /* the directory at fd 3, /dev/fuse at 4, nothing else of the waiter's */
    int dir = fcntl (ctx->guard_dir, F_DUPFD_CLOEXEC, 64), dev = fcntl (fuse_fd, F_DUPFD_CLOEXEC, 64);
    if (dir < 0 || dev < 0 || dup3 (dir, 3, O_CLOEXEC) < 0 || dup3 (dev, 4, O_CLOEXEC) < 0
        || close_range (5, ~0U, 0) < 0 || server_identity (ctx) < 0)
        _exit (1);
    fuse_fd = 4;
    guard_t g = { .root = { .fd = 3, .nlookup = 1 } };
    g.uid = geteuid ();
    g.gid = getegid ();
    g.inner_uid = ctx->policy->uid;
    g.inner_gid = ctx->policy->gid;
    table_grow (&g);
    char *argv[] = { "kennel-guard", NULL };
    struct fuse_args args = FUSE_ARGS_INIT (1, argv);
    struct fuse_session *se = fuse_session_new (&args, &guard_ops, sizeof guard_ops, &g);
    char mountpoint[32];
    snprintf (mountpoint, sizeof mountpoint, "/dev/fd/%d", fuse_fd);
    if (!se || fuse_session_mount (se, mountpoint) < 0)
        _exit (1);
    int rc = fuse_session_loop (se);
    _exit (rc < 0 ? 1 : 0);
}

int
guard_serve (confine_ctx_t *ctx, int fuse_fd)
{
    pid_t pid = fork ();
    if (pid == 0)
        server_run (ctx, fuse_fd);
    int err = errno;
    close (fuse_fd);
    if (pid < 0) {
        confine_error_set (ctx->error, "guard", err, "fork the server of %s: %s", ctx->policy->workspace,
                           strerror (err));
        return -1;
    }
    ctx->guard_pid = pid;
    close (ctx->guard_dir);
    ctx->guard_dir = -1;
    return 0;
}

void
guard_end (confine_ctx_t *ctx)
{
    if (ctx->guard_dir >= 0)
        close (ctx->guard_dir);
    ctx->guard_dir = -1;
    if (ctx->guard_pid > 0) {
        kill (ctx->guard_pid, SIGKILL);
        waitpid (ctx->guard_pid, NULL, 0);
    }
    ctx->guard_pid = -1;
}
