/*  wire_error.c - names and sentences for wire_error_t. */
#include "wire_private.h"
#include <string.h>

typedef struct {
    const char *name;
    const char *text;
} wire_error_info_t;

/* Indexed by wire_error_t; the names are part of the API (logs, JSON). */
static const wire_error_info_t wire_errors[WIRE_ERR_COUNT_] = {
    [WIRE_OK] = {"ok", "no error"},
    [WIRE_ERR_NO_DELIMITER] = {"no_delimiter", "message has no <IDS|MSG> delimiter frame"},
    [WIRE_ERR_TOO_FEW_FRAMES] = {"too_few_frames", "message has fewer than 5 frames after the delimiter"},
    [WIRE_ERR_UNSIGNED] = {"unsigned", "message is unsigned but a key is set"},
    [WIRE_ERR_BAD_SIGNATURE] = {"bad_signature", "signature does not match the key"},
    [WIRE_ERR_DUPLICATE_SIGNATURE] = {"duplicate_signature", "signature seen before (replayed message)"},
    [WIRE_ERR_OVERSIZE] = {"oversize", "a frame or the message is over the size limit"},
    [WIRE_ERR_NOT_UTF8] = {"not_utf8", "a JSON frame is not valid UTF-8"},
    [WIRE_ERR_INVALID_JSON] = {"invalid_json", "a JSON frame does not parse"},
    [WIRE_ERR_NOT_OBJECT] = {"not_object", "a JSON frame is not an object"},
    [WIRE_ERR_MISSING_HEADER_FIELD] = {"missing_header_field", "header lacks a required string field"},
    [WIRE_ERR_BAD_SCHEME] = {"bad_scheme", "signature scheme is not hmac-sha256"},
    [WIRE_ERR_BAD_CONNECTION_FILE] = {"bad_connection_file", "connection file is unreadable, not JSON, or lacks a field"},
    [WIRE_ERR_IO] = {"io", "a system call failed"},
};

const char *
wire_error_name (wire_error_t err)
{
    if ((int) err < 0 || err >= WIRE_ERR_COUNT_)
        return "unknown";
    return wire_errors[err].name;
}

const char *
wire_strerror (wire_error_t err)
{
    if ((int) err < 0 || err >= WIRE_ERR_COUNT_)
        return "unknown error";
    return wire_errors[err].text;
}

int
wire_error_test (bool verbose)
{
    int failures = 0;
    if (verbose)
        printf (" * wire_error: ");
    /* Every code has a distinct name and a sentence. */
    for (int i = 0; i < WIRE_ERR_COUNT_; i++) {
        WIRE_CHECK (wire_errors[i].name && *wire_errors[i].name);
        WIRE_CHECK (wire_errors[i].text && *wire_errors[i].text);
        for (int j = 0; j < i; j++)
            WIRE_CHECK (strcmp (wire_error_name (i), wire_error_name (j)) != 0);
    }
    WIRE_CHECK (streq (wire_error_name (WIRE_ERR_BAD_SIGNATURE), "bad_signature"));
    WIRE_CHECK (streq (wire_error_name (WIRE_ERR_COUNT_), "unknown"));
    WIRE_CHECK (streq (wire_error_name ((wire_error_t) -1), "unknown"));
    WIRE_CHECK (streq (wire_strerror (WIRE_ERR_COUNT_), "unknown error"));
    WIRE_CHECK (streq (wire_strerror (WIRE_OK), "no error"));
    if (verbose)
        printf ("%s\n", failures ? "FAILED" : "OK");
    return failures;
}
