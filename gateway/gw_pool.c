/*  gw_pool.c - the warm pool: kernels started and confined ahead of need.

    A pooled kernel has no identity: it runs with the operator's default
    policy and no tools, its workspace is state/pool/<random>/workspace, and
    its key is its own (the client-facing conversation key is made when a
    conversation claims it). gw_conv binds the rest at claim time
    (gw_conv.c, "the warm pool's side"). A claimed kernel leaves the pool for
    good: it serves exactly one conversation in its life.

    Refilling never blocks the loop: one launch at a time (a fork+exec, the
    confinement happens in the launcher), and only while no conversation is
    waiting for a launch slot. A launch that fails is retried after a pause.
    A refill also waits POOL_QUIET_S after a claim: the conversation that
    claimed sends its first requests right after its open reply, and a
    launch (fork, cgroup move, namespaces: tens of ms of CPU on a small
    host) competing with them made warm starts 2-5x slower.
*/
#include "gw_pool.h"
#include "gw_capacity.h"
#include "gw_config.h"
#include "gw_kernel.h"
#include "gw_launch.h"
#include "gw_log.h"
#include "gw_quota.h"
#include "gw_server_access.h"
#include "gw_slots.h"
#include "gw_timer.h"
#include "gw_util.h"
#include "gw_zygote.h"
#include "wire.h"
#include "kernel-launcher/kennel_launch.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#define POOL_CHECK_MS 100
#define POOL_RETRY_S 5.0
#define POOL_QUIET_S 0.25

/* A pooled kernel and what the pool keeps of it. */
typedef struct {
    gw_pool_t *pool;
    char *dir;          /* state/pool/<random>: workspace, kernel.log */
    gw_kernel_t *kernel;
    zsock_t *probe; /* DEALER asking the kernel for kernel_info until it answers */
    bool ready;     /* confined and answering: a claim only binds, never waits for Python */
} gw_warm_t;

struct gw_pool {
    gw_server_t *server;
    gw_pool_count_fn *count; /* the open conversations */
    void *count_arg;
    int size;
    zlistx_t *kernels; /* gw_warm_t*, owned */
    int timer;
    double retry_at;
    int claimed;
    double claimed_at;
};

static char *
pool_path (const gw_pool_t *self, const char *leaf)
{
    return wire_xasprintf ("%s/pool%s%s", gw_server_state_dir (self->server), leaf ? "/" : "", leaf ? leaf : "");
}

static void
warm_probe_close (gw_warm_t *self, zloop_t *loop)
{
    if (!self->probe)
        return;
    zloop_reader_end (loop, self->probe);
    zsock_destroy (&self->probe);
}

/* Kills the launch (if any) and removes what is left of the dirs. */
static void
warm_destroy (gw_warm_t **self_p)
{
    gw_warm_t *self = *self_p;
    if (!self)
        return;
    if (self->probe)
        warm_probe_close (self, gw_server_loop (self->pool->server));
    if (self->kernel) {
        gw_kernel_end (self->kernel);
        gw_quota_unmount (gw_kernel_run_dir (self->kernel));
        gw_fs_remove_tree (gw_kernel_run_dir (self->kernel));
        gw_kernel_destroy (&self->kernel);
    }
    if (self->dir) {
        char *workspace = wire_xasprintf ("%s/workspace", self->dir);
        gw_quota_unmount (workspace);
        free (workspace);
        gw_fs_remove_tree (self->dir);
    }
    free (self->dir);
    free (self);
    *self_p = NULL;
}

static void
warm_remove (gw_pool_t *self, gw_warm_t *warm)
{
    void *handle = zlistx_find (self->kernels, warm);
    if (handle)
        zlistx_detach (self->kernels, handle);
    warm_destroy (&warm);
}

/* The kernel answered our kernel_info_request: Python is up. */
static int
on_warm_answer (zloop_t *loop, zsock_t *sock, void *arg)
{
    gw_warm_t *warm = arg;
    zmsg_t *msg = zmsg_recv (sock);
    zmsg_destroy (&msg);
    warm_probe_close (warm, loop);
    warm->ready = true;
    gw_log ("pool_ready", "{s:i, s:f}", "pid", (int) gw_launch_kernel_pid (gw_kernel_launch_of (warm->kernel)),
            "seconds", gw_clock_mono () - gw_kernel_started (warm->kernel));
    return 0;
}

