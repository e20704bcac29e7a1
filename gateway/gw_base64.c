/*  gw_base64.c - file content in JSON (RFC 4648 base64, padded).

    Decoding is strict: a character outside the alphabet, whitespace or a
    misplaced "=" refuses the whole text, so a client's bad encoding is an
    error, never silently different bytes in the workspace.
*/
#include "gw_files.h"
#include "wire.h"

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *
gw_base64_encode (const void *data, size_t len)
{
    const unsigned char *in = data;
    char *out = wire_xmalloc ((len + 2) / 3 * 4 + 1);
    char *o = out;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned) in[i] << 16 | (i + 1 < len ? (unsigned) in[i + 1] << 8 : 0)
                     | (i + 2 < len ? in[i + 2] : 0);
        *o++ = ALPHABET[v >> 18 & 63];
        *o++ = ALPHABET[v >> 12 & 63];
        *o++ = i + 1 < len ? ALPHABET[v >> 6 & 63] : '=';
        *o++ = i + 2 < len ? ALPHABET[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

static int
sextet (char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

void *
gw_base64_decode (const char *text, size_t text_len, size_t *len)
{
    if (text_len % 4 != 0)
        return NULL;
    unsigned char *out = wire_xmalloc (text_len / 4 * 3 + 1);
    size_t n = 0;
    for (size_t i = 0; i < text_len; i += 4) {
        bool last = i + 4 == text_len;
        int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
        int s[4];
        for (int k = 0; k < 4 - pad; k++)
            if ((s[k] = sextet (text[i + k])) < 0) {
                free (out);
                return NULL;
            }
        for (int k = 4 - pad; k < 4; k++)
            s[k] = 0;
        unsigned v = (unsigned) s[0] << 18 | (unsigned) s[1] << 12 | (unsigned) s[2] << 6 | (unsigned) s[3];
        out[n++] = (unsigned char) (v >> 16);
        if (pad < 2)
            out[n++] = (unsigned char) (v >> 8);
        if (pad < 1)
            out[n++] = (unsigned char) v;
    }
    *len = n;
    return out;
}
