/*  http_api.c - the REST routes of the Jupyter Kernel Gateway API:
    /api/kernelspecs[/NAME], /api/kernels[/ID[/interrupt|/restart]], and
    the opening of a kernel that /api/sessions (http_sessions.c) shares.
    Errors are JSON {"reason", "message"}.

    Opening, closing, restarting and interrupting a kernel are the core's
    (gw_core.h), so their checks and errors are conversation_open's; the
    error names map to HTTP statuses here.
*/
#include "http.h"
#include "gateway/gw_error.h"
#include "gateway/gw_ops.h"

#include <string.h>

#define ENV_PREFIX "KERNEL_"

/* Whether kernels can be started now (GET /api/kernelspecs, readiness).
   A fork server still starting does not count: a kernel opened meanwhile
   starts without it (gw_zygote_apply), only slower. */
bool
http_api_ready (const http_front_t *front, const char **why)
{
    const gw_server_t *s = front->server;
    const char *layer;
    const char *startup_error = gw_server_startup_error (s, &layer);
    *why = NULL;
    if (!gw_server_ready (s))
        *why = "the gateway is still probing confinement";
    else if (startup_error)
        *why = startup_error;
    else if (gw_drain_active (s))
        *why = GW_DRAINING;
    return *why == NULL;
}

/* ---- kernelspecs ------------------------------------------------------- */

/* A kernelspec as jupyter_server lists one; metadata.kennel_policy is the
   policy its kernels start from (a request's kennel.policy may lower it,
   or raise it up to the operator's maxima). */
static json_t *
spec_model (const char *name, const char *display, const char *language, json_t *policy)
{
    return json_pack ("{s:s, s:{s:[s,s,s,s], s:{}, s:s, s:s, s:s, s:{s:s, s:o}}, s:{}}", "name", name, "spec",
                      "argv", "kennel", "kernel", "-f", "{connection_file}", "env", "display_name", display,
                      "language", language, "interrupt_mode", "message", "metadata", "kennel", "confined",
                      "kennel_policy", policy, "resources");
}

/* The config's kernelspecs (gw_config.c: "kernelspecs"), then each of its
   kernels that no kernelspec names, with the defaults. */
static json_t *
specs_all (http_front_t *front)
{
    const gw_config_t *config = gw_server_config (front->server);
    json_t *specs = json_object ();
    json_t *listed = gw_config_kernelspecs_json (config);
    const char *name;
    json_t *k;
    json_object_foreach (listed, name, k)
        json_object_set_new (specs, name,
                             spec_model (name, json_string_value (json_object_get (k, "display_name")),
                                         json_string_value (json_object_get (k, "language")),
                                         json_incref (json_object_get (k, "policy"))));
    json_decref (listed);
    json_object_foreach (config->kernels, name, k) {
        const char *lang = gw_text (json_object_get (k, "language"));
        json_object_set_new (specs, name,
                             spec_model (name, name, lang ? lang : "unknown", gw_policy_to_json (&config->defaults)));
    }
    return specs;
}

/* The name a request gives, as listed ("python" is "python3", as
   jupyter_server's default name), or NULL when none has it; *spec tells
   whether it is one of the config's kernelspecs (else a kernel of it). */
static const char *
spec_lookup (http_front_t *front, const char *name, bool *spec)
{
    const gw_config_t *config = gw_server_config (front->server);
    if (streq (name, "python"))
        name = "python3";
    *spec = gw_config_kernelspec (config, name) != NULL;
    return *spec || json_object_get (config->kernels, name) ? name : NULL;
}

int
http_api_kernelspecs_route (struct lws *wsi, http_req_t *req, const char *rest)
{
    const char *why;
    if (!http_api_ready (req->front, &why)) {
        char message[400];
        snprintf (message, sizeof message, "kernels cannot be started yet: %s", why);
        return http_reply_error (wsi, req, 503, message);
    }
    json_t *specs = specs_all (req->front);
    if (!*rest)
        return http_reply_write (wsi, req, 200, json_pack ("{s:s, s:o}", "default", "python3", "kernelspecs", specs),
                                 NULL);
    bool is_spec;
    const char *listed = spec_lookup (req->front, rest + 1, &is_spec);
    json_t *spec = listed ? json_object_get (specs, listed) : NULL;
    int rc = spec ? http_reply_write (wsi, req, 200, json_incref (spec), NULL)
                  : http_reply_error (wsi, req, 404, "no kernelspec has this name");
    json_decref (specs);
    return rc;
}

