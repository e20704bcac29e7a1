/*  gw_server.h - the daemon's server: the loop, the control socket, the
    start-up probe, idle culling and a clean shutdown (gw_server.c). What
    the other classes read of it is gw_server_access.h's.
*/
#ifndef GW_SERVER_H_INCLUDED
#define GW_SERVER_H_INCLUDED

#include "gw_config.h"
#include "gw_server_access.h"

gw_server_t *gw_server_new (gw_config_t **config_p, const char *state_dir, const char *ip, const char *transport,
                            char **errmsg);
void gw_server_destroy (gw_server_t **self_p);
/* Binds the control socket; the connection file is written (and the socket
   read) by gw_server_run once the start-up confinement probe has ended. */
int gw_server_listen (gw_server_t *self, const char *connection_file, char **errmsg);
int gw_server_run (gw_server_t *self);

#endif
