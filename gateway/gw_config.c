/*  gw_config.c - the operator's config file: defaults and maxima.

    The file is JSON:
      {"defaults": {policy fields}, "maxima": {numeric policy fields},
       "max_conversations": 64, "queue_limit": 16, "idle_check_interval": 30,
       "interrupt_grace": 2, "launch_timeout": 30, "drain_grace": 10,
       "max_message_bytes": 67108864, "launcher": "/usr/bin/kennel-launch",
       "confine": {extra confine policy fields, e.g. "allow_degraded"},
       "kernels": {"name": {"argv": ["cmd", "-f", "{connection_file}"]}},
       "fork_server": {"enabled": true, "preload": ["numpy"]}}
    Unknown keys are errors, so a typo never silently leaves a limit unset.
    A request's policy may lower a limit, never raise it above the maximum.
    Only the operator's file can make a limit unlimited, with the word
    "unlimited"; 0 and fractions of a count are refused everywhere.
*/
#include "gw_config.h"
#include "gw_util.h"
#include "wire.h"
#include "kernel-launcher/kennel_launch.h"
#include "config.h"

#include <limits.h>
#include <math.h>
#include <string.h>

typedef enum { F_SECONDS, F_COUNT } field_kind_t;

/* The numeric policy fields: one table drives loading, lowering and JSON.
   unlimitable: the operator's config may say "unlimited" (a client never
   can); tool_timeout needs a bound (the kernel's backstop is derived from
   it), workspace_bytes and workspace_files size the workspace's tmpfs. */
static const struct {
    const char *name;
    field_kind_t kind;
    size_t offset;
    bool unlimitable;
} numeric_fields[] = {
    {"execution_timeout", F_SECONDS, offsetof (gw_policy_t, execution_timeout), true},
    {"tool_timeout", F_SECONDS, offsetof (gw_policy_t, tool_timeout), false},
    {"idle_ttl", F_SECONDS, offsetof (gw_policy_t, idle_ttl), true},
    {"memory_bytes", F_COUNT, offsetof (gw_policy_t, memory_bytes), true},
    {"pids", F_COUNT, offsetof (gw_policy_t, pids), true},
    {"workspace_bytes", F_COUNT, offsetof (gw_policy_t, workspace_bytes), false},
    {"workspace_files", F_COUNT, offsetof (gw_policy_t, workspace_files), false},
    {"output_bytes", F_COUNT, offsetof (gw_policy_t, output_bytes), true},
};
#define NUMERIC_COUNT (sizeof numeric_fields / sizeof numeric_fields[0])

/* The range of a finite limit: below the minimum a timer or a cgroup file
   would read it as "none"; above the maximum it overflows a timer's
   milliseconds or an int64. */
#define SECONDS_MIN 0.001
#define SECONDS_MAX 1e9
#define COUNT_MAX ((double) ((int64_t) 1 << 62))

static double
field_get (const gw_policy_t *p, size_t i)
{
    const char *base = (const char *) p + numeric_fields[i].offset;
    if (numeric_fields[i].kind == F_SECONDS)
        return *(const double *) base;
    return (double) *(const int64_t *) base;
}

static void
field_set (gw_policy_t *p, size_t i, double v)
{
    char *base = (char *) p + numeric_fields[i].offset;
    if (numeric_fields[i].kind == F_SECONDS)
        *(double *) base = v;
    else
        *(int64_t *) base = (int64_t) v;
}

/* Whether v is no higher than max; unlimited is higher than any number. */
static bool
field_within (double v, double max)
{
    if (max == GW_UNLIMITED)
        return true;
    return v != GW_UNLIMITED && v <= max;
}

static void
policy_defaults (gw_policy_t *p)
{
    memset (p, 0, sizeof *p);
    p->execution_timeout = 600;
    p->tool_timeout = 60;
    p->idle_ttl = 3600;
    p->memory_bytes = (int64_t) 1 << 30;
    p->pids = 256;
    /* a full workspace (pages, and ~1 KiB of inode a file) is charged to
       memory_bytes: half of it leaves the kernel room, so filling the
       workspace ends in ENOSPC, not an out-of-memory kill */
    p->workspace_bytes = (int64_t) 512 << 20;
    p->workspace_files = 65536;
    p->output_bytes = (int64_t) 1 << 20;
    strcpy (p->network, "none");
    strcpy (p->builtins, "agent");
    p->env = json_object ();
}

static void
maxima_defaults (gw_policy_t *p)
{
    memset (p, 0, sizeof *p);
    p->execution_timeout = 3600;
    p->tool_timeout = 600;
    p->idle_ttl = 86400;
    p->memory_bytes = (int64_t) 4 << 30;
    p->pids = 1024;
    p->workspace_bytes = (int64_t) 10 << 30;
    p->workspace_files = 1000000;
    p->output_bytes = (int64_t) 16 << 20;
    strcpy (p->network, "loopback");
    strcpy (p->builtins, "none");
    p->env = json_object ();
}

void
gw_policy_clear (gw_policy_t *p)
{
    json_decref (p->imports);
    json_decref (p->env);
    p->imports = NULL;
    p->env = NULL;
}

