/*  wire_key.c - HMAC-SHA256 signing keys.

    The key is the connection file's "key" string used as raw bytes (never
    hex-decoded), of any length: libsodium's init/update/final API hashes
    keys longer than a block as HMAC requires, where crypto_auth_hmacsha256()
    would insist on 32 bytes. The state after init (the key's inner and
    outer pads absorbed) is kept and copied for each message: init is two of
    the ~12 SHA-256 blocks a typical message costs, and the gateway signs or
    checks eight messages per relayed round trip.
*/
#include "wire_private.h"
#include <sodium.h>
#include <string.h>

struct wire_key {
    unsigned char *bytes; /* len bytes plus a NUL, so it doubles as text */
    size_t len;
    crypto_auth_hmacsha256_state keyed; /* after init with bytes */
};

wire_key_t *
wire_key_new (const char *scheme, const void *key, size_t len, wire_error_t *err)
{
    wire_error_t dummy;
    if (!err)
        err = &dummy;
    if (scheme && strcmp (scheme, WIRE_SIGNATURE_SCHEME) != 0) {
        *err = WIRE_ERR_BAD_SCHEME;
        return NULL;
    }
    if (sodium_init () < 0) {
        *err = WIRE_ERR_IO;
        return NULL;
    }
    wire_key_t *self = wire_xcalloc (1, sizeof *self);
    self->bytes = wire_xmalloc (len + 1);
    if (len)
        memcpy (self->bytes, key, len);
    self->bytes[len] = 0;
    self->len = len;
    crypto_auth_hmacsha256_init (&self->keyed, self->bytes, self->len);
    *err = WIRE_OK;
    return self;
}

wire_key_t *
wire_key_new_random (void)
{
    if (sodium_init () < 0)
        return NULL;
    unsigned char raw[32];
    char hex[sizeof raw * 2 + 1];
    randombytes_buf (raw, sizeof raw);
    sodium_bin2hex (hex, sizeof hex, raw, sizeof raw);
    sodium_memzero (raw, sizeof raw);
    wire_key_t *self = wire_key_new (NULL, hex, strlen (hex), NULL);
    sodium_memzero (hex, sizeof hex);
    return self;
}

void
wire_key_destroy (wire_key_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    wire_key_t *self = *self_p;
    /* Keys are secrets: do not leave them in freed memory. */
    sodium_memzero (self->bytes, self->len);
    sodium_memzero (&self->keyed, sizeof self->keyed);
    free (self->bytes);
    free (self);
    *self_p = NULL;
}

bool
wire_key_is_empty (const wire_key_t *self)
{
    return !self || self->len == 0;
}

const char *
wire_key_text (const wire_key_t *self)
{
    return self ? (const char *) self->bytes : "";
}

void
wire_key_sign (const wire_key_t *self, zframe_t *const parts[4], char out[WIRE_SIGNATURE_HEX_LEN + 1])
{
    if (wire_key_is_empty (self)) {
        out[0] = 0;
        return;
    }
    crypto_auth_hmacsha256_state state = self->keyed;
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    for (int i = 0; i < 4; i++)
        crypto_auth_hmacsha256_update (&state, zframe_data (parts[i]), zframe_size (parts[i]));
    crypto_auth_hmacsha256_final (&state, mac);
    sodium_bin2hex (out, WIRE_SIGNATURE_HEX_LEN + 1, mac, sizeof mac);
    sodium_memzero (&state, sizeof state);
}

wire_error_t
wire_key_verify (const wire_key_t *self, zframe_t *const parts[4], const void *sig, size_t len)
{
    /* jupyter_client with an empty key neither signs nor checks. */
    if (wire_key_is_empty (self))
        return WIRE_OK;
    if (len == 0)
        return WIRE_ERR_UNSIGNED;
    /* The length is public; checking it first keeps the compare in bounds
       (xeus compares over the computed length and reads past short input). */
    if (len != WIRE_SIGNATURE_HEX_LEN)
        return WIRE_ERR_BAD_SIGNATURE;
    char expect[WIRE_SIGNATURE_HEX_LEN + 1];
    wire_key_sign (self, parts, expect);
    int differ = sodium_memcmp (expect, sig, WIRE_SIGNATURE_HEX_LEN);
    return differ ? WIRE_ERR_BAD_SIGNATURE : WIRE_OK;
}

/* Signs the four parts given as strings (self-test helper). */
static void
s_sign_strings (const wire_key_t *key, const char *p[4], char out[WIRE_SIGNATURE_HEX_LEN + 1])
{
    zframe_t *parts[4];
    for (int i = 0; i < 4; i++)
        parts[i] = zframe_new (p[i], strlen (p[i]));
    wire_key_sign (key, parts, out);
    for (int i = 0; i < 4; i++)
        zframe_destroy (&parts[i]);
}

