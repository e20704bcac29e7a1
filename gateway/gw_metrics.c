/*  gw_metrics.c - the gateway's counters and the state it reports
    (gw_metrics.h). One gateway per process, one loop: the counters are
    this file's, touched only from the loop.
*/
#include "gw_metrics.h"
#include "gw_capacity.h"
#include "gw_conv.h"
#include "gw_core.h"
#include "gw_ops.h"
#include "gw_pool.h"
#include "gw_server.h"
#include "gw_util.h"

#include <string.h>

const double gw_metrics_bounds[GW_METRICS_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                      1,     2.5,  5,     10,   30,  60,   300};

/* The values a label may take; an event outside them counts as "other". */
static const char *exec_statuses[] = {"ok", "error", "aborted", "cut", "other"};
static const char *death_causes[] = {"oom", "timeout", "signal", "exit", "gateway", "other"};
static const char *tool_statuses[] = {"ok", "error", "timeout", "refused", "abandoned", "kernel_ended", "closed",
                                      "other"};
#define N_EXEC (sizeof exec_statuses / sizeof *exec_statuses)
#define N_DEATH (sizeof death_causes / sizeof *death_causes)
#define N_TOOL (sizeof tool_statuses / sizeof *tool_statuses)

static struct {
    gw_histogram_t starts[2]; /* cold, warm */
    gw_histogram_t execution_seconds;
    uint64_t executions[N_EXEC];
    uint64_t timeouts;
    uint64_t deaths[N_DEATH];
    uint64_t tool_calls[N_TOOL];
    uint64_t relayed[2]; /* to the kernel, from it */
} s_m;

static size_t
label_index (const char **values, size_t n, const char *value)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (value && streq (values[i], value))
            return i;
    return n - 1;
}

static void
histogram_add (gw_histogram_t *h, double seconds)
{
    size_t b = 0;
    while (b < GW_METRICS_BUCKETS && seconds > gw_metrics_bounds[b])
        b++;
    h->counts[b]++;
    h->sum += seconds;
    h->count++;
}

void
gw_metrics_kernel_started (bool warm, double seconds)
{
    histogram_add (&s_m.starts[warm], seconds);
}

void
gw_metrics_execution (const char *status, double seconds)
{
    s_m.executions[label_index (exec_statuses, N_EXEC, status)]++;
    if (seconds >= 0)
        histogram_add (&s_m.execution_seconds, seconds);
}

void
gw_metrics_timeout (void)
{
    s_m.timeouts++;
}

void
gw_metrics_kernel_died (const char *kill_ename, const char *cause)
{
    const char *kind = kill_ename && streq (kill_ename, "ExecutionTimeout") ? "timeout"
                       : kill_ename                                       ? "gateway"
                       : !cause                                            ? "other"
                       : strncmp (cause, "out of memory", 13) == 0         ? "oom"
                       : strncmp (cause, "killed by signal", 16) == 0      ? "signal"
                       : strncmp (cause, "exit status", 11) == 0           ? "exit"
                                                                           : "other";
    s_m.deaths[label_index (death_causes, N_DEATH, kind)]++;
}

void
gw_metrics_tool_call (const char *status)
{
    s_m.tool_calls[label_index (tool_statuses, N_TOOL, status)]++;
}

void
gw_metrics_relayed (bool to_kernel, size_t bytes)
{
    s_m.relayed[to_kernel ? 0 : 1] += bytes;
}

/* ---- the families --------------------------------------------------------- */

static void
counters_emit (gw_metric_fn *fn, void *arg, const char *name, const char *help, const char *label,
               const char **values, const uint64_t *counts, size_t n)
{
    gw_sample_t samples[16]; /* the longest label set has 8 values */
    n = n < 16 ? n : 16;
    for (size_t i = 0; i < n; i++)
        samples[i] = (gw_sample_t){label, values[i], (double) counts[i], NULL};
    gw_metric_t m = {name, help, GW_METRIC_COUNTER, samples, (int) n};
    fn (&m, arg);
}

static void
gauge_emit (gw_metric_fn *fn, void *arg, const char *name, const char *help, double value)
{
    gw_sample_t sample = {NULL, NULL, value, NULL};
    gw_metric_t m = {name, help, GW_METRIC_GAUGE, &sample, 1};
    fn (&m, arg);
}

static void
conversations_emit (gw_server_t *server, gw_metric_fn *fn, void *arg)
{
    static const char *states[] = {"starting", "idle", "busy", "dead"};
    uint64_t counts[4] = {0};
    zhashx_t *table = gw_server_table (server);
    for (gw_conv_t *conv = zhashx_first (table); conv; conv = zhashx_next (table))
        counts[label_index (states, 4, gw_conv_state (conv))]++;
    gw_sample_t samples[4];
    for (int i = 0; i < 4; i++)
        samples[i] = (gw_sample_t){"state", states[i], (double) counts[i], NULL};
    gw_metric_t m = {"kennel_conversations", "Open conversations by their kernel's state.", GW_METRIC_GAUGE, samples,
                     4};
    fn (&m, arg);
}

