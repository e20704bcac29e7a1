/*  gw_markup.c - HTML and SVG from a kernel made inert for a browser.

    A front end puts a kernel's text/html into its page with innerHTML or
    jQuery (and runs the scripts: outputs of the live session are trusted),
    and notebook 6 puts image/svg+xml there too (inline, not in an <img>).
    So the bytes are parsed here by libxml2 (its HTML parser for HTML, its
    XML parser without network, DTD loading or entity substitution for
    SVG), walked against allowlists in the style of DOMPurify and bleach,
    and written out by the serializer below, which escapes every text and
    attribute value: what reaches the browser is only what the walk kept.

    What is kept (the tables below are the whole policy):
    - HTML: text formatting, lists, tables, images from data: URLs of
      raster types, links to http:, https:, mailto: and #fragments (opened
      in a new tab, rel="noopener noreferrer"); the attributes each needs;
      class only as "dataframe"; style only as declarations of the listed
      properties whose values are plain words, numbers, colours and
      rgb()/hsl(). Never: script, style elements, frames, objects, forms,
      <svg>/<math> inside HTML, event handlers, ids and names (they would
      clobber the page's own), other URLs (the browser would fetch them
      for the kernel: a network the sandbox denies).
    - SVG: shapes, paths, text, groups, <use>, gradients, patterns,
      clip paths, masks and markers with presentation attributes and
      references to ids of the same document only (url(#id), href="#id"),
      <image> from data: URLs. Never: script, style, foreignObject,
      animation (<animate>, <set> can write href), filters, links, event
      handlers, external references.
    Elements that are dropped take what they hold with them; an element
    merely unknown is unwrapped (its content kept). Comments, processing
    instructions, CDATA markers and doctypes are not written.

    Bounds before and during the parse (markup past one is refused whole,
    never cut): GW_MARKUP_BYTES_MAX bytes, GW_MARKUP_DEPTH_MAX open
    elements, MAX_ELEMENTS elements, ATTRS_MAX attributes in a start tag,
    MAX_ERRORS parse errors ("parsing" below: libxml2 2.9 has quadratic
    paths), and an SVG with an internal DTD subset (entities) is refused.
    The output is cleaned again until it is its own fixed point, so what
    a browser parses is what was judged. libxml2 allocates through wire_x*
    (README, "Allocation").
*/
#include "gw_markup.h"
#include "wire.h"

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlmemory.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Elements one piece of markup may have: a pandas table of 5,000 cells
   has about 6,000. */
#define MAX_ELEMENTS 50000

#define SVG_NS "http://www.w3.org/2000/svg"
#define XLINK_NS "http://www.w3.org/1999/xlink"

/* ---- the policy ------------------------------------------------------------ */

typedef enum {
    EL_UNWRAP, /* not kept, its content is */
    EL_DROP,   /* neither it nor its content */
    EL_KEEP,
    EL_VOID, /* kept, has no content and no end tag (HTML) */
} el_action_t;

typedef struct {
    const char *name;
    el_action_t action;
    const char *attrs; /* besides the global ones, space-separated */
} el_rule_t;

/* HTML, sorted by strcmp (bsearch); names as libxml2 gives them (lower
   case). Not listed: unwrapped. */
