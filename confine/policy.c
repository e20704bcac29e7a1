/*  policy.c - the confinement policy: defaults and the JSON loader.
    The JSON fields and their defaults are listed in README.md. */
#include "confine.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB 1024ULL
#define MIB (1024ULL * KIB)
#define GIB (1024ULL * MIB)

static const char *layer_names[CONFINE_LAYER_COUNT_] = {
    "no_new_privs", "cgroup", "userns", "pid", "net", "ipc", "uts", "cgroupns",
    "mount", "quota", "guard", "caps", "rlimits", "landlock", "seccomp", "fds", "env",
};

const char *
confine_layer_name (confine_layer_t layer)
{
    return (unsigned) layer < CONFINE_LAYER_COUNT_ ? layer_names[layer] : NULL;
}

int
confine_layer_from_name (const char *name)
{
    for (int i = 0; i < CONFINE_LAYER_COUNT_; i++)
        if (strcmp (layer_names[i], name) == 0)
            return i;
    return -1;
}

bool
confine_layer_degradable (confine_layer_t layer)
{
    /* Only layers whose absence leaves the namespaces, the filters and the
       rlimits in place: the sandbox stays a sandbox, with weaker limits. */
    return layer == CONFINE_LAYER_CGROUP || layer == CONFINE_LAYER_CGROUPNS
        || layer == CONFINE_LAYER_LANDLOCK || layer == CONFINE_LAYER_QUOTA || layer == CONFINE_LAYER_GUARD;
}

confine_policy_t *
confine_policy_new (void)
{
    confine_policy_t *self = confine_xcalloc (1, sizeof *self);
    self->hostname = confine_xstrdup ("kennel");
    self->network = CONFINE_NET_NONE;
    self->uid = self->gid = 1000;
    self->host_uid = self->host_gid = CONFINE_HOST_ID;
    self->memory_bytes = 2 * GIB;
    self->pids = 256;
    self->cpus = 1.0;
    self->workspace_bytes = 1 * GIB;
    self->workspace_files = 65536;
    self->tmp_bytes = 256 * MIB;
    self->shm_bytes = 256 * MIB;
    self->rlimit_nofile = 1024;
    self->rlimit_fsize = 1 * GIB;
    self->rlimit_nproc = 256;
    self->rlimit_stack = 8 * MIB;
    self->rlimit_data = 2 * GIB;
    /* 1, not 0: a piped core_pattern ignores the limit except the value 1,
       which aborts the dump (fs/coredump.c). */
    self->rlimit_core = 1;
    self->rlimit_cpu = 0;
    return self;
}

void
confine_policy_setenv (confine_policy_t *self, const char *name, const char *value)
{
    self->env = confine_xreallocarray (self->env, self->env_count + 1, sizeof *self->env);
    size_t len = strlen (name) + strlen (value) + 2;
    char *entry = confine_xmalloc (len);
    snprintf (entry, len, "%s=%s", name, value);
    self->env[self->env_count++] = entry;
}

int
confine_policy_keep_fd (confine_policy_t *self, int fd)
{
    if (self->keep_fd_count >= sizeof self->keep_fds / sizeof self->keep_fds[0])
        return -1;
    self->keep_fds[self->keep_fd_count++] = fd;
    return 0;
}

void
confine_policy_destroy (confine_policy_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    confine_policy_t *self = *self_p;
    free (self->workspace);
    free (self->run_dir);
    free (self->hostname);
    for (size_t i = 0; i < self->env_count; i++)
        free (self->env[i]);
    free (self->env);
    free (self);
    *self_p = NULL;
}

static int
fail (char *err, size_t errlen, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    vsnprintf (err, errlen, fmt, args);
    va_end (args);
    return -1;
}

/* A non-negative integer that fits in 64 bits; JSON numbers may be reals
   (1e9) as long as they are whole. */
static int
get_u64 (const char *key, const json_t *value, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
    if (json_is_integer (value)) {
        json_int_t v = json_integer_value (value);
        if (v < 0 || (uint64_t) v > max)
            return fail (err, errlen, "policy field \"%s\": %lld out of range 0..%llu", key,
                         (long long) v, (unsigned long long) max);
        *out = (uint64_t) v;
        return 0;
    }
    if (json_is_real (value)) {
        double v = json_real_value (value);
        if (v < 0 || v != floor (v) || v > (double) max)
            return fail (err, errlen, "policy field \"%s\": %g is not a whole number in 0..%llu",
                         key, v, (unsigned long long) max);
        *out = (uint64_t) v;
        return 0;
    }
    return fail (err, errlen, "policy field \"%s\" must be a number", key);
}

