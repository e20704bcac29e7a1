/*  http_sessions.c - /api/sessions: jupyter_server's sessions, a name and
    path bound to a kernel (E2B's in-sandbox server and GatewayClient use
    them). The front keeps them in memory; a session whose kernel is gone
    is dropped when next read. Deleting a session shuts its kernel down, as
    jupyter_server does.

    A request's fields are typed as jupyter_server reads them (path and
    type required, strings; name a string or null; kernel an object whose
    id or name is a string), and bounded, since they are kept: path and
    name at most a Contents path (4096 bytes), type 64 bytes, and at most
    SESSIONS_PER_KERNEL sessions a kernel (jupyter_server keeps any number
    in SQLite), so all sessions take at most max_conversations x 32 x ~8
    KiB. A listing shares the kept strings (no copy of them) and is
    written in pieces (http_reply.c).
*/
#include "http.h"

#include <string.h>

#define SESSION_TYPE_MAX 64
#define SESSIONS_PER_KERNEL 32

typedef struct {
    char id[HTTP_KERNEL_ID_SIZE];
    char *conv_id;
    json_t *fields; /* {path, name, type} */
} session_t;

struct http_sessions {
    zhashx_t *table; /* id -> session_t* */
};

static void
session_destroy (session_t **self_p)
{
    session_t *self = *self_p;
    if (!self)
        return;
    free (self->conv_id);
    json_decref (self->fields);
    free (self);
    *self_p = NULL;
}

http_sessions_t *
http_sessions_new (void)
{
    http_sessions_t *self = wire_xcalloc (1, sizeof *self);
    self->table = zhashx_new ();
    zhashx_set_destructor (self->table, (zhashx_destructor_fn *) session_destroy);
    return self;
}

void
http_sessions_destroy (http_sessions_t **self_p)
{
    if (!*self_p)
        return;
    zhashx_destroy (&(*self_p)->table);
    free (*self_p);
    *self_p = NULL;
}

/* The session's model; its strings are the kept ones, shared. */
static json_t *
session_model (http_front_t *front, session_t *s, gw_conv_t *conv)
{
    json_t *path = json_object_get (s->fields, "path"), *name = json_object_get (s->fields, "name");
    return json_pack ("{s:O, s:O, s:O, s:s, s:o, s:{s:O, s:O}}", "path", path, "name", name, "type",
                      json_object_get (s->fields, "type"), "id", s->id, "kernel", http_kernel_model (front, conv),
                      "notebook", "path", path, "name", name);
}

/* The session's conversation; a session without one is dropped. */
static gw_conv_t *
session_conv (http_front_t *front, session_t *s)
{
    gw_conv_t *conv = gw_core_find (front->core, s->conv_id);
    if (!conv)
        zhashx_delete (front->sessions->table, s->id);
    return conv;
}

/* A request body's fields checked: NULL, or the message naming the first
   that is not what jupyter_server takes (created: a POST, where path and
   type are required). The deprecated {"notebook": {"path" or "name"}} of
   older clients is a notebook's path. */
static const char *
fields_refused (const json_t *body, bool created)
{
    const char *message = NULL;
    const json_t *nb = json_object_get (body, "notebook"), *kernel = json_object_get (body, "kernel");
    if (!http_api_field_ok (body, "notebook", "notebook", JSON_OBJECT, 0, &message)
        || !http_api_field_ok (nb, "path", "notebook.path", JSON_STRING, GW_FILES_PATH_MAX, &message)
        || !http_api_field_ok (nb, "name", "notebook.name", JSON_STRING, GW_FILES_PATH_MAX, &message)
        || !http_api_field_ok (body, "path", "path", JSON_STRING, GW_FILES_PATH_MAX, &message)
        || !http_api_field_ok (body, "name", "name", JSON_STRING, HTTP_NAME_MAX, &message)
        || !http_api_field_ok (body, "type", "type", JSON_STRING, SESSION_TYPE_MAX, &message)
        || !http_api_field_ok (body, "kernel", "kernel", JSON_OBJECT, 0, &message)
        || !http_api_field_ok (kernel, "id", "kernel.id", JSON_STRING, HTTP_KERNEL_ID_SIZE, &message)
        || !http_api_field_ok (kernel, "name", "kernel.name", JSON_STRING, HTTP_NAME_MAX, &message))
        return message;
    bool old_form = gw_text (json_object_get (nb, "path")) || gw_text (json_object_get (nb, "name"));
    if (created && !old_form && !gw_text (json_object_get (body, "path")))
        return "Missing field in JSON data: path";
    if (created && !old_form && !gw_text (json_object_get (body, "type")))
        return "Missing field in JSON data: type";
    return NULL;
}