void
gw_policy_copy (gw_policy_t *dst, const gw_policy_t *src)
{
    *dst = *src;
    dst->imports = src->imports ? json_deep_copy (src->imports) : NULL;
    dst->env = src->env ? json_deep_copy (src->env) : json_object ();
}

/* One numeric limit from JSON into *out: a number in the field's range
   (a whole one for counts: 0.5 is refused, never truncated to 0), or, in
   the operator's config only, "unlimited" (GW_UNLIMITED). Nothing else
   says "no limit": 0 is an error like any value below the minimum. */
static int
field_parse (size_t i, const json_t *value, bool operator, const char *where, double *out, char **errmsg)
{
    const char *name = numeric_fields[i].name;
    bool seconds = numeric_fields[i].kind == F_SECONDS;
    const char *word = json_string_value (value);
    if (word && streq (word, "unlimited") && json_string_length (value) == strlen (word)) {
        if (!operator) {
            *errmsg = wire_xasprintf ("%s.%s: \"unlimited\" is for the operator's config only", where, name);
            return -1;
        }
        if (!numeric_fields[i].unlimitable) {
            *errmsg = wire_xasprintf ("%s.%s: cannot be \"unlimited\"", where, name);
            return -1;
        }
        *out = GW_UNLIMITED;
        return 0;
    }
    double min = seconds ? SECONDS_MIN : 1, max = seconds ? SECONDS_MAX : COUNT_MAX;
    double v = json_number_value (value);
    if (!json_is_number (value) || v < min || v > max || (!seconds && v != floor (v))) {
        *errmsg = wire_xasprintf ("%s.%s: must be %s from %g to %g%s", where, name,
                                  seconds ? "a number of seconds" : "a whole number", min, max,
                                  operator && numeric_fields[i].unlimitable ? ", or \"unlimited\"" : "");
        return -1;
    }
    *out = v;
    return 0;
}

/* A list of Python module names ([A-Za-z0-9_.]+ each): what imports and
   fork_server.preload hold. */