/* The one word that lifts a limit: a number never does (0 is refused). */
static bool
is_unlimited (const json_t *value)
{
    return json_is_string (value) && strcmp (json_string_value (value), "unlimited") == 0
        && json_string_length (value) == strlen ("unlimited");
}

static int
get_string (const char *key, const json_t *value, bool nullable, char **out, char *err, size_t errlen)
{
    if (nullable && json_is_null (value)) {
        free (*out);
        *out = NULL;
        return 0;
    }
    if (!json_is_string (value) || json_string_length (value) == 0)
        return fail (err, errlen, "policy field \"%s\" must be a non-empty string", key);
    if (strlen (json_string_value (value)) != json_string_length (value))
        return fail (err, errlen, "policy field \"%s\" contains a NUL byte", key);
    free (*out);
    *out = confine_xstrdup (json_string_value (value));
    return 0;
}

static int
load_rlimits (confine_policy_t *self, const json_t *obj, char *err, size_t errlen)
{
    if (!json_is_object (obj))
        return fail (err, errlen, "policy field \"rlimits\" must be an object");
    static const struct { const char *name; size_t offset; } fields[] = {
        { "nofile", offsetof (confine_policy_t, rlimit_nofile) },
        { "fsize", offsetof (confine_policy_t, rlimit_fsize) },
        { "nproc", offsetof (confine_policy_t, rlimit_nproc) },
        { "stack", offsetof (confine_policy_t, rlimit_stack) },
        { "data", offsetof (confine_policy_t, rlimit_data) },
        { "core", offsetof (confine_policy_t, rlimit_core) },
        { "cpu", offsetof (confine_policy_t, rlimit_cpu) },
    };
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) obj, key, value) {
        size_t i;
        for (i = 0; i < sizeof fields / sizeof fields[0]; i++)
            if (strcmp (key, fields[i].name) == 0)
                break;
        if (i == sizeof fields / sizeof fields[0])
            return fail (err, errlen, "policy field \"rlimits\": unknown limit \"%s\"", key);
        char name[48];
        snprintf (name, sizeof name, "rlimits.%s", key);
        uint64_t *slot = (uint64_t *) ((char *) self + fields[i].offset);
        if (get_u64 (name, value, UINT64_MAX, slot, err, errlen) < 0)
            return -1;
    }
    return 0;
}

static int
load_env (confine_policy_t *self, const json_t *obj, char *err, size_t errlen)
{
    if (!json_is_object (obj))
        return fail (err, errlen, "policy field \"env\" must be an object of strings");
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) obj, key, value) {
        if (!*key || strchr (key, '='))
            return fail (err, errlen, "policy field \"env\": bad variable name \"%s\"", key);
        if (!json_is_string (value) || strlen (json_string_value (value)) != json_string_length (value))
            return fail (err, errlen, "policy field \"env\": \"%s\" must be a string without NUL", key);
        confine_policy_setenv (self, key, json_string_value (value));
    }
    return 0;
}

static int
load_allow_degraded (confine_policy_t *self, const json_t *arr, char *err, size_t errlen)
{
    if (!json_is_array (arr))
        return fail (err, errlen, "policy field \"allow_degraded\" must be an array of layer names");
    unsigned mask = 0;
    size_t i;
    json_t *item;
    json_array_foreach (arr, i, item) {
        int layer = json_is_string (item) ? confine_layer_from_name (json_string_value (item)) : -1;
        if (layer < 0)
            return fail (err, errlen, "policy field \"allow_degraded\": unknown layer at index %zu", i);
        if (!confine_layer_degradable ((confine_layer_t) layer))
            return fail (err, errlen, "policy field \"allow_degraded\": layer \"%s\" is never optional",
                         json_string_value (item));
        mask |= 1u << layer;
    }
    self->allow_degraded = mask;
    return 0;
}

