/*  gw_server.c - the daemon's loop: control socket, connection file, the
    start-up probe, idle culling, clean shutdown: the process host. It
    makes the core (gw_core.h), which holds the conversation table, and
    hands it its services.

    Signals come from the loop (gw_signal.c): SIGTERM or SIGINT drains
    (gw_drain.c), a second one stops at once, SIGHUP reloads the config
    (gw_reload.c); in kernelspec mode each of them stops. The stop ends the
    loop; every conversation is then closed: kernels killed and reaped,
    sockets and directories removed, the connection file deleted.
*/
#include "gw_server.h"
#include "gw_capacity.h"
#include "gw_config.h"
#include "gw_control.h"
#include "gw_conv.h"
#include "gw_core.h"
#include "gw_curve.h"
#include "gw_io.h"
#include "gw_launch.h"
#include "gw_linger.h"
#include "gw_log.h"
#include "gw_ops.h"
#include "gw_pool.h"
#include "gw_quota.h"
#include "gw_remove.h"
#include "gw_server_private.h"
#include "gw_slots.h"
#include "gw_timer.h"
#include "gw_util.h"
#include "gw_zygote.h"
#include "wire.h"
#include "kernel-launcher/kennel_launch.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Started by root, the launcher hands workspaces to an unprivileged host
   uid that must traverse every directory above them: say so at start
   rather than let each conversation fail at the mount stage. */
static void
check_traversable (const char *dir)
{
    if (geteuid () != 0)
        return;
    char *copy = wire_xstrdup (dir);
    for (char *p = copy + 1;; p++) {
        bool end = *p == 0;
        if (*p == '/' || end) {
            *p = 0;
            struct stat st;
            if (stat (copy, &st) == 0 && S_ISDIR (st.st_mode) && !(st.st_mode & S_IXOTH))
                gw_log ("warning", "{s:s, s:s}", "path", copy, "message",
                        "not traversable by others: the sandbox's host uid cannot reach workspaces below it "
                        "(chmod o+x, or choose another --state-dir)");
            if (end)
                break;
            *p = '/';
        }
    }
    free (copy);
}

/* ipc client sockets live in sock/, 0700 and ours: only our uid (and
   root) can connect, whatever the umask made of the socket files. The
   longest path, sock/<16 random>-<n>, must fit sun_path. */
static int
sock_dir_make (gw_server_t *self, char **errmsg)
{
    const char *why = NULL;
    char *dir = wire_xasprintf ("%s/sock", self->state_dir);
    struct stat st;
    /* "/<short id>-<n>", n at most two digits */
    if ((int) (strlen (dir) + 1 + GW_SHORT_ID_LEN + 3) > GW_SUN_PATH_MAX) {
        *errmsg = wire_xasprintf ("the client socket dir %s: too long for ipc socket paths (%d bytes of sun_path): "
                                  "choose a shorter --state-dir", dir, GW_SUN_PATH_MAX);
        free (dir);
        return -1;
    }
    if (mkdir (dir, 0700) < 0 && errno != EEXIST)
        why = strerror (errno);
    else if (lstat (dir, &st) < 0 || !S_ISDIR (st.st_mode) || st.st_uid != geteuid ())
        why = "not a directory of ours";
    else if ((st.st_mode & 07777) != 0700 && chmod (dir, 0700) < 0)
        why = strerror (errno);
    if (why)
        *errmsg = wire_xasprintf ("the client socket dir %s: %s", dir, why);
    free (dir);
    return why ? -1 : 0;
}

