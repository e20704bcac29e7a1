/*  gw_files.c - a conversation's files, resolved beneath its workspace.

    The kernel owns the workspace and may plant anything in it while the
    gateway (often root) reads or writes there: a symlink to /etc/shadow, a
    hardlink, a FIFO that blocks a reader forever, a file swapped for a
    symlink between a check and its use. So:
    - a path is checked first: no absolute path, no "..", no NUL;
    - it is resolved by openat2 from the workspace's fd with RESOLVE_BENEATH
      | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV, plus
      O_NOFOLLOW: a symlink anywhere on the path, a mount crossed, an
      escape are refused by the kernel in the same call that opens, so
      there is no window between check and use; everything after works on
      that fd;
    - files are opened O_NONBLOCK (a FIFO opens at once; without a writer
      or reader it opens or fails with ENXIO, never waits), then fstat'd:
      only a regular file is read or written. The workspace tmpfs is
      mounted nodev, so a device node cannot even be opened;
    - a regular file with more than one name is refused: on the
      workspace's own tmpfs a hardlink could only name another file of the
      workspace, but a workspace without the quota layer (allow_degraded
      "quota") sits on the gateway's disk, where a link could name a file
      the kernel should not reach through the host.
    openat2 needs Linux 5.6: before, every call fails closed with
    FileApiUnavailable.
*/
#include "gw_files.h"
#include "gw_util.h"
#include "wire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RESOLVE_FLAGS (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

static int
fail (gw_files_error_t *err, gw_error_t error, const char *fmt, const char *path)
{
    err->ename = gw_error_name (error);
    snprintf (err->evalue, sizeof err->evalue, fmt, gw_text_fit (path, 200), path);
    return -1;
}

/* errno after a call on path, as the client's error. */
static int
fail_errno (gw_files_error_t *err, const char *path)
{
    int e = errno;
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return fail (err, GW_E_NO_SUCH_FILE, "no such file or directory: %.*s", path);
    case ELOOP:
        return fail (err, GW_E_SYMLINK_REFUSED, "a symlink is on the path (links are never followed): %.*s", path);
    case EXDEV:
        return fail (err, GW_E_INVALID_PATH, "the path leaves the workspace: %.*s", path);
    case EACCES:
    case EPERM:
        return fail (err, GW_E_PERMISSION_DENIED, "permission denied: %.*s", path);
    case ENOSPC:
    case EDQUOT:
        return fail (err, GW_E_WORKSPACE_FULL,
                     "the workspace's quota (workspace_bytes or workspace_files) is full: %.*s", path);
    case EISDIR:
        return fail (err, GW_E_IS_A_DIRECTORY, "a directory, not a file: %.*s", path);
    case ENXIO:
    case ETXTBSY:
        return fail (err, GW_E_NOT_A_REGULAR_FILE, "not a regular file: %.*s", path);
    case ENOTEMPTY:
        return fail (err, GW_E_DIRECTORY_NOT_EMPTY, "the directory is not empty: %.*s", path);
    case EEXIST:
        return fail (err, GW_E_FILE_EXISTS, "a file of another type has this name: %.*s", path);
    case ENOSYS:
        return fail (err, GW_E_FILE_API_UNAVAILABLE, "openat2 is unavailable (Linux 5.6 or later is needed): %.*s",
                     path);
    default:
        err->ename = gw_error_name (GW_E_FILE_ERROR);
        snprintf (err->evalue, sizeof err->evalue, "%s: %.*s", strerror (e), gw_text_fit (path, 200), path);
        return -1;
    }
}

