/*  gw_reply.h - an execute_reply rewritten on its way to the client
    (gw_reply.c), in the relay's family (gw_relay_private.h): the
    execution's cost (metadata.kennel) and, after a timeout the interrupt
    ended, ExecutionTimeout.
*/
#ifndef GW_REPLY_H_INCLUDED
#define GW_REPLY_H_INCLUDED

#include "gw_relay_private.h"

/* metadata.kennel of e: wall and cpu time, peak rss, output, tool calls,
   the workspace, how the kernel ended; state "kept" or "lost". */
json_t *gw_reply_cost (gw_relay_t *self, gw_exec_t *e, const char *state);
/* e's execute_reply msg rewritten in place: metadata.kennel always, the
   ExecutionTimeout content after a timeout. */
void gw_reply_rewrite (gw_relay_t *self, zmsg_t *msg, gw_exec_t *e);
/* The one ExecutionTimeout error output of e, before its idle. */
void gw_reply_timeout_report (gw_relay_t *self, gw_exec_t *e);

#endif
