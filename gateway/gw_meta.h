/*  gw_meta.h - metadata.kennel spliced into a kernel's metadata frame (gw_meta.c).
*/
#ifndef GW_META_H_INCLUDED
#define GW_META_H_INCLUDED

#include <czmq.h>
#include <jansson.h>

/* Sets "kennel" to cost (taken) in the JSON object of frame (rewritten in
   place); a frame that is no JSON object becomes {"kennel": cost}. */
void gw_meta_add_kennel (zframe_t *frame, json_t *cost);

#endif
