/*  gw_server_access.h - the server as the other classes see it: what they
    read of it and the few things they may ask of it (gw_server_access.c).
    The server's own life (new, listen, run, destroy) is gw_server.h's; the
    classes below the server include only this, so that none depends on
    the server that owns them.
*/
#ifndef GW_SERVER_ACCESS_H_INCLUDED
#define GW_SERVER_ACCESS_H_INCLUDED

#include "wire.h"
#include "gw_capacity.h"
#include "gw_config.h"
#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct gw_server gw_server_t;
typedef struct gw_io gw_io_t;           /* gw_io.h */
typedef struct gw_zap gw_zap_t;         /* gw_curve.h */
typedef struct gw_zygote gw_zygote_t;   /* gw_zygote.h */
typedef struct gw_pool gw_pool_t;       /* gw_pool.h */
typedef struct gw_remover gw_remover_t; /* gw_remove.h */
typedef struct gw_slots gw_slots_t;     /* gw_slots.h */
typedef struct gw_lingers gw_lingers_t; /* gw_linger.h */
typedef struct gw_core gw_core_t;       /* gw_core.h */

/* The server's fields are its own (gw_server_private.h); the rest of the
   gateway reads them through these. */
zloop_t *gw_server_loop (const gw_server_t *self);
const gw_config_t *gw_server_config (const gw_server_t *self);
const char *gw_server_state_dir (const gw_server_t *self);
gw_io_t *gw_server_io (const gw_server_t *self);
/* What a message may weigh (frames and total): the config's maximum. */
const wire_limits_t *gw_server_limits (const gw_server_t *self);
/* Kernelspec mode or the selftest: one conversation, the loop ends with it. */
bool gw_server_kernel_mode (const gw_server_t *self);
void gw_server_set_kernel_mode (gw_server_t *self);
/* SIGTERM, SIGINT and SIGHUP are read by the process's front, not by
   gw_server_run (`kennel mcp`, whose gateway is embedded: each signal ends
   its client's session, gateway/mcp/README.md), instead of a drain and a
   reload. */
void gw_server_leave_signals (gw_server_t *self);
/* Kernelspec mode: the conversation's workspace is this directory (the
   notebook's), neither mounted over nor removed; NULL before it is set. */
void gw_server_set_kernel_workspace (gw_server_t *self, const char *dir);
const char *gw_server_kernel_workspace (const gw_server_t *self);
/* The loop is ending. */
bool gw_server_stopping (const gw_server_t *self);
/* Ends the loop with exit code code. */
void gw_server_exit (gw_server_t *self, int code);
gw_zygote_t *gw_server_zygote (const gw_server_t *self); /* NULL when none */
gw_pool_t *gw_server_pool (const gw_server_t *self);     /* NULL when none */
gw_capacity_t *gw_server_capacity (gw_server_t *self);
gw_remover_t *gw_server_remover (const gw_server_t *self); /* empties state/graveyard off the loop */
gw_slots_t *gw_server_slots (const gw_server_t *self);
/* Closed conversations' client sockets still answering. */
gw_lingers_t *gw_server_lingers (const gw_server_t *self);
/* The core (gw_core.h), for the fronts and ops files above it: the
   classes below it are handed what they need of it. */
gw_core_t *gw_server_core (const gw_server_t *self);
/* The start-up probe ended: the connection file is written, the control
   socket answers. */
bool gw_server_ready (const gw_server_t *self);
/* Why the start-up probe failed (conversations are refused) and at which
   layer, or NULL. */
const char *gw_server_startup_error (const gw_server_t *self, const char **layer);
/* The client sockets' transport and ip; whether tcp ones are CURVE
   servers (false for ipc, --insecure-tcp and kernelspec mode) and the ZAP
   handler that admits their clients. */
const char *gw_server_transport (const gw_server_t *self);
const char *gw_server_ip (const gw_server_t *self);
bool gw_server_curve (const gw_server_t *self);
void gw_server_set_insecure (gw_server_t *self); /* --insecure-tcp: no CURVE */
gw_zap_t *gw_server_zap (const gw_server_t *self);
const char *gw_server_connection_file (const gw_server_t *self);
int gw_server_control_port (const gw_server_t *self);
/* The most recent confined layer report, or NULL. */
json_t *gw_server_last_layers (const gw_server_t *self); /* the server's */
/* The gateway connection file's content: a front adds its address to it
   before gw_server_run writes the file. */
json_t *gw_server_connection_info (gw_server_t *self);
/* When the layer report was taken: {taken, by, pid, seconds}, or NULL. */
json_t *gw_server_layers_taken (const gw_server_t *self);
/* True when every client socket admits only authenticated peers: CURVE,
   or ipc in the 0700 sock dir (not --insecure-tcp, not kernelspec mode's
   tcp, where Jupyter's connection file decides). */
bool gw_server_authenticates (const gw_server_t *self);
/* A layer report (copied) and how it was taken: by whom, the confined
   pid, and the monotonic start of the launch (-1: unknown) for its
   duration - shown in gateway_info. */
void gw_server_set_layers (gw_server_t *self, json_t *layers, const char *by, pid_t pid, double started);
/* Asks the loop to end after the current handler. */
void gw_server_stop (gw_server_t *self);

/* The control socket, for its handler (gw_control.c): the socket, the
   gateway key that signs and verifies its messages, the replay cache of
   their signatures and the session of the gateway's replies. */
zsock_t *gw_server_control (const gw_server_t *self);
const wire_key_t *gw_server_key (const gw_server_t *self);
wire_replay_t *gw_server_replay (const gw_server_t *self);
const char *gw_server_session (const gw_server_t *self);

#endif
