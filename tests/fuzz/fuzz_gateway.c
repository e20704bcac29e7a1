/*  fuzz_gateway.c - a gateway built by hand around the real conversation
    table, and the conversation layer replaced (fuzz_gateway.h).
*/
#include "gateway/gw_capacity.h"
#include "gateway/gw_config.h"
#include "gateway/gw_conv.h"
#include "gateway/gw_core.h"
#include "gateway/gw_io.h"
#include "gateway/gw_log.h"
#include "gateway/gw_peers.h"
#include "gateway/gw_pool.h"
#include "gateway/gw_server_private.h"
#include "gateway/gw_timer.h"
#include "gateway/gw_tools.h"
#include "gateway/gw_zygote.h"
#include "wire.h"
#include "fuzz_check.h"
#include "fuzz_gateway.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct gw_conv {
    char *id;
    json_t *tools;
    gw_policy_t policy;
    gw_peers_t *peers;
};

static fuzz_gateway_t s_self;
/* the timer gw_core_close_later started, run once the handler returned */
static zloop_timer_fn *s_timer_fn;
static void *s_timer_arg;

static gw_config_t *
s_config (const char *text)
{
    char path[] = "/tmp/kennel-fuzz-gateway-XXXXXX";
    int fd = mkstemp (path);
    size_t len = strlen (text);
    if (fd < 0 || write (fd, text, len) != (ssize_t) len)
        __builtin_trap ();
    close (fd);
    char *errmsg = NULL;
    gw_config_t *config = gw_config_load (path, &errmsg);
    unlink (path);
    if (!config) {
        fprintf (stderr, "fuzz_gateway: the target's config: %s\n", errmsg);
        __builtin_trap ();
    }
    return config;
}

/* Everything freed at exit, before czmq's own clean-up, so that neither
   LeakSanitizer nor czmq reports what the process kept between inputs. */
static void
s_teardown (void)
{
    gw_server_t *server = s_self.server;
    fuzz_gateway_empty (&s_self);
    zsock_destroy (&server->control);
    gw_io_destroy (&server->io);
    zloop_destroy (&server->loop);
    gw_core_destroy (&server->core);
    wire_key_destroy (&server->key);
    gw_config_destroy (&server->config);
    free (server->transport);
    free (server);
    json_decref (s_self.maxima);
    gw_log_close ();
}

fuzz_gateway_t *
fuzz_gateway_new (const char *config_text)
{
    if (s_self.server)
        __builtin_trap (); /* one a process */
    s_self.tree = fuzz_tree_new (); /* before czmq's threads: a user namespace needs one thread */
    gw_log_open ("/dev/null");
    gw_server_t *server = calloc (1, sizeof *server);
    server->config = s_config (config_text);
    server->loop = zloop_new ();
    server->io = gw_io_new (server->loop);
    server->key = wire_key_new (NULL, "fuzz-key", 8, NULL);
    server->limits = wire_limits_default;
    server->core = gw_core_new (server);
    server->transport = strdup ("ipc");
    server->ready = true;
    snprintf (server->session, sizeof server->session, "fuzz-gateway");
    gw_capacity_init (&server->capacity, server->config);
    s_self.server = server;
    json_t *limits = gw_config_limits_json (server->config);
    s_self.maxima = json_incref (json_object_get (limits, "maxima"));
    json_decref (limits);
    atexit (s_teardown);
    return &s_self;
}

