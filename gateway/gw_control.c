/*  gw_control.c - the control API (docs/PROTOCOL.md section 3, "Control socket").

    Requests are Jupyter messages signed with the gateway key; a bad one is
    dropped and logged, a well-formed but invalid one gets an error reply
    naming what is wrong. conversation_open and conversation_restart are
    answered once the kernel is confined (or could not be), so a refusal of
    the sandbox reaches the caller with its reason. It is a front of the
    core: conversations are opened, closed, restarted and listed through
    gw_core.h, their client sockets are the ZeroMQ front's.
*/
#include "gw_control.h"
#include "gw_capacity.h"
#include "gw_config.h"
#include "gw_conv.h"
#include "gw_core.h"
#include "gw_files.h"
#include "gw_io.h"
#include "gw_log.h"
#include "gw_ops.h"
#include "gw_pool.h"
#include "gw_server_access.h"
#include "gw_util.h"
#include "gw_zmq_front.h"
#include "gw_zygote.h"
#include "wire.h"
#include "config.h"

#include <string.h>

/* buffers: raw frames sent after content (taken), or NULL. */
static void
reply_send_with (gw_server_t *self, wire_msg_t *req, json_t *content, zmsg_t *buffers)
{
    char type[128];
    const char *req_type = wire_msg_type (req);
    size_t len = strlen (req_type);
    if (len > 8 && streq (req_type + len - 8, "_request") && len < sizeof type)
        snprintf (type, sizeof type, "%.*s_reply", (int) (len - 8), req_type);
    else
        snprintf (type, sizeof type, "error_reply");
    wire_msg_t *reply = wire_msg_new (gw_server_session (self), type, req);
    wire_msg_set_content (reply, content);
    if (buffers) {
        zmsg_destroy (&reply->buffers);
        reply->buffers = buffers;
    }
    wire_msg_send (reply, gw_server_control (self), gw_server_key (self));
    /* often sent from a launch's callback, not the control handler */
    gw_io_sent (gw_server_io (self), gw_server_control (self));
    wire_msg_destroy (&reply);
}

static void
reply_send (gw_server_t *self, wire_msg_t *req, json_t *content)
{
    reply_send_with (self, req, content, NULL);
}

static void
reply_error (gw_server_t *self, wire_msg_t *req, const char *ename, const char *evalue)
{
    /* a control peer may send bad requests at will */
    gw_log_limited ("control/error", "control_error", "{s:s, s:s, s:s}", "request", wire_msg_type (req), "ename", ename,
                    "evalue", evalue);
    reply_send (self, req, json_pack ("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", ename, "evalue", evalue,
                                      "traceback"));
}

/* gateway_info's content (docs/PROTOCOL.md section 3): answered only once
   the start-up probe has ended, so a layer report, or the probe's failure,
   is always there. */
static json_t *
info_content (gw_server_t *self)
{
    const gw_config_t *config = gw_server_config (self);
    json_t *kernels = json_pack ("[s]", "python");
    const char *name;
    json_t *k;
    json_object_foreach (config->kernels, name, k)
        json_array_append_new (kernels, json_string (name));
    json_t *last = gw_server_last_layers (self);
    json_t *layers = last ? json_deep_copy (last) : json_object ();
    gw_pool_t *pool = gw_server_pool (self);
    json_t *pool_info = pool ? gw_pool_info (pool)
                             : json_pack ("{s:i, s:i, s:i, s:i}", "size", 0, "ready", 0, "starting", 0, "claimed", 0);
    const char *layer;
    const char *startup_error = gw_server_startup_error (self, &layer);
    json_t *content = json_pack (
        "{s:s, s:s, s:s, s:s, s:o, s:b, s:o, s:O?, s:o, s:i, s:s, s:b, s:o, s:o, s:o}", "status", "ok", "implementation",
        "kennel", "version", PACKAGE_VERSION, "protocol_version", WIRE_PROTOCOL_VERSION, "kernels", kernels, "ready",
        startup_error == NULL, "confinement", layers, "confinement_taken", gw_server_layers_taken (self), "limits",
        gw_config_limits_json (config), "conversations", gw_core_count (gw_server_core (self)), "transport", gw_server_transport (self),
        "curve", gw_server_curve (self), "warm_pool", pool_info, "capacity", gw_capacity_json (gw_server_capacity (self)),
        "fork_server", gw_zygote_info (gw_server_zygote (self), config));
    json_object_set_new (content, "draining", json_boolean (gw_drain_active (self)));
    if (startup_error)
        json_object_set_new (content, "startup_error", json_pack ("{s:s, s:s}", "layer", layer, "reason", startup_error));
    return content;
}

