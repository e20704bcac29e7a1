/*  gw_drain.c - SIGTERM's graceful stop (gateway/README.md, "Signals").

    From the first SIGTERM (or SIGINT) no conversation is created
    (gw_core_open refuses with GatewayDraining, the HTTP front answers 503
    with Retry-After), while the open ones go on: their executions, running
    or queued, may end; the warm pool's kernels stop at once (nothing will
    claim them). Once none is left, or drain_grace has passed, every
    conversation's clients are told (iopub status "dead") and the loop
    stops: the kernels are then stopped and the websockets closed with 1001
    as at any stop, and the daemon exits 0. A second signal stops at once.
*/
#include "gw_conv.h"
#include "gw_core.h"
#include "gw_log.h"
#include "gw_ops.h"
#include "gw_server_access.h"
#include "gw_timer.h"
#include "gw_util.h"

/* How often the drain looks for executions still running: a check is a
   visit of the table, cheap beside an execution's own length. */
#define CHECK_MS 50
/* Between the last status and the stop: the fronts' queues are written
   (a websocket's close would drop what is still queued). */
#define FLUSH_MS 100

static void
busy_add (gw_conv_t *conv, void *busy)
{
    *(int *) busy += gw_conv_pending (conv) > 0;
}

static int
busy_count (gw_server_t *server)
{
    int busy = 0;
    gw_core_visit (gw_server_core (server), busy_add, &busy);
    return busy;
}

static void
announce_stopping (gw_conv_t *conv, void *arg)
{
    gw_conv_announce_stopping (conv);
}

static void
announce_draining (gw_conv_t *conv, void *grace)
{
    gw_conv_announce_draining (conv, *(double *) grace);
}

static int
on_flushed (zloop_t *loop, int timer_id, void *arg)
{
    gw_server_stop (arg);
    return 0;
}

static void
drain_finish (gw_server_t *server, const char *why, int busy)
{
    gw_core_visit (gw_server_core (server), announce_stopping, NULL);
    gw_log ("drained", "{s:s, s:i, s:f}", "reason", why, "busy_cut", busy, "seconds",
            gw_clock_mono () - gw_server_drain_started (server));
    gw_timer_start (gw_server_loop (server), FLUSH_MS, 1, on_flushed, server);
}

static int
on_check (zloop_t *loop, int timer_id, void *arg)
{
    gw_server_t *server = arg;
    if (gw_server_stopping (server))
        return 0;
    int busy = busy_count (server);
    double elapsed = gw_clock_mono () - gw_server_drain_started (server);
    if (busy && elapsed < gw_server_config (server)->drain_grace)
        return 0;
    gw_timer_end (loop, timer_id);
    drain_finish (server, busy ? "drain_grace passed" : "no execution left", busy);
    return 0;
}

void
gw_drain_start (gw_server_t *server, gw_pool_renew_fn *renew)
{
    if (gw_drain_active (server) || !gw_server_ready (server)) {
        gw_log ("stop_now", "{s:s}", "reason", gw_drain_active (server) ? "a second signal during the drain"
                                                                          : "a signal before the gateway was ready");
        gw_server_stop (server);
        return;
    }
    gw_server_set_drain_started (server, gw_clock_mono ());
    renew (server, 0); /* no conversation will claim its kernels */
    double grace = gw_server_config (server)->drain_grace;
    gw_log ("draining", "{s:i, s:i, s:f}", "conversations", gw_core_count (gw_server_core (server)), "busy",
            busy_count (server), "drain_grace", grace);
    gw_core_visit (gw_server_core (server), announce_draining, &grace);
    gw_timer_start (gw_server_loop (server), CHECK_MS, 0, on_check, server);
}
