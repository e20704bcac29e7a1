/*  gw_linger.c - closed conversations' remains, each ended at its time or
    when room is needed (gw_linger.h). The oldest is at the list's head:
    each lingers as long, so they end in the order they came.
*/
#include "gw_linger.h"
#include "gw_timer.h"
#include "wire.h"

struct gw_lingers {
    zloop_t *loop;
    zlistx_t *items; /* linger_t*, oldest first */
};

typedef struct {
    gw_lingers_t *owner;
    void *obj;
    gw_linger_end_fn *end;
    void *handle; /* in owner->items */
    int timer_id;
} linger_t;

/* Off the list, its timer ended, then obj's end. */
static void
linger_end (linger_t *item)
{
    zlistx_detach (item->owner->items, item->handle);
    gw_timer_end (item->owner->loop, item->timer_id);
    item->end (item->obj);
    free (item);
}

static int
on_linger_over (zloop_t *loop, int timer_id, void *arg)
{
    linger_t *item = arg;
    item->timer_id = 0; /* fired its last time */
    linger_end (item);
    return 0;
}

gw_lingers_t *
gw_lingers_new (zloop_t *loop)
{
    gw_lingers_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->items = zlistx_new ();
    return self;
}

void
gw_lingers_destroy (gw_lingers_t **self_p)
{
    gw_lingers_t *self = *self_p;
    if (!self)
        return;
    linger_t *item;
    while ((item = zlistx_first (self->items)))
        linger_end (item);
    zlistx_destroy (&self->items);
    free (self);
    *self_p = NULL;
}

void
gw_linger_add (gw_lingers_t *self, void *obj, gw_linger_end_fn *end)
{
    while (zlistx_size (self->items) >= GW_LINGER_MAX)
        linger_end (zlistx_first (self->items));
    linger_t *item = wire_xcalloc (1, sizeof *item);
    item->owner = self;
    item->obj = obj;
    item->end = end;
    item->handle = zlistx_add_end (self->items, item);
    item->timer_id = gw_timer_start (self->loop, GW_LINGER_MS, 1, on_linger_over, item);
}
