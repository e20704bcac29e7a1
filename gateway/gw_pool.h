/*  gw_pool.h - the warm pool of kernels started ahead of need (gw_pool.c).
*/
#ifndef GW_POOL_H_INCLUDED
#define GW_POOL_H_INCLUDED

#include "gw_config.h"
#include <jansson.h>
#include <stdbool.h>

typedef struct gw_server gw_server_t; /* gw_server_access.h */
typedef struct gw_kernel gw_kernel_t; /* gw_kernel.h */
typedef struct gw_pool gw_pool_t;
/* How many conversations are open (the pool fills only while their fds
   leave room): the table's count, handed by who makes the pool. */
typedef int (gw_pool_count_fn) (void *arg);
/* Starts filling in the background (one launch at a time, after the
   conversations' own launches). */
gw_pool_t *gw_pool_new (gw_server_t *server, int size, gw_pool_count_fn *count, void *count_arg);
void gw_pool_destroy (gw_pool_t **self_p);
/* Whether a conversation of this kernel and policy can take a pooled kernel:
   the sandbox and settings fixed at pool time must be the defaults. */
bool gw_pool_fits (const gw_config_t *config, const char *kernel, const gw_policy_t *policy);
/* A ready kernel, the caller's from now (the pool refills), or NULL. It was
   started and confined ahead of need with no identity: default policy, no
   tools, a workspace in *dir (state/pool/<random>/workspace, its log
   beside it; malloc'd), which the caller renames to its own. */
gw_kernel_t *gw_pool_claim (gw_pool_t *self, char **dir);
/* {size, ready, starting, claimed} */
json_t *gw_pool_info (gw_pool_t *self);

#endif
