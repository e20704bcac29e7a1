/*  gw_metrics_private.h - what the counters (gw_metrics.c) offer the report
    that reads the core's state around them (gw_metrics_visit.c).
*/
#ifndef GW_METRICS_PRIVATE_H_INCLUDED
#define GW_METRICS_PRIVATE_H_INCLUDED

#include "gw_metrics.h"

/* The index of value in values (n of them, the last "other"): an event
   outside them counts as the last. */
size_t gw_metrics_label (const char **values, size_t n, const char *value);
/* The counters' families, in the report's order. */
void gw_metrics_counters_visit (gw_metric_fn *fn, void *arg);

#endif
