/*  gw_relay.h - one conversation's relay between its peers and its kernel
    (gw_relay.c, above the rest of its family: gw_relay_private.h).

    The relay is below its conversation (gw_conv.c): the conversation owns
    it and calls it; the relay reaches the conversation only through the
    functions the conversation hands it (gw_relay_owner_t, gw_relay_owner.h), as a kernel
    reaches its interpreter in xeus, so that neither file depends on the
    other in a circle.
*/
#ifndef GW_RELAY_H_INCLUDED
#define GW_RELAY_H_INCLUDED

#include "wire.h"
#include "gw_config.h"
#include "gw_front.h"
#include "gw_relay_owner.h"
#include <jansson.h>
#include <stdbool.h>

typedef struct gw_server gw_server_t; /* gw_server_access.h */

typedef struct gw_relay gw_relay_t;
/* The relay of conv, which answers for it through owner (kept by
   pointer: static). */
gw_relay_t *gw_relay_new (gw_conv_t *conv, const gw_relay_owner_t *owner, gw_server_t *server);
/* Tells the peers GW_EVENT_CLOSED, detaches them, frees. */
void gw_relay_destroy (gw_relay_t **self_p);
/* The conversation's peers (gw_peers.h). */
struct gw_peers *gw_relay_peers (gw_relay_t *self);
/* An event to every peer (gw_front.h). */
void gw_relay_event (gw_relay_t *self, gw_event_t event, const char *detail);
/* Connects to a fresh kernel's ipc sockets under run_dir with its key. */
int gw_relay_kernel_attach (gw_relay_t *self, const char *run_dir, const wire_connection_t *kernel,
                            char **errmsg);
/* Drops the kernel sockets; running and queued requests get an error naming cause. */
void gw_relay_kernel_detach (gw_relay_t *self, const char *ename, const char *cause, bool lost);
/* The conversation closes (why: as gw_core_close's): the peers are told
   GW_EVENT_CLOSING (detail: cause), the running execution and the queued ones get an error
   reply (ename ConversationClosed, evalue cause), an iopub error and idle;
   pending tool calls end. Call before gw_relay_destroy. */
void gw_relay_close (gw_relay_t *self, const char *why, const char *cause);
/* Sends kennel_configure_request {tools} to the kernel (now, or first
   thing when it is ready). */
void gw_relay_configure_tools (gw_relay_t *self, json_t *tools);
/* The same with the tool timeout too (tool_timeout <= 0: left as it is). */
void gw_relay_configure (gw_relay_t *self, json_t *tools, double tool_timeout);
/* Publishes status "starting" (fresh kernel announced to clients). */
void gw_relay_announce_starting (gw_relay_t *self);
/* Publishes status "dead" (the gateway stops: the kernel goes with it). */
void gw_relay_announce_dead (gw_relay_t *self);
/* A drain began: each execution running or queued gets a stderr stream
   saying the gateway stops within grace seconds and the kernel goes. */
void gw_relay_announce_draining (gw_relay_t *self, double grace);
/* The session of the gateway's own messages to this conversation's clients. */
const char *gw_relay_session (const gw_relay_t *self);
int gw_relay_pending (const gw_relay_t *self);
int gw_relay_executions (const gw_relay_t *self);

#endif
