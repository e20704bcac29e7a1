/*  gw_config.h - the operator's defaults and maxima (gw_config.c): the
    config file, a conversation's policy lowered from them, and the confine
    policy of a launch spec.
*/
#ifndef GW_CONFIG_H_INCLUDED
#define GW_CONFIG_H_INCLUDED

#include "gw_util.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of a limit the operator's config made "unlimited" (a client
   cannot): a consumer tests for it by name, so that 0 or any other value
   that reached it still limits. */
#define GW_UNLIMITED (-1)

/* A kernelspec's name (jupyter's [A-Za-z0-9._-]), at most. */
#define GW_KERNELSPEC_NAME_MAX 64

/* A conversation's effective limits and kernel settings. */
typedef struct {
    double execution_timeout; /* s, elapsed per execution, or GW_UNLIMITED */
    double tool_timeout;      /* s */
    double idle_ttl;          /* s, or GW_UNLIMITED: never culled */
    int64_t memory_bytes;     /* or GW_UNLIMITED */
    int64_t pids;             /* or GW_UNLIMITED */
    int64_t workspace_bytes;
    int64_t workspace_files;
    int64_t output_bytes; /* per execution, or GW_UNLIMITED */
    char network[16];     /* "none" or "loopback" */
    char builtins[16];    /* "agent", "notebook", "none" */
    json_t *imports;      /* {"deny": [...]} or {"allow": [...]} or NULL */
    json_t *env;          /* object name -> string, never NULL once made */
    char kernelspec[GW_KERNELSPEC_NAME_MAX + 1]; /* the config's kernelspec it started from, "" for the defaults */
} gw_policy_t;

typedef struct {
    gw_policy_t defaults;
    gw_policy_t maxima; /* numeric fields only are used */
    int max_conversations;
    int max_parallel_launches; /* kernels confined and started at once */
    int queue_limit;            /* execute requests waiting per conversation */
    double idle_check_interval; /* s */
    double interrupt_grace;     /* s between SIGINT and SIGKILL on timeout */
    double launch_timeout;      /* s to wait for the launcher's status line */
    size_t max_message_bytes;
    int max_tool_calls;      /* tool calls per execution */
    int max_concurrent_tool_calls; /* calls of a conversation waiting for their host at once */
    int warm_pool;           /* pre-started kernels without identity; 0 = none */
    bool log_tool_arguments; /* tool_call log lines carry the arguments */
    /* active_content "allow": kernel outputs reach the peers as sent, script
       included; "sanitize" (false, the default): gw_sanitize.c cleans them */
    bool allow_active_content;
    bool fork_server;        /* fork_server.enabled: one zygote for python kernels */
    json_t *fork_preload;    /* fork_server.preload: module names, array */
    char *launcher;  /* path of kennel-launch */
    json_t *confine; /* extra confine policy fields passed through, object */
    json_t *kernels; /* name -> {"argv": [...]} besides the builtin "python" */
    /* name -> {"display_name", "kernel", "language", "policy"}: a kernel and
       the policy its conversations start from, the operator's per front end
       (the HTTP front lists them; "kernelspec" of conversation_open) */
    json_t *kernelspecs;
    json_t *http;    /* the "http" section, read by the HTTP front (gateway/http), or NULL */
    json_t *mcp;     /* the "mcp" section ({"tools", "tools_from_mcp"}), read by /mcp (gateway/mcp), or NULL */
    /* host tool commands (gateway/mcp/mcp_hosttools.c): at most this many
       at once in this process, each in a cgroup of these limits */
    int mcp_max_commands;
    int64_t mcp_command_memory_bytes;
    int64_t mcp_command_pids;
    char shard[9];   /* "shard" (KENNEL_SHARD wins): leads every kernel and session id, or "" */
    double drain_grace; /* s that running executions get after SIGTERM (gw_drain.c) */
    int refs;        /* the server and each conversation opened under it (gw_conv_config) */
} gw_config_t;

/* The launcher a config without "launcher" runs: kennel-launch beside
   this process's binary (or in the build tree's kernel-launcher/), else
   the name alone, for PATH. Found at the first call and kept: the first
   must come before the process unshares its mount namespace
   (gw_process_setup). */
const char *gw_config_default_launcher (void);

/* Defaults, then the file (NULL = none). NULL with *errmsg (malloc'd) on error. */
GW_MUST_CHECK gw_config_t *gw_config_load (const char *path, char **errmsg);
/* One holder less; freed with the last. */
void gw_config_destroy (gw_config_t **self_p);
/* One holder more: the same config. */
gw_config_t *gw_config_ref (const gw_config_t *self);
/* The operator's defaults lowered by a request's policy object. Returns 0, or
   -1 with *errmsg naming the field (an attempt to raise a limit, a bad type). */
GW_MUST_CHECK int gw_policy_lower (const gw_config_t *config, const json_t *request, gw_policy_t *out, char **errmsg);
/* The same from a kernelspec of the config (NULL: the defaults): its
   policy over the defaults, then the request's, within the maxima. */
GW_MUST_CHECK int gw_policy_lower_spec (const gw_config_t *config, const char *kernelspec, const json_t *request,
                                        gw_policy_t *out, char **errmsg);
/* The config's kernelspec of that name, or NULL. */
const json_t *gw_config_kernelspec (const gw_config_t *config, const char *name);
/* Each kernelspec as it is listed: {"display_name", "kernel", "language",
   "policy": the policy its conversations start from, as
   gw_policy_to_json shows it}. */
json_t *gw_config_kernelspecs_json (const gw_config_t *config);
void gw_policy_clear (gw_policy_t *policy);
void gw_policy_copy (gw_policy_t *dst, const gw_policy_t *src);
json_t *gw_policy_to_json (const gw_policy_t *policy);
/* The confine policy of a kernel's launch spec: the config's confine
   settings with the policy's memory_bytes, pids, workspace_bytes,
   workspace_files, network. */
json_t *gw_confine_policy_json (const gw_config_t *config, const gw_policy_t *policy);
/* Whether the config's confine.allow_degraded names layer ("cgroup",
   "quota", ...): the operator lets it run without that layer. */
bool gw_config_allows_degraded (const gw_config_t *config, const char *layer);
/* The sentence naming the setting that lets layer run degraded, in the
   config's own words (malloc'd): `or let kennel run without it:
   "confine": {"allow_degraded": ["cgroup"]} in its config ...`. For a
   layer confine lets degrade (confine_layer_degradable). */
char *gw_config_degrade_fix (const char *layer);
/* A timer's delay in ms for a finite limit in seconds: at least 1, so that
   no value arms "no timer". */
size_t gw_limit_ms (double seconds);
json_t *gw_config_limits_json (const gw_config_t *config);

#endif
