/*  gw_sanitize.c - what a kernel's messages may leave in a browser.

    Jupyter front ends treat outputs of the live session as trusted: the
    notebook (6) evals application/javascript and the scripts of text/html,
    puts image/svg+xml inline, renders Markdown's raw HTML, and so do
    JupyterLab and others. A confined kernel would thus run script in the
    person's page, with the page's reach (its server's API, other kernels:
    the red-team switched a notebook to the host's unconfined kernel). So
    each field a front end turns into page is cleaned here, once for every
    front, before delivery:

    message                      field                        what happens
    display_data, execute_result,
    update_display_data          content.data (mime bundle)   bundle_clean
    execute_reply                payload[].data (the pager)   bundle_clean
    inspect_reply                content.data (tooltip)       bundle_clean
    debug_reply                  body.data (rich variables)   bundle_clean
    kernel_info_reply            help_links[].url             only http(s)/mailto links kept
                                 language_info.codemirror_mode, .name
                                                              a mode name notebook 6 can only
                                                              look up, never a path it loads
                                 language_info.nbconvert_exporter
                                                              a plain name (nbconvert imports a
                                                              dotted one on the host)
    comm_open, comm_msg          widget state: description,   HTML cleaned (ipywidgets 6 and 7
                                 value of HTML-like widgets,  render them with innerHTML);
                                 outputs (Output widget), and bundle_clean; ipywidgets 8's
                                 the states of the control    update_states: each state as a
                                 comm                         widget of unknown view

    bundle_clean keeps the mime types whose renderers put no kernel script
    in the page (plain text, raster images, LaTeX for MathJax, which both
    front ends run with its Safe extension, JSON, PDF as a link, widget
    views), cleans text/html and image/svg+xml (gw_markup.c), keeps
    text/markdown only when inert (else its source goes as text/plain),
    and drops every other type: application/javascript and its aliases,
    and the vendor types whose renderers run code of the data's (Bokeh's,
    HoloViews' exec types) or that no one here has read.

    Everything else (streams, errors, status, execute_input, completions,
    history, input prompts) front ends show as text; execute_reply's
    user_expressions are data for extensions, which notebook 6 and
    JupyterLab do not render.
*/
#include "gw_sanitize.h"
#include "gw_markup.h"
#include "gw_peek.h"
#include "wire.h"

#include <string.h>

struct gw_sanitize {
    /* comm_id -> COMM_PLAIN (a widget of ipywidgets' own whose value is
       text) or COMM_OTHER (a comm that is no widget); not there: cleaned
       as a widget that may render its value as HTML */
    zhashx_t *comms;
};

#define COMM_PLAIN ((void *) 1)
#define COMM_OTHER ((void *) 2)

/* Mime types kept as they are. */
static const char passed_types[] =
    "text/plain text/latex image/png image/jpeg image/gif image/webp image/bmp application/json "
    "application/pdf application/vnd.jupyter.widget-view+json application/vnd.jupyter.stdout "
    "application/vnd.jupyter.stderr";
/* The message types whose content is looked at. */
static const char cleaned_messages[] =
    "display_data execute_result update_display_data execute_reply inspect_reply debug_reply kernel_info_reply "
    "comm_open comm_msg comm_close";
/* ipywidgets' own view modules, and their views that put a value in the
   page as HTML (ipywidgets 6 to 8: innerHTML). */
static const char widget_modules[] = "jupyter-js-widgets @jupyter-widgets/controls @jupyter-widgets/base "
                                     "@jupyter-widgets/output";
static const char html_views[] = "HTMLView HTMLMathView";

static bool
word_in (const char *list, const char *word)
{
    return gw_markup_word_in (list, word, strlen (word));
}