gw_server_t *
gw_server_new (gw_config_t **config_p, const char *state_dir, const char *ip, const char *transport, char **errmsg)
{
    if (!streq (transport, "tcp") && !streq (transport, "ipc")) {
        *errmsg = wire_xstrdup ("--transport must be tcp or ipc");
        return NULL;
    }
    /* 0711: the sandbox's host uid must traverse it to reach a
       conversation's workspace and run dir (gw_conv.c) */
    if (gw_fs_make_dir (state_dir, 0711, true) < 0) {
        *errmsg = wire_xasprintf ("cannot create the state dir %s: %s", state_dir, strerror (errno));
        return NULL;
    }
    gw_server_t *self = wire_xcalloc (1, sizeof *self);
    self->config = *config_p;
    *config_p = NULL;
    self->state_dir = realpath (state_dir, NULL);
    check_traversable (self->state_dir);
    self->ip = wire_xstrdup (ip);
    self->transport = wire_xstrdup (transport);
    self->curve = streq (transport, "tcp");
    self->loop = zloop_new ();
    self->io = gw_io_new (self->loop);
    int io_errno = errno;
    self->timers = gw_timers_new (self->loop);
    self->lingers = gw_lingers_new (self->loop);
    if (!self->io) {
        *errmsg = wire_xasprintf ("cannot create the event loop's epoll set: %s", strerror (io_errno));
        gw_lingers_destroy (&self->lingers);
        gw_timers_destroy (&self->timers);
        zloop_destroy (&self->loop);
        free (self->state_dir);
        free (self->ip);
        free (self->transport);
        *config_p = self->config;
        free (self);
        return NULL;
    }
    self->key = wire_key_new_random ();
    self->replay = wire_replay_new (GW_REPLAY_CAPACITY);
    self->limits.max_frame_bytes = self->config->max_message_bytes;
    self->limits.max_message_bytes = self->config->max_message_bytes;
    self->core = gw_core_new (self);
    self->slots = gw_slots_new (self->config->max_parallel_launches);
    wire_id_new (self->session);
    gw_capacity_init (&self->capacity, self->config);
    gw_log ("capacity", "{s:o}", "capacity", gw_capacity_json (&self->capacity));
    char *graveyard = wire_xasprintf ("%s/graveyard", self->state_dir);
    self->remover = gw_remover_new (self->io, graveyard, errmsg);
    free (graveyard);
    if (!self->remover || (streq (transport, "ipc") && sock_dir_make (self, errmsg) < 0)) {
        gw_server_destroy (&self);
        return NULL;
    }
    return self;
}

static int
on_cull_check (zloop_t *loop, int timer_id, void *arg)
{
    gw_server_t *self = arg;
    gw_core_close_idle (self->core, gw_clock_mono ());
    return 0;
}

/* Who may connect: with CURVE only the holder of the connection file's
   client key (through the ZAP handler, which every conversation's tcp
   sockets use too). ROUTER_HANDOVER lets a peer take over another's
   routing by naming its identity, so it is on only where every peer is
   authenticated (CURVE, or ipc in the 0700 sock dir). */
static int
control_secure (gw_server_t *self, char **errmsg)
{
    if (self->curve) {
        if (gw_curve_keys_new (&self->control_keys) < 0) {
            *errmsg = wire_xstrdup ("--transport tcp needs CurveZMQ, which this libzmq lacks "
                                    "(use --transport ipc, or --insecure-tcp: README, \"What is enforced\")");
            return -1;
        }
        self->zap = gw_zap_new (self->loop, errmsg);
        if (!self->zap)
            return -1;
        gw_zap_allow (self->zap, &self->control_keys);
        gw_curve_server (self->control, &self->control_keys);
    }
    zsock_set_router_handover (self->control, gw_server_authenticates (self));
    return 0;
}