static bool
module_name (const json_t *value)
{
    const char *m = gw_text (value);
    return m && *m && strspn (m, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") == strlen (m);
}

static bool
module_names (const json_t *list)
{
    size_t i;
    json_t *item;
    json_array_foreach (list, i, item)
        if (!module_name (item))
            return false;
    return true;
}

/* Applies one policy object onto out. With max (request mode), numeric values
   above the maximum and network "loopback" when the maximum is "none" are
   errors naming the field. */
static int
policy_apply (gw_policy_t *out, const json_t *obj, const gw_policy_t *max, const char *where, char **errmsg)
{
    if (!json_is_object (obj)) {
        *errmsg = wire_xasprintf ("%s: must be an object", where);
        return -1;
    }
    if (!gw_text_clean (obj)) {
        *errmsg = wire_xasprintf ("%s: a field name or a string holds a NUL byte", where);
        return -1;
    }
    const char *name;
    json_t *value;
    json_object_foreach ((json_t *) obj, name, value) {
        size_t i;
        for (i = 0; i < NUMERIC_COUNT; i++)
            if (streq (name, numeric_fields[i].name))
                break;
        if (i < NUMERIC_COUNT) {
            double v;
            if (field_parse (i, value, max == NULL, where, &v, errmsg) < 0)
                return -1;
            if (max && !field_within (v, field_get (max, i))) {
                *errmsg = wire_xasprintf ("%s.%s: %g exceeds the operator's limit %g", where, name, v,
                                          field_get (max, i));
                return -1;
            }
            field_set (out, i, v);
        }
        else if (streq (name, "network")) {
            const char *v = gw_text (value);
            if (!v || (!streq (v, "none") && !streq (v, "loopback"))) {
                *errmsg = wire_xasprintf ("%s.network: must be \"none\" or \"loopback\"", where);
                return -1;
            }
            if (max && streq (v, "loopback") && streq (max->network, "none")) {
                *errmsg = wire_xasprintf ("%s.network: \"loopback\" exceeds the operator's limit \"none\"", where);
                return -1;
            }
            snprintf (out->network, sizeof out->network, "%s", v);
        }
        else if (streq (name, "builtins")) {
            const char *v = gw_text (value);
            if (!v || (!streq (v, "agent") && !streq (v, "notebook") && !streq (v, "none"))) {
                *errmsg = wire_xasprintf ("%s.builtins: must be \"agent\", \"notebook\" or \"none\"", where);
                return -1;
            }
            snprintf (out->builtins, sizeof out->builtins, "%s", v);
        }
        else if (streq (name, "imports")) {
            json_t *deny = json_object_get (value, "deny"), *allow = json_object_get (value, "allow");
            if (!json_is_object (value) || json_object_size (value) != 1 || !(json_is_array (deny) || json_is_array (allow))
                || !module_names (deny ? deny : allow)) {
                *errmsg = wire_xasprintf ("%s.imports: must be {\"deny\": [...]} or {\"allow\": [...]} of module names",
                                          where);
                return -1;
            }
            json_decref (out->imports);
            out->imports = json_deep_copy (value);
        }
        else if (streq (name, "env")) {
            const char *k;
            json_t *v;
            if (!json_is_object (value)) {
                *errmsg = wire_xasprintf ("%s.env: must be an object of strings", where);
                return -1;
            }
            json_object_foreach (value, k, v) {
                if (!json_is_string (v) || !*k || strchr (k, '=')) {
                    *errmsg = wire_xasprintf ("%s.env.%s: must be a string (and the name without '=')", where, k);
                    return -1;
                }
            }
            json_object_update (out->env, value);
        }
        else {
            *errmsg = wire_xasprintf ("%s.%s: unknown policy field", where, name);
            return -1;
        }
    }
    return 0;
}

int
gw_policy_lower_spec (const gw_config_t *config, const char *kernelspec, const json_t *request, gw_policy_t *out,
                      char **errmsg)
{
    gw_policy_copy (out, &config->defaults);
    const json_t *spec = kernelspec ? gw_config_kernelspec (config, kernelspec) : NULL;
    if (spec) {
        /* the operator's, checked within the maxima at load: it may say "unlimited" */
        if (policy_apply (out, json_object_get (spec, "policy"), NULL, "kernelspec policy", errmsg) < 0) {
            gw_policy_clear (out);
            return -1;
        }
        snprintf (out->kernelspec, sizeof out->kernelspec, "%s", kernelspec);
    }
    if (!request || json_is_null (request))
        return 0;
    if (policy_apply (out, request, &config->maxima, "policy", errmsg) < 0) {
        gw_policy_clear (out);
        return -1;
    }
    return 0;
}

int
gw_policy_lower (const gw_config_t *config, const json_t *request, gw_policy_t *out, char **errmsg)
{
    return gw_policy_lower_spec (config, NULL, request, out, errmsg);
}

const json_t *
gw_config_kernelspec (const gw_config_t *config, const char *name)
{
    return json_object_get (config->kernelspecs, name);
}

json_t *
gw_config_kernelspecs_json (const gw_config_t *config)
{
    json_t *out = json_object ();
    const char *name;
    json_t *spec;
    json_object_foreach (config->kernelspecs, name, spec) {
        gw_policy_t p;
        char *errmsg = NULL;
        if (gw_policy_lower_spec (config, name, NULL, &p, &errmsg) < 0) {
            free (errmsg); /* cannot happen: every spec lowered at load */
            continue;
        }
        json_t *shown = json_deep_copy (spec);
        json_object_set_new (shown, "policy", gw_policy_to_json (&p));
        json_object_set_new (out, name, shown);
        gw_policy_clear (&p);
    }
    return out;
}

json_t *
gw_policy_to_json (const gw_policy_t *p)
{
    json_t *obj = json_object ();
    for (size_t i = 0; i < NUMERIC_COUNT; i++) {
        double v = field_get (p, i);
        json_object_set_new (obj, numeric_fields[i].name,
                             v == GW_UNLIMITED                    ? json_string ("unlimited")
                             : numeric_fields[i].kind == F_SECONDS ? json_real (v)
                                                                   : json_integer ((json_int_t) v));
    }
    json_object_set_new (obj, "network", json_string (p->network));
    json_object_set_new (obj, "builtins", json_string (p->builtins));
    if (p->imports)
        json_object_set (obj, "imports", p->imports);
    return obj;
}

size_t
gw_limit_ms (double seconds)
{
    return seconds * 1000 < 1 ? 1 : (size_t) (seconds * 1000);
}

/* A count for the launcher: "unlimited" is its word too (confine/policy.c),
   so no number ever means "none" on the way. */
static json_t *
count_json (int64_t v)
{
    return v == GW_UNLIMITED ? json_string ("unlimited") : json_integer ((json_int_t) v);
}

json_t *
gw_confine_policy_json (const gw_config_t *config, const gw_policy_t *p)
{
    json_t *policy = json_deep_copy (config->confine);
    json_object_set_new (policy, "memory_bytes", count_json (p->memory_bytes));
    json_object_set_new (policy, "pids", count_json (p->pids));
    json_object_set_new (policy, "workspace_bytes", count_json (p->workspace_bytes));
    json_object_set_new (policy, "workspace_files", count_json (p->workspace_files));
    json_object_set_new (policy, "network", json_string (p->network));
    return policy;
}

bool
gw_config_allows_degraded (const gw_config_t *config, const char *layer)
{
    size_t i;
    json_t *name;
    json_array_foreach (json_object_get (config->confine, "allow_degraded"), i, name)
        if (json_is_string (name) && streq (json_string_value (name), layer))
            return true;
    return false;
}

char *
gw_config_degrade_fix (const char *layer)
{
    return wire_xasprintf ("or let kennel run without it: \"confine\": {\"allow_degraded\": [\"%s\"]} in its config "
                           "(kennel.conf(5); with the layers already named there)",
                           layer);
}

json_t *
gw_config_limits_json (const gw_config_t *c)
{
    json_t *maxima = gw_policy_to_json (&c->maxima);
    json_object_del (maxima, "builtins");
    json_object_del (maxima, "imports");
    return json_pack ("{s:o, s:o, s:o, s:i, s:i, s:I, s:i, s:i}", "defaults", gw_policy_to_json (&c->defaults),
                      "maxima", maxima, "kernelspecs", gw_config_kernelspecs_json (c), "max_conversations",
                      c->max_conversations, "queue_limit", c->queue_limit, "max_message_bytes",
                      (json_int_t) c->max_message_bytes, "max_tool_calls", c->max_tool_calls,
                      "max_concurrent_tool_calls", c->max_concurrent_tool_calls);
}

/* The launcher next to our own binary (build tree or prefix/bin), else
   PATH: found once per process, at the first call, which gw_process_setup
   makes before it unshares its mount namespace. After that unshare
   /proc/self/exe names the binary relative to the root of the mount it
   lies on when that mount is not / (a bind-mounted tree, a separate /usr
   or /opt), a path that does not exist; a reload (SIGHUP) would then fall
   back to PATH. */
const char *
gw_config_default_launcher (void)
{
    static char *launcher;
    if (launcher)
        return launcher;
    char self[4096];
    ssize_t n = readlink ("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr (self, '/');
        if (slash) {
            *slash = 0;
            const char *candidates[] = {"%s/" LAUNCH_PROGRAM, "%s/../kernel-launcher/" LAUNCH_PROGRAM};
            for (size_t i = 0; i < 2 && !launcher; i++) {
                char path[GW_PATH_MAX];
                snprintf (path, sizeof path, candidates[i], self);
                launcher = access (path, X_OK) == 0 ? realpath (path, NULL) : NULL;
            }
        }
    }
    if (!launcher)
        launcher = wire_xstrdup (LAUNCH_PROGRAM);
    return launcher;
}

/* 0 when every limit of p (the operator's: defaults, a kernelspec's) is
   within the maxima, else -1 with *errmsg naming where and the field. */
static int
policy_within (const gw_config_t *self, const gw_policy_t *p, const char *path, const char *where, char **errmsg)
{
    for (size_t i = 0; i < NUMERIC_COUNT; i++)
        if (!field_within (field_get (p, i), field_get (&self->maxima, i))) {
            *errmsg = wire_xasprintf ("config %s: %s.%s is above maxima.%s", path, where, numeric_fields[i].name,
                                      numeric_fields[i].name);
            return -1;
        }
    if (streq (p->network, "loopback") && streq (self->maxima.network, "none")) {
        *errmsg = wire_xasprintf ("config %s: %s.network \"loopback\" is above maxima.network \"none\"", path, where);
        return -1;
    }
    return 0;
}

static int fork_server_apply (gw_config_t *self, json_t *fs, const char *path, char **errmsg);
static int kernelspecs_apply (gw_config_t *self, const json_t *specs, const char *path, char **errmsg);
static int mcp_apply (gw_config_t *self, json_t *mcp, const char *path, char **errmsg);

/* The shard every id starts with (gw_id.c); from names where it came from. */
static int
shard_set (gw_config_t *self, const char *shard, const char *from, char **errmsg)
{
    size_t n = shard ? strlen (shard) : 0;
    if (n < 1 || n > GW_SHARD_MAX || strspn (shard, "0123456789abcdef") != n) {
        *errmsg = wire_xasprintf ("%s: shard must be 1 to %d lowercase hex digits", from, GW_SHARD_MAX);
        return -1;
    }
    snprintf (self->shard, sizeof self->shard, "%s", shard);
    return 0;
}

/* ---- the file's top-level keys: one row each ---------------------------- */

/* A key of the file applied to self: value NULL when the file lacks it
   (the check across keys still runs: the defaults against the maxima).
   0, or -1 with *errmsg. */
typedef int (key_apply_fn) (gw_config_t *self, json_t *value, const char *path, char **errmsg);

static int
maxima_key (gw_config_t *self, json_t *value, const char *path, char **errmsg)
{
    (void) path;
    return value ? policy_apply (&self->maxima, value, NULL, "config maxima", errmsg) : 0;
}

/* after the maxima: the defaults, the file's or the built-in ones, within them */
static int
defaults_key (gw_config_t *self, json_t *value, const char *path, char **errmsg)
{
    if (value && policy_apply (&self->defaults, value, NULL, "config defaults", errmsg) < 0)
        return -1;
    return policy_within (self, &self->defaults, path, "defaults", errmsg);
}

static int
active_content_key (gw_config_t *self, json_t *value, const char *path, char **errmsg)
{
    const char *word = json_string_value (value);
    if (value && (!word || (!streq (word, "sanitize") && !streq (word, "allow")))) {
        *errmsg = wire_xasprintf ("config %s: active_content must be \"sanitize\" or \"allow\"", path);
        return -1;
    }
    if (value)
        self->allow_active_content = streq (word, "allow");
    return 0;
}

static int
launcher_key (gw_config_t *self, json_t *value, const char *path, char **errmsg)
{
    if (!value)
        return 0;
    if (!json_is_string (value)) {
        *errmsg = wire_xasprintf ("config %s: launcher must be a path", path);
        return -1;
    }
    free (self->launcher);
    self->launcher = wire_xstrdup (json_string_value (value));
    return 0;
}

static int
confine_key (gw_config_t *self, json_t *value, const char *path, char **errmsg)
{
    if (!value)
        return 0;
    if (!json_is_object (value)) {
        *errmsg = wire_xasprintf ("config %s: confine must be an object", path);
        return -1;
    }
    json_object_update (self->confine, value); /* the operator's keys replace ours */
    return 0;
}

static int
kernels_key (gw_config_t *self, json_t *value, const char *path, char **errmsg)
{
    if (!value)
        return 0;
    const char *name;
    json_t *k;
    json_object_foreach (value, name, k) {
        if (!json_is_array (json_object_get (k, "argv")) || !json_array_size (json_object_get (k, "argv"))) {
            *errmsg = wire_xasprintf ("config %s: kernels.%s needs a non-empty argv", path, name);
            return -1;
        }
    }
    json_object_update (self->kernels, value);
    return 0;
}

static int
kernelspecs_key (gw_config_t *self, json_t *value, const char *path, char **errmsg)
{
    return value ? kernelspecs_apply (self, value, path, errmsg) : 0;
}

static int
shard_key (gw_config_t *self, json_t *value, const char *path, char **errmsg)
{
    return value ? shard_set (self, gw_text (value), path, errmsg) : 0;
}

/* checked by the HTTP front when it starts (http_settings.c) */
static int
http_key (gw_config_t *self, json_t *value, const char *path, char **errmsg)
{
    (void) path;
    (void) errmsg;
    self->http = json_incref (value);
    return 0;
}

typedef enum { K_INT, K_SECONDS, K_BYTES, K_BOOL, K_OTHER } key_kind_t;

/* A key: a number from min to max or a bool, stored in its field of
   gw_config_t, or what its function does. */
typedef struct {
    const char *name;
    key_kind_t kind;
    size_t offset;
    double min, max; /* max keeps a number within its int or its timer's milliseconds */
    key_apply_fn *apply;
} config_key_t;

#define NUMBER_KEY(kind, field, min, max) {#field, kind, offsetof (gw_config_t, field), min, max, NULL}
#define BOOL_KEY(field) {#field, K_BOOL, offsetof (gw_config_t, field), 0, 0, NULL}
#define OTHER_KEY(name, fn) {name, K_OTHER, 0, 0, 0, fn}

/* The keys a file may have: the names of config_keys below, each once
   (config_apply_file checks it), listed where tests/deploy/test_manpages.py
   reads them to find each key in kennel.conf(5). */
static const char *known[] = {"maxima", "defaults", "max_conversations", "max_parallel_launches", "queue_limit",
                              "idle_check_interval", "interrupt_grace", "launch_timeout", "drain_grace",
                              "max_message_bytes", "max_tool_calls", "max_concurrent_tool_calls", "warm_pool",
                              "log_tool_arguments", "active_content", "fork_server", "launcher", "confine",
                              "kernels", "kernelspecs", "shard", "http", "mcp"};
#define KNOWN_COUNT (sizeof known / sizeof known[0])

/* Each key's row, in the order they apply: the maxima before the defaults
   checked against them, the kernels before the kernelspecs that name
   them, the kernelspecs after the maxima (a policy's "maximum"). */
static const config_key_t config_keys[] = {
    OTHER_KEY ("maxima", maxima_key),
    OTHER_KEY ("defaults", defaults_key),
    NUMBER_KEY (K_INT, max_conversations, 0, INT_MAX),
    NUMBER_KEY (K_INT, max_parallel_launches, 1, INT_MAX),
    NUMBER_KEY (K_INT, queue_limit, 1, INT_MAX),
    NUMBER_KEY (K_SECONDS, idle_check_interval, 0.01, SECONDS_MAX),
    NUMBER_KEY (K_SECONDS, interrupt_grace, 0, SECONDS_MAX),
    NUMBER_KEY (K_SECONDS, launch_timeout, 0.1, SECONDS_MAX),
    NUMBER_KEY (K_SECONDS, drain_grace, 0, SECONDS_MAX),
    NUMBER_KEY (K_BYTES, max_message_bytes, 1024, COUNT_MAX),
    NUMBER_KEY (K_INT, max_tool_calls, 1, INT_MAX),
    NUMBER_KEY (K_INT, max_concurrent_tool_calls, 1, INT_MAX),
    NUMBER_KEY (K_INT, warm_pool, 0, INT_MAX),
    BOOL_KEY (log_tool_arguments),
    OTHER_KEY ("active_content", active_content_key),
    OTHER_KEY ("fork_server", fork_server_apply),
    OTHER_KEY ("launcher", launcher_key),
    OTHER_KEY ("confine", confine_key),
    OTHER_KEY ("kernels", kernels_key),
    OTHER_KEY ("kernelspecs", kernelspecs_key),
    OTHER_KEY ("shard", shard_key),
    OTHER_KEY ("http", http_key),
    OTHER_KEY ("mcp", mcp_apply),
};
#define CONFIG_KEY_COUNT (sizeof config_keys / sizeof config_keys[0])
_Static_assert (KNOWN_COUNT == CONFIG_KEY_COUNT, "known[] names each row of config_keys once");

/* The row of a key the file may have, or NULL. */
static const config_key_t *
config_key_find (const char *name)
{
    size_t k;
    for (k = 0; k < KNOWN_COUNT && !streq (known[k], name); k++)
        ;
    for (size_t i = 0; k < KNOWN_COUNT && i < CONFIG_KEY_COUNT; i++)
        if (streq (config_keys[i].name, name))
            return &config_keys[i];
    return NULL;
}

static int
config_key_apply (gw_config_t *self, const config_key_t *key, json_t *value, const char *path, char **errmsg)
{
    if (key->kind == K_OTHER)
        return key->apply (self, value, path, errmsg);
    if (!value)
        return 0;
    char *field = (char *) self + key->offset;
    if (key->kind == K_BOOL) {
        if (!json_is_boolean (value)) {
            *errmsg = wire_xasprintf ("config %s: %s must be true or false", path, key->name);
            return -1;
        }
        *(bool *) field = json_is_true (value);
        return 0;
    }
    double n = json_number_value (value);
    if (!json_is_number (value) || n < key->min || n > key->max) {
        *errmsg = wire_xasprintf ("config: %s must be a number from %g to %g", key->name, key->min, key->max);
        return -1;
    }
    if (key->kind == K_INT)
        *(int *) field = (int) n;
    else if (key->kind == K_SECONDS)
        *(double *) field = n;
    else
        *(size_t *) field = (size_t) n;
    return 0;
}

static int
config_apply_file (gw_config_t *self, const char *path, char **errmsg)
{
    json_error_t jerr;
    json_t *file = json_load_file (path, 0, &jerr);
    if (!file) {
        *errmsg = wire_xasprintf ("config %s: %s (line %d)", path, jerr.text, jerr.line);
        return -1;
    }
    int rc = -1;
    const char *key;
    json_t *value;
    if (!json_is_object (file)) {
        *errmsg = wire_xasprintf ("config %s: must be a JSON object", path);
        goto done;
    }
    for (size_t i = 0; i < KNOWN_COUNT; i++)
        if (!config_key_find (known[i])) { /* gw_config.c's own fault: a make check that loads a file sees it */
            *errmsg = wire_xasprintf ("config: known key \"%s\" has no row in config_keys", known[i]);
            goto done;
        }
    json_object_foreach (file, key, value) {
        if (!config_key_find (key)) {
            *errmsg = wire_xasprintf ("config %s: unknown key \"%s\"", path, key);
            goto done;
        }
    }
    for (size_t i = 0; i < CONFIG_KEY_COUNT; i++)
        if (config_key_apply (self, &config_keys[i], json_object_get (file, config_keys[i].name), path, errmsg) < 0)
            goto done;
    rc = 0;
done:
    json_decref (file);
    return rc;
}

/* The kernelspecs when the config names none: the agent's defaults, and
   what kernelspec mode gives a person at a notebook (gateway/main.c's
   kennel.conf: the notebook builtins profile, no execution timeout, its
   memory and output) as far as the operator's maxima go, and no idle cull
   before the longest idle_ttl. */
static const char BUILTIN_KERNELSPECS[] =
    "{\"python3\": {\"display_name\": \"Python 3 (kennel)\"},"
    " \"python3-notebook\": {\"display_name\": \"Python 3 (kennel, notebook)\", \"policy\": {\"builtins\": \"notebook\","
    " \"execution_timeout\": \"maximum\", \"output_bytes\": \"maximum\", \"memory_bytes\": \"maximum\","
    " \"pids\": \"maximum\", \"idle_ttl\": \"maximum\"}}}";

/* A kernelspec's policy with each "maximum" replaced by the maxima's value
   (a number, or "unlimited"; network's word); NULL + *errmsg. */
static json_t *
maximum_resolved (const gw_config_t *self, const json_t *policy, const char *where, char **errmsg)
{
    json_t *out = json_deep_copy (policy);
    const char *key;
    json_t *value;
    json_object_foreach (out, key, value) {
        const char *word = json_string_value (value);
        if (!word || !streq (word, "maximum"))
            continue;
        size_t i;
        for (i = 0; i < NUMERIC_COUNT && !streq (key, numeric_fields[i].name); i++)
            ;
        json_t *max = NULL;
        if (i < NUMERIC_COUNT) {
            double v = field_get (&self->maxima, i);
            max = v == GW_UNLIMITED ? json_string ("unlimited")
                  : numeric_fields[i].kind == F_SECONDS ? json_real (v) : json_integer ((json_int_t) v);
        }
        else if (streq (key, "network"))
            max = json_string (self->maxima.network);
        if (!max) {
            *errmsg = wire_xasprintf ("%s.%s: \"maximum\" is for limits (numbers, network)", where, key);
            json_decref (out);
            return NULL;
        }
        json_object_set_new (out, key, max);
    }
    return out;
}

/* One kernelspec of the config: its entry as kept, or NULL + *errmsg. */
static json_t *
kernelspec_checked (gw_config_t *self, const char *name, const json_t *spec, const char *path, char **errmsg)
{
    char field[GW_KERNELSPEC_NAME_MAX + 32], where[sizeof field + 8];
    snprintf (field, sizeof field, "kernelspecs.%.64s", name);
    snprintf (where, sizeof where, "config %s", field);
    size_t n = strlen (name);
    if (n < 1 || n > GW_KERNELSPEC_NAME_MAX
        || strspn (name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n) {
        *errmsg = wire_xasprintf ("config %s: %s: a kernelspec's name is 1 to 64 of [A-Za-z0-9._-]", path, field);
        return NULL;
    }
    const json_t *display = json_object_get (spec, "display_name"), *kernel = json_object_get (spec, "kernel");
    const json_t *policy = json_object_get (spec, "policy");
    const char *kname = kernel ? gw_text (kernel) : "python";
    if (!json_is_object (spec) || (display && !gw_text (display)) || !kname || (policy && !json_is_object (policy))) {
        *errmsg = wire_xasprintf ("config %s: %s: must be {\"display_name\": text, \"kernel\": a name, \"policy\": "
                                  "{...}}", path, field);
        return NULL;
    }
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) spec, key, value)
        if (!streq (key, "display_name") && !streq (key, "kernel") && !streq (key, "policy")) {
            *errmsg = wire_xasprintf ("config %s: %s.%s: unknown key (display_name, kernel, policy)", path, field, key);
            return NULL;
        }
    const json_t *other = json_object_get (self->kernels, kname);
    if (!streq (kname, "python") && !other) {
        *errmsg = wire_xasprintf ("config %s: %s.kernel: \"python\" or a name of the config's kernels", path, field);
        return NULL;
    }
    if (json_object_get (self->kernels, name)) {
        *errmsg = wire_xasprintf ("config %s: %s: a kernel of the config has this name (they share the names the "
                                  "HTTP front lists)", path, field);
        return NULL;
    }
    json_t *empty = json_object ();
    json_t *resolved = maximum_resolved (self, policy ? policy : empty, where, errmsg);
    json_decref (empty);
    gw_policy_t p;
    gw_policy_copy (&p, &self->defaults);
    int rc = resolved ? policy_apply (&p, resolved, NULL, where, errmsg) : -1;
    if (rc == 0)
        rc = policy_within (self, &p, path, field, errmsg);
    gw_policy_clear (&p);
    if (rc < 0) {
        json_decref (resolved);
        return NULL;
    }
    const char *lang = other ? gw_text (json_object_get (other, "language")) : "python";
    return json_pack ("{s:s, s:s, s:s, s:o}", "display_name", display ? gw_text (display) : name, "kernel", kname,
                      "language", lang ? lang : "unknown", "policy", resolved);
}

