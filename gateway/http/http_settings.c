/*  http_settings.c - the HTTP front's settings: the config's "http" section,
    `kennel serve --http [IP:]PORT`, and the token.

    HTTP is off unless asked for (--http, or "listen" in the section): the
    ZeroMQ API is kennel's default front, and an HTTP port is one more way
    in that an operator should open knowingly. The token comes from
    KENNEL_AUTH_TOKEN, KG_AUTH_TOKEN (what images written for Kernel Gateway
    set), the config, or is generated; no token at all only with the
    operator's explicit "anonymous": true.
*/
#include "http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_CONNECTIONS 256
/* one client may hold three quarters, one kernel a quarter (each at most
   max_connections when that is set lower) */
#define DEFAULT_PER_CLIENT 192
#define DEFAULT_PER_KERNEL 64
#define DEFAULT_MAX_PENDING 128
#define DEFAULT_PENDING_PER_CLIENT 16
#define DEFAULT_WS_QUEUE_BYTES (16u << 20)
#define DEFAULT_PING_SECONDS 30

static int
listen_parse (http_settings_t *self, const char *listen, char **errmsg)
{
    const char *colon = strrchr (listen, ':');
    const char *port = colon ? colon + 1 : listen;
    char *end = NULL;
    errno = 0;
    long n = strtol (port, &end, 10);
    if (!*port || *end || errno || n < 0 || n > 65535 || (colon && colon == listen)) {
        *errmsg = wire_xasprintf ("http listen \"%s\": must be [IP:]PORT, PORT 0-65535 (0: a free one)", listen);
        return -1;
    }
    self->port = (int) n;
    self->ip = colon ? wire_xstrndup (listen, (size_t) (colon - listen)) : wire_xstrdup ("127.0.0.1");
    size_t len = strlen (self->ip);
    if (len > 2 && self->ip[0] == '[' && self->ip[len - 1] == ']') { /* [::1]:8888 */
        memmove (self->ip, self->ip + 1, len - 2);
        self->ip[len - 2] = 0;
    }
    /* an address literal only: libwebsockets reads anything else as an
       interface name, and binds every address when it finds none */
    unsigned char addr[16];
    if (inet_pton (AF_INET, self->ip, addr) != 1 && inet_pton (AF_INET6, self->ip, addr) != 1) {
        *errmsg = wire_xasprintf ("http listen \"%s\": the IP must be an IPv4 or IPv6 address", listen);
        free (self->ip);
        self->ip = NULL;
        return -1;
    }
    return 0;
}

static int
string_field (const json_t *section, const char *name, char **out, char **errmsg)
{
    const json_t *v = json_object_get (section, name);
    if (!v)
        return 0;
    const char *s = gw_text (v);
    if (!s || !*s) {
        *errmsg = wire_xasprintf ("config http.%s: must be a non-empty string", name);
        return -1;
    }
    free (*out);
    *out = wire_xstrdup (s);
    return 0;
}

static int
number_field (const json_t *section, const char *name, double min, double max, double *out, char **errmsg)
{
    const json_t *v = json_object_get (section, name);
    if (!v)
        return 0;
    if (!json_is_number (v) || json_number_value (v) < min || json_number_value (v) > max) {
        *errmsg = wire_xasprintf ("config http.%s: must be a number from %g to %g", name, min, max);
        return -1;
    }
    *out = json_number_value (v);
    return 0;
}

/* allow_hosts: host names as a Host header carries them, without a port
   (a name's port is the listener's), or "*" alone. */
static int
hosts_check (const json_t *hosts, char **errmsg)
{
    size_t i;
    json_t *host;
    if (hosts && !json_is_array (hosts)) {
        *errmsg = wire_xstrdup ("config http.allow_hosts: must be a list of host names");
        return -1;
    }
    json_array_foreach (hosts, i, host) {
        const char *h = gw_text (host);
        if (!h || !*h || strlen (h) > 253 || strpbrk (h, ":/[]@ \t") || (strchr (h, '*') && !streq (h, "*"))) {
            *errmsg = wire_xasprintf ("config http.allow_hosts[%zu]: must be a host name without a port "
                                      "(\"notebook.example.org\"), or \"*\" for any", i);
            return -1;
        }
    }
    return 0;
}

/* Whether the listen address is a loopback one: 127.0.0.0/8, ::1, or
   127.0.0.0/8 mapped into IPv6. */
static bool
ip_is_loopback (const char *ip)
{
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton (AF_INET, ip, &v4) == 1)
        return (ntohl (v4.s_addr) >> 24) == 127;
    if (inet_pton (AF_INET6, ip, &v6) != 1)
        return false;
    return IN6_IS_ADDR_LOOPBACK (&v6) || (IN6_IS_ADDR_V4MAPPED (&v6) && v6.s6_addr[12] == 127);
}

