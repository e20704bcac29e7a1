/*  mcp_core.c - control requests run against the core of the daemon the
    front lives in (the HTTP front's MCP, gateway/http/http_mcp.c).

    The dispatcher speaks to a gateway in control requests
    (conversation_open_request, ...) and reads their replies' content; in
    the daemon there is no socket to send them on, so they are run here
    through gw_core.h and answered with the content the control socket
    would have sent (without "connection": the conversation is reached as
    a peer, mcp_conv.c). A request runs from the loop's next turn, never
    inside the caller (which may be a core callback, where a conversation
    must not be closed). gw_conv_when_ready cannot be withdrawn: a
    cancelled request is freed when the core calls it.
*/
#include "mcp.h"
#include "gateway/gw_conv.h"
#include "gateway/gw_core.h"
#include "gateway/gw_files.h"

#include <string.h>

struct mcp_core_req {
    zloop_t *loop;
    gw_server_t *server;
    char *msg_type;
    json_t *content;
    mcp_control_fn *fn; /* NULL once cancelled */
    void *arg;
    int timer; /* until it runs */
    bool created;
};

static void
s_free (mcp_core_req_t *req)
{
    gw_timer_end (req->loop, req->timer);
    json_decref (req->content);
    free (req->msg_type);
    free (req);
}

/* Answers (content taken) unless cancelled, then frees the request. */
static void
s_answer (mcp_core_req_t *req, json_t *content)
{
    if (req->fn)
        req->fn (content, req->arg);
    json_decref (content);
    s_free (req);
}

static json_t *
s_error (const char *ename, const char *evalue)
{
    return json_pack ("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", ename, "evalue", evalue, "traceback");
}

static void
s_on_open_ready (gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    mcp_core_req_t *req = arg;
    if (ok) {
        s_answer (req, json_pack ("{s:s, s:s, s:b, s:s}", "status", "ok", "conversation_id", gw_conv_id (conv),
                                  "created", req->created, "workspace", gw_conv_workspace (conv)));
        return;
    }
    /* nothing stays behind a refused conversation, as over the control socket */
    if (req->created)
        gw_core_close_later (gw_server_core (req->server), gw_conv_id (conv), "start failed");
    s_answer (req, s_error ("KernelStartFailed", errmsg ?: "the kernel could not be started"));
}

static void
s_on_restart_ready (gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    s_answer (arg, ok ? json_pack ("{s:s, s:s}", "status", "ok", "conversation_id", gw_conv_id (conv))
                      : s_error ("KernelStartFailed", errmsg ?: "the kernel could not be started"));
}

static void
s_open (mcp_core_req_t *req, const char *id)
{
    gw_core_error_t err;
    gw_conv_t *conv = gw_core_open (gw_server_core (req->server), id, req->content, NULL, NULL, &req->created, &err);
    if (!conv) {
        s_answer (req, s_error (err.ename, err.evalue));
        free (err.evalue);
        return;
    }
    gw_conv_when_ready (conv, s_on_open_ready, req); /* may answer at once */
}

/* The file requests, as the control socket runs them (base64 content: no
   raw frames here). */
static void
s_files (mcp_core_req_t *req)
{
    wire_msg_t *m = wire_msg_new (NULL, req->msg_type, NULL);
    wire_msg_set_content (m, json_incref (req->content));
    zmsg_t *out = zmsg_new ();
    gw_files_error_t err;
    json_t *reply = gw_control_files (req->server, m, req->msg_type, out, &err);
    zmsg_destroy (&out);
    wire_msg_destroy (&m);
    s_answer (req, reply ? reply : s_error (err.ename, err.evalue));
}

static int
s_on_run (zloop_t *loop, int timer_id, void *arg)
{
    mcp_core_req_t *req = arg;
    req->timer = 0;
    if (!req->fn) {
        s_free (req);
        return 0;
    }
    const char *type = req->msg_type;
    if (gw_control_files_handles (type)) {
        s_files (req);
        return 0;
    }
    if (streq (type, "conversation_list_request")) {
        s_answer (req, json_pack ("{s:s, s:o}", "status", "ok", "conversations", gw_core_list (gw_server_core (req->server))));
        return 0;
    }
    const char *id = gw_text (json_object_get (req->content, "conversation_id"));
    if (!id || !gw_conv_id_valid (id)) {
        s_answer (req, s_error ("InvalidConversationId", "conversation_id must match [A-Za-z0-9._-]{1,128}"));
        return 0;
    }
    gw_conv_t *conv = gw_core_find (gw_server_core (req->server), id);
    if (streq (type, "conversation_open_request"))
        s_open (req, id);
    else if (!conv)
        s_answer (req, s_error ("NoSuchConversation", "no conversation has this id"));
    else if (streq (type, "conversation_close_request")) {
        char *kept = wire_xstrdup (id);
        gw_core_close (gw_server_core (req->server), kept, false, "mcp_close");
        s_answer (req, json_pack ("{s:s, s:s}", "status", "ok", "conversation_id", kept));
        free (kept);
    }
    else if (streq (type, "conversation_restart_request")) {
        const char *refused = gw_core_restart (conv, "mcp_restart");
        if (refused)
            s_answer (req, s_error ("GatewayDraining", refused));
        else
            gw_conv_when_ready (conv, s_on_restart_ready, req);
    }
    else
        s_answer (req, s_error ("UnknownRequest", "unknown control request type"));
    return 0;
}

mcp_core_req_t *
mcp_core_request (zloop_t *loop, gw_server_t *server, const char *msg_type, json_t *content, mcp_control_fn *fn,
                  void *arg)
{
    mcp_core_req_t *req = wire_xcalloc (1, sizeof *req);
    req->loop = loop;
    req->server = server;
    req->msg_type = wire_xstrdup (msg_type);
    req->content = content;
    req->fn = fn;
    req->arg = arg;
    req->timer = gw_timer_start (loop, 0, 1, s_on_run, req);
    return req;
}

void
mcp_core_cancel (mcp_core_req_t *req)
{
    if (!req)
        return;
    if (req->timer)
        s_free (req); /* not run yet: the core holds nothing of it */
    else
        req->fn = NULL;
}
