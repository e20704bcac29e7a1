/*  fuzz_check.c - invariants shared by the gateway's fuzz targets
    (fuzz_check.h).
*/
#include "fuzz_check.h"
#include <math.h>
#include <stdbool.h>
#include <string.h>

typedef struct {
    const char *name;
    bool seconds;
    bool unlimitable;
} field_t;

/* The policy's numeric limits as gw_policy_to_json names them. */
static const field_t fields[] = {
    {"execution_timeout", true, true}, {"tool_timeout", true, false}, {"idle_ttl", true, true},
    {"memory_bytes", false, true},     {"pids", false, true},         {"workspace_bytes", false, false},
    {"output_bytes", false, true},
};
#define FIELD_COUNT (sizeof fields / sizeof fields[0])

static bool
s_off (const json_t *v)
{
    return json_is_string (v) && strcmp (json_string_value (v), "unlimited") == 0;
}

/* In range: a number within the field's bounds, or "unlimited" where the
   operator may say it. */
static void
s_check_value (const field_t *f, const json_t *v)
{
    if (s_off (v)) {
        if (!f->unlimitable)
            __builtin_trap ();
        return;
    }
    double x = json_number_value (v);
    if (!json_is_number (v) || (f->seconds ? (x < 0.001 || x > 1e9) : (x < 1 || x != floor (x))))
        __builtin_trap ();
}

static bool
s_within (const json_t *v, const json_t *max)
{
    if (s_off (max))
        return true;
    return !s_off (v) && json_number_value (v) <= json_number_value (max);
}

void
fuzz_check_policy (const json_t *policy, const json_t *maxima)
{
    for (size_t i = 0; i < FIELD_COUNT; i++) {
        const json_t *v = json_object_get (policy, fields[i].name);
        s_check_value (&fields[i], v);
        if (!s_within (v, json_object_get (maxima, fields[i].name)))
            __builtin_trap ();
    }
    const char *net = json_string_value (json_object_get (policy, "network"));
    const char *max_net = json_string_value (json_object_get (maxima, "network"));
    if (!net || (strcmp (net, "none") != 0 && strcmp (net, "loopback") != 0))
        __builtin_trap ();
    if (strcmp (net, "loopback") == 0 && strcmp (max_net, "none") == 0)
        __builtin_trap ();
}