static void
do_gateway_info (gw_server_t *self, wire_msg_t *req)
{
    reply_send (self, req, info_content (self));
}

static json_t *
open_reply_content (gw_conv_t *conv, bool created)
{
    return json_pack ("{s:s, s:s, s:b, s:o, s:s}", "status", "ok", "conversation_id", gw_conv_id (conv), "created",
                      created, "connection", gw_zmq_connection_json (gw_zmq_of (conv)), "workspace",
                      gw_conv_workspace (conv));
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
            gw_core_close_later (gw_server_core (p->server), gw_conv_id (conv), "start failed");
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
    bool created;
    gw_core_error_t err;
    gw_conv_t *conv = gw_core_open (gw_server_core (self), id, req->content, gw_zmq_open, NULL, &created, &err);
    if (!conv) {
        reply_error (self, req, err.ename, err.evalue);
        free (err.evalue);
        return;
    }
    /* a conversation another front opened (HTTP) gets its ZeroMQ client
       sockets at its first reattach here: the reply names them */
    char *errmsg = NULL;
    if (!gw_zmq_of (conv) && gw_zmq_open (conv, NULL, &errmsg) < 0) {
        reply_error (self, req, "OpenFailed", errmsg);
        free (errmsg);
        return;
    }
    defer (self, conv, req_p, created, on_open_ready);
}

static void
do_close (gw_server_t *self, wire_msg_t *req)
{
    const char *id = conversation_id (self, req);
    if (!id)
        return;
    if (!gw_core_find (gw_server_core (self), id)) {
        reply_error (self, req, "NoSuchConversation", "no conversation has this id");
        return;
    }
    json_t *keep = json_object_get (req->content, "keep_workspace");
    if (keep && !json_is_boolean (keep)) {
        reply_error (self, req, "InvalidRequest", "keep_workspace must be true or false");
        return;
    }
    gw_core_close (gw_server_core (self), id, json_is_true (keep), "close_request");
    reply_send (self, req, json_pack ("{s:s, s:s}", "status", "ok", "conversation_id", id));
}

static void
do_restart (gw_server_t *self, wire_msg_t **req_p)
{
    const char *id = conversation_id (self, *req_p);
    if (!id)
        return;
    gw_conv_t *conv = gw_core_find (gw_server_core (self), id);
    if (!conv) {
        reply_error (self, *req_p, "NoSuchConversation", "no conversation has this id");
        return;
    }
    const char *refused = gw_core_restart (conv, "conversation_restart_request");
    if (refused) {
        reply_error (self, *req_p, "GatewayDraining", refused);
        return;
    }
    defer (self, conv, req_p, false, on_restart_ready);
}

static void
do_list (gw_server_t *self, wire_msg_t *req)
{
    json_t *list = gw_core_list (gw_server_core (self));
    reply_send (self, req, json_pack ("{s:s, s:o}", "status", "ok", "conversations", list));
}

static void
do_files (gw_server_t *self, wire_msg_t *req, const char *type)
{
    gw_files_error_t err;
    zmsg_t *buffers = zmsg_new ();
    json_t *content = gw_control_files (self, req, type, buffers, &err);
    if (content)
        reply_send_with (self, req, content, buffers);
    else {
        zmsg_destroy (&buffers);
        reply_error (self, req, err.ename, err.evalue);
    }
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
    wire_msg_t *req
        = wire_msg_decode (&msg, gw_server_key (self), gw_server_replay (self), gw_server_limits (self), &err);
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
    else if (gw_control_files_handles (type))
        do_files (self, req, type);
    else
        reply_error (self, req, "UnknownRequest", "unknown control request type");
    wire_msg_destroy (&req);
    return 0;
}
