/*  gw_zygote.h - the fork server for python kernels (gw_zygote.c).
*/
#ifndef GW_ZYGOTE_H_INCLUDED
#define GW_ZYGOTE_H_INCLUDED

#include "gw_config.h"
#include <jansson.h>

typedef struct gw_server gw_server_t; /* gw_server_access.h */

typedef struct gw_zygote gw_zygote_t;
/* Starts `launcher --zygote <state>/zygote.sock [--preload ...]`; readiness
   and restarts are handled in the server's loop. */
gw_zygote_t *gw_zygote_new (gw_server_t *server);
/* Stops it (SIGTERM, bounded wait, SIGKILL) and removes the socket. */
void gw_zygote_destroy (gw_zygote_t **self_p);
/* The socket while the zygote is ready, else NULL (self may be NULL). */
const char *gw_zygote_socket (const gw_zygote_t *self);
/* Adds "zygote" to a builtin kernel's launch spec when ready. */
void gw_zygote_apply (const gw_zygote_t *self, json_t *spec);
/* {enabled, ready, preload, pid, restarts} for gateway_info. */
json_t *gw_zygote_info (const gw_zygote_t *self, const gw_config_t *config);

#endif
