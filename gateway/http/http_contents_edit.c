/*  http_contents_edit.c - what JupyterLab's file browser asks besides
    reading and saving: PATCH /api/contents/<id>/<path> {"path": new}
    renames, POST /api/contents/<id>/<dir> {"copy_from": path} copies a file
    into the directory, POST {"type", "ext"} (or no body) makes a new
    untitled file, notebook or directory there.

    Names as jupyter_server picks them: "untitled<ext>", "Untitled.ipynb",
    "Untitled Folder", then with 1, 2, ... inserted; a copy keeps the name
    when it is free, else "<base>-Copy1<ext>", .... Each try creates the
    name exclusively (O_EXCL, mkdirat, RENAME_NOREPLACE): a name the
    kernel takes meanwhile is never overwritten, the next is tried.
*/
#include "http.h"

#include <string.h>
#include <unistd.h>

/* Names tried before giving up (FileExists): each try is a few calls. */
#define NAME_TRIES 1000

/* What nbformat writes for a new notebook. */
static const char EMPTY_NOTEBOOK[] =
    "{\n \"cells\": [],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n";

/* ---- PATCH: rename ------------------------------------------------------ */

int
http_contents_rename (struct lws *wsi, http_req_t *req, int root, const char *path, gw_files_error_t *err)
{
    json_t *body = req->body_len ? json_loadb (req->body, req->body_len, 0, NULL) : NULL;
    json_t *value = json_object_get (body, "path");
    char *to = json_is_string (value) ? gw_files_path (json_string_value (value), json_string_length (value), err)
                                      : NULL;
    if (!json_is_string (value))
        http_contents_fail (err, GW_E_INVALID_REQUEST, "the body must be {\"path\": the new path}");
    json_decref (body);
    json_t *model = NULL;
    if (to && gw_files_rename (root, path, to, err) == 0) {
        if (!streq (path, to))
            http_checkpoints_moved (root, path, to);
        model = gw_files_stat (root, to, err);
    }
    free (to);
    return model ? http_reply_write (wsi, req, 200, http_contents_model (model, NULL), NULL)
                 : http_contents_error (wsi, req, err);
}

/* ---- POST: copy, new untitled ------------------------------------------- */

/* A name split as jupyter_server increments it: a notebook's base ends at
   its last dot, any other name's at its first. */
typedef struct {
    char *base;
    const char *suffix; /* in the name given */
    const char *insert; /* before the number */
} name_t;

/* base with every "-Copy<digits>." made "." (a copy of a copy is named
   from the original); malloc'd. */
static char *
copy_stripped (const char *name)
{
    char *out = wire_xstrdup (name);
    char *p;
    for (char *from = out; (p = strstr (from, "-Copy"));) {
        size_t digits = strspn (p + 5, "0123456789");
        if (p[5 + digits] == '.')
            memmove (p, p + 5 + digits, strlen (p + 5 + digits) + 1);
        else
            from = p + 5;
    }
    return out;
}

static void
name_split (name_t *n, char *name, const char *insert)
{
    size_t len = strlen (name);
    bool notebook = len > 6 && streq (name + len - 6, ".ipynb");
    char *dot = notebook ? name + len - 6 : strchr (name, '.');
    n->suffix = dot ? dot : "";
    n->base = wire_xstrndup (name, dot ? (size_t) (dot - name) : len);
    n->insert = insert;
}

/* The i-th candidate path in dir (malloc'd): the name itself first. */
static char *
name_try (const name_t *n, const char *dir, int i)
{
    char num[16] = "";
    if (i > 0)
        snprintf (num, sizeof num, "%s%d", n->insert, i);
    return wire_xasprintf ("%s%s%s%s%s", dir, *dir ? "/" : "", n->base, num, n->suffix);
}

typedef int (make_fn) (int root, const char *path, const void *arg, gw_files_error_t *err);

/* make(path) on the first candidate whose name is free: its path
   (malloc'd), or NULL + err. */
static char *
name_make (int root, const char *dir, const name_t *n, make_fn *make, const void *arg, gw_files_error_t *err)
{
    for (int i = 0; i < NAME_TRIES; i++) {
        char *path = name_try (n, dir, i);
        size_t len = strlen (path);
        char *normal = gw_files_path (path, len, err);
        free (path);
        if (!normal)
            return NULL;
        if (make (root, normal, arg, err) == 0)
            return normal;
        free (normal);
        if (!streq (err->ename, gw_error_name (GW_E_FILE_EXISTS)))
            return NULL;
    }
    http_contents_fail (err, GW_E_FILE_EXISTS, "no free name: 1000 are taken");
    return NULL;
}

