/*  gw_control.c - the control API (docs/PROTOCOL.md section 3, "Control socket").

    Requests are Jupyter messages signed with the gateway key; a bad one is
    dropped and logged, a well-formed but invalid one gets an error reply
    naming what is wrong. conversation_open and conversation_restart are
    answered once the kernel is confined (or could not be), so a refusal of
    the sandbox reaches the caller with its reason.
*/
#include "gw.h"
#include "config.h"

#include <string.h>

static void
reply_send (gw_server_t *self, wire_msg_t *req, json_t *content)
{
    char type[128];
    const char *req_type = wire_msg_type (req);
    size_t len = strlen (req_type);
    if (len > 8 && streq (req_type + len - 8, "_request") && len < sizeof type)
        snprintf (type, sizeof type, "%.*s_reply", (int) (len - 8), req_type);
    else
        snprintf (type, sizeof type, "error_reply");
    wire_msg_t *reply = wire_msg_new (self->session, type, req);
    wire_msg_set_content (reply, content);
    wire_msg_send (reply, self->control, self->key);
    gw_io_sent (self->io, self->control); /* often sent from a launch's callback, not the control handler */
    wire_msg_destroy (&reply);
}

static void
reply_error (gw_server_t *self, wire_msg_t *req, const char *ename, const char *evalue)
{
    gw_log ("control_error", "{s:s, s:s, s:s}", "request", wire_msg_type (req), "ename", ename, "evalue", evalue);
    reply_send (self, req, json_pack ("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", ename, "evalue", evalue,
                                      "traceback"));
}

static void
do_gateway_info (gw_server_t *self, wire_msg_t *req)
{
    json_t *kernels = json_pack ("[s]", "python");
    const char *name;
    json_t *k;
    json_object_foreach (self->config->kernels, name, k)
        json_array_append_new (kernels, json_string (name));
    /* answered only once the start-up probe has ended (gw_server.c): a
       report, or the probe's failure, is always there */
    json_t *layers = self->last_layers ? json_deep_copy (self->last_layers) : json_object ();
    json_t *pool = self->pool ? gw_pool_info (self->pool)
                              : json_pack ("{s:i, s:i, s:i, s:i}", "size", 0, "ready", 0, "starting", 0, "claimed", 0);
    json_t *content = json_pack (
        "{s:s, s:s, s:s, s:s, s:o, s:b, s:o, s:O?, s:o, s:i, s:s, s:b, s:o, s:o, s:o}", "status", "ok", "implementation",
        "kennel", "version", PACKAGE_VERSION, "protocol_version", WIRE_PROTOCOL_VERSION, "kernels", kernels, "ready",
        self->startup_error == NULL, "confinement", layers, "confinement_taken", self->layers_taken, "limits",
        gw_config_limits_json (self->config), "conversations", (int) zhashx_size (self->conversations), "transport",
        self->transport, "curve", self->curve, "warm_pool", pool, "capacity", gw_capacity_json (&self->capacity),
        "fork_server", gw_zygote_info (self->zygote, self->config));
    if (self->startup_error)
        json_object_set_new (content, "startup_error",
                             json_pack ("{s:s, s:s}", "layer", self->startup_layer, "reason", self->startup_error));
    reply_send (self, req, content);
}

static json_t *
open_reply_content (gw_conv_t *conv, bool created)
{
    return json_pack ("{s:s, s:s, s:b, s:o, s:s}", "status", "ok", "conversation_id", gw_conv_id (conv), "created",
                      created, "connection", gw_conv_connection_json (conv), "workspace", gw_conv_workspace (conv));
}

typedef struct {
    gw_server_t *server;
    wire_msg_t *req;
    bool created;
} pending_t;

/* The kernel of a new conversation is confined and attached (or not). */
static void
on_open_ready (gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    pending_t *p = arg;
    if (ok) {
        gw_log ("open", "{s:s, s:b}", "conversation", gw_conv_id (conv), "created", p->created);
        reply_send (p->server, p->req, open_reply_content (conv, p->created));
    }
    else {
        reply_error (p->server, p->req, "KernelStartFailed", errmsg ? errmsg : "the kernel could not be started");
        /* nothing stays behind a refused conversation */
        if (p->created)
            gw_server_close_later (p->server, gw_conv_id (conv), "start failed");
    }
    wire_msg_destroy (&p->req);
    free (p);
}

