/*  gw_conv.c - one conversation: directories, policy, its kernel's lifecycle.

    Layout under the state dir:
      conv/<id>/workspace   bound at /workspace in the kernel (kept on restart)
      conv/<id>/kernel.log  the launcher's and kernel's stdout/stderr
      run/<random>/         bound at /run/kennel: kernel.json and the kernel's
                            ipc sockets k-<port>. A short random name keeps
                            the socket paths within sun_path
                            (GW_SUN_PATH_MAX) whatever the conversation id.
      sock/<random>-<port>  the client sockets when the transport is ipc
                            (never inside the kernel's view)

    The kernel starts through kennel-launch; while it starts (or after it
    died, until the next request) the relay holds client messages. The
    conversation's peers (gw_front.h) hear of its kernel's start, readiness
    and death.
*/
#include "gw_conv.h"
#include "gw_config.h"
#include "gw_error.h"
#include "gw_front.h"
#include "gw_kernel.h"
#include "gw_launch.h"
#include "gw_log.h"
#include "gw_metrics.h"
#include "gw_peers.h"
#include "gw_pool.h"
#include "gw_proc.h"
#include "gw_quota.h"
#include "gw_relay.h"
#include "gw_remove.h"
#include "gw_server_access.h"
#include "gw_slots.h"
#include "gw_timer.h"
#include "gw_tools.h"
#include "gw_util.h"
#include "gw_zygote.h"
#include "wire.h"
#include "kernel-launcher/kennel_launch.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum { K_STARTING, K_RUNNING, K_DEAD } kernel_state_t;

typedef struct {
    gw_conv_ready_fn *fn;
    void *arg;
} waiter_t;

struct gw_conv {
    gw_server_t *server;
    gw_config_t *config; /* the server's when opened: a reload changes later conversations' only */
    char *id;
    char kernel_id[GW_ID_UUID_SIZE]; /* gw_id.c: names the gateway's shard */
    char *kernel_name;
    json_t *tools;
    gw_policy_t policy;
    char *dir;
    char *workspace;
    char *runs;    /* state/run */
    gw_kernel_t *kernel; /* the current kernel (its run dir state/run/<random>, a fresh one each), or NULL */
    char *log_path;
    gw_relay_t *relay;
    kernel_state_t kstate;
    double created;       /* wall clock */
    double last_activity; /* monotonic */
    char *kill_ename;
    char *kill_cause;
    zlistx_t *waiters;
    int launch_timer;
    int kernels_started;
    double start_began; /* monotonic: the kernel's launch, or its claim from the pool */
    bool holds_slot; /* one of the server's parallel launch slots */
    bool queued;     /* waiting for a launch slot */
    bool claimed;    /* the kernel starting is a claimed pooled one */
    bool pooled;     /* kernel is a claimed pooled one, adopted by gw_conv_start */
    gw_conv_close_fn *close_later; /* the table's (gw_core.c) */
    void *table;                   /* its argument */
};

/* What the relay asks of its conversation (gw_relay_owner_t). */
static void gw_conv_kernel_start (gw_conv_t *self);
static void gw_conv_kernel_ready (gw_conv_t *self);
static void gw_conv_kill_kernel (gw_conv_t *self, const char *ename, const char *cause);
static void gw_conv_request_close (gw_conv_t *self);

const char *
gw_conv_id (const gw_conv_t *self)
{
    return self->id;
}
gw_server_t *
gw_conv_server (const gw_conv_t *self)
{
    return self->server;
}
const char *
gw_conv_kernel_id (const gw_conv_t *self)
{
    return self->kernel_id;
}
gw_peer_t *
gw_conv_attach (gw_conv_t *self, const gw_front_fns_t *fns, void *arg)
{
    return gw_peers_attach (gw_relay_peers (self->relay), fns, arg);
}
void *
gw_conv_find_front (gw_conv_t *self, const gw_front_fns_t *fns)
{
    return gw_peers_find (gw_relay_peers (self->relay), fns);
}
const char *
gw_conv_workspace (const gw_conv_t *self)
{
    return self->workspace;
}
static const gw_policy_t *
gw_conv_policy (const gw_conv_t *self)
{
    return &self->policy;
}
static gw_launch_t *
gw_conv_launch (gw_conv_t *self)
{
    return gw_kernel_launch_of (self->kernel);
}
static bool
gw_conv_kernel_dead (const gw_conv_t *self)
{
    return self->kstate == K_DEAD;
}
static void
gw_conv_touch (gw_conv_t *self)
{
    self->last_activity = gw_clock_mono ();
}

