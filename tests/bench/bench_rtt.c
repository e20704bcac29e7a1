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

#define USAGE                                                                                                          \
    "usage: bench_rtt [-n N] [-w WARMUP] CONNECTION_FILE\n"                                                            \
    "       bench_rtt [-n N] [-w WARMUP] --launch KENNEL_LAUNCH"

static int
s_parse (int argc, char **argv, options_t *opt)
{
    *opt = (options_t) {.n = 1000, .warmup = 50};
    const rtt_option_t table[] = {
        {"-n", &opt->n, NULL}, {"-w", &opt->warmup, NULL}, {"--launch", NULL, &opt->launcher}, {NULL, NULL, NULL}};
    if (rtt_options_parse (argc, argv, table, &opt->connection_file) < 0)
        return -1;
    return opt->n < 1 || opt->warmup < 0 || !opt->launcher == !opt->connection_file ? -1 : 0;
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
        return rtt_usage (USAGE);
    rtt_kernel_t *kernel = opt.launcher ? rtt_kernel_start (opt.launcher) : NULL;
    rtt_client_t *client = kernel           ? rtt_client_new (rtt_kernel_connection (kernel), NULL)
                           : opt.launcher ? NULL
                                          : rtt_client_from_file (opt.connection_file);
    int64_t *samples = calloc ((size_t) opt.n, sizeof *samples);
    int rc = 1;
    if (client && samples && s_measure (client, &opt, samples) == 0) {
        rtt_print (rtt_stats (samples, opt.n));
        rc = 0;
    }
    free (samples);
    rtt_client_destroy (&client);
    rtt_kernel_stop (&kernel);
    return rc;
}