/* Asks the confined kernel for kernel_info on its shell socket (the message
   waits in the DEALER's queue until the kernel has bound it). */
static int
warm_probe (gw_warm_t *warm, zloop_t *loop)
{
    wire_error_t err;
    const wire_connection_t *conn = gw_kernel_conn (warm->kernel);
    wire_key_t *key = wire_connection_key (conn, &err);
    warm->probe = zsock_new (ZMQ_DEALER);
    if (!key || !warm->probe) {
        wire_key_destroy (&key);
        return -1;
    }
    zsock_set_linger (warm->probe, 0);
    zsock_set_sndtimeo (warm->probe, 0);
    zsock_set_reconnect_ivl (warm->probe, 5); /* as the relay's (gw_relay.c) */
    char session[WIRE_ID_SIZE];
    wire_id_new (session);
    wire_msg_t *m = wire_msg_new (session, "kernel_info_request", NULL);
    int rc = zsock_connect (warm->probe, "ipc://%s/" LAUNCH_KERNEL_SOCKET, gw_kernel_run_dir (warm->kernel),
                            conn->shell_port);
    if (rc == 0)
        rc = wire_msg_send (m, zsock_resolve (warm->probe), key);
    wire_msg_destroy (&m);
    wire_key_destroy (&key);
    if (rc == 0)
        rc = zloop_reader (loop, warm->probe, on_warm_answer, warm);
    return rc;
}

static void
on_warm_status (gw_launch_t *launch, void *arg)
{
    gw_warm_t *warm = arg;
    gw_pool_t *self = warm->pool;
    if (gw_launch_state (launch) != GW_LAUNCH_CONFINED) {
        gw_log ("pool_failed", "{s:s}", "reason", gw_launch_error (launch) ?: "launch failed");
        self->retry_at = gw_clock_mono () + POOL_RETRY_S;
        warm_remove (self, warm);
        return;
    }
    if (warm_probe (warm, gw_server_loop (self->server)) < 0) {
        gw_log ("pool_failed", "{s:s}", "reason", "cannot ask the pooled kernel for kernel_info");
        self->retry_at = gw_clock_mono () + POOL_RETRY_S;
        warm_remove (self, warm);
    }
}

static void
on_warm_exit (gw_launch_t *launch, void *arg)
{
    gw_warm_t *warm = arg;
    gw_pool_t *self = warm->pool;
    gw_log ("pool_exit", "{s:s}", "status", gw_launch_cause (launch));
    self->retry_at = gw_clock_mono () + POOL_RETRY_S; /* a kernel that dies unused: do not spin */
    warm_remove (self, warm);
}

/* One more pooled kernel: its dirs, run dir and key, the launcher. */
static void
pool_launch (gw_pool_t *self)
{
    gw_warm_t *warm = wire_xcalloc (1, sizeof *warm);
    warm->pool = self;
    char rnd[WIRE_ID_SIZE];
    wire_id_new (rnd);
    rnd[GW_SHORT_ID_LEN] = 0;
    char *top = pool_path (self, NULL);
    warm->dir = pool_path (self, rnd);
    char *workspace = wire_xasprintf ("%s/workspace", warm->dir);
    char *log_path = wire_xasprintf ("%s/kernel.log", warm->dir);
    char *runs = wire_xasprintf ("%s/run", gw_server_state_dir (self->server));
    const gw_config_t *config = gw_server_config (self->server);
    char *errmsg = NULL;
    if (gw_fs_make_dir (top, 0711, false) < 0 || gw_fs_make_dir (runs, 0711, false) < 0
        || gw_fs_make_dir (warm->dir, 0711, false) < 0 || gw_fs_make_dir (workspace, 0700, false) < 0) {
        errmsg = wire_xasprintf ("cannot create %s: %s", warm->dir, strerror (errno));
    }
    else if (gw_quota_apply (config, workspace, config->defaults.workspace_bytes, config->defaults.workspace_files,
                             &errmsg) == 0
             && (warm->kernel = gw_kernel_new (config, runs, "python", &errmsg))) {
        json_t *tools = json_array ();
        json_t *spec
            = gw_kernel_spec (config, "python", &config->defaults, tools, workspace, gw_kernel_run_dir (warm->kernel));
        gw_zygote_apply (gw_server_zygote (self->server), spec);
        json_decref (tools);
        gw_kernel_launch (warm->kernel, gw_server_loop (self->server), config->launcher, spec, log_path, on_warm_status,
                          on_warm_exit, warm, &errmsg);
        json_decref (spec);
    }
    free (top), free (workspace), free (log_path), free (runs);
    gw_launch_t *launch = gw_kernel_launch_of (warm->kernel);
    if (!launch) {
        gw_log ("pool_failed", "{s:s}", "reason", errmsg ? errmsg : "launch failed");
        free (errmsg);
        self->retry_at = gw_clock_mono () + POOL_RETRY_S;
        warm_destroy (&warm);
        return;
    }
    gw_log ("pool_launch", "{s:i}", "launcher_pid", (int) gw_launch_pid (launch));
    zlistx_add_end (self->kernels, warm);
}