/* "kernelspecs": {name: {"display_name", "kernel", "policy"}}: replaces
   the built-in ones; "python3" (the default, which clients ask for by
   name) must be among them. */
static int
kernelspecs_apply (gw_config_t *self, const json_t *specs, const char *path, char **errmsg)
{
    if (!json_is_object (specs) || !json_object_get (specs, "python3")) {
        *errmsg = wire_xasprintf ("config %s: kernelspecs must be an object naming \"python3\" (the default) among "
                                  "its kernelspecs", path);
        return -1;
    }
    json_t *kept = json_object ();
    const char *name;
    json_t *spec;
    json_object_foreach ((json_t *) specs, name, spec) {
        json_t *entry = kernelspec_checked (self, name, spec, path, errmsg);
        if (!entry) {
            json_decref (kept);
            return -1;
        }
        json_object_set_new (kept, name, entry);
    }
    json_decref (self->kernelspecs);
    self->kernelspecs = kept;
    return 0;
}

/* "fork_server": {"enabled": bool, "preload": ["module", ...]} */
static int
fork_server_apply (gw_config_t *self, json_t *fs, const char *path, char **errmsg)
{
    if (!fs)
        return 0;
    const char *key;
    json_t *value;
    if (!json_is_object (fs)) {
        *errmsg = wire_xasprintf ("config %s: fork_server must be an object", path);
        return -1;
    }
    json_object_foreach (fs, key, value) {
        if (streq (key, "enabled")) {
            if (!json_is_boolean (value)) {
                *errmsg = wire_xasprintf ("config %s: fork_server.enabled must be true or false", path);
                return -1;
            }
            self->fork_server = json_is_true (value);
        }
        else if (streq (key, "preload")) {
            size_t i;
            json_t *mod;
            if (!json_is_array (value)) {
                *errmsg = wire_xasprintf ("config %s: fork_server.preload must be a list of module names", path);
                return -1;
            }
            json_array_foreach (value, i, mod) {
                if (!module_name (mod)) {
                    *errmsg = wire_xasprintf ("config %s: fork_server.preload[%zu] must be a module name", path, i);
                    return -1;
                }
            }
            json_decref (self->fork_preload);
            self->fork_preload = json_deep_copy (value);
        }
        else {
            *errmsg = wire_xasprintf ("config %s: unknown key \"fork_server.%s\"", path, key);
            return -1;
        }
    }
    return 0;
}

