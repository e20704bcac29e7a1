/*  gw_policy_fuzz.c - libFuzzer target: policy lowering (gateway/gw_config.c).

    Input: an operator config file and a client's request policy, separated
    by the byte 0x1f (no 0x1f: no config file, the whole input is the
    request). The config goes through gw_config_load from a file (operator
    mode: "unlimited" allowed where the field permits it), the request
    through gw_policy_lower as conversation_open's "policy" (decoded as the
    control socket decodes, NUL allowed).
    Checked, trapping otherwise:
    - a loaded config's defaults and maxima hold only values in range (a
      number within the field's bounds, or "unlimited" where permitted) and
      the defaults stay within the maxima;
    - a request that says "unlimited" is refused, even under an unlimited
      maximum;
    - each kernelspec's policy stays within the maxima, and so does the
      request lowered from it;
    - a lowered policy never exceeds the maxima, never has a limit off
      unless the maximum is off too, and its network is "loopback" only
      when the maximum allows it;
    - an error always comes with a message, success never does;
    - lowering is deterministic (twice, equal JSON).
*/
#include "gateway/gw_config.h"
#include "fuzz_check.h"
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* The config file: a memfd, read by path as an operator's file is. */
static gw_config_t *
s_config (const uint8_t *text, size_t size)
{
    static int fd = -1;
    if (fd < 0)
        fd = memfd_create ("kennel-fuzz-config", 0);
    if (fd < 0 || ftruncate (fd, 0) < 0 || pwrite (fd, text, size, 0) != (ssize_t) size)
        __builtin_trap ();
    char path[64];
    snprintf (path, sizeof path, "/proc/self/fd/%d", fd);
    char *errmsg = NULL;
    gw_config_t *config = gw_config_load (path, &errmsg);
    if ((config == NULL) != (errmsg != NULL))
        __builtin_trap ();
    free (errmsg);
    return config;
}

/* Whether the request says "unlimited" anywhere at its top level: only
   the operator's file may. */
static bool
s_asks_unlimited (const json_t *request)
{
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) request, key, value)
        if (json_is_string (value) && strcmp (json_string_value (value), "unlimited") == 0)
            return true;
    return false;
}

static void
s_lower (const gw_config_t *config, const char *kernelspec, const json_t *request, const json_t *maxima)
{
    json_t *first = NULL;
    for (int round = 0; round < 2; round++) {
        gw_policy_t policy;
        char *errmsg = NULL;
        int rc = gw_policy_lower_spec (config, kernelspec, request, &policy, &errmsg);
        if ((rc < 0) != (errmsg != NULL))
            __builtin_trap ();
        free (errmsg);
        json_t *got = rc < 0 ? json_null () : gw_policy_to_json (&policy);
        if (rc == 0) {
            if (s_asks_unlimited (request))
                __builtin_trap ();
            fuzz_check_policy (got, maxima);
            json_decref (gw_confine_policy_json (config, &policy));
            gw_policy_clear (&policy);
        }
        if (round == 0)
            first = got;
        else {
            if (!json_equal (first, got))
                __builtin_trap ();
            json_decref (got);
        }
    }
    json_decref (first);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const uint8_t *sep = memchr (data, 0x1f, size);
    gw_config_t *config = sep ? s_config (data, (size_t) (sep - data)) : gw_config_load (NULL, NULL);
    if (!config)
        return 0;
    const uint8_t *req = sep ? sep + 1 : data;
    size_t req_size = size - (size_t) (req - data);

    json_t *limits = gw_config_limits_json (config);
    json_t *maxima = json_object_get (limits, "maxima");
    fuzz_check_policy (maxima, maxima);
    fuzz_check_policy (json_object_get (limits, "defaults"), maxima);
    const char *name;
    json_t *spec;
    json_object_foreach (json_object_get (limits, "kernelspecs"), name, spec)
        fuzz_check_policy (json_object_get (spec, "policy"), maxima);

    json_t *request = json_loadb ((const char *) req, req_size, JSON_ALLOW_NUL, NULL);
    if (request) {
        s_lower (config, NULL, request, maxima);
        json_object_foreach (json_object_get (limits, "kernelspecs"), name, spec)
            s_lower (config, name, request, maxima);
    }
    json_decref (request);
    json_decref (limits);
    gw_config_destroy (&config);
    return 0;
}
