/*  http_checkpoints.c - the Contents API's checkpoints: GET and POST
    /api/contents/<id>/<file>/checkpoints (list, create), POST and DELETE
    .../checkpoints/<checkpoint id> (restore, delete).

    A checkpoint is a copy of the file inside the workspace, where
    jupyter_server keeps it: <dir>/.ipynb_checkpoints/<base>-checkpoint<ext>,
    one per file, id "checkpoint". Kept there, it costs the gateway no
    memory and survives the gateway's restart; it counts against the
    workspace's quota, and the kernel can read, change or delete it (it is
    the user's undo, not a record the kernel cannot touch). Every step is a
    call of the file service: both paths resolved beneath the workspace, no
    link followed (a symlink the kernel plants as .ipynb_checkpoints or as
    the checkpoint is refused), a copy of at most one chunk (4 MiB).
*/
#include "http.h"

#include <ctype.h>
#include <string.h>
#include <unistd.h>

#define CHECKPOINT_ID "checkpoint"

/* The checkpoint's path of file (malloc'd): Python's os.path.splitext
   parts around "-checkpoint", as jupyter_server names it. */
static char *
checkpoint_path (const char *file)
{
    const char *slash = strrchr (file, '/');
    const char *name = slash ? slash + 1 : file;
    const char *start = name + strspn (name, "."); /* leading dots are no extension */
    const char *dot = strrchr (start, '.');
    size_t base = dot ? (size_t) (dot - name) : strlen (name);
    return wire_xasprintf ("%.*s%s/%.*s-checkpoint%s", (int) (name - file), file, HTTP_CHECKPOINTS_DIR, (int) base,
                           name, dot ? dot : "");
}

/* The directory that holds file's checkpoint (malloc'd). */
static char *
checkpoint_dir (const char *file)
{
    const char *slash = strrchr (file, '/');
    return wire_xasprintf ("%.*s%s", slash ? (int) (slash - file + 1) : 0, file, HTTP_CHECKPOINTS_DIR);
}

bool
http_checkpoints_split (const char *path, char **file, char **id)
{
    const char *last = strrchr (path, '/');
    if (!last)
        return false;
    if (streq (last + 1, "checkpoints")) {
        *file = wire_xstrndup (path, (size_t) (last - path));
        *id = NULL;
        return true;
    }
    const char *before = last - path >= 12 ? last - 12 : NULL;
    size_t idlen = strlen (last + 1);
    /* jupyter_server's checkpoint ids: [\w-]+ */
    if (!before || strncmp (before, "/checkpoints", 12) != 0 || before == path || idlen == 0 || idlen > 64)
        return false;
    for (const char *p = last + 1; *p; p++)
        if (!(isalnum ((unsigned char) *p) || *p == '_' || *p == '-'))
            return false;
    *file = wire_xstrndup (path, (size_t) (before - path));
    *id = wire_xstrdup (last + 1);
    return true;
}

/* {"id", "last_modified"} of the checkpoint at cp, or NULL + err. */
static json_t *
checkpoint_model (int root, const char *cp, gw_files_error_t *err)
{
    json_t *st = gw_files_stat (root, cp, err);
    if (!st)
        return NULL;
    json_t *model = json_pack ("{s:s, s:O}", "id", CHECKPOINT_ID, "last_modified",
                               json_object_get (st, "last_modified"));
    json_decref (st);
    return model;
}

/* The checkpoint id names one that exists: its path, else NULL + err. */
static char *
checkpoint_existing (int root, const char *file, const char *id, gw_files_error_t *err)
{
    char *cp = streq (id, CHECKPOINT_ID) ? checkpoint_path (file) : NULL;
    json_t *model = cp ? gw_files_stat (root, cp, err) : NULL;
    if (!model && (!cp || streq (err->ename, gw_error_name (GW_E_NO_SUCH_FILE)))) {
        err->ename = gw_error_name (GW_E_NO_SUCH_CHECKPOINT);
        snprintf (err->evalue, sizeof err->evalue, "checkpoint does not exist: %.*s@%.*s", gw_text_fit (file, 200),
                  file, gw_text_fit (id, 64), id);
    }
    if (!model) {
        free (cp);
        return NULL;
    }
    json_decref (model);
    return cp;
}