int
gw_server_listen (gw_server_t *self, const char *connection_file, char **errmsg)
{
    self->control = zsock_new (ZMQ_ROUTER);
    zsock_set_linger (self->control, 200);
    /* before bind: over --insecure-tcp any local user reaches this socket
       without the key */
    gw_io_bound (self->control, self->limits.max_message_bytes, GW_QUEUE_CONTROL);
    if (control_secure (self, errmsg) < 0)
        return -1;
    wire_connection_t *c = wire_connection_new ();
    gw_set_string (&c->transport, self->transport);
    gw_set_string (&c->key, wire_key_text (self->key));
    free (c->ip);
    c->ip = NULL;
    if (streq (self->transport, "ipc")) {
        c->ip = wire_xasprintf ("%s/sock/gateway", self->state_dir);
        self->control_port = zsock_bind (self->control, "ipc://%s-1", c->ip) == 0 ? 1 : -1;
    }
    else {
        c->ip = wire_xstrdup (self->ip);
        self->control_port = zsock_bind (self->control, "tcp://%s:*", self->ip);
    }
    if (self->control_port <= 0) {
        *errmsg = wire_xasprintf ("cannot bind the control socket (%s %s): %s", self->transport, c->ip,
                                  zmq_strerror (zmq_errno ()));
        wire_connection_destroy (&c);
        return -1;
    }
    c->control_port = self->control_port;
    if (connection_file)
        self->connection_file = wire_xstrdup (connection_file);
    else
        self->connection_file = wire_xasprintf ("%s/gateway.json", self->state_dir);
    /* only the fields of a gateway connection file: it is not a kernel's */
    self->connection_info = json_pack ("{s:s, s:s, s:i, s:s, s:s}", "transport", c->transport, "ip", c->ip,
                                       "control_port", c->control_port, "key", c->key, "signature_scheme",
                                       c->signature_scheme);
    if (self->curve)
        gw_curve_info (&self->control_keys, self->connection_info);
    wire_connection_destroy (&c);
    return 0;
}

/* Written (tmp + rename: never seen half-written) only once start-up
   confinement is known, so that its appearance means "ready to answer". */
static int
connection_file_write (gw_server_t *self, char **errmsg)
{
    char *tmp = wire_xasprintf ("%s.tmp%d", self->connection_file, (int) getpid ());
    int rc = -1;
    FILE *f = NULL;
    int fd = tmp ? open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    if (fd >= 0 && (f = fdopen (fd, "w")) && json_dumpf (self->connection_info, f, JSON_INDENT (2)) == 0
        && fputc ('\n', f) != EOF)
        rc = 0;
    if (f)
        rc = fclose (f) == 0 ? rc : -1;
    else if (fd >= 0)
        close (fd);
    if (rc == 0)
        rc = rename (tmp, self->connection_file);
    if (rc < 0) {
        if (tmp)
            unlink (tmp);
        *errmsg = wire_xasprintf ("cannot write the connection file %s: %s", self->connection_file, strerror (errno));
    }
    free (tmp);
    return rc;
}

/* ---- the confinement probe ---------------------------------------------
   At start the daemon confines a trivial command (/bin/true) exactly as it
   will confine kernels (the config's confine settings with the default
   policy's limits, a host workspace). Only when its layer report is in
   does the daemon write its connection file and answer on the control
   socket: the file's appearance means ready. A probe that fails (a layer
   the host cannot give, the launcher missing or silent past
   launch_timeout) is logged naming the layer and the launcher's reason
   (which names the host setting); the daemon then still writes the file
   and answers gateway_info with the failure, and refuses every
   conversation_open with it (fail closed, visible to a health check). */

#define PROBE_COMMAND "/bin/true"

static void zygote_and_pool_start (gw_server_t *self);

/* The probe's launcher writes its output here: a launcher that ends before
   its status line is explained by it (gw_launch.c), then it goes. */
static void
probe_log_remove (gw_server_t *self)
{
    char *log = wire_xasprintf ("%s/probe.log", self->state_dir);
    gw_launch_log_remove (log);
    free (log);
}

static void
startup_done (gw_server_t *self, const char *layer, const char *error)
{
    if (self->probe_timer)
        gw_timer_end (self->loop, self->probe_timer);
    self->probe_timer = 0;
    probe_log_remove (self);
    if (error) {
        self->startup_error = wire_xstrdup (error);
        self->startup_layer = wire_xstrdup (layer);
        json_t *failed = json_pack ("{s:{s:s, s:s}}", layer, "state", "unsupported", "reason", error);
        gw_server_set_layers (self, failed, "start-up probe (" PROBE_COMMAND ") failed", 0, self->probe_started);
        json_decref (failed);
        gw_log ("confinement_failed", "{s:s, s:s, s:s}", "layer", layer, "reason", error, "consequence",
                "every conversation_open is refused until kennel is restarted on a host that can confine");
    }
    char *errmsg = NULL;
    if (connection_file_write (self, &errmsg) < 0) {
        gw_log ("error", "{s:s}", "message", errmsg ? errmsg : "cannot write the connection file");
        free (errmsg);
        self->exit_code = 1;
        gw_server_stop (self);
        return;
    }
    gw_io_reader (self->io, self->control, gw_control_on_message, self);
    self->ready = true;
    gw_log ("ready", "{s:s, s:b, s:f}", "connection_file", self->connection_file, "confined", error == NULL,
            "seconds", gw_clock_mono () - self->probe_started);
    if (!error)
        zygote_and_pool_start (self);
}

