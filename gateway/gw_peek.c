/*  gw_peek.c - one string field of a JSON frame, without building a tree.

    The relay looks inside relayed messages only for routing: the header's
    msg_type, the parent header's msg_id and session, a status message's
    execution_state. Parsing each frame with jansson (a tree of mallocs per
    frame, ~14 parses per execute round trip) was a tenth of the daemon's
    time; this scanner reads the bytes in place.

    It must answer exactly what jansson would, so it only answers for plain
    input: printable ASCII strings without escapes, numbers of at most 15
    digits, nesting under 64. Whatever else it meets (an escape, a byte
    above 0x7e, a long number: valid JSON that jansson decodes into
    something else than the raw bytes, or might refuse) makes it hand the
    frame to jansson. Within that subset the whole frame is checked against
    JSON's grammar, so a frame jansson refuses gives "no value" here too. A
    key given twice takes its last value, as jansson does.

    gw_peek_check uses the same scanner in a second mode that decides
    everything itself (escapes, UTF-8, exponents, long numbers) as Python's
    json would decide, with a depth limit: whether a client can load a frame
    the kernel sent, at the cost of one pass over its bytes.
*/
#include "gw_peek.h"
#include "wire.h"

#include <string.h>

#define DEPTH_MAX 64
/* the longest number gw_peek_check takes (Python's int limit is 4300 digits) */
#define CHECK_NUMBER_MAX 4096

typedef enum { P_OK, P_BAD, P_UNSURE } p_rc_t;

typedef struct {
    const char *p, *end;
    int depth;
    /* gw_peek_check: decide everything (escapes, UTF-8, any number) as
       Python's json would, and refuse nesting above max_depth */
    bool check;
    int max_depth;
} scan_t;

