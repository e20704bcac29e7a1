/*  gw_util.h - the gateway's leaf helpers: checked results, path and id
    sizes, the two clocks (gw_clock.c), strings from clients and
    conversation ids (gw_text.c), kernel and session ids (gw_id.c),
    workspace trees walked without following symlinks (gw_fs.c). Depends
    on nothing of the gateway.
*/
#ifndef GW_UTIL_H_INCLUDED
#define GW_UTIL_H_INCLUDED

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

/* On a check of untrusted bytes (a peek, a validator, a policy lowering):
   ignoring its result would let them through, so the compiler refuses. */
#define GW_MUST_CHECK __attribute__ ((warn_unused_result))

/* A path built from the state dir and a suffix (an ipc port, a
   sub-directory): PATH_MAX and room for the suffix. */
#define GW_PATH_MAX (PATH_MAX + 104)
/* The longest path of an ipc socket: sun_path less its NUL (107 on Linux). */
#define GW_SUN_PATH_MAX ((int) sizeof ((struct sockaddr_un *) 0)->sun_path - 1)
/* The random part of run/ and sock/ names: 16 of wire_id_new's hex digits,
   short so that the socket paths in them fit GW_SUN_PATH_MAX. */
#define GW_SHORT_ID_LEN 16
/* Signatures each replay cache remembers (client, control and kernel side). */
#define GW_REPLAY_CAPACITY 65536

/* ---- gw_clock: intervals on CLOCK_MONOTONIC, dates on CLOCK_REALTIME -- */

/* Seconds on CLOCK_MONOTONIC: every timeout, age, deadline and duration. */
double gw_clock_mono (void);
/* Seconds since the epoch (CLOCK_REALTIME): only for dates that are shown. */
double gw_clock_wall (void);
/* The wall-clock date of a CLOCK_MONOTONIC instant, for display. */
double gw_clock_wall_of (double mono);
/* t (epoch seconds) as 2026-01-31T12:00:00.000000Z */
void gw_iso_time (double t, char out[40]);

/* ---- gw_text: strings from clients, whole or refused ------------------- */

/* The string of value when it is a JSON string without a NUL, else NULL
   (a NUL would cut the C string: "a\u0000b" read as "a"). */
GW_MUST_CHECK const char *gw_text (const json_t *value);
/* Whether no string and no object key anywhere in value holds a NUL: what
   the gateway passes on in a launch spec (the launcher's parser refuses
   NUL) or reads with json_object_foreach (keys as C strings). */
GW_MUST_CHECK bool gw_text_clean (const json_t *value);
/* The number of characters (code points) in bytes bytes of UTF-8. */
size_t gw_text_chars (const char *s, size_t bytes);
/* How many bytes of s to print ("%.*s") to show at most max bytes of it
   without splitting a character: a message must stay valid UTF-8. */
int gw_text_fit (const char *s, int max);
/* The len bytes of s as text for a message or a log line (a URL's %FF,
   a name a kernel made): every byte that is no part of a UTF-8 character
   shown as \xHH, cut between characters to fit out (size bytes, ending in
   a NUL). Returns out. */
char *gw_text_escape (const char *s, size_t len, char *out, size_t size);
/* Replaces a malloc'd string field (wire_connection_new fills defaults). */
void gw_set_string (char **field, const char *value);
/* Conversation ids: [A-Za-z0-9._-]{1,128}, not "." or ".." (gw_text.c). */
GW_MUST_CHECK bool gw_conv_id_valid (const char *id);

/* ---- gw_id: kernel and session ids, routable by shard ------------------ */

#define GW_SHARD_MAX 8     /* hex digits: a UUID's first group */
#define GW_ID_UUID_SIZE 37 /* 8-4-4-4-12 and the NUL */
/* A random UUID-shaped id whose first group is shard (1 to GW_SHARD_MAX
   lowercase hex digits: gw_config checks it) zero-padded; "" or NULL: all
   random. */
void gw_id_new (const char *shard, char out[GW_ID_UUID_SIZE]);

/* ---- gw_fs: workspaces, walked without following symlinks --------------- */

/* Removes a tree through directory fds (any depth, at most 16 directory
   streams open; a symlink is removed, never followed; a directory the
   gateway owns is made 0700 before it is read). 0 when path is gone, else
   -1 with errno. Callable from any thread. */
int gw_fs_remove_tree (const char *path);
/* Retries the removal of what graveyard holds (removed once empty);
   returns how many entries are left. */
int gw_fs_graveyard_empty (const char *graveyard);
/* Disk usage (allocated blocks) of a tree, symlinks not followed. */
int64_t gw_fs_tree_bytes (const char *path);
/* mkdir of path with mode, a directory there already being no error; with
   parents, the missing ones above it first, each with mode (mkdir -p). 0,
   or -1 with errno. */
int gw_fs_make_dir (const char *path, mode_t mode, bool parents);

#endif