static const json_t *
gw_conv_tool (const gw_conv_t *self, const char *name)
{
    return gw_tools_find (self->tools, name);
}

void
gw_conv_set_tools (gw_conv_t *self, json_t *tools)
{
    if (json_equal (self->tools, tools))
        return;
    json_decref (self->tools);
    self->tools = json_incref (tools);
    /* a kernel starting from now gets them in its settings; one that runs
       or is already starting is told */
    if (self->kstate != K_DEAD)
        gw_relay_configure_tools (self->relay, tools);
}

static char *
path_join (const char *a, const char *b)
{
    return wire_xasprintf ("%s/%s", a, b);
}

static void
waiters_notify (gw_conv_t *self, bool ok, const char *errmsg)
{
    waiter_t *w;
    while ((w = zlistx_detach (self->waiters, NULL))) {
        w->fn (self, ok, errmsg, w->arg);
        free (w);
    }
}

/* A claimed pooled kernel counts as ready for the open reply: it is
   confined and answered the pool's probe already. The relay's own handshake
   with it (~3 ms) then overlaps the client's connect, and requests that
   arrive before it ends wait in the relay's backlog; a kernel that dies
   meanwhile fails them as any kernel death does. */
void
gw_conv_when_ready (gw_conv_t *self, gw_conv_ready_fn *fn, void *arg)
{
    if (self->kstate == K_RUNNING || (self->kstate == K_STARTING && self->claimed)) {
        fn (self, true, NULL, arg);
        return;
    }
    waiter_t *w = wire_xcalloc (1, sizeof *w);
    w->fn = fn;
    w->arg = arg;
    zlistx_add_end (self->waiters, w);
    /* a dead kernel is replaced on demand: a host that reattaches after
       its kernel died gets a fresh one, like its next request would */
    if (self->kstate == K_DEAD)
        gw_conv_kernel_start (self);
}

static void
launch_timer_stop (gw_conv_t *self)
{
    if (self->launch_timer)
        gw_timer_end (gw_server_loop (self->server), self->launch_timer);
    self->launch_timer = 0;
}

/* ---- launch slots (gw_slots.c) ------------------------------------------- */

static void kernel_launch (gw_conv_t *self);

static void
slot_release (gw_conv_t *self)
{
    if (self->queued)
        gw_slots_cancel (gw_server_slots (self->server), self);
    self->queued = false;
    if (!self->holds_slot)
        return;
    self->holds_slot = false;
    gw_slots_release (gw_server_slots (self->server));
}

/* Our turn came: a slot is ours. */
static void
on_slot (void *arg)
{
    gw_conv_t *self = arg;
    self->queued = false;
    self->holds_slot = true;
    kernel_launch (self);
}

/* The kernel could not be started: nothing runs, every waiter is told why. */
static void
kernel_failed (gw_conv_t *self, const char *reason)
{
    launch_timer_stop (self);
    slot_release (self);
    gw_log ("kernel_failed", "{s:s, s:s}", "conversation", self->id, "reason", reason);
    gw_kernel_end (self->kernel);
    self->kstate = K_DEAD;
    gw_relay_kernel_detach (self->relay, gw_error_name (GW_E_KERNEL_START_FAILED), reason, true);
    gw_relay_event (self->relay, GW_EVENT_KERNEL_DIED, reason);
    waiters_notify (self, false, reason);
}

