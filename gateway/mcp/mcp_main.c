/*  mcp_main.c - `kennel mcp`: options, the loop, the end.

    kennel mcp [--connection-file F] [--config F] [--tools F]
               [--tools-from-mcp CMD] [--log-file F] [--max-message-bytes N]
               [--progress-interval S]

    stdout carries protocol messages only; every log line goes to stderr
    (or --log-file), the embedded gateway's too. Without --connection-file
    the gateway runs in this process, on its loop (s_serve_embedded), on a
    private state dir that a reaper removes however the process ends.

    The end: stdin's end, SIGTERM, SIGINT or SIGHUP all mean the client is
    gone (MCP hosts close stdin, then send SIGTERM; a terminal that hangs
    up sends SIGHUP): its running code is interrupted, the embedded
    gateway's conversations are closed, the state dir removed, exit 0.
    What owns what, in the order things end: the stdio transport holds the
    server and forgets its sink first; the server's conversations are
    peers of the embedded gateway's core, which ends last.
*/
#include "mcp.h"
#include "gateway/gw_ops.h"
#include "gateway/gw_process.h"
#include "gateway/gw_reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    gw_server_t *gateway; /* embedded, or NULL */
} front_t;

/* A signal is the client's end, as stdin's end is: the check below then
   ends the loop. */
static void
s_on_signal (int sig, void *arg)
{
    front_t *f = arg;
    gw_log ("mcp_signal", "{s:s}", "signal", strsignal (sig));
    mcp_stdio_end (f->stdio, strsignal (sig));
}

static int
s_on_check (zloop_t *loop, int timer_id, void *arg)
{
    front_t *f = arg;
    if (!mcp_stdio_closed (f->stdio))
        return 0;
    if (!f->gateway)
        return -1;
    gw_server_stop (f->gateway);
    return 0;
}

/* The MCP messages keep the real stdout; fd 1 becomes stderr, so that
   nothing else in this process or its children (the embedded gateway's
   kernels, the tool commands) can write into the protocol. */
static int
s_stdout_private (void)
{
    int out = fcntl (1, F_DUPFD_CLOEXEC, 3);
    if (out < 0 || dup2 (2, 1) < 0)
        return -1;
    return out;
}

/* The front on loop until its client or gateway goes; its exit status. */
static int
s_serve (zloop_t *loop, mcp_opts_t *opts, int out, gw_server_t *gateway)
{
    char *errmsg = NULL;
    mcp_server_t *server = mcp_server_new (loop, opts, &errmsg);
    if (!server) {
        fprintf (stderr, "kennel mcp: %s\n", errmsg ?: "cannot start");
        free (errmsg);
        return 2;
    }
    front_t front = {server, mcp_stdio_new (loop, server, opts->max_line_bytes, out), gateway};
    gw_timer_start (loop, 20, 0, s_on_check, &front);
    gw_signals_t *signals = gw_signals_new (loop, s_on_signal, &front);
    if (gateway) {
        gw_server_leave_signals (gateway);
        gw_server_run (gateway);
    }
    else
        zloop_start (loop);
    gw_signals_destroy (&signals);
    int rc = mcp_server_exit_code (server);
    mcp_stdio_destroy (&front.stdio); /* the sink forgotten, then freed */
    mcp_server_destroy (&server);     /* ends the calls that waited: nothing is sent */
    return rc;
}

/* The config's "mcp" section, as the daemon's /mcp reads it, where the
   command line names no tools of that kind: --tools and --tools-from-mcp
   win. The strings are copied by mcp_server_new. */
static void
s_config_tools (mcp_opts_t *opts, const gw_config_t *config)
{
    const char *tools = gw_text (json_object_get (config->mcp, "tools"));
    const char *from_mcp = gw_text (json_object_get (config->mcp, "tools_from_mcp"));
    if (!opts->tools_file)
        opts->tools_file = tools;
    if (!opts->tools_from_mcp && from_mcp) {
        opts->tools_from_mcp = from_mcp;
        opts->tools_from_mcp_setting = "mcp.tools_from_mcp";
    }
}

/* The embedded gateway's private state dir, with its reaper: made before
   any thread (the reaper is forked) and before the user namespace of an
   unprivileged gateway (gw_process_setup), so that the reaper removes it
   in the host's. NULL, said on stderr, when it cannot be made. */
static char *
s_state_dir (void)
{
    char state[] = "/tmp/kennel-mcp-XXXXXX";
    if (!mkdtemp (state)) {
        fprintf (stderr, "kennel mcp: cannot create a state dir in /tmp: %s\n", strerror (errno));
        return NULL;
    }
    chmod (state, 0711); /* the sandbox's host uid traverses it, as in kernel mode */
    if (gw_reaper_start (state) < 0) {
        fprintf (stderr, "kennel mcp: cannot start the process that removes %s: %s\n", state, strerror (errno));
        rmdir (state);
        return NULL;
    }
    return wire_xstrdup (state);
}

/* A gateway in this process, on the private state dir and the ipc
   transport: no second process to start, no socket between the front and
   the core, and the default conversation's kernel starts at once. */
static int
s_serve_embedded (mcp_opts_t *opts, int out, const char *state)
{
    char *errmsg = NULL;
    gw_config_t *config = gw_config_load (opts->config, &errmsg);
    if (!config) {
        fprintf (stderr, "kennel mcp: %s\n", errmsg);
        free (errmsg);
        return 2;
    }
    gw_server_t *gateway = gw_server_new (&config, state, "127.0.0.1", "ipc", &errmsg);
    gw_config_destroy (&config);
    char *connection_file = wire_xasprintf ("%s/gateway.json", state);
    int rc = 1;
    if (gateway && gw_server_listen (gateway, connection_file, &errmsg) == 0) {
        gw_log ("mcp_gateway_start", "{s:s}", "state_dir", state);
        s_config_tools (opts, gw_server_config (gateway));
        opts->core = gateway;
        opts->own_core = true;
        rc = s_serve (gw_server_loop (gateway), opts, out, gateway);
    }
    else
        fprintf (stderr, "kennel mcp: the gateway: %s\n", errmsg ?: "cannot start");
    free (errmsg);
    free (connection_file);
    gw_server_destroy (&gateway); /* closes the conversations: kernels killed, mounts gone */
    return rc;
}

int
mcp_main (int argc, char **argv)
{
    mcp_opts_t opts = {.max_line_bytes = MCP_LINE_DEFAULT, .progress_interval = 1.0};
    const char *log_file = NULL;
    if (s_parse (argc, argv, &opts, &log_file) < 0)
        return 2;
    gw_signal_block (); /* each of them ends the client's session, read in the loop (s_on_signal) */
    char *state = NULL;
    if (!opts.connection_file && !(state = s_state_dir ()))
        return 1;
    /* a client or a tool command that goes away must not kill the front */
    gw_process_setup (log_file);
    int out = s_stdout_private ();
    if (out < 0) {
        fprintf (stderr, "kennel mcp: cannot set stdout aside: %s\n", strerror (errno));
        free (state);
        return 2;
    }
    int rc;
    if (opts.connection_file) {
        zloop_t *loop = zloop_new ();
        gw_timers_t *timers = gw_timers_new (loop);
        rc = s_serve (loop, &opts, out, NULL);
        gw_timers_destroy (&timers);
        zloop_destroy (&loop);
    }
    else {
        rc = s_serve_embedded (&opts, out, state);
        gw_fs_remove_tree (state); /* now: the reaper does it again after a crash */
        free (state);
    }
    close (out);
    gw_log ("mcp_stopped", "{s:i}", "exit_code", rc);
    gw_log_close ();
    return rc;
}