static const el_rule_t html_rules[] = {
    {"a", EL_KEEP, "href"},
    {"abbr", EL_KEEP, ""},
    {"acronym", EL_KEEP, ""},
    {"applet", EL_DROP, ""},
    {"area", EL_DROP, ""},
    {"audio", EL_DROP, ""},
    {"b", EL_KEEP, ""},
    {"base", EL_DROP, ""},
    {"basefont", EL_DROP, ""},
    {"bdi", EL_KEEP, ""},
    {"bdo", EL_KEEP, ""},
    {"bgsound", EL_DROP, ""},
    {"big", EL_KEEP, ""},
    {"blockquote", EL_KEEP, ""},
    {"body", EL_UNWRAP, ""},
    {"br", EL_VOID, ""},
    {"button", EL_DROP, ""},
    {"canvas", EL_DROP, ""},
    {"caption", EL_KEEP, "align"},
    {"center", EL_KEEP, ""},
    {"cite", EL_KEEP, ""},
    {"code", EL_KEEP, ""},
    {"col", EL_VOID, "span width align valign"},
    {"colgroup", EL_KEEP, "span width align valign"},
    {"datalist", EL_DROP, ""},
    {"dd", EL_KEEP, ""},
    {"del", EL_KEEP, "datetime"},
    {"details", EL_KEEP, "open"},
    {"dfn", EL_KEEP, ""},
    {"div", EL_KEEP, "align"},
    {"dl", EL_KEEP, ""},
    {"dt", EL_KEEP, ""},
    {"em", EL_KEEP, ""},
    {"embed", EL_DROP, ""},
    {"fieldset", EL_DROP, ""},
    {"figcaption", EL_KEEP, ""},
    {"figure", EL_KEEP, ""},
    {"form", EL_DROP, ""},
    {"frame", EL_DROP, ""},
    {"frameset", EL_DROP, ""},
    {"h1", EL_KEEP, "align"},
    {"h2", EL_KEEP, "align"},
    {"h3", EL_KEEP, "align"},
    {"h4", EL_KEEP, "align"},
    {"h5", EL_KEEP, "align"},
    {"h6", EL_KEEP, "align"},
    {"head", EL_DROP, ""},
    {"hr", EL_VOID, "width size align noshade"},
    {"i", EL_KEEP, ""},
    {"iframe", EL_DROP, ""},
    {"img", EL_VOID, "src alt width height"},
    {"input", EL_DROP, ""},
    {"ins", EL_KEEP, "datetime"},
    {"isindex", EL_DROP, ""},
    {"kbd", EL_KEEP, ""},
    {"keygen", EL_DROP, ""},
    {"li", EL_KEEP, "value type"},
    {"link", EL_DROP, ""},
    {"map", EL_DROP, ""},
    {"mark", EL_KEEP, ""},
    {"math", EL_DROP, ""},
    {"meta", EL_DROP, ""},
    {"noembed", EL_DROP, ""},
    {"noframes", EL_DROP, ""},
    {"noscript", EL_DROP, ""},
    {"object", EL_DROP, ""},
    {"ol", EL_KEEP, "start type reversed"},
    {"optgroup", EL_DROP, ""},
    {"option", EL_DROP, ""},
    {"p", EL_KEEP, "align"},
    {"param", EL_DROP, ""},
    {"picture", EL_DROP, ""},
    {"plaintext", EL_DROP, ""},
    {"portal", EL_DROP, ""},
    {"pre", EL_KEEP, ""},
    {"q", EL_KEEP, ""},
    {"rp", EL_KEEP, ""},
    {"rt", EL_KEEP, ""},
    {"ruby", EL_KEEP, ""},
    {"s", EL_KEEP, ""},
    {"samp", EL_KEEP, ""},
    {"script", EL_DROP, ""},
    {"select", EL_DROP, ""},
    {"slot", EL_DROP, ""},
    {"small", EL_KEEP, ""},
    {"source", EL_DROP, ""},
    {"span", EL_KEEP, ""},
    {"strike", EL_KEEP, ""},
    {"strong", EL_KEEP, ""},
    {"style", EL_DROP, ""},
    {"sub", EL_KEEP, ""},
    {"summary", EL_KEEP, ""},
    {"sup", EL_KEEP, ""},
    {"svg", EL_DROP, ""},
    {"table", EL_KEEP, "border cellpadding cellspacing width align summary"},
    {"tbody", EL_KEEP, "align valign"},
    {"td", EL_KEEP, "colspan rowspan align valign width height abbr headers scope nowrap"},
    {"template", EL_DROP, ""},
    {"textarea", EL_DROP, ""},
    {"tfoot", EL_KEEP, "align valign"},
    {"th", EL_KEEP, "colspan rowspan align valign width height abbr headers scope nowrap"},
    {"thead", EL_KEEP, "align valign"},
    {"time", EL_KEEP, "datetime"},
    {"title", EL_DROP, ""},
    {"tr", EL_KEEP, "align valign"},
    {"track", EL_DROP, ""},
    {"tt", EL_KEEP, ""},
    {"u", EL_KEEP, ""},
    {"ul", EL_KEEP, "type"},
    {"var", EL_KEEP, ""},
    {"video", EL_DROP, ""},
    {"xmp", EL_DROP, ""},
};
static const char html_global_attrs[] = "title lang dir style class";
/* The class names kept: pandas' tables. A class the page styles (Bootstrap's
   "modal", "navbar-fixed-top") would place an output over the page. */
static const char html_classes[] = "dataframe";

/* SVG, sorted by strcmp; names are case-sensitive. Not listed: dropped
   (animation, script, style, foreignObject, filters, fonts, cursors...). */
