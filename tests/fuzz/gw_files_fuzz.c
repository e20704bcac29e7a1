/*  gw_files_fuzz.c - libFuzzer target: the file service (gateway/gw_files.c)
    on a real workspace a hostile kernel filled, beside an outside tree of
    canaries (fuzz_tree.h).

    The kernel controls every byte of its workspace and may change it
    between two calls; the gateway, often root, opens paths there. The
    input is a short program of file calls and of "plants" (what the kernel
    could make meanwhile), each call as a front makes it: the path checked
    by gw_files_path first, or (raw) handed over as is, so that the
    resolution beneath the workspace is fuzzed on its own too (an absolute
    raw path starts at the tree's base, beside the workspace).

    Input: one byte (bit 0: the quota workspace, a tmpfs of
    FUZZ_TREE_BYTES, instead of a plain directory beside the canaries),
    then operations, each an opcode byte (low 4 bits the call, high 4 bits
    its variant) and its arguments:
        0 stat P   1 list P   2 get P OFFSET LENGTH   3 put P SIZE (variant:
        offset 0, the file's size, or OFFSET; bit 2 SIZE in KiB)
        4 mkdir P   5 create P (variant bit 0: a directory)   6 rename P P
        7 copy P P (variant bit 0: replace)   8 delete P   9 plant P (kind:
        the variant, fuzz_tree_plant)   10 hold P: a file opened for
        reading and writing, its name swapped for a symlink to the outside,
        then read and written through the fds
    A path P is a byte (bits 0-1: 1 to 4 tokens; bit 2: raw) and its
    tokens, joined by "/", from TOKENS: names the reset planted and the outside holds (symlinks,
    a hardlink, a FIFO, a socket, a mode 000 directory, 16 directories
    deep), ".", "..", "", "/", a NUL, names of 255 and 256 bytes and a path
    above GW_FILES_PATH_MAX.
    Checked after every operation, trapping otherwise:
    - the outside tree is unchanged (names, types, modes, owners, sizes,
      bytes, link targets; nothing added beside the workspaces);
    - no read returns a canary's bytes, nor any byte >= 0x80 (no file the
      program writes has one), and what a read returns is the bytes of the
      file the path names when resolved with no symlink followed;
    - a path a call succeeded on resolves beneath the workspace with no
      symlink followed;
    - an error is one of docs/PROTOCOL.md §3's, with a message;
    - as many fds open after as before;
    - the quota workspace's tmpfs within its limits; a put the quota
      refused leaves its file cut back to the offset, and a copy it
      refused leaves no file.
*/
#include "gateway/gw_files.h"
#include "fuzz_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define DATA_MAX (255 * 1024)

/* A path's tokens: what the reset planted, and what a path must refuse. */
static const char *TOKENS[] = {
    "a",      "b",      "c.txt",  "f",    ".",    "..",     "",     "/",      "\001NUL", "\001L255", "\001L256",
    "ln_dir", "ln_file", "ln_rel", "ln_sec", "ln_in", "hl",     "fifo", "sock",  "locked",  "\001DEEP", "\001HUGE", "canary", "key",
};
#define TOKEN_COUNT (sizeof TOKENS / sizeof TOKENS[0])

typedef struct {
    const uint8_t *p, *end;
    fuzz_tree_t *tree;
    int ws;
    bool quota; /* ws is the quota workspace: its walk is checked after each call */
    gw_files_error_t err;
} prog_t;

typedef struct {
    char *path; /* checked and normalized, or raw; NULL when refused */
    bool raw;
} path_t;

static uint8_t
s_byte (prog_t *prog)
{
    return prog->p < prog->end ? *prog->p++ : 0;
}

/* One token's bytes appended at buf[*len]. */
static void
s_token (char *buf, size_t *len, size_t cap, const char *token)
{
    size_t n = 0;
    char special[5000];
    if (strcmp (token, "\001NUL") == 0)
        n = 1, special[0] = '\0';
    else if (strcmp (token, "\001L255") == 0 || strcmp (token, "\001L256") == 0)
        n = token[4] == '5' ? 255 : 256, memset (special, 'n', n);
    else if (strcmp (token, "\001DEEP") == 0)
        for (int i = 0; i < 16; i++)
            n += (size_t) sprintf (special + n, "%sd", i ? "/" : "");
    else if (strcmp (token, "\001HUGE") == 0)
        for (; n < GW_FILES_PATH_MAX; n += 2)
            memcpy (special + n, "x/", 2);
    else
        n = strlen (token), memcpy (special, token, n);
    if (*len + n < cap) {
        memcpy (buf + *len, special, n);
        *len += n;
    }
}

