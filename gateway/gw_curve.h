/*  gw_curve.h - CurveZMQ on tcp client sockets and the ZAP handler (gw_curve.c).
*/
#ifndef GW_CURVE_H_INCLUDED
#define GW_CURVE_H_INCLUDED

#include "wire.h"
#include <czmq.h>
#include <jansson.h>

/* One set of client sockets' keys (z85) and the ZAP domain naming them. */
typedef struct {
    char server_public[41];
    char server_secret[41];
    char client_public[41];
    char client_secret[41];
    char domain[WIRE_ID_SIZE];
} gw_curve_keys_t;

/* Fresh keypairs and domain; -1 when libzmq cannot do CURVE. */
int gw_curve_keys_new (gw_curve_keys_t *keys);
/* Makes s (before its bind) a CURVE server of keys' domain. */
void gw_curve_server (zsock_t *s, const gw_curve_keys_t *keys);
/* Adds curve_serverkey, curve_publickey, curve_secretkey to a connection. */
void gw_curve_info (const gw_curve_keys_t *keys, json_t *info);
/* Connects s to port of a connection info as a client would (ipc or tcp,
   CURVE when the info has keys). zsock_connect's result. */
int gw_client_connect (zsock_t *s, const json_t *info, int port);

/* Answers libzmq's ZAP requests in the loop: a CURVE client is admitted
   only with the client key of the domain its socket serves. */
typedef struct gw_zap gw_zap_t;
/* NULL + *errmsg when the handler cannot be bound (then CURVE would
   admit anyone: the caller refuses to serve tcp). */
gw_zap_t *gw_zap_new (zloop_t *loop, char **errmsg);
void gw_zap_destroy (gw_zap_t **self_p);
void gw_zap_allow (gw_zap_t *self, const gw_curve_keys_t *keys);
void gw_zap_forget (gw_zap_t *self, const gw_curve_keys_t *keys);

#endif