char *
gw_files_path (const char *path, size_t len, gw_files_error_t *err)
{
    if (strlen (path) != len || len > GW_FILES_PATH_MAX || path[0] == '/') {
        fail (err, GW_E_INVALID_PATH,
              "the path must be relative to the workspace, without NUL, at most 4096 bytes: %.*s", path);
        return NULL;
    }
    if (!wire_utf8_valid ((const unsigned char *) path, len)) {
        char shown[200];
        fail (err, GW_E_INVALID_PATH, "the path is not UTF-8 text (a file's model names it in JSON): %.*s",
              gw_text_escape (path, len, shown, sizeof shown));
        return NULL;
    }
    char *out = wire_xmalloc (len + 1);
    size_t n = 0;
    for (const char *p = path; *p;) {
        size_t seg = strcspn (p, "/");
        if (seg == 2 && p[0] == '.' && p[1] == '.') {
            free (out);
            fail (err, GW_E_INVALID_PATH, "\"..\" is refused in a path: %.*s", path);
            return NULL;
        }
        if (seg > 0 && !(seg == 1 && p[0] == '.')) {
            if (n > 0)
                out[n++] = '/';
            memcpy (out + n, p, seg);
            n += seg;
        }
        p += seg + (p[seg] == '/');
    }
    out[n] = '\0';
    return out;
}

/* path beneath root, or root itself again for "". */
static int
resolve (int root, const char *path, int flags, mode_t mode)
{
    /* openat2 refuses O_NOCTTY beside O_PATH */
    int extra = (flags & O_PATH) ? 0 : O_NOCTTY;
    struct open_how how = {.flags = (uint64_t) (flags | O_NOFOLLOW | O_CLOEXEC | extra),
                           .mode = (flags & O_CREAT) ? mode : 0,
                           .resolve = RESOLVE_FLAGS};
    return (int) syscall (SYS_openat2, root, *path ? path : ".", &how, sizeof how);
}