/* ---- opening ---------------------------------------------------------- */

/* The request's env, only KERNEL_* names and those the operator allows;
   NULL + *message when it is no object of strings. */
static json_t *
env_filter (http_front_t *front, const json_t *env, const char **message)
{
    json_t *out = json_object ();
    const char *name;
    json_t *value;
    if (env && !json_is_object (env)) {
        *message = "env must be an object of strings";
        json_decref (out);
        return NULL;
    }
    json_object_foreach ((json_t *) env, name, value) {
        if (!gw_text (value)) {
            *message = "env values must be strings";
            json_decref (out);
            return NULL;
        }
        bool allowed = strncmp (name, ENV_PREFIX, strlen (ENV_PREFIX)) == 0;
        size_t i;
        json_t *a;
        json_array_foreach (front->settings.env_allow, i, a)
            allowed = allowed || streq (json_string_value (a), name);
        if (allowed)
            json_object_set (out, name, value);
    }
    return out;
}

/* The request's policy with env merged in (taken), or NULL when neither. */
static json_t *
policy_with_env (const json_t *policy, json_t *env)
{
    json_t *out = json_is_object (policy) ? json_deep_copy (policy) : policy ? json_incref ((json_t *) policy) : NULL;
    if (json_object_size (env)) {
        if (!out)
            out = json_object ();
        json_t *penv = json_object_get (out, "env");
        if (json_is_object (penv))
            json_object_update (penv, env);
        else if (!penv && json_is_object (out))
            json_object_set (out, "env", env);
    }
    json_decref (env);
    return out;
}

bool
http_api_field_ok (const json_t *body, const char *field, const char *shown, json_type type, size_t max,
                   const char **message)
{
    static char why[160];
    const json_t *v = json_object_get (body, field);
    if (!v || json_is_null (v))
        return true;
    if (type == JSON_OBJECT && json_is_object (v))
        return true;
    if (type == JSON_STRING && gw_text (v) && json_string_length (v) <= max)
        return true;
    if (type == JSON_STRING && gw_text (v))
        snprintf (why, sizeof why, "%s is %zu bytes, more than the %zu kept", shown, json_string_length (v), max);
    else
        snprintf (why, sizeof why, "%s must be %s", shown, type == JSON_STRING ? "a string" : "an object");
    *message = why;
    return false;
}

/* conversation_open's request {kernel, tools, policy} and the id. The
   body's fields are typed as jupyter_server reads them (name, path: a
   string or null) and Kernel Gateway (env); kennel is the gateway's own.
   NULL with *message: a sentence, or an ename (gw_error.h) its text says. */
