/*  gw_files_test.c - self-test of the file service (make check):

    gw_base64   every length 0-300 of random bytes round-trips; text that is
                not canonical base64 (a length not a multiple of 4, a
                character outside the alphabet, whitespace, "=" inside or
                three of them, a NUL) is refused whole;
    gw_files    paths: "a//./b/" is "a/b", "" and "." the root; absolute,
                "..", a NUL inside and 4097 bytes refused. In a directory
                standing for a workspace: a symlink at the end or inside the
                path refused (SymlinkRefused) for read, write, stat and
                list, its target untouched; a FIFO with no writer refused at
                once (NotARegularFile, the test would hang on a blocking
                open); a hardlink refused; a chunk written at 0 and appended
                at its size, a wrong offset refused, read back whole and in
                parts; mkdir, listing (symlinks and FIFOs not listed),
                delete of a file, of a non-empty directory (refused), of a
                symlink (the link goes, its target stays); exclusive create,
                rename and copy: never over an existing name (a symlink
                there stays a link), never through a symlinked parent,
                never of a link, FIFO or hardlink, a directory never into
                itself, a copy with replace never through a link.

    Exit 0 when every check passed; each failure prints one line.
*/
#include "gateway/gw_files.h"
#include "gateway/gw_util.h"
#include "tests/gateway/gw_check.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void
test_base64 (void)
{
    unsigned char data[300];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char) rand ();
    for (size_t n = 0; n <= sizeof data; n++) {
        char *text = gw_base64_encode (data, n);
        size_t len = 0;
        unsigned char *back = gw_base64_decode (text, strlen (text), &len);
        CHECK (back && len == n && memcmp (back, data, n) == 0);
        free (back);
        free (text);
    }
    const char *bad[] = {"A", "AB", "ABC", "AB=C", "A===", "====", "AB==AB==", "AB C", "AB\nC", "AB-_", "AA=A"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t len;
        void *out = gw_base64_decode (bad[i], strlen (bad[i]), &len);
        CHECK (out == NULL);
        free (out);
    }
    size_t len;
    CHECK (gw_base64_decode ("AA\0A", 4, &len) == NULL);
}

static void
path_is (const char *in, const char *want)
{
    gw_files_error_t err;
    char *out = gw_files_path (in, strlen (in), &err);
    CHECK (want ? out && streq (out, want) : !out && streq (err.ename, "InvalidPath"));
    free (out);
}

static void
test_paths (void)
{
    path_is ("a//./b/", "a/b");
    path_is ("", "");
    path_is (".", "");
    path_is ("./x", "x");
    path_is ("a..b/..c", "a..b/..c");
    path_is ("/etc/passwd", NULL);
    path_is ("..", NULL);
    path_is ("a/../b", NULL);
    path_is ("a/..", NULL);
    gw_files_error_t err;
    CHECK (gw_files_path ("a\0b", 3, &err) == NULL);
    char *long_path = wire_xmalloc (4098);
    memset (long_path, 'a', 4097);
    long_path[4097] = 0;
    path_is (long_path, NULL);
    long_path[4096] = 0;
    path_is (long_path, long_path);
    free (long_path);
    /* a model names its path in JSON: bytes that are not UTF-8 are no path */
    path_is ("\xff", NULL);
    path_is ("a/\xc3", NULL);
    path_is ("\xed\xa0\x80", NULL); /* a surrogate */
    path_is ("h\xc3\xa9llo", "h\xc3\xa9llo");
    char shown[32];
    CHECK (streq (gw_text_escape ("a\xff\xc3\xa9" "\x00" "b", 6, shown, sizeof shown), "a\\xFF\xc3\xa9\\x00b"));
    CHECK (streq (gw_text_escape ("\xff\xff\xff", 3, shown, 9), "\\xFF\\xFF")); /* cut between escapes */
}

static void
put (int root, const char *path, const char *text)
{
    gw_files_error_t err;
    int fd = gw_files_open_write (root, path, 0, &err);
    CHECK (fd >= 0 && gw_files_write (fd, 0, text, strlen (text), &err) == 0);
    if (fd >= 0)
        close (fd);
}

