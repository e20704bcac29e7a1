/*  pykernel_utf8.c - captured fd output as valid UTF-8.

    A read() from the capture pipe can end in the middle of a multi-byte
    character, and C code may write bytes that are not UTF-8 at all. Stream
    text goes into JSON, so: hold back an incomplete tail until more bytes
    arrive, and replace invalid bytes with U+FFFD as Python's
    errors="replace" would. */
#include "pykernel_internal.h"

#include <stdlib.h>
#include <string.h>

/* Length of the valid sequence starting at s (1..4), 0 when s[0] starts an
   invalid sequence, or -1 when the sequence is valid so far but cut by the
   end of the buffer. */
static int
s_sequence_length (const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    int need;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the 2nd byte */
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlong forms */
        if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    }
    else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
    }
    else
        return 0;
    for (int i = 1; i < need; i++) {
        if ((size_t) i >= avail)
            return -1;
        unsigned char lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xBF;
        if (s[i] < lo_i || s[i] > hi_i)
            return 0;
    }
    return need;
}

size_t
pykernel_utf8_complete_prefix (const char *data, size_t len)
{
    /* only the last three bytes can start a cut sequence */
    size_t start = len > 3 ? len - 3 : 0;
    for (size_t i = start; i < len; i++) {
        unsigned char c = (unsigned char) data[i];
        if (c >= 0xC2 && c <= 0xF4
            && s_sequence_length ((const unsigned char *) data + i, len - i) == -1)
            return i;
    }
    return len;
}

char *
pykernel_utf8_sanitize (const char *data, size_t len, size_t *out_len)
{
    /* worst case every byte becomes the 3-byte U+FFFD */
    char *out = malloc (len * 3 + 1);
    if (!out)
        return NULL;
    const unsigned char *s = (const unsigned char *) data;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        int n = s_sequence_length (s + i, len - i);
        if (n > 0) {
            memcpy (out + o, s + i, n);
            o += n;
            i += n;
        }
        else {
            memcpy (out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    out[o] = 0;
    if (out_len)
        *out_len = o;
    return out;
}

int
pykernel_utf8_test (bool verbose)
{
    int failures = 0;
#define CHECK(cond) PYKERNEL_CHECK ("utf8", cond)
    /* "é" is C3 A9, "€" is E2 82 AC, U+1F600 is F0 9F 98 80 */
    CHECK (pykernel_utf8_complete_prefix ("abc", 3) == 3);
    CHECK (pykernel_utf8_complete_prefix ("a\xC3", 2) == 1);
    CHECK (pykernel_utf8_complete_prefix ("a\xC3\xA9", 3) == 3);
    CHECK (pykernel_utf8_complete_prefix ("\xE2\x82", 2) == 0);
    CHECK (pykernel_utf8_complete_prefix ("xy\xF0\x9F\x98", 5) == 2);
    CHECK (pykernel_utf8_complete_prefix ("\xF0\x9F\x98\x80", 4) == 4);
    /* an invalid tail is not held back: it will never become valid */
    CHECK (pykernel_utf8_complete_prefix ("a\xFF", 2) == 2);
    CHECK (pykernel_utf8_complete_prefix ("a\xE0\x80", 3) == 3);
    CHECK (pykernel_utf8_complete_prefix ("", 0) == 0);

    size_t n;
    char *t = pykernel_utf8_sanitize ("h\xC3\xA9llo", 6, &n);
    CHECK (t && n == 6 && strcmp (t, "h\xC3\xA9llo") == 0);
    free (t);
    t = pykernel_utf8_sanitize ("a\xFF" "b", 3, &n);
    CHECK (t && n == 5 && strcmp (t, "a\xEF\xBF\xBD" "b") == 0);
    free (t);
    /* surrogates (ED A0 80) and overlong forms (C0 AF) are invalid */
    t = pykernel_utf8_sanitize ("\xED\xA0\x80", 3, &n);
    CHECK (t && n == 9);
    free (t);
    t = pykernel_utf8_sanitize ("\xC0\xAF", 2, &n);
    CHECK (t && n == 6);
    free (t);
    t = pykernel_utf8_sanitize ("", 0, &n);
    CHECK (t && n == 0 && *t == 0);
    free (t);
    t = pykernel_utf8_sanitize ("x\0y", 3, &n);
    CHECK (t && n == 3 && t[1] == 0 && t[2] == 'y');
    free (t);
#undef CHECK
    if (verbose)
        pykernel_log ("utf8 self-test: %s", failures ? "FAILED" : "ok");
    return failures;
}
