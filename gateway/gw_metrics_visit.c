/*  gw_metrics_visit.c - the metrics report (gw_metrics_visit, gw_metrics.h):
    the state of the core read when asked (conversations by state, room
    left, the drain, the warm pool, the confinement layers) around the
    counters' part (gw_metrics.c). Above the classes it reads; nothing
    below calls it.
*/
#include "gw_metrics.h"
#include "gw_capacity.h"
#include "gw_conv.h"
#include "gw_core.h"
#include "gw_metrics_private.h"
#include "gw_ops.h"
#include "gw_pool.h"
#include "gw_server_access.h"
#include "gw_util.h"

static void
gauge_emit (gw_metric_fn *fn, void *arg, const char *name, const char *help, double value)
{
    gw_sample_t sample = {NULL, NULL, value, NULL};
    gw_metric_t m = {name, help, GW_METRIC_GAUGE, &sample, 1};
    fn (&m, arg);
}

static const char *states[] = {"starting", "idle", "busy", "dead"};

static void
state_count (gw_conv_t *conv, void *counts)
{
    ((uint64_t *) counts)[gw_metrics_label (states, 4, gw_conv_state (conv))]++;
}

static void
conversations_emit (gw_server_t *server, gw_metric_fn *fn, void *arg)
{
    uint64_t counts[4] = {0};
    gw_core_visit (gw_server_core (server), state_count, counts);
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

void
gw_metrics_visit (gw_server_t *server, gw_metric_fn *fn, void *arg)
{
    conversations_emit (server, fn, arg);
    gw_capacity_t *cap = gw_server_capacity (server);
    int left = cap->conversations - gw_core_count (gw_server_core (server));
    gauge_emit (fn, arg, "kennel_capacity_conversations_left",
                "Conversations that may still be opened: the least of max_conversations and what fds and ZeroMQ "
                "sockets allow, less the open ones.",
                left > 0 ? left : 0);
    gauge_emit (fn, arg, "kennel_draining", "1 while the gateway drains after SIGTERM (no new conversation).",
                gw_drain_active (server));
    gw_metrics_counters_visit (fn, arg);
    pool_emit (server, fn, arg);
    layers_emit (server, fn, arg);
}
