/*  gw_markup_fuzz.c - libFuzzer target: what a kernel may leave in a
    browser (gateway/gw_markup.c, gateway/gw_sanitize.c) on any bytes.

    Input: one selector byte, then the bytes.
        bits 0-1  0: HTML, 1: SVG (gw_markup_clean); 2: a message content,
                  JSON (gw_sanitize_content); 3: Markdown and links (the
                  judges, for crashes only)
        bits 2-4  for a content, its message type (display_data,
                  execute_reply, inspect_reply, kernel_info_reply,
                  comm_open, comm_msg, debug_reply, update_display_data)
    Checked, trapping otherwise:
    - markup: the output, parsed again by libxml2, has no script-capable
      construct (checked here by a walk of its own, not gw_markup's lists:
      no script, style, frame, object, form, foreignObject or animation
      element, no on* attribute, no URL but http(s), mailto, #fragment or a
      data: raster image, no style declaration that fetches, evaluates or
      places); cleaning the output again gives the same bytes;
    - a content: every mime bundle left holds only kept types, and cleaning
      it again changes nothing (comm messages excepted: the first pass
      learns the widget).
*/
#include "gateway/gw_markup.h"
#include "gateway/gw_sanitize.h"

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static const char *const bad_elements[] = {"script", "style", "iframe", "frame", "frameset", "object", "embed",
                                           "applet", "base", "link", "meta", "form", "input", "button", "select",
                                           "textarea", "template", "noscript", "math", "foreignobject", "animate",
                                           "animatemotion", "animatetransform", "set", "handler", "listener", "xmp",
                                           "noembed", "noframes", "plaintext", "iframe", "portal", NULL};
static const char *const url_attrs[] = {"href", "src", "action", "formaction", "data", "background", "poster",
                                        "xlink:href", NULL};
static const char *const safe_urls[] = {"http://", "https://", "mailto:", "#", "data:image/png;base64,",
                                        "data:image/jpeg;base64,", "data:image/gif;base64,",
                                        "data:image/webp;base64,", "data:image/bmp;base64,", NULL};
/* a call (expression(), image-set()...), an escape, a comment, a string,
   an at-rule, a URL scheme, or a property that places the element */
static const char *const bad_css[] = {"expression(", "javascript", "@", "\\", "/*", "\"", "'", ":/", NULL};
static const char *const placing_css[] = {"position", "top", "left", "right", "bottom", "display", "float", "transform",
                                          "z-index", "margin", "margin-top", "margin-left", "inset", "behavior",
                                          "-moz-binding", "width", "height", "content", NULL};

static bool
in_list (const char *const *list, const char *s)
{
    for (int i = 0; list[i]; i++)
        if (strcasecmp (list[i], s) == 0)
            return true;
    return false;
}

static void
check_attr (xmlNodePtr el, xmlAttrPtr a, bool html)
{
    char name[64];
    snprintf (name, sizeof name, "%s%s%s", a->ns && a->ns->prefix ? (const char *) a->ns->prefix : "",
              a->ns && a->ns->prefix ? ":" : "", (const char *) a->name);
    if (strncasecmp (name, "on", 2) == 0)
        __builtin_trap ();
    xmlChar *v = xmlNodeListGetString (el->doc, a->children, 1);
    const char *value = v ? (const char *) v : "";
    if (in_list (url_attrs, name)) {
        bool ok = false;
        for (int i = 0; safe_urls[i] && !ok; i++)
            ok = strncasecmp (value, safe_urls[i], strlen (safe_urls[i])) == 0;
        if (!ok)
            __builtin_trap ();
    }
    if (strcasecmp (name, "style") == 0) {
        for (int i = 0; bad_css[i]; i++)
            if (strcasestr (value, bad_css[i]))
                __builtin_trap ();
        for (const char *d = value; *d;) {
            d += strspn (d, " ;");
            size_t n = strcspn (d, ":;");
            char prop[64];
            snprintf (prop, sizeof prop, "%.*s", (int) (n < 63 ? n : 63), d);
            while (strlen (prop) && prop[strlen (prop) - 1] == ' ')
                prop[strlen (prop) - 1] = 0;
            if (in_list (placing_css, prop))
                __builtin_trap ();
            d += strcspn (d, ";");
        }
        for (const char *u = value; (u = strcasestr (u, "url(")); u += 4)
            if (u[4] != '#')
                __builtin_trap ();
    }
    if (!html && !in_list (url_attrs, name) && strcasecmp (name, "style") != 0) /* SVG paint, clip, mask */
        for (const char *u = value; (u = strcasestr (u, "url(")); u += 4)
            if (u[4] != '#')
                __builtin_trap ();
    xmlFree (v);
}

