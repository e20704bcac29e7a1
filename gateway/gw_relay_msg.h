/*  gw_relay_msg.h - the relay's frames and messages (gw_relay_msg.c), the
    bottom of its family (gw_relay_private.h): fields read in place, sends
    toward the kernel (now, or held until one is ready), delivery to the
    peers, the gateway's own messages.
*/
#ifndef GW_RELAY_MSG_H_INCLUDED
#define GW_RELAY_MSG_H_INCLUDED

#include "gw_relay_private.h"

/* A string field of a frame (gw_peek: no JSON tree), in a gw_relay_peek_t:
   its own buffer when it fits, else malloc'd. text NULL when absent. */
typedef struct {
    char buf[256];
    char *heap;
    const char *text;
} gw_relay_peek_t;

/* The string key of the frame at delimiter + offset into *pk: its text. */
const char *gw_relay_msg_peek (gw_relay_peek_t *pk, zmsg_t *msg, int offset, const char *key);
void gw_relay_msg_peek_free (gw_relay_peek_t *pk);
/* The JSON of the frame at delimiter + offset, or NULL; *bytes (when not
   NULL): the frame's size. */
json_t *gw_relay_msg_json (zmsg_t *msg, int offset, size_t *bytes);
/* What a kernel's message costs: every frame after the signature. */
int64_t gw_relay_msg_size (zmsg_t *msg);
/* A message from channel dropped as bad (from: "kernel" or "client"). */
void gw_relay_msg_log_bad (gw_relay_t *self, const char *channel, wire_error_t err, const char *from);
/* Signed and sent to the kernel's socket of channel now (one must be
   attached), never blocking: what does not fit is dropped and logged. */
void gw_relay_msg_kernel_send (gw_relay_t *self, zmsg_t **msg_p, wire_channel_t channel);
/* To the kernel: now when one is ready, else held in the backlog (and a
   fresh kernel started for a dead one). */
void gw_relay_msg_to_kernel (gw_relay_t *self, wire_channel_t channel, zmsg_t **msg_p);
/* What the backlog held goes to the kernel now (it is ready), in order. */
void gw_relay_msg_backlog_flush (gw_relay_t *self);
/* To the peers, unsigned, once cleaned of active content (takes *msg_p). */
void gw_relay_msg_deliver (gw_relay_t *self, wire_channel_t channel, zmsg_t **msg_p);
/* A message from the gateway itself on behalf of the conversation, with
   parent_header as parent and ids as route. */
wire_msg_t *gw_relay_msg_own (gw_relay_t *self, const char *msg_type, const json_t *parent_header, zmsg_t *ids);
/* A message of the gateway's own to the peers, as relayed ones go. */
void gw_relay_msg_send_own (gw_relay_t *self, wire_msg_t *m, wire_channel_t ch);
/* gw_answer_send_fn: the relay's own answers go out as relayed ones. */
void gw_relay_msg_answer_send (void *arg, wire_channel_t channel, wire_msg_t *m);
/* On iopub, as the conversation's session (content taken). */
void gw_relay_msg_publish (gw_relay_t *self, const char *msg_type, const json_t *parent_header, json_t *content);
void gw_relay_msg_status (gw_relay_t *self, const json_t *parent_header, const char *state);
void gw_relay_msg_error (gw_relay_t *self, const json_t *parent_header, const char *ename, const char *evalue);

#endif