static void
removed_add (gw_sanitize_removed_t *removed, const char *what)
{
    size_t len = strlen (removed->text), n = strlen (what);
    for (const char *p = removed->text; (p = strstr (p, what)); p += n)
        if ((p == removed->text || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
            return; /* named already */
    if (len + n + 2 > sizeof removed->text)
        return;
    snprintf (removed->text + len, sizeof removed->text - len, "%s%s", len ? "," : "", what);
}

gw_sanitize_t *
gw_sanitize_new (void)
{
    gw_sanitize_t *self = wire_xcalloc (1, sizeof *self);
    self->comms = zhashx_new ();
    return self;
}

void
gw_sanitize_destroy (gw_sanitize_t **self_p)
{
    gw_sanitize_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy (&self->comms);
    free (self);
    *self_p = NULL;
}

/* ---- values ------------------------------------------------------------------ */

/* The text of a mime bundle value: a string, or (nbformat's multi-line
   form, which front ends join) an array of strings; malloc'd, NULL when
   it is neither. */
static char *
value_text (const json_t *value, size_t *len)
{
    if (json_is_string (value)) {
        *len = json_string_length (value);
        char *text = wire_xmalloc (*len + 1);
        memcpy (text, json_string_value (value), *len + 1);
        return text;
    }
    if (!json_is_array (value))
        return NULL;
    size_t i, total = 0;
    json_t *part;
    json_array_foreach (value, i, part) {
        if (!json_is_string (part))
            return NULL;
        total += json_string_length (part);
    }
    char *text = wire_xmalloc (total + 1);
    total = 0;
    json_array_foreach (value, i, part) {
        memcpy (text + total, json_string_value (part), json_string_length (part));
        total += json_string_length (part);
    }
    text[total] = 0;
    *len = total;
    return text;
}

/* value's inert form as a new string, or NULL when none may be shown. */
static json_t *
markup_clean (gw_markup_kind_t kind, const json_t *value)
{
    size_t len, out_len;
    char *text = value_text (value, &len);
    if (!text)
        return NULL;
    if (kind == GW_MARKUP_HTML && gw_markup_is_plain_text (text, len)) {
        json_t *same = json_is_string (value) ? json_incref ((json_t *) value) : json_stringn (text, len);
        free (text);
        return same;
    }
    char *clean = gw_markup_clean (kind, text, len, &out_len);
    free (text);
    json_t *out = clean ? json_stringn (clean, out_len) : NULL; /* NULL: not UTF-8 */
    free (clean);
    return out;
}

/* A string field of obj that a front end renders as HTML, cleaned. */
static bool
html_field_clean (json_t *obj, const char *key, const char *name, gw_sanitize_removed_t *removed)
{
    json_t *value = json_object_get (obj, key);
    if (!json_is_string (value))
        return false;
    json_t *clean = markup_clean (GW_MARKUP_HTML, value);
    if (clean && json_equal (clean, value)) {
        json_decref (clean);
        return false;
    }
    json_object_set_new (obj, key, clean ? clean : json_string (""));
    removed_add (removed, name);
    return true;
}

/* ---- mime bundles --------------------------------------------------------- */

static bool
bundle_clean (json_t *data, gw_sanitize_removed_t *removed)
{
    if (!json_is_object (data))
        return false;
    bool changed = false;
    const char *key;
    json_t *value;
    void *tmp;
    char *markdown = NULL;
    json_object_foreach_safe (data, tmp, key, value) {
        if (word_in (passed_types, key))
            continue;
        bool html = streq (key, "text/html"), svg = streq (key, "image/svg+xml");
        if (html || svg) {
            json_t *clean = markup_clean (html ? GW_MARKUP_HTML : GW_MARKUP_SVG, value);
            if (clean && json_equal (clean, value)) {
                json_decref (clean);
                continue;
            }
            removed_add (removed, key);
            changed = true;
            if (clean)
                json_object_set_new (data, key, clean);
            else
                json_object_del (data, key);
            continue;
        }
        if (streq (key, "text/markdown")) {
            size_t len;
            char *text = value_text (value, &len);
            if (text && gw_markup_markdown_inert (text, len)) {
                free (text);
                continue;
            }
            free (markdown);
            markdown = text;
        }
        removed_add (removed, key);
        changed = true;
        json_object_del (data, key);
    }
    if (markdown) { /* its source, to read */
        json_t *plain = json_string (markdown);
        if (plain)
            json_object_set_new (data, "text/plain", plain);
        free (markdown);
    }
    if (changed && json_object_size (data) == 0) {
        char note[256];
        snprintf (note, sizeof note,
                  "[kennel removed this output's active content (%s): see kennel.conf(5), active_content]",
                  removed->text);
        json_object_set_new (data, "text/plain", json_string (note));
    }
    return changed;
}

/* bundle_clean on obj[key] */
static bool
bundle_at (json_t *obj, const char *key, gw_sanitize_removed_t *removed)
{
    return json_is_object (obj) && bundle_clean (json_object_get (obj, key), removed);
}

/* ---- kernel_info ----------------------------------------------------------- */

/* A CodeMirror mode notebook 6 may be given: it looks a name up, and when
   it knows none, loads "codemirror/mode/NAME/NAME" with requirejs, which
   takes "../" (and a ':' makes it a URL) to any script of the server,
   /files/ of the notebook's directory included, where the kernel writes. */
static bool
mode_name_ok (const json_t *value)
{
    const char *s = json_string_value (value);
    size_t n = s ? json_string_length (value) : 0;
    if (n == 0 || n > 64 || s[0] == '/' || strstr (s, ".."))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+-/", s[i]) || s[i] == 0)
            return false;
    return true;
}

static bool
mode_ok (const json_t *mode)
{
    if (json_is_string (mode))
        return mode_name_ok (mode);
    if (!json_is_object (mode))
        return false;
    static const char *const fields[] = {"name", "mode", "mime", NULL};
    for (int i = 0; fields[i]; i++) {
        json_t *v = json_object_get (mode, fields[i]);
        if (v && !mode_name_ok (v))
            return false;
    }
    return json_object_get (mode, "name") || json_object_get (mode, "mode");
}

static bool
kernel_info_clean (json_t *content, gw_sanitize_removed_t *removed)
{
    bool changed = false;
    json_t *links = json_object_get (content, "help_links");
    if (json_is_array (links)) {
        for (size_t i = json_array_size (links); i-- > 0;) {
            json_t *url = json_object_get (json_array_get (links, i), "url");
            const char *u = json_string_value (url);
            if (!u || !gw_markup_link_ok (u, json_string_length (url)) || u[0] == '#') {
                json_array_remove (links, i);
                removed_add (removed, "help_links");
                changed = true;
            }
        }
    }
    json_t *lang = json_object_get (content, "language_info");
    if (!json_is_object (lang))
        return changed;
    json_t *mode = json_object_get (lang, "codemirror_mode");
    if (mode ? !mode_ok (mode) : (json_object_get (lang, "name") && !mode_name_ok (json_object_get (lang, "name")))) {
        json_object_set_new (lang, "codemirror_mode", json_string ("null")); /* CodeMirror's plain text */
        removed_add (removed, "codemirror_mode");
        changed = true;
    }
    json_t *exporter = json_object_get (lang, "nbconvert_exporter");
    const char *e = json_string_value (exporter);
    if (exporter && (!e || strspn (e, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
                               != json_string_length (exporter))) {
        json_object_del (lang, "nbconvert_exporter");
        removed_add (removed, "nbconvert_exporter");
        changed = true;
    }
    return changed;
}

/* ---- widgets ------------------------------------------------------------------ */

/* What a widget's state fields do in the page: its description is HTML
   in ipywidgets 6 and 7 (innerHTML, MathJax), its value too for the HTML
   views and any view kennel does not know, an Output widget's outputs are
   mime bundles. */
static bool
widget_state_clean (json_t *state, bool plain, gw_sanitize_removed_t *removed)
{
    if (!json_is_object (state))
        return false;
    bool changed = html_field_clean (state, "description", "widget description", removed);
    if (!plain)
        changed |= html_field_clean (state, "value", "widget value", removed);
    json_t *outputs = json_object_get (state, "outputs");
    size_t i;
    json_t *output;
    json_array_foreach (outputs, i, output)
        changed |= bundle_at (output, "data", removed);
    return changed;
}

/* Whether the state names one of ipywidgets' own views that shows its
   value as text. */
static bool
widget_plain (const json_t *state)
{
    const char *module = json_string_value (json_object_get (state, "_view_module"));
    const char *view = json_string_value (json_object_get (state, "_view_name"));
    if (!module || !word_in (widget_modules, module))
        return false;
    return !view || !word_in (html_views, view);
}

static void
comm_note (gw_sanitize_t *self, const char *comm_id, void *kind)
{
    if (zhashx_lookup (self->comms, comm_id))
        zhashx_update (self->comms, comm_id, kind);
    else if (zhashx_size (self->comms) < GW_SANITIZE_COMMS_MAX)
        zhashx_insert (self->comms, comm_id, kind);
}

static bool
comm_clean (gw_sanitize_t *self, const char *msg_type, json_t *content, gw_sanitize_removed_t *removed)
{
    const char *comm_id = json_string_value (json_object_get (content, "comm_id"));
    json_t *data = json_object_get (content, "data");
    if (!comm_id || !gw_text (json_object_get (content, "comm_id")))
        comm_id = NULL; /* cleaned all the same, remembered never */
    if (streq (msg_type, "comm_close")) {
        if (comm_id)
            zhashx_delete (self->comms, comm_id);
        return false;
    }
    if (streq (msg_type, "comm_open")) {
        const char *target = json_string_value (json_object_get (content, "target_name"));
        bool widget = target && (streq (target, "jupyter.widget") || streq (target, "ipywidgets"));
        /* ipywidgets 7+ sends {"state": {...}}, 6 the state itself */
        json_t *state = json_is_object (json_object_get (data, "state")) ? json_object_get (data, "state") : data;
        bool plain = widget && widget_plain (state);
        if (comm_id && widget && !plain)
            zhashx_delete (self->comms, comm_id); /* the default: the strictest kind */
        else if (comm_id)
            comm_note (self, comm_id, widget ? COMM_PLAIN : COMM_OTHER);
        if (!widget)
            return false;
        bool changed = widget_state_clean (data, plain, removed);
        if (state != data)
            changed |= widget_state_clean (state, plain, removed);
        return changed;
    }
    /* comm_msg: an update of a widget's state, or (ipywidgets 8's control
       comm, which the front end opens) every widget's state at once */
    void *kind = comm_id ? zhashx_lookup (self->comms, comm_id) : NULL;
    if (kind == COMM_OTHER)
        return false;
    json_t *state = json_object_get (data, "state");
    if (kind == COMM_PLAIN && json_is_object (state)
        && (json_object_get (state, "_view_name") || json_object_get (state, "_view_module"))) {
        zhashx_delete (self->comms, comm_id); /* another view: no longer known plain */
        kind = NULL;
    }
    bool changed = widget_state_clean (state, kind == COMM_PLAIN, removed);
    const char *key;
    json_t *model;
    json_object_foreach (json_object_get (data, "states"), key, model)
        changed |= widget_state_clean (json_object_get (model, "state"), false, removed);
    return changed;
}

/* ---- messages -------------------------------------------------------------- */

bool
gw_sanitize_content (gw_sanitize_t *self, const char *msg_type, json_t *content, gw_sanitize_removed_t *removed)
{
    if (!json_is_object (content))
        return false;
    if (streq (msg_type, "display_data") || streq (msg_type, "execute_result")
        || streq (msg_type, "update_display_data") || streq (msg_type, "inspect_reply"))
        return bundle_at (content, "data", removed);
    if (streq (msg_type, "execute_reply")) {
        bool changed = false;
        size_t i;
        json_t *payload;
        json_array_foreach (json_object_get (content, "payload"), i, payload)
            changed |= bundle_at (payload, "data", removed);
        return changed;
    }
    if (streq (msg_type, "debug_reply"))
        return bundle_at (json_object_get (content, "body"), "data", removed);
    if (streq (msg_type, "kernel_info_reply"))
        return kernel_info_clean (content, removed);
    if (streq (msg_type, "comm_open") || streq (msg_type, "comm_msg") || streq (msg_type, "comm_close"))
        return comm_clean (self, msg_type, content, removed);
    return false;
}

gw_sanitize_result_t
gw_sanitize_msg (gw_sanitize_t *self, zmsg_t *msg, gw_sanitize_removed_t *removed)
{
    char msg_type[32];
    int n = gw_peek_frame (msg, 2, "msg_type", msg_type, sizeof msg_type);
    if (n < 0 || n >= (int) sizeof msg_type || !word_in (cleaned_messages, msg_type))
        return GW_SANITIZE_KEPT; /* an absent or unknown type: front ends show nothing of it */
    removed->text[0] = 0;
    zframe_t *frame = wire_frames_part (msg, 5);
    json_t *content = frame ? json_loadb ((const char *) zframe_data (frame), zframe_size (frame), JSON_ALLOW_NUL, NULL)
                            : NULL;
    if (!content) { /* valid for Python's json (the relay checked), not for jansson: a number out of range */
        snprintf (removed->text, sizeof removed->text, "unreadable content");
        return GW_SANITIZE_DROPPED;
    }
    gw_sanitize_result_t result = GW_SANITIZE_KEPT;
    if (gw_sanitize_content (self, msg_type, content, removed)) {
        char *text = json_dumps (content, JSON_COMPACT);
        if (text) {
            zframe_reset (frame, text, strlen (text));
            free (text);
            result = GW_SANITIZE_CLEANED;
        }
        else
            result = GW_SANITIZE_DROPPED;
    }
    json_decref (content);
    return result;
}
