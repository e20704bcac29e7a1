/*  gw_peers.c - peers (gw_front.h, gw_peers.h): attach, detach, submit,
    delivery by token and to all, events.

    A peer's token is a frame the core puts in front of the route of what
    the peer submits; answers come back with it (the kernel echoes routing
    frames) and it names the peer, among this conversation's only. Peers
    sit in an array walked by index, so that a callback may attach, detach
    or submit (nested delivery) while a delivery walks it: a detached peer
    is only marked and freed once no walk is under way.
*/
#include "gw_peers.h"

#include <string.h>

struct gw_peer {
    gw_peers_t *peers;
    const gw_front_fns_t *fns;
    void *arg;
    uint64_t token;
    bool gone; /* detached: no more calls; freed when no walk is under way */
};

struct gw_peers {
    gw_conv_t *conv;
    gw_peers_submit_fn *submit;
    gw_peers_gone_fn *gone;
    void *submit_arg;
    gw_peer_t **items;
    size_t size, capacity;
    int walking; /* deliveries under way (callbacks may nest them) */
    uint64_t next_token;
};

gw_peers_t *
gw_peers_new (gw_conv_t *conv, gw_peers_submit_fn *submit, gw_peers_gone_fn *gone, void *arg)
{
    gw_peers_t *self = wire_xcalloc (1, sizeof *self);
    self->conv = conv;
    self->submit = submit;
    self->gone = gone;
    self->submit_arg = arg;
    self->next_token = 1;
    return self;
}

/* Frees the detached peers once no walk is under way. */
static void
peers_purge (gw_peers_t *self)
{
    if (self->walking)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < self->size; i++)
        if (self->items[i]->gone)
            free (self->items[i]);
        else
            self->items[kept++] = self->items[i];
    self->size = kept;
}

void
gw_peers_destroy (gw_peers_t **self_p, const char *why)
{
    gw_peers_t *self = *self_p;
    if (!self)
        return;
    self->gone = NULL; /* the conversation's state may already be freed */
    for (size_t i = 0; i < self->size; i++) {
        gw_peer_t *peer = self->items[i];
        if (peer->gone)
            continue;
        peer->gone = true; /* detached before its last call */
        if (peer->fns->event)
            peer->fns->event (peer->arg, GW_EVENT_CLOSED, why);
    }
    for (size_t i = 0; i < self->size; i++)
        free (self->items[i]);
    free (self->items);
    free (self);
    *self_p = NULL;
}

gw_peer_t *
gw_peers_attach (gw_peers_t *self, const gw_front_fns_t *fns, void *arg)
{
    if (self->size == self->capacity) {
        self->capacity = self->capacity ? 2 * self->capacity : 4;
        self->items = wire_xreallocarray (self->items, self->capacity, sizeof *self->items);
    }
    gw_peer_t *peer = wire_xcalloc (1, sizeof *peer);
    peer->peers = self;
    peer->fns = fns;
    peer->arg = arg;
    peer->token = self->next_token++;
    self->items[self->size++] = peer;
    return peer;
}

void
gw_front_detach (gw_peer_t **peer_p)
{
    gw_peer_t *peer = *peer_p;
    if (!peer)
        return;
    *peer_p = NULL;
    peer->gone = true;
    gw_peers_t *self = peer->peers;
    if (self->gone) {
        zframe_t *token = zframe_new (&peer->token, sizeof peer->token);
        self->gone (self->submit_arg, token);
        zframe_destroy (&token);
    }
    peers_purge (self);
}

gw_conv_t *
gw_front_conv (const gw_peer_t *peer)
{
    return peer->peers->conv;
}

void *
gw_peers_find (gw_peers_t *self, const gw_front_fns_t *fns)
{
    for (size_t i = 0; i < self->size; i++)
        if (!self->items[i]->gone && self->items[i]->fns == fns)
            return self->items[i]->arg;
    return NULL;
}

void
gw_front_submit (gw_peer_t *peer, wire_channel_t channel, zmsg_t **msg_p)
{
    if (peer->gone) {
        zmsg_destroy (msg_p);
        return;
    }
    zmsg_pushmem (*msg_p, &peer->token, sizeof peer->token);
    gw_peers_t *self = peer->peers;
    self->submit (self->submit_arg, channel, msg_p);
    zmsg_destroy (msg_p);
}

