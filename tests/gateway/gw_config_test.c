/*  gw_config_test.c - gw_config on its own (make check): the operator's
    config file (gw_config_load) and a request's policy lowered against it
    (gw_policy_lower), with the values that come out and the errors that
    name the field; the bounds of tool calls and host commands and the
    degrade fix a refusal names. tests/fuzz/gw_policy_fuzz.c feeds the same functions
    arbitrary bytes; this states what they must answer to known ones.

    Exit 0 when every check passed; each failure prints one line.
*/
#include "gateway/gw_config.h"
#include "tests/gateway/gw_check.h"

#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB ((int64_t) 1 << 20)

/* The operator's config of most checks: lower defaults than the built-in
   ones, no network above "none", no elapsed-time limit at all. */
#define OPERATOR                                                                                                   \
    "{\"defaults\": {\"memory_bytes\": 268435456, \"execution_timeout\": 30},"                                     \
    " \"maxima\": {\"memory_bytes\": 536870912, \"execution_timeout\": \"unlimited\", \"network\": \"none\"}}"

/* gw_config_load of text written to a temporary file; NULL with *errmsg
   on error, as gw_config_load. */
static gw_config_t *
config_from_text (const char *text, char **errmsg)
{
    char path[] = "/tmp/gw_config_test-XXXXXX";
    int fd = mkstemp (path);
    if (fd < 0) {
        perror ("gw_config_test: mkstemp");
        exit (2);
    }
    size_t len = strlen (text);
    if (write (fd, text, len) != (ssize_t) len) {
        perror ("gw_config_test: write");
        exit (2);
    }
    close (fd);
    gw_config_t *config = gw_config_load (path, errmsg);
    unlink (path);
    return config;
}

/* Whether s (an error message, may be NULL) holds part. */
static bool
holds (const char *s, const char *part)
{
    return s && strstr (s, part);
}

/* Whether config refuses to load, with an error that holds part. */
static bool
config_refused (const char *text, const char *part)
{
    char *errmsg = NULL;
    gw_config_t *config = config_from_text (text, &errmsg);
    bool refused = !config && holds (errmsg, part);
    if (!refused)
        fprintf (stderr, "gw_config_test: %s -> %s\n", text, errmsg ? errmsg : "loaded");
    gw_config_destroy (&config);
    free (errmsg);
    return refused;
}

/* Whether the request (JSON text) is refused by gw_policy_lower with an
   error that holds part, leaving nothing allocated in the output. */
static bool
request_refused (const gw_config_t *config, const char *request_text, const char *part)
{
    json_t *request = json_loads (request_text, JSON_DECODE_ANY, NULL);
    gw_policy_t out;
    char *errmsg = NULL;
    int rc = request ? gw_policy_lower (config, request, &out, &errmsg) : 0;
    bool refused = request && rc < 0 && holds (errmsg, part) && !out.env && !out.imports;
    if (!refused)
        fprintf (stderr, "gw_policy_lower: %s -> %s\n", request_text, errmsg ? errmsg : "accepted");
    if (request && rc == 0)
        gw_policy_clear (&out);
    json_decref (request);
    free (errmsg);
    return refused;
}

/* A policy lowered from request_text (must be accepted). */
static gw_policy_t
lowered (const gw_config_t *config, const char *request_text)
{
    json_t *request = request_text ? json_loads (request_text, 0, NULL) : NULL;
    gw_policy_t out;
    char *errmsg = NULL;
    if (gw_policy_lower (config, request, &out, &errmsg) < 0) {
        fprintf (stderr, "gw_policy_lower: %s refused: %s\n", request_text, errmsg);
        exit (1);
    }
    json_decref (request);
    return out;
}

static void
test_builtin_defaults (void)
{
    char *errmsg = NULL;
    gw_config_t *config = gw_config_load (NULL, &errmsg);
    CHECK (config && !errmsg);
    gw_policy_t p = lowered (config, NULL);
    CHECK (p.memory_bytes == 1024 * MIB && p.pids == 256 && p.execution_timeout == 600);
    CHECK (streq (p.network, "none") && streq (p.builtins, "agent") && !p.imports);
    CHECK (p.env && json_object_size (p.env) == 0);
    gw_policy_clear (&p);
    gw_config_destroy (&config);
}