static void
on_launch_status (gw_launch_t *launch, void *arg)
{
    gw_conv_t *self = arg;
    if (gw_launch_state (launch) != GW_LAUNCH_CONFINED) {
        kernel_failed (self, gw_launch_error (launch));
        return;
    }
    json_t *layers = json_object_get (gw_launch_status (launch), LAUNCH_STATUS_LAYERS);
    if (layers) {
        char by[200];
        snprintf (by, sizeof by, "the kernel of conversation %s", self->id);
        gw_server_set_layers (self->server, layers, by, gw_launch_kernel_pid (launch), -1);
    }
    /* from memory, never read back from the run dir: the kernel owns it */
    char *errmsg = NULL;
    int rc = gw_relay_kernel_attach (self->relay, gw_kernel_run_dir (self->kernel), gw_kernel_conn (self->kernel),
                                     &errmsg);
    if (rc < 0) {
        kernel_failed (self, errmsg ? errmsg : "cannot connect to the kernel");
        free (errmsg);
        return;
    }
    /* K_STARTING until the relay's handshake: gw_conv_kernel_ready */
}

static void
gw_conv_kernel_ready (gw_conv_t *self)
{
    launch_timer_stop (self);
    slot_release (self);
    self->kstate = K_RUNNING;
    self->last_activity = gw_clock_mono (); /* idle time counts from a usable kernel */
    gw_metrics_kernel_started (self->claimed, self->last_activity - self->start_began);
    gw_log ("kernel_start", "{s:s, s:i, s:i}", "conversation", self->id, "pid",
            (int) gw_launch_kernel_pid (gw_conv_launch (self)), "launcher_pid",
            (int) gw_launch_pid (gw_conv_launch (self)));
    gw_relay_event (self->relay, GW_EVENT_KERNEL_READY, NULL);
    waiters_notify (self, true, NULL);
}

/* Kernelspec mode: the front end started this process for one kernel, so
   it ends with it, answering nothing, as ipykernel's process does: the
   front end sees a dead kernel its own way (nbclient's DeadKernelError,
   the notebook's restart dialog) instead of a fresh kernel that silently
   lost its variables. What the kernel sent before it died still leaves
   (the client sockets' linger in zsys_shutdown); the state dir is the
   reaper's (gw_notebook.c). */
static void
kernel_mode_died (gw_conv_t *self, gw_launch_t *launch)
{
    gw_log ("kernel_exit", "{s:s, s:s, s:s}", "conversation", self->id, "status", gw_launch_cause (launch), "cause",
            "the kernel died; kernelspec mode exits with it");
    gw_log_close ();
    zsys_shutdown ();
    _exit (1);
}

/* A kernel that died (the memory limit, a kill -9) drops its connections
   before its launcher has ended (the waiter reaps the sandbox, reads the
   OOM count and removes the cgroup first, which on a loaded host can
   outlast the drop's grace): the drop's kill (gw_kernel_link.c) named a
   guess, which the launcher's exit replaces. */
static void
kill_cause_correct (gw_conv_t *self, const gw_launch_t *launch)
{
    if (self->kill_ename && streq (self->kill_ename, gw_error_name (GW_E_KERNEL_DIED))
        && (gw_launch_found_dead (launch) || gw_launch_out_of_memory (launch))) {
        free (self->kill_ename), free (self->kill_cause);
        self->kill_ename = self->kill_cause = NULL;
    }
}

static void
on_launch_exit (gw_launch_t *launch, void *arg)
{
    gw_conv_t *self = arg;
    if (self->kstate == K_DEAD)
        return; /* a start failure, already handled by on_launch_status */
    if (self->kstate == K_STARTING) {
        char tail[GW_LAUNCH_TAIL_SIZE];
        gw_launch_output_tail (launch, tail, sizeof tail);
        char *reason = wire_xasprintf ("the kernel ended before it answered (%s)%s%s; see %s", gw_launch_cause (launch),
                                       tail[0] ? "; its last output: " : "", tail, self->log_path);
        kernel_failed (self, reason);
        free (reason);
        return;
    }
    if (gw_server_kernel_mode (self->server))
        kernel_mode_died (self, launch);
    kill_cause_correct (self, launch);
    char cause[512];
    const char *ename = self->kill_ename ? self->kill_ename : gw_error_name (GW_E_KERNEL_DIED);
    if (self->kill_cause)
        snprintf (cause, sizeof cause, "%s", self->kill_cause);
    else
        snprintf (cause, sizeof cause, "the kernel died (%s); the next request starts a fresh kernel, variables are lost",
                  gw_launch_cause (launch));
    gw_log ("kernel_exit", "{s:s, s:s, s:s}", "conversation", self->id, "status", gw_launch_cause (launch), "cause",
            cause);
    gw_metrics_kernel_died (self->kill_ename, gw_launch_cause (launch));
    self->kstate = K_DEAD;
    /* detached while the launch is still ours: the replies' metadata.kennel
       take its cause (kernel_ended) */
    gw_relay_kernel_detach (self->relay, ename, cause, true);
    gw_relay_event (self->relay, GW_EVENT_KERNEL_DIED, cause);
    gw_kernel_end (self->kernel);
    free (self->kill_ename), free (self->kill_cause);
    self->kill_ename = self->kill_cause = NULL;
}

