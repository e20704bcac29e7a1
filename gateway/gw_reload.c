/*  gw_reload.c - SIGHUP: the config file read again (gateway/README.md,
    "Signals").

    A file that does not load (bad JSON, an unknown key, a value out of
    range) is refused with a log line naming the error, and the old config
    stays. One that loads becomes the config of conversations opened from
    then on: each open conversation holds the config it was opened under
    (gw_conv_config), so its limits, timeouts and kernel settings do not
    change under it. The warm pool's kernels were confined with the old
    defaults, so the pool is refilled when anything it depends on changed.

    A front that reads a section of its own (/mcp's "mcp"; the http
    section, checked as a start checks it, with HTTP on or off: main.c)
    checks the new file first and may refuse it as a whole
    (gw_server_reload_check).

    Some keys are read once, at start, by what they set up: those need a
    restart, and a reload that changes one logs it (and keeps what runs);
    the http section's keys are named one by one ("http.max_connections").
*/
#include "gw_capacity.h"
#include "gw_config.h"
#include "gw_log.h"
#include "gw_ops.h"
#include "gw_server_access.h"
#include "gw_util.h"

#include <string.h>

/* The keys a reload cannot apply, and what reads them only at start. */
static const struct {
    const char *key;
    const char *why;
} restart_keys[] = {
    {"launcher", "the fork server runs it"},
    {"fork_server", "the fork server is started once"},
    {"max_message_bytes", "the control socket's frame limit is set before it binds"},
    {"max_parallel_launches", "the launch scheduler is sized at start"},
    {"idle_check_interval", "the idle cull's timer is started once"},
    {"http", "the HTTP front listens, and holds its token, from start"},
    {"shard", "every id the gateway made starts with it, and the balancer routes by it"},
};
#define RESTART_COUNT (sizeof restart_keys / sizeof restart_keys[0])

#define HTTP_KEY 5

static bool
json_same (const json_t *a, const json_t *b)
{
    return a == b || (a && b && json_equal ((json_t *) a, (json_t *) b));
}

static bool
key_changed (const gw_config_t *a, const gw_config_t *b, size_t i)
{
    switch (i) {
    case 0: return !streq (a->launcher, b->launcher);
    case 1: return a->fork_server != b->fork_server || !json_equal (a->fork_preload, b->fork_preload);
    case 2: return a->max_message_bytes != b->max_message_bytes;
    case 3: return a->max_parallel_launches != b->max_parallel_launches;
    case 4: return a->idle_check_interval != b->idle_check_interval;
    default: return !streq (a->shard, b->shard);
    }
}

static void
needs_restart (json_t *changed, const char *key, const char *why)
{
    json_array_append_new (changed, json_string (key));
    gw_log ("reload_needs_restart", "{s:s, s:s, s:s}", "key", key, "why", why, "outcome",
            "the running value is kept until kennel is restarted");
}

/* Each key of the http section that changed (was added, removed or set
   to another value), in the order of the old section, then the new. */
static void
http_keys_changed (const json_t *old, const json_t *fresh, json_t *changed)
{
    json_t *keys = json_object ();
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) old, key, value)
        json_object_set_new (keys, key, json_null ());
    json_object_foreach ((json_t *) fresh, key, value)
        json_object_set_new (keys, key, json_null ());
    json_object_foreach (keys, key, value)
        if (!json_same (json_object_get (old, key), json_object_get (fresh, key))) {
            char *name = wire_xasprintf ("http.%s", key);
            needs_restart (changed, name, restart_keys[HTTP_KEY].why);
            free (name);
        }
    json_decref (keys);
}

/* The restart-only keys that changed, as a list; their old values stay in
   the new config so that the running gateway and what it reports agree. */
static json_t *
restart_keys_keep (const gw_config_t *old, gw_config_t *fresh)
{
    json_t *changed = json_array ();
    for (size_t i = 0; i < RESTART_COUNT; i++)
        if (i == HTTP_KEY)
            http_keys_changed (old->http, fresh->http, changed);
        else if (key_changed (old, fresh, i))
            needs_restart (changed, restart_keys[i].key, restart_keys[i].why);
    gw_set_string (&fresh->launcher, old->launcher);
    fresh->fork_server = old->fork_server;
    json_decref (fresh->fork_preload);
    fresh->fork_preload = json_incref (old->fork_preload);
    fresh->max_message_bytes = old->max_message_bytes;
    fresh->max_parallel_launches = old->max_parallel_launches;
    fresh->idle_check_interval = old->idle_check_interval;
    json_decref (fresh->http);
    fresh->http = json_incref (old->http);
    memcpy (fresh->shard, old->shard, sizeof fresh->shard);
    return changed;
}

/* What a pooled kernel was made with: its policy, sandbox and kernel. */
static bool
pool_stale (const gw_config_t *old, const gw_config_t *fresh)
{
    json_t *a = gw_policy_to_json (&old->defaults), *b = gw_policy_to_json (&fresh->defaults);
    bool stale = !json_equal (a, b) || !json_equal (old->confine, fresh->confine)
                 || !json_equal (old->kernels, fresh->kernels) || old->warm_pool != fresh->warm_pool;
    json_decref (a);
    json_decref (b);
    return stale;
}

int
gw_reload (gw_server_t *server, gw_pool_renew_fn *renew)
{
    const char *path = gw_server_config_path (server);
    char *errmsg = NULL;
    gw_config_t *fresh = gw_config_load (path, &errmsg);
    if (fresh && gw_server_reload_check (server, fresh, &errmsg) < 0)
        gw_config_destroy (&fresh); /* a front refused its part: nothing changed */
    if (!fresh) {
        gw_log ("reload_failed", "{s:s, s:s, s:s}", "config", path ? path : "(none)", "error",
                errmsg ? errmsg : "cannot load", "outcome", "the old config is kept");
        free (errmsg);
        return -1;
    }
    const gw_config_t *old = gw_server_config (server);
    json_t *restart = restart_keys_keep (old, fresh);
    bool refill = pool_stale (old, fresh) && (gw_server_pool (server) || fresh->warm_pool > 0);
    gw_server_replace_config (server, &fresh);
    const gw_config_t *now = gw_server_config (server);
    gw_capacity_init (gw_server_capacity (server), now);
    if (refill)
        refill = renew (server, now->warm_pool);
    gw_log ("reload", "{s:s, s:o, s:b, s:o}", "config", path ? path : "(none)", "limits",
            gw_config_limits_json (now), "pool_refilled", refill, "needs_restart", restart);
    return 0;
}