static void
s_ws (scan_t *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool
s_hex (char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* An escape at s->p ('\\'): one of JSON's, \u with four hex digits (a lone
   surrogate or \u0000 included: Python's json takes them). */
static p_rc_t
s_escape (scan_t *s)
{
    if (s->end - s->p < 2)
        return P_BAD;
    char c = s->p[1];
    s->p += 2;
    if (strchr ("\"\\/bfnrt", c) && c)
        return P_OK;
    if (c != 'u' || s->end - s->p < 4)
        return P_BAD;
    for (int i = 0; i < 4; i++)
        if (!s_hex (s->p[i]))
            return P_BAD;
    s->p += 4;
    return P_OK;
}

/* One UTF-8 sequence at s->p (a byte above 0x7e): well formed, shortest
   form, no surrogate, at most U+10FFFF; a client decodes the frame as UTF-8
   before parsing it, and fails on anything else. 0x7f is ASCII. */
static p_rc_t
s_utf8 (scan_t *s)
{
    const unsigned char *u = (const unsigned char *) s->p;
    size_t left = (size_t) (s->end - s->p);
    if (u[0] == 0x7f) {
        s->p++;
        return P_OK;
    }
    size_t n = u[0] >= 0xc2 && u[0] <= 0xdf ? 2 : u[0] >= 0xe0 && u[0] <= 0xef ? 3 : u[0] >= 0xf0 && u[0] <= 0xf4 ? 4 : 0;
    if (n == 0 || left < n)
        return P_BAD;
    for (size_t i = 1; i < n; i++)
        if ((u[i] & 0xc0) != 0x80)
            return P_BAD;
    if ((u[0] == 0xe0 && u[1] < 0xa0) || (u[0] == 0xed && u[1] > 0x9f) || (u[0] == 0xf0 && u[1] < 0x90)
        || (u[0] == 0xf4 && u[1] > 0x8f))
        return P_BAD;
    s->p += n;
    return P_OK;
}

/* A string at s->p ('"'); its bytes between the quotes in *str, *len. */
static p_rc_t
s_string (scan_t *s, const char **str, size_t *len)
{
    if (s->p >= s->end || *s->p != '"')
        return P_BAD;
    const char *start = ++s->p;
    while (s->p < s->end) {
        unsigned char c = (unsigned char) *s->p;
        if (c == '"') {
            *str = start;
            *len = (size_t) (s->p - start);
            s->p++;
            return P_OK;
        }
        if (c < 0x20)
            return P_BAD;
        if ((c == '\\' || c > 0x7e) && !s->check)
            return P_UNSURE;
        p_rc_t rc = c == '\\' ? s_escape (s) : c > 0x7e ? s_utf8 (s) : (s->p++, P_OK);
        if (rc != P_OK)
            return rc;
    }
    return P_BAD;
}

static size_t
s_digits (scan_t *s)
{
    const char *start = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
        s->p++;
    return (size_t) (s->p - start);
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)? ; an exponent is left to jansson */
static p_rc_t
s_number (scan_t *s)
{
    const char *start = s->p;
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (s->p >= s->end)
        return P_BAD;
    if (*s->p == '0')
        s->p++;
    else if (!s_digits (s))
        return P_BAD;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (!s_digits (s))
            return P_BAD;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        if (!s->check)
            return P_UNSURE; /* 1e999: jansson refuses the overflow */
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (!s_digits (s))
            return P_BAD;
    }
    if (s->check) /* Python refuses integers above 4300 digits */
        return s->p - start > CHECK_NUMBER_MAX ? P_BAD : P_OK;
    return s->p - start > 15 ? P_UNSURE : P_OK; /* nor a too big integer */
}

static p_rc_t s_value (scan_t *s);

static p_rc_t
s_literal (scan_t *s, const char *word)
{
    size_t n = strlen (word);
    if ((size_t) (s->end - s->p) < n || memcmp (s->p, word, n) != 0)
        return P_BAD;
    s->p += n;
    return P_OK;
}

/* Elements of an array or members of an object (s->p after the opener). */
static p_rc_t
s_container (scan_t *s, char close, bool members)
{
    if (++s->depth > (s->check ? s->max_depth : DEPTH_MAX))
        return s->check ? P_BAD : P_UNSURE;
    s_ws (s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        s->depth--;
        return P_OK;
    }
    for (;;) {
        p_rc_t rc;
        if (members) {
            const char *k;
            size_t klen;
            if ((rc = s_string (s, &k, &klen)) != P_OK)
                return rc;
            s_ws (s);
            if (s->p >= s->end || *s->p++ != ':')
                return P_BAD;
        }
        if ((rc = s_value (s)) != P_OK)
            return rc;
        s_ws (s);
        if (s->p >= s->end)
            return P_BAD;
        char c = *s->p++;
        if (c == close) {
            s->depth--;
            return P_OK;
        }
        if (c != ',')
            return P_BAD;
        s_ws (s);
    }
}

static p_rc_t
s_value (scan_t *s)
{
    s_ws (s);
    if (s->p >= s->end)
        return P_BAD;
    const char *str;
    size_t len;
    switch (*s->p) {
    case '"':
        return s_string (s, &str, &len);
    case '{':
        s->p++;
        return s_container (s, '}', true);
    case '[':
        s->p++;
        return s_container (s, ']', false);
    case 't':
        return s_literal (s, "true");
    case 'f':
        return s_literal (s, "false");
    case 'n':
        return s_literal (s, "null");
    default:
        return s_number (s);
    }
}

/* The top-level object: the last string value of key, checking the rest. */
static p_rc_t
s_find (scan_t *s, const char *key, const char **val, size_t *vlen, bool *found)
{
    size_t keylen = strlen (key);
    *found = false;
    s_ws (s);
    if (s->p >= s->end || *s->p++ != '{')
        return P_BAD;
    s->depth = 1;
    s_ws (s);
    if (s->p < s->end && *s->p == '}')
        s->p++;
    else
        for (;;) {
            const char *k;
            size_t klen;
            p_rc_t rc = s_string (s, &k, &klen);
            if (rc != P_OK)
                return rc;
            s_ws (s);
            if (s->p >= s->end || *s->p++ != ':')
                return P_BAD;
            s_ws (s);
            bool match = klen == keylen && memcmp (k, key, keylen) == 0;
            if (match && s->p < s->end && *s->p == '"') {
                if ((rc = s_string (s, val, vlen)) != P_OK)
                    return rc;
                *found = true;
            }
            else {
                if ((rc = s_value (s)) != P_OK)
                    return rc;
                if (match)
                    *found = false; /* a later non-string value replaces an earlier string */
            }
            s_ws (s);
            if (s->p >= s->end)
                return P_BAD;
            char c = *s->p++;
            if (c == '}')
                break;
            if (c != ',')
                return P_BAD;
            s_ws (s);
        }
    s_ws (s);
    return s->p == s->end ? P_OK : P_BAD; /* jansson refuses trailing bytes */
}

/* jansson's answer, for what the scanner does not decide. */
static int
s_slow (const char *data, size_t size, const char *key, char *out, size_t out_size)
{
    json_t *obj = json_loadb (data, size, 0, NULL);
    json_t *v = json_object_get (obj, key);
    int rc = -1;
    if (json_is_string (v)) {
        rc = (int) json_string_length (v);
        snprintf (out, out_size, "%s", json_string_value (v)); /* a value holding \u0000 is cut there */
    }
    json_decref (obj);
    return rc;
}

/* jansson takes a NUL byte after some values ({"x":2\0} loads as {"x":2}),
   which the grammar refuses: a frame the scanner refuses that holds one is
   left to jansson. */
static p_rc_t
s_nul_unsure (p_rc_t rc, const void *data, size_t size)
{
    return rc == P_BAD && memchr (data, 0, size) ? P_UNSURE : rc;
}

int
gw_peek_string (const void *data, size_t size, const char *key, char *out, size_t out_size)
{
    scan_t s = {(const char *) data, (const char *) data + size, 0, false, 0};
    const char *val = NULL;
    size_t vlen = 0;
    bool found;
    p_rc_t rc = s_nul_unsure (s_find (&s, key, &val, &vlen, &found), data, size);
    if (rc == P_UNSURE)
        return s_slow (data, size, key, out, out_size);
    if (rc != P_OK || !found)
        return -1;
    if (out_size > 0) {
        size_t n = vlen < out_size ? vlen : out_size - 1;
        memcpy (out, val, n);
        out[n] = 0;
    }
    return (int) vlen;
}

int
gw_peek_object (const void *data, size_t size)
{
    scan_t s = {(const char *) data, (const char *) data + size, 0, false, 0};
    const char *val;
    size_t vlen;
    bool found;
    p_rc_t rc = s_nul_unsure (s_find (&s, "", &val, &vlen, &found), data, size);
    return rc == P_OK ? 1 : rc == P_BAD ? 0 : -1;
}

int
gw_peek_frame (zmsg_t *msg, int offset, const char *key, char *out, size_t out_size)
{
    zframe_t *f = offset < 0 ? NULL : wire_frames_part (msg, (size_t) offset);
    return f ? gw_peek_string (zframe_data (f), zframe_size (f), key, out, out_size) : -1;
}

int
gw_peek_check (const void *data, size_t size, int max_depth)
{
    scan_t s = {(const char *) data, (const char *) data + size, 0, true, max_depth};
    const char *val;
    size_t vlen;
    bool found;
    return s_find (&s, "", &val, &vlen, &found) == P_OK ? 1 : 0;
}