/* The Host check (http_auth.c) is on where a browser page could reach
   the listener under a name of its own: a loopback listener (DNS
   rebinding: the page's name made to resolve to 127.0.0.1), and any
   listener whose operator names its hosts. */
static void
hosts_load (http_settings_t *self, const json_t *section)
{
    self->allow_hosts = json_array ();
    bool any = false;
    size_t i;
    json_t *host;
    json_array_foreach (json_object_get (section, "allow_hosts"), i, host) {
        char *h = wire_xstrdup (json_string_value (host));
        for (char *c = h; *c; c++)
            *c = (char) tolower ((unsigned char) *c);
        any |= streq (h, "*");
        json_array_append_new (self->allow_hosts, json_string (h));
        free (h);
    }
    self->host_check = !any && (ip_is_loopback (self->ip) || json_array_size (self->allow_hosts) > 0);
}

/* Without a token anyone who reaches the port runs code as the gateway's
   kernels: only a loopback listener may serve so, and the Host check
   keeps pages of other sites out (README, "Token"). */
static int
anonymous_check (const http_settings_t *self, char **errmsg)
{
    if (self->token || ip_is_loopback (self->ip))
        return 0;
    bool v6 = strchr (self->ip, ':') != NULL;
    *errmsg = wire_xasprintf ("config http.anonymous: true serves without a token, which only a loopback "
                              "listener may (127.0.0.1 or [::1]), not %s%s%s:%d: listen on loopback, or give a "
                              "token (http.token or KENNEL_AUTH_TOKEN) and drop http.anonymous",
                              v6 ? "[" : "", self->ip, v6 ? "]" : "", self->port);
    return -1;
}

static int
section_check (const json_t *section, char **errmsg)
{
    static const char *known[] = {"listen", "token", "anonymous", "allow_origin", "allow_hosts", "certfile",
                                  "keyfile", "max_connections", "max_connections_per_client",
                                  "max_connections_per_kernel", "max_pending_connections", "max_pending_per_client",
                                  "ws_queue_bytes", "ping_seconds", "env_allow", "metrics_open", NULL};
    if (!json_is_object (section)) {
        *errmsg = wire_xstrdup ("config http: must be an object");
        return -1;
    }
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) section, key, value) {
        int i;
        for (i = 0; known[i] && !streq (known[i], key); i++)
            ;
        if (!known[i]) {
            *errmsg = wire_xasprintf ("config: unknown key \"http.%s\"", key);
            return -1;
        }
    }
    const char *flags[] = {"anonymous", "metrics_open"};
    for (int f = 0; f < 2; f++) {
        const json_t *flag = json_object_get (section, flags[f]);
        if (flag && !json_is_boolean (flag)) {
            *errmsg = wire_xasprintf ("config http.%s: must be true or false", flags[f]);
            return -1;
        }
    }
    const json_t *env = json_object_get (section, "env_allow");
    size_t i;
    json_t *name;
    if (env && !json_is_array (env)) {
        *errmsg = wire_xstrdup ("config http.env_allow: must be a list of variable names");
        return -1;
    }
    json_array_foreach (env, i, name)
        if (!gw_text (name) || !*json_string_value (name) || strchr (json_string_value (name), '=')) {
            *errmsg = wire_xasprintf ("config http.env_allow[%zu]: must be a variable name", i);
            return -1;
        }
    return hosts_check (json_object_get (section, "allow_hosts"), errmsg);
}

static int
token_choose (http_settings_t *self, const json_t *section, char **errmsg)
{
    const char *env_names[] = {"KENNEL_AUTH_TOKEN", "KG_AUTH_TOKEN"};
    for (int i = 0; i < 2; i++) {
        const char *t = getenv (env_names[i]);
        if (t && *t) {
            self->token = wire_xstrdup (t);
            self->token_source = env_names[i];
            return 0;
        }
    }
    if (string_field (section, "token", &self->token, errmsg) < 0)
        return -1;
    if (self->token) {
        self->token_source = "config";
        return 0;
    }
    /* a token given anywhere wins over anonymous */
    if (self->anonymous)
        return 0;
    char id[WIRE_ID_SIZE], id2[WIRE_ID_SIZE];
    wire_id_new (id);
    wire_id_new (id2);
    self->token = wire_xasprintf ("%s%s", id, id2);
    self->token_source = "generated";
    return 0;
}

/* A share of a whole: its default at most the whole, a value given at
   most the whole too. */