static const el_rule_t svg_rules[] = {
    {"a", EL_UNWRAP, ""},
    {"circle", EL_KEEP, "cx cy r"},
    {"clipPath", EL_KEEP, "clipPathUnits"},
    {"defs", EL_KEEP, ""},
    {"desc", EL_KEEP, ""},
    {"ellipse", EL_KEEP, "cx cy rx ry"},
    {"g", EL_KEEP, ""},
    {"image", EL_KEEP, "href x y width height preserveAspectRatio"},
    {"line", EL_KEEP, "x1 y1 x2 y2"},
    {"linearGradient", EL_KEEP, "href x1 y1 x2 y2 gradientUnits gradientTransform spreadMethod"},
    {"marker", EL_KEEP, "markerWidth markerHeight markerUnits refX refY orient viewBox preserveAspectRatio"},
    {"mask", EL_KEEP, "maskUnits maskContentUnits x y width height"},
    {"path", EL_KEEP, "d pathLength"},
    {"pattern", EL_KEEP, "href patternUnits patternContentUnits patternTransform x y width height viewBox"},
    {"polygon", EL_KEEP, "points"},
    {"polyline", EL_KEEP, "points"},
    {"radialGradient", EL_KEEP, "href cx cy r fx fy fr gradientUnits gradientTransform spreadMethod"},
    {"rect", EL_KEEP, "x y width height rx ry"},
    {"stop", EL_KEEP, "offset"},
    {"svg", EL_KEEP, "width height viewBox version preserveAspectRatio x y"},
    {"switch", EL_UNWRAP, ""},
    {"symbol", EL_KEEP, "viewBox preserveAspectRatio x y width height"},
    {"text", EL_KEEP, "x y dx dy rotate textLength lengthAdjust"},
    {"textPath", EL_KEEP, "href startOffset method spacing"},
    {"title", EL_KEEP, ""},
    {"tspan", EL_KEEP, "x y dx dy rotate textLength lengthAdjust"},
    {"use", EL_KEEP, "href x y width height"},
};
static const char svg_global_attrs[] =
    "id transform style fill fill-opacity fill-rule stroke stroke-width stroke-linecap stroke-linejoin "
    "stroke-miterlimit stroke-dasharray stroke-dashoffset stroke-opacity opacity clip-path clip-rule mask "
    "font-family font-size font-style font-weight text-anchor dominant-baseline alignment-baseline "
    "baseline-shift letter-spacing word-spacing text-decoration color stop-color stop-opacity marker-start "
    "marker-mid marker-end vector-effect shape-rendering paint-order visibility display";

/* CSS properties a style attribute keeps. None can take an element out of
   its place (no position, margin, float, transform, z-index, display), size
   it by the page (no width or height: 100% or 100vh of what?) or fetch (no
   background-image, cursor, list-style-image). */
static const char html_css[] =
    "color background-color text-align vertical-align font-weight font-style font-size font-family "
    "font-variant text-decoration text-transform white-space word-break word-wrap overflow-wrap line-height "
    "letter-spacing border border-top border-right border-bottom border-left border-width border-style "
    "border-color border-top-width border-right-width border-bottom-width border-left-width "
    "border-top-style border-right-style border-bottom-style border-left-style border-top-color "
    "border-right-color border-bottom-color border-left-color border-collapse border-spacing border-radius "
    "padding padding-top padding-right padding-bottom padding-left caption-side empty-cells table-layout "
    "list-style-type";
static const char svg_css[] =
    "fill fill-opacity fill-rule stroke stroke-width stroke-linecap stroke-linejoin stroke-miterlimit "
    "stroke-dasharray stroke-dashoffset stroke-opacity opacity font-family font-size font-style font-weight "
    "text-anchor dominant-baseline clip-rule stop-color stop-opacity paint-order color clip-path mask "
    "marker-start marker-mid marker-end";

/* ---- small helpers ---------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
} buf_t;

static void
buf_add (buf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->data = wire_xreallocarray (b->data, cap, 1);
        b->cap = cap;
    }
    memcpy (b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

static void
buf_str (buf_t *b, const char *s)
{
    buf_add (b, s, strlen (s));
}

/* Text (attr false) or an attribute value in double quotes (attr true):
   & < > always, " in values. Nothing else needs escaping in either. */
static void
buf_escaped (buf_t *b, const char *s, bool attr)
{
    const char *run = s;
    for (; *s; s++) {
        const char *rep = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;"
                        : (*s == '"' && attr) ? "&quot;" : NULL;
        if (rep) {
            buf_add (b, run, (size_t) (s - run));
            buf_str (b, rep);
            run = s + 1;
        }
    }
    buf_add (b, run, (size_t) (s - run));
}