static void
pool_emit (gw_server_t *server, gw_metric_fn *fn, void *arg)
{
    gw_pool_t *pool = gw_server_pool (server);
    json_t *info = pool ? gw_pool_info (pool) : NULL;
    gw_sample_t samples[2] = {
        {"state", "ready", (double) json_integer_value (json_object_get (info, "ready")), NULL},
        {"state", "starting", (double) json_integer_value (json_object_get (info, "starting")), NULL}};
    gw_metric_t m = {"kennel_warm_pool_kernels", "Kernels in the warm pool, confined ahead of need.",
                     GW_METRIC_GAUGE, samples, 2};
    fn (&m, arg);
    gauge_emit (fn, arg, "kennel_warm_pool_size", "The warm pool's configured size (warm_pool).",
                (double) json_integer_value (json_object_get (info, "size")));
    json_decref (info);
}

/* One series per layer the last report named (the launcher's fixed
   list), 1 when "active", 0 when degraded or unsupported. */
static void
layers_emit (gw_server_t *server, gw_metric_fn *fn, void *arg)
{
    json_t *layers = gw_server_last_layers (server);
    gw_sample_t samples[32];
    int n = 0;
    const char *name;
    json_t *layer;
    json_object_foreach (layers, name, layer) {
        if (n == 32)
            break;
        const char *state = gw_text (json_object_get (layer, "state"));
        samples[n++] = (gw_sample_t){"layer", name, state && streq (state, "active") ? 1 : 0, NULL};
    }
    gw_metric_t m = {"kennel_confinement_layer_active",
                     "Whether each confinement layer was active in the last report (1) or degraded or unsupported (0).",
                     GW_METRIC_GAUGE, samples, n};
    fn (&m, arg);
}

static void
histogram_emit (gw_metric_fn *fn, void *arg, const char *name, const char *help, const gw_sample_t *samples, int n)
{
    gw_metric_t m = {name, help, GW_METRIC_HISTOGRAM, samples, n};
    fn (&m, arg);
}

void
gw_metrics_visit (gw_server_t *server, gw_metric_fn *fn, void *arg)
{
    conversations_emit (server, fn, arg);
    gw_capacity_t *cap = gw_server_capacity (server);
    int left = cap->conversations - gw_core_count (server);
    gauge_emit (fn, arg, "kennel_capacity_conversations_left",
                "Conversations that may still be opened: the least of max_conversations and what fds and ZeroMQ "
                "sockets allow, less the open ones.",
                left > 0 ? left : 0);
    gauge_emit (fn, arg, "kennel_draining", "1 while the gateway drains after SIGTERM (no new conversation).",
                gw_drain_active (server));
    static const char *kinds[] = {"cold", "warm"};
    uint64_t starts[2] = {s_m.starts[0].count, s_m.starts[1].count};
    counters_emit (fn, arg, "kennel_kernel_starts_total", "Kernels that started and answered, cold or from the pool.",
                   "kind", kinds, starts, 2);
    gw_sample_t start_h[2] = {{"kind", "cold", 0, &s_m.starts[0]}, {"kind", "warm", 0, &s_m.starts[1]}};
    histogram_emit (fn, arg, "kennel_kernel_start_seconds",
                    "Seconds from a kernel's launch (cold) or claim from the pool (warm) to its first answer.",
                    start_h, 2);
    counters_emit (fn, arg, "kennel_executions_total",
                   "Executions ended, by the reply's status (cut: answered by the gateway, never ran or cut off).",
                   "status", exec_statuses, s_m.executions, N_EXEC);
    gw_sample_t exec_h = {NULL, NULL, 0, &s_m.execution_seconds};
    histogram_emit (fn, arg, "kennel_execution_seconds", "Seconds each execution ran, from its start to its reply.",
                    &exec_h, 1);
    counters_emit (fn, arg, "kennel_execution_timeouts_total", "Executions that passed their execution_timeout.",
                   NULL, (const char *[]){NULL}, &s_m.timeouts, 1);
    counters_emit (fn, arg, "kennel_kernel_deaths_total",
                   "Kernels that died, by cause: oom, timeout (killed past interrupt_grace), signal, exit, gateway "
                   "(killed by the gateway for another reason).",
                   "cause", death_causes, s_m.deaths, N_DEATH);
    counters_emit (fn, arg, "kennel_tool_calls_total", "Tool calls ended, by status.", "status", tool_statuses,
                   s_m.tool_calls, N_TOOL);
    static const char *directions[] = {"to_kernel", "from_kernel"};
    counters_emit (fn, arg, "kennel_relayed_bytes_total", "Bytes of messages relayed between clients and kernels.",
                   "direction", directions, s_m.relayed, 2);
    pool_emit (server, fn, arg);
    layers_emit (server, fn, arg);
}
