/*  gw_meta.c - metadata.kennel added to an execute_reply's metadata frame.

    The frame comes from the kernel, which holds its own key: a good
    signature does not make its bytes trusted. A frame that is an object by
    gw_peek's check gets ,"kennel":{...} spliced before its closing brace,
    its own bytes kept, so the relay never parses a large metadata object
    (were "kennel" there already, the last one wins in jansson and in
    Python's json alike); anything else is parsed, and replaced by {} when
    it is no object. Either way the frame decodes as the kernel's object
    with "kennel" set to the cost (tests/fuzz/gw_meta_fuzz.c checks it).
*/
#include "gw_meta.h"
#include "gw_peek.h"
#include "wire.h"

#include <string.h>

static bool
is_json_space (char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void
gw_meta_add_kennel (zframe_t *frame, json_t *cost)
{
    const char *m = (const char *) zframe_data (frame);
    size_t n = zframe_size (frame);
    char text[1024];
    size_t clen = json_dumpb (cost, text, sizeof text, JSON_COMPACT);
    if (clen > 0 && clen <= sizeof text && gw_peek_object (m, n) == 1) {
        size_t end = n; /* just past the closing brace */
        while (end > 0 && is_json_space (m[end - 1]))
            end--;
        size_t last = end - 1; /* the last byte inside the object */
        while (last > 0 && is_json_space (m[last - 1]))
            last--;
        bool empty = m[last - 1] == '{';
        size_t total = (end - 1) + (empty ? 0 : 1) + strlen ("\"kennel\":") + clen + 1;
        char *out = wire_xmalloc (total);
        size_t k = end - 1;
        memcpy (out, m, k);
        if (!empty)
            out[k++] = ',';
        memcpy (out + k, "\"kennel\":", strlen ("\"kennel\":"));
        k += strlen ("\"kennel\":");
        memcpy (out + k, text, clen);
        k += clen;
        out[k++] = '}';
        zframe_reset (frame, out, k);
        free (out);
        json_decref (cost);
        return;
    }
    json_t *meta = json_loadb (m, n, 0, NULL);
    if (!json_is_object (meta)) {
        json_decref (meta);
        meta = json_object ();
    }
    json_object_set_new (meta, "kennel", cost);
    char *dumped = json_dumps (meta, JSON_COMPACT);
    if (dumped)
        zframe_reset (frame, dumped, strlen (dumped));
    free (dumped);
    json_decref (meta);
}
