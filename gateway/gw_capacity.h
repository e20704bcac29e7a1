/*  gw_capacity.h - conversations the fds and ZeroMQ sockets allow (gw_capacity.c).
*/
#ifndef GW_CAPACITY_H_INCLUDED
#define GW_CAPACITY_H_INCLUDED

#include "gw_config.h"
#include "gw_util.h"
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int64_t nofile;    /* RLIMIT_NOFILE (soft) at start */
    int max_sockets;   /* ZMQ_MAX_SOCKETS of czmq's context */
    int by_fds;        /* conversations the fds allow (warm pool deducted) */
    int by_sockets;    /* the same for ZeroMQ sockets */
    int conversations; /* the least of those and max_conversations */
    int max_conversations, pool, launches, commands; /* from the config */
} gw_capacity_t;

/* Whether RLIMIT_NOFILE, once raised to its hard limit, leaves the gateway
   the fds it needs for itself (FD_RESERVE) before any conversation: below
   that a start fails wherever the fds run out (ZeroMQ aborts in its
   threads). Call before ZeroMQ starts. 0, or -1 with *errmsg (malloc'd)
   naming the limit and how to raise it. */
GW_MUST_CHECK int gw_capacity_start_check (char **errmsg);
/* From the process's limits (raised in main.c) and the config. */
void gw_capacity_init (gw_capacity_t *self, const gw_config_t *config);
/* 0 when one more conversation fits; else -1 with *evalue (malloc'd)
   naming the limit (ename CapacityError). */
GW_MUST_CHECK int gw_capacity_check (gw_capacity_t *self, int open_conversations, char **evalue);
/* Whether one more kernel's sockets fit in the fds left now. */
bool gw_capacity_fds_room (const gw_capacity_t *self, int open_conversations);
json_t *gw_capacity_json (gw_capacity_t *self);

#endif
