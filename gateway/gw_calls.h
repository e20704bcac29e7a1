/*  gw_calls.h - the tool-call broker (gw_calls.c), in the relay's family
    (gw_relay_private.h).
*/
#ifndef GW_CALLS_H_INCLUDED
#define GW_CALLS_H_INCLUDED

#include "gw_relay_private.h"

/* The calls table's destructor. */
void gw_calls_destructor (void **item);
/* Ends the pending calls of one execution (msg_id) or of all (NULL); the
   clients that asked are told (tool_cancel, reason status). */
void gw_calls_end (gw_relay_t *self, const char *msg_id, const char *status);
/* gw_peers_gone_fn: the calls of the executions of a peer that detached
   are answered ToolUnavailable at once. */
void gw_calls_end_peer (void *arg, zframe_t *token);
/* A kernel's tool_request during e (the running execution, or NULL):
   true to forward it to the client (the call is now pending), false when
   the kernel got a refusal. */
bool gw_calls_request_admit (gw_relay_t *self, gw_exec_t *e, zmsg_t *msg, json_t *header);
/* A client's tool_reply: true to pass it to the kernel (it answers a
   pending call), false to drop it (logged). */
bool gw_calls_reply_admit (gw_relay_t *self, zmsg_t *msg);

#endif