static void
on_probe_status (gw_launch_t *launch, void *arg)
{
    gw_server_t *self = arg;
    json_t *status = gw_launch_status (launch);
    json_t *layers = json_object_get (status, LAUNCH_STATUS_LAYERS);
    if (gw_launch_state (launch) == GW_LAUNCH_CONFINED && json_is_object (layers)) {
        gw_server_set_layers (self, layers, "start-up probe: " PROBE_COMMAND " confined by the launcher",
                              gw_launch_kernel_pid (launch), self->probe_started);
        gw_log ("confinement", "{s:O, s:s}", "layers", layers, "by", "start-up probe");
        gw_launch_abandon (&self->probe);
        startup_done (self, NULL, NULL);
        return;
    }
    const char *stage = gw_text (json_object_get (status, LAUNCH_STATUS_STAGE));
    char *error = wire_xstrdup (gw_launch_error (launch) ? gw_launch_error (launch) : "the launcher failed");
    gw_launch_abandon (&self->probe);
    startup_done (self, stage ? stage : "launcher", error);
    free (error);
}

static int
on_probe_timeout (zloop_t *loop, int timer_id, void *arg)
{
    gw_server_t *self = arg;
    self->probe_timer = 0;
    gw_launch_abandon (&self->probe);
    char error[160];
    snprintf (error, sizeof error, "the confinement probe sent no status line within %g s (launch_timeout)",
              self->config->launch_timeout);
    startup_done (self, "launcher", error);
    return 0;
}

static void
probe_start (gw_server_t *self)
{
    self->probe_started = gw_clock_mono ();
    self->probe_dir = wire_xasprintf ("%s/probe", self->state_dir);
    if (!self->probe_dir || (mkdir (self->probe_dir, 0700) < 0 && errno != EEXIST)) {
        char error[300];
        snprintf (error, sizeof error, "cannot create the probe's workspace in %s: %s", self->state_dir,
                  strerror (errno));
        startup_done (self, "setup", error);
        return;
    }
    char *errmsg = NULL;
    if (gw_quota_apply (self->config, self->probe_dir, self->config->defaults.workspace_bytes,
                        self->config->defaults.workspace_files, &errmsg) < 0) {
        startup_done (self, "quota", errmsg);
        free (errmsg);
        return;
    }
    json_t *spec = json_pack ("{s:o, s:s, s:{s:[s]}, s:{}}", LAUNCH_SPEC_POLICY,
                              gw_confine_policy_json (self->config, &self->config->defaults), LAUNCH_SPEC_WORKSPACE,
                              self->probe_dir, LAUNCH_SPEC_KERNEL, LAUNCH_KERNEL_ARGV, PROBE_COMMAND, LAUNCH_SPEC_ENV);
    char *log = wire_xasprintf ("%s/probe.log", self->state_dir);
    self->probe = gw_launch_start (self->loop, self->config->launcher, spec, log, on_probe_status, NULL, self, &errmsg);
    free (log);
    json_decref (spec);
    if (!self->probe) {
        startup_done (self, "launcher", errmsg ? errmsg : "launch failed");
        free (errmsg);
        return;
    }
    self->probe_timer = gw_timer_start (self->loop, gw_limit_ms (self->config->launch_timeout), 1,
                                        on_probe_timeout, self);
}

static void
probe_cleanup (gw_server_t *self)
{
    gw_launch_abandon (&self->probe);
    probe_log_remove (self);
    if (self->probe_dir) {
        gw_quota_unmount (self->probe_dir);
        rmdir (self->probe_dir);
        free (self->probe_dir);
        self->probe_dir = NULL;
    }
}

