/*  gw_linger.h - what stays a while after its conversation closed
    (gw_linger.c): a closed conversation's ZeroMQ client sockets, which
    answer requests that were still on their way at the close.

    Bounded in time (GW_LINGER_MS each) and in number (GW_LINGER_MAX: the
    oldest ends early to make room), so a burst of closes cannot exhaust
    the fds that gw_capacity.c reserves for them.
*/
#ifndef GW_LINGER_H_INCLUDED
#define GW_LINGER_H_INCLUDED

#include <czmq.h>
#include <stddef.h>

/* How long a closed conversation's sockets answer: a request its client
   sent just before it learned of the close is in flight for far less. */
#define GW_LINGER_MS 5000
/* Closed conversations lingering at once. */
#define GW_LINGER_MAX 32
/* What one of them holds (shell, control, iopub): three ZeroMQ sockets,
   their mailboxes and listeners, and one connection per channel of a
   client or two. */
#define GW_LINGER_SOCKETS 3
#define GW_LINGER_FDS     12

typedef struct gw_lingers gw_lingers_t;
/* Ends one that lingers (its time is up, room is needed, the gateway
   stops): frees it. */
typedef void (gw_linger_end_fn) (void *obj);

/* Timers on loop (gw_timer.c). */
gw_lingers_t *gw_lingers_new (zloop_t *loop);
/* Ends every one still lingering: before the loop's timers go. */
void gw_lingers_destroy (gw_lingers_t **self_p);
/* obj lingers GW_LINGER_MS, then end (obj); when GW_LINGER_MAX already
   linger, the oldest is ended first. */
void gw_linger_add (gw_lingers_t *self, void *obj, gw_linger_end_fn *end);

#endif