/* One number of the "mcp" section, from min to max. */
static int
mcp_number (json_t *mcp, const char *key, double min, double max, double *out, const char *path, char **errmsg)
{
    json_t *v = json_object_get (mcp, key);
    if (!v)
        return 0;
    if (!json_is_number (v) || json_number_value (v) < min || json_number_value (v) > max
        || json_number_value (v) != (double) (int64_t) json_number_value (v)) {
        *errmsg = wire_xasprintf ("config %s: mcp.%s must be a whole number from %g to %g", path, key, min, max);
        return -1;
    }
    *out = json_number_value (v);
    return 0;
}

/* "mcp": {"tools": "/abs/path", "tools_from_mcp": "CMD", "max_commands",
   "command_memory_bytes", "command_pids"}: the shape and the bounds of host
   commands; the tools file itself is read and checked by /mcp
   (gateway/mcp), at start and at each reload. The path is absolute: a
   reload must read the same file whatever the daemon's cwd became. */
static int
mcp_apply (gw_config_t *self, json_t *mcp, const char *path, char **errmsg)
{
    if (!mcp)
        return 0;
    if (!json_is_object (mcp)) {
        *errmsg = wire_xasprintf ("config %s: mcp must be an object", path);
        return -1;
    }
    static const char *mcp_keys[] = {"tools", "tools_from_mcp", "max_commands", "command_memory_bytes", "command_pids",
                                     NULL};
    const char *key;
    json_t *value;
    json_object_foreach (mcp, key, value) {
        const char *text = gw_text (value);
        if (streq (key, "tools") && !(text && text[0] == '/')) {
            *errmsg = wire_xasprintf ("config %s: mcp.tools must be an absolute path", path);
            return -1;
        }
        if (streq (key, "tools_from_mcp") && !(text && *text)) {
            *errmsg = wire_xasprintf ("config %s: mcp.tools_from_mcp must be a non-empty command", path);
            return -1;
        }
        int i;
        for (i = 0; mcp_keys[i] && !streq (mcp_keys[i], key); i++)
            ;
        if (!mcp_keys[i]) {
            *errmsg = wire_xasprintf ("config %s: unknown key \"mcp.%s\"", path, key);
            return -1;
        }
    }
    double commands = self->mcp_max_commands, memory = (double) self->mcp_command_memory_bytes,
           pids = (double) self->mcp_command_pids;
    if (mcp_number (mcp, "max_commands", 1, 65536, &commands, path, errmsg) < 0
        || mcp_number (mcp, "command_memory_bytes", 1 << 20, COUNT_MAX, &memory, path, errmsg) < 0
        || mcp_number (mcp, "command_pids", 1, 1 << 22, &pids, path, errmsg) < 0)
        return -1;
    self->mcp_max_commands = (int) commands;
    self->mcp_command_memory_bytes = (int64_t) memory;
    self->mcp_command_pids = (int64_t) pids;
    self->mcp = json_deep_copy (mcp);
    return 0;
}