int
gw_files_root (const char *workspace, gw_files_error_t *err)
{
    int fd = open (workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        fail_errno (err, "the workspace");
    return fd;
}

/* Files the host makes belong to the workspace's owner (the sandbox's uid
   on a root gateway), so the kernel can change what it was given. */
static void
own_as_root (int root, int fd)
{
    struct stat rs, st;
    if (geteuid () == 0 && fstat (root, &rs) == 0 && fstat (fd, &st) == 0
        && (st.st_uid != rs.st_uid || st.st_gid != rs.st_gid) && fchown (fd, rs.st_uid, rs.st_gid) < 0) {
        /* the file stays root's: readable by the kernel (0644), not writable */
    }
}

/* The model of path, or NULL + err: JSON holds only UTF-8, and a name the
   kernel made of other bytes has no model (a listing leaves it out). */
static json_t *
model_of (const char *path, const struct stat *st, gw_files_error_t *err)
{
    char created[40], modified[40];
    if (!wire_utf8_valid ((const unsigned char *) path, strlen (path))) {
        char shown[200];
        fail (err, GW_E_INVALID_PATH,
              "the name is not UTF-8 text, so no model can name it (rename it in the kernel): %.*s",
              gw_text_escape (path, strlen (path), shown, sizeof shown));
        return NULL;
    }
    gw_iso_time ((double) st->st_ctim.tv_sec + st->st_ctim.tv_nsec / 1e9, created);
    gw_iso_time ((double) st->st_mtim.tv_sec + st->st_mtim.tv_nsec / 1e9, modified);
    const char *slash = strrchr (path, '/');
    json_t *model = json_pack ("{s:s, s:s, s:s, s:I, s:s, s:s, s:b}", "name", slash ? slash + 1 : path, "path", path,
                               "type", S_ISDIR (st->st_mode) ? "directory" : "file", "size", (json_int_t) st->st_size,
                               "created", created, "last_modified", modified, "writable", (st->st_mode & S_IWUSR) != 0);
    if (!model)
        fail (err, GW_E_FILE_ERROR, "the model of %.*s could not be made", path);
    return model;
}

json_t *
gw_files_stat (int root, const char *path, gw_files_error_t *err)
{
    int fd = resolve (root, path, O_PATH, 0);
    struct stat st;
    if (fd < 0 || fstat (fd, &st) < 0) {
        fail_errno (err, path);
        if (fd >= 0)
            close (fd);
        return NULL;
    }
    close (fd);
    if (S_ISLNK (st.st_mode)) { /* O_PATH | O_NOFOLLOW opened the link itself */
        fail (err, GW_E_SYMLINK_REFUSED, "a symlink (links are never followed): %.*s", path);
        return NULL;
    }
    if (!S_ISDIR (st.st_mode) && !S_ISREG (st.st_mode)) {
        fail (err, GW_E_NOT_A_REGULAR_FILE, "not a regular file or directory: %.*s", path);
        return NULL;
    }
    return model_of (path, &st, err);
}

/* O_NOFOLLOW | O_DIRECTORY fails with ENOTDIR on a symlink as on a file:
   which one it was, for the client. */
static int
fail_not_dir (int root, const char *path, gw_files_error_t *err)
{
    struct stat st;
    int fd = resolve (root, path, O_PATH, 0);
    bool link = fd >= 0 && fstat (fd, &st) == 0 && S_ISLNK (st.st_mode);
    if (fd >= 0)
        close (fd);
    if (link)
        return fail (err, GW_E_SYMLINK_REFUSED, "a symlink (links are never followed): %.*s", path);
    return fail (err, GW_E_NOT_A_DIRECTORY, "not a directory: %.*s", path);
}

/* path's directory, opened for reading; -1 + err. */
static int
open_dir (int root, const char *path, gw_files_error_t *err)
{
    int fd = resolve (root, path, O_RDONLY | O_DIRECTORY | O_NONBLOCK, 0);
    if (fd < 0 && errno == ENOTDIR)
        return fail_not_dir (root, path, err);
    if (fd < 0)
        return fail_errno (err, path);
    return fd;
}

json_t *
gw_files_list (int root, const char *path, bool *truncated, gw_files_error_t *err)
{
    int fd = open_dir (root, path, err);
    DIR *dir = fd >= 0 ? fdopendir (fd) : NULL;
    if (!dir) {
        if (fd >= 0) {
            fail_errno (err, path);
            close (fd);
        }
        return NULL;
    }
    json_t *list = json_array ();
    *truncated = false;
    struct dirent *de;
    /* entries read, listed or not: a directory of a million symlinks
       costs no more of the loop than one of 10,000 files */
    size_t read = 0;
    while ((de = readdir (dir))) {
        struct stat st;
        if (streq (de->d_name, ".") || streq (de->d_name, ".."))
            continue;
        if (read++ == GW_FILES_LIST_MAX) {
            *truncated = true;
            break;
        }
        if (fstatat (dirfd (dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0
            || !(S_ISDIR (st.st_mode) || S_ISREG (st.st_mode)))
            continue;
        char *child = *path ? wire_xasprintf ("%s/%s", path, de->d_name) : wire_xstrdup (de->d_name);
        gw_files_error_t unnamed;
        json_t *model = model_of (child, &st, &unnamed);
        if (model) /* a name that is not UTF-8 is not listed */
            json_array_append_new (list, model);
        free (child);
    }
    closedir (dir);
    return list;
}

/* fd's file is one the API may read or write: regular, one name. */
static int
check_regular (int fd, const char *path, struct stat *st, gw_files_error_t *err)
{
    if (fstat (fd, st) < 0)
        return fail_errno (err, path);
    if (S_ISDIR (st->st_mode))
        return fail (err, GW_E_IS_A_DIRECTORY, "a directory, not a file: %.*s", path);
    if (!S_ISREG (st->st_mode))
        return fail (err, GW_E_NOT_A_REGULAR_FILE, "not a regular file (a FIFO, socket or device): %.*s", path);
    if (st->st_nlink > 1)
        return fail (err, GW_E_HARDLINK_REFUSED, "the file has more than one name (a hardlink): %.*s", path);
    return 0;
}

int
gw_files_open_read (int root, const char *path, struct stat *st, gw_files_error_t *err)
{
    int fd = resolve (root, path, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0)
        return fail_errno (err, path);
    if (check_regular (fd, path, st, err) < 0) {
        close (fd);
        return -1;
    }
    return fd;
}

int
gw_files_open_write (int root, const char *path, int64_t offset, gw_files_error_t *err)
{
    if (!*path)
        return fail (err, GW_E_IS_A_DIRECTORY, "the workspace's root is a directory%.*s", path);
    int fd = resolve (root, path, O_WRONLY | O_NONBLOCK | (offset == 0 ? O_CREAT : 0), 0644);
    struct stat st;
    if (fd < 0)
        return fail_errno (err, path);
    if (check_regular (fd, path, &st, err) < 0) {
        close (fd);
        return -1;
    }
    if (offset != st.st_size && offset != 0) {
        close (fd);
        err->ename = gw_error_name (GW_E_INVALID_OFFSET);
        snprintf (err->evalue, sizeof err->evalue, "offset %lld is not the file's size %lld (chunks go in order)",
                  (long long) offset, (long long) st.st_size);
        return -1;
    }
    if (offset == 0 && st.st_size > 0 && ftruncate (fd, 0) < 0) {
        fail_errno (err, path);
        close (fd);
        return -1;
    }
    own_as_root (root, fd);
    return fd;
}

int
gw_files_write (int fd, int64_t offset, const void *data, size_t len, gw_files_error_t *err)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite (fd, (const char *) data + done, len - done, (off_t) offset + (off_t) done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ENOSPC;
            int e = errno;
            if (ftruncate (fd, (off_t) offset) < 0) {
                /* the chunk's part stays; the next put at 0 empties it */
            }
            errno = e;
            return fail_errno (err, "the file being written");
        }
        done += (size_t) n;
    }
    return 0;
}

ssize_t
gw_files_read (int fd, int64_t offset, void *buf, size_t len, gw_files_error_t *err)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread (fd, (char *) buf + done, len - done, (off_t) offset + (off_t) done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail_errno (err, "the file being read");
        if (n == 0)
            break;
        done += (size_t) n;
    }
    return (ssize_t) done;
}