static int
on_launch_timeout (zloop_t *loop, int timer_id, void *arg)
{
    gw_conv_t *self = arg;
    self->launch_timer = 0;
    char reason[128];
    snprintf (reason, sizeof reason, "the launcher sent no status line within %g s",
              self->config->launch_timeout);
    kernel_failed (self, reason);
    return 0;
}

/* A launch that sends no status line in time has failed. */
static void
launch_timer_start (gw_conv_t *self)
{
    size_t ms = (size_t) (self->config->launch_timeout * 1000);
    self->launch_timer = gw_timer_start (gw_server_loop (self->server), ms, 1, on_launch_timeout, self);
}

static int make_dir (const char *path, mode_t mode, char **errmsg);

/* Starts a kernel now if a launch slot is free, else when one is. */
static void
gw_conv_kernel_start (gw_conv_t *self)
{
    self->kstate = K_STARTING;
    self->claimed = false;
    if (self->holds_slot) {
        kernel_launch (self);
        return;
    }
    if (self->queued)
        return;
    if (gw_slots_take (gw_server_slots (self->server), on_slot, self)) {
        self->holds_slot = true;
        kernel_launch (self);
        return;
    }
    self->queued = true;
}

/* Removes a directory a kernel could write, off the loop: it is moved into
   state/graveyard at once (a conversation opened later with the same id
   never finds it) and emptied by the remover's thread (gw_remove.c). A run
   dir's tmpfs (64 inodes at most) is unmounted here: a mount point cannot
   be renamed. */
static void
conv_dir_remove (gw_conv_t *self, const char *path)
{
    gw_quota_unmount (path);
    if (gw_remover_bury (gw_server_remover (self->server), path) < 0)
        gw_log ("remove_failed", "{s:s, s:s, s:s, s:s}", "conversation", self->id, "path", path, "reason",
                strerror (errno), "outcome", "left in place: cannot move it into the graveyard");
}

/* The previous kernel: its process gone (if not yet), its run dir removed. */
static void
kernel_forget (gw_conv_t *self)
{
    if (!self->kernel)
        return;
    gw_kernel_end (self->kernel);
    conv_dir_remove (self, gw_kernel_run_dir (self->kernel));
    gw_kernel_destroy (&self->kernel);
}

/* A fresh run dir, kernel key and kernel.json; the launcher started. The
   previous run dir belonged to a kernel (which may still be dying) and is
   removed, never reused, so nothing it left there (a symlink named
   kernel.json) can redirect the gateway. */
static void
kernel_launch (gw_conv_t *self)
{
    char *errmsg = NULL;
    kernel_forget (self);
    self->kernel = gw_kernel_new (self->config, self->runs, self->kernel_name, &errmsg);
    if (!self->kernel) {
        kernel_failed (self, errmsg ? errmsg : "cannot create the run dir");
        free (errmsg);
        return;
    }
    const gw_config_t *config = self->config;
    json_t *spec = gw_kernel_spec (config, self->kernel_name, &self->policy, self->tools, self->workspace,
                                   gw_kernel_run_dir (self->kernel));
    gw_zygote_apply (gw_server_zygote (self->server), spec);
    int rc = gw_kernel_launch (self->kernel, gw_server_loop (self->server), config->launcher, spec, self->log_path,
                               on_launch_status, on_launch_exit, self, &errmsg);
    json_decref (spec);
    if (rc < 0) {
        kernel_failed (self, errmsg ? errmsg : "launch failed");
        free (errmsg);
        return;
    }
    self->kernels_started++;
    self->start_began = gw_clock_mono ();
    if (self->kernels_started > 1) {
        gw_relay_announce_starting (self->relay);
        gw_relay_event (self->relay, GW_EVENT_KERNEL_STARTING, NULL);
    }
    launch_timer_start (self);
    gw_log ("kernel_launch", "{s:s, s:i}", "conversation", self->id, "launcher_pid",
            (int) gw_launch_pid (gw_conv_launch (self)));
}

