/*  mcp_core.c - control requests run against the core of the daemon the
    front lives in (the HTTP front's MCP, gateway/http/http_mcp.c).

    The dispatcher speaks to a gateway in control requests
    (conversation_open_request, ...) and reads their replies' content; in
    the daemon there is no socket to send them on, so they are run here by
    the control vocabulary (gw_request.h), whose reply is the content the
    control socket would have sent (without "connection": the
    conversation is reached as a peer, mcp_conv.c). A request runs from
    the loop's next turn, never inside the caller (which may be a core
    callback, where a conversation must not be closed). A reply cannot be
    withdrawn once the vocabulary has the request: a cancelled request is
    freed when the reply comes.
*/
#include "mcp.h"
#include "gateway/gw_request.h"

#include <string.h>

struct mcp_core_req {
    zloop_t *loop;
    gw_server_t *server;
    char *msg_type;
    json_t *content;
    mcp_control_fn *fn; /* NULL once cancelled */
    void *arg;
    int timer; /* until it runs */
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

/* The vocabulary's reply (content taken; raw frames there are none of,
   the file requests here being base64). */
static void
s_on_reply (json_t *content, zmsg_t *buffers, void *arg)
{
    zmsg_destroy (&buffers);
    s_answer (arg, content);
}

/* The content the control socket would send, without "connection": the
   conversation is reached as a peer (mcp_conv.c). */
static const gw_request_front_t MCP_FRONT = {
    .close_why = "mcp_close",
    .restart_why = "mcp_restart",
};

static int
s_on_run (zloop_t *loop, int timer_id, void *arg)
{
    mcp_core_req_t *req = arg;
    req->timer = 0;
    if (!req->fn) {
        s_free (req);
        return 0;
    }
    gw_request_run (req->server, &MCP_FRONT, req->msg_type, req->content, NULL, s_on_reply, req);
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
