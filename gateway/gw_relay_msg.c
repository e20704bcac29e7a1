/*  gw_relay_msg.c - the relay's frames and messages: fields read in place
    (gw_peek), signing toward the kernel (or holding for one that is not
    ready yet), delivery to the peers (unsigned,
    gw_front.h; active content taken out first, gw_sanitize.c), and the
    gateway's own messages (status, error) on behalf of a conversation.
*/
#include "gw_relay_msg.h"
#include "gw_answer.h"
#include "gw_front.h"
#include "gw_io.h"
#include "gw_log.h"
#include "gw_metrics.h"
#include "gw_peek.h"
#include "gw_peers.h"
#include "gw_server_access.h"
#include "wire.h"

#include <string.h>

const char *
gw_relay_msg_peek (gw_relay_peek_t *pk, zmsg_t *msg, int offset, const char *key)
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
gw_relay_msg_peek_free (gw_relay_peek_t *pk)
{
    free (pk->heap);
    pk->heap = NULL;
}

/* What a kernel's message costs: every frame it chose, after the
   signature (header, parent header, metadata, content, buffers). */
int64_t
gw_relay_msg_size (zmsg_t *msg)
{
    int64_t bytes = 0;
    for (zframe_t *f = wire_frames_part (msg, 2); f; f = zmsg_next (msg))
        bytes += (int64_t) zframe_size (f);
    return bytes;
}

/* Signs the four JSON frames of an already verified message with key. */
static void
resign (zmsg_t *msg, const wire_key_t *key)
{
    zframe_t *sig = gw_front_msg_sign (msg, key);
    (void) sig; /* a message verified has the frames */
}

void
gw_relay_msg_log_bad (gw_relay_t *self, const char *channel, wire_error_t err, const char *from)
{
    gw_log_bad_message (self->id, channel, err, from);
}

/* Sends to the kernel without ever blocking the loop: a kernel that stops
   reading fills its DEALER's queue (sndtimeo 0), and what does not fit is
   dropped and logged rather than stalling every other conversation. */
void
gw_relay_msg_kernel_send (gw_relay_t *self, zmsg_t **msg_p, wire_channel_t channel)
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

void
gw_relay_msg_to_kernel (gw_relay_t *self, wire_channel_t channel, zmsg_t **msg_p)
{
    if (self->kernel[channel] && self->kernel_ready) {
        gw_relay_msg_kernel_send (self, msg_p, channel);
        return;
    }
    /* no kernel yet (starting) or any more (died): hold it, start one */
    zmsg_pushmem (*msg_p, &channel, sizeof channel);
    zlistx_add_end (self->backlog, *msg_p);
    *msg_p = NULL;
    if (self->owner->kernel_dead (self->conv))
        self->owner->kernel_start (self->conv);
}

void
gw_relay_msg_backlog_flush (gw_relay_t *self)
{
    zmsg_t *msg;
    while ((msg = zlistx_detach (self->backlog, NULL))) {
        zframe_t *chf = zmsg_pop (msg);
        wire_channel_t ch = WIRE_SHELL;
        if (chf && zframe_size (chf) == sizeof ch)
            memcpy (&ch, zframe_data (chf), sizeof ch);
        zframe_destroy (&chf);
        gw_relay_msg_kernel_send (self, &msg, ch);
    }
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
gw_relay_msg_deliver (gw_relay_t *self, wire_channel_t channel, zmsg_t **msg_p)
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
gw_relay_msg_own (gw_relay_t *self, const char *msg_type, const json_t *parent_header, zmsg_t *ids)
{
    return gw_answer_msg (self->session, msg_type, parent_header, ids);
}

/* A message of the gateway's own to the peers, as relayed ones go. */
void
gw_relay_msg_send_own (gw_relay_t *self, wire_msg_t *m, wire_channel_t ch)
{
    zmsg_t *msg = wire_msg_encode (m, NULL);
    if (msg)
        gw_relay_msg_deliver (self, ch, &msg);
}

/* gw_answer_send_fn: the relay's own messages go out as relayed ones. */
void
gw_relay_msg_answer_send (void *arg, wire_channel_t channel, wire_msg_t *m)
{
    gw_relay_msg_send_own (arg, m, channel);
    wire_msg_destroy (&m);
}

void
gw_relay_msg_publish (gw_relay_t *self, const char *msg_type, const json_t *parent_header, json_t *content)
{
    gw_answer_publish (&self->answer_to, msg_type, parent_header, content);
}

void
gw_relay_msg_status (gw_relay_t *self, const json_t *parent_header, const char *state)
{
    gw_answer_status (&self->answer_to, parent_header, state);
}

void
gw_relay_msg_error (gw_relay_t *self, const json_t *parent_header, const char *ename, const char *evalue)
{
    gw_answer_error (&self->answer_to, parent_header, ename, evalue);
}

json_t *
gw_relay_msg_json (zmsg_t *msg, int offset, size_t *bytes)
{
    zframe_t *f = wire_frames_part (msg, (size_t) offset);
    if (bytes)
        *bytes = f ? zframe_size (f) : 0;
    return f ? json_loadb ((const char *) zframe_data (f), zframe_size (f), 0, NULL) : NULL;
}
