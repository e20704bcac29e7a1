/*  gw_control.c - the control socket (docs/PROTOCOL.md section 3,
    "Control socket"): a transport of the control vocabulary
    (gw_request.h).

    Requests are Jupyter messages signed with the gateway key; a bad one is
    dropped and logged, a well-formed one is run by the vocabulary and its
    reply sent back signed, an error reply logged (rate-limited). Its
    conversations' client sockets are the ZeroMQ front's: attached at the
    open and named in its reply.
*/
#include "gw_control.h"
#include "gw_conv.h"
#include "gw_io.h"
#include "gw_log.h"
#include "gw_request.h"
#include "gw_server_access.h"
#include "gw_util.h"
#include "gw_zmq_front.h"
#include "wire.h"

#include <string.h>

/* A request waiting for its reply (the vocabulary may answer later, from
   a launch's callback). */
typedef struct {
    gw_server_t *server;
    wire_msg_t *req;
} pending_t;

/* The reply (content and raw frames taken) to p's request, signed. */
static void
on_reply (json_t *content, zmsg_t *buffers, void *arg)
{
    pending_t *p = arg;
    gw_server_t *self = p->server;
    wire_msg_t *req = p->req;
    const char *status = json_string_value (json_object_get (content, "status"));
    if (!status || !streq (status, "ok")) /* a control peer may send bad requests at will */
        gw_log_limited ("control/error", "control_error", "{s:s, s:s, s:s}", "request", wire_msg_type (req), "ename",
                        json_string_value (json_object_get (content, "ename")), "evalue",
                        json_string_value (json_object_get (content, "evalue")));
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
    wire_msg_destroy (&p->req);
    free (p);
}

/* The ZeroMQ front's client sockets, once per conversation: a
   conversation another front opened (HTTP) gets them at its first
   reattach here. */
static int
zmq_attach (gw_conv_t *conv, void *arg, char **errmsg)
{
    return gw_zmq_of (conv) ? 0 : gw_zmq_open (conv, arg, errmsg);
}

static void
zmq_opened (json_t *content, gw_conv_t *conv)
{
    json_object_set_new (content, "connection", gw_zmq_connection_json (gw_zmq_of (conv)));
}

static const gw_request_front_t CONTROL_FRONT = {
    .attach = zmq_attach,
    .opened = zmq_opened,
    .close_why = "close_request",
    .restart_why = "conversation_restart_request",
};

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
    pending_t *p = wire_xcalloc (1, sizeof *p);
    p->server = self;
    p->req = req;
    gw_request_run (self, &CONTROL_FRONT, type, req->content, req->buffers, on_reply, p);
    return 0;
}
