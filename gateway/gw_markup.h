/*  gw_markup.h - HTML, SVG and Markdown from a kernel made inert for a
    browser (gw_markup.c): parsed by libxml2, kept only as far as an
    allowlist reaches, written out again by kennel's own serializer.
*/
#ifndef GW_MARKUP_H_INCLUDED
#define GW_MARKUP_H_INCLUDED

#include "gw_util.h"
#include <stdbool.h>
#include <stddef.h>

typedef enum {
    GW_MARKUP_HTML, /* a fragment, as text/html outputs and widget labels are */
    GW_MARKUP_SVG,  /* one document whose root is <svg> (image/svg+xml) */
} gw_markup_kind_t;

/* The largest markup the gateway parses: libxml2's tree costs several
   times its text, and the loop waits while it parses. Bigger is dropped. */
#define GW_MARKUP_BYTES_MAX (2u << 20)
/* Elements nested deeper than this are dropped with what they hold. */
#define GW_MARKUP_DEPTH_MAX 256

/* The inert form of len bytes of markup (UTF-8): elements, attributes,
   URLs and CSS declarations outside the allowlists removed (gw_markup.c
   has the lists), every text and attribute value escaped. A malloc'd,
   NUL-terminated string of *out_len bytes, or NULL when the markup is
   over GW_MARKUP_BYTES_MAX, does not parse (SVG), or declares entities
   (SVG): then nothing of it may be shown. Cleaning the result again gives
   the same bytes. */
GW_MUST_CHECK char *gw_markup_clean (gw_markup_kind_t kind, const char *text, size_t len, size_t *out_len);
/* Whether the text needs cleaning at all: HTML without '<' or '&' is
   already its inert form (the fast path for widget labels). */
bool gw_markup_is_plain_text (const char *text, size_t len);
/* Whether Markdown can go to a front end as it is: no raw HTML (a '<'
   that could open a tag), no character reference, no image (it would be
   fetched), no javascript:/vbscript: link. Front ends render Markdown
   with its raw HTML and links untouched (marked, no sanitizer, for
   outputs of the session), and kennel has no Markdown parser of its own
   to rewrite it: what fails this shows as its source text instead. */
bool gw_markup_markdown_inert (const char *text, size_t len);
/* Whether word (n bytes) is one of the space-separated words of list:
   the form of the allowlists here and in gw_sanitize.c. */
bool gw_markup_word_in (const char *list, const char *word, size_t n);
/* Whether a link a front end puts in the page is one a person may follow:
   an http:, https: or mailto: URL of printable ASCII, or a #fragment. */
bool gw_markup_link_ok (const char *url, size_t len);

#endif