static void
on_restart_ready (gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    pending_t *p = arg;
    if (ok)
        reply_send (p->server, p->req, json_pack ("{s:s, s:s}", "status", "ok", "conversation_id", gw_conv_id (conv)));
    else
        reply_error (p->server, p->req, "KernelStartFailed", errmsg ? errmsg : "the kernel could not be started");
    wire_msg_destroy (&p->req);
    free (p);
}

static void
defer (gw_server_t *self, gw_conv_t *conv, wire_msg_t **req_p, bool created, gw_conv_ready_fn *fn)
{
    pending_t *p = wire_xcalloc (1, sizeof *p);
    p->server = self;
    p->req = *req_p;
    p->created = created;
    *req_p = NULL;
    gw_conv_when_ready (conv, fn, p);
}

/* id from the content, or an error reply and NULL. Checked on its whole
   JSON length: a NUL inside is refused, never read as the end. */
static const char *
conversation_id (gw_server_t *self, wire_msg_t *req)
{
    const char *id = gw_text (json_object_get (req->content, "conversation_id"));
    if (!id || !gw_conv_id_valid (id)) {
        reply_error (self, req, "InvalidConversationId",
                     "conversation_id must match [A-Za-z0-9._-]{1,128} and not be \".\" or \"..\"");
        return NULL;
    }
    return id;
}

static void
do_open (gw_server_t *self, wire_msg_t **req_p)
{
    wire_msg_t *req = *req_p;
    const char *id = conversation_id (self, req);
    if (!id)
        return;
    gw_conv_t *conv = zhashx_lookup (self->conversations, id);
    if (conv) {
        /* a host that restarts reattaches to what it had; tools given again
           replace the declared ones, in the gateway's check and, through
           kennel_configure_request, in the running kernel */
        json_t *tools = json_object_get (req->content, "tools");
        if (tools) {
            char *errmsg = NULL;
            json_t *checked = gw_tools_validate (tools, &errmsg);
            if (!checked) {
                reply_error (self, req, "InvalidTools", errmsg ? errmsg : "invalid tool list");
                free (errmsg);
                return;
            }
            gw_conv_set_tools (conv, checked);
            json_decref (checked);
        }
        defer (self, conv, req_p, false, on_open_ready);
        return;
    }
    if (self->startup_error) {
        char *evalue = wire_xasprintf ("this host cannot confine kernels as configured: the start-up probe failed "
                                       "at %s: %s (fix it and restart kennel)",
                                       self->startup_layer, self->startup_error);
        reply_error (self, req, "ConfinementUnavailable", evalue);
        free (evalue);
        return;
    }
    json_t *kernel = json_object_get (req->content, "kernel");
    const char *kname = kernel ? gw_text (kernel) : "python";
    if (!kname || (!streq (kname, "python") && !json_object_get (self->config->kernels, kname))) {
        reply_error (self, req, "UnknownKernel", "kernel must be \"python\" or a kernel named in the config file");
        return;
    }
    json_t *tools = NULL;
    if (json_object_get (req->content, "tools")) {
        char *errmsg = NULL;
        tools = gw_tools_validate (json_object_get (req->content, "tools"), &errmsg);
        if (!tools) {
            reply_error (self, req, "InvalidTools", errmsg ? errmsg : "invalid tool list");
            free (errmsg);
            return;
        }
    }
    if ((int) zhashx_size (self->conversations) >= self->config->max_conversations) {
        char evalue[160];
        snprintf (evalue, sizeof evalue, "the gateway already holds its maximum of %d conversations",
                  self->config->max_conversations);
        reply_error (self, req, "TooManyConversations", evalue);
        json_decref (tools);
        return;
    }
    char *full = NULL;
    if (gw_capacity_check (&self->capacity, (int) zhashx_size (self->conversations), &full) < 0) {
        reply_error (self, req, "CapacityError", full ? full : "no room for another conversation");
        free (full);
        json_decref (tools);
        return;
    }
    gw_policy_t policy;
    char *errmsg = NULL;
    if (gw_policy_lower (self->config, json_object_get (req->content, "policy"), &policy, &errmsg) < 0) {
        reply_error (self, req, "PolicyError", errmsg ? errmsg : "bad policy");
        free (errmsg);
        json_decref (tools);
        return;
    }
    conv = gw_conv_new (self, id, kname, tools, &policy, NULL, &errmsg);
    json_decref (tools);
    gw_policy_clear (&policy);
    if (!conv) {
        reply_error (self, req, "OpenFailed", errmsg ? errmsg : "the conversation could not be created");
        free (errmsg);
        return;
    }
    zhashx_insert (self->conversations, id, conv);
    defer (self, conv, req_p, true, on_open_ready);
}

