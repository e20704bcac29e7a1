/*  gw_request.c - the control vocabulary (gw_request.h): gateway_info,
    conversation_open, _close, _restart and _list run against the core,
    the file requests handed to gw_control_files.c, each answered with one
    reply content whatever the transport.

    conversation_open and conversation_restart are answered once the
    kernel is confined (or could not be), so a refusal of the sandbox
    reaches the caller with its reason; a conversation whose kernel failed
    at its open is closed again: nothing stays behind a refusal.
*/
#include "gw_request.h"
#include "gw_capacity.h"
#include "gw_config.h"
#include "gw_conv.h"
#include "gw_core.h"
#include "gw_error.h"
#include "gw_files.h"
#include "gw_log.h"
#include "gw_ops.h"
#include "gw_pool.h"
#include "gw_server_access.h"
#include "gw_util.h"
#include "gw_zygote.h"
#include "wire.h"
#include "config.h"

#include <string.h>

json_t *
gw_request_error (const char *ename, const char *evalue)
{
    return json_pack ("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", ename, "evalue", evalue, "traceback");
}

/* One request on its way: what its reply needs once the kernel is ready. */
typedef struct {
    gw_server_t *server;
    gw_core_t *core;
    const gw_request_front_t *front;
    gw_request_reply_fn *fn;
    void *arg;
    bool created;
} call_t;

static void
answer (call_t *c, json_t *content)
{
    c->fn (content, NULL, c->arg);
}

static void
refuse (call_t *c, const char *ename, const char *evalue)
{
    answer (c, gw_request_error (ename, evalue));
}

/* gateway_info's content (docs/PROTOCOL.md section 3): asked only once
   the start-up probe has ended, so a layer report, or the probe's
   failure, is always there. */
static json_t *
info_content (call_t *c)
{
    gw_server_t *server = c->server;
    const gw_config_t *config = gw_server_config (server);
    json_t *kernels = json_pack ("[s]", "python");
    const char *name;
    json_t *k;
    json_object_foreach (config->kernels, name, k)
        json_array_append_new (kernels, json_string (name));
    json_t *last = gw_server_last_layers (server);
    json_t *layers = last ? json_deep_copy (last) : json_object ();
    gw_pool_t *pool = gw_server_pool (server);
    json_t *pool_info = pool ? gw_pool_info (pool)
                             : json_pack ("{s:i, s:i, s:i, s:i}", "size", 0, "ready", 0, "starting", 0, "claimed", 0);
    const char *layer;
    const char *startup_error = gw_server_startup_error (server, &layer);
    json_t *content = json_pack (
        "{s:s, s:s, s:s, s:s, s:o, s:b, s:o, s:O?, s:o, s:i, s:s, s:b, s:o, s:o, s:o}", "status", "ok", "implementation",
        "kennel", "version", PACKAGE_VERSION, "protocol_version", WIRE_PROTOCOL_VERSION, "kernels", kernels, "ready",
        startup_error == NULL, "confinement", layers, "confinement_taken", gw_server_layers_taken (server), "limits",
        gw_config_limits_json (config), "conversations", gw_core_count (c->core), "transport",
        gw_server_transport (server), "curve", gw_server_curve (server), "warm_pool", pool_info, "capacity",
        gw_capacity_json (gw_server_capacity (server)), "fork_server",
        gw_zygote_info (gw_server_zygote (server), config));
    json_object_set_new (content, "draining", json_boolean (gw_drain_active (server)));
    if (startup_error)
        json_object_set_new (content, "startup_error", json_pack ("{s:s, s:s}", "layer", layer, "reason", startup_error));
    return content;
}

static call_t *
call_keep (const call_t *c, bool created)
{
    call_t *kept = wire_xcalloc (1, sizeof *kept);
    *kept = *c;
    kept->created = created;
    return kept;
}

/* The kernel of a conversation opened or reattached is confined and
   attached (or not). */
static void
on_open_ready (gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    call_t *c = arg;
    if (ok) {
        gw_log ("open", "{s:s, s:b}", "conversation", gw_conv_id (conv), "created", c->created);
        json_t *content = json_pack ("{s:s, s:s, s:b, s:s}", "status", "ok", "conversation_id", gw_conv_id (conv),
                                     "created", c->created, "workspace", gw_conv_workspace (conv));
        if (c->front->opened)
            c->front->opened (content, conv);
        answer (c, content);
    }
    else {
        refuse (c, gw_error_name (GW_E_KERNEL_START_FAILED), errmsg ? errmsg : "the kernel could not be started");
        if (c->created)
            gw_core_close_later (c->core, gw_conv_id (conv), "start failed");
    }
    free (c);
}