int
wire_key_test (bool verbose)
{
    int failures = 0;
    if (verbose)
        printf (" * wire_key: ");
    char sig[WIRE_SIGNATURE_HEX_LEN + 1];
    wire_error_t err;

    /* RFC 4231 test case 2, the message split over the four parts: the HMAC
       covers their concatenation. */
    wire_key_t *key = wire_key_new (NULL, "Jefe", 4, &err);
    WIRE_CHECK (key && err == WIRE_OK);
    const char *jefe[4] = {"what do ya", " want ", "for nothing", "?"};
    s_sign_strings (key, jefe, sig);
    WIRE_CHECK (streq (sig, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    WIRE_CHECK (!wire_key_is_empty (key));
    WIRE_CHECK (streq (wire_key_text (key), "Jefe"));

    /* wire_key_verify: match, mismatch, wrong length, uppercase, unsigned. */
    zframe_t *parts[4];
    for (int i = 0; i < 4; i++)
        parts[i] = zframe_new (jefe[i], strlen (jefe[i]));
    WIRE_CHECK (wire_key_verify (key, parts, sig, 64) == WIRE_OK);
    WIRE_CHECK (wire_key_verify (key, parts, sig, 63) == WIRE_ERR_BAD_SIGNATURE);
    WIRE_CHECK (wire_key_verify (key, parts, sig, 0) == WIRE_ERR_UNSIGNED);
    char bad[WIRE_SIGNATURE_HEX_LEN + 1];
    memcpy (bad, sig, sizeof bad);
    bad[10] = bad[10] == '0' ? '1' : '0';
    WIRE_CHECK (wire_key_verify (key, parts, bad, 64) == WIRE_ERR_BAD_SIGNATURE);
    memcpy (bad, sig, sizeof bad);
    for (int i = 0; i < 64; i++)
        bad[i] = (char) (bad[i] >= 'a' ? bad[i] - 32 : bad[i]);
    WIRE_CHECK (wire_key_verify (key, parts, bad, 64) == WIRE_ERR_BAD_SIGNATURE);
    char longer[80];
    memset (longer, 'a', sizeof longer);
    memcpy (longer, sig, 64);
    WIRE_CHECK (wire_key_verify (key, parts, longer, sizeof longer) == WIRE_ERR_BAD_SIGNATURE);
    wire_key_destroy (&key);
    WIRE_CHECK (key == NULL);
    wire_key_destroy (&key); /* idempotent */

    /* RFC 4231 test case 6: a 131-byte key, longer than the block size. */
    unsigned char big[131];
    memset (big, 0xaa, sizeof big);
    key = wire_key_new (WIRE_SIGNATURE_SCHEME, big, sizeof big, &err);
    const char *tc6[4] = {"Test Using Larger", " Than Block-Size Key", " - Hash Key First", ""};
    s_sign_strings (key, tc6, sig);
    WIRE_CHECK (streq (sig, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"));
    wire_key_destroy (&key);

    /* Empty key: signs "", accepts anything. */
    key = wire_key_new (NULL, "", 0, &err);
    WIRE_CHECK (key && wire_key_is_empty (key));
    s_sign_strings (key, jefe, sig);
    WIRE_CHECK (streq (sig, ""));
    WIRE_CHECK (wire_key_verify (key, parts, "junk", 4) == WIRE_OK);
    WIRE_CHECK (wire_key_verify (key, parts, "", 0) == WIRE_OK);
    WIRE_CHECK (streq (wire_key_text (key), ""));
    wire_key_destroy (&key);
    WIRE_CHECK (wire_key_is_empty (NULL));

    /* Other schemes are refused, as is "". */
    WIRE_CHECK (wire_key_new ("hmac-md5", "k", 1, &err) == NULL && err == WIRE_ERR_BAD_SCHEME);
    WIRE_CHECK (wire_key_new ("", "k", 1, &err) == NULL && err == WIRE_ERR_BAD_SCHEME);
    WIRE_CHECK (wire_key_new ("HMAC-SHA256", "k", 1, NULL) == NULL);

    /* Random keys: 64 hex digits, different each time. */
    wire_key_t *r1 = wire_key_new_random ();
    wire_key_t *r2 = wire_key_new_random ();
    WIRE_CHECK (r1 && r2 && strlen (wire_key_text (r1)) == 64);
    WIRE_CHECK (strspn (wire_key_text (r1), "0123456789abcdef") == 64);
    WIRE_CHECK (!streq (wire_key_text (r1), wire_key_text (r2)));
    wire_key_destroy (&r1);
    wire_key_destroy (&r2);

    for (int i = 0; i < 4; i++)
        zframe_destroy (&parts[i]);
    if (verbose)
        printf ("%s\n", failures ? "FAILED" : "OK");
    return failures;
}
