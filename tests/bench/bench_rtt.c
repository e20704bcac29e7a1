/*  bench_rtt.c - execute round trips over raw ZeroMQ, for the gateway's own
    added latency (tests/bench/README.md).

    bench_rtt [-n N] [-w WARMUP] CONNECTION_FILE
        a kernel or a gateway conversation described by a connection file
    bench_rtt [-n N] [-w WARMUP] --launch KENNEL_LAUNCH
        a kernel it starts itself: KENNEL_LAUNCH --unconfined --python -f F

    Runs `x = 0`, WARMUP untimed and N timed `x = x + 1` (each: send ->
    execute_reply and iopub idle), then prints one JSON line:
    {"n", "p50_us", "p99_us", "mean_us", "min_us", "max_us"}. Exit 1 on any
    failed or late (> 5 s) request.
*/
#include "bench_rtt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    long n, warmup;
    const char *launcher;
    const char *connection_file;
} options_t;

static int
s_usage (void)
{
    fprintf (stderr, "usage: bench_rtt [-n N] [-w WARMUP] CONNECTION_FILE\n"
                     "       bench_rtt [-n N] [-w WARMUP] --launch KENNEL_LAUNCH\n");
    return 2;
}

static int
s_parse (int argc, char **argv, options_t *opt)
{
    *opt = (options_t) {.n = 1000, .warmup = 50};
    for (int i = 1; i < argc; i++) {
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (streq (argv[i], "-n") && next)
            opt->n = strtol (argv[++i], NULL, 10);
        else if (streq (argv[i], "-w") && next)
            opt->warmup = strtol (argv[++i], NULL, 10);
        else if (streq (argv[i], "--launch") && next)
            opt->launcher = argv[++i];
        else if (argv[i][0] != '-' && !opt->connection_file)
            opt->connection_file = argv[i];
        else
            return -1;
    }
    if (opt->n < 1 || opt->warmup < 0 || !opt->launcher == !opt->connection_file)
        return -1;
    return 0;
}

static void
s_report (int64_t *samples, long n)
{
    json_t *stats = rtt_stats (samples, n);
    char *text = json_dumps (stats, JSON_REAL_PRECISION (7));
    printf ("%s\n", text);
    free (text);
    json_decref (stats);
}

/* Warm-up, then n timed round trips into samples. 0 or -1. */
static int
s_measure (rtt_client_t *client, const options_t *opt, int64_t *samples)
{
    if (rtt_client_wait_ready (client, 30000) < 0 || rtt_client_execute (client, "x = 0", 5000) < 0)
        return -1;
    for (long i = 0; i < opt->warmup; i++)
        if (rtt_client_execute (client, "x = x + 1", 5000) < 0)
            return -1;
    for (long i = 0; i < opt->n; i++)
        if ((samples[i] = rtt_client_execute (client, "x = x + 1", 5000)) < 0)
            return -1;
    return 0;
}

int
main (int argc, char **argv)
{
    options_t opt;
    if (s_parse (argc, argv, &opt) < 0)
        return s_usage ();
    zsys_init ();
    zsys_set_linger (0);
    rtt_kernel_t *kernel = opt.launcher ? rtt_kernel_start (opt.launcher) : NULL;
    wire_connection_t *loaded = opt.connection_file ? rtt_connection_load (opt.connection_file) : NULL;
    const wire_connection_t *conn = kernel ? rtt_kernel_connection (kernel) : loaded;
    json_t *info = opt.connection_file ? json_load_file (opt.connection_file, 0, NULL) : NULL;
    rtt_client_t *client = conn ? rtt_client_new (conn, info) : NULL;
    json_decref (info);
    int64_t *samples = calloc ((size_t) opt.n, sizeof *samples);
    int rc = 1;
    if (client && samples && s_measure (client, &opt, samples) == 0) {
        s_report (samples, opt.n);
        rc = 0;
    }
    free (samples);
    rtt_client_destroy (&client);
    rtt_kernel_stop (&kernel);
    wire_connection_destroy (&loaded);
    return rc;
}
