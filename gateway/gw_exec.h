/*  gw_exec.h - a conversation's executions (gw_exec.c), in the relay's
    family (gw_relay_private.h): the queue (its head runs), the timeout
    ladder, replies held until their idle, the gateway's own answers for
    executions that will not run.
*/
#ifndef GW_EXEC_H_INCLUDED
#define GW_EXEC_H_INCLUDED

#include "gw_relay_private.h"

/* A client's execute_request as the relay tracks it (not yet queued). */
gw_exec_t *gw_exec_new (zmsg_t *msg, json_t *header);
/* The executions list's destructor. */
void gw_exec_destructor (void **item);
/* The running execution (or the next to run), or NULL. */
gw_exec_t *gw_exec_head (gw_relay_t *self);
/* The head starts running: clock, cpu, timeout. Only while a kernel is ready. */
void gw_exec_start_head (gw_relay_t *self);
void gw_exec_stop_timers (gw_relay_t *self, gw_exec_t *e);
/* A client's execute_request (taken): queued (or answered QueueFull), sent
   to the kernel once it is the head. */
void gw_exec_track (gw_relay_t *self, zmsg_t **msg_p, json_t *header);
/* The list handle of the execution whose request is msg_id, or NULL. */
void *gw_exec_find (gw_relay_t *self, const char *msg_id);
/* Ends the execution at handle (status for the log and the metrics), aborts
   what its failure aborts, starts the next one. */
void gw_exec_finish (gw_relay_t *self, void *handle, gw_exec_t *e, const char *status);
/* A kernel's execute_reply (taken) of the execution at handle: sent once
   its idle is in, or after a while without one. */
void gw_exec_reply_hold (gw_relay_t *self, void *handle, zmsg_t *msg);
/* An iopub status of parent_id: when it is the idle a held reply waited
   for, the reply goes out now and its handle is returned, to finish once
   the idle itself went out; else NULL. */
void *gw_exec_idle_seen (gw_relay_t *self, zmsg_t *msg, const char *parent_id);
/* Every execution running or queued answered by the gateway, in order:
   the running one's evalue is cause, a queued one's says it did not run
   (queued, cause); state goes to metadata.kennel. */
void gw_exec_answer_all (gw_relay_t *self, const char *ename, const char *cause, const char *queued, const char *state);

#endif
