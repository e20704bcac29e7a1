/*  gw_metrics.c - the gateway's counters (gw_metrics.h): events counted
    where they happen, in the core's classes, and their part of the report.
    One gateway per process, one loop: the counters are this file's,
    touched only from the loop. The state the report adds (conversations,
    pool, layers) is gw_metrics_visit.c's, so that the counters depend on
    no class that counts.
*/
#include "gw_metrics.h"
#include "gw_error.h"
#include "gw_metrics_private.h"
#include "gw_util.h"

#include <czmq.h>
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

size_t
gw_metrics_label (const char **values, size_t n, const char *value)
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
    s_m.executions[gw_metrics_label (exec_statuses, N_EXEC, status)]++;
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
    const char *kind = kill_ename && streq (kill_ename, gw_error_name (GW_E_EXECUTION_TIMEOUT)) ? "timeout"
                       : kill_ename                                       ? "gateway"
                       : !cause                                            ? "other"
                       : strncmp (cause, "out of memory", 13) == 0         ? "oom"
                       : strncmp (cause, "killed by signal", 16) == 0      ? "signal"
                       : strncmp (cause, "exit status", 11) == 0           ? "exit"
                                                                           : "other";
    s_m.deaths[gw_metrics_label (death_causes, N_DEATH, kind)]++;
}

void
gw_metrics_tool_call (const char *status)
{
    s_m.tool_calls[gw_metrics_label (tool_statuses, N_TOOL, status)]++;
}

void
gw_metrics_relayed (bool to_kernel, size_t bytes)
{
    s_m.relayed[to_kernel ? 0 : 1] += bytes;
}

/* ---- the counters' part of the report --------------------------------------- */

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
histogram_emit (gw_metric_fn *fn, void *arg, const char *name, const char *help, const gw_sample_t *samples, int n)
{
    gw_metric_t m = {name, help, GW_METRIC_HISTOGRAM, samples, n};
    fn (&m, arg);
}

void
gw_metrics_counters_visit (gw_metric_fn *fn, void *arg)
{
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
}