/* The sandbox's host uid opens the workspace and run dir by path, so the
   directories above them are 0711 (traversable, not listable); the leaves
   are 0700 and handed to that uid by the launcher. */
static int
make_dir (const char *path, mode_t mode, char **errmsg)
{
    if (gw_fs_make_dir (path, mode, false) < 0) {
        *errmsg = wire_xasprintf ("cannot create %s: %s", path, strerror (errno));
        return -1;
    }
    return 0;
}

/* ---- the warm pool's side -------------------------------------------------
   A pooled kernel fits a conversation whose sandbox and settings are the
   defaults (gw_pool_fits). Its directory (state/pool/<random>: workspace,
   kernel.log) is renamed to the conversation's: the sandbox bound the
   workspace directory itself, not its path, so the kernel keeps seeing it
   at /workspace, and the launcher's log fd follows the file. A conversation
   whose directory already exists (a workspace kept at close) starts cold. */

static bool
warm_claim (gw_conv_t *self, bool pooled)
{
    struct stat st;
    char *dir = NULL;
    gw_pool_t *pool = gw_server_pool (self->server);
    if (!pooled || !pool || !gw_pool_fits (self->config, self->kernel_name, &self->policy)
        || lstat (self->dir, &st) == 0 || !(self->kernel = gw_pool_claim (pool, &dir)))
        return false;
    if (rename (dir, self->dir) < 0) {
        gw_log ("warning", "{s:s, s:s, s:s}", "conversation", self->id, "what",
                "cannot adopt a pooled kernel's directory", "reason", strerror (errno));
        kernel_forget (self);
        conv_dir_remove (self, dir);
    }
    free (dir);
    self->pooled = self->kernel != NULL;
    return self->pooled;
}

/* The kernel is ours from here: its events come to us, the relay's
   handshake makes it ready, and kennel_configure_request (queued before
   anything of the client's) binds the tools and tool timeout. */
static void
warm_adopt (gw_conv_t *self)
{
    double age = gw_clock_mono () - gw_kernel_started (self->kernel);
    gw_kernel_adopt (self->kernel, on_launch_status, on_launch_exit, self);
    self->kstate = K_STARTING;
    self->claimed = true;
    self->kernels_started = 1;
    self->start_began = gw_clock_mono ();
    launch_timer_start (self);
    gw_log ("kernel_claimed", "{s:s, s:i, s:f}", "conversation", self->id, "pid",
            (int) gw_launch_kernel_pid (gw_conv_launch (self)), "pool_age", age);
    double default_timeout = self->config->defaults.tool_timeout;
    if (json_array_size (self->tools) > 0 || self->policy.tool_timeout != default_timeout)
        gw_relay_configure (self->relay, self->tools, self->policy.tool_timeout);
    on_launch_status (gw_conv_launch (self), self);
}

static const gw_relay_owner_t relay_owner = {
    .id = gw_conv_id, .config = gw_conv_config, .policy = gw_conv_policy, .workspace = gw_conv_workspace,
    .tool = gw_conv_tool, .launch = gw_conv_launch, .kernel_dead = gw_conv_kernel_dead,
    .kernel_start = gw_conv_kernel_start, .kernel_ready = gw_conv_kernel_ready, .kill_kernel = gw_conv_kill_kernel,
    .touch = gw_conv_touch, .interrupt = gw_conv_interrupt, .restart = gw_conv_restart,
    .request_close = gw_conv_request_close,
};

