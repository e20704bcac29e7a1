/*  rtt_common.c - what both round-trip clients and both programs share:
    the request a round trip sends, when it is complete, its statistics,
    the command line and the printed result.
*/
#include "bench_rtt.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int64_t
rtt_now_ns (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

json_t *
rtt_execute_content (const char *code)
{
    return json_pack ("{s:s, s:b, s:b, s:{}, s:b, s:b}", "code", code, "silent", 0, "store_history", 1,
                      "user_expressions", "allow_stdin", 0, "stop_on_error", 1);
}

static bool
s_is_child_of (const json_t *parent_header, const char *id)
{
    const char *parent = json_string_value (json_object_get (parent_header, "msg_id"));
    return parent && streq (parent, id);
}

void
rtt_wait_note (rtt_wait_t *w, bool iopub, const json_t *header, const json_t *parent_header, const json_t *content)
{
    const char *type = json_string_value (json_object_get (header, "msg_type"));
    if (!type)
        return;
    if (iopub) {
        w->any_iopub = true;
        const char *state = json_string_value (json_object_get (content, "execution_state"));
        if (streq (type, "status") && state && streq (state, "idle") && s_is_child_of (parent_header, w->id))
            w->idle = true;
    }
    else if (streq (type, w->reply_type) && s_is_child_of (parent_header, w->id)) {
        w->replied = true;
        const char *status = json_string_value (json_object_get (content, "status"));
        w->failed = !status || !streq (status, "ok");
    }
}

static int
s_cmp (const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples. */
static double
s_percentile_us (const int64_t *sorted, long n, double p)
{
    long rank = (long) (p / 100.0 * (double) n + 0.999999);
    if (rank < 1)
        rank = 1;
    return (double) sorted[(rank > n ? n : rank) - 1] / 1000.0;
}

json_t *
rtt_stats (int64_t *samples, long n)
{
    qsort (samples, (size_t) n, sizeof *samples, s_cmp);
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += (double) samples[i];
    return json_pack ("{s:i, s:f, s:f, s:f, s:f, s:f}", "n", (json_int_t) n, "p50_us", s_percentile_us (samples, n, 50),
                      "p99_us", s_percentile_us (samples, n, 99), "mean_us", sum / (double) n / 1000.0, "min_us",
                      (double) samples[0] / 1000.0, "max_us", (double) samples[n - 1] / 1000.0);
}

wire_connection_t *
rtt_connection_load (const char *path)
{
    wire_error_t err;
    char *why = NULL;
    wire_connection_t *conn = wire_connection_load (path, &err, &why);
    if (!conn)
        fprintf (stderr, "%s: %s\n", path, why ? why : wire_strerror (err));
    free (why);
    return conn;
}

static const rtt_option_t *
s_option (const rtt_option_t *table, const char *flag)
{
    for (; table->flag; table++)
        if (streq (table->flag, flag))
            return table;
    return NULL;
}

int
rtt_options_parse (int argc, char **argv, const rtt_option_t *table, const char **positional)
{
    for (int i = 1; i < argc; i++) {
        const rtt_option_t *option = s_option (table, argv[i]);
        if (option && i + 1 < argc) {
            i++;
            if (option->number)
                *option->number = strtol (argv[i], NULL, 10);
            else
                *option->text = argv[i];
        }
        else if (!option && argv[i][0] != '-' && !*positional)
            *positional = argv[i];
        else
            return -1;
    }
    return 0;
}

int
rtt_usage (const char *text)
{
    fprintf (stderr, "%s\n", text);
    return 2;
}

void
rtt_print (json_t *obj)
{
    char *text = json_dumps (obj, JSON_REAL_PRECISION (7));
    printf ("%s\n", text);
    free (text);
    json_decref (obj);
}