/* The directory above path's last name, and that name. */
static int
resolve_parent (int root, const char *path, const char **name, gw_files_error_t *err)
{
    const char *slash = strrchr (path, '/');
    *name = slash ? slash + 1 : path;
    char *parent = slash ? wire_xstrndup (path, (size_t) (slash - path)) : wire_xstrdup ("");
    int fd = open_dir (root, parent, err);
    free (parent);
    return fd;
}

int
gw_files_mkdir (int root, const char *path, gw_files_error_t *err)
{
    const char *name;
    if (!*path)
        return 0;
    int dir = resolve_parent (root, path, &name, err);
    if (dir < 0)
        return -1;
    int rc = mkdirat (dir, name, 0755);
    close (dir);
    if (rc < 0 && errno != EEXIST)
        return fail_errno (err, path);
    int fd = open_dir (root, path, err);
    if (fd < 0)
        return -1;
    own_as_root (root, fd);
    close (fd);
    return 0;
}

int
gw_files_delete (int root, const char *path, gw_files_error_t *err)
{
    const char *name;
    struct stat st;
    if (!*path)
        return fail (err, GW_E_INVALID_PATH, "the workspace's root cannot be deleted%.*s", path);
    int dir = resolve_parent (root, path, &name, err);
    if (dir < 0)
        return -1;
    /* the type decides the call; a swap meanwhile makes it fail, never
       follow (unlinkat acts on the name in dir, never on a link's target) */
    int rc = fstatat (dir, name, &st, AT_SYMLINK_NOFOLLOW);
    if (rc == 0)
        rc = unlinkat (dir, name, S_ISDIR (st.st_mode) ? AT_REMOVEDIR : 0);
    int e = errno;
    close (dir);
    errno = e;
    return rc < 0 ? fail_errno (err, path) : 0;
}

int
gw_files_create (int root, const char *path, bool directory, gw_files_error_t *err)
{
    const char *name;
    if (!*path)
        return fail (err, GW_E_FILE_EXISTS, "the workspace's root exists%.*s", path);
    int dir = resolve_parent (root, path, &name, err);
    if (dir < 0)
        return -1;
    int fd;
    if (directory)
        fd = mkdirat (dir, name, 0755) == 0 ? resolve (dir, name, O_RDONLY | O_DIRECTORY, 0) : -1;
    else
        fd = resolve (dir, name, O_WRONLY | O_NONBLOCK | O_CREAT | O_EXCL, 0644);
    int e = errno;
    close (dir);
    errno = e;
    if (fd < 0 && errno == EEXIST)
        return fail (err, GW_E_FILE_EXISTS, "a file or directory of this name exists: %.*s", path);
    if (fd < 0)
        return fail_errno (err, path);
    own_as_root (root, fd);
    return fd;
}