static void
on_restart_ready (gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    call_t *c = arg;
    if (ok)
        answer (c, json_pack ("{s:s, s:s}", "status", "ok", "conversation_id", gw_conv_id (conv)));
    else
        refuse (c, gw_error_name (GW_E_KERNEL_START_FAILED), errmsg ? errmsg : "the kernel could not be started");
    free (c);
}

/* The request's conversation_id, or NULL after refusing. Checked on its
   whole JSON length: a NUL inside is refused, never read as the end. */
static const char *
conversation_id (call_t *c, const json_t *content)
{
    const char *id = gw_text (json_object_get (content, "conversation_id"));
    if (!id || !gw_conv_id_valid (id)) {
        refuse (c, gw_error_name (GW_E_INVALID_CONVERSATION_ID),
                "conversation_id must match [A-Za-z0-9._-]{1,128} and not be \".\" or \"..\"");
        return NULL;
    }
    return id;
}

static void
do_open (call_t *c, const json_t *content)
{
    const char *id = conversation_id (c, content);
    if (!id)
        return;
    bool created;
    gw_core_error_t err;
    gw_conv_t *conv = gw_core_open (c->core, id, content, c->front->attach, NULL, &created, &err);
    if (!conv) {
        refuse (c, err.ename, err.evalue);
        free (err.evalue);
        return;
    }
    /* a conversation another front opened gets this front's part at its
       first reattach here: the reply names it */
    char *errmsg = NULL;
    if (!created && c->front->attach && c->front->attach (conv, NULL, &errmsg) < 0) {
        refuse (c, gw_error_name (GW_E_OPEN_FAILED), errmsg ? errmsg : "the conversation could not be attached");
        free (errmsg);
        return;
    }
    gw_conv_when_ready (conv, on_open_ready, call_keep (c, created)); /* may answer at once */
}

static void
do_close (call_t *c, const json_t *content)
{
    const char *id = conversation_id (c, content);
    if (!id)
        return;
    if (!gw_core_find (c->core, id)) {
        refuse (c, gw_error_name (GW_E_NO_SUCH_CONVERSATION), "no conversation has this id");
        return;
    }
    json_t *keep = json_object_get (content, "keep_workspace");
    if (keep && !json_is_boolean (keep)) {
        refuse (c, gw_error_name (GW_E_INVALID_REQUEST), "keep_workspace must be true or false");
        return;
    }
    char *kept = wire_xstrdup (id); /* content may be the conversation's */
    gw_core_close (c->core, kept, json_is_true (keep), c->front->close_why);
    answer (c, json_pack ("{s:s, s:s}", "status", "ok", "conversation_id", kept));
    free (kept);
}

static void
do_restart (call_t *c, const json_t *content)
{
    const char *id = conversation_id (c, content);
    if (!id)
        return;
    gw_conv_t *conv = gw_core_find (c->core, id);
    if (!conv) {
        refuse (c, gw_error_name (GW_E_NO_SUCH_CONVERSATION), "no conversation has this id");
        return;
    }
    const char *refused = gw_core_restart (conv, c->front->restart_why);
    if (refused)
        refuse (c, gw_error_name (GW_E_GATEWAY_DRAINING), refused);
    else
        gw_conv_when_ready (conv, on_restart_ready, call_keep (c, false));
}

static void
do_files (call_t *c, const char *type, const json_t *content, zmsg_t *buffers)
{
    gw_files_error_t err;
    zmsg_t *out = zmsg_new ();
    json_t *reply = gw_control_files (c->core, type, content, buffers, out, &err);
    if (reply)
        c->fn (reply, out, c->arg);
    else {
        zmsg_destroy (&out);
        refuse (c, err.ename, err.evalue);
    }
}

void
gw_request_run (gw_server_t *server, const gw_request_front_t *front, const char *type, const json_t *content,
                zmsg_t *buffers, gw_request_reply_fn *fn, void *arg)
{
    call_t c = {.server = server, .core = gw_server_core (server), .front = front, .fn = fn, .arg = arg};
    if (streq (type, "gateway_info_request"))
        answer (&c, info_content (&c));
    else if (streq (type, "conversation_open_request"))
        do_open (&c, content);
    else if (streq (type, "conversation_close_request"))
        do_close (&c, content);
    else if (streq (type, "conversation_restart_request"))
        do_restart (&c, content);
    else if (streq (type, "conversation_list_request"))
        answer (&c, json_pack ("{s:s, s:o}", "status", "ok", "conversations", gw_core_list (c.core)));
    else if (gw_control_files_handles (type))
        do_files (&c, type, content, buffers);
    else
        refuse (&c, gw_error_name (GW_E_UNKNOWN_REQUEST), "unknown control request type");
}
