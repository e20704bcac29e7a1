/*  bench_rtt.h - the C round-trip client of the benchmark (tests/bench).

    bench_rtt measures execute round trips (execute_request sent ->
    execute_reply AND iopub idle received) over raw ZeroMQ with libwire, so
    that the gateway's own added latency can be told apart from the Python
    client's: the same client, the same kernel, once through the gateway and
    once straight to a kernel it starts itself.
*/
#ifndef BENCH_RTT_H_INCLUDED
#define BENCH_RTT_H_INCLUDED

#include "wire.h"
#include <sys/types.h>

/* A client of one kernel's shell and iopub channels. */
typedef struct rtt_client rtt_client_t;

/* Connects to the shell (DEALER) and iopub (SUB, subscribed before
   connect) endpoints of conn; with the CURVE keys of info (the connection
   file's JSON, may be NULL) when it has them. NULL with a message on
   stderr on failure. */
rtt_client_t *rtt_client_new (const wire_connection_t *conn, const json_t *info);
void rtt_client_destroy (rtt_client_t **self_p);
/* Sends kernel_info_request until one is answered AND something arrived on
   iopub (the SUB subscription is live), within timeout_ms. 0 or -1. */
int rtt_client_wait_ready (rtt_client_t *self, int timeout_ms);
/* Runs code once and waits for its execute_reply and its iopub idle.
   Returns the round trip in nanoseconds, or -1 (timeout, error reply). */
int64_t rtt_client_execute (rtt_client_t *self, const char *code, int timeout_ms);

/* A kernel started by bench_rtt itself: kennel-launch --unconfined --python
   -f FILE, with a tcp connection file on free loopback ports. */
typedef struct rtt_kernel rtt_kernel_t;

/* Writes the connection file in a fresh temporary directory and starts the
   launcher. NULL with a message on stderr on failure. */
rtt_kernel_t *rtt_kernel_start (const char *launcher);
const wire_connection_t *rtt_kernel_connection (rtt_kernel_t *self);
/* SIGTERM, then SIGKILL after 5 s; reaps it and removes the directory. */
void rtt_kernel_stop (rtt_kernel_t **self_p);

#endif
