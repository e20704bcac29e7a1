/*  mcp_main.c - `kennel mcp`: options, the loop, the end.

    kennel mcp [--connection-file F] [--config F] [--tools F]
               [--tools-from-mcp CMD] [--log-file F] [--max-message-bytes N]
               [--progress-interval S]

    stdout carries protocol messages only; every log line goes to stderr
    (or --log-file), the embedded gateway's too.
*/
#include "mcp.h"

#include <getopt.h>
#include <signal.h>
#include <stdlib.h>

#define MCP_LINE_DEFAULT (8 * 1024 * 1024)

static void
s_usage (FILE *out)
{
    fprintf (out, "usage: kennel mcp [--connection-file F] [--config F] [--tools F] [--tools-from-mcp CMD]\n"
                  "                  [--log-file F] [--max-message-bytes N] [--progress-interval S]\n");
}

static int
s_parse (int argc, char **argv, mcp_opts_t *o, const char **log_file)
{
    static const struct option longopts[]
        = {{"connection-file", required_argument, NULL, 'c'}, {"config", required_argument, NULL, 'C'},
           {"tools", required_argument, NULL, 'T'},           {"tools-from-mcp", required_argument, NULL, 'M'},
           {"log-file", required_argument, NULL, 'l'},        {"max-message-bytes", required_argument, NULL, 'm'},
           {"progress-interval", required_argument, NULL, 'p'}, {"help", no_argument, NULL, 'h'},
           {NULL, 0, NULL, 0}};
    int c;
    char *end;
    optind = 1;
    while ((c = getopt_long (argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': o->connection_file = optarg; break;
        case 'C': o->config = optarg; break;
        case 'T': o->tools_file = optarg; break;
        case 'M': o->tools_from_mcp = optarg; break;
        case 'l': *log_file = optarg; break;
        case 'm':
            o->max_line_bytes = strtoull (optarg, &end, 10);
            if (*end || o->max_line_bytes < 1024) {
                fprintf (stderr, "kennel mcp: --max-message-bytes must be a number of bytes, at least 1024\n");
                return -1;
            }
            break;
        case 'p':
            o->progress_interval = strtod (optarg, &end);
            if (*end || !(o->progress_interval >= 0.01)) {
                fprintf (stderr, "kennel mcp: --progress-interval must be seconds, at least 0.01\n");
                return -1;
            }
            break;
        case 'h': s_usage (stdout); exit (0);
        default: s_usage (stderr); return -1;
        }
    }
    if (optind < argc) {
        fprintf (stderr, "kennel mcp: unexpected argument %s\n", argv[optind]);
        return -1;
    }
    return 0;
}

typedef struct {
    mcp_server_t *server;
    mcp_stdio_t *stdio;
} front_t;

static int
s_on_check (zloop_t *loop, int timer_id, void *arg)
{
    front_t *f = arg;
    return mcp_server_closing (f->server) || mcp_stdio_closed (f->stdio) ? -1 : 0;
}

int
mcp_main (int argc, char **argv)
{
    mcp_opts_t opts = {.max_line_bytes = MCP_LINE_DEFAULT, .progress_interval = 1.0};
    const char *log_file = NULL;
    if (s_parse (argc, argv, &opts, &log_file) < 0)
        return 2;
    /* a client or a tool command that goes away must not kill the front */
    signal (SIGPIPE, SIG_IGN);
    zsys_init ();
    zsys_set_logstream (NULL);
    if (gw_log_open (log_file) < 0) {
        fprintf (stderr, "kennel mcp: cannot open the log file %s\n", log_file);
        return 2;
    }
    zloop_t *loop = zloop_new ();
    gw_timers_t *timers = gw_timers_new (loop);
    char *errmsg = NULL;
    mcp_server_t *server = mcp_server_new (loop, &opts, &errmsg);
    if (!server) {
        fprintf (stderr, "kennel mcp: %s\n", errmsg ?: "cannot start");
        free (errmsg);
        gw_timers_destroy (&timers);
        zloop_destroy (&loop);
        return 2;
    }
    front_t front = {server, mcp_stdio_new (loop, server, opts.max_line_bytes)};
    gw_timer_start (loop, 20, 0, s_on_check, &front);
    zloop_start (loop);
    int rc = mcp_server_exit_code (server);
    mcp_stdio_destroy (&front.stdio);
    mcp_server_destroy (&server);
    gw_timers_destroy (&timers);
    zloop_destroy (&loop);
    gw_log ("mcp_stopped", "{s:i}", "exit_code", rc);
    gw_log_close ();
    return rc;
}
