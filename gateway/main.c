/*  main.c - `kennel`: the CLI dispatch.

    kennel serve [--connection-file F] [--state-dir D] [--config F]
                 [--ip 127.0.0.1] [--transport ipc|tcp [--insecure-tcp]] [--log-file F]
                 [--http [IP:]PORT]
    kennel kernel -f CONNECTION_FILE [--config F] [--log-file F] [--tools F]
    kennel info [--connection-file F] [--state-dir D]
                 (exit 0 ready, 1 no answer, 2 usage, 3 up but cannot confine)
    kennel selftest [--config F] [--log-file F]
    kennel install-kernelspec [--user | --prefix DIR] [--tools F] [--bin PATH]
    kennel mcp [...]            (an MCP server on stdio: gateway/mcp/)

    The tools of kernelspec mode come from --tools, else from the path in
    KENNEL_TOOLS (which install-kernelspec --tools writes to the spec's env).
*/
#include "gw_capacity.h"
#include "gw_config.h"
#include "gw_conv.h"
#include "gw_core.h"
#include "gw_curve.h"
#include "gw_log.h"
#include "gw_notebook.h"
#include "gw_process.h"
#include "gw_reaper.h"
#include "gw_ops.h"
#include "gw_quota.h"
#include "gw_reach.h"
#include "gw_selftest.h"
#include "gw_server.h"
#include "gw_tools.h"
#include "gw_zmq_front.h"
#include "wire.h"
#include "config.h"
#include "mcp/mcp.h"
#include "http/http.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* root: /var/lib/kennel; others: $XDG_STATE_HOME/kennel or ~/.local/state/kennel */
static char *
default_state_dir (void)
{
    const char *env = getenv ("KENNEL_STATE_DIR");
    if (env && *env)
        return wire_xstrdup (env);
    if (geteuid () == 0)
        return wire_xstrdup ("/var/lib/kennel");
    const char *xdg = getenv ("XDG_STATE_HOME");
    if (xdg && *xdg)
        return wire_xasprintf ("%s/kennel", xdg);
    const char *home = getenv ("HOME");
    if (!home) {
        struct passwd *pw = getpwuid (geteuid ());
        home = pw ? pw->pw_dir : "/tmp";
    }
    return wire_xasprintf ("%s/.local/state/kennel", home);
}

static void
usage (FILE *out)
{
    fprintf (out, "usage: kennel serve [--connection-file F] [--state-dir D] [--config F] [--ip IP]\n"
                  "                    [--transport ipc|tcp [--insecure-tcp]] [--log-file F] [--http [IP:]PORT]\n"
                  "       kennel kernel -f CONNECTION_FILE [--config F] [--log-file F] [--tools F]\n"
                  "       kennel info [--connection-file F] [--state-dir D]\n"
                  "       kennel selftest [--config F] [--log-file F]\n"
                  "       kennel install-kernelspec [--user | --prefix DIR] [--tools F] [--bin PATH]\n"
                  "       kennel mcp [--connection-file F] [--tools F] [--tools-from-mcp CMD] (gateway/mcp/README.md)\n");
}

typedef struct {
    const char *connection_file;
    const char *state_dir;
    const char *config;
    const char *ip;
    const char *transport;
    const char *log_file;
    const char *tools; /* kernelspec mode only */
    const char *http;  /* [IP:]PORT of the HTTP front, serve only */
    bool insecure_tcp; /* tcp without CURVE: the operator's explicit word */
} serve_opts_t;

