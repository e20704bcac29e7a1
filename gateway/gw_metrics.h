/*  gw_metrics.h - the gateway's counters, for a front to render (the HTTP
    front's GET /metrics, Prometheus' text format: gateway/http/http_ops.c).

    The core counts events where they happen (kernel starts, executions,
    timeouts, kernel deaths, tool calls, bytes relayed) and reads its state
    (conversations, warm pool, layers, capacity) when asked. Every label
    takes its values from a fixed set, never an id: a series per
    conversation would grow without bound.
*/
#ifndef GW_METRICS_H_INCLUDED
#define GW_METRICS_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gw_server gw_server_t; /* gw_server_access.h */

/* The upper bounds (seconds) of every histogram's buckets, then +Inf. */
#define GW_METRICS_BUCKETS 14
extern const double gw_metrics_bounds[GW_METRICS_BUCKETS];

typedef struct {
    uint64_t counts[GW_METRICS_BUCKETS + 1]; /* per bucket, not cumulative; the last is +Inf */
    double sum;
    uint64_t count;
} gw_histogram_t;

typedef enum { GW_METRIC_COUNTER, GW_METRIC_GAUGE, GW_METRIC_HISTOGRAM } gw_metric_kind_t;

/* One series: its label (NULL: none) and its value or histogram. */
typedef struct {
    const char *label;
    const char *value;
    double number;
    const gw_histogram_t *histogram;
} gw_sample_t;

/* One metric family: a name in base units (_seconds, _bytes; counters end
   in _total), its help text, its series. */
typedef struct {
    const char *name;
    const char *help;
    gw_metric_kind_t kind;
    const gw_sample_t *samples;
    int count;
} gw_metric_t;

typedef void (gw_metric_fn) (const gw_metric_t *metric, void *arg);
/* Calls fn for every family, in a fixed order. */
void gw_metrics_visit (gw_server_t *server, gw_metric_fn *fn, void *arg);

/* ---- the events ---------------------------------------------------------- */

/* A kernel answered: warm (claimed from the pool) or cold, seconds from its
   launch (or claim). */
void gw_metrics_kernel_started (bool warm, double seconds);
/* An execution ended with an execute_reply status ("ok", "error",
   "aborted"), or was answered by the gateway ("cut": never ran or was cut
   off); seconds it ran (< 0: it never started). */
void gw_metrics_execution (const char *status, double seconds);
/* An execution passed its execution_timeout. */
void gw_metrics_timeout (void);
/* A kernel died: the gateway's own kill (ename, or NULL) and the launch's
   cause ("out of memory ...", "killed by signal ...", "exit status ..."). */
void gw_metrics_kernel_died (const char *kill_ename, const char *cause);
/* A tool call ended: "ok", "error", "timeout", "refused", ... */
void gw_metrics_tool_call (const char *status);
/* Bytes of a message relayed to the kernel (true) or from it. */
void gw_metrics_relayed (bool to_kernel, size_t bytes);

#endif
