/*  gw_kernel_link.h - the relay's sockets to a fresh kernel
    (gw_kernel_link.c), in the relay's family (gw_relay_private.h):
    connected once, the readiness handshake, drops watched.
*/
#ifndef GW_KERNEL_LINK_H_INCLUDED
#define GW_KERNEL_LINK_H_INCLUDED

#include "gw_relay_private.h"

/* Connects to a fresh kernel's ipc sockets under run_dir with its key (once
   it has bound them), their readers self->kernel_readers. */
int gw_kernel_link_attach (gw_relay_t *self, const char *run_dir, const wire_connection_t *kernel, char **errmsg);
/* Closes the kernel sockets, forgets its key. */
void gw_kernel_link_close (gw_relay_t *self);
/* The kernel is ready once shell answered the probe, iopub spoke and the
   stdin handshake is done: then the backlog goes and the head starts. */
void gw_kernel_link_probe_check (gw_relay_t *self);
/* Whether a kernel message answers the gateway's own request (its parent
   session is the relay's). */
bool gw_kernel_link_is_probe_answer (gw_relay_t *self, zmsg_t *msg);
/* A reply to the gateway's own request: a refused tool list is logged. */
void gw_kernel_link_own_reply_check (gw_relay_t *self, zmsg_t *msg);

#endif
