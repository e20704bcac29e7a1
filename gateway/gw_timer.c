/*  gw_timer.c - the gateway's timers: a timer that was ended never fires.

    czmq's zloop runs every due timer in one pass per turn, and
    zloop_timer_end only notes the id, to be removed after the pass. So a
    timer ended by an earlier handler in the same pass still fires when it
    is due, and if that handler also freed the timer's arg (a conversation
    closed by the idle cull, with its relay's drop or execution timers due),
    the later handler runs on freed memory. Every gateway timer therefore
    goes through a trampoline that calls the real handler only while the id
    is in this registry: gw_timer_end removes it at once, a timer's last
    firing removes it before its handler runs. The cost is one hash lookup
    per firing, start and end.
*/
#include "gw_timer.h"
#include "wire.h"

#include <errno.h>
#include <stdint.h>

typedef struct {
    zloop_timer_fn *handler;
    void *arg;
    size_t times; /* firings left, 0 for forever */
} timer_entry_t;

struct gw_timers {
    zloop_t *loop;
    zhashx_t *entries; /* zloop timer id -> timer_entry_t* */
};

/* The one registry of this process, found from its loop. */
static gw_timers_t *s_timers;

static gw_timers_t *
s_of (zloop_t *loop)
{
    return s_timers && s_timers->loop == loop ? s_timers : NULL;
}

static const void *
s_key (int timer_id)
{
    return (const void *) (uintptr_t) timer_id; /* zloop's ids start at 1: never NULL */
}

static size_t
s_id_hash (const void *key)
{
    return (size_t) (uintptr_t) key; /* ids are consecutive: they spread by themselves */
}

static int
s_id_cmp (const void *a, const void *b)
{
    return a != b;
}

static void
s_entry_free (void **item)
{
    free (*item);
    *item = NULL;
}

gw_timers_t *
gw_timers_new (zloop_t *loop)
{
    gw_timers_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->entries = zhashx_new ();
    zhashx_set_key_hasher (self->entries, s_id_hash);
    zhashx_set_key_comparator (self->entries, s_id_cmp);
    zhashx_set_key_duplicator (self->entries, NULL);
    zhashx_set_key_destructor (self->entries, NULL);
    zhashx_set_destructor (self->entries, s_entry_free);
    s_timers = self;
    return self;
}

/* After the loop has stopped and before zloop_destroy: the loop's timers
   are left to it (ending them here would leave zombies it asserts on). */
void
gw_timers_destroy (gw_timers_t **self_p)
{
    gw_timers_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy (&self->entries);
    if (s_timers == self)
        s_timers = NULL;
    free (self);
    *self_p = NULL;
}

size_t
gw_timers_size (const gw_timers_t *self)
{
    return zhashx_size (self->entries);
}

static int
s_on_fire (zloop_t *loop, int timer_id, void *arg)
{
    gw_timers_t *self = arg;
    timer_entry_t *e = zhashx_lookup (self->entries, s_key (timer_id));
    if (!e)
        return 0; /* ended earlier in this pass */
    zloop_timer_fn *handler = e->handler;
    void *handler_arg = e->arg;
    if (e->times && --e->times == 0)
        zhashx_delete (self->entries, s_key (timer_id));
    return handler (loop, timer_id, handler_arg);
}

int
gw_timer_start (zloop_t *loop, size_t delay_ms, size_t times, zloop_timer_fn *handler, void *arg)
{
    gw_timers_t *self = s_of (loop);
    if (!self) {
        errno = EINVAL;
        return -1;
    }
    int timer_id = zloop_timer (loop, delay_ms, times, s_on_fire, self);
    if (timer_id <= 0)
        return -1;
    timer_entry_t *e = wire_xmalloc (sizeof *e);
    *e = (timer_entry_t){.handler = handler, .arg = arg, .times = times};
    zhashx_insert (self->entries, s_key (timer_id), e);
    return timer_id;
}

void
gw_timer_end (zloop_t *loop, int timer_id)
{
    gw_timers_t *self = s_of (loop);
    if (!self || timer_id <= 0 || !zhashx_lookup (self->entries, s_key (timer_id)))
        return; /* fired its last time, ended already, or never started */
    zhashx_delete (self->entries, s_key (timer_id));
    zloop_timer_end (loop, timer_id);
}
