/*  http_auth.c - who may use the HTTP front: the token on every request and
    on the websocket upgrade, and the Origin a browser sends.

    The token is taken from `Authorization: token T`, `Authorization:
    Bearer T` (either word in any case, as jupyter_server reads it) or
    `?token=T`, and compared in constant time. A browser page of another
    origin gets 403 unless the operator named it in allow_origin: an Origin
    is accepted when absent (no browser), equal to the Host the request was
    sent to (same origin; websocket-client sends this), or allowed.

    Same origin is only as good as the Host it is compared with: a page
    whose own name the attacker made resolve to 127.0.0.1 (DNS rebinding)
    sends Host and Origin both of that name. So where the Host check is on
    (a loopback listener, or the operator named allow_hosts) a Host must
    name this listener as jupyter_server's check_host has it: an IP
    literal (a browser sends one only to the address it connected to),
    localhost (which browsers resolve to loopback themselves), or one of
    allow_hosts.
*/
#include "http.h"

#include <arpa/inet.h>
#include <ctype.h>
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

/* The host of a Host header ("name:port", "[v6]:port", "name"), lowercase
   and without a final dot, in out; false when it does not fit. */
static bool
host_name (const char *host, char *out, size_t size)
{
    const char *end;
    if (host[0] == '[') {
        host++;
        end = strchr (host, ']');
    }
    else {
        end = strrchr (host, ':');
        if (end && strchr (host, ':') != end)
            end = NULL; /* an IPv6 literal without brackets */
    }
    size_t n = end ? (size_t) (end - host) : strlen (host);
    if (n && host[n - 1] == '.')
        n--;
    if (n >= size)
        return false;
    for (size_t i = 0; i < n; i++)
        out[i] = (char) tolower ((unsigned char) host[i]);
    out[n] = 0;
    return true;
}

static bool
host_allowed (struct lws *wsi, const http_settings_t *settings)
{
    char host[512], name[512];
    unsigned char addr[16];
    if (!settings->host_check || lws_hdr_copy (wsi, host, sizeof host, WSI_TOKEN_HOST) <= 0)
        return true; /* no Host: no browser (HTTP/1.0) */
    if (!host_name (host, name, sizeof name))
        return false;
    if (inet_pton (AF_INET, name, addr) == 1 || inet_pton (AF_INET6, name, addr) == 1 || streq (name, "localhost"))
        return true;
    size_t i;
    json_t *allowed;
    json_array_foreach (settings->allow_hosts, i, allowed)
        if (streq (json_string_value (allowed), name))
            return true;
    return false;
}

const char *
http_auth_refusal (struct lws *wsi, const http_settings_t *settings, int *status)
{
    if (!host_allowed (wsi, settings)) {
        *status = 403;
        return "the Host header names no address or name this gateway serves (a page of another site may have "
               "made its name resolve here: DNS rebinding); an operator serving this name adds it to "
               "http.allow_hosts";
    }
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
