/*  bench_rtt.h - the C round-trip clients of the benchmark (tests/bench).

    bench_rtt measures execute round trips (execute_request sent ->
    execute_reply AND iopub idle received) over raw ZeroMQ with libwire, so
    that the gateway's own added latency can be told apart from the Python
    client's: the same client, the same kernel, once through the gateway and
    once straight to a kernel it starts itself. bench_front does the same
    over the gateway's ZeroMQ path and over its HTTP front's websocket,
    alternately, so that the front's own added latency is told apart.
*/
#ifndef BENCH_RTT_H_INCLUDED
#define BENCH_RTT_H_INCLUDED

#include "wire.h"
#include <sys/types.h>

/* What one request waits for: its reply and its iopub idle. */
typedef struct {
    const char *id;         /* the request's msg_id */
    const char *reply_type; /* e.g. "execute_reply" */
    bool replied, idle, failed, any_iopub;
} rtt_wait_t;

/* Folds one received message (decoded parts) into w. */
void rtt_wait_note (rtt_wait_t *w, bool iopub, const json_t *header, const json_t *parent_header,
                    const json_t *content);
/* The execute_request content both clients send. */
json_t *rtt_execute_content (const char *code);

/* One option of a program's command line: its flag and where its value
   goes, a number or a string. A table of them ends with a NULL flag. */
typedef struct {
    const char *flag;
    long *number;
    const char **text;
} rtt_option_t;

/* Reads argv[1..] by table (each flag takes the next argument as its
   value), the one argument that is not a flag into *positional. 0, or -1
   on an unknown flag, a flag without its value, a second positional. */
int rtt_options_parse (int argc, char **argv, const rtt_option_t *table, const char **positional);
/* Prints the usage text on stderr; 2, the exit status of a bad command line. */
int rtt_usage (const char *text);
/* Prints obj as one JSON line (µs with 7 significant digits); takes it. */
void rtt_print (json_t *obj);

/* Summary of n round trips in ns (sorted in place) as one JSON object:
   {"n", "p50_us", "p99_us", "mean_us", "min_us", "max_us"}. */
json_t *rtt_stats (int64_t *samples, long n);
/* A connection file, or NULL with a message on stderr. */
wire_connection_t *rtt_connection_load (const char *path);
/* Monotonic time in ns. */
int64_t rtt_now_ns (void);

/* A client of one kernel's shell and iopub channels. */
typedef struct rtt_client rtt_client_t;

/* Connects to the shell (DEALER) and iopub (SUB, subscribed before
   connect) endpoints of conn; with the CURVE keys of info (the connection
   file's JSON, may be NULL) when it has them. NULL with a message on
   stderr on failure. */
rtt_client_t *rtt_client_new (const wire_connection_t *conn, const json_t *info);
/* The same for the connection file at path (its CURVE keys too). */
rtt_client_t *rtt_client_from_file (const char *path);
void rtt_client_destroy (rtt_client_t **self_p);
/* Sends kernel_info_request until one is answered AND something arrived on
   iopub (the SUB subscription is live), within timeout_ms. 0 or -1. */
int rtt_client_wait_ready (rtt_client_t *self, int timeout_ms);
/* Runs code once and waits for its execute_reply and its iopub idle.
   Returns the round trip in nanoseconds, or -1 (timeout, error reply). */
int64_t rtt_client_execute (rtt_client_t *self, const char *code, int timeout_ms);

/* Receives and drops what is already waiting (e.g. iopub of the other
   client's requests on the same kernel). */
void rtt_client_drain (rtt_client_t *self);

/* A websocket client of one kernel of the HTTP front
   (/api/kernels/ID/channels), with the v1.kernel.websocket.jupyter.org
   binary subprotocol; libwebsockets' own poll loop. */
typedef struct rtt_ws rtt_ws_t;

/* Connects to base_url (http://IP:PORT) with the token (may be NULL).
   NULL with a message on stderr. */
rtt_ws_t *rtt_ws_new (const char *base_url, const char *token, const char *kernel_id);
void rtt_ws_destroy (rtt_ws_t **self_p);
/* As rtt_client_execute, over the websocket. */
int64_t rtt_ws_execute (rtt_ws_t *self, const char *code, int timeout_ms);
/* Receives and drops what is already waiting. */
void rtt_ws_drain (rtt_ws_t *self);

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
