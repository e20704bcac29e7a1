/*  gw_slots.c - the launch scheduler: kernels start at most
    max_parallel_launches at a time, the others wait their turn in order.

    Fifty conversations opened at once would otherwise confine and
    initialize fifty interpreters together on two cores, and each launch
    timeout would measure the crowd, not the launch. A slot is held from the
    launch until the kernel answered (or failed).
*/
#include "gw_slots.h"
#include "wire.h"

typedef struct {
    gw_slots_fn *fn;
    void *arg;
} waiter_t;

struct gw_slots {
    int max;
    int taken;
    zlistx_t *waiting; /* waiter_t*, in order */
};

static void
waiter_destructor (void **item)
{
    free (*item);
    *item = NULL;
}

gw_slots_t *
gw_slots_new (int max)
{
    gw_slots_t *self = wire_xcalloc (1, sizeof *self);
    self->max = max;
    self->waiting = zlistx_new ();
    zlistx_set_destructor (self->waiting, waiter_destructor);
    return self;
}

void
gw_slots_destroy (gw_slots_t **self_p)
{
    gw_slots_t *self = *self_p;
    if (!self)
        return;
    zlistx_destroy (&self->waiting);
    free (self);
    *self_p = NULL;
}

bool
gw_slots_take (gw_slots_t *self, gw_slots_fn *fn, void *arg)
{
    if (self->taken < self->max) {
        self->taken++;
        return true;
    }
    waiter_t *w = wire_xcalloc (1, sizeof *w);
    w->fn = fn;
    w->arg = arg;
    zlistx_add_end (self->waiting, w);
    return false;
}

void
gw_slots_cancel (gw_slots_t *self, void *arg)
{
    for (waiter_t *w = zlistx_first (self->waiting); w; w = zlistx_next (self->waiting))
        if (w->arg == arg) {
            zlistx_delete (self->waiting, zlistx_cursor (self->waiting));
            return;
        }
}

void
gw_slots_release (gw_slots_t *self)
{
    self->taken--;
    waiter_t *w = zlistx_detach (self->waiting, NULL);
    if (!w)
        return;
    self->taken++;
    w->fn (w->arg);
    free (w);
}

bool
gw_slots_busy (const gw_slots_t *self)
{
    return self->taken >= self->max || zlistx_size (self->waiting) > 0;
}
