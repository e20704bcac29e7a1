/*  gw_meta_fuzz.c - libFuzzer target: the metadata.kennel splice
    (gateway/gw_meta.c) on a kernel's metadata frame.

    Input: one selector byte, then the frame's bytes.
        bit 0  the cost is too long to splice (over 1 KiB): the frame is
               parsed and dumped again instead
        bit 1  the cost holds a string with escapes and non-ASCII text
    Checked, trapping otherwise: the rewritten frame is one JSON object
    equal to what a jansson merge gives (the kernel's object, or {} when the
    frame is no object, with "kennel" set to the cost).
*/
#include "gateway/gw_meta.h"
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static json_t *
s_cost (uint8_t selector)
{
    json_t *cost = json_pack ("{s:f, s:I, s:s, s:i}", "cpu_seconds", 0.125, "max_rss_bytes", (json_int_t) 1 << 40,
                              "state", "kept", "execution_count", 3);
    if (selector & 1) {
        char pad[1100];
        memset (pad, 'p', sizeof pad - 1);
        pad[sizeof pad - 1] = 0;
        json_object_set_new (cost, "pad", json_string (pad));
    }
    if (selector & 2)
        json_object_set_new (cost, "note", json_string ("a \"quoted\"\\ line\n\xc3\xa9\xe2\x82\xac"));
    return cost;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    json_t *cost = s_cost (data[0]);
    const char *meta = (const char *) data + 1;
    size--;

    json_t *expected = json_loadb (meta, size, 0, NULL);
    if (!json_is_object (expected)) {
        json_decref (expected);
        expected = json_object ();
    }
    json_object_set (expected, "kennel", cost);

    zframe_t *frame = zframe_new (meta, size);
    gw_meta_add_kennel (frame, cost);
    json_error_t err;
    json_t *got = json_loadb ((const char *) zframe_data (frame), zframe_size (frame), 0, &err);
    if (!json_is_object (got) || !json_equal (got, expected))
        __builtin_trap ();
    json_decref (got);
    json_decref (expected);
    zframe_destroy (&frame);
    return 0;
}
