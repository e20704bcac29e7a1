/*  gw_files.h - a conversation's files, as the host reaches them through
    the file API of every front (the control vocabulary's file requests:
    gw_control_files.c; HTTP: http/http_contents.c).

    Paths are relative to the workspace ("" is its root) and resolved
    beneath it only (gw_files.c says how). Every call works on a workspace
    fd of gw_files_root and returns at once: no call blocks on a FIFO or a
    device, and a transfer is a series of chunks of at most
    GW_FILES_CHUNK_MAX bytes, so that no file is ever whole in memory and
    one call stays short on the event loop.
*/
#ifndef GW_FILES_H_INCLUDED
#define GW_FILES_H_INCLUDED

#include "gw_error.h"
#include "wire.h"

#include <sys/stat.h>
#include <sys/types.h>

/* One chunk: a read or write of this much on a tmpfs takes about a
   millisecond (gateway/README.md, "File API"). */
#define GW_FILES_CHUNK_DEFAULT ((size_t) 1 << 20)
#define GW_FILES_CHUNK_MAX ((size_t) 4 << 20)
/* Directory entries one listing reads, at most (the rest: "truncated"). */
#define GW_FILES_LIST_MAX 10000
#define GW_FILES_PATH_MAX 4096

/* Why a call failed: ename static text, evalue one sentence. Every call
   here sets it whenever it fails; a caller starts from GW_FILES_ERROR_INIT,
   so that a path that would ever answer without a reason answers this one
   instead of reading an unset error. */
typedef struct {
    const char *ename;
    char evalue[320];
} gw_files_error_t;
/* FileError with GW_FILES_ERROR_UNSAID (gw_error.h): for an automatic variable only */
#define GW_FILES_ERROR_INIT {.ename = gw_error_name (GW_E_FILE_ERROR), .evalue = GW_FILES_ERROR_UNSAID}

/* path checked and normalized ("a//./b/" is "a/b"; "" the root), malloc'd;
   NULL + err (InvalidPath) for an absolute path, a ".." component, a NUL,
   bytes that are not UTF-8 (a model names its path in JSON) or a path
   longer than GW_FILES_PATH_MAX. */
char *gw_files_path (const char *path, size_t len, gw_files_error_t *err);
/* A directory fd of workspace (a path the gateway made), or -1 + err. */
int gw_files_root (const char *workspace, gw_files_error_t *err);
/* The model of path: {name, path, type "file"|"directory", size,
   created, last_modified, writable}; NULL + err for anything else (err is
   set whenever NULL is returned, as by every call here). */
json_t *gw_files_stat (int root, const char *path, gw_files_error_t *err);
/* A directory's regular files and directories (other entries, and names
   that are not UTF-8, are not listed) among its first GW_FILES_LIST_MAX
   entries: an array of models; *truncated when more were there. */
json_t *gw_files_list (int root, const char *path, bool *truncated, gw_files_error_t *err);
/* A regular file of one name opened for reading, *st its stat; -1 + err. */
int gw_files_open_read (int root, const char *path, struct stat *st, gw_files_error_t *err);
/* A regular file opened for writing from offset: 0 creates it (owned as
   the workspace is) or empties it; any other offset must be its size (the
   chunks of one upload in order). -1 + err. */
int gw_files_open_write (int root, const char *path, int64_t offset, gw_files_error_t *err);
/* len bytes at offset: 0, or -1 + err (WorkspaceFull when the quota
   refuses; the file is then cut back to offset). */
int gw_files_write (int fd, int64_t offset, const void *data, size_t len, gw_files_error_t *err);
/* Up to len bytes at offset: how many (0 at the end), or -1 + err. */
ssize_t gw_files_read (int fd, int64_t offset, void *buf, size_t len, gw_files_error_t *err);
/* A directory made (owned as the workspace is); an existing one is fine. */
int gw_files_mkdir (int root, const char *path, gw_files_error_t *err);
/* A file (any type but a directory: a link or FIFO is removed, never
   followed) or an empty directory removed. */
int gw_files_delete (int root, const char *path, gw_files_error_t *err);
/* A new file (opened for writing) or directory (opened for reading) of a
   name nothing has yet, owned as the workspace is: its fd, or -1 + err
   (FileExists when the name is taken, by anything: no link followed). */
int gw_files_create (int root, const char *path, bool directory, gw_files_error_t *err);
/* A file or directory renamed within the workspace: both parents resolved
   as any path, the source a directory or a regular file of one name, the
   target a name nothing has (FileExists: never replaced, nor a link at
   it followed). The same path is a success once it passed the checks of
   a source. */
int gw_files_rename (int root, const char *from, const char *to, gw_files_error_t *err);
/* A regular file's bytes copied to a new file to (replace: to may exist,
   then it is emptied first; a link, FIFO or hardlink there is refused as
   by gw_files_open_write). One step on the loop: at most
   GW_FILES_CHUNK_MAX bytes (TooLarge). The copy counts against the
   workspace's quota like any write (WorkspaceFull: a new target is
   removed again). */
int gw_files_copy (int root, const char *from, const char *to, bool replace, gw_files_error_t *err);

/* ---- gw_base64.c --------------------------------------------------------- */
/* len bytes as base64 (RFC 4648, padded), a malloc'd string. */
char *gw_base64_encode (const void *data, size_t len);
/* Decodes text (whitespace refused); malloc'd bytes, *len; NULL when text
   is no valid base64. */
void *gw_base64_decode (const char *text, size_t text_len, size_t *len);

#endif