static bool
refused (int rc_or_fd, const gw_files_error_t *err, const char *ename)
{
    bool ok = rc_or_fd < 0 && streq (err->ename, ename);
    if (!ok)
        fprintf (stderr, "expected %s, got %d %s\n", ename, rc_or_fd, rc_or_fd < 0 ? err->ename : "");
    return ok;
}

/* A name the kernel made of bytes that are not UTF-8 has no model: a
   stat of it is an error that says so (never NULL without one), and a
   listing leaves it out. */
static void
test_not_utf8 (int root)
{
    gw_files_error_t err = {.ename = NULL};
    put (root, "ok", "ok");
    int fd = openat (root, "\xff", O_WRONLY | O_CREAT | O_EXCL, 0644);
    CHECK (fd >= 0);
    close (fd);
    CHECK (gw_files_stat (root, "\xff", &err) == NULL && err.ename && streq (err.ename, "InvalidPath"));
    bool truncated;
    json_t *list = gw_files_list (root, "", &truncated, &err);
    CHECK (json_array_size (list) == 1
           && streq (json_string_value (json_object_get (json_array_get (list, 0), "name")), "ok"));
    json_decref (list);
    CHECK (unlinkat (root, "\xff", 0) == 0 && gw_files_delete (root, "ok", &err) == 0);
}

static void
test_planted (int root, const char *outside)
{
    gw_files_error_t err;
    struct stat st;
    char target[600];
    snprintf (target, sizeof target, "%s/secret", outside);
    CHECK (symlinkat (target, root, "link") == 0);
    CHECK (symlinkat (outside, root, "dirlink") == 0);
    CHECK (refused (gw_files_open_read (root, "link", &st, &err), &err, "SymlinkRefused"));
    CHECK (refused (gw_files_open_read (root, "dirlink/secret", &st, &err), &err, "SymlinkRefused"));
    CHECK (refused (gw_files_open_write (root, "link", 0, &err), &err, "SymlinkRefused"));
    CHECK (refused (gw_files_open_write (root, "dirlink/new", 0, &err), &err, "SymlinkRefused"));
    CHECK (gw_files_stat (root, "link", &err) == NULL && streq (err.ename, "SymlinkRefused"));
    bool truncated;
    CHECK (gw_files_list (root, "dirlink", &truncated, &err) == NULL && streq (err.ename, "SymlinkRefused"));
    CHECK (mkfifoat (root, "fifo", 0600) == 0);
    CHECK (refused (gw_files_open_read (root, "fifo", &st, &err), &err, "NotARegularFile"));
    CHECK (refused (gw_files_open_write (root, "fifo", 0, &err), &err, "NotARegularFile"));
    put (root, "one", "one");
    CHECK (linkat (root, "one", root, "two", 0) == 0);
    CHECK (refused (gw_files_open_read (root, "two", &st, &err), &err, "HardlinkRefused"));
    CHECK (refused (gw_files_open_write (root, "one", 0, &err), &err, "HardlinkRefused"));
    CHECK (gw_files_delete (root, "two", &err) == 0);
    CHECK (gw_files_delete (root, "link", &err) == 0 && gw_files_delete (root, "dirlink", &err) == 0);
    CHECK (gw_files_delete (root, "fifo", &err) == 0 && gw_files_delete (root, "one", &err) == 0);
    CHECK (access (target, F_OK) == 0);
}

