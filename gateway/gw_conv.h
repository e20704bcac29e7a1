/*  gw_conv.h - one conversation (gw_conv.c): its directories, its policy
    and tools, its kernel's lifecycle; it owns its relay (gw_relay.h),
    which reaches it only through the functions it hands the relay.
*/
#ifndef GW_CONV_H_INCLUDED
#define GW_CONV_H_INCLUDED

#include "gw_config.h"
#include "gw_front.h"
#include <jansson.h>
#include <stdbool.h>

typedef struct gw_server gw_server_t; /* gw_server_access.h */

typedef struct gw_conv gw_conv_t;

/* How a conversation asks the table that made it (table: the arg it was
   made with) to close it once the current handler has returned
   (gw_core_close_later). */
typedef void (gw_conv_close_fn) (void *table, const char *id, const char *why);
/* Creates the directories (claims a warm-pool kernel when pooled and the
   pool has one that fits). NULL + *errmsg. Only the table (gw_core.c)
   makes conversations. */
gw_conv_t *gw_conv_new (gw_server_t *server, const char *id, const char *kernel, json_t *tools,
                        const gw_policy_t *policy, bool pooled, gw_conv_close_fn *close_later, void *table,
                        char **errmsg);
/* Starts its kernel (or adopts the claimed one). */
void gw_conv_start (gw_conv_t *self);
/* Stops the kernel, closes the sockets, removes the directories (the
   workspace too unless keep_workspace). */
void gw_conv_destroy (gw_conv_t **self_p, bool keep_workspace);
/* Before a close (why: "close_request", "idle", "shutdown", ...): every
   execution still running or queued gets a ConversationClosed reply. */
void gw_conv_closing (gw_conv_t *self, const char *why);
const char *gw_conv_id (const gw_conv_t *self);
/* A front's new peer of the conversation (gw_front.h); fns (kept by
   pointer: static) are called with arg. */
gw_peer_t *gw_conv_attach (gw_conv_t *self, const gw_front_fns_t *fns, void *arg);
/* The arg of the conversation's first peer attached with fns, or NULL: a
   front finds its own state for a conversation. */
void *gw_conv_find_front (gw_conv_t *self, const gw_front_fns_t *fns);
gw_server_t *gw_conv_server (const gw_conv_t *self);
/* The kernel id: a UUID (8-4-4-4-12 hex digits) made with the conversation. */
const char *gw_conv_kernel_id (const gw_conv_t *self);
const char *gw_conv_workspace (const gw_conv_t *self);
json_t *gw_conv_list_entry (const gw_conv_t *self);
/* Kills the kernel (if any) and starts a fresh one; state "lost". */
void gw_conv_restart (gw_conv_t *self, const char *reason);
/* SIGINT to the running kernel: 0, or -1 when none runs. */
int gw_conv_interrupt (gw_conv_t *self);
/* Calls done(reply_ok, errmsg, arg) once the kernel is confined or failed. */
typedef void (gw_conv_ready_fn) (gw_conv_t *conv, bool ok, const char *errmsg, void *arg);
void gw_conv_when_ready (gw_conv_t *self, gw_conv_ready_fn *fn, void *arg);
bool gw_conv_idle_expired (const gw_conv_t *self, double now);
/* "starting", "dead", "busy" (executions running or queued) or "idle". */
const char *gw_conv_state (const gw_conv_t *self);
/* Executions running or queued. */
int gw_conv_pending (const gw_conv_t *self);
/* The gateway stops after a drain: the clients hear iopub status "dead". */
void gw_conv_announce_stopping (gw_conv_t *self);
/* A drain began (gw_relay_announce_draining). */
void gw_conv_announce_draining (gw_conv_t *self, double grace);
/* The session of the gateway's own messages to the clients. */
const char *gw_conv_session (const gw_conv_t *self);
/* The config the conversation was opened under (a reload changes only
   later conversations'). */
const gw_config_t *gw_conv_config (const gw_conv_t *self);

/* Replaces the declared tools; a running kernel is reconfigured. */
void gw_conv_set_tools (gw_conv_t *self, json_t *tools);

#endif