static void
check_tree (xmlNodePtr n, bool html, int depth)
{
    for (; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        if (in_list (bad_elements, (const char *) n->name) || (html && strcasecmp ((const char *) n->name, "svg") == 0)
            || (html && strcasecmp ((const char *) n->name, "title") == 0))
            __builtin_trap ();
        for (xmlAttrPtr a = n->properties; a; a = a->next)
            check_attr (n, a, html);
        if (depth < 300)
            check_tree (n->children, html, depth + 1);
    }
}

static void
no_errors (void *ctx, const char *msg, ...)
{
}

static void
markup_case (gw_markup_kind_t kind, const char *text, size_t len)
{
    size_t out_len;
    char *out = gw_markup_clean (kind, text, len, &out_len);
    if (!out)
        return;
    if (strlen (out) != out_len)
        __builtin_trap ();
    xmlSetGenericErrorFunc (NULL, no_errors);
    xmlDocPtr doc = kind == GW_MARKUP_HTML
                        ? htmlReadMemory (out, (int) out_len, NULL, "UTF-8",
                                          HTML_PARSE_NONET | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING)
                        : xmlReadMemory (out, (int) out_len, NULL, "UTF-8",
                                         XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (kind == GW_MARKUP_SVG && !doc)
        __builtin_trap (); /* what it writes is well-formed */
    if (doc)
        check_tree (doc->children, kind == GW_MARKUP_HTML, 0);
    xmlFreeDoc (doc);
    size_t again_len;
    char *again = gw_markup_clean (kind, out, out_len, &again_len);
    if (!again || again_len != out_len || memcmp (again, out, out_len) != 0)
        __builtin_trap ();
    free (again);
    free (out);
}

static const char *const kept_types[] = {"text/plain", "text/latex", "image/png", "image/jpeg", "image/gif",
                                         "image/webp", "image/bmp", "application/json", "application/pdf",
                                         "application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.stdout",
                                         "application/vnd.jupyter.stderr", "text/html", "image/svg+xml",
                                         "text/markdown", NULL};

static void
check_bundle (json_t *data)
{
    const char *key;
    json_t *value;
    json_object_foreach (data, key, value)
        if (!in_list (kept_types, key))
            __builtin_trap ();
}

static void
content_case (uint8_t selector, const char *text, size_t len)
{
    static const char *const types[] = {"display_data", "execute_reply", "inspect_reply", "kernel_info_reply",
                                        "comm_open", "comm_msg", "debug_reply", "update_display_data"};
    const char *msg_type = types[(selector >> 2) & 7];
    json_t *content = json_loadb (text, len, JSON_ALLOW_NUL, NULL);
    if (!content)
        return;
    gw_sanitize_t *s = gw_sanitize_new ();
    gw_sanitize_removed_t removed = {{0}};
    (void) gw_sanitize_content (s, msg_type, content, &removed);
    if (json_is_object (content) && strncmp (msg_type, "comm", 4) != 0 && strcmp (msg_type, "kernel_info_reply") != 0) {
        if (strcmp (msg_type, "execute_reply") == 0) {
            size_t i;
            json_t *p;
            json_array_foreach (json_object_get (content, "payload"), i, p)
                if (json_is_object (json_object_get (p, "data")))
                    check_bundle (json_object_get (p, "data"));
        }
        else if (strcmp (msg_type, "debug_reply") != 0 && json_is_object (json_object_get (content, "data")))
            check_bundle (json_object_get (content, "data"));
    }
    if (strncmp (msg_type, "comm", 4) != 0 && gw_sanitize_content (s, msg_type, content, &removed))
        __builtin_trap ();
    gw_sanitize_destroy (&s);
    json_decref (content);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint8_t selector = data[0];
    const char *text = (const char *) data + 1;
    size--;
    switch (selector & 3) {
    case 0:
        markup_case (GW_MARKUP_HTML, text, size);
        break;
    case 1:
        markup_case (GW_MARKUP_SVG, text, size);
        break;
    case 2:
        content_case (selector, text, size);
        break;
    default:
        (void) gw_markup_markdown_inert (text, size);
        (void) gw_markup_link_ok (text, size);
    }
    return 0;
}
