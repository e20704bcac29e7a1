/*  gw_ws_fuzz.c - libFuzzer target: gateway/http/ws_codec.c, the frames
    a websocket client sends (legacy JSON text, legacy binary with buffers,
    the v1 binary subprotocol).

    Input: one selector byte, then the frame.
        bit 0  the v1 subprotocol (else legacy)
        bit 1  a binary frame (else text)
    Checked on what decode accepts: a channel a client may send on (shell,
    control, stdin); the four JSON parts are objects jansson loads and the
    header has the six fields as strings; and encoding the parts for that
    channel and decoding the result gives the same channel and the same
    parts, byte for byte (what the front sends a client reads back as
    itself).
*/
#include "gateway/http/http.h"
#include "gateway/gw_peers.h"
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
s_check_parts (zmsg_t *parts)
{
    static const char *fields[] = {"msg_id", "msg_type", "session", "username", "version", "date"};
    if (zmsg_size (parts) < 4)
        __builtin_trap ();
    zframe_t *f = zmsg_first (parts);
    for (int i = 0; i < 4; i++, f = zmsg_next (parts)) {
        json_t *part = json_loadb ((const char *) zframe_data (f), zframe_size (f), 0, NULL);
        if (!json_is_object (part))
            __builtin_trap ();
        for (int k = 0; i == 0 && k < 6; k++)
            if (!json_is_string (json_object_get (part, fields[k])))
                __builtin_trap ();
        json_decref (part);
    }
}

static bool
s_same (zmsg_t *a, zmsg_t *b)
{
    if (zmsg_size (a) != zmsg_size (b))
        return false;
    for (zframe_t *x = zmsg_first (a), *y = zmsg_first (b); x; x = zmsg_next (a), y = zmsg_next (b))
        if (!zframe_eq (x, y))
            return false;
    return true;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    ws_protocol_t proto = (data[0] & 1) ? WS_V1 : WS_LEGACY;
    bool binary = (data[0] & 2) != 0;
    const char *problem = NULL;
    wire_channel_t channel;
    zmsg_t *parts = ws_codec_decode (proto, data + 1, size - 1, binary, &channel, &problem);
    if (!parts) {
        if (!problem)
            __builtin_trap ();
        return 0;
    }
    if (channel != WIRE_SHELL && channel != WIRE_CONTROL && channel != WIRE_STDIN)
        __builtin_trap ();
    s_check_parts (parts);
    size_t out_size = 0;
    bool out_binary = false;
    unsigned char *out = ws_codec_encode (proto, parts, channel, &out_size, &out_binary);
    if (!out)
        __builtin_trap ();
    wire_channel_t again_channel;
    zmsg_t *again = ws_codec_decode (proto, out + LWS_PRE, out_size, out_binary, &again_channel, &problem);
    if (!again || again_channel != channel || !s_same (parts, again))
        __builtin_trap ();
    zmsg_destroy (&again);
    free (out);
    zmsg_destroy (&parts);
    return 0;
}
