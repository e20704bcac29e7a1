/*  gw_answer.h - the gateway's own messages to a conversation's clients
    (gw_answer.c): a status, an error output, and the answer to a request
    the gateway will not pass to a kernel. Used by the relay (a dead
    kernel, a full queue, a close, a drain) and by the ZeroMQ front's
    sockets lingering after a close, so both answer in the same words.
*/
#ifndef GW_ANSWER_H_INCLUDED
#define GW_ANSWER_H_INCLUDED

#include "wire.h"
#include <jansson.h>
#include <stdbool.h>

/* Sends one message (taken) of the gateway's on channel; route frames are
   its identities (iopub: the topic). */
typedef void (gw_answer_send_fn) (void *arg, wire_channel_t channel, wire_msg_t *m);

/* Whom the gateway speaks to, and as whom. */
typedef struct {
    const char *session; /* the gateway's session for this conversation */
    const char *conv_id; /* iopub topics are kernel.<conv_id>.<msg_type> */
    gw_answer_send_fn *send;
    void *arg;
} gw_answer_to_t;

/* A message of the gateway's own: header fresh (session, msg_type),
   parent_header a copy of parent (may be NULL), identities a copy of ids
   (may be NULL). */
wire_msg_t *gw_answer_msg (const char *session, const char *msg_type, const json_t *parent, zmsg_t *ids);
/* On iopub to every subscriber; content taken. */
void gw_answer_publish (const gw_answer_to_t *to, const char *msg_type, const json_t *parent, json_t *content);
void gw_answer_status (const gw_answer_to_t *to, const json_t *parent, const char *state);
void gw_answer_error (const gw_answer_to_t *to, const json_t *parent, const char *ename, const char *evalue);
/* A request (header, its route ids) answered without a kernel, in order:
   iopub status busy (when busy), for an execute_request an iopub error,
   the reply <type>_reply {status error, ename, evalue, traceback} on
   channel (an execute_reply also has execution_count 0, user_expressions,
   payload and metadata.kennel = kennel, taken; NULL: the cost of an
   execution that never ran, with state "lost"), iopub status idle. A
   message whose type does not end in _request expects no reply: nothing
   is sent. */
void gw_answer_refuse (const gw_answer_to_t *to, wire_channel_t channel, const json_t *header, zmsg_t *ids,
                       const char *ename, const char *evalue, json_t *kennel, bool busy);
/* metadata.kennel of an execution that never ran (docs/PROTOCOL.md §7). */
json_t *gw_answer_cost_none (const char *state);
/* The evalue of a request that was not run: "not run: <why> (<cause>)",
   written into out (cut to size). */
void gw_answer_not_run (char *out, size_t size, const char *why, const char *cause);

#endif
