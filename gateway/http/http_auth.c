/*  http_auth.c - who may use the HTTP front: the token on every request and
    on the websocket upgrade, and the Origin a browser sends.

    The token is taken from `Authorization: token T`, `Authorization:
    Bearer T` (either word in any case, as jupyter_server reads it) or
    `?token=T`, and compared in constant time. A browser page of another
    origin gets 403 unless the operator named it in allow_origin: an Origin
    is accepted when absent (no browser), equal to the Host the request was
    sent to (same origin; websocket-client sends this), or allowed.
*/
#include "http.h"

#include <sodium.h>
#include <string.h>
#include <strings.h>

#define TOKEN_MAX 1024

static bool
token_equal (const char *given, const char *token)
{
    size_t n = strlen (token);
    return strlen (given) == n && sodium_memcmp (given, token, n) == 0;
}

/* The token the request carries, in out; false when none. */
static bool
token_of (struct lws *wsi, char *out, int size)
{
    int n = lws_hdr_copy (wsi, out, size, WSI_TOKEN_HTTP_AUTHORIZATION);
    if (n > 0) {
        const char *schemes[] = {"token ", "bearer "};
        for (int i = 0; i < 2; i++) {
            size_t len = strlen (schemes[i]);
            if (strncasecmp (out, schemes[i], len) == 0) {
                const char *t = out + len;
                while (*t == ' ')
                    t++;
                memmove (out, t, strlen (t) + 1);
                return true;
            }
        }
    }
    const char *value = lws_get_urlarg_by_name (wsi, "token=", out, size); /* points into out */
    if (!value)
        return false;
    memmove (out, value, strlen (value) + 1);
    return true;
}

/* host:port of an origin "scheme://host:port" */
static const char *
origin_authority (const char *origin)
{
    const char *p = strstr (origin, "://");
    return p ? p + 3 : origin;
}

static bool
origin_allowed (struct lws *wsi, const http_settings_t *settings)
{
    char origin[512], host[512];
    if (lws_hdr_copy (wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) <= 0)
        return true;
    if (settings->allow_origin && (streq (settings->allow_origin, "*") || streq (settings->allow_origin, origin)))
        return true;
    return lws_hdr_copy (wsi, host, sizeof host, WSI_TOKEN_HOST) > 0
           && strcasecmp (origin_authority (origin), host) == 0;
}

const char *
http_auth_refusal (struct lws *wsi, const http_settings_t *settings, int *status)
{
    if (!origin_allowed (wsi, settings)) {
        *status = 403;
        return "requests from this Origin are not allowed (the gateway's http.allow_origin)";
    }
    if (!settings->token)
        return NULL; /* the operator's "anonymous": true */
    char given[TOKEN_MAX];
    *status = 401;
    if (!token_of (wsi, given, sizeof given))
        return "a token is required: Authorization: token T, Authorization: Bearer T, or ?token=T";
    bool ok = token_equal (given, settings->token);
    sodium_memzero (given, sizeof given);
    return ok ? NULL : "the token is not valid";
}