gw_config_t *
gw_config_load (const char *path, char **errmsg)
{
    gw_config_t *self = wire_xcalloc (1, sizeof *self);
    self->refs = 1;
    policy_defaults (&self->defaults);
    maxima_defaults (&self->maxima);
    self->max_conversations = 64;
    self->max_parallel_launches = 4;
    self->queue_limit = 16;
    self->idle_check_interval = 30;
    self->interrupt_grace = 2;
    self->launch_timeout = 30;
    self->drain_grace = 10;
    self->max_message_bytes = wire_limits_default.max_message_bytes;
    self->max_tool_calls = 10000;
    self->max_concurrent_tool_calls = 16;
    self->mcp_max_commands = 64;
    self->mcp_command_memory_bytes = (int64_t) 1 << 30;
    self->mcp_command_pids = 64;
    self->warm_pool = 2;
    self->fork_server = true;
    self->fork_preload = json_array ();
    self->launcher = wire_xstrdup (gw_config_default_launcher ());
    /* every layer fails closed unless the operator's config names it */
    self->confine = json_pack ("{s:[]}", "allow_degraded");
    self->kernels = json_object ();
    if (path && config_apply_file (self, path, errmsg) < 0)
        gw_config_destroy (&self);
    if (self && !self->kernelspecs) {
        json_t *builtin = json_loads (BUILTIN_KERNELSPECS, 0, NULL);
        if (kernelspecs_apply (self, builtin, path ? path : "(none)", errmsg) < 0)
            gw_config_destroy (&self); /* the built-in ones under the file's maxima: cannot fail */
        json_decref (builtin);
    }
    /* the environment wins, as KENNEL_AUTH_TOKEN does: a StatefulSet's
       pod knows its ordinal, its config map does not */
    const char *env_shard = getenv ("KENNEL_SHARD");
    if (self && env_shard && shard_set (self, env_shard, "environment KENNEL_SHARD", errmsg) < 0)
        gw_config_destroy (&self);
    return self;
}

gw_config_t *
gw_config_ref (const gw_config_t *self)
{
    gw_config_t *held = (gw_config_t *) self; /* the count is the holders', not the config's content */
    held->refs++;
    return held;
}

void
gw_config_destroy (gw_config_t **self_p)
{
    gw_config_t *self = *self_p;
    *self_p = NULL;
    if (!self || --self->refs > 0)
        return;
    gw_policy_clear (&self->defaults);
    gw_policy_clear (&self->maxima);
    free (self->launcher);
    json_decref (self->confine);
    json_decref (self->kernels);
    json_decref (self->kernelspecs);
    json_decref (self->fork_preload);
    json_decref (self->http);
    json_decref (self->mcp);
    free (self);
}
