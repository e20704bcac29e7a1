/*  gw_sanitize.h - what a kernel's messages may leave in a browser
    (gw_sanitize.c): active content taken out of every field a front end
    turns into its page, on the way to the peers.
*/
#ifndef GW_SANITIZE_H_INCLUDED
#define GW_SANITIZE_H_INCLUDED

#include "gw_util.h"
#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* One conversation's sanitizer: what it learnt of the kernel's widgets
   (which comm renders its value as HTML), bounded, never needed for
   safety (a widget it does not know is cleaned as the strictest kind). */
typedef struct gw_sanitize gw_sanitize_t;

/* The widgets one sanitizer remembers; more are cleaned as unknown. */
#define GW_SANITIZE_COMMS_MAX 4096

typedef enum {
    GW_SANITIZE_KEPT,    /* nothing to take out: the message as it was */
    GW_SANITIZE_CLEANED, /* its content frame rewritten */
    GW_SANITIZE_DROPPED, /* its content could not be read: not to be delivered */
} gw_sanitize_result_t;

/* What a cleaning took out, for the log: mime types and fields, comma-separated. */
typedef struct {
    char text[160];
} gw_sanitize_removed_t;

gw_sanitize_t *gw_sanitize_new (void);
void gw_sanitize_destroy (gw_sanitize_t **self_p);

/* A kernel's message to the peers, in Jupyter's frame layout (route,
   delimiter, signature, header, parent header, metadata, content,
   buffers): its content frame replaced by its inert form when it holds
   active content. Messages of other types are kept after one peek at the
   header. *removed is filled when the result is not KEPT. */
GW_MUST_CHECK gw_sanitize_result_t gw_sanitize_msg (gw_sanitize_t *self, zmsg_t *msg, gw_sanitize_removed_t *removed);
/* The same on a content object of msg_type, in place: whether it changed. */
bool gw_sanitize_content (gw_sanitize_t *self, const char *msg_type, json_t *content, gw_sanitize_removed_t *removed);

#endif
