/*  gw_front.h - the contract between the core and a front.

    A front translates between one transport and the core's conversations:
    the ZeroMQ client sockets (gw_zmq_front.c), the control socket
    (gw_control.c), HTTP/WebSocket (gateway/http/). The core owns the
    conversation table, the kernels, the relay's checks (JSON, sizes, message
    types, the execution queue, limits, the tool-call broker, re-signing
    toward the kernel); a front never touches those.

    Peers. A front attaches any number of peers to a conversation (a
    websocket is one peer; the ZeroMQ front is one peer per conversation and
    routes by ROUTER identity itself) and detaches them at any time, also in
    the middle of an execution: what the core would have delivered to a
    detached peer is dropped, nothing else changes.

    Messages. A message crosses this interface as one zmsg_t in Jupyter's
    frame layout, so that the ZeroMQ front sends the frames it received
    without copying them:
        route...        zero or more frames of the front's choosing, opaque
                        to the core, given back with every answer
        "<IDS|MSG>"     the delimiter
        signature       a frame the core neither checks nor fills (empty
                        from the core): the front authenticated its peer
                        before submitting; a front that signs writes it
        header, parent_header, metadata, content    JSON, one frame each
        buffers...      raw frames
    gw_front_msg_wrap and gw_front_msg_unwrap convert from and to a separate
    route and parts for a front that keeps them apart.

    Delivery. The core delivers to a peer, from the loop:
    - replies (shell, control) and stdin messages (input_request,
      tool_request) to the peer whose request they answer, with that
      request's route;
    - iopub messages to every attached peer (route: the kernel's topic);
    - events: a fresh kernel starting, the kernel ready, the kernel died
      (detail: its cause), the conversation closing (detail: what its
      clients are told, e.g. "the conversation was closed by the host; the
      kernel is gone"), the conversation closed (detail: why, as the close
      was asked; the peer is detached already).

    Ownership and re-entrancy. gw_front_submit and deliver take the message
    (*msg_p is NULL or left for the core to destroy when the call returns).
    Callbacks run inside the core's handlers: they may submit, attach and
    detach any peer (a detached peer is freed once the core's delivery
    returns), but must not close or destroy a conversation; a front closes
    one with gw_core_close_later.
*/
#ifndef GW_FRONT_H_INCLUDED
#define GW_FRONT_H_INCLUDED

#include "wire.h"
#include <czmq.h>

typedef struct gw_conv gw_conv_t;
typedef struct gw_peer gw_peer_t;

typedef enum {
    GW_EVENT_KERNEL_STARTING, /* a fresh kernel starts (a restart, or after a death); detail: NULL */
    GW_EVENT_KERNEL_READY,    /* the kernel answers; detail: NULL */
    GW_EVENT_KERNEL_DIED,     /* detail: the cause, as the failed executions' evalue */
    GW_EVENT_CLOSING,         /* detail: the cause told to clients, as the executions' evalue */
    GW_EVENT_CLOSED,          /* the last call for this peer; detail: why ("close_request", "idle", ...) */
    /* submit now, from inside this call, what the peer's clients have sent
       on shell and the front has not read yet: an execution failed with
       stop_on_error, and what waits at that moment is aborted (ipykernel
       flushes its shell stream the same way); detail: NULL. A front that
       submits as it reads (a websocket, the MCP core peer) ignores it. */
    GW_EVENT_SHELL_FLUSH,
} gw_event_t;

typedef struct {
    /* A message for this peer on channel (shell, iopub, stdin, control).
       NULL: a peer of events only, that submits nothing (an HTTP upload,
       which must end when its conversation closes): no copy is made for it. */
    void (*deliver) (void *arg, wire_channel_t channel, zmsg_t **msg_p);
    /* May be NULL. */
    void (*event) (void *arg, gw_event_t event, const char *detail);
} gw_front_fns_t;

/* A front attaches a peer to a conversation, and finds its own peer's
   state again, through the conversation (gw_conv_attach and
   gw_conv_find_front, gw_conv.h): the peers are its relay's. */
/* No more calls for this peer from now; *peer_p becomes NULL. */
void gw_front_detach (gw_peer_t **peer_p);
/* A client's message on shell, control or stdin, authenticated by the
   front. Checked, routed and answered by the core; a bad one is dropped and
   logged (rate-limited) as the relay logs a client's bad message. */
void gw_front_submit (gw_peer_t *peer, wire_channel_t channel, zmsg_t **msg_p);
/* The conversation of a peer. */
gw_conv_t *gw_front_conv (const gw_peer_t *peer);

/* Writes the signature of msg's parts under key into its signature frame
   and returns that frame; NULL (msg unchanged) when msg has no delimiter
   followed by a signature and four parts. */
zframe_t *gw_front_msg_sign (zmsg_t *msg, const wire_key_t *key);
/* "shell", "iopub", "stdin", "control", "hb" */
const char *gw_channel_name (wire_channel_t channel);

/* route (taken, may be NULL) + delimiter + empty signature + parts (taken). */
zmsg_t *gw_front_msg_wrap (zmsg_t **route_p, zmsg_t **parts_p);
/* The parts of *msg_p (taken), its route in *route_p (NULL: not wanted);
   NULL when it has no delimiter and signature frame. */
zmsg_t *gw_front_msg_unwrap (zmsg_t **msg_p, zmsg_t **route_p);

#endif
