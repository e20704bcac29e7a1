/*  bench_sanitize.c - what the relay's cleaning of kernel outputs
    (gateway/gw_sanitize.c) costs per message, on the messages a notebook
    sends most: a stream line, a pandas table (tests/fixtures/pandas_table.html,
    10 rows), a PNG plot (60 KB of base64), matplotlib's SVG
    (tests/fixtures/matplotlib.svg). Prints the median and p99 of the time
    gw_sanitize_msg takes, in µs. `make bench-sanitize`, on a build without
    sanitizers: gateway/README.md, "Relay", has the numbers.
*/
#include "gateway/gw_peek.h"
#include "gateway/gw_sanitize.h"
#include "wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 2000

static char *
fixture (const char *name)
{
    const char *src = getenv ("KENNEL_SRCDIR");
    char path[4096];
    snprintf (path, sizeof path, "%s/tests/fixtures/%s", src ? src : ".", name);
    FILE *f = fopen (path, "rb");
    if (!f) {
        perror (path);
        exit (2);
    }
    char *data = wire_xmalloc (1 << 20);
    size_t n = fread (data, 1, (1 << 20) - 1, f);
    data[n] = 0;
    fclose (f);
    return data;
}

static zmsg_t *
message (const char *msg_type, const char *content)
{
    zmsg_t *msg = zmsg_new ();
    zmsg_addstr (msg, "token");
    zmsg_addstr (msg, WIRE_DELIMITER);
    zmsg_addstr (msg, "");
    char header[256];
    snprintf (header, sizeof header,
              "{\"msg_id\":\"6f1c\",\"msg_type\":\"%s\",\"session\":\"a1\",\"username\":\"kernel\",\"version\":\"5.3\","
              "\"date\":\"2026-12-01T00:00:00.000000Z\"}",
              msg_type);
    zmsg_addstr (msg, header);
    zmsg_addstr (msg, "{\"msg_id\":\"41\",\"msg_type\":\"execute_request\"}");
    zmsg_addstr (msg, "{}");
    zmsg_addstr (msg, content);
    return msg;
}

static int
cmp (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static void
measure (const char *what, const char *msg_type, const char *content)
{
    static double us[RUNS];
    gw_sanitize_t *s = gw_sanitize_new ();
    gw_sanitize_result_t result = GW_SANITIZE_KEPT;
    for (int i = 0; i < RUNS; i++) {
        zmsg_t *msg = message (msg_type, content);
        gw_sanitize_removed_t removed;
        struct timespec t0, t1;
        clock_gettime (CLOCK_MONOTONIC, &t0);
        result = gw_sanitize_msg (s, msg, &removed);
        clock_gettime (CLOCK_MONOTONIC, &t1);
        us[i] = (double) (t1.tv_sec - t0.tv_sec) * 1e6 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e3;
        zmsg_destroy (&msg);
    }
    qsort (us, RUNS, sizeof *us, cmp);
    printf ("%-34s %8zu bytes  %-8s median %9.2f us  p99 %9.2f us\n", what, strlen (content),
            result == GW_SANITIZE_KEPT ? "kept" : result == GW_SANITIZE_CLEANED ? "cleaned" : "dropped",
            us[RUNS / 2], us[RUNS * 99 / 100]);
    gw_sanitize_destroy (&s);
}

static char *
bundle (const char *mime, const char *text)
{
    json_t *content = json_pack ("{s:{s:s, s:s}, s:{}, s:{}}", "data", mime, text, "text/plain", "<Figure>",
                                 "metadata", "transient");
    char *out = json_dumps (content, JSON_COMPACT);
    json_decref (content);
    return out;
}

int
main (void)
{
    wire_alloc_json ();
    measure ("stream line", "stream", "{\"name\":\"stdout\",\"text\":\"rows 5 total 14\\n\"}");
    measure ("status", "status", "{\"execution_state\":\"idle\"}");
    measure ("execute_reply", "execute_reply",
             "{\"status\":\"ok\",\"execution_count\":3,\"payload\":[],\"user_expressions\":{}}");
    char *html = fixture ("pandas_table.html"), *svg = fixture ("matplotlib.svg");
    char *table = bundle ("text/html", html), *plot = bundle ("image/svg+xml", svg);
    measure ("pandas table, 10 rows (text/html)", "execute_result", table);
    char *png = wire_xmalloc (60001);
    for (int i = 0; i < 60000; i++)
        png[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(i * 7) % 64];
    png[60000] = 0;
    char *image = bundle ("image/png", png);
    measure ("PNG plot, 60 KB (image/png)", "display_data", image);
    measure ("matplotlib SVG (image/svg+xml)", "display_data", plot);
    free (html);
    free (svg);
    free (png);
    free (table);
    free (plot);
    free (image);
    return 0;
}