static int
make_copy (int root, const char *path, const void *from, gw_files_error_t *err)
{
    return gw_files_copy (root, from, path, false, err);
}

/* A new file with content arg (a string, "" for none) or, arg NULL, a
   directory. */
static int
make_new (int root, const char *path, const void *arg, gw_files_error_t *err)
{
    int fd = gw_files_create (root, path, arg == NULL, err);
    if (fd < 0)
        return -1;
    int rc = arg ? gw_files_write (fd, 0, arg, strlen (arg), err) : 0;
    close (fd);
    if (rc < 0) {
        gw_files_error_t ignored;
        gw_files_delete (root, path, &ignored);
    }
    return rc;
}

/* {"copy_from": path}: the file copied into dir. */
static char *
post_copy (int root, const char *dir, json_t *from, gw_files_error_t *err)
{
    if (!json_is_string (from)) {
        http_contents_fail (err, GW_E_INVALID_REQUEST, "copy_from must be a path");
        return NULL;
    }
    char *src = gw_files_path (json_string_value (from), json_string_length (from), err);
    if (!src)
        return NULL;
    const char *slash = strrchr (src, '/');
    char *name = copy_stripped (slash ? slash + 1 : src);
    name_t n;
    name_split (&n, name, "-Copy");
    char *out = *src ? name_make (root, dir, &n, make_copy, src, err) : NULL;
    if (!*src)
        http_contents_fail (err, GW_E_IS_A_DIRECTORY, "the workspace's root cannot be copied");
    free (n.base);
    free (name);
    free (src);
    return out;
}

/* {"type", "ext"}: a new untitled file, notebook or directory in dir. */
static char *
post_untitled (int root, const char *dir, const json_t *body, gw_files_error_t *err)
{
    json_t *tv = json_object_get (body, "type"), *ev = json_object_get (body, "ext");
    const char *type = tv ? gw_text (tv) : "", *ext = ev ? gw_text (ev) : "";
    if (!type || !ext || strchr (ext, '/')) {
        http_contents_fail (err, GW_E_INVALID_REQUEST, "type and ext must be strings (ext without /)");
        return NULL;
    }
    if (!*type)
        type = streq (ext, ".ipynb") ? "notebook" : "file";
    const char *content = "";
    char *name;
    if (streq (type, "directory"))
        name = wire_xstrdup ("Untitled Folder"), content = NULL;
    else if (streq (type, "notebook"))
        name = wire_xstrdup ("Untitled.ipynb"), content = EMPTY_NOTEBOOK;
    else if (streq (type, "file"))
        name = wire_xasprintf ("untitled%s", ext);
    else {
        http_contents_fail (err, GW_E_INVALID_REQUEST, "unexpected model type: file, notebook or directory");
        return NULL;
    }
    name_t n;
    name_split (&n, name, content ? "" : " ");
    char *out = name_make (root, dir, &n, make_new, content, err);
    free (n.base);
    free (name);
    return out;
}

int
http_contents_post (struct lws *wsi, http_req_t *req, int root, const char *dir, gw_files_error_t *err)
{
    json_t *model = gw_files_stat (root, dir, err);
    bool is_dir = model && streq (json_string_value (json_object_get (model, "type")), "directory");
    if (model && !is_dir)
        http_contents_fail (err, GW_E_INVALID_REQUEST, "cannot POST to files, use PUT instead");
    else if (!model && streq (err->ename, gw_error_name (GW_E_NO_SUCH_FILE)))
        http_contents_fail (err, GW_E_NO_SUCH_FILE, "no such directory");
    json_decref (model);
    if (!is_dir)
        return http_contents_error (wsi, req, err);
    json_t *body = req->body_len ? json_loadb (req->body, req->body_len, 0, NULL) : json_object ();
    char *made = NULL;
    if (!json_is_object (body))
        http_contents_fail (err, GW_E_INVALID_REQUEST, "the body must be {\"copy_from\"} or {\"type\", \"ext\"}");
    else if (json_object_get (body, "copy_from"))
        made = post_copy (root, dir, json_object_get (body, "copy_from"), err);
    else
        made = post_untitled (root, dir, body, err);
    json_decref (body);
    model = made ? gw_files_stat (root, made, err) : NULL;
    free (made);
    return model ? http_reply_write (wsi, req, 201, http_contents_model (model, NULL), NULL)
                 : http_contents_error (wsi, req, err);
}