/* name in dir may be renamed or copied: a directory, or a regular file of
   one name (a link is never moved: the file service has none). */
static int
check_movable (int dir, const char *name, const char *path, gw_files_error_t *err)
{
    struct stat st;
    if (fstatat (dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return fail_errno (err, path);
    if (S_ISLNK (st.st_mode))
        return fail (err, GW_E_SYMLINK_REFUSED, "a symlink (links are never followed): %.*s", path);
    if (!S_ISDIR (st.st_mode) && !S_ISREG (st.st_mode))
        return fail (err, GW_E_NOT_A_REGULAR_FILE, "not a regular file or directory: %.*s", path);
    if (S_ISREG (st.st_mode) && st.st_nlink > 1)
        return fail (err, GW_E_HARDLINK_REFUSED, "the file has more than one name (a hardlink): %.*s", path);
    return 0;
}

/* The parents of from and to, opened beneath root; -1 + err. */
static int
resolve_parents (int root, const char *from, const char *to, int dirs[2], const char *names[2],
                 gw_files_error_t *err)
{
    dirs[0] = resolve_parent (root, from, &names[0], err);
    dirs[1] = dirs[0] >= 0 ? resolve_parent (root, to, &names[1], err) : -1;
    if (dirs[1] >= 0)
        return 0;
    if (dirs[0] >= 0)
        close (dirs[0]);
    return -1;
}

int
gw_files_rename (int root, const char *from, const char *to, gw_files_error_t *err)
{
    if (!*from || !*to)
        return fail (err, GW_E_INVALID_PATH, "the workspace's root cannot be renamed, nor be a target%.*s", "");
    int dirs[2];
    const char *names[2];
    if (resolve_parents (root, from, to, dirs, names, err) < 0)
        return -1;
    /* RENAME_NOREPLACE: an existing target (a symlink the kernel planted
       there too) is never replaced, in the same call; renameat2 acts on
       names in the two directory fds, so a name swapped for a symlink
       meanwhile is moved as a link, never followed. The same path is
       checked as any source before its success: a symlink on it, or
       nothing there, is no success. */
    int rc = check_movable (dirs[0], names[0], from, err);
    if (rc == 0 && !streq (from, to) && renameat2 (dirs[0], names[0], dirs[1], names[1], RENAME_NOREPLACE) < 0) {
        int e = errno;
        if (e == EEXIST)
            rc = fail (err, GW_E_FILE_EXISTS, "a file or directory of this name exists: %.*s", to);
        else if (e == EINVAL)
            rc = fail (err, GW_E_INVALID_PATH, "a directory cannot move into itself: %.*s", to);
        else {
            errno = e;
            rc = fail_errno (err, e == ENOENT ? to : from);
        }
    }
    close (dirs[0]);
    close (dirs[1]);
    return rc;
}

int
gw_files_copy (int root, const char *from, const char *to, bool replace, gw_files_error_t *err)
{
    struct stat st;
    if (streq (from, to))
        return fail (err, GW_E_FILE_EXISTS, "a file cannot be copied onto itself: %.*s", to);
    int in = gw_files_open_read (root, from, &st, err);
    if (in < 0)
        return -1;
    if (st.st_size > (off_t) GW_FILES_CHUNK_MAX) {
        close (in);
        return fail (err, GW_E_TOO_LARGE, "a copy is one step of at most 4 MiB, and this file is larger: %.*s", from);
    }
    int out = replace ? gw_files_open_write (root, to, 0, err) : gw_files_create (root, to, false, err);
    char *buf = out >= 0 ? wire_xmalloc ((size_t) st.st_size + 1) : NULL;
    ssize_t n = out >= 0 ? gw_files_read (in, 0, buf, (size_t) st.st_size, err) : -1;
    int rc = n >= 0 ? gw_files_write (out, 0, buf, (size_t) n, err) : -1;
    close (in);
    free (buf);
    if (out >= 0)
        close (out);
    if (rc < 0 && out >= 0 && !replace) {
        gw_files_error_t ignored;
        gw_files_delete (root, to, &ignored); /* the new name goes with the failed copy */
    }
    return rc;
}
