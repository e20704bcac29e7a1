/*  gw_core.c - the core (gw_core.h): the conversation table, private to
    this file, open with the request's checks, find by conversation or
    kernel id, close, restart, interrupt, count, list, visit. The fronts
    and the ops files call these; the server only makes and ends it.
*/
#include "gw_core.h"
#include "gw_error.h"
#include "gw_capacity.h"
#include "gw_config.h"
#include "gw_conv.h"
#include "gw_log.h"
#include "gw_ops.h"
#include "gw_server_access.h"
#include "gw_timer.h"
#include "gw_tools.h"
#include "gw_util.h"
#include "wire.h"

#include <string.h>

struct gw_core {
    gw_server_t *server;     /* the services a conversation uses */
    zhashx_t *conversations; /* id -> gw_conv_t* (not owning: closed by gw_core_close) */
    zhashx_t *kernel_ids;    /* kernel id -> gw_conv_t* */
};

gw_core_t *
gw_core_new (gw_server_t *server)
{
    gw_core_t *self = wire_xcalloc (1, sizeof *self);
    self->server = server;
    self->conversations = zhashx_new ();
    self->kernel_ids = zhashx_new ();
    return self;
}

void
gw_core_destroy (gw_core_t **self_p)
{
    gw_core_t *self = *self_p;
    if (!self)
        return;
    zlistx_t *ids = zhashx_keys (self->conversations);
    for (char *id = zlistx_first (ids); id; id = zlistx_next (ids))
        gw_core_close (self, id, false, "shutdown");
    zlistx_destroy (&ids);
    zhashx_destroy (&self->conversations);
    zhashx_destroy (&self->kernel_ids);
    free (self);
    *self_p = NULL;
}

static void
error_set (gw_core_error_t *err, const char *ename, char *evalue)
{
    err->ename = ename;
    err->evalue = evalue;
}

gw_conv_t *
gw_core_find (gw_core_t *self, const char *id)
{
    return zhashx_lookup (self->conversations, id);
}

gw_conv_t *
gw_core_find_kernel (gw_core_t *self, const char *kernel_id)
{
    return zhashx_lookup (self->kernel_ids, kernel_id);
}

int
gw_core_count (const gw_core_t *self)
{
    return (int) zhashx_size (self->conversations);
}

void
gw_core_visit (gw_core_t *self, gw_core_visit_fn *fn, void *arg)
{
    for (gw_conv_t *conv = zhashx_first (self->conversations); conv; conv = zhashx_next (self->conversations))
        fn (conv, arg);
}

void
gw_core_close_idle (gw_core_t *self, double now)
{
    zlistx_t *expired = zlistx_new ();
    zlistx_set_destructor (expired, (zlistx_destructor_fn *) zstr_free);
    for (gw_conv_t *conv = zhashx_first (self->conversations); conv; conv = zhashx_next (self->conversations))
        if (gw_conv_idle_expired (conv, now))
            zlistx_add_end (expired, wire_xstrdup (gw_conv_id (conv)));
    for (char *id = zlistx_first (expired); id; id = zlistx_next (expired))
        gw_core_close (self, id, false, "idle");
    zlistx_destroy (&expired);
}

/* A conversation's way to ask for its close (gw_conv_close_fn). */
static void
close_later_fn (void *core, const char *id, const char *why)
{
    gw_core_close_later (core, id, why);
}

gw_conv_t *
gw_core_open_checked (gw_core_t *self, const char *id, const char *kernel, json_t *tools,
                      const gw_policy_t *policy, bool pooled, gw_core_attach_fn *attach, void *arg,
                      char **errmsg)
{
    gw_conv_t *conv = gw_conv_new (self->server, id, kernel, tools, policy, pooled, close_later_fn, self, errmsg);
    if (conv && attach && attach (conv, arg, errmsg) < 0)
        gw_conv_destroy (&conv, false);
    if (!conv)
        return NULL;
    zhashx_insert (self->conversations, id, conv);
    zhashx_insert (self->kernel_ids, gw_conv_kernel_id (conv), conv);
    gw_conv_start (conv);
    return conv;
}

/* A tool list from a request, checked; NULL with *err. */
static json_t *
tools_checked (const json_t *tools, gw_core_error_t *err)
{
    char *errmsg = NULL;
    json_t *checked = gw_tools_validate (tools, &errmsg);
    if (!checked)
        error_set (err, gw_error_name (GW_E_INVALID_TOOLS), errmsg ? errmsg : wire_xstrdup ("invalid tool list"));
    return checked;
}

/* A host that restarts reattaches to what it had; tools given again
   replace the declared ones, in the gateway's check and, through
   kennel_configure_request, in the running kernel. */
static gw_conv_t *
reattach (gw_conv_t *conv, const json_t *tools, gw_core_error_t *err)
{
    if (!tools)
        return conv;
    json_t *checked = tools_checked (tools, err);
    if (!checked)
        return NULL;
    gw_conv_set_tools (conv, checked);
    json_decref (checked);
    return conv;
}

/* Whether one more conversation fits the config and the process's limits. */
static bool
room_left (gw_core_t *self, gw_core_error_t *err)
{
    gw_server_t *server = self->server;
    if (gw_core_count (self) >= gw_server_config (server)->max_conversations) {
        error_set (err, gw_error_name (GW_E_TOO_MANY_CONVERSATIONS),
                   wire_xasprintf ("the gateway already holds its maximum of %d conversations",
                                   gw_server_config (server)->max_conversations));
        return false;
    }
    char *full = NULL;
    if (gw_capacity_check (gw_server_capacity (server), gw_core_count (self), &full) < 0) {
        error_set (err, gw_error_name (GW_E_CAPACITY_ERROR), full ? full : wire_xstrdup ("no room for another conversation"));
        return false;
    }
    return true;
}

