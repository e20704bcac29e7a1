/*  wire_private.h - helpers shared by libwire's classes, not part of the API.

    Each class file (wire_<class>.c) implements one part of wire.h plus a
    self-test, <class>_test(verbose), returning its number of failed checks;
    wire_selftest() runs them all.
*/
#ifndef WIRE_PRIVATE_H_INCLUDED
#define WIRE_PRIVATE_H_INCLUDED

#include "wire.h"
#include <stdio.h>

/* Where the pieces of a wire message are, found without parsing JSON. */
typedef struct {
    size_t n_ids;        /* frames before the delimiter */
    zframe_t *delimiter;
    zframe_t *signature;
    zframe_t *parts[4];  /* header, parent_header, metadata, content */
    size_t n_buffers;    /* frames after content */
} wire_layout_t;

/* Checks sizes (limits NULL = wire_limits_default), the delimiter and the
   frame count, and fills layout. Uses msg's cursor; changes no frame. */
wire_error_t wire_layout_find (zmsg_t *msg, const wire_limits_t *limits, wire_layout_t *layout);

/* Parses one JSON frame that must hold an object. NULL with *err set. */
json_t *wire_json_parse_frame (zframe_t *frame, wire_error_t *err);

/* Compact UTF-8 JSON of an object as a new frame; NULL when it cannot be
   encoded. */
zframe_t *wire_json_frame (const json_t *obj);

int wire_alloc_test (bool verbose);
int wire_error_test (bool verbose);
int wire_key_test (bool verbose);
int wire_replay_test (bool verbose);
int wire_frames_test (bool verbose);
int wire_msg_test (bool verbose);
int wire_header_test (bool verbose);
int wire_connection_test (bool verbose);
int wire_json_test (bool verbose);

/* Self-test check: counts and reports a failure instead of aborting, so one
   run lists every broken case. Needs an int `failures` in scope. */
#define WIRE_CHECK(cond) \
    do { \
        if (!(cond)) { \
            fprintf (stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++; \
        } \
    } while (0)

#endif
