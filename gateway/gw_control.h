/*  gw_control.h - the control API's handler on the server's control socket (gw_control.c).
*/
#ifndef GW_CONTROL_H_INCLUDED
#define GW_CONTROL_H_INCLUDED

#include <czmq.h>

int gw_control_on_message (zloop_t *loop, zsock_t *sock, void *arg);

#endif