static json_t *
open_request (http_front_t *front, const json_t *body, char id[130], const char **message)
{
    if (!http_api_field_ok (body, "name", "name", JSON_STRING, HTTP_NAME_MAX, message)
        || !http_api_field_ok (body, "path", "path", JSON_STRING, GW_FILES_PATH_MAX, message)
        || !http_api_field_ok (body, "kennel", "kennel", JSON_OBJECT, 0, message))
        return NULL;
    /* no name is the default kernelspec, as jupyter_server's is */
    const char *name = gw_text (json_object_get (body, "name")), *listed;
    bool is_spec = true;
    if (!name)
        listed = "python3";
    else if (!(listed = spec_lookup (front, name, &is_spec))) {
        *message = "no kernelspec has this name (GET /api/kernelspecs lists them)";
        return NULL;
    }
    const json_t *kennel = json_object_get (body, "kennel");
    json_t *env = env_filter (front, json_object_get (body, "env"), message);
    if (!env)
        return NULL;
    const json_t *cid = json_object_get (kennel, "conversation_id");
    if (cid && !(gw_text (cid) && gw_conv_id_valid (gw_text (cid)))) {
        json_decref (env);
        *message = gw_error_name (GW_E_INVALID_CONVERSATION_ID); /* its text follows (http_api_open) */
        return NULL;
    }
    if (cid)
        snprintf (id, 130, "%s", gw_text (cid));
    else {
        char r[WIRE_ID_SIZE];
        wire_id_new (r);
        snprintf (id, 130, "http-%.16s", r);
    }
    json_t *request = json_pack ("{s:s}", is_spec ? "kernelspec" : "kernel", listed);
    if (json_object_get (kennel, "tools"))
        json_object_set (request, "tools", json_object_get (kennel, "tools"));
    json_t *policy = policy_with_env (json_object_get (kennel, "policy"), env);
    if (policy)
        json_object_set_new (request, "policy", policy);
    return request;
}

gw_conv_t *
http_api_open (http_front_t *front, const json_t *body, bool *created, int *status, char **message)
{
    char id[130];
    const char *problem = NULL;
    json_t *request = open_request (front, body, id, &problem);
    gw_error_t named;
    if (!request) {
        *status = 400;
        *message = gw_error_lookup (problem, &named) ? wire_xasprintf ("%s: %s", problem, gw_error_text (named))
                                                     : wire_xstrdup (problem);
        return NULL;
    }
    gw_core_error_t err;
    gw_conv_t *conv = gw_core_open (front->core, id, request, NULL, NULL, created, &err);
    json_decref (request);
    if (!conv) {
        *status = gw_error_http_status (err.ename);
        *message = wire_xasprintf ("%s: %s", err.ename, err.evalue ? err.evalue : "");
        free (err.evalue);
    }
    return conv;
}

void
http_api_answer_ready (struct lws *wsi, http_req_t *req, gw_conv_t *conv, bool ok, const char *errmsg, bool created)
{
    if (!ok) {
        char *message = wire_xasprintf ("%s: %s", gw_error_name (GW_E_KERNEL_START_FAILED),
                                        errmsg ? errmsg : gw_error_text (GW_E_KERNEL_START_FAILED));
        http_reply_error_later (wsi, req, gw_error_status (GW_E_KERNEL_START_FAILED), message);
        free (message);
        if (created) /* nothing stays behind a refused kernel */
            gw_core_close_later (req->front->core, gw_conv_id (conv), "start failed");
        return;
    }
    char location[96];
    snprintf (location, sizeof location, "/api/kernels/%s", gw_conv_kernel_id (conv));
    http_reply_later (wsi, req, created ? 201 : 200, http_kernel_model (req->front, conv), location);
}

/* ---- kernels ------------------------------------------------------------ */

static json_t *
body_json (http_req_t *req, const char **message)
{
    if (!req->body_len)
        return json_object ();
    json_t *body = json_loadb (req->body, req->body_len, 0, NULL);
    if (!json_is_object (body)) {
        *message = "the body must be a JSON object";
        json_decref (body);
        return NULL;
    }
    return body;
}

static void
on_created (http_front_t *front, gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    struct lws *wsi = arg;
    http_api_answer_ready (wsi, lws_wsi_user (wsi), conv, ok, errmsg, true);
}

static void
on_reopened (http_front_t *front, gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    struct lws *wsi = arg;
    http_api_answer_ready (wsi, lws_wsi_user (wsi), conv, ok, errmsg, false);
}

/* The answer waits for the kernel: counted as a connection. */
static int
answer_when_ready (struct lws *wsi, http_req_t *req, gw_conv_t *conv, http_wait_fn *fn)
{
    http_clients_take (req->front->clients, wsi, &req->slot, conv);
    http_reply_wait (wsi);
    http_wait (req->front, conv, fn, wsi, NULL, &req->wait);
    return 0;
}