gw_conv_t *
gw_conv_new (gw_server_t *server, const char *id, const char *kernel, json_t *tools, const gw_policy_t *policy,
             bool pooled, gw_conv_close_fn *close_later, void *table, char **errmsg)
{
    gw_conv_t *self = wire_xcalloc (1, sizeof *self);
    self->server = server;
    self->config = gw_config_ref (gw_server_config (server));
    self->close_later = close_later;
    self->table = table;
    self->id = wire_xstrdup (id);
    self->kernel_name = wire_xstrdup (kernel ? kernel : "python");
    self->tools = tools ? json_incref (tools) : json_array ();
    gw_policy_copy (&self->policy, policy);
    self->waiters = zlistx_new ();
    self->created = gw_clock_wall (); /* shown as a date, never measured */
    self->last_activity = gw_clock_mono ();
    gw_id_new (gw_server_config (server)->shard, self->kernel_id);
    char *convs = path_join (gw_server_state_dir (server), "conv");
    self->runs = path_join (gw_server_state_dir (server), "run");
    self->dir = path_join (convs, id);
    /* kernelspec mode: the notebook's directory, never mounted over */
    const char *own = gw_server_kernel_workspace (server);
    self->workspace = own ? wire_xstrdup (own) : path_join (self->dir, "workspace");
    self->log_path = path_join (self->dir, "kernel.log");
    int rc = make_dir (convs, 0711, errmsg) < 0 || make_dir (self->runs, 0711, errmsg) < 0;
    free (convs);
    if (!rc && !warm_claim (self, pooled))
        rc = make_dir (self->dir, 0711, errmsg) < 0
             || (!own
                 && (make_dir (self->workspace, 0700, errmsg) < 0
                     || gw_quota_apply (self->config, self->workspace, self->policy.workspace_bytes,
                                        self->policy.workspace_files, errmsg) < 0));
    if (rc) {
        gw_conv_destroy (&self, true);
        return NULL;
    }
    self->relay = gw_relay_new (self, &relay_owner, server);
    return self;
}

void
gw_conv_start (gw_conv_t *self)
{
    if (self->pooled)
        warm_adopt (self);
    else
        gw_conv_kernel_start (self);
    self->pooled = false;
}

void
gw_conv_destroy (gw_conv_t **self_p, bool keep_workspace)
{
    gw_conv_t *self = *self_p;
    if (!self)
        return;
    launch_timer_stop (self);
    slot_release (self);
    gw_kernel_end (self->kernel);
    waiters_notify (self, false, "the conversation was closed");
    zlistx_destroy (&self->waiters);
    gw_relay_destroy (&self->relay);
    kernel_forget (self);
    if (!keep_workspace && self->dir)
        conv_dir_remove (self, self->dir); /* the workspace's tmpfs goes with it */
    else if (self->log_path)
        gw_launch_log_remove (self->log_path);
    free (self->id);
    free (self->kernel_name);
    json_decref (self->tools);
    gw_policy_clear (&self->policy);
    free (self->dir);
    free (self->workspace);
    free (self->runs);
    free (self->log_path);
    free (self->kill_ename);
    free (self->kill_cause);
    gw_config_destroy (&self->config);
    free (self);
    *self_p = NULL;
}

void
gw_conv_restart (gw_conv_t *self, const char *reason)
{
    gw_log ("restart", "{s:s, s:s}", "conversation", self->id, "reason", reason);
    launch_timer_stop (self);
    gw_kernel_end (self->kernel);
    char cause[256];
    snprintf (cause, sizeof cause, "the kernel was restarted (%s); variables are lost", reason);
    gw_relay_kernel_detach (self->relay, gw_error_name (GW_E_KERNEL_RESTARTED), cause, true);
    free (self->kill_ename), free (self->kill_cause);
    self->kill_ename = self->kill_cause = NULL;
    gw_conv_kernel_start (self);
}

int
gw_conv_interrupt (gw_conv_t *self)
{
    gw_launch_t *launch = gw_conv_launch (self);
    return launch && self->kstate == K_RUNNING ? gw_launch_signal (launch, SIGINT) : -1;
}