static void
test_request_within_the_operator_maxima (const gw_config_t *config)
{
    gw_policy_t p = lowered (config, NULL);
    CHECK (p.memory_bytes == 256 * MIB && p.execution_timeout == 30);
    gw_policy_clear (&p);
    /* a request may go up to a maximum (not only down), and past any number
       where the operator set none */
    p = lowered (config, "{\"memory_bytes\": 536870912, \"execution_timeout\": 7200, \"pids\": 7}");
    CHECK (p.memory_bytes == 512 * MIB && p.execution_timeout == 7200 && p.pids == 7);
    gw_policy_clear (&p);
    p = lowered (config, "{\"builtins\": \"none\", \"imports\": {\"deny\": [\"ctypes\", \"os.path\"]},"
                         " \"env\": {\"LANG\": \"C.UTF-8\"}}");
    CHECK (streq (p.builtins, "none") && json_array_size (json_object_get (p.imports, "deny")) == 2);
    CHECK (streq (json_string_value (json_object_get (p.env, "LANG")), "C.UTF-8"));
    gw_policy_clear (&p);
    /* one request's env never reaches the operator's defaults */
    CHECK (json_object_size (config->defaults.env) == 0);
}

static void
test_request_refusals_name_the_field (const gw_config_t *config)
{
    CHECK (request_refused (config, "{\"memory_bytes\": 536870913}", "policy.memory_bytes: 5.36871e+08 exceeds"));
    CHECK (request_refused (config, "{\"network\": \"loopback\"}", "policy.network: \"loopback\" exceeds"));
    CHECK (request_refused (config, "{\"execution_timeout\": \"unlimited\"}", "for the operator's config only"));
    CHECK (request_refused (config, "{\"pids\": 0}", "policy.pids: must be a whole number"));
    CHECK (request_refused (config, "{\"pids\": 0.5}", "policy.pids: must be a whole number"));
    CHECK (request_refused (config, "{\"tool_timeout\": \"60\"}", "policy.tool_timeout: must be a number"));
    CHECK (request_refused (config, "{\"builtins\": \"all\"}", "policy.builtins: must be"));
    CHECK (request_refused (config, "{\"imports\": {\"deny\": [\"os; rm\"]}}", "policy.imports: must be"));
    CHECK (request_refused (config, "{\"env\": {\"A=B\": \"x\"}}", "policy.env.A=B: must be a string"));
    CHECK (request_refused (config, "{\"frobnicate\": 1}", "policy.frobnicate: unknown policy field"));
    CHECK (request_refused (config, "[1]", "policy: must be an object"));
    /* a refusal after a field already applied frees what it had built */
    CHECK (request_refused (config, "{\"env\": {\"A\": \"1\"}, \"pids\": -1}", "policy.pids"));
}

static void
test_config_refusals (void)
{
    CHECK (config_refused ("{\"defaults\": {\"pids\": 2048}}", "defaults.pids is above maxima.pids"));
    CHECK (config_refused ("{\"defaults\": {\"network\": \"loopback\"}, \"maxima\": {\"network\": \"none\"}}",
                           "defaults.network \"loopback\" is above maxima.network \"none\""));
    CHECK (config_refused ("{\"maxima\": {\"workspace_bytes\": \"unlimited\"}}",
                           "config maxima.workspace_bytes: cannot be \"unlimited\""));
    CHECK (config_refused ("{\"defaults\": {\"memory_bytes\": 0}}", "config defaults.memory_bytes: must be"));
    CHECK (config_refused ("{\"max_conversation\": 3}", "unknown key \"max_conversation\""));
    CHECK (config_refused ("[]", "must be a JSON object"));
    CHECK (config_refused ("{\"defaults\": ", "line"));
}

/* The shard every id starts with (gw_id.c): from the config, or from
   KENNEL_SHARD, which wins; anything but 1 to 8 lowercase hex digits is
   refused, naming where it came from. */