/* {path, name, type} of a checked request body, over old (may be NULL). */
static json_t *
fields_of (const json_t *body, const json_t *old)
{
    json_t *f = old ? json_copy ((json_t *) old) : json_pack ("{s:s, s:s, s:s}", "path", "", "name", "", "type", "notebook");
    const json_t *nb = json_object_get (body, "notebook");
    const json_t *nb_path = gw_text (json_object_get (nb, "name")) ? json_object_get (nb, "name")
                                                                    : json_object_get (nb, "path");
    if (gw_text (nb_path)) { /* as jupyter_server reads the old form: name first */
        json_object_set (f, "path", (json_t *) nb_path);
        json_object_set_new (f, "type", json_string ("notebook"));
    }
    const char *keys[] = {"path", "name", "type"};
    for (int i = 0; i < 3; i++)
        if (gw_text (json_object_get (body, keys[i])))
            json_object_set (f, keys[i], json_object_get (body, keys[i]));
    return f;
}

/* The sessions of conv's kernel (those of closed kernels dropped). */
static size_t
sessions_of (http_front_t *front, const char *conv_id)
{
    size_t n = 0;
    zlistx_t *ids = zhashx_keys (front->sessions->table);
    for (const char *id = zlistx_first (ids); id; id = zlistx_next (ids)) {
        session_t *s = zhashx_lookup (front->sessions->table, id);
        n += session_conv (front, s) && streq (s->conv_id, conv_id);
    }
    zlistx_destroy (&ids);
    return n;
}

/* Whether conv's kernel may hold one more session; else the answer. */
static bool
session_room (http_front_t *front, gw_conv_t *conv, char *why, size_t size)
{
    if (sessions_of (front, gw_conv_id (conv)) < SESSIONS_PER_KERNEL)
        return true;
    snprintf (why, size, "%s: kernel %s holds its maximum of %d sessions (DELETE /api/sessions/ID ends one, and its "
              "kernel)", gw_error_name (GW_E_TOO_MANY_SESSIONS), gw_conv_kernel_id (conv), SESSIONS_PER_KERNEL);
    return false;
}

static session_t *
session_add (http_front_t *front, const char *conv_id, json_t *fields)
{
    session_t *s = wire_xcalloc (1, sizeof *s);
    gw_id_new (gw_server_config (front->server)->shard, s->id); /* routed as its kernel is */
    s->conv_id = wire_xstrdup (conv_id);
    s->fields = fields;
    zhashx_insert (front->sessions->table, s->id, s);
    return s;
}

typedef struct {
    struct lws *wsi;
    json_t *fields;
} pending_t;

static void
pending_free (void *arg)
{
    pending_t *p = arg;
    json_decref (p->fields);
    free (p);
}

static void
on_kernel_ready (http_front_t *front, gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    pending_t *p = arg;
    http_req_t *req = lws_wsi_user (p->wsi);
    if (!ok) {
        http_api_answer_ready (p->wsi, req, conv, ok, errmsg, true);
        return;
    }
    char why[240];
    if (!session_room (front, conv, why, sizeof why)) { /* a kernel named by kennel.conversation_id */
        http_reply_error_later (p->wsi, req, gw_error_status (GW_E_TOO_MANY_SESSIONS), why);
        return;
    }
    session_t *s = session_add (front, gw_conv_id (conv), p->fields);
    p->fields = NULL;
    http_reply_later (p->wsi, req, 201, session_model (front, s, conv), NULL);
}