static int
on_pool_check (zloop_t *loop, int timer_id, void *arg)
{
    gw_pool_t *self = arg;
    gw_server_t *server = self->server;
    if (gw_server_stopping (server) || (int) zlistx_size (self->kernels) >= self->size
        || gw_clock_mono () < self->retry_at
        || gw_clock_mono () < self->claimed_at + POOL_QUIET_S
        || gw_slots_busy (gw_server_slots (server))
        || !gw_capacity_fds_room (gw_server_capacity (server), self->count (self->count_arg)))
        return 0;
    for (gw_warm_t *w = zlistx_first (self->kernels); w; w = zlistx_next (self->kernels))
        if (!w->ready)
            return 0; /* one launch at a time */
    pool_launch (self);
    return 0;
}

gw_pool_t *
gw_pool_new (gw_server_t *server, int size, gw_pool_count_fn *count, void *count_arg)
{
    gw_pool_t *self = wire_xcalloc (1, sizeof *self);
    self->server = server;
    self->count = count;
    self->count_arg = count_arg;
    self->size = size;
    self->kernels = zlistx_new ();
    self->timer = gw_timer_start (gw_server_loop (server), POOL_CHECK_MS, 0, on_pool_check, self);
    return self;
}

void
gw_pool_destroy (gw_pool_t **self_p)
{
    gw_pool_t *self = *self_p;
    if (!self)
        return;
    if (self->timer)
        gw_timer_end (gw_server_loop (self->server), self->timer);
    gw_warm_t *warm;
    while ((warm = zlistx_detach (self->kernels, NULL)))
        warm_destroy (&warm);
    zlistx_destroy (&self->kernels);
    char *top = pool_path (self, NULL);
    if (top)
        rmdir (top);
    free (top);
    free (self);
    *self_p = NULL;
}

bool
gw_pool_fits (const gw_config_t *config, const char *kernel, const gw_policy_t *p)
{
    const gw_policy_t *d = &config->defaults;
    return streq (kernel, "python") && p->memory_bytes == d->memory_bytes && p->pids == d->pids
           && p->workspace_bytes == d->workspace_bytes && p->workspace_files == d->workspace_files && streq (p->network, d->network)
           && streq (p->builtins, d->builtins) && json_equal (p->env, d->env)
           && (p->imports == d->imports || (p->imports && d->imports && json_equal (p->imports, d->imports)));
}

gw_kernel_t *
gw_pool_claim (gw_pool_t *self, char **dir)
{
    for (gw_warm_t *w = zlistx_first (self->kernels); w; w = zlistx_next (self->kernels))
        if (w->ready && gw_launch_state (gw_kernel_launch_of (w->kernel)) == GW_LAUNCH_CONFINED) {
            zlistx_detach_cur (self->kernels);
            self->claimed++;
            self->claimed_at = gw_clock_mono ();
            gw_kernel_t *kernel = w->kernel;
            *dir = w->dir;
            w->kernel = NULL;
            w->dir = NULL;
            warm_destroy (&w);
            return kernel;
        }
    return NULL;
}

json_t *
gw_pool_info (gw_pool_t *self)
{
    int ready = 0, starting = 0;
    for (gw_warm_t *w = zlistx_first (self->kernels); w; w = zlistx_next (self->kernels))
        w->ready ? ready++ : starting++;
    return json_pack ("{s:i, s:i, s:i, s:i}", "size", self->size, "ready", ready, "starting", starting, "claimed",
                      self->claimed);
}
