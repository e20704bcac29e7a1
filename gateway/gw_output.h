/*  gw_output.h - the output limits of a conversation's kernel (gw_output.c),
    in the relay's family (gw_relay_private.h).
*/
#ifndef GW_OUTPUT_H_INCLUDED
#define GW_OUTPUT_H_INCLUDED

#include "gw_relay_private.h"

/* Output accounting for every iopub message of the kernel (msg_type, its
   parent's msg_id pid): false = drop; *marker: send the running
   execution's truncation marker after it (gw_output_marker). */
bool gw_output_admit (gw_relay_t *self, zmsg_t *msg, const char *msg_type, const char *pid, bool *marker);
/* The running execution's "output truncated" stream. */
void gw_output_marker (gw_relay_t *self);
/* A client's request on shell: the window for output outside executions starts again. */
void gw_output_renew (gw_relay_t *self);

#endif