gw_conv_t *
gw_core_open (gw_core_t *self, const char *id, const json_t *request, gw_core_attach_fn *attach, void *arg,
              bool *created, gw_core_error_t *err)
{
    gw_server_t *server = self->server;
    err->ename = NULL;
    err->evalue = NULL;
    *created = false;
    const json_t *tools = json_object_get (request, "tools");
    gw_conv_t *conv = gw_core_find (self, id);
    if (conv)
        return reattach (conv, tools, err);
    if (gw_drain_active (server)) {
        error_set (err, gw_error_name (GW_E_GATEWAY_DRAINING),
                   wire_xstrdup (gw_error_text (GW_E_GATEWAY_DRAINING)));
        return NULL;
    }
    const char *layer;
    const char *startup_error = gw_server_startup_error (server, &layer);
    if (startup_error) {
        error_set (err, gw_error_name (GW_E_CONFINEMENT_UNAVAILABLE),
                   wire_xasprintf ("this host cannot confine kernels as configured: the start-up probe failed "
                                   "at %s: %s (fix it and restart kennel)",
                                   layer, startup_error));
        return NULL;
    }
    const gw_config_t *config = gw_server_config (server);
    json_t *kernel = json_object_get (request, "kernel"), *kernelspec = json_object_get (request, "kernelspec");
    const char *spec_name = kernelspec ? gw_text (kernelspec) : NULL;
    const json_t *spec = spec_name ? gw_config_kernelspec (config, spec_name) : NULL;
    if (kernelspec && !spec) {
        error_set (err, gw_error_name (GW_E_UNKNOWN_KERNEL), wire_xstrdup ("kernelspec must name one of the config's kernelspecs"));
        return NULL;
    }
    const char *kname = kernel ? gw_text (kernel) : spec ? json_string_value (json_object_get (spec, "kernel")) : "python";
    if (!kname || (!streq (kname, "python") && !json_object_get (config->kernels, kname))) {
        error_set (err, gw_error_name (GW_E_UNKNOWN_KERNEL),
                   wire_xstrdup ("kernel must be \"python\" or a kernel named in the config file"));
        return NULL;
    }
    if (spec && !streq (kname, json_string_value (json_object_get (spec, "kernel")))) {
        error_set (err, gw_error_name (GW_E_UNKNOWN_KERNEL), wire_xasprintf ("kernelspec %s starts kernel %s, not %s", spec_name,
                                                         json_string_value (json_object_get (spec, "kernel")), kname));
        return NULL;
    }
    json_t *checked = tools ? tools_checked (tools, err) : NULL;
    if (tools && !checked)
        return NULL;
    gw_policy_t policy;
    char *errmsg = NULL;
    if (!room_left (self, err))
        conv = NULL;
    else if (gw_policy_lower_spec (config, spec_name, json_object_get (request, "policy"), &policy, &errmsg) < 0)
        error_set (err, gw_error_name (GW_E_POLICY_ERROR), errmsg ? errmsg : wire_xstrdup ("bad policy"));
    else {
        conv = gw_core_open_checked (self, id, kname, checked, &policy, true, attach, arg, &errmsg);
        gw_policy_clear (&policy);
        if (!conv)
            error_set (err, gw_error_name (GW_E_OPEN_FAILED), errmsg ? errmsg : wire_xstrdup ("the conversation could not be created"));
        *created = conv != NULL;
    }
    json_decref (checked);
    return conv;
}

void
gw_core_close (gw_core_t *self, const char *id, bool keep_workspace, const char *why)
{
    gw_conv_t *conv = gw_core_find (self, id);
    if (!conv)
        return;
    gw_server_t *server = self->server;
    zhashx_delete (self->kernel_ids, gw_conv_kernel_id (conv));
    zhashx_delete (self->conversations, id);
    gw_log ("close", "{s:s, s:s, s:b}", "conversation", id, "reason", why, "keep_workspace", keep_workspace);
    if (gw_server_kernel_mode (server))
        gw_server_stop (server); /* first: what the close tells waiters is not a failure */
    gw_conv_closing (conv, why);
    gw_conv_destroy (&conv, keep_workspace);
}

typedef struct {
    gw_core_t *core;
    char *id;
    char *why;
} close_later_t;

static int
on_close_later (zloop_t *loop, int timer_id, void *arg)
{
    close_later_t *c = arg;
    gw_core_close (c->core, c->id, false, c->why);
    free (c->id);
    free (c->why);
    free (c);
    return 0;
}

void
gw_core_close_later (gw_core_t *self, const char *id, const char *why)
{
    close_later_t *c = wire_xcalloc (1, sizeof *c);
    c->core = self;
    c->id = wire_xstrdup (id);
    c->why = wire_xstrdup (why);
    gw_timer_start (gw_server_loop (self->server), 1, 1, on_close_later, c);
}

const char *
gw_core_restart (gw_conv_t *conv, const char *reason)
{
    if (gw_drain_active (gw_conv_server (conv))) {
        gw_log_limited ("drain/refused", "drain_refused", "{s:s, s:s}", "conversation", gw_conv_id (conv), "msg_type",
                        reason);
        return GW_DRAIN_NO_RESTART;
    }
    gw_conv_restart (conv, reason);
    return NULL;
}

int
gw_core_interrupt (gw_conv_t *conv)
{
    return gw_conv_interrupt (conv);
}

static void
list_append (gw_conv_t *conv, void *list)
{
    json_array_append_new (list, gw_conv_list_entry (conv));
}

json_t *
gw_core_list (gw_core_t *self)
{
    json_t *list = json_array ();
    gw_core_visit (self, list_append, list);
    return list;
}