static void
gw_conv_kill_kernel (gw_conv_t *self, const char *ename, const char *cause)
{
    if (!gw_conv_launch (self) || self->kstate != K_RUNNING)
        return;
    free (self->kill_ename), free (self->kill_cause);
    self->kill_ename = wire_xstrdup (ename);
    self->kill_cause = wire_xstrdup (cause);
    gw_launch_kill (gw_conv_launch (self));
}

static void
gw_conv_request_close (gw_conv_t *self)
{
    /* after the handler that asked returns: it still uses the relay */
    self->close_later (self->table, self->id, "shutdown_request");
}

/* Why the client's executions end, in its words: the close request's
   reason (gw_server_close_conv's why) says who closed. */
void
gw_conv_closing (gw_conv_t *self, const char *why)
{
    char cause[256];
    if (streq (why, "close_request"))
        snprintf (cause, sizeof cause, "the conversation was closed by the host; the kernel is gone");
    else if (streq (why, "idle"))
        snprintf (cause, sizeof cause, "the conversation was culled after %g s idle; the kernel is gone",
                  self->policy.idle_ttl);
    else if (streq (why, "shutdown"))
        snprintf (cause, sizeof cause, "the gateway shut down; the kernel is gone");
    else if (streq (why, "shutdown_request"))
        snprintf (cause, sizeof cause, "a client's shutdown_request closed the conversation; the kernel is gone");
    else
        snprintf (cause, sizeof cause, "the conversation was closed (%.100s); the kernel is gone", why);
    gw_relay_close (self->relay, why, cause);
}

bool
gw_conv_idle_expired (const gw_conv_t *self, double now)
{
    return self->policy.idle_ttl != GW_UNLIMITED && gw_relay_pending (self->relay) == 0 && self->kstate != K_STARTING
           && now - self->last_activity > self->policy.idle_ttl;
}

const char *
gw_conv_state (const gw_conv_t *self)
{
    return self->kstate == K_STARTING ? "starting"
           : self->kstate == K_DEAD   ? "dead"
           : gw_relay_pending (self->relay) ? "busy"
                                            : "idle";
}

int
gw_conv_pending (const gw_conv_t *self)
{
    return gw_relay_pending (self->relay);
}

void
gw_conv_announce_stopping (gw_conv_t *self)
{
    gw_relay_announce_dead (self->relay);
}

void
gw_conv_announce_draining (gw_conv_t *self, double grace)
{
    gw_relay_announce_draining (self->relay, grace);
}

const char *
gw_conv_session (const gw_conv_t *self)
{
    return gw_relay_session (self->relay);
}

const gw_config_t *
gw_conv_config (const gw_conv_t *self)
{
    return self->config;
}

json_t *
gw_conv_list_entry (const gw_conv_t *self)
{
    double cpu = 0;
    int64_t rss = 0, hwm = 0;
    gw_launch_t *launch = gw_kernel_launch_of (self->kernel);
    pid_t pid = launch && self->kstate == K_RUNNING ? gw_launch_kernel_pid (launch) : 0;
    gw_proc_usage (pid, &cpu, &rss, &hwm);
    int64_t ws_bytes, ws_files;
    bool measured = gw_quota_usage (self->workspace, &ws_bytes, &ws_files);
    const char *state = gw_conv_state (self);
    char created[40], last[40];
    gw_iso_time (self->created, created);
    gw_iso_time (gw_clock_wall_of (self->last_activity), last);
    json_t *entry = json_pack ("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:f}", "conversation_id", self->id,
                               "kernel", self->kernel_name, "state", state, "created", created, "last_activity", last,
                               "executions", gw_relay_executions (self->relay), "pid", (int) pid, "rss_bytes",
                               (json_int_t) rss, "cpu_seconds", cpu);
    if (*self->policy.kernelspec) /* the config's kernelspec it was opened with */
        json_object_set_new (entry, "kernelspec", json_string (self->policy.kernelspec));
    /* a workspace without its tmpfs is not walked here: that is the loop */
    if (measured) {
        json_object_set_new (entry, "workspace_bytes", json_integer ((json_int_t) ws_bytes));
        json_object_set_new (entry, "workspace_files", json_integer ((json_int_t) ws_files));
    }
    return entry;
}
