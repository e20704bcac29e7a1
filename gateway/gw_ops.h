/*  gw_ops.h - running kennel as a service: signals read in the loop, the
    config reloaded on SIGHUP, the drain on SIGTERM (gateway/README.md,
    "Signals").
*/
#ifndef GW_OPS_H_INCLUDED
#define GW_OPS_H_INCLUDED

#include "gw_config.h"
#include "gw_error.h" /* GW_DRAINING, what a refusal by the drain says */
#include <czmq.h>
#include <stdbool.h>

typedef struct gw_server gw_server_t; /* gw_server_access.h */

/* ---- gw_signal: SIGTERM, SIGINT and SIGHUP as events of the loop ------- */

/* Blocks the three in this thread: call before any thread starts, so that
   every thread inherits the mask and none is interrupted by them (a signal
   handler would break zloop's poll, which czmq takes as the end). Children
   unblock them (gw_launch_exec). */
void gw_signal_block (void);
/* What the loop does with one. */
typedef void (gw_signal_fn) (int sig, void *arg);
typedef struct gw_signals gw_signals_t;
/* A signalfd of the three in loop; NULL when they were not blocked (then
   czmq's handler ends the loop as before). */
gw_signals_t *gw_signals_new (zloop_t *loop, gw_signal_fn *fn, void *arg);
void gw_signals_destroy (gw_signals_t **self_p);

/* A fresh warm pool of size kernels (0: none), the old one's stopped:
   false when the gateway runs none (not ready, cannot confine, kernelspec
   mode). The server's, handed to the drain and the reload. */
typedef bool (gw_pool_renew_fn) (gw_server_t *server, int size);

/* ---- gw_drain: SIGTERM's graceful stop --------------------------------- */

/* No new conversation from now; the executions running or queued may end
   within the config's drain_grace, then the gateway stops (exit 0). A
   second call stops at once. */
void gw_drain_start (gw_server_t *server, gw_pool_renew_fn *renew);
/* Whether new conversations are refused for a drain. */
bool gw_drain_active (const gw_server_t *server);
/* Seconds a refused client should wait before it retries elsewhere. */
#define GW_DRAIN_RETRY_AFTER 5

/* ---- gw_reload: SIGHUP's config reload ---------------------------------- */

/* Reads the config file again: on success its limits and defaults apply
   to conversations opened from now (each open one keeps the config it was
   opened under), and every key that needs a restart and changed is
   logged; a bad file is logged with its error and the old config kept.
   0 or -1. renew refills the warm pool when what it was made with
   changed. */
int gw_reload (gw_server_t *server, gw_pool_renew_fn *renew);
/* A front that serves a section of the config the core does not read
   (/mcp's "mcp": its tools file) is shown a reloaded config before it
   replaces the old: 0 when the front took its part (applied), -1 with
   *errmsg (malloc'd) refuses the whole reload, the front unchanged. One
   front sets it; NULL unsets. */
typedef int(gw_reload_check_fn) (const gw_config_t *fresh, char **errmsg, void *arg);
void gw_server_set_reload_check (gw_server_t *self, gw_reload_check_fn *fn, void *arg);
int gw_server_reload_check (gw_server_t *self, const gw_config_t *fresh, char **errmsg);

/* The server's side of both: set and read by the three above. */
void gw_server_set_config_path (gw_server_t *self, const char *path);
const char *gw_server_config_path (const gw_server_t *self);
/* The config for conversations opened from now (taken); the old one lives
   on in the conversations that hold it. */
void gw_server_replace_config (gw_server_t *self, gw_config_t **config_p);
/* The drain's start (monotonic), or 0 when none. */
double gw_server_drain_started (const gw_server_t *self);
void gw_server_set_drain_started (gw_server_t *self, double started);

#endif