static int
load_field (confine_policy_t *self, const char *key, const json_t *value, char *err, size_t errlen)
{
    uint64_t v;
    if (strcmp (key, "workspace") == 0)
        return get_string (key, value, true, &self->workspace, err, errlen);
    if (strcmp (key, "run_dir") == 0)
        return get_string (key, value, true, &self->run_dir, err, errlen);
    if (strcmp (key, "workspace_guard") == 0) {
        if (!json_is_boolean (value))
            return fail (err, errlen, "policy field \"workspace_guard\" must be true or false");
        self->workspace_guard = json_is_true (value);
        return 0;
    }
    if (strcmp (key, "hostname") == 0) {
        if (get_string (key, value, false, &self->hostname, err, errlen) < 0)
            return -1;
        if (strlen (self->hostname) > 64)
            return fail (err, errlen, "policy field \"hostname\" is longer than 64 bytes");
        return 0;
    }
    if (strcmp (key, "network") == 0) {
        const char *s = json_string_value (value);
        if (s && strcmp (s, "none") == 0)
            self->network = CONFINE_NET_NONE;
        else if (s && strcmp (s, "loopback") == 0)
            self->network = CONFINE_NET_LOOPBACK;
        else
            return fail (err, errlen, "policy field \"network\" must be \"none\" or \"loopback\"");
        return 0;
    }
    if (strcmp (key, "uid") == 0 || strcmp (key, "gid") == 0
        || strcmp (key, "host_uid") == 0 || strcmp (key, "host_gid") == 0) {
        if (get_u64 (key, value, 0xfffffffe, &v, err, errlen) < 0)
            return -1;
        if (v == 0)
            return fail (err, errlen, "policy field \"%s\" must not be 0 (root)", key);
        if (key[0] == 'u')
            self->uid = (uid_t) v;
        else if (key[0] == 'g')
            self->gid = (gid_t) v;
        else if (strcmp (key, "host_uid") == 0)
            self->host_uid = (uid_t) v;
        else
            self->host_gid = (gid_t) v;
        return 0;
    }
    if (strcmp (key, "cpus") == 0) {
        if (is_unlimited (value)) {
            self->cpus = 0;
            return 0;
        }
        if (!json_is_number (value) || json_number_value (value) < 0.01 || json_number_value (value) > 4096)
            return fail (err, errlen, "policy field \"cpus\" must be a number in 0.01..4096, or \"unlimited\"");
        self->cpus = json_number_value (value);
        return 0;
    }
    /* unlimitable: "unlimited" is the only way to lift the limit (stored as
       0, which cgroup.c leaves unwritten); the others size a tmpfs, whose
       size 0 would mean unbounded, so they are never lifted */
    static const struct { const char *name; size_t offset; bool unlimitable; } sizes[] = {
        { "memory_bytes", offsetof (confine_policy_t, memory_bytes), true },
        { "pids", offsetof (confine_policy_t, pids), true },
        { "workspace_bytes", offsetof (confine_policy_t, workspace_bytes), false },
        { "workspace_files", offsetof (confine_policy_t, workspace_files), false },
        { "tmp_bytes", offsetof (confine_policy_t, tmp_bytes), false },
        { "shm_bytes", offsetof (confine_policy_t, shm_bytes), false },
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (strcmp (key, sizes[i].name) != 0)
            continue;
        uint64_t *slot = (uint64_t *) ((char *) self + sizes[i].offset);
        if (sizes[i].unlimitable && is_unlimited (value)) {
            *slot = 0;
            return 0;
        }
        if (get_u64 (key, value, UINT64_MAX / 2, &v, err, errlen) < 0)
            return -1;
        if (v == 0)
            return fail (err, errlen, "policy field \"%s\" must be at least 1%s", key,
                         sizes[i].unlimitable ? " (\"unlimited\" lifts the limit)" : "");
        *slot = v;
        return 0;
    }
    if (strcmp (key, "rlimits") == 0)
        return load_rlimits (self, value, err, errlen);
    if (strcmp (key, "env") == 0)
        return load_env (self, value, err, errlen);
    if (strcmp (key, "allow_degraded") == 0)
        return load_allow_degraded (self, value, err, errlen);
    return fail (err, errlen, "policy: unknown field \"%s\"", key);
}

int
confine_policy_load_json (confine_policy_t *self, const json_t *json, char *err, size_t errlen)
{
    if (!json_is_object (json))
        return fail (err, errlen, "policy must be a JSON object");
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) json, key, value)
        if (load_field (self, key, value, err, errlen) < 0)
            return -1;
    return 0;
}

int
confine_policy_load_file (confine_policy_t *self, const char *path, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *json = json_load_file (path, JSON_REJECT_DUPLICATES, &jerr);
    if (!json)
        return fail (err, errlen, "policy file %s: line %d: %s", path, jerr.line, jerr.text);
    int rc = confine_policy_load_json (self, json, err, errlen);
    json_decref (json);
    return rc;
}