static int
session_create (struct lws *wsi, http_req_t *req, json_t *body)
{
    http_front_t *front = req->front;
    const char *refused = fields_refused (body, true);
    if (refused)
        return http_reply_error (wsi, req, 400, refused);
    const json_t *kernel = json_object_get (body, "kernel");
    const char *kid = gw_text (json_object_get (kernel, "id"));
    char why[240];
    if (kid) {
        gw_conv_t *conv = http_kernel_conv (front, kid);
        if (!conv)
            return http_reply_error (wsi, req, 404, "no kernel has this id");
        if (!session_room (front, conv, why, sizeof why))
            return http_reply_error (wsi, req, gw_error_status (GW_E_TOO_MANY_SESSIONS), why);
        session_t *s = session_add (front, gw_conv_id (conv), fields_of (body, NULL));
        return http_reply_write (wsi, req, 201, session_model (front, s, conv), NULL);
    }
    const char *full = http_clients_refusal (front->clients, wsi, NULL); /* its kernel start is held */
    if (full)
        return http_reply_error (wsi, req, 503, full);
    json_t *kbody = json_is_object (kernel) ? json_deep_copy (kernel) : json_object ();
    bool created;
    int status;
    char *message = NULL;
    gw_conv_t *conv = http_api_open (front, kbody, &created, &status, &message);
    json_decref (kbody);
    if (!conv) {
        int rc = http_reply_error (wsi, req, status, message);
        free (message);
        return rc;
    }
    pending_t *p = wire_xcalloc (1, sizeof *p);
    p->wsi = wsi;
    p->fields = fields_of (body, NULL);
    http_clients_take (front->clients, wsi, &req->slot, conv);
    http_reply_wait (wsi);
    http_wait (front, conv, on_kernel_ready, p, pending_free, &req->wait);
    return 0;
}

static int
session_one (struct lws *wsi, http_req_t *req, const char *id, json_t *body)
{
    http_front_t *front = req->front;
    session_t *s = zhashx_lookup (front->sessions->table, id);
    gw_conv_t *conv = s ? session_conv (front, s) : NULL;
    if (!conv)
        return http_reply_error (wsi, req, 404, "no session has this id");
    if (req->method == LWSHUMETH_GET)
        return http_reply_write (wsi, req, 200, session_model (front, s, conv), NULL);
    if (req->method == LWSHUMETH_DELETE) {
        zhashx_delete (front->sessions->table, id);
        gw_core_close (front->core, gw_conv_id (conv), false, "http_session_delete");
        return http_reply_write (wsi, req, 204, NULL, NULL);
    }
    if (req->method == LWSHUMETH_PATCH) {
        const char *refused = fields_refused (body, false);
        if (refused)
            return http_reply_error (wsi, req, 400, refused);
        const char *kid = gw_text (json_object_get (json_object_get (body, "kernel"), "id"));
        gw_conv_t *other = kid ? http_kernel_conv (front, kid) : conv;
        if (!other)
            return http_reply_error (wsi, req, 400, "no kernel has this id");
        char why[240];
        if (other != conv && !session_room (front, other, why, sizeof why))
            return http_reply_error (wsi, req, gw_error_status (GW_E_TOO_MANY_SESSIONS), why);
        json_t *fields = fields_of (body, s->fields);
        json_decref (s->fields);
        s->fields = fields;
        free (s->conv_id);
        s->conv_id = wire_xstrdup (gw_conv_id (other));
        return http_reply_write (wsi, req, 200, session_model (front, s, other), NULL);
    }
    return http_reply_error (wsi, req, 405, "GET, PATCH or DELETE");
}

static json_t *
sessions_list (http_front_t *front)
{
    json_t *list = json_array ();
    zlistx_t *ids = zhashx_keys (front->sessions->table);
    for (const char *id = zlistx_first (ids); id; id = zlistx_next (ids)) {
        session_t *s = zhashx_lookup (front->sessions->table, id);
        gw_conv_t *conv = session_conv (front, s);
        if (conv)
            json_array_append_new (list, session_model (front, s, conv));
    }
    zlistx_destroy (&ids);
    return list;
}

int
http_sessions_route (struct lws *wsi, http_req_t *req, const char *rest)
{
    json_t *body = req->body_len ? json_loadb (req->body, req->body_len, 0, NULL) : json_object ();
    if (!json_is_object (body)) {
        json_decref (body);
        return http_reply_error (wsi, req, 400, "the body must be a JSON object");
    }
    int rc;
    if (*rest)
        rc = session_one (wsi, req, rest + 1, body);
    else if (req->method == LWSHUMETH_GET)
        rc = http_reply_write (wsi, req, 200, sessions_list (req->front), NULL);
    else if (req->method == LWSHUMETH_POST)
        rc = session_create (wsi, req, body);
    else
        rc = http_reply_error (wsi, req, 405, "GET or POST");
    json_decref (body);
    return rc;
}