static int
share_field (const json_t *section, const char *name, double fallback, const char *whole_name, double whole,
             int *out, char **errmsg)
{
    double v = fallback < whole ? fallback : whole;
    if (number_field (section, name, 1, 100000, &v, errmsg) < 0)
        return -1;
    if (v > whole) {
        *errmsg = wire_xasprintf ("config http.%s: must be at most http.%s (%g)", name, whole_name, whole);
        return -1;
    }
    *out = (int) v;
    return 0;
}

/* Every field of the section, whether or not HTTP is asked for: a bad
   value is refused at start and at a reload alike. */
static int
fields_load (http_settings_t *self, const json_t *section, char **errmsg)
{
    double max_conn = DEFAULT_MAX_CONNECTIONS, pending = DEFAULT_MAX_PENDING, queue = DEFAULT_WS_QUEUE_BYTES,
           ping = DEFAULT_PING_SECONDS;
    char *token = NULL;
    int rc = string_field (section, "token", &token, errmsg);
    free (token); /* chosen with its other sources by token_choose */
    if (rc < 0 || string_field (section, "allow_origin", &self->allow_origin, errmsg) < 0
        || string_field (section, "certfile", &self->certfile, errmsg) < 0
        || string_field (section, "keyfile", &self->keyfile, errmsg) < 0
        || number_field (section, "max_connections", 1, 100000, &max_conn, errmsg) < 0
        || share_field (section, "max_connections_per_client", DEFAULT_PER_CLIENT, "max_connections", max_conn,
                        &self->max_connections_per_client, errmsg) < 0
        || share_field (section, "max_connections_per_kernel", DEFAULT_PER_KERNEL, "max_connections", max_conn,
                        &self->max_connections_per_kernel, errmsg) < 0
        || number_field (section, "max_pending_connections", 1, 100000, &pending, errmsg) < 0
        || share_field (section, "max_pending_per_client", DEFAULT_PENDING_PER_CLIENT, "max_pending_connections",
                        pending, &self->max_pending_per_client, errmsg) < 0
        || number_field (section, "ws_queue_bytes", 65536, 1ull << 40, &queue, errmsg) < 0
        || number_field (section, "ping_seconds", 1, 3600, &ping, errmsg) < 0)
        return -1;
    if (!self->certfile != !self->keyfile) {
        *errmsg = wire_xstrdup ("config http: certfile and keyfile go together (TLS needs both)");
        return -1;
    }
    self->anonymous = json_is_true (json_object_get (section, "anonymous"));
    self->metrics_open = json_is_true (json_object_get (section, "metrics_open"));
    self->max_connections = (int) max_conn;
    self->max_pending = (int) pending;
    self->ws_queue_bytes = (size_t) queue;
    self->ping_seconds = (int) ping;
    const json_t *env = json_object_get (section, "env_allow");
    self->env_allow = env ? json_deep_copy (env) : json_array ();
    return 0;
}

/* The section's listen, checked even when the command line's wins. */
static int
listen_check (const json_t *section, char **errmsg)
{
    const json_t *v = json_object_get (section, "listen");
    if (!v)
        return 0;
    if (!gw_text (v)) {
        *errmsg = wire_xstrdup ("config http.listen: must be \"[IP:]PORT\"");
        return -1;
    }
    http_settings_t scratch = {0};
    int rc = listen_parse (&scratch, gw_text (v), errmsg);
    free (scratch.ip);
    return rc;
}

int
http_settings_load (http_settings_t *self, const json_t *section, const char *listen, char **errmsg)
{
    memset (self, 0, sizeof *self);
    if (section && (section_check (section, errmsg) < 0 || listen_check (section, errmsg) < 0))
        return -1;
    if (fields_load (self, section, errmsg) < 0) {
        http_settings_clear (self);
        return -1;
    }
    const char *where = listen ? listen : gw_text (json_object_get (section, "listen"));
    if (!where) {
        http_settings_clear (self);
        return 1;
    }
    if (listen_parse (self, where, errmsg) < 0 || token_choose (self, section, errmsg) < 0
        || anonymous_check (self, errmsg) < 0) {
        http_settings_clear (self);
        return -1;
    }
    hosts_load (self, section);
    return 0;
}

int
http_settings_check (const gw_config_t *fresh, char **errmsg, void *arg)
{
    http_settings_t scratch;
    int rc = http_settings_load (&scratch, fresh->http, NULL, errmsg);
    http_settings_clear (&scratch);
    return rc < 0 ? -1 : 0;
}

void
http_settings_clear (http_settings_t *self)
{
    free (self->ip);
    if (self->token)
        sodium_memzero (self->token, strlen (self->token));
    free (self->token);
    free (self->allow_origin);
    free (self->certfile);
    free (self->keyfile);
    json_decref (self->env_allow);
    json_decref (self->allow_hosts);
    memset (self, 0, sizeof *self);
}