/* A path of the program, checked by gw_files_path unless raw (then a NUL
   ends it, as a C string would, and an absolute one is made to start at
   the tree's base: whatever a wrong resolution did with it happens where
   the outside check sees it, never on the host). */
static path_t
s_path (prog_t *prog, bool *refused)
{
    uint8_t spec = s_byte (prog);
    char buf[4 * 5000 + 8];
    size_t len = 0;
    for (int i = 0; i <= (spec & 3); i++) {
        if (i > 0)
            buf[len++] = '/';
        s_token (buf, &len, sizeof buf - 1, TOKENS[s_byte (prog) % TOKEN_COUNT]);
    }
    buf[len] = '\0';
    path_t path = {.raw = (spec & 4) != 0};
    if (path.raw && buf[0] == '/')
        path.path = wire_xasprintf ("%s%s", prog->tree->base, buf);
    else if (path.raw)
        path.path = strdup (buf);
    else if (!(path.path = gw_files_path (buf, len, &prog->err)))
        *refused = true;
    return path;
}

/* ---- the checks after a call ------------------------------------------------- */

/* A read's bytes: none of a canary, none the program could not have
   written, all of the file the path names. */
static void
s_check_read (prog_t *prog, const char *path, int64_t offset, const char *buf, ssize_t n)
{
    fuzz_tree_check_bytes (prog->tree, buf, (size_t) n);
    for (ssize_t i = 0; i < n; i++)
        if ((uint8_t) buf[i] >= 0x80)
            __builtin_trap ();
    fuzz_tree_check_read (prog->ws, path, offset, buf, (size_t) n);
}

/* The parent of path resolves beneath the workspace (after a delete or a
   rename, when path itself is gone). */
static void
s_check_parent (prog_t *prog, const char *path)
{
    const char *slash = strrchr (path, '/');
    char *parent = strndup (path, slash ? (size_t) (slash - path) : 0);
    fuzz_tree_check_beneath (prog->ws, parent);
    free (parent);
}

/* ---- the calls ------------------------------------------------------------------ */

static int
s_stat (prog_t *prog, const char *path)
{
    json_t *model = gw_files_stat (prog->ws, path, &prog->err);
    if (model)
        fuzz_tree_check_beneath (prog->ws, path);
    json_decref (model);
    return model ? 0 : -1;
}

static int
s_list (prog_t *prog, const char *path)
{
    bool truncated;
    json_t *list = gw_files_list (prog->ws, path, &truncated, &prog->err);
    if (list)
        fuzz_tree_check_beneath (prog->ws, path);
    json_decref (list);
    return list ? 0 : -1;
}

static int
s_get (prog_t *prog, const char *path, int64_t offset, size_t length)
{
    struct stat st;
    int fd = gw_files_open_read (prog->ws, path, &st, &prog->err);
    if (fd < 0)
        return -1;
    char *buf = malloc (length);
    ssize_t n = gw_files_read (fd, offset, buf, length, &prog->err);
    close (fd);
    if (n >= 0)
        s_check_read (prog, path, offset, buf, n);
    free (buf);
    return n < 0 ? -1 : 0;
}

/* The file's size as the harness sees it, 0 when it does not resolve. */
static int64_t
s_size (prog_t *prog, const char *path)
{
    struct stat st;
    int fd = fuzz_tree_open (prog->ws, path, O_PATH);
    int64_t size = fd >= 0 && fstat (fd, &st) == 0 ? st.st_size : 0;
    if (fd >= 0)
        close (fd);
    return size;
}

static int
s_put (prog_t *prog, const char *path, int64_t offset, size_t len)
{
    int fd = gw_files_open_write (prog->ws, path, offset, &prog->err);
    if (fd < 0)
        return -1;
    char *data = malloc (len + 1);
    for (size_t i = 0; i < len; i++)
        data[i] = (char) (0x20 + (offset + (int64_t) i) % 0x5f);
    int rc = gw_files_write (fd, offset, data, len, &prog->err);
    struct stat st;
    if (rc < 0 && strcmp (prog->err.ename, "WorkspaceFull") == 0 && (fstat (fd, &st) < 0 || st.st_size != offset))
        __builtin_trap (); /* the file is cut back to offset */
    close (fd);
    free (data);
    if (rc == 0)
        fuzz_tree_check_beneath (prog->ws, path);
    return rc;
}

static int
s_create (prog_t *prog, const char *path, bool directory)
{
    int fd = gw_files_create (prog->ws, path, directory, &prog->err);
    if (fd < 0)
        return -1;
    close (fd);
    fuzz_tree_check_beneath (prog->ws, path);
    return 0;
}

