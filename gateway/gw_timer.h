/*  gw_timer.h - zloop timers that never fire once ended (gw_timer.c).
*/
#ifndef GW_TIMER_H_INCLUDED
#define GW_TIMER_H_INCLUDED

#include <czmq.h>
#include <stddef.h>

/* zloop runs a timer that an earlier handler of the same pass ended; a
   timer started here never does (gw_timer.c). One registry per loop, owned
   by the loop's owner; handlers have zloop's signature. */
typedef struct gw_timers gw_timers_t;
gw_timers_t *gw_timers_new (zloop_t *loop);
/* After the loop has stopped, before zloop_destroy. */
void gw_timers_destroy (gw_timers_t **self_p);
size_t gw_timers_size (const gw_timers_t *self); /* timers still to fire */
/* As zloop_timer; -1 (EINVAL) when loop has no registry. */
int gw_timer_start (zloop_t *loop, size_t delay_ms, size_t times, zloop_timer_fn *handler, void *arg);
/* Any id: one that fired its last time, was ended, or is 0 is ignored. */
void gw_timer_end (zloop_t *loop, int timer_id);

#endif
