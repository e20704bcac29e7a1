/*  gw_zmq_front.h - the ZeroMQ front: a conversation's Jupyter client
    sockets, one peer of the core (gw_front.h).
*/
#ifndef GW_ZMQ_FRONT_H_INCLUDED
#define GW_ZMQ_FRONT_H_INCLUDED

#include "gw_front.h"

typedef struct gw_zmq gw_zmq_t;

/* Binds conv's five client sockets and attaches them as a peer of conv (a
   gw_core_attach_fn): on the server's transport (tcp on its ip, CURVE when
   the server uses it; ipc in state/sock), or on the ports of fixed (a
   wire_connection_t: kernelspec mode). conv owns them from now: they close
   with it. 0, or -1 with *errmsg. */
int gw_zmq_open (gw_conv_t *conv, void *fixed, char **errmsg);
/* conv's ZeroMQ front, or NULL. */
gw_zmq_t *gw_zmq_of (gw_conv_t *conv);
/* The client connection {transport, ip, *_port, key, signature_scheme,
   kernel_name}, and the CURVE keys when the sockets have them. */
json_t *gw_zmq_connection_json (const gw_zmq_t *self);

#endif