static int
s_copy (prog_t *prog, const char *from, const char *to, bool replace)
{
    int fd, rc = gw_files_copy (prog->ws, from, to, replace, &prog->err);
    if (rc == 0) {
        fuzz_tree_check_beneath (prog->ws, from);
        fuzz_tree_check_beneath (prog->ws, to);
    } else if (!replace && strcmp (prog->err.ename, "WorkspaceFull") == 0
               && (fd = fuzz_tree_open (prog->ws, to, O_PATH)) >= 0) {
        close (fd);
        __builtin_trap (); /* the new name goes with a refused copy */
    }
    return rc;
}

/* A file held open while the kernel swaps its name for a symlink to the
   outside: what the fds reach is still the workspace's file. */
static int
s_hold (prog_t *prog, const char *path)
{
    struct stat st;
    int in = gw_files_open_read (prog->ws, path, &st, &prog->err);
    int out = in >= 0 ? gw_files_open_write (prog->ws, path, st.st_size, &prog->err) : -1;
    if (out < 0) {
        if (in >= 0)
            close (in);
        return -1;
    }
    fuzz_tree_plant (prog->tree, prog->ws, path, 5);
    char buf[64];
    ssize_t n = gw_files_read (in, 0, buf, sizeof buf, &prog->err);
    int rc = n >= 0 ? gw_files_write (out, st.st_size, "held", 4, &prog->err) : -1;
    for (ssize_t i = 0; i < n; i++)
        if ((uint8_t) buf[i] >= 0x80)
            __builtin_trap ();
    if (n >= 0)
        fuzz_tree_check_bytes (prog->tree, buf, (size_t) n);
    close (in);
    close (out);
    return rc;
}

/* One operation; false at the end of the program. */
static bool
s_step (prog_t *prog)
{
    if (prog->p >= prog->end)
        return false;
    uint8_t op = s_byte (prog), variant = op >> 4;
    bool refused = false;
    path_t p = s_path (prog, &refused), q = {0};
    if (op % 16 == 6 || op % 16 == 7)
        q = s_path (prog, &refused);
    int64_t offset = s_byte (prog);
    size_t length = (size_t) s_byte (prog) + 1;
    int fds = fuzz_tree_fds (), rc = -1;
    if (refused)
        fuzz_tree_check_error (prog->err.ename, prog->err.evalue);
    else {
        switch (op % 16) {
        case 0: rc = s_stat (prog, p.path); break;
        case 1: rc = s_list (prog, p.path); break;
        case 2: rc = s_get (prog, p.path, offset * ((variant & 1) ? 1024 : 1), length); break;
        case 3:
            length = (variant & 4) ? length * 1024 : length;
            offset = (variant & 3) == 0 ? 0 : (variant & 3) == 1 ? s_size (prog, p.path) : offset;
            rc = s_put (prog, p.path, offset, length);
            break;
        case 4:
            if ((rc = gw_files_mkdir (prog->ws, p.path, &prog->err)) == 0)
                fuzz_tree_check_beneath (prog->ws, p.path);
            break;
        case 5: rc = s_create (prog, p.path, variant & 1); break;
        case 6:
            if ((rc = gw_files_rename (prog->ws, p.path, q.path, &prog->err)) == 0) {
                s_check_parent (prog, p.path);
                fuzz_tree_check_beneath (prog->ws, q.path);
            }
            break;
        case 7: rc = s_copy (prog, p.path, q.path, variant & 1); break;
        case 8:
            if ((rc = gw_files_delete (prog->ws, p.path, &prog->err)) == 0)
                s_check_parent (prog, p.path);
            break;
        case 9: fuzz_tree_plant (prog->tree, prog->ws, p.path, variant), rc = 0; break;
        case 10: rc = s_hold (prog, p.path); break;
        default: rc = 0; break;
        }
        if (rc < 0)
            fuzz_tree_check_error (prog->err.ename, prog->err.evalue);
    }
    free (p.path);
    free (q.path);
    if (fuzz_tree_fds () != fds)
        __builtin_trap (); /* an fd leaked, or one the harness held was closed */
    fuzz_tree_check_outside (prog->tree);
    if (prog->quota)
        fuzz_tree_check_quota (prog->tree);
    return true;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    prog_t prog = {.p = data + 1, .end = data + size, .tree = fuzz_tree_new ()};
    fuzz_tree_ws_t ws = (data[0] & 1) ? FUZZ_TREE_QUOTA : FUZZ_TREE_PLAIN;
    prog.quota = ws == FUZZ_TREE_QUOTA;
    fuzz_tree_reset (prog.tree, ws);
    prog.ws = gw_files_root (prog.tree->workspace[ws], &prog.err);
    if (prog.ws < 0)
        __builtin_trap ();
    for (int ops = 0; ops < 64 && s_step (&prog); ops++)
        ;
    close (prog.ws);
    return 0;
}
