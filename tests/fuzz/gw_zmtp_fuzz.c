/*  gw_zmtp_fuzz.c - libFuzzer target: gateway/gw_zmtp.c, the frame-boundary
    reader of a kernel's ZMTP stream, against a whole-buffer reference.

    The guard feeds the scanner whatever chunks recv returns, so its answer
    must not depend on where the stream is split, and it must stop exactly
    where a plain reading of RFC 37 over the whole buffer says the limits
    are passed. Traps on any disagreement.

    Input: one selector byte, then the stream.
        bits 0-1  max_message_bytes: 0, 1, 300, 1 MiB
        bits 2-3  max_frames: 1, 2, 5, 4096
        bit  4    a valid NULL-mechanism 3.1 greeting goes first (so the
                  fuzzer reaches the frames without finding one)
        bits 5-7  the chunk size the stream is fed in: 1, 2, 3, 7, 64,
                  255, 4096, all at once
    Checked: the chunked answer equals the whole-buffer answer and the
    reference's; while not stopped, the message under way is within the
    limits.
*/
#include "gateway/gw_zmtp.h"
#include "wire.h"
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static const uint64_t max_bytes[] = {0, 1, 300, 1 << 20};
static const uint32_t max_frames[] = {1, 2, 5, GW_ZMTP_FRAMES_MAX};
static const size_t chunks[] = {1, 2, 3, 7, 64, 255, 4096, SIZE_MAX};

/* RFC 37 over the whole buffer: the reason to stop, or NULL (within the
   limits so far, the stream possibly incomplete). */
static const char *
s_reference (const uint8_t *s, size_t len, const gw_zmtp_limits_t *limits)
{
    static const char mech[20] = "NULL";
    if (len < 64)
        return NULL;
    if (s[0] != 0xFF || !(s[9] & 1))
        return "a greeting without the ZMTP 3 signature";
    if (s[10] < 3)
        return "a greeting of a ZMTP version before 3";
    if (memcmp (s + 12, mech, sizeof mech) != 0)
        return "a greeting with a mechanism other than NULL";
    uint64_t bytes = 0, frames = 0;
    size_t p = 64;
    while (p < len) {
        uint8_t flags = s[p++];
        size_t width = flags & 2 ? 8 : 1;
        if (len - p < width)
            return NULL;
        uint64_t n = 0;
        for (size_t i = 0; i < width; i++)
            n = n << 8 | s[p + i];
        p += width;
        if (flags & 0xF8)
            return "a frame with reserved flag bits set";
        if (flags & 4) {
            if (flags & 1)
                return "a command with MORE set";
            if (n > limits->max_message_bytes)
                return "a command over the byte limit";
        }
        else {
            if (bytes + n > limits->max_message_bytes || bytes + n < bytes)
                return "a message over the byte limit";
            if (frames >= limits->max_frames)
                return "a message over the frame limit";
            bytes += n;
            frames++;
            if (!(flags & 1))
                bytes = frames = 0;
        }
        if (n >= len - p)
            return NULL;
        p += (size_t) n;
    }
    return NULL;
}

static bool
s_same (const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp (a, b) == 0);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    gw_zmtp_limits_t limits = {max_bytes[sel & 3], max_frames[(sel >> 2) & 3]};
    size_t chunk = chunks[sel >> 5];
    uint8_t *stream = wire_xmalloc (64 + size);
    size_t len = 0;
    if (sel & 0x10) {
        memset (stream, 0, 64);
        stream[0] = 0xFF;
        stream[9] = 0x7F;
        stream[10] = 3;
        stream[11] = 1;
        memcpy (stream + 12, "NULL", 4);
        len = 64;
    }
    memcpy (stream + len, data + 1, size - 1);
    len += size - 1;

    gw_zmtp_scan_t whole, pieces;
    gw_zmtp_scan_init (&whole, &limits);
    gw_zmtp_scan_init (&pieces, &limits);
    const char *a = gw_zmtp_scan (&whole, stream, len);
    const char *b = NULL;
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        b = gw_zmtp_scan (&pieces, stream + off, n);
        if (!b && (pieces.message_bytes > limits.max_message_bytes || pieces.message_frames > limits.max_frames))
            __builtin_trap ();
    }
    if (!s_same (a, b) || !s_same (a, s_reference (stream, len, &limits)))
        __builtin_trap ();
    /* once stopped, it stays stopped */
    if (a && gw_zmtp_scan (&whole, stream, len) != a)
        __builtin_trap ();
    free (stream);
    return 0;
}