static void
test_chunks (int root)
{
    gw_files_error_t err;
    struct stat st;
    CHECK (gw_files_mkdir (root, "d", &err) == 0 && gw_files_mkdir (root, "d", &err) == 0);
    int fd = gw_files_open_write (root, "d/f", 0, &err);
    CHECK (fd >= 0 && gw_files_write (fd, 0, "hello ", 6, &err) == 0);
    close (fd);
    CHECK (refused (gw_files_open_write (root, "d/f", 3, &err), &err, "InvalidOffset"));
    fd = gw_files_open_write (root, "d/f", 6, &err);
    CHECK (fd >= 0 && gw_files_write (fd, 6, "world", 5, &err) == 0);
    close (fd);
    char buf[32] = "";
    fd = gw_files_open_read (root, "d/f", &st, &err);
    CHECK (fd >= 0 && st.st_size == 11);
    CHECK (gw_files_read (fd, 0, buf, sizeof buf, &err) == 11 && memcmp (buf, "hello world", 11) == 0);
    CHECK (gw_files_read (fd, 6, buf, 3, &err) == 3 && memcmp (buf, "wor", 3) == 0);
    CHECK (gw_files_read (fd, 11, buf, 3, &err) == 0);
    close (fd);
    CHECK (refused (gw_files_open_read (root, "d", &st, &err), &err, "IsADirectory"));
    CHECK (refused (gw_files_open_read (root, "nothing", &st, &err), &err, "NoSuchFile"));
    CHECK (refused (gw_files_delete (root, "d", &err), &err, "DirectoryNotEmpty"));
    CHECK (mkfifoat (root, "d/fifo", 0600) == 0 && symlinkat ("/etc", root, "d/l") == 0);
    bool truncated;
    json_t *list = gw_files_list (root, "d", &truncated, &err);
    CHECK (list && json_array_size (list) == 1 && !truncated);
    CHECK (streq (json_string_value (json_object_get (json_array_get (list, 0), "path")), "d/f"));
    json_decref (list);
    json_t *model = gw_files_stat (root, "d/f", &err);
    CHECK (model && json_integer_value (json_object_get (model, "size")) == 11);
    CHECK (streq (json_string_value (json_object_get (model, "type")), "file"));
    json_decref (model);
    CHECK (gw_files_delete (root, "d/f", &err) == 0 && gw_files_delete (root, "d/fifo", &err) == 0);
    CHECK (gw_files_delete (root, "d/l", &err) == 0 && gw_files_delete (root, "d", &err) == 0);
    CHECK (refused (gw_files_delete (root, "", &err), &err, "InvalidPath"));
}

/* path holds text (and is a regular file). */
static bool
holds (int root, const char *path, const char *text)
{
    gw_files_error_t err;
    struct stat st;
    char buf[64] = "";
    int fd = gw_files_open_read (root, path, &st, &err);
    ssize_t n = fd >= 0 ? gw_files_read (fd, 0, buf, sizeof buf - 1, &err) : -1;
    if (fd >= 0)
        close (fd);
    return n == (ssize_t) strlen (text) && memcmp (buf, text, (size_t) n) == 0;
}

