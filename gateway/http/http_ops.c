/*  http_ops.c - what an operator's tools ask the HTTP front: GET /healthz
    (liveness) and GET /metrics (Prometheus). Readiness is GET
    /api/kernelspecs (http_api.c): 200 only while kernels can start.
*/
#include "http.h"
#include "gateway/gw_metrics.h"
#include "gateway/gw_ops.h"

#include <string.h>

int
http_ops_healthz (struct lws *wsi, http_req_t *req)
{
    if (req->method != LWSHUMETH_GET)
        return http_reply_error (wsi, req, 405, "GET only");
    return http_reply_write (wsi, req, 200,
                             json_pack ("{s:s, s:b}", "status", "ok", "draining", gw_drain_active (req->front->server)),
                             NULL);
}

/* ---- Prometheus' text format 0.0.4 ------------------------------------------
   # HELP and # TYPE once per family, then its series; label values come
   from the core's fixed sets (no quote, backslash or newline to escape),
   except layer names, escaped anyway. */

static void
label_write (FILE *out, const char *label, const char *value, const char *more)
{
    if (!label && !more)
        return;
    fputc ('{', out);
    if (label) {
        fprintf (out, "%s=\"", label);
        for (const char *c = value; *c; c++)
            if (*c == '\\' || *c == '"')
                fprintf (out, "\\%c", *c);
            else if (*c == '\n')
                fputs ("\\n", out);
            else
                fputc (*c, out);
        fputc ('"', out);
    }
    if (more)
        fprintf (out, "%s%s", label ? "," : "", more);
    fputc ('}', out);
}

static void
histogram_write (FILE *out, const char *name, const gw_sample_t *s)
{
    uint64_t cumulative = 0;
    for (int b = 0; b <= GW_METRICS_BUCKETS; b++) {
        cumulative += s->histogram->counts[b];
        char le[40];
        if (b < GW_METRICS_BUCKETS)
            snprintf (le, sizeof le, "le=\"%g\"", gw_metrics_bounds[b]);
        else
            snprintf (le, sizeof le, "le=\"+Inf\"");
        fprintf (out, "%s_bucket", name);
        label_write (out, s->label, s->value, le);
        fprintf (out, " %llu\n", (unsigned long long) cumulative);
    }
    fprintf (out, "%s_sum", name);
    label_write (out, s->label, s->value, NULL);
    fprintf (out, " %.17g\n%s_count", s->histogram->sum, name);
    label_write (out, s->label, s->value, NULL);
    fprintf (out, " %llu\n", (unsigned long long) s->histogram->count);
}

static void
metric_write (const gw_metric_t *m, void *arg)
{
    FILE *out = arg;
    static const char *types[] = {"counter", "gauge", "histogram"};
    fprintf (out, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, types[m->kind]);
    for (int i = 0; i < m->count; i++) {
        const gw_sample_t *s = &m->samples[i];
        if (m->kind == GW_METRIC_HISTOGRAM) {
            histogram_write (out, m->name, s);
            continue;
        }
        fputs (m->name, out);
        label_write (out, s->label, s->value, NULL);
        fprintf (out, " %.17g\n", s->number);
    }
}

int
http_ops_metrics (struct lws *wsi, http_req_t *req)
{
    if (req->method != LWSHUMETH_GET)
        return http_reply_error (wsi, req, 405, "GET only");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream (&text, &len);
    if (!out)
        return http_reply_error (wsi, req, 500, "cannot render the metrics");
    gw_metrics_visit (req->front->server, metric_write, out);
    fclose (out);
    int rc = http_reply_text (wsi, req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
    free (text);
    return rc;
}
