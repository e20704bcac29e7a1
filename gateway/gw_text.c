/*  gw_text.c - strings from clients, taken whole or refused.

    Control requests are decoded with JSON_ALLOW_NUL (wire_json.c), so a
    string or an object key may hold "\u0000". C reads such a string only up
    to the NUL: "user-alice\u0000mallory" would be read as "user-alice" and
    alias another conversation. Every string the gateway compares, looks up
    or passes on as a name goes through here and is refused when its JSON
    length and its C length differ.

    jansson's strings are valid UTF-8, and a message built from one must stay
    so: jansson refuses to encode anything else, and a reply holding such a
    message would go out with an empty content. Lengths a client sees are in characters (code
    points), and a string cut to fit a message is cut between characters.
    Bytes that are not UTF-8 (a URL's %FF, a name a kernel made) reach a
    message or a log line only through gw_text_escape, as \xHH. A
    malloc'd string field is replaced through gw_set_string.
*/
#include "gw_util.h"
#include "wire.h"

#include <string.h>

const char *
gw_text (const json_t *value)
{
    const char *s = json_string_value (value);
    if (!s || strlen (s) != json_string_length (value))
        return NULL;
    return s;
}

bool
gw_text_clean (const json_t *value)
{
    const char *key;
    size_t len, i;
    json_t *item;
    if (json_is_string (value))
        return gw_text (value) != NULL;
    if (json_is_array (value)) {
        json_array_foreach ((json_t *) value, i, item)
            if (!gw_text_clean (item))
                return false;
        return true;
    }
    json_object_keylen_foreach ((json_t *) value, key, len, item)
        if (strlen (key) != len || !gw_text_clean (item))
            return false;
    return true; /* numbers, booleans, null; jansson bounds the depth */
}

/* A conversation id becomes a directory name and part of socket paths:
   only [A-Za-z0-9._-], never "." or "..", so it cannot leave the state
   directory. */
bool
gw_conv_id_valid (const char *id)
{
    size_t len = id ? strlen (id) : 0;
    if (len < 1 || len > 128 || streq (id, ".") || streq (id, ".."))
        return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.'
              || *p == '_' || *p == '-'))
            return false;
    return true;
}

size_t
gw_text_chars (const char *s, size_t bytes)
{
    size_t n = 0;
    for (size_t i = 0; i < bytes; i++)
        n += ((unsigned char) s[i] & 0xC0) != 0x80; /* not a continuation byte */
    return n;
}

int
gw_text_fit (const char *s, int max)
{
    int n = (int) strnlen (s, (size_t) max + 1);
    if (n <= max)
        return n;
    while (max > 0 && ((unsigned char) s[max] & 0xC0) == 0x80)
        max--; /* s[max] continues the character that would be cut */
    return max;
}

/* The length of the UTF-8 character at s (at most left bytes), 0 when
   none starts there: a character is valid UTF-8 on its own. */
static size_t
char_len (const char *s, size_t left)
{
    for (size_t k = 1; k <= 4 && k <= left; k++)
        if (wire_utf8_valid ((const unsigned char *) s, k))
            return k;
    return 0;
}

char *
gw_text_escape (const char *s, size_t len, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t k = s[i] ? char_len (s + i, len - i) : 0; /* a NUL would end the text */
        size_t need = k ? k : 4;
        if (n + need + 1 > size)
            break;
        if (k)
            memcpy (out + n, s + i, k);
        else
            snprintf (out + n, 5, "\\x%02X", (unsigned char) s[i]);
        n += need;
        i += k ? k : 1;
    }
    if (size)
        out[n] = 0;
    return out;
}

void
gw_set_string (char **field, const char *value)
{
    free (*field);
    *field = value ? wire_xstrdup (value) : NULL;
}