static void
test_moves (int root, const char *outside)
{
    gw_files_error_t err;
    char target[600], escaped[600];
    snprintf (target, sizeof target, "%s/secret", outside);
    snprintf (escaped, sizeof escaped, "%s/x", outside);
    CHECK (symlinkat (target, root, "link") == 0 && symlinkat (outside, root, "dirlink") == 0);
    CHECK (mkfifoat (root, "fifo", 0600) == 0);
    put (root, "a", "A");
    put (root, "c", "C");
    CHECK (gw_files_rename (root, "a", "b", &err) == 0 && gw_files_rename (root, "b", "b", &err) == 0);
    CHECK (refused (gw_files_rename (root, "b", "c", &err), &err, "FileExists") && holds (root, "c", "C"));
    CHECK (refused (gw_files_rename (root, "b", "link", &err), &err, "FileExists"));
    CHECK (refused (gw_files_rename (root, "b", "dirlink/x", &err), &err, "SymlinkRefused"));
    CHECK (refused (gw_files_rename (root, "link", "l2", &err), &err, "SymlinkRefused"));
    CHECK (refused (gw_files_rename (root, "fifo", "f2", &err), &err, "NotARegularFile"));
    CHECK (refused (gw_files_rename (root, "nothing", "n2", &err), &err, "NoSuchFile"));
    CHECK (refused (gw_files_rename (root, "dirlink/x", "dirlink/x", &err), &err, "SymlinkRefused"));
    CHECK (refused (gw_files_rename (root, "link", "link", &err), &err, "SymlinkRefused"));
    CHECK (refused (gw_files_rename (root, "nothing", "nothing", &err), &err, "NoSuchFile"));
    CHECK (gw_files_mkdir (root, "d", &err) == 0);
    CHECK (refused (gw_files_rename (root, "d", "d/in", &err), &err, "InvalidPath"));
    CHECK (refused (gw_files_rename (root, "", "r", &err), &err, "InvalidPath"));
    CHECK (gw_files_copy (root, "b", "d/b", false, &err) == 0 && holds (root, "d/b", "A"));
    CHECK (refused (gw_files_copy (root, "b", "c", false, &err), &err, "FileExists") && holds (root, "c", "C"));
    CHECK (gw_files_copy (root, "b", "c", true, &err) == 0 && holds (root, "c", "A"));
    CHECK (refused (gw_files_copy (root, "b", "b", true, &err), &err, "FileExists") && holds (root, "b", "A"));
    CHECK (refused (gw_files_copy (root, "b", "link", true, &err), &err, "SymlinkRefused"));
    CHECK (refused (gw_files_copy (root, "b", "link", false, &err), &err, "FileExists"));
    CHECK (refused (gw_files_copy (root, "b", "dirlink/x", false, &err), &err, "SymlinkRefused"));
    CHECK (refused (gw_files_copy (root, "link", "l3", false, &err), &err, "SymlinkRefused"));
    CHECK (refused (gw_files_copy (root, "d", "d2", false, &err), &err, "IsADirectory"));
    CHECK (linkat (root, "c", root, "c2", 0) == 0);
    CHECK (refused (gw_files_rename (root, "c", "c3", &err), &err, "HardlinkRefused"));
    CHECK (refused (gw_files_copy (root, "c2", "c3", false, &err), &err, "HardlinkRefused"));
    int fd = gw_files_create (root, "n", false, &err);
    CHECK (fd >= 0 && refused (gw_files_create (root, "n", false, &err), &err, "FileExists"));
    if (fd >= 0)
        close (fd);
    fd = gw_files_create (root, "nd", true, &err);
    CHECK (fd >= 0 && refused (gw_files_create (root, "nd", true, &err), &err, "FileExists"));
    if (fd >= 0)
        close (fd);
    CHECK (refused (gw_files_create (root, "link", false, &err), &err, "FileExists"));
    CHECK (refused (gw_files_create (root, "dirlink/y", true, &err), &err, "SymlinkRefused"));
    CHECK (access (escaped, F_OK) < 0 && holds (root, "b", "A"));
    const char *made[] = {"link", "dirlink", "fifo", "b", "c", "c2", "d/b", "d", "n", "nd"};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++)
        CHECK (gw_files_delete (root, made[i], &err) == 0);
    int sfd = open (target, O_RDONLY);
    char buf[16] = "";
    CHECK (sfd >= 0 && read (sfd, buf, sizeof buf) == 6 && memcmp (buf, "secret", 6) == 0);
    if (sfd >= 0)
        close (sfd);
}

int
main (void)
{
    char base[] = "/tmp/gw_files_test-XXXXXX";
    if (!mkdtemp (base)) {
        perror ("mkdtemp");
        return 1;
    }
    char workspace[64], outside[64], secret[96];
    snprintf (workspace, sizeof workspace, "%s/workspace", base);
    snprintf (outside, sizeof outside, "%s/outside", base);
    snprintf (secret, sizeof secret, "%s/secret", outside);
    CHECK (mkdir (workspace, 0700) == 0 && mkdir (outside, 0700) == 0);
    int fd = open (secret, O_WRONLY | O_CREAT, 0600);
    CHECK (fd >= 0 && write (fd, "secret", 6) == 6);
    close (fd);
    test_base64 ();
    test_paths ();
    gw_files_error_t err;
    int root = gw_files_root (workspace, &err);
    CHECK (root >= 0);
    test_planted (root, outside);
    test_chunks (root);
    test_moves (root, outside);
    test_not_utf8 (root);
    close (root);
    CHECK (unlink (secret) == 0 && rmdir (workspace) == 0 && rmdir (outside) == 0 && rmdir (base) == 0);
    printf ("gw_files_test: %s (%d failures)\n", failures ? "FAILED" : "OK", failures);
    return failures ? 1 : 0;
}