bool
gw_markup_word_in (const char *list, const char *word, size_t n)
{
    for (const char *p = list; *p;) {
        size_t w = strcspn (p, " ");
        if (w == n && memcmp (p, word, n) == 0)
            return true;
        p += w;
        p += strspn (p, " ");
    }
    return false;
}

static int
rule_cmp (const void *key, const void *rule)
{
    return strcmp (key, ((const el_rule_t *) rule)->name);
}

static const el_rule_t *
rule_find (const el_rule_t *rules, size_t n, const char *name)
{
    return bsearch (name, rules, n, sizeof *rules, rule_cmp);
}

static bool
has_prefix_ci (const char *s, size_t n, const char *prefix)
{
    size_t p = strlen (prefix);
    return n >= p && strncasecmp (s, prefix, p) == 0;
}

/* Printable ASCII, no space, quote, angle bracket, backslash or backquote:
   what a URL must be made of to be judged by its first bytes alone (a
   browser drops tabs and newlines inside a scheme, "java\tscript:"). */
static bool
url_chars_ok (const char *url, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) url[i];
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\'' || c == '<' || c == '>' || c == '\\' || c == '`')
            return false;
    }
    return true;
}

static bool
id_char (unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'
           || c == '.' || c == ':';
}

static bool
id_ok (const char *s, size_t n)
{
    if (n == 0 || n > 256)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!id_char ((unsigned char) s[i]))
            return false;
    return true;
}

bool
gw_markup_link_ok (const char *url, size_t len)
{
    if (!url_chars_ok (url, len))
        return false;
    if (len >= 1 && url[0] == '#')
        return true;
    return (has_prefix_ci (url, len, "http://") || has_prefix_ci (url, len, "https://")
            || has_prefix_ci (url, len, "mailto:"))
           && len > 7;
}

/* data:image/TYPE;base64,DATA of a raster type: an image with no script
   and nothing more to fetch. */
static bool
data_image_ok (const char *url, size_t len)
{
    static const char *const types[] = {"png", "jpeg", "gif", "webp", "bmp", NULL};
    if (!has_prefix_ci (url, len, "data:image/"))
        return false;
    const char *t = url + 11;
    size_t rest = len - 11;
    for (int i = 0; types[i]; i++) {
        size_t tl = strlen (types[i]);
        if (rest > tl + 8 && strncasecmp (t, types[i], tl) == 0 && strncasecmp (t + tl, ";base64,", 8) == 0) {
            const char *d = t + tl + 8;
            size_t dn = rest - tl - 8;
            return strspn (d, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == dn;
        }
    }
    return false;
}

/* A reference to an element of the same document: #id, or url(#id) as
   SVG's paint and clip properties take it. */
static bool
local_ref_ok (const char *v, size_t n)
{
    if (n >= 2 && v[0] == '#')
        return id_ok (v + 1, n - 1);
    return n >= 7 && strncasecmp (v, "url(#", 5) == 0 && v[n - 1] == ')' && id_ok (v + 5, n - 6);
}

/* ---- CSS declarations ------------------------------------------------------- */

/* A declaration's value: words, numbers, #colours, commas and percentages,
   and function calls only of rgb/rgba/hsl/hsla (and url(#id) in SVG).
   No quotes, escapes, colons, slashes or comments: nothing in it can end
   the declaration or the attribute, or name a resource. */
static bool
css_value_ok (const char *v, size_t n, bool svg)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char) v[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            size_t w = i;
            while (w < n && (((v[w] | 0x20) >= 'a' && (v[w] | 0x20) <= 'z') || v[w] == '-'))
                w++;
            if (w < n && v[w] == '(') {
                size_t close = w + 1;
                while (close < n && v[close] != ')')
                    close++;
                if (close == n)
                    return false;
                size_t fn = w - i;
                bool color = (fn == 3 || fn == 4)
                             && (strncasecmp (v + i, "rgb", 3) == 0 || strncasecmp (v + i, "hsl", 3) == 0)
                             && (fn == 3 || (v[i + 3] | 0x20) == 'a');
                if (color) {
                    for (size_t k = w + 1; k < close; k++)
                        if (!strchr ("0123456789 .,%-+degrad", v[k]) || v[k] == 0)
                            return false;
                }
                else if (!(svg && fn == 3 && local_ref_ok (v + i, close + 1 - i)))
                    return false;
                i = close + 1;
                continue;
            }
            i = w;
            continue;
        }
        if ((c >= '0' && c <= '9') || c == ' ' || c == '#' || c == '%' || c == '.' || c == ',' || c == '-'
            || c == '+')
            i++;
        else
            return false;
    }
    return true;
}

/* The declarations of style whose property is in props and whose value
   passes, as "name: value; " each (lower-case names); "" when none. */
