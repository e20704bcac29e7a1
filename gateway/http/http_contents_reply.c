/*  http_contents_reply.c - what the Contents API answers with, whichever
    file serves the request (http_contents.c, http_contents_edit.c,
    http_checkpoints.c): a file service error as its HTTP status and
    message, and the model's shape. The statuses are the error table's
    (gateway/gw_error.c; README.md, "Contents").
*/
#include "http.h"

#include <string.h>

int
http_contents_error (struct lws *wsi, http_req_t *req, const gw_files_error_t *err)
{
    char message[400];
    snprintf (message, sizeof message, "%s: %s", err->ename, err->evalue);
    return http_reply_error (wsi, req, gw_error_http_status (err->ename), message);
}

void
http_contents_fail (gw_files_error_t *err, gw_error_t error, const char *evalue)
{
    err->ename = gw_error_name (error);
    snprintf (err->evalue, sizeof err->evalue, "%s", evalue);
}

json_t *
http_contents_model (json_t *model, const char *type)
{
    const char *name = json_string_value (json_object_get (model, "name"));
    size_t n = strlen (name);
    bool file = streq (json_string_value (json_object_get (model, "type")), "file");
    if (file && (type ? streq (type, "notebook") : n > 6 && streq (name + n - 6, ".ipynb")))
        json_object_set_new (model, "type", json_string ("notebook"));
    json_object_set_new (model, "content", json_null ());
    json_object_set_new (model, "format", json_null ());
    json_object_set_new (model, "mimetype", json_null ());
    return model;
}