static int
checkpoint_create (struct lws *wsi, http_req_t *req, int root, const char *file, gw_files_error_t *err)
{
    char *dir = checkpoint_dir (file);
    char *cp = checkpoint_path (file);
    json_t *model = NULL;
    int rc = gw_files_mkdir (root, dir, err) == 0 ? gw_files_copy (root, file, cp, true, err) : -1;
    if (rc == 0)
        model = checkpoint_model (root, cp, err);
    else if (streq (err->ename, gw_error_name (GW_E_WORKSPACE_FULL))) {
        gw_files_error_t ignored; /* an emptied checkpoint would restore nothing */
        (void) gw_files_delete (root, cp, &ignored);
    }
    free (dir);
    free (cp);
    return model ? http_reply_write (wsi, req, 201, model, NULL) : http_contents_error (wsi, req, err);
}

static int
checkpoint_list (struct lws *wsi, http_req_t *req, int root, const char *file, gw_files_error_t *err)
{
    char *cp = checkpoint_path (file);
    json_t *model = checkpoint_model (root, cp, err);
    free (cp);
    if (!model && !streq (err->ename, gw_error_name (GW_E_NO_SUCH_FILE)))
        return http_contents_error (wsi, req, err);
    json_t *list = json_array ();
    if (model)
        json_array_append_new (list, model);
    return http_reply_write (wsi, req, 200, list, NULL);
}

/* POST restores the file from the checkpoint, DELETE removes it: 204. */
static int
checkpoint_change (struct lws *wsi, http_req_t *req, int root, const char *file, const char *id,
                   gw_files_error_t *err)
{
    char *cp = checkpoint_existing (root, file, id, err);
    int rc = -1;
    if (cp && req->method == LWSHUMETH_POST)
        rc = gw_files_copy (root, cp, file, true, err);
    else if (cp)
        rc = gw_files_delete (root, cp, err);
    free (cp);
    return rc == 0 ? http_reply_write (wsi, req, 204, NULL, NULL) : http_contents_error (wsi, req, err);
}

int
http_checkpoints_serve (struct lws *wsi, http_req_t *req, int root, const char *file, const char *id,
                        gw_files_error_t *err)
{
    int m = req->method;
    if (!id && m == LWSHUMETH_GET)
        return checkpoint_list (wsi, req, root, file, err);
    if (!id && m == LWSHUMETH_POST)
        return checkpoint_create (wsi, req, root, file, err);
    if (id && (m == LWSHUMETH_POST || m == LWSHUMETH_DELETE))
        return checkpoint_change (wsi, req, root, file, id, err);
    return http_reply_error (wsi, req, 405,
                             id ? "POST restores the checkpoint, DELETE removes it" : "GET lists checkpoints, POST makes one");
}

void
http_checkpoints_moved (int root, const char *from, const char *to)
{
    gw_files_error_t err;
    char *old = checkpoint_path (from), *dir = checkpoint_dir (to), *cp = checkpoint_path (to);
    json_t *model = gw_files_stat (root, old, &err);
    /* the file moved already: its checkpoint follows when it can, and
       stays behind (under its old name) when it cannot */
    if (model && gw_files_mkdir (root, dir, &err) == 0)
        (void) gw_files_rename (root, old, cp, &err);
    json_decref (model);
    free (old);
    free (dir);
    free (cp);
}

void
http_checkpoints_dropped (int root, const char *file)
{
    gw_files_error_t err;
    char *cp = checkpoint_path (file);
    (void) gw_files_delete (root, cp, &err); /* none is the usual case */
    free (cp);
}

int
http_checkpoints_clear_dir (int root, const char *path, gw_files_error_t *err)
{
    bool truncated;
    json_t *list = gw_files_list (root, path, &truncated, err);
    json_t *only = json_array_size (list) == 1 ? json_array_get (list, 0) : NULL;
    char *dir = only && streq (json_string_value (json_object_get (only, "name")), HTTP_CHECKPOINTS_DIR)
                    ? wire_xstrdup (json_string_value (json_object_get (only, "path")))
                    : NULL;
    json_decref (list);
    if (!dir) {
        if (list && !only)
            http_contents_fail (err, GW_E_DIRECTORY_NOT_EMPTY, "the directory holds more than its checkpoints");
        return -1;
    }
    /* only checkpoints are in the directory: they go with it */
    json_t *cps = gw_files_list (root, dir, &truncated, err);
    size_t i;
    json_t *entry;
    json_array_foreach (cps, i, entry)
        (void) gw_files_delete (root, json_string_value (json_object_get (entry, "path")), err);
    json_decref (cps);
    int rc = gw_files_delete (root, dir, err);
    free (dir);
    return rc;
}
