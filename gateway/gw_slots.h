/*  gw_slots.h - the launch scheduler (gw_slots.c).
*/
#ifndef GW_SLOTS_H_INCLUDED
#define GW_SLOTS_H_INCLUDED

#include <stdbool.h>

/* At most max kernels launch at a time, the others wait in order. */
typedef struct gw_slots gw_slots_t;
/* Called when a waiter's turn came: it holds a slot from then. */
typedef void (gw_slots_fn) (void *arg);
gw_slots_t *gw_slots_new (int max);
void gw_slots_destroy (gw_slots_t **self_p);
/* true: a slot is the caller's now; false: fn (arg) is called when one is. */
bool gw_slots_take (gw_slots_t *self, gw_slots_fn *fn, void *arg);
/* arg waits no longer. */
void gw_slots_cancel (gw_slots_t *self, void *arg);
/* A held slot is given back (to the first waiter, at once). */
void gw_slots_release (gw_slots_t *self);
/* Whether every slot is taken or someone waits. */
bool gw_slots_busy (const gw_slots_t *self);

#endif
