/*  gw_server_private.h - the server's fields: for gw_server.c and
    gw_server_access.c only; everyone else uses the accessors of
    gw_server_access.h.
*/
#ifndef GW_SERVER_PRIVATE_H_INCLUDED
#define GW_SERVER_PRIVATE_H_INCLUDED

#include "gw_capacity.h"
#include "gw_config.h"
#include "gw_curve.h"
#include "gw_ops.h"
#include "gw_server_access.h"
#include "wire.h"

typedef struct gw_launch gw_launch_t; /* gw_launch.h */
typedef struct gw_timers gw_timers_t; /* gw_timer.h */

struct gw_server {
    zloop_t *loop;
    gw_config_t *config;
    char *state_dir;
    char *ip;
    char *transport;
    /* tcp client sockets are CURVE servers (gw_curve.c); false for ipc,
       --insecure-tcp and kernelspec mode (Jupyter's connection file) */
    bool curve;
    gw_zap_t *zap;           /* the ZAP handler while curve */
    gw_curve_keys_t control_keys;
    char *connection_file;
    wire_key_t *key;
    wire_replay_t *replay;
    wire_limits_t limits;
    zsock_t *control;
    int control_port;
    gw_core_t *core;         /* the conversation table (gw_core.c) */
    char session[WIRE_ID_SIZE];
    json_t *last_layers; /* the most recent confined layer report, or NULL */
    json_t *layers_taken; /* {taken, by, pid, seconds} of last_layers */
    gw_launch_t *probe;  /* the start-up confinement probe while it runs */
    int probe_timer;     /* its launch_timeout */
    double probe_started; /* monotonic */
    char *startup_error; /* why the probe failed (conversations refused), or NULL */
    char *startup_layer; /* the layer (launcher stage) it failed at */
    json_t *connection_info; /* the gateway connection file's content */
    bool ready;              /* the probe ended: file written, control answered */
    gw_slots_t *slots;       /* the launch scheduler (gw_slots.c) */
    gw_pool_t *pool;         /* NULL when warm_pool is 0 or in kernelspec mode */
    gw_capacity_t capacity;  /* what the fd and socket limits allow */
    gw_zygote_t *zygote;     /* NULL when disabled or in kernelspec mode */
    char *probe_dir;
    gw_io_t *io;             /* the conversations' sockets and fds (gw_io.c) */
    gw_remover_t *remover;   /* empties state/graveyard off the loop (gw_remove.c) */
    gw_timers_t *timers;     /* every timer on loop (gw_timer.c) */
    gw_lingers_t *lingers;   /* closed conversations' client sockets (gw_linger.c) */
    bool kernel_mode;    /* one conversation; exit when it closes */
    bool front_signals;  /* SIGTERM, SIGINT, SIGHUP are its front's to read (kennel mcp) */
    char *config_path;   /* read again on SIGHUP (gw_reload.c), or NULL */
    gw_reload_check_fn *reload_check; /* a front's part of a reload, or NULL */
    void *reload_check_arg;
    gw_signals_t *signals; /* SIGTERM, SIGINT, SIGHUP from the loop (gw_signal.c), or NULL */
    int last_signal;     /* the last of them, for the stop's log line */
    double drain_started; /* monotonic, 0 until SIGTERM (gw_drain.c) */
    char *kernel_workspace; /* kernelspec mode: the notebook's directory */
    int exit_code;
    bool stopping;
};

#endif
