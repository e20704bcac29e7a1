/*  gw_zmtp.h - a kernel's ZMTP stream, checked before ZeroMQ buffers it:
    the frame-boundary scan (gw_zmtp.c) and the guard that runs one kernel
    connection through it (gw_zmtp_guard.c).
*/
#ifndef GW_ZMTP_H_INCLUDED
#define GW_ZMTP_H_INCLUDED

#include "gw_util.h"
#include <stddef.h>
#include <stdint.h>

typedef struct gw_io gw_io_t; /* gw_io.h */

/* What one message from a kernel may hold (gateway/README.md, "Memory"):
   its frames' bytes together, and its frames. */
typedef struct {
    uint64_t max_message_bytes;
    uint32_t max_frames;
} gw_zmtp_limits_t;
/* Frames in one kernel message: a Jupyter message has its identities, the
   delimiter, the signature, four JSON frames and its buffers. */
#define GW_ZMTP_FRAMES_MAX 4096

/* The frame-boundary reader of one connection's incoming bytes (gw_zmtp.c). */
typedef struct {
    gw_zmtp_limits_t limits;
    int state;
    uint8_t field[64]; /* the greeting, or a frame's size field, as it arrives */
    size_t have;
    uint8_t flags;
    uint64_t body_left;
    uint64_t message_bytes; /* of the message under way */
    uint32_t message_frames;
    const char *stopped; /* why the stream must be cut, or NULL */
} gw_zmtp_scan_t;
void gw_zmtp_scan_init (gw_zmtp_scan_t *self, const gw_zmtp_limits_t *limits);
/* The next len bytes of the stream: NULL while they keep within the
   limits; else (now and ever after) the reason, a static string: none of
   these bytes may be passed on. */
GW_MUST_CHECK const char *gw_zmtp_scan (gw_zmtp_scan_t *self, const uint8_t *data, size_t len);

/* One kernel connection through the scan (gw_zmtp_guard.c): connects to
   the socket at path (never through a symlink) and fills endpoint
   ("ipc://@...") for the relay's ZeroMQ socket to connect to. NULL with
   errno when the kernel's socket cannot be connected. conversation and
   channel name it in the log. */
typedef struct gw_zmtp_guard gw_zmtp_guard_t;
gw_zmtp_guard_t *gw_zmtp_guard_new (gw_io_t *io, const char *path, const gw_zmtp_limits_t *limits,
                                    const char *conversation, const char *channel, char *endpoint,
                                    size_t endpoint_size);
void gw_zmtp_guard_destroy (gw_zmtp_guard_t **self_p);
/* Why the guard cut the kernel's connection (a static string), or NULL. */
const char *gw_zmtp_guard_cut (const gw_zmtp_guard_t *self);

#endif
