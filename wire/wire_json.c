/*  wire_json.c - JSON frames: UTF-8 check, parse, compact encode.

    Output matches jupyter_client's json_packer (ensure_ascii=False,
    allow_nan=False) in meaning: compact UTF-8, never NaN (jansson cannot
    hold NaN or infinities at all).
*/
#include "wire_private.h"
#include <string.h>

bool
wire_utf8_valid (const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint32_t cp, min;
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            need = 2, cp = c & 0x0f, min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return false; /* continuation byte, 0xc0/0xc1 or > 0xf4 */
        }
        if (len - i - 1 < need)
            return false; /* truncated sequence at the end of the frame */
        for (size_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false; /* overlong, out of range, or a surrogate */
        i += need + 1;
    }
    return true;
}

json_t *
wire_json_parse_frame (zframe_t *frame, wire_error_t *err)
{
    const unsigned char *data = zframe_data (frame);
    size_t size = zframe_size (frame);
    if (!wire_utf8_valid (data, size)) {
        *err = WIRE_ERR_NOT_UTF8;
        return NULL;
    }
    /* JSON_DECODE_ANY so a non-object gets its own error code;
       JSON_ALLOW_NUL because Python happily sends "\u0000" in strings. */
    json_error_t jerr;
    json_t *value = json_loadb ((const char *) data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!value) {
        *err = WIRE_ERR_INVALID_JSON;
        return NULL;
    }
    if (!json_is_object (value)) {
        json_decref (value);
        *err = WIRE_ERR_NOT_OBJECT;
        return NULL;
    }
    *err = WIRE_OK;
    return value;
}

zframe_t *
wire_json_frame (const json_t *obj)
{
    if (!json_is_object (obj))
        return NULL;
    char *text = json_dumps (obj, JSON_COMPACT);
    if (!text)
        return NULL;
    /* json_dumps escapes NULs inside strings, so strlen is the length. */
    zframe_t *frame = zframe_new (text, strlen (text));
    free (text);
    return frame;
}

static bool
s_valid (const char *s, size_t len)
{
    return wire_utf8_valid ((const unsigned char *) s, len);
}

static wire_error_t
s_parse (const char *text, size_t len)
{
    zframe_t *frame = zframe_new (text, len);
    wire_error_t err;
    json_t *value = wire_json_parse_frame (frame, &err);
    json_decref (value);
    zframe_destroy (&frame);
    return err;
}

int
wire_json_test (bool verbose)
{
    int failures = 0;
    if (verbose)
        printf (" * wire_json: ");
    WIRE_CHECK (s_valid ("", 0));
    WIRE_CHECK (s_valid ("plain ascii", 11));
    WIRE_CHECK (s_valid ("caf\xc3\xa9", 5));             /* é */
    WIRE_CHECK (s_valid ("\xe2\x82\xac", 3));             /* € */
    WIRE_CHECK (s_valid ("\xf0\x9f\x90\xb6", 4));         /* dog, U+1F436 */
    WIRE_CHECK (s_valid ("\xf4\x8f\xbf\xbf", 4));         /* U+10FFFF */
    WIRE_CHECK (s_valid ("a\0b", 3));                     /* NUL is valid UTF-8 */
    WIRE_CHECK (!s_valid ("\x80", 1));                    /* lone continuation */
    WIRE_CHECK (!s_valid ("\xc3", 1));                    /* truncated */
    WIRE_CHECK (!s_valid ("\xe2\x82", 2));                /* truncated */
    WIRE_CHECK (!s_valid ("\xc0\xaf", 2));                /* overlong '/' */
    WIRE_CHECK (!s_valid ("\xe0\x80\xaf", 3));            /* overlong */
    WIRE_CHECK (!s_valid ("\xf0\x80\x80\xaf", 4));        /* overlong */
    WIRE_CHECK (!s_valid ("\xed\xa0\x80", 3));            /* surrogate D800 */
    WIRE_CHECK (!s_valid ("\xf4\x90\x80\x80", 4));        /* > U+10FFFF */
    WIRE_CHECK (!s_valid ("\xf5\x80\x80\x80", 4));
    WIRE_CHECK (!s_valid ("\xff", 1));
    WIRE_CHECK (!s_valid ("\xc3\x28", 2));                /* bad continuation */

    WIRE_CHECK (s_parse ("{}", 2) == WIRE_OK);
    WIRE_CHECK (s_parse ("{\"a\":\"caf\xc3\xa9\"}", 13) == WIRE_OK);
    WIRE_CHECK (s_parse ("{\"a\":\"\\u0000\"}", 14) == WIRE_OK);
    WIRE_CHECK (s_parse ("{\"a\":\"\xff\"}", 9) == WIRE_ERR_NOT_UTF8);
    WIRE_CHECK (s_parse ("{", 1) == WIRE_ERR_INVALID_JSON);
    WIRE_CHECK (s_parse ("", 0) == WIRE_ERR_INVALID_JSON);
    WIRE_CHECK (s_parse ("{}\0", 3) == WIRE_ERR_INVALID_JSON);
    WIRE_CHECK (s_parse ("{\"a\":NaN}", 9) == WIRE_ERR_INVALID_JSON);
    WIRE_CHECK (s_parse ("[]", 2) == WIRE_ERR_NOT_OBJECT);
    WIRE_CHECK (s_parse ("42", 2) == WIRE_ERR_NOT_OBJECT);
    WIRE_CHECK (s_parse ("null", 4) == WIRE_ERR_NOT_OBJECT);
    /* Only the frame's bytes are read: "{}" followed by more text outside
       the frame must parse as just "{}". */
    WIRE_CHECK (s_parse ("{}xyz", 2) == WIRE_OK);

    /* Encoding: compact, UTF-8 unescaped, NUL escaped. */
    json_t *obj = json_pack ("{s:s, s:[i,i]}", "k", "caf\xc3\xa9", "l", 1, 2);
    json_object_set_new (obj, "z", json_stringn ("a\0b", 3));
    zframe_t *frame = wire_json_frame (obj);
    const char *expect = "{\"k\":\"caf\xc3\xa9\",\"l\":[1,2],\"z\":\"a\\u0000b\"}";
    WIRE_CHECK (frame && zframe_size (frame) == strlen (expect));
    WIRE_CHECK (frame && memcmp (zframe_data (frame), expect, strlen (expect)) == 0);
    zframe_destroy (&frame);
    json_decref (obj);
    json_t *arr = json_array ();
    WIRE_CHECK (wire_json_frame (arr) == NULL);
    WIRE_CHECK (wire_json_frame (NULL) == NULL);
    json_decref (arr);
    if (verbose)
        printf ("%s\n", failures ? "FAILED" : "OK");
    return failures;
}