bool
fuzz_gateway_id_ok (const char *id)
{
    size_t n = strlen (id);
    return n >= 1 && n <= 128 && strspn (id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n
           && strcmp (id, ".") != 0 && strcmp (id, "..") != 0;
}

static void
s_no_submit (void *arg, wire_channel_t channel, zmsg_t **msg_p)
{
    (void) arg, (void) channel, (void) msg_p;
    __builtin_trap (); /* no front of these targets submits messages */
}

static gw_conv_t *
s_conv_make (const char *id, json_t *tools, const gw_policy_t *policy)
{
    gw_conv_t *self = calloc (1, sizeof *self);
    self->id = strdup (id);
    self->tools = json_incref (tools);
    gw_policy_copy (&self->policy, policy);
    self->peers = gw_peers_new (self, s_no_submit, NULL, NULL);
    return self;
}

void
fuzz_gateway_open (fuzz_gateway_t *self, const char *id)
{
    gw_policy_t policy;
    if (gw_policy_lower (self->server->config, NULL, &policy, NULL) < 0)
        __builtin_trap (); /* the defaults alone always lower */
    bool new_fails = self->new_fails; /* this one is made whatever the input asks */
    self->new_fails = false;
    char *errmsg = NULL;
    if (!gw_core_open_checked (self->server->core, id, "python", NULL, &policy, false, NULL, NULL, &errmsg))
        __builtin_trap ();
    self->new_fails = new_fails;
    gw_policy_clear (&policy);
}

static void
s_id_add (gw_conv_t *conv, void *ids)
{
    zlistx_add_end (ids, strdup (conv->id));
}

void
fuzz_gateway_empty (fuzz_gateway_t *self)
{
    zlistx_t *ids = zlistx_new ();
    zlistx_set_destructor (ids, (zlistx_destructor_fn *) zstr_free);
    gw_core_visit (self->server->core, s_id_add, ids);
    for (char *id = zlistx_first (ids); id; id = zlistx_next (ids))
        gw_core_close (self->server->core, id, false, "fuzz_reset");
    zlistx_destroy (&ids);
}

void
fuzz_gateway_run_timer (fuzz_gateway_t *self)
{
    (void) self;
    if (!s_timer_fn)
        return;
    zloop_timer_fn *fn = s_timer_fn;
    s_timer_fn = NULL;
    fn (s_self.server->loop, 1, s_timer_arg);
}

/* ---- the conversation layer, replaced ------------------------------------- */

gw_conv_t *
gw_conv_new (gw_server_t *server, const char *id, const char *kernel, json_t *tools, const gw_policy_t *policy,
             bool pooled, gw_conv_close_fn *close_later, void *table, char **errmsg)
{
    (void) pooled;
    (void) close_later;
    (void) table;
    if (!fuzz_gateway_id_ok (id) || (strcmp (kernel, "python") != 0 && !json_object_get (server->config->kernels, kernel)))
        __builtin_trap ();
    json_t *got = gw_policy_to_json (policy);
    fuzz_check_policy (got, s_self.maxima);
    json_decref (got);
    if (tools) {
        char *why = NULL;
        json_t *again = gw_tools_validate (tools, &why);
        if (!json_equal (again, tools))
            __builtin_trap ();
        json_decref (again);
        free (why);
    }
    if (s_self.new_fails) {
        *errmsg = strdup ("the fuzz target refused this conversation");
        return NULL;
    }
    return s_conv_make (id, tools, policy);
}

void
gw_conv_destroy (gw_conv_t **self_p, bool keep_workspace)
{
    (void) keep_workspace;
    gw_conv_t *self = *self_p;
    if (!self)
        return;
    gw_peers_destroy (&self->peers, "closed");
    free (self->id);
    json_decref (self->tools);
    gw_policy_clear (&self->policy);
    free (self);
    *self_p = NULL;
}

gw_peer_t *
gw_conv_attach (gw_conv_t *self, const gw_front_fns_t *fns, void *arg)
{
    return gw_peers_attach (self->peers, fns, arg);
}

void *
gw_conv_find_front (gw_conv_t *self, const gw_front_fns_t *fns)
{
    return gw_peers_find (self->peers, fns);
}

const char *
gw_conv_id (const gw_conv_t *self)
{
    return self->id;
}

gw_server_t *
gw_conv_server (const gw_conv_t *self)
{
    (void) self;
    return s_self.server;
}

bool
gw_conv_idle_expired (const gw_conv_t *self, double now)
{
    (void) self, (void) now;
    return false; /* no idle cull runs in these targets */
}

void
gw_conv_start (gw_conv_t *self)
{
    (void) self; /* no kernel in these targets: gw_conv_when_ready answers for it */
}

const char *
gw_conv_kernel_id (const gw_conv_t *self)
{
    return self->id;
}

void
gw_conv_closing (gw_conv_t *self, const char *why)
{
    /* no execution runs here to end with ConversationClosed; the peers
       hear it as the relay tells them */
    gw_peers_event (self->peers, GW_EVENT_CLOSING, why);
}

int
gw_conv_interrupt (gw_conv_t *self)
{
    (void) self;
    return -1;
}

const char *
gw_conv_workspace (const gw_conv_t *self)
{
    (void) self;
    return s_self.tree->workspace[s_self.workspace];
}

json_t *
gw_conv_list_entry (const gw_conv_t *self)
{
    return json_pack ("{s:s, s:s, s:s, s:s}", "conversation_id", self->id, "kernel", "python", "state", "idle",
                      "last_activity", "2026-01-01T00:00:00.000000Z");
}

void
gw_conv_restart (gw_conv_t *self, const char *reason)
{
    (void) self, (void) reason; /* the reply is the front's: no kernel to replace */
}

/* Answers at once: a front's deferred answer is ready before its handler returns. */
void
gw_conv_when_ready (gw_conv_t *self, gw_conv_ready_fn *fn, void *arg)
{
    fn (self, !s_self.start_fails, s_self.start_fails ? "the fuzz target's kernel did not start" : NULL, arg);
}

void
gw_conv_set_tools (gw_conv_t *self, json_t *tools)
{
    json_decref (self->tools);
    self->tools = json_incref (tools);
}

/* Only gw_core_close_later starts one: run after the handler. */
int
gw_timer_start (zloop_t *loop, size_t delay_ms, size_t times, zloop_timer_fn *handler, void *arg)
{
    (void) loop, (void) delay_ms, (void) times;
    if (s_timer_fn)
        __builtin_trap (); /* one close per request at most */
    s_timer_fn = handler;
    s_timer_arg = arg;
    return 1;
}

json_t *
gw_pool_info (gw_pool_t *self)
{
    (void) self;
    return json_object ();
}

json_t *
gw_zygote_info (const gw_zygote_t *self, const gw_config_t *config)
{
    (void) self, (void) config;
    return json_object ();
}

const char *
gw_zygote_socket (const gw_zygote_t *self)
{
    (void) self;
    return NULL; /* the targets' configs have no fork server */
}

const char *
gw_conv_state (const gw_conv_t *self)
{
    (void) self;
    return "idle";
}