/* The live peer whose token the frame holds, or NULL. */
static gw_peer_t *
peer_of_token (gw_peers_t *self, zframe_t *frame)
{
    uint64_t token;
    if (!frame || zframe_size (frame) != sizeof token)
        return NULL;
    memcpy (&token, zframe_data (frame), sizeof token);
    for (size_t i = 0; i < self->size; i++)
        if (self->items[i]->token == token)
            return self->items[i]->gone ? NULL : self->items[i];
    return NULL;
}

bool
gw_peers_attached (gw_peers_t *self, zframe_t *token)
{
    return peer_of_token (self, token) != NULL;
}

static void
deliver_one (gw_peer_t *peer, wire_channel_t channel, zmsg_t **msg_p)
{
    if (!peer->fns->deliver) { /* a peer of events only */
        zmsg_destroy (msg_p);
        return;
    }
    peer->peers->walking++;
    peer->fns->deliver (peer->arg, channel, msg_p);
    peer->peers->walking--;
    zmsg_destroy (msg_p);
}

/* Every live peer gets iopub: a copy each, the message itself to the last. */
static void
deliver_all (gw_peers_t *self, zmsg_t **msg_p)
{
    self->walking++;
    size_t size = self->size, last = size;
    for (size_t i = 0; i < size; i++)
        if (!self->items[i]->gone && self->items[i]->fns->deliver)
            last = i;
    for (size_t i = 0; i < size && *msg_p; i++) {
        gw_peer_t *peer = self->items[i];
        if (peer->gone || !peer->fns->deliver)
            continue; /* a peer of events only costs no copy */
        zmsg_t *copy = i == last ? *msg_p : zmsg_dup (*msg_p);
        if (i == last)
            *msg_p = NULL;
        deliver_one (peer, WIRE_IOPUB, &copy);
    }
    self->walking--;
    zmsg_destroy (msg_p);
    peers_purge (self);
}

void
gw_peers_deliver (gw_peers_t *self, wire_channel_t channel, zmsg_t **msg_p)
{
    if (channel == WIRE_IOPUB) {
        deliver_all (self, msg_p);
        return;
    }
    gw_peer_t *peer = peer_of_token (self, zmsg_first (*msg_p));
    if (!peer) {
        zmsg_destroy (msg_p); /* its peer is gone, as a ROUTER drops for a client gone */
        return;
    }
    zframe_t *token = zmsg_pop (*msg_p);
    zframe_destroy (&token);
    deliver_one (peer, channel, msg_p);
    peers_purge (self);
}

void
gw_peers_event (gw_peers_t *self, gw_event_t event, const char *detail)
{
    self->walking++;
    size_t size = self->size;
    for (size_t i = 0; i < size; i++) {
        gw_peer_t *peer = self->items[i];
        if (!peer->gone && peer->fns->event)
            peer->fns->event (peer->arg, event, detail);
    }
    self->walking--;
    peers_purge (self);
}

zmsg_t *
gw_front_msg_wrap (zmsg_t **route_p, zmsg_t **parts_p)
{
    zmsg_t *msg = *parts_p;
    *parts_p = NULL;
    zmsg_pushmem (msg, "", 0);
    zmsg_pushstr (msg, WIRE_DELIMITER);
    if (route_p && *route_p) {
        wire_frames_push_identities (msg, *route_p);
        zmsg_destroy (route_p);
    }
    return msg;
}

zmsg_t *
gw_front_msg_unwrap (zmsg_t **msg_p, zmsg_t **route_p)
{
    zmsg_t *msg = *msg_p;
    *msg_p = NULL;
    zmsg_t *route = wire_frames_pop_identities (msg);
    if (!route || zmsg_size (msg) < 2) {
        zmsg_destroy (&route);
        zmsg_destroy (&msg);
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        zframe_t *f = zmsg_pop (msg);
        zframe_destroy (&f);
    }
    if (route_p)
        *route_p = route;
    else
        zmsg_destroy (&route);
    return msg;
}

zframe_t *
gw_front_msg_sign (zmsg_t *msg, const wire_key_t *key)
{
    zframe_t *sig = wire_frames_part (msg, 1);
    if (!sig)
        return NULL;
    zframe_t *parts[4];
    for (int i = 0; i < 4; i++)
        if (!(parts[i] = zmsg_next (msg)))
            return NULL;
    char out[WIRE_SIGNATURE_HEX_LEN + 1];
    wire_key_sign (key, parts, out);
    zframe_reset (sig, out, strlen (out));
    return sig;
}

const char *
gw_channel_name (wire_channel_t channel)
{
    static const char *names[] = {"shell", "iopub", "stdin", "control", "hb"};
    return channel < WIRE_CHANNEL_COUNT_ ? names[channel] : "?";
}
