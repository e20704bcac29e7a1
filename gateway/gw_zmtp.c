/*  gw_zmtp.c - where a kernel's ZMTP 3 byte stream would make ZeroMQ hold
    more than one message's worth.

    ZMQ_MAXMSGSIZE bounds each frame and the high-water marks count whole
    messages, so ZeroMQ buffers a multipart message whose frames all carry
    MORE for as long as the peer writes (issue 12, F3). This scanner reads
    only what ZMTP 3 says about sizes (RFC 37): the 64-byte greeting, then
    per frame a flags byte (MORE 1, LONG 2, COMMAND 4, the rest reserved)
    and a 1- or 8-byte big-endian size, then skips the body. It sums each
    message's frames and counts them, and says stop at the header that
    would pass a limit, before any byte of that frame is let through.
    ZeroMQ still does the protocol itself; what is refused here is only
    what the gateway's own ZeroMQ sockets never send or accept from a
    kernel: another version or mechanism, reserved bits, a command with
    MORE, a message or command over the limits.
*/
#include "gw_zmtp.h"

#include <string.h>

enum { SCAN_GREETING, SCAN_FLAGS, SCAN_SIZE, SCAN_BODY };

#define GREETING_SIZE     64
#define FLAG_MORE         0x01
#define FLAG_LONG         0x02
#define FLAG_COMMAND      0x04
#define GREETING_VERSION  10 /* major version byte */
#define GREETING_MECH     12 /* 20 bytes, NUL-padded */
#define GREETING_MECH_LEN 20

void
gw_zmtp_scan_init (gw_zmtp_scan_t *self, const gw_zmtp_limits_t *limits)
{
    memset (self, 0, sizeof *self);
    self->limits = *limits;
    self->state = SCAN_GREETING;
}

/* The peer speaks ZMTP 3.x (signature 0xFF ... 0x7F, major >= 3: libzmq
   would fall back to 1.0 or 2.0 framing otherwise) with the NULL
   mechanism (CURVE and PLAIN wrap frames in commands). */
static const char *
scan_greeting (const uint8_t *g)
{
    static const char null_mech[GREETING_MECH_LEN] = "NULL";
    if (g[0] != 0xFF || !(g[9] & 0x01))
        return "a greeting without the ZMTP 3 signature";
    if (g[GREETING_VERSION] < 3)
        return "a greeting of a ZMTP version before 3";
    if (memcmp (g + GREETING_MECH, null_mech, GREETING_MECH_LEN) != 0)
        return "a greeting with a mechanism other than NULL";
    return NULL;
}

/* A frame's header is complete: what it announces must fit. */
static const char *
scan_header (gw_zmtp_scan_t *self, uint64_t size)
{
    if (self->flags & ~(FLAG_MORE | FLAG_LONG | FLAG_COMMAND))
        return "a frame with reserved flag bits set";
    if (self->flags & FLAG_COMMAND) {
        if (self->flags & FLAG_MORE)
            return "a command with MORE set";
        if (size > self->limits.max_message_bytes)
            return "a command over the byte limit";
    }
    else {
        if (size > self->limits.max_message_bytes - self->message_bytes)
            return "a message over the byte limit";
        if (self->message_frames >= self->limits.max_frames)
            return "a message over the frame limit";
        self->message_bytes += size;
        self->message_frames++;
        if (!(self->flags & FLAG_MORE))
            self->message_bytes = self->message_frames = 0;
    }
    self->body_left = size;
    self->state = size ? SCAN_BODY : SCAN_FLAGS;
    return NULL;
}

/* Collects up to need bytes of a fixed-size field into self->field; true
   once it is complete. */
static bool
scan_collect (gw_zmtp_scan_t *self, size_t need, const uint8_t **p, const uint8_t *end)
{
    size_t take = need - self->have;
    if (take > (size_t) (end - *p))
        take = (size_t) (end - *p);
    memcpy (self->field + self->have, *p, take);
    self->have += take;
    *p += take;
    return self->have == need;
}

const char *
gw_zmtp_scan (gw_zmtp_scan_t *self, const uint8_t *data, size_t len)
{
    const uint8_t *p = data, *end = data + len;
    while (!self->stopped && p < end) {
        if (self->state == SCAN_GREETING) {
            if (!scan_collect (self, GREETING_SIZE, &p, end))
                break;
            self->stopped = scan_greeting (self->field);
            self->have = 0;
            self->state = SCAN_FLAGS;
        }
        else if (self->state == SCAN_FLAGS) {
            self->flags = *p++;
            self->state = SCAN_SIZE;
        }
        else if (self->state == SCAN_SIZE) {
            if (!scan_collect (self, self->flags & FLAG_LONG ? 8 : 1, &p, end))
                break;
            uint64_t size = 0;
            for (size_t i = 0; i < self->have; i++)
                size = size << 8 | self->field[i];
            self->have = 0;
            self->stopped = scan_header (self, size);
        }
        else {
            size_t take = self->body_left < (uint64_t) (end - p) ? (size_t) self->body_left : (size_t) (end - p);
            p += take;
            self->body_left -= take;
            if (!self->body_left)
                self->state = SCAN_FLAGS;
        }
    }
    return self->stopped;
}
