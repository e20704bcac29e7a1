/*  gw_peers.h - the core's side of gw_front.h: one conversation's peers.

    The relay owns one gw_peers_t per conversation: what a peer submits
    reaches the relay's submit function with the peer's token as its first
    route frame; the relay delivers with that frame still in front (the
    kernel echoes it with the request's other routing frames), and the
    token picks the peer. iopub goes to every peer.
*/
#ifndef GW_PEERS_H_INCLUDED
#define GW_PEERS_H_INCLUDED

#include "gw_front.h"

typedef struct gw_peers gw_peers_t;
/* A peer's message with its token frame first; takes *msg_p. */
typedef void (gw_peers_submit_fn) (void *arg, wire_channel_t channel, zmsg_t **msg_p);
/* A peer detached (gw_front_detach): token is the frame that named it. */
typedef void (gw_peers_gone_fn) (void *arg, zframe_t *token);

/* gone may be NULL; it is not called for the peers gw_peers_destroy ends. */
gw_peers_t *gw_peers_new (gw_conv_t *conv, gw_peers_submit_fn *submit, gw_peers_gone_fn *gone, void *arg);
/* GW_EVENT_CLOSED (detail why) to every peer still attached, then frees
   them all. Never from inside a peer's callback. */
void gw_peers_destroy (gw_peers_t **self_p, const char *why);
/* A new peer; fns (kept by pointer: static) are called with arg. */
gw_peer_t *gw_peers_attach (gw_peers_t *self, const gw_front_fns_t *fns, void *arg);
/* The arg of the first live peer attached with fns, or NULL. */
void *gw_peers_find (gw_peers_t *self, const gw_front_fns_t *fns);
/* A message for a client (takes *msg_p): iopub to every peer, any other
   channel to the peer its first frame names (dropped when none does). */
void gw_peers_deliver (gw_peers_t *self, wire_channel_t channel, zmsg_t **msg_p);
void gw_peers_event (gw_peers_t *self, gw_event_t event, const char *detail);
/* Whether token (the first route frame of a request) names a peer still
   attached: whoever serves that request's stdin. */
bool gw_peers_attached (gw_peers_t *self, zframe_t *token);

#endif
