/*  bench_front.c - the HTTP front's own added latency (tests/bench/README.md,
    row H6): the same execute round trip, with the same C code around it,
    over the gateway's ZeroMQ path and over its HTTP front's websocket, on
    one conversation of one gateway, in alternated blocks.

    bench_front [-n N] [-w WARMUP] [-b BLOCK] --http BASE_URL [--token T]
                --kernel KERNEL_ID CONNECTION_FILE

    CONNECTION_FILE is the conversation's (as conversation_open gives it),
    KERNEL_ID its kernel id in GET /api/kernels. Runs `x = 0` on both,
    WARMUP untimed `x = x + 1` on each, then N timed on each, BLOCK at a
    time over ZeroMQ, then BLOCK over the websocket, and so on; before each
    block what the other client's requests published is drained, untimed.
    Prints one JSON line {"zmq": STATS, "websocket": STATS, "block",
    "added_p50_us", "added_p99_us"} (STATS as bench_rtt's). Exit 1 on any
    failed or late (> 5 s) request.
*/
#include "bench_rtt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    long n, warmup, block;
    const char *url, *token, *kernel_id, *connection_file;
} options_t;

#define USAGE                                                                                                          \
    "usage: bench_front [-n N] [-w WARMUP] [-b BLOCK] --http BASE_URL [--token T] --kernel KERNEL_ID CONNECTION_FILE"

static int
s_parse (int argc, char **argv, options_t *opt)
{
    *opt = (options_t) {.n = 1000, .warmup = 100, .block = 50};
    const rtt_option_t table[] = {{"-n", &opt->n, NULL},          {"-w", &opt->warmup, NULL},
                                  {"-b", &opt->block, NULL},      {"--http", NULL, &opt->url},
                                  {"--token", NULL, &opt->token}, {"--kernel", NULL, &opt->kernel_id},
                                  {NULL, NULL, NULL}};
    if (rtt_options_parse (argc, argv, table, &opt->connection_file) < 0)
        return -1;
    return opt->n < 1 || opt->warmup < 0 || opt->block < 1 || !opt->url || !opt->kernel_id || !opt->connection_file
               ? -1
               : 0;
}

/* Both clients of the one conversation. */
typedef struct {
    rtt_client_t *zmq;
    rtt_ws_t *ws;
} clients_t;

/* One round trip over path 0 (ZeroMQ) or 1 (the websocket). */
static int64_t
s_execute (clients_t *c, int path, const char *code)
{
    return path == 0 ? rtt_client_execute (c->zmq, code, 5000) : rtt_ws_execute (c->ws, code, 5000);
}

static void
s_drain (clients_t *c, int path)
{
    if (path == 0)
        rtt_client_drain (c->zmq);
    else
        rtt_ws_drain (c->ws);
}

/* Warm-up on both, then n timed on each in alternated blocks. 0 or -1. */
static int
s_measure (clients_t *c, const options_t *opt, int64_t *samples[2])
{
    if (rtt_client_wait_ready (c->zmq, 30000) < 0 || s_execute (c, 0, "x = 0") < 0 || s_execute (c, 1, "x = 0") < 0)
        return -1;
    for (long i = 0; i < opt->warmup; i++)
        if (s_execute (c, 0, "x = x + 1") < 0 || s_execute (c, 1, "x = x + 1") < 0)
            return -1;
    for (long done = 0; done < opt->n; done += opt->block)
        for (int path = 0; path < 2; path++) {
            s_drain (c, path);
            for (long i = done; i < done + opt->block && i < opt->n; i++)
                if ((samples[path][i] = s_execute (c, path, "x = x + 1")) < 0)
                    return -1;
        }
    return 0;
}

static void
s_report (int64_t *samples[2], const options_t *opt)
{
    json_t *zmq = rtt_stats (samples[0], opt->n);
    json_t *ws = rtt_stats (samples[1], opt->n);
    double p50 = json_real_value (json_object_get (ws, "p50_us")) - json_real_value (json_object_get (zmq, "p50_us"));
    double p99 = json_real_value (json_object_get (ws, "p99_us")) - json_real_value (json_object_get (zmq, "p99_us"));
    rtt_print (json_pack ("{s:o, s:o, s:i, s:f, s:f, s:s}", "zmq", zmq, "websocket", ws, "block",
                          (json_int_t) opt->block, "added_p50_us", p50, "added_p99_us", p99, "protocol",
                          "v1.kernel.websocket.jupyter.org"));
}

int
main (int argc, char **argv)
{
    options_t opt;
    if (s_parse (argc, argv, &opt) < 0)
        return rtt_usage (USAGE);
    clients_t c = {rtt_client_from_file (opt.connection_file), NULL};
    c.ws = c.zmq ? rtt_ws_new (opt.url, opt.token, opt.kernel_id) : NULL;
    int64_t *samples[2] = {calloc ((size_t) opt.n, sizeof (int64_t)), calloc ((size_t) opt.n, sizeof (int64_t))};
    int rc = 1;
    if (c.ws && samples[0] && samples[1] && s_measure (&c, &opt, samples) == 0) {
        s_report (samples, &opt);
        rc = 0;
    }
    free (samples[0]);
    free (samples[1]);
    rtt_ws_destroy (&c.ws);
    rtt_client_destroy (&c.zmq);
    return rc;
}