static int
kernels_create (struct lws *wsi, http_req_t *req)
{
    const char *problem = NULL;
    json_t *body = body_json (req, &problem);
    if (!body)
        return http_reply_error (wsi, req, 400, problem);
    const char *full = http_clients_refusal (req->front->clients, wsi, NULL);
    if (full) {
        json_decref (body);
        return http_reply_error (wsi, req, 503, full);
    }
    bool created;
    int status;
    char *message = NULL;
    gw_conv_t *conv = http_api_open (req->front, body, &created, &status, &message);
    json_decref (body);
    if (!conv) {
        int rc = http_reply_error (wsi, req, status, message);
        free (message);
        return rc;
    }
    if (!created && (full = http_clients_refusal (req->front->clients, wsi, conv)))
        return http_reply_error (wsi, req, 503, full); /* an open conversation's share */
    return answer_when_ready (wsi, req, conv, created ? on_created : on_reopened);
}

static void
on_restarted (http_front_t *front, gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    struct lws *wsi = arg;
    http_req_t *req = lws_wsi_user (wsi);
    if (ok)
        http_reply_later (wsi, req, 200, http_kernel_model (front, conv), NULL);
    else
        http_reply_error_later (wsi, req, 500, errmsg ? errmsg : "the kernel could not be restarted");
}

static int
kernel_route (struct lws *wsi, http_req_t *req, const char *rest)
{
    char id[HTTP_KERNEL_ID_SIZE + 1];
    const char *slash = strchr (rest, '/');
    size_t n = slash ? (size_t) (slash - rest) : strlen (rest);
    snprintf (id, sizeof id, "%.*s", (int) (n < sizeof id ? n : sizeof id - 1), rest);
    gw_conv_t *conv = n < sizeof id ? http_kernel_conv (req->front, id) : NULL;
    if (!conv) {
        char message[160];
        snprintf (message, sizeof message, "Kernel does not exist: %.*s", (int) (n > 64 ? 64 : n), rest);
        return http_reply_error (wsi, req, 404, message);
    }
    const char *action = slash ? slash + 1 : "";
    int m = req->method;
    if (!*action && m == LWSHUMETH_GET)
        return http_reply_write (wsi, req, 200, http_kernel_model (req->front, conv), NULL);
    if (!*action && m == LWSHUMETH_DELETE) {
        gw_core_close (req->front->core, gw_conv_id (conv), false, "http_delete");
        return http_reply_write (wsi, req, 204, NULL, NULL);
    }
    if (streq (action, "interrupt") && m == LWSHUMETH_POST) {
        gw_core_interrupt (conv); /* no kernel running: nothing to interrupt */
        return http_reply_write (wsi, req, 204, NULL, NULL);
    }
    if (streq (action, "restart") && m == LWSHUMETH_POST) {
        const char *refused = gw_core_restart (conv, "http_restart");
        if (refused)
            return http_reply_error (wsi, req, 503, refused);
        return answer_when_ready (wsi, req, conv, on_restarted);
    }
    if (streq (action, "channels"))
        return http_reply_error (wsi, req, 400, "this path takes a websocket upgrade");
    if (!*action || streq (action, "interrupt") || streq (action, "restart"))
        return http_reply_error (wsi, req, 405, "method not allowed here");
    return http_reply_error (wsi, req, 404, "no such path");
}

typedef struct {
    http_front_t *front;
    json_t *list;
} models_t;

static void
model_append (gw_conv_t *conv, void *arg)
{
    models_t *m = arg;
    json_array_append_new (m->list, http_kernel_model (m->front, conv));
}

int
http_api_kernels_route (struct lws *wsi, http_req_t *req, const char *rest)
{
    if (*rest)
        return kernel_route (wsi, req, rest + 1);
    if (req->method == LWSHUMETH_POST)
        return kernels_create (wsi, req);
    if (req->method != LWSHUMETH_GET)
        return http_reply_error (wsi, req, 405, "GET or POST");
    models_t models = {req->front, json_array ()};
    gw_core_visit (req->front->core, model_append, &models);
    return http_reply_write (wsi, req, 200, models.list, NULL);
}