/* The warm pool's measure of the table (gw_pool_count_fn). */
static int
conversations_count (void *core)
{
    return gw_core_count (core);
}

static gw_pool_t *
pool_new (gw_server_t *self, int size)
{
    return gw_pool_new (self, size, conversations_count, self->core);
}

static void
zygote_and_pool_start (gw_server_t *self)
{
    if (self->config->fork_server)
        self->zygote = gw_zygote_new (self);
    if (self->config->warm_pool > 0)
        self->pool = pool_new (self, self->config->warm_pool);
}

/* gw_pool_renew_fn: the drain's and the reload's. */
static bool
pool_renew (gw_server_t *self, int size)
{
    if (!self->ready || self->startup_error || self->kernel_mode)
        return false;
    gw_pool_destroy (&self->pool);
    if (size > 0)
        self->pool = pool_new (self, size);
    return true;
}

static void
on_signal (int sig, void *arg)
{
    gw_server_t *self = arg;
    self->last_signal = sig;
    if (self->kernel_mode)
        gw_server_stop (self);
    else if (sig == SIGHUP)
        gw_reload (self, pool_renew);
    else
        gw_drain_start (self, pool_renew);
}

int
gw_server_run (gw_server_t *self)
{
    if (!self->front_signals)
        self->signals = gw_signals_new (self->loop, on_signal, self);
    if (!self->kernel_mode) {
        gw_timer_start (self->loop, (size_t) fmax (10, self->config->idle_check_interval * 1000), 0, on_cull_check,
                        self);
        probe_start (self); /* then the connection file, the zygote, the pool */
    }
    zloop_start (self->loop);
    gw_log ("stopping", "{s:i, s:b, s:s}", "conversations", gw_core_count (self->core), "signal",
            self->last_signal || zsys_interrupted, "by",
            self->last_signal ? strsignal (self->last_signal) : zsys_interrupted ? "interrupt" : "the gateway");
    return self->exit_code;
}

void
gw_server_destroy (gw_server_t **self_p)
{
    gw_server_t *self = *self_p;
    if (!self)
        return;
    gw_core_destroy (&self->core); /* every conversation closed, "shutdown" */
    gw_lingers_destroy (&self->lingers); /* before the ZAP handler and the epoll set */
    probe_cleanup (self);
    gw_pool_destroy (&self->pool);
    gw_launch_reap_all (5.0);
    gw_zygote_destroy (&self->zygote); /* after the kernels: it would end them */
    gw_remover_destroy (&self->remover); /* after every conversation was buried */
    gw_slots_destroy (&self->slots);
    if (self->control) {
        if (self->ready)
            gw_io_reader_end (self->io, self->control);
        zsock_destroy (&self->control);
    }
    if (self->connection_file && self->ready)
        unlink (self->connection_file);
    if (streq (self->transport, "ipc") && self->state_dir) {
        char path[GW_PATH_MAX];
        snprintf (path, sizeof path, "%s/sock/gateway-1", self->state_dir);
        unlink (path);
    }
    gw_zap_destroy (&self->zap); /* after every CURVE socket is gone */
    if (self->state_dir) {
        /* the dirs we made for conversations; the operator's state dir stays */
        const char *subdirs[] = {"run", "sock", "conv", "probe"};
        for (int i = 0; i < 4; i++) {
            char path[GW_PATH_MAX];
            snprintf (path, sizeof path, "%s/%s", self->state_dir, subdirs[i]);
            rmdir (path);
        }
    }
    gw_signals_destroy (&self->signals);
    gw_io_destroy (&self->io);
    gw_timers_destroy (&self->timers);
    zloop_destroy (&self->loop);
    wire_key_destroy (&self->key);
    wire_replay_destroy (&self->replay);
    json_decref (self->last_layers);
    json_decref (self->layers_taken);
    json_decref (self->connection_info);
    free (self->startup_error);
    free (self->startup_layer);
    gw_config_destroy (&self->config);
    free (self->state_dir);
    free (self->kernel_workspace);
    free (self->ip);
    free (self->transport);
    free (self->connection_file);
    free (self->config_path);
    free (self);
    *self_p = NULL;
}