static void
do_close (gw_server_t *self, wire_msg_t *req)
{
    const char *id = conversation_id (self, req);
    if (!id)
        return;
    if (!zhashx_lookup (self->conversations, id)) {
        reply_error (self, req, "NoSuchConversation", "no conversation has this id");
        return;
    }
    json_t *keep = json_object_get (req->content, "keep_workspace");
    if (keep && !json_is_boolean (keep)) {
        reply_error (self, req, "InvalidRequest", "keep_workspace must be true or false");
        return;
    }
    gw_server_close_conv (self, id, json_is_true (keep), "close_request");
    reply_send (self, req, json_pack ("{s:s, s:s}", "status", "ok", "conversation_id", id));
}

static void
do_restart (gw_server_t *self, wire_msg_t **req_p)
{
    const char *id = conversation_id (self, *req_p);
    if (!id)
        return;
    gw_conv_t *conv = zhashx_lookup (self->conversations, id);
    if (!conv) {
        reply_error (self, *req_p, "NoSuchConversation", "no conversation has this id");
        return;
    }
    char *errmsg = NULL;
    gw_conv_restart (conv, "conversation_restart_request", &errmsg);
    free (errmsg);
    defer (self, conv, req_p, false, on_restart_ready);
}

static void
do_list (gw_server_t *self, wire_msg_t *req)
{
    json_t *list = json_array ();
    for (gw_conv_t *conv = zhashx_first (self->conversations); conv; conv = zhashx_next (self->conversations))
        json_array_append_new (list, gw_conv_list_entry (conv));
    reply_send (self, req, json_pack ("{s:s, s:o}", "status", "ok", "conversations", list));
}

int
gw_control_on_message (zloop_t *loop, zsock_t *sock, void *arg)
{
    gw_server_t *self = arg;
    zmsg_t *msg = zmsg_recv (sock);
    if (!msg)
        return 0;
    wire_error_t err;
    /* the peer's routing id (ZeroMQ's, per connection) names the source */
    char source[64] = "control/";
    zframe_t *id = zmsg_first (msg);
    for (size_t i = 0; id && i < zframe_size (id) && i < 16; i++)
        snprintf (source + 8 + 2 * i, 3, "%02x", zframe_data (id)[i]);
    wire_msg_t *req = wire_msg_decode (&msg, self->key, self->replay, &self->limits, &err);
    if (!req) {
        gw_log_limited (source, "bad_message", "{s:s, s:s, s:s, s:s}", "channel", "control", "from", "client",
                        "reason", wire_error_name (err), "detail", wire_strerror (err));
        return 0;
    }
    /* the type on its whole length: "gateway_info_request\u0000x" is no
       request of ours (gw_text.c) */
    const char *type = gw_text (json_object_get (req->header, "msg_type")) ? wire_msg_type (req) : "";
    if (streq (type, "gateway_info_request"))
        do_gateway_info (self, req);
    else if (streq (type, "conversation_open_request"))
        do_open (self, &req);
    else if (streq (type, "conversation_close_request"))
        do_close (self, req);
    else if (streq (type, "conversation_restart_request"))
        do_restart (self, &req);
    else if (streq (type, "conversation_list_request"))
        do_list (self, req);
    else
        reply_error (self, req, "UnknownRequest", "unknown control request type");
    wire_msg_destroy (&req);
    return 0;
}
