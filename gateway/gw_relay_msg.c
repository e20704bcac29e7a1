/*  gw_relay_msg.c - the relay's frames and messages: fields read in place
    (gw_peek), signing toward the kernel, delivery to the peers (unsigned,
    gw_front.h; active content taken out first, gw_sanitize.c), and the
    gateway's own messages (status, error) on behalf of a conversation.
*/
#include "gw_answer.h"
#include "gw_front.h"
#include "gw_io.h"
#include "gw_log.h"
#include "gw_metrics.h"
#include "gw_peek.h"
#include "gw_peers.h"
#include "gw_relay.h"
#include "gw_relay_private.h"
#include "gw_server_access.h"
#include "wire.h"

#include <string.h>

/* Index of the delimiter frame, or -1. */
int
delimiter_index (zmsg_t *msg)
{
    int i = 0;
    for (zframe_t *f = zmsg_first (msg); f; f = zmsg_next (msg), i++)
        if (zframe_streq (f, WIRE_DELIMITER))
            return i;
    return -1;
}

zframe_t *
frame_at (zmsg_t *msg, int index)
{
    zframe_t *f = zmsg_first (msg);
    for (int i = 0; f && i < index; i++)
        f = zmsg_next (msg);
    return f;
}

const char *
frame_peek (peek_t *pk, zmsg_t *msg, int offset, const char *key)
{
    pk->heap = NULL;
    int n = gw_peek_frame (msg, offset, key, pk->buf, sizeof pk->buf);
    pk->text = n < 0 ? NULL : pk->buf;
    if (n >= (int) sizeof pk->buf) {
        pk->heap = wire_xmalloc ((size_t) n + 1);
        pk->text = gw_peek_frame (msg, offset, key, pk->heap, (size_t) n + 1) == n ? pk->heap : NULL;
    }
    return pk->text;
}

void
frame_peek_free (peek_t *pk)
{
    free (pk->heap);
    pk->heap = NULL;
}

/* Signs the four JSON frames of an already verified message with key. */
static void
resign (zmsg_t *msg, const wire_key_t *key)
{
    zframe_t *sig = gw_front_msg_sign (msg, key);
    (void) sig; /* a message verified has the frames */
}

void
log_bad (gw_relay_t *self, const char *channel, wire_error_t err, const char *from)
{
    gw_log_bad_message (self->id, channel, err, from);
}

/* Sends to the kernel without ever blocking the loop: a kernel that stops
   reading fills its DEALER's queue (sndtimeo 0), and what does not fit is
   dropped and logged rather than stalling every other conversation. */
void
kernel_send (gw_relay_t *self, zmsg_t **msg_p, wire_channel_t channel)
{
    zsock_t *sock = self->kernel[channel];
    gw_metrics_relayed (true, zmsg_content_size (*msg_p));
    resign (*msg_p, self->kernel_key);
    int rc = zmsg_send (msg_p, sock);
    gw_io_sent (gw_server_io (self->server), sock); /* a send may take the socket's wake-up (gw_io.c) */
    if (rc == 0 && !*msg_p)
        return;
    zmsg_destroy (msg_p);
    gw_log_dropped (self->id, gw_channel_name (channel));
}

/* What reaches the peers holds no active content unless the operator's
   config allows it (active_content): every front delivers what passes
   here, so one cleaning serves ZeroMQ and both websocket protocols, each
   of which signs the message again itself. False: not to be delivered. */
static bool
inert (gw_relay_t *self, wire_channel_t channel, zmsg_t *msg)
{
    if (self->owner->config (self->conv)->allow_active_content)
        return true;
    if (!self->sanitize)
        self->sanitize = gw_sanitize_new ();
    gw_sanitize_removed_t removed;
    gw_sanitize_result_t result = gw_sanitize_msg (self->sanitize, msg, &removed);
    if (result != GW_SANITIZE_KEPT) {
        char source[200];
        snprintf (source, sizeof source, "conversation/%s/%s/active_content", self->id, gw_channel_name (channel));
        gw_log_limited (source, "active_content", "{s:s, s:s, s:s, s:s}", "conversation", self->id, "channel",
                        gw_channel_name (channel), "removed", removed.text, "outcome",
                        result == GW_SANITIZE_CLEANED ? "cleaned" : "dropped");
    }
    return result != GW_SANITIZE_DROPPED;
}

/* To the peers, unsigned (gw_front.h): the signature frame goes empty. */
void
client_deliver (gw_relay_t *self, wire_channel_t channel, zmsg_t **msg_p)
{
    if (!inert (self, channel, *msg_p)) {
        zmsg_destroy (msg_p);
        return;
    }
    zframe_t *sig = gw_front_msg_sign (*msg_p, NULL);
    gw_metrics_relayed (false, zmsg_content_size (*msg_p));
    if (sig)
        gw_peers_deliver (self->peers, channel, msg_p);
    zmsg_destroy (msg_p);
}

/* A message from the gateway itself on behalf of the conversation, with
   req as parent (and its identities, unless ids is given). */
wire_msg_t *
own_msg (gw_relay_t *self, const char *msg_type, const json_t *parent_header, zmsg_t *ids)
{
    return gw_answer_msg (self->session, msg_type, parent_header, ids);
}

/* A message of the gateway's own to the peers, as relayed ones go. */
void
client_send_own (gw_relay_t *self, wire_msg_t *m, wire_channel_t ch)
{
    zmsg_t *msg = wire_msg_encode (m, NULL);
    if (msg)
        client_deliver (self, ch, &msg);
}

/* gw_answer_send_fn: the relay's own messages go out as relayed ones. */
void
answer_send (void *arg, wire_channel_t channel, wire_msg_t *m)
{
    client_send_own (arg, m, channel);
    wire_msg_destroy (&m);
}

void
publish (gw_relay_t *self, const char *msg_type, const json_t *parent_header, json_t *content)
{
    gw_answer_publish (&self->answer_to, msg_type, parent_header, content);
}

void
publish_status (gw_relay_t *self, const json_t *parent_header, const char *state)
{
    gw_answer_status (&self->answer_to, parent_header, state);
}

void
publish_error (gw_relay_t *self, const json_t *parent_header, const char *ename, const char *evalue)
{
    gw_answer_error (&self->answer_to, parent_header, ename, evalue);
}

json_t *
frame_json (zmsg_t *msg, int offset, size_t *bytes)
{
    int d = delimiter_index (msg);
    zframe_t *f = frame_at (msg, d + offset);
    if (bytes)
        *bytes = f ? zframe_size (f) : 0;
    return f ? json_loadb ((const char *) zframe_data (f), zframe_size (f), 0, NULL) : NULL;
}