static void
test_shard (void)
{
    char *errmsg = NULL;
    unsetenv ("KENNEL_SHARD");
    gw_config_t *config = config_from_text ("{}", &errmsg);
    CHECK (config && streq (config->shard, ""));
    gw_config_destroy (&config);
    config = config_from_text ("{\"shard\": \"0a\"}", &errmsg);
    CHECK (config && streq (config->shard, "0a"));
    gw_config_destroy (&config);
    CHECK (config_refused ("{\"shard\": \"0A\"}", "shard must be 1 to 8 lowercase hex digits"));
    CHECK (config_refused ("{\"shard\": \"123456789\"}", "shard must be"));
    CHECK (config_refused ("{\"shard\": \"\"}", "shard must be"));
    CHECK (config_refused ("{\"shard\": 3}", "shard must be"));
    setenv ("KENNEL_SHARD", "ff", 1);
    config = config_from_text ("{\"shard\": \"0a\"}", &errmsg);
    CHECK (config && streq (config->shard, "ff"));
    gw_config_destroy (&config);
    setenv ("KENNEL_SHARD", "kennel-3", 1);
    CHECK (config_refused ("{}", "environment KENNEL_SHARD: shard must be"));
    unsetenv ("KENNEL_SHARD");
    free (errmsg);
}

/* The bounds of tool calls and host commands: built-in values, the
   file's, refusals naming the key; allow_degraded and the fix it names. */
static void
test_tool_bounds (void)
{
    char *errmsg = NULL;
    gw_config_t *config = config_from_text ("{}", &errmsg);
    CHECK (config && config->max_concurrent_tool_calls == 16 && config->mcp_max_commands == 64);
    CHECK (config && config->mcp_command_memory_bytes == ((int64_t) 1 << 30) && config->mcp_command_pids == 64);
    CHECK (config && !gw_config_allows_degraded (config, "cgroup"));
    gw_config_destroy (&config);
    config = config_from_text ("{\"max_concurrent_tool_calls\": 3, \"mcp\": {\"max_commands\": 2, "
                               "\"command_memory_bytes\": 2097152, \"command_pids\": 5}, "
                               "\"confine\": {\"allow_degraded\": [\"quota\", \"cgroup\"]}}",
                               &errmsg);
    CHECK (config && config->max_concurrent_tool_calls == 3 && config->mcp_max_commands == 2);
    CHECK (config && config->mcp_command_memory_bytes == 2097152 && config->mcp_command_pids == 5);
    CHECK (config && gw_config_allows_degraded (config, "cgroup") && !gw_config_allows_degraded (config, "landlock"));
    gw_config_destroy (&config);
    CHECK (config_refused ("{\"max_concurrent_tool_calls\": 0}", "max_concurrent_tool_calls"));
    CHECK (config_refused ("{\"mcp\": {\"max_commands\": 0}}", "mcp.max_commands must be a whole number"));
    CHECK (config_refused ("{\"mcp\": {\"max_commands\": 1.5}}", "mcp.max_commands"));
    CHECK (config_refused ("{\"mcp\": {\"command_memory_bytes\": 1000}}", "mcp.command_memory_bytes"));
    CHECK (config_refused ("{\"mcp\": {\"command_pids\": \"many\"}}", "mcp.command_pids"));
    CHECK (config_refused ("{\"mcp\": {\"commands\": 1}}", "unknown key \"mcp.commands\""));
    char *fix = gw_config_degrade_fix ("landlock");
    CHECK (holds (fix, "\"confine\": {\"allow_degraded\": [\"landlock\"]}"));
    free (fix);
    free (errmsg);
}

int
main (void)
{
    test_builtin_defaults ();
    test_shard ();
    test_tool_bounds ();
    char *errmsg = NULL;
    gw_config_t *config = config_from_text (OPERATOR, &errmsg);
    CHECK (config && !errmsg);
    if (config) {
        test_request_within_the_operator_maxima (config);
        test_request_refusals_name_the_field (config);
    }
    gw_config_destroy (&config);
    free (errmsg);
    test_config_refusals ();
    if (failures)
        fprintf (stderr, "gw_config_test: %d failed\n", failures);
    return failures ? 1 : 0;
}
