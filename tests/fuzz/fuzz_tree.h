/*  fuzz_tree.h - a real workspace beside an "outside" tree of canaries, for
    the targets of the file service (gw_files_fuzz.c, gw_control_fuzz.c).

    One temporary directory holds, three levels down (u/u/u/: four ".."
    from a workspace stay in it), outside/ (canary files, a private
    directory, a read-only file: what the gateway, often root, can open but
    a kernel must never reach), plain/ (a workspace on the same filesystem,
    as without the quota layer: a hardlink to a canary can be planted) and
    quota/ (a workspace with a tmpfs of FUZZ_TREE_BYTES mounted on it when
    the host lets this process mount, as the gateway does). Each reset
    fills a workspace with what a hostile kernel could have made there:
    symlinks to the outside directory and files (absolute and relative), one
    to a directory inside, a hardlink to a canary, a FIFO, a socket, a
    directory of mode 000, files and a directory. Every check traps
    (__builtin_trap) when its property does not hold.
*/
#ifndef FUZZ_TREE_H_INCLUDED
#define FUZZ_TREE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FUZZ_TREE_BYTES (64 * 1024)
#define FUZZ_TREE_FILES 64
#define FUZZ_TREE_CANARY_LEN 32

typedef enum { FUZZ_TREE_PLAIN, FUZZ_TREE_QUOTA } fuzz_tree_ws_t;

typedef struct {
    char base[64];
    char outside[128];
    char workspace[2][128]; /* by fuzz_tree_ws_t */
    bool base_mounted;     /* a tmpfs holds all three */
    bool quota_mounted;    /* one of its own is on workspace[FUZZ_TREE_QUOTA] */
    uint8_t canary[FUZZ_TREE_CANARY_LEN]; /* random, every byte >= 0x80 */
    char *snapshot;        /* the outside tree as made */
    size_t snapshot_len;
} fuzz_tree_t;

/* The tree, made once per process: in a mount namespace of its own, on a
   tmpfs, when the process may mount (as root, or in a user namespace of
   its own); otherwise on /tmp's disk and without the quota tmpfs, which
   stderr says once, naming why. Removed at exit. */
fuzz_tree_t *fuzz_tree_new (void);
/* ws emptied and filled again with the planted entries. */
void fuzz_tree_reset (fuzz_tree_t *self, fuzz_tree_ws_t ws);
/* Traps unless the outside tree is as made: every entry's name, type,
   mode, owner, size, bytes and link target, and nothing added beside the
   workspaces. */
void fuzz_tree_check_outside (const fuzz_tree_t *self);
/* path (relative to ws_fd) opened as the file service promises to
   resolve: beneath ws_fd, no symlink followed (the last one opened itself
   with O_PATH); -1 + errno. */
int fuzz_tree_open (int ws_fd, const char *path, int flags);
/* What a kernel could make at path (its parent resolved as by
   fuzz_tree_open; nothing when it does not resolve), by kind: a symlink to
   the outside directory, one to a canary (relative), a hardlink to a
   canary, a FIFO, a directory of mode 000, path swapped for a symlink to
   the outside directory (moved aside to path~ first), a symlink to "a"
   inside. */
#define FUZZ_TREE_PLANTS 7
void fuzz_tree_plant (const fuzz_tree_t *self, int ws_fd, const char *path, int kind);
/* Traps when data holds 8 bytes in a row of the canary. */
void fuzz_tree_check_bytes (const fuzz_tree_t *self, const void *data, size_t len);
/* Traps unless path (relative to ws_fd) resolves with no symlink followed,
   beneath ws_fd (the resolution the file service promises). */
void fuzz_tree_check_beneath (int ws_fd, const char *path);
/* Traps unless len bytes read at offset of path were those of the same
   file reached with no symlink followed. */
void fuzz_tree_check_read (int ws_fd, const char *path, int64_t offset, const void *data, size_t len);
/* fuzz_tree_check_read, and the file is a regular file of one name (a
   hardlink to a canary is refused): checked by the file's identity, not
   by looking for a canary's bytes in what was served, where a client may
   write any bytes (libFuzzer learns a memmem's needle, and then writes
   the canary itself). */
void fuzz_tree_check_served (int ws_fd, const char *path, int64_t offset, const void *data, size_t len);
/* Traps unless ename is one of docs/PROTOCOL.md §3 "Files" and evalue
   says something (and not GW_FILES_ERROR_INIT's default: no call set it). */
void fuzz_tree_check_error (const char *ename, const char *evalue);
/* Traps when the quota workspace's tmpfs holds more than its limits. */
void fuzz_tree_check_quota (const fuzz_tree_t *self);
/* The process's open fds. */
int fuzz_tree_fds (void);

#endif
