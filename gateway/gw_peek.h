/*  gw_peek.h - one string field of a JSON frame, no tree (gw_peek.c).
*/
#ifndef GW_PEEK_H_INCLUDED
#define GW_PEEK_H_INCLUDED

#include "gw_util.h"
#include <czmq.h>
#include <stddef.h>

/* The string value of key in the JSON object data, as jansson would decode
   it, copied into out (cut to out_size - 1 like snprintf). Its length (>=
   out_size: cut), or -1 when absent, not a string or not valid JSON. */
GW_MUST_CHECK int gw_peek_string (const void *data, size_t size, const char *key, char *out, size_t out_size);
/* 1 when data is one JSON object jansson would take, 0 when it would
   refuse it (or it is no object), -1 when only jansson can tell. */
GW_MUST_CHECK int gw_peek_object (const void *data, size_t size);
/* 1 when data is one JSON object that Python's json loads (escapes,
   UTF-8, numbers of any form up to 4096 characters) nested at most
   max_depth deep (the object itself is depth 1), else 0. Never calls
   jansson: the relay checks every kernel frame with it. */
GW_MUST_CHECK int gw_peek_check (const void *data, size_t size, int max_depth);
/* What the relay lets a kernel's JSON frames nest: Python's json loads
   about 990 levels from an empty stack (recursion limit 1000), a client
   calls it from some hundreds of frames deep at most. */
#define GW_JSON_DEPTH_MAX 512
/* The same on frame delimiter + offset of a wire message (2 header, 3
   parent header, 4 metadata, 5 content: wire_frames_part). */
GW_MUST_CHECK int gw_peek_frame (zmsg_t *msg, int offset, const char *key, char *out, size_t out_size);

#endif