static void
css_clean (buf_t *out, const char *style, const char *props, bool svg)
{
    const char *p = style;
    while (*p) {
        size_t dn = strcspn (p, ";");
        const char *colon = memchr (p, ':', dn);
        if (colon) {
            const char *name = p, *name_end = colon;
            while (name < name_end && strchr (" \t\n\r\f", *name))
                name++;
            while (name_end > name && strchr (" \t\n\r\f", name_end[-1]))
                name_end--;
            const char *val = colon + 1, *val_end = p + dn;
            while (val < val_end && strchr (" \t\n\r\f", *val))
                val++;
            while (val_end > val && strchr (" \t\n\r\f", val_end[-1]))
                val_end--;
            char lname[64];
            size_t nn = (size_t) (name_end - name);
            if (nn > 0 && nn < sizeof lname && val_end > val) {
                for (size_t i = 0; i < nn; i++)
                    lname[i] = (char) ((name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
                lname[nn] = 0;
                if (gw_markup_word_in (props, lname, nn) && css_value_ok (val, (size_t) (val_end - val), svg)) {
                    if (out->len)
                        buf_str (out, " ");
                    buf_str (out, lname);
                    buf_str (out, ": ");
                    buf_add (out, val, (size_t) (val_end - val));
                    buf_str (out, ";");
                }
            }
        }
        p += dn;
        if (*p == ';')
            p++;
    }
}

/* ---- the walk --------------------------------------------------------------- */

typedef struct {
    gw_markup_kind_t kind;
    buf_t out;
} walk_t;

static void walk_children (walk_t *w, xmlNodePtr parent, int depth);

static void
emit_attr (walk_t *w, const char *name, const char *value)
{
    buf_str (&w->out, " ");
    buf_str (&w->out, name);
    buf_str (&w->out, "=\"");
    buf_escaped (&w->out, value, true);
    buf_str (&w->out, "\"");
}

/* The class tokens of value that html_classes keeps, space-separated. */
static void
classes_clean (buf_t *out, const char *value)
{
    for (const char *p = value; *p;) {
        p += strspn (p, " \t\n\r\f");
        size_t n = strcspn (p, " \t\n\r\f");
        if (n && gw_markup_word_in (html_classes, p, n)) {
            if (out->len)
                buf_str (out, " ");
            buf_add (out, p, n);
        }
        p += n;
    }
}

static void
html_attrs (walk_t *w, xmlNodePtr el, const el_rule_t *rule)
{
    bool link = false;
    for (xmlAttrPtr a = el->properties; a; a = a->next) {
        const char *name = (const char *) a->name;
        size_t nn = strlen (name);
        if (a->ns || (!gw_markup_word_in (html_global_attrs, name, nn) && !gw_markup_word_in (rule->attrs, name, nn)))
            continue;
        xmlChar *value = xmlNodeListGetString (el->doc, a->children, 1);
        const char *v = value ? (const char *) value : "";
        size_t vn = strlen (v);
        buf_t part = {0};
        bool keep = true; /* an empty value too, but for what is judged */
        if (streq (name, "style")) {
            css_clean (&part, v, html_css, false);
            keep = part.len > 0;
        }
        else if (streq (name, "class")) {
            classes_clean (&part, v);
            keep = part.len > 0;
        }
        else if (streq (name, "href"))
            keep = link = gw_markup_link_ok (v, vn);
        else if (streq (name, "src"))
            keep = data_image_ok (v, vn);
        if (keep)
            emit_attr (w, name, part.data ? part.data : v);
        free (part.data);
        xmlFree (value);
    }
    if (link) {
        emit_attr (w, "rel", "noopener noreferrer");
        emit_attr (w, "target", "_blank");
    }
}

/* An SVG attribute's name as written ("xlink:href" for XLink's), or NULL
   when its namespace is none that is kept. */
static const char *
svg_attr_name (xmlAttrPtr a, char *buf, size_t size)
{
    if (!a->ns)
        return (const char *) a->name;
    if (a->ns->href && streq ((const char *) a->ns->href, XLINK_NS) && streq ((const char *) a->name, "href")) {
        snprintf (buf, size, "xlink:href");
        return buf;
    }
    return NULL;
}

static void
svg_attrs (walk_t *w, xmlNodePtr el, const el_rule_t *rule, int depth)
{
    if (depth == 0) {
        emit_attr (w, "xmlns", SVG_NS);
        emit_attr (w, "xmlns:xlink", XLINK_NS);
    }
    for (xmlAttrPtr a = el->properties; a; a = a->next) {
        char nbuf[16];
        const char *name = svg_attr_name (a, nbuf, sizeof nbuf);
        if (!name)
            continue;
        bool href = streq ((const char *) a->name, "href");
        size_t nn = strlen (name);
        if (!href && !gw_markup_word_in (svg_global_attrs, name, nn) && !gw_markup_word_in (rule->attrs, name, nn))
            continue;
        if (href && !gw_markup_word_in (rule->attrs, "href", 4))
            continue;
        bool entity = false; /* a reference to an entity: never expanded */
        for (xmlNodePtr c = a->children; c; c = c->next)
            entity |= c->type != XML_TEXT_NODE;
        if (entity)
            continue;
        xmlChar *value = xmlNodeListGetString (el->doc, a->children, 1);
        const char *v = value ? (const char *) value : "";
        size_t vn = strlen (v);
        buf_t part = {0};
        if (streq (name, "style"))
            css_clean (&part, v, svg_css, true);
        else if (href) {
            if (streq ((const char *) el->name, "image") ? data_image_ok (v, vn) : local_ref_ok (v, vn))
                buf_str (&part, v);
        }
        else if (streq (name, "id")) {
            if (id_ok (v, vn))
                buf_str (&part, v);
        }
        else if (!strcasestr (v, "url(") || local_ref_ok (v, vn))
            buf_str (&part, v);
        if (part.len)
            emit_attr (w, name, part.data);
        free (part.data);
        xmlFree (value);
    }
}

static void
walk_element (walk_t *w, xmlNodePtr el, int depth)
{
    const char *name = (const char *) el->name;
    const el_rule_t *rule;
    el_rule_t unknown = {name, w->kind == GW_MARKUP_HTML ? EL_UNWRAP : EL_DROP, ""};
    if (w->kind == GW_MARKUP_HTML)
        rule = el->ns ? NULL : rule_find (html_rules, sizeof html_rules / sizeof *html_rules, name);
    else
        rule = !el->ns || (el->ns->href && streq ((const char *) el->ns->href, SVG_NS))
                   ? rule_find (svg_rules, sizeof svg_rules / sizeof *svg_rules, name)
                   : NULL;
    if (!rule)
        rule = &unknown;
    if (rule->action == EL_DROP || depth >= GW_MARKUP_DEPTH_MAX)
        return;
    if (rule->action == EL_UNWRAP) {
        walk_children (w, el, depth + 1);
        return;
    }
    buf_str (&w->out, "<");
    buf_str (&w->out, name);
    if (w->kind == GW_MARKUP_HTML)
        html_attrs (w, el, rule);
    else
        svg_attrs (w, el, rule, depth);
    buf_str (&w->out, ">");
    if (rule->action == EL_VOID)
        return;
    walk_children (w, el, depth + 1);
    buf_str (&w->out, "</");
    buf_str (&w->out, name);
    buf_str (&w->out, ">");
}

static void
walk_children (walk_t *w, xmlNodePtr parent, int depth)
{
    for (xmlNodePtr n = parent->children; n; n = n->next) {
        if (n->type == XML_ELEMENT_NODE)
            walk_element (w, n, depth);
        else if ((n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE) && n->content)
            buf_escaped (&w->out, (const char *) n->content, false);
        /* comments, processing instructions, entity references: dropped */
    }
}

/* ---- parsing ------------------------------------------------------------------ */

/* The input is handed to libxml2 in chunks by feed_read, which also keeps
   the parse's budget: libxml2 2.9 checks a start tag's attributes for
   duplicates pairwise and looks for an unmatched end tag through every
   open element, so 200 KB of one tag's distinct attributes took 2.2 s and
   1.6 MB of stray end tags 1 s before these bounds. Between chunks (at
   most FEED_CHUNK bytes of work) the parse stops once a start tag had
   ATTRS_MAX attributes, MAX_ELEMENTS elements were made, elements nest
   deeper than GW_MARKUP_DEPTH_MAX, or libxml2 reported MAX_ERRORS errors. */
#define FEED_CHUNK 4096
#define ATTRS_MAX 1000
#define MAX_ERRORS 10000

typedef struct {
    xmlParserCtxtPtr ctxt;
    const char *prefix; /* fed first */
    const char *data;
    size_t len, pos; /* over prefix then data */
    int slots;       /* ctxt->atts entries per attribute: 2 (HTML), 5 (XML) */
    int elements, errors;
    bool svg;
    bool stopped; /* a bound was reached: the markup is refused */
} feed_t;

/* The parse ends at the end of what was fed already: feed_read reports
   the end of the input from now on (xmlStopParser, called from libxml2's
   own callbacks, is not safe in 2.9: the next GROW reads the freed input). */
static void
feed_stop (feed_t *f)
{
    f->stopped = true;
}

static int
feed_read (void *arg, char *buf, int size)
{
    feed_t *f = arg;
    if (f->ctxt->maxatts > ATTRS_MAX * f->slots)
        feed_stop (f);
    if (f->stopped || size <= 0)
        return 0;
    size_t plen = strlen (f->prefix), total = plen + f->len, n = 0;
    while (n < (size_t) size && n < FEED_CHUNK && f->pos < total) {
        size_t from_prefix = f->pos < plen ? plen - f->pos : 0;
        const char *src = from_prefix ? f->prefix + f->pos : f->data + (f->pos - plen);
        size_t avail = from_prefix ? from_prefix : total - f->pos;
        size_t take = avail < (size_t) size - n ? avail : (size_t) size - n;
        if (take > FEED_CHUNK - n)
            take = FEED_CHUNK - n;
        memcpy (buf + n, src, take);
        n += take;
        f->pos += take;
    }
    return (int) n;
}

static int
feed_close (void *arg)
{
    return 0;
}

/* An element begins: counted, and its depth checked. The element is made
   either way (libxml2's end tag pops what its start pushed). */
static void
feed_element (xmlParserCtxtPtr ctxt, int depth)
{
    feed_t *f = ctxt->_private;
    if (++f->elements > MAX_ELEMENTS || depth > GW_MARKUP_DEPTH_MAX)
        feed_stop (f);
}

static void
html_start (void *ctx, const xmlChar *name, const xmlChar **atts)
{
    xmlParserCtxtPtr ctxt = ctx;
    feed_element (ctxt, ctxt->nameNr);
    xmlSAX2StartElement (ctx, name, atts);
}

static void
svg_start (void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri, int nb_namespaces,
           const xmlChar **namespaces, int nb_attributes, int nb_defaulted, const xmlChar **attributes)
{
    xmlParserCtxtPtr ctxt = ctx;
    feed_element (ctxt, ctxt->nodeNr);
    xmlSAX2StartElementNs (ctx, localname, prefix, uri, nb_namespaces, namespaces, nb_attributes, nb_defaulted,
                           attributes);
}

/* libxml2's errors: counted, never printed (the HTML parser reports
   through error and fatalError, the XML parser through serror). An SVG
   that is not well-formed is refused at its first. */
static void
feed_error (void *ctx, const char *msg, ...)
{
    xmlParserCtxtPtr ctxt = ctx;
    feed_t *f = ctxt ? ctxt->_private : NULL;
    if (f && (++f->errors > MAX_ERRORS || f->svg))
        feed_stop (f);
}

static void
feed_serror (void *ctx, xmlErrorPtr err)
{
    xmlParserCtxtPtr ctxt = ctx;
    feed_t *f = ctxt ? ctxt->_private : NULL;
    if (f && (++f->errors > MAX_ERRORS || (f->svg && err && err->level >= XML_ERR_ERROR)))
        feed_stop (f);
}

/* No entity, DTD or XInclude is ever fetched, whatever a document names. */
static xmlParserInputPtr
no_external (const char *url, const char *id, xmlParserCtxtPtr ctxt)
{
    return NULL;
}

static void
no_errors (void *ctx, const char *msg, ...)
{
}

static void *
x_realloc (void *p, size_t n)
{
    return wire_xreallocarray (p, n ? n : 1, 1);
}

static char *
x_strdup (const char *s)
{
    return wire_xstrdup (s);
}

static void
markup_init (void)
{
    static bool done;
    if (done)
        return;
    done = true;
    xmlMemSetup (free, wire_xmalloc, x_realloc, x_strdup);
    xmlInitParser ();
    xmlSetExternalEntityLoader (no_external);
    xmlSetGenericErrorFunc (NULL, no_errors);
}

static xmlDocPtr
parse (gw_markup_kind_t kind, const char *text, size_t len, bool *stopped)
{
    bool svg = kind == GW_MARKUP_SVG;
    xmlParserCtxtPtr ctxt = svg ? xmlNewParserCtxt () : htmlNewParserCtxt ();
    if (!ctxt)
        return NULL;
    /* HTML in an open body: text first in a fragment would get an implied
       <p> that the same text after an element does not (not idempotent) */
    feed_t f = {ctxt, svg ? "" : "<body>", text, len, 0, svg ? 5 : 2, 0, 0, svg, false};
    ctxt->_private = &f;
    ctxt->sax->error = feed_error;
    ctxt->sax->fatalError = feed_error;
    ctxt->sax->warning = NULL;
    ctxt->sax->serror = feed_serror;
    xmlDocPtr doc;
    if (svg) {
        ctxt->sax->startElementNs = svg_start;
        /* no XML_PARSE_NOENT (entities stay references), no DTDLOAD or
           DTDATTR, no XINCLUDE, no HUGE (libxml2's own limits stay) */
        doc = xmlCtxtReadIO (ctxt, feed_read, feed_close, &f, NULL, "UTF-8",
                             XML_PARSE_NONET | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA | XML_PARSE_IGNORE_ENC);
        if (doc && doc->intSubset && doc->intSubset->children) { /* declarations: entities, defaults */
            xmlFreeDoc (doc);
            doc = NULL;
        }
    }
    else {
        ctxt->sax->startElement = html_start;
        doc = htmlCtxtReadIO (ctxt, feed_read, feed_close, &f, NULL, "UTF-8",
                              HTML_PARSE_NONET | HTML_PARSE_NOWARNING | HTML_PARSE_IGNORE_ENC);
    }
    svg ? xmlFreeParserCtxt (ctxt) : htmlFreeParserCtxt (ctxt);
    *stopped = f.stopped;
    return doc;
}

bool
gw_markup_is_plain_text (const char *text, size_t len)
{
    return !memchr (text, '<', len) && !memchr (text, '&', len);
}

/* One parse, walk and write: NULL when refused. */
static char *
clean_once (gw_markup_kind_t kind, const char *text, size_t len, size_t *out_len)
{
    walk_t w = {kind, {0}};
    buf_add (&w.out, "", 0);
    bool stopped = false;
    xmlDocPtr doc = len == 0 ? NULL : parse (kind, text, len, &stopped);
    if (stopped || (kind == GW_MARKUP_SVG && !doc)) {
        xmlFreeDoc (doc);
        free (w.out.data);
        return NULL;
    }
    if (doc && kind == GW_MARKUP_HTML)
        walk_children (&w, (xmlNodePtr) doc, 0);
    else if (doc) {
        xmlNodePtr root = xmlDocGetRootElement (doc);
        if (root && streq ((const char *) root->name, "svg"))
            walk_element (&w, root, 0);
    }
    xmlFreeDoc (doc);
    if (kind == GW_MARKUP_SVG && w.out.len == 0) {
        free (w.out.data);
        return NULL;
    }
    *out_len = w.out.len;
    return w.out.data;
}

/* What the walk removed can leave a tree that libxml2 would not have
   built from its text (an <li> unwrapped into a <p>, which the parser
   closes first): cleaned again, it comes out otherwise. So the result is
   cleaned again until it is its own inert form, which the browser's parse
   then sees too; three passes without that: refused. */
#define PASSES_MAX 3

char *
gw_markup_clean (gw_markup_kind_t kind, const char *text, size_t len, size_t *out_len)
{
    if (len > GW_MARKUP_BYTES_MAX)
        return NULL;
    markup_init ();
    char *out = clean_once (kind, text, len, out_len);
    if (!out || (*out_len == len && memcmp (out, text, len) == 0))
        return out;
    for (int pass = 1; pass < PASSES_MAX; pass++) {
        size_t again_len;
        char *again = clean_once (kind, out, *out_len, &again_len);
        bool fixed = again && again_len == *out_len && memcmp (again, out, again_len) == 0;
        free (out);
        out = again;
        *out_len = again_len;
        if (!again || fixed)
            return again;
    }
    free (out);
    return NULL;
}

bool
gw_markup_markdown_inert (const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) text[i], next = i + 1 < len ? (unsigned char) text[i + 1] : 0;
        bool letter = (next | 0x20) >= 'a' && (next | 0x20) <= 'z';
        if (c == '<' && (letter || next == '/' || next == '!' || next == '?'))
            return false;
        if (c == '&' && (letter || next == '#'))
            return false;
        if (c == '!' && next == '[')
            return false;
    }
    /* a link's scheme, whatever backslashes stand in it ("javascript\:") */
    static const char *const schemes[] = {"javascript", "vbscript", NULL};
    for (int s = 0; schemes[s]; s++) {
        size_t m = 0, sl = strlen (schemes[s]);
        for (size_t i = 0; i < len; i++) {
            char c = text[i];
            if (c == '\\')
                continue;
            m = ((c | 0x20) == schemes[s][m]) ? m + 1 : ((c | 0x20) == schemes[s][0]) ? 1 : 0;
            if (m == sl)
                return false;
        }
    }
    return true;
}