static int
parse_opts (int argc, char **argv, serve_opts_t *o)
{
    static const struct option longopts[]
        = {{"connection-file", required_argument, NULL, 'c'}, {"state-dir", required_argument, NULL, 's'},
           {"config", required_argument, NULL, 'C'},          {"ip", required_argument, NULL, 'i'},
           {"transport", required_argument, NULL, 't'},       {"log-file", required_argument, NULL, 'l'},
           {"tools", required_argument, NULL, 'T'},           {"insecure-tcp", no_argument, NULL, 'I'},
           {"http", required_argument, NULL, 'H'},            {"help", no_argument, NULL, 'h'},
           {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long (argc, argv, "f:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
        case 'f':
            o->connection_file = optarg;
            break;
        case 's':
            o->state_dir = optarg;
            break;
        case 'C':
            o->config = optarg;
            break;
        case 'i':
            o->ip = optarg;
            break;
        case 't':
            o->transport = optarg;
            break;
        case 'l':
            o->log_file = optarg;
            break;
        case 'T':
            o->tools = optarg;
            break;
        case 'I':
            o->insecure_tcp = true;
            break;
        case 'H':
            o->http = optarg;
            break;
        case 'h':
            usage (stdout);
            exit (0);
        default:
            usage (stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf (stderr, "kennel: unexpected argument %s\n", argv[optind]);
        return -1;
    }
    return 0;
}

/* --tools belongs to kernelspec mode; elsewhere a host declares tools in
   conversation_open, so the flag is refused rather than ignored. */
static int
refuse_tools (const serve_opts_t *o, const char *cmd)
{
    if (!o->tools)
        return 0;
    fprintf (stderr, "kennel %s: --tools is for `kennel kernel`; a host declares tools in conversation_open\n", cmd);
    return -1;
}

static int
cmd_serve (int argc, char **argv)
{
    /* ipc by default: its 0700 dir admits only our uid, and jupyter_client
       speaks it unchanged; tcp is for remote clients and always CURVE
       unless the operator says --insecure-tcp (README, "What is enforced") */
    serve_opts_t o = {.ip = "127.0.0.1", .transport = "ipc"};
    if (parse_opts (argc, argv, &o) < 0)
        return 2;
    if (refuse_tools (&o, "serve") < 0)
        return 2;
    if (o.insecure_tcp && !streq (o.transport, "tcp")) {
        fprintf (stderr, "kennel serve: --insecure-tcp goes with --transport tcp\n");
        return 2;
    }
    gw_signal_block (); /* SIGTERM drains, SIGHUP reloads: read in the loop */
    gw_process_setup (o.log_file);
    char *errmsg = NULL;
    gw_config_t *config = gw_config_load (o.config, &errmsg);
    if (!config) {
        fprintf (stderr, "kennel: %s\n", errmsg);
        free (errmsg);
        return 2;
    }
    /* HTTP is off unless asked for (gateway/http/README.md) */
    http_settings_t http;
    int http_off = http_settings_load (&http, config->http, o.http, &errmsg);
    if (http_off < 0) {
        fprintf (stderr, "kennel: %s\n", errmsg);
        free (errmsg);
        gw_config_destroy (&config);
        return 2;
    }
    /* a listener no client can reach would still answer its own /healthz */
    if (!http_off && (errmsg = gw_reach_check (http.ip, http.port))) {
        fprintf (stderr, "kennel: %s\n", errmsg);
        free (errmsg);
        http_settings_clear (&http);
        gw_config_destroy (&config);
        return 1;
    }
    char *state_dir = o.state_dir ? wire_xstrdup (o.state_dir) : default_state_dir ();
    gw_server_t *server = gw_server_new (&config, state_dir, o.ip, o.transport, &errmsg);
    gw_config_destroy (&config);
    free (state_dir);
    if (server && o.insecure_tcp)
        gw_server_set_insecure (server);
    if (server && o.config) {
        /* absolute: a reload reads the same file whatever the cwd became */
        char *real = realpath (o.config, NULL);
        gw_server_set_config_path (server, real ? real : o.config);
        free (real);
    }
    /* with HTTP off a reload still checks the http section as a start
       does; the front, when on, sets its own check (http_mcp.c) */
    if (server && http_off)
        gw_server_set_reload_check (server, http_settings_check, NULL);
    http_front_t *front = NULL;
    if (!server || gw_server_listen (server, o.connection_file, &errmsg) < 0
        || (!http_off && !(front = http_front_new (server, &http, &errmsg)))) {
        fprintf (stderr, "kennel: %s\n", errmsg ? errmsg : "cannot start");
        free (errmsg);
        http_settings_clear (&http);
        gw_server_destroy (&server);
        return 1;
    }
    gw_log ("serve", "{s:s, s:s, s:i, s:s, s:i}", "connection_file", gw_server_connection_file (server), "state_dir",
            gw_server_state_dir (server), "control_port", gw_server_control_port (server), "launcher",
            gw_server_config (server)->launcher, "pid", (int) getpid ());
    int rc = gw_server_run (server);
    http_front_destroy (&front); /* its sockets on the conversations go first */
    gw_server_destroy (&server);
    gw_log ("stopped", NULL);
    gw_log_close ();
    return rc;
}

/* A tools file: a JSON list of declarations, checked as conversation_open
   checks them. The list, or NULL + *errmsg naming the file (and the tool). */
static json_t *
tools_file_load (const char *path, char **errmsg)
{
    json_error_t jerr;
    json_t *list = json_load_file (path, 0, &jerr);
    if (!list) {
        /* jansson's line is -1 when the file could not be opened */
        *errmsg = jerr.line > 0 ? wire_xasprintf ("tools file %s: %s (line %d)", path, jerr.text, jerr.line)
                                : wire_xasprintf ("tools file %s: %s", path, jerr.text);
        return NULL;
    }
    char *problem = NULL;
    json_t *tools = gw_tools_validate (list, &problem);
    json_decref (list);
    if (!tools)
        *errmsg = wire_xasprintf ("tools file %s: %s", path, problem ? problem : "invalid tool list");
    free (problem);
    return tools;
}

/* Kernelspec mode: one conversation on the ports a front end chose. */
static void
on_kernel_ready (gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    gw_server_t *server = arg;
    if (ok) /* the layer report, the notebook directory's guard included, to --log-file */
        gw_log ("confinement", "{s:O?, s:s}", "layers", gw_server_last_layers (server), "by", "the kernel");
    if (!ok && !gw_server_stopping (server)) {
        fprintf (stderr, "kennel: the kernel could not be started: %s\n", errmsg ? errmsg : "?");
        gw_server_exit (server, 1);
    }
}

/* Private state for this one kernel (a fresh dir in /tmp unless
   --state-dir), removed however the process ends; NULL + *errmsg. */
static char *
kernel_state_dir (const serve_opts_t *o, char **errmsg)
{
    if (o->state_dir)
        return wire_xstrdup (o->state_dir);
    char tmpl[] = "/tmp/kennel-kernel-XXXXXX";
    if (!mkdtemp (tmpl)) {
        *errmsg = wire_xasprintf ("cannot create a state dir in /tmp: %s", strerror (errno));
        return NULL;
    }
    chmod (tmpl, 0711); /* the sandbox's host uid traverses it (README) */
    if (gw_reaper_start (tmpl) < 0) {
        *errmsg = wire_xasprintf ("cannot start the process that removes %s: %s", tmpl, strerror (errno));
        rmdir (tmpl);
        return NULL;
    }
    return wire_xstrdup (tmpl);
}

/* One conversation on the front end's ports, in the front end's directory:
   the process's exit status. */
static int
kernel_serve (gw_server_t *server, const serve_opts_t *o, wire_connection_t *conn, json_t *tools)
{
    char *errmsg = NULL;
    /* no CURVE either: Jupyter's connection file has no CURVE keys, its own model */
    gw_server_set_kernel_mode (server);
    gw_policy_t policy;
    gw_policy_copy (&policy, &gw_server_config (server)->defaults);
    /* declared exactly as conversation_open with these tools would */
    gw_conv_t *conv = gw_core_open_checked (gw_server_core (server), "kernel", "python", tools, &policy, false, gw_zmq_open, conn, &errmsg);
    gw_policy_clear (&policy);
    if (!conv) {
        fprintf (stderr, "kennel kernel: %s\n", errmsg ? errmsg : "cannot start");
        free (errmsg);
        return 1;
    }
    gw_conv_when_ready (conv, on_kernel_ready, server);
    gw_log ("kernel_mode", "{s:s, s:i, s:i, s:s}", "connection_file", o->connection_file, "pid", (int) getpid (),
            "tools", (int) json_array_size (tools), "workspace", gw_server_kernel_workspace (server));
    return gw_server_run (server);
}

static int
kernel_run (const serve_opts_t *o, wire_connection_t *conn, json_t *tools)
{
    /* the front end, as it is now: one that dies before PR_SET_PDEATHSIG
       leaves a reaper as parent, and one that is PID 1 (a container's
       entrypoint) is 1 all along */
    pid_t front_end = getppid ();
    char *errmsg = NULL;
    char *notebook = NULL, *state_dir = NULL;
    gw_config_t *config = gw_config_load (o->config, &errmsg);
    if (!config || !(notebook = gw_notebook_dir (config, &errmsg))) {
        fprintf (stderr, "kennel kernel: %s\n", errmsg);
        free (errmsg);
        gw_config_destroy (&config);
        return 2;
    }
    state_dir = kernel_state_dir (o, &errmsg);
    /* the front end's terminal is the user's screen (jupyter console) or its
       server's log: the JSON log goes only where --log-file says (why a
       kernel could not start is still one line on stderr, below) */
    gw_signal_block (); /* each of them stops the kernel cleanly, in the loop */
    gw_process_setup (o->log_file ? o->log_file : "/dev/null");
    /* a front end that dies (kill -9 of jupyter console) takes its kernel
       along, as ipykernel's parent poller does: SIGTERM is a clean exit */
    prctl (PR_SET_PDEATHSIG, SIGTERM);
    gw_server_t *server = NULL;
    int rc = 1;
    if (getppid () == front_end && state_dir)
        server = gw_server_new (&config, state_dir, conn->ip, conn->transport, &errmsg);
    if (server) {
        gw_server_set_kernel_workspace (server, notebook);
        rc = kernel_serve (server, o, conn, tools);
    }
    else if (getppid () == front_end)
        fprintf (stderr, "kennel kernel: %s\n", errmsg ? errmsg : "cannot start");
    free (errmsg);
    gw_server_destroy (&server);
    gw_config_destroy (&config);
    if (state_dir && !o->state_dir)
        rmdir (state_dir);
    free (state_dir);
    free (notebook);
    gw_log_close ();
    return rc;
}

static int
cmd_kernel (int argc, char **argv)
{
    serve_opts_t o = {.ip = "127.0.0.1", .transport = "tcp"};
    if (parse_opts (argc, argv, &o) < 0)
        return 2;
    if (!o.connection_file) {
        fprintf (stderr, "kennel kernel: -f CONNECTION_FILE is required\n");
        return 2;
    }
    if (o.insecure_tcp) {
        fprintf (stderr, "kennel kernel: --insecure-tcp is for `kennel serve`; kernelspec mode binds what the "
                         "connection file says\n");
        return 2;
    }
    /* checked before anything starts, so a bad file is one line and exit 2 */
    const char *tools_path = o.tools ? o.tools : getenv ("KENNEL_TOOLS");
    json_t *tools = NULL;
    if (tools_path && *tools_path) {
        char *problem = NULL;
        tools = tools_file_load (tools_path, &problem);
        if (!tools) {
            fprintf (stderr, "kennel kernel: %s\n", problem ? problem : "cannot read the tools file");
            free (problem);
            return 2;
        }
    }
    char *errmsg = NULL;
    wire_error_t err;
    wire_connection_t *conn = wire_connection_load (o.connection_file, &err, &errmsg);
    if (!conn) {
        fprintf (stderr, "kennel kernel: %s\n", errmsg ? errmsg : wire_strerror (err));
        free (errmsg);
        json_decref (tools);
        return 2;
    }
    int rc = kernel_run (&o, conn, tools);
    wire_connection_destroy (&conn);
    json_decref (tools);
    return rc;
}

static int
cmd_info (int argc, char **argv)
{
    serve_opts_t o = {0};
    if (parse_opts (argc, argv, &o) < 0 || refuse_tools (&o, "info") < 0)
        return 2;
    zsys_init ();
    zsys_set_logstream (NULL);
    char *path = NULL;
    if (o.connection_file)
        path = wire_xstrdup (o.connection_file);
    else {
        char *dir = o.state_dir ? wire_xstrdup (o.state_dir) : default_state_dir ();
        path = wire_xasprintf ("%s/gateway.json", dir);
        free (dir);
    }
    json_error_t jerr;
    json_t *file = json_load_file (path, 0, &jerr);
    const char *transport = json_string_value (json_object_get (file, "transport"));
    const char *ip = json_string_value (json_object_get (file, "ip"));
    const char *key = json_string_value (json_object_get (file, "key"));
    int port = (int) json_integer_value (json_object_get (file, "control_port"));
    if (!transport || !ip || !key || port <= 0) {
        fprintf (stderr, "kennel info: %s is not a gateway connection file (%s)\n", path,
                 file ? "a field is missing" : jerr.text);
        json_decref (file);
        free (path);
        return 2;
    }
    wire_error_t err;
    wire_key_t *wkey = wire_key_new (json_string_value (json_object_get (file, "signature_scheme")), key,
                                     strlen (key), &err);
    zsock_t *dealer = zsock_new (ZMQ_DEALER);
    zsock_set_linger (dealer, 0);
    int rc = 1;
    if (wkey && gw_client_connect (dealer, file, port) == 0) {
        wire_msg_t *req = wire_msg_new (NULL, "gateway_info_request", NULL);
        wire_msg_send (req, dealer, wkey);
        wire_msg_destroy (&req);
        zsock_set_rcvtimeo (dealer, 5000);
        zmsg_t *msg = zmsg_recv (dealer);
        wire_msg_t *reply = msg ? wire_msg_decode (&msg, wkey, NULL, &wire_limits_default, &err) : NULL;
        if (reply) {
            char *text = json_dumps (reply->content, JSON_INDENT (2) | JSON_SORT_KEYS);
            printf ("%s\n", text);
            free (text);
            /* a health check's answer: up but unable to confine is not ready */
            rc = json_is_false (json_object_get (reply->content, "ready")) ? 3 : 0;
            if (rc)
                fprintf (stderr, "kennel info: the gateway cannot confine kernels: %s\n",
                         json_string_value (json_object_get (json_object_get (reply->content, "startup_error"),
                                                             "reason")));
        }
        else
            fprintf (stderr, "kennel info: no valid reply from %s:%s:%d within 5 s\n", transport, ip, port);
        wire_msg_destroy (&reply);
    }
    else
        fprintf (stderr, "kennel info: cannot connect to the gateway of %s\n", path);
    zsock_destroy (&dealer);
    wire_key_destroy (&wkey);
    json_decref (file);
    free (path);
    return rc;
}

/* The kernelspec's config file (kennel.conf(5)): defaults for a person at
   a notebook rather than an agent. The notebook profile (magics, shell
   escapes); figures and tables past the agent's 1 MiB of output; the
   memory of a data-science session; no execution timeout, as ipykernel
   has none. */
static json_t *
notebook_config (void)
{
    const json_int_t output = (json_int_t) 64 << 20;
    return json_pack ("{s:{s:s, s:I, s:I, s:I, s:s}, s:{s:I, s:s}}", "defaults", "builtins", "notebook",
                      "memory_bytes", (json_int_t) 4 << 30, "output_bytes", output, "pids", (json_int_t) 1024,
                      "execution_timeout", "unlimited", "maxima", "output_bytes", output, "execution_timeout",
                      "unlimited");
}

static int
make_dirs (const char *dir)
{
    char path[PATH_MAX];
    snprintf (path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir (path, 0755);
            *p = '/';
        }
    return mkdir (path, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

static char *
kernelspec_dir (bool user, const char *prefix)
{
    if (!user)
        return wire_xasprintf ("%s/share/jupyter/kernels/kennel", prefix);
    const char *data = getenv ("XDG_DATA_HOME");
    if (data && *data)
        return wire_xasprintf ("%s/jupyter/kernels/kennel", data);
    const char *home = getenv ("HOME");
    return wire_xasprintf ("%s/.local/share/jupyter/kernels/kennel", home ? home : "/tmp");
}

/* kernel.json, and kennel.conf unless one is there (the operator's edits
   survive a reinstall). */
static int
kernelspec_write (const char *dir, const char *bin, const char *tools_path)
{
    /* the config path is the front end's to expand: the spec stays right
       when staged with DESTDIR (make install) */
    json_t *spec = json_pack ("{s:[s,s,s,s,s,s], s:s, s:s, s:s, s:{s:s}}", "argv", bin, "kernel", "-f",
                              "{connection_file}", "--config", "{resource_dir}/kennel.conf", "display_name",
                              "Python 3 (kennel)", "language", "python", "interrupt_mode", "message", "metadata",
                              "kennel", "confined");
    if (tools_path)
        json_object_set_new (spec, "env", json_pack ("{s:s}", "KENNEL_TOOLS", tools_path));
    char *file = wire_xasprintf ("%s/kernel.json", dir);
    char *conf = wire_xasprintf ("%s/kennel.conf", dir);
    json_t *defaults = notebook_config ();
    int rc = -1;
    if (make_dirs (dir) < 0 || json_dump_file (spec, file, JSON_INDENT (2)) < 0)
        fprintf (stderr, "kennel install-kernelspec: cannot write %s: %s\n", file, strerror (errno));
    else if (access (conf, F_OK) < 0 && json_dump_file (defaults, conf, JSON_INDENT (2)) < 0)
        fprintf (stderr, "kennel install-kernelspec: cannot write %s: %s\n", conf, strerror (errno));
    else
        rc = 0;
    json_decref (spec);
    json_decref (defaults);
    free (file);
    free (conf);
    return rc;
}

static int
cmd_install_kernelspec (int argc, char **argv)
{
    static const struct option longopts[] = {{"user", no_argument, NULL, 'u'},
                                             {"prefix", required_argument, NULL, 'p'},
                                             {"tools", required_argument, NULL, 'T'},
                                             {"bin", required_argument, NULL, 'b'},
                                             {NULL, 0, NULL, 0}};
    const char *prefix = PREFIX_DIR;
    const char *tools_arg = NULL, *bin = NULL;
    bool user = false;
    int c;
    optind = 1;
    while ((c = getopt_long (argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'u')
            user = true;
        else if (c == 'p')
            prefix = optarg;
        else if (c == 'T')
            tools_arg = optarg;
        else if (c == 'b')
            bin = optarg;
        else {
            usage (stderr);
            return 2;
        }
    }
    /* the kernel starts in the front end's directory: the spec holds an
       absolute path, checked now so a bad file fails here and not at start */
    char tools_path[PATH_MAX];
    if (tools_arg) {
        char *problem = NULL;
        json_t *tools = realpath (tools_arg, tools_path) ? tools_file_load (tools_path, &problem) : NULL;
        if (!tools) {
            if (problem)
                fprintf (stderr, "kennel install-kernelspec: %s\n", problem);
            else
                fprintf (stderr, "kennel install-kernelspec: tools file %s: %s\n", tools_arg, strerror (errno));
            free (problem);
            return 2;
        }
        json_decref (tools);
    }
    /* the kernelspec runs this very binary unless --bin names the one it
       will be (make install): the build tree's one during development */
    char self[PATH_MAX];
    ssize_t n = readlink ("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    char *dir = kernelspec_dir (user, prefix);
    int rc = kernelspec_write (dir, bin ? bin : n > 0 ? self : "kennel", tools_arg ? tools_path : NULL);
    if (rc == 0)
        printf ("%s\n", dir);
    free (dir);
    return rc < 0 ? 1 : 0;
}

int
main (int argc, char **argv)
{
    wire_alloc_json ();
    if (argc < 2) {
        usage (stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (streq (cmd, "serve"))
        return cmd_serve (argc - 1, argv + 1);
    if (streq (cmd, "kernel"))
        return cmd_kernel (argc - 1, argv + 1);
    if (streq (cmd, "info"))
        return cmd_info (argc - 1, argv + 1);
    if (streq (cmd, "selftest")) {
        serve_opts_t o = {0};
        if (parse_opts (argc - 1, argv + 1, &o) < 0 || refuse_tools (&o, "selftest") < 0)
            return 2;
        gw_process_setup (o.log_file ? o.log_file : "/dev/null");
        return gw_selftest_run (o.config);
    }
    if (streq (cmd, "mcp"))
        return mcp_main (argc - 1, argv + 1);
    if (streq (cmd, "install-kernelspec"))
        return cmd_install_kernelspec (argc - 1, argv + 1);
    if (streq (cmd, "--version")) {
        printf ("kennel %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (streq (cmd, "-h") || streq (cmd, "--help")) {
        usage (stdout);
        return 0;
    }
    fprintf (stderr, "kennel: unknown command %s\n", cmd);
    usage (stderr);
    return 2;
}
