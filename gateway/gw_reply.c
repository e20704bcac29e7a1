/*  gw_reply.c - an execute_reply on its way to the client: held until the
    request's idle arrived on iopub (only then are all its outputs counted),
    metadata.kennel spliced in (the execution's cost), and after a timeout
    that the interrupt ended, its content made ExecutionTimeout.
*/
#include "gw_launch.h"
#include "gw_log.h"
#include "gw_meta.h"
#include "gw_peek.h"
#include "gw_proc.h"
#include "gw_quota.h"
#include "gw_relay.h"
#include "gw_relay_private.h"
#include "gw_server_access.h"
#include "gw_timer.h"
#include "gw_util.h"
#include "wire.h"

#include <string.h>

/* The reply waits at most this long for its idle (a kernel that does not
   publish one must not hold its client forever). */
#define IDLE_WAIT_MS 2000

json_t *
exec_cost (gw_relay_t *self, gw_exec_t *e, const char *state)
{
    double cpu = 0, wall = e->started ? gw_clock_mono () - e->started_at : 0;
    int64_t hwm = 0;
    gw_launch_t *launch = self->owner->launch (self->conv);
    if (launch && gw_launch_state (launch) == GW_LAUNCH_CONFINED)
        gw_proc_watch_end (&e->usage, &cpu, &hwm);
    gw_proc_watch_close (&e->usage);
    json_t *cost = json_pack ("{s:f, s:f, s:I, s:I, s:b, s:i, s:s}", "wall_seconds", wall, "cpu_seconds",
                              cpu < 0 ? 0 : cpu, "max_rss_bytes", (json_int_t) hwm, "output_bytes",
                              (json_int_t) e->output_bytes, "output_truncated", e->truncated, "tool_calls",
                              e->tool_calls, "state", state);
    /* how the kernel ended, when that ended this execution */
    if (launch && gw_launch_state (launch) == GW_LAUNCH_EXITED)
        json_object_set_new (cost, "kernel_ended", json_string (gw_launch_cause (launch)));
    int64_t ws_bytes, ws_files;
    if (gw_quota_usage (self->owner->workspace (self->conv), &ws_bytes, &ws_files)) {
        json_object_set_new (cost, "workspace_bytes", json_integer ((json_int_t) ws_bytes));
        json_object_set_new (cost, "workspace_files", json_integer ((json_int_t) ws_files));
    }
    return cost;
}

/* Rewrites an execute_reply: metadata.kennel always; after a timeout that the
   interrupt ended, the content becomes ExecutionTimeout (variables kept). */
void
reply_rewrite (gw_relay_t *self, zmsg_t *msg, gw_exec_t *e)
{
    int d = delimiter_index (msg);
    zframe_t *meta_frame = frame_at (msg, d + 4);
    zframe_t *content_frame = zmsg_next (msg);
    gw_meta_add_kennel (meta_frame, exec_cost (self, e, self->state_lost ? "lost" : "kept"));
    self->state_lost = false;
    if (e->timed_out) {
        char *text;
        json_t *content
            = json_loadb ((const char *) zframe_data (content_frame), zframe_size (content_frame), 0, NULL);
        char evalue[200];
        snprintf (evalue, sizeof evalue, "execution exceeded %g s; it was interrupted and the variables are kept",
                  self->owner->policy (self->conv)->execution_timeout);
        json_t *fresh = json_pack ("{s:s, s:O?, s:s, s:s, s:[s], s:{}, s:[]}", "status", "error", "execution_count",
                                   json_object_get (content, "execution_count"), "ename", "ExecutionTimeout",
                                   "evalue", evalue, "traceback", evalue, "user_expressions", "payload");
        text = json_dumps (fresh, JSON_COMPACT);
        zframe_reset (content_frame, text, strlen (text));
        free (text);
        json_decref (fresh);
        json_decref (content);
        timeout_report (self, e);
    }
}

/* e's reply is about to go out, its idle with it or before it: which
   executions wait behind e now, with what the clients sent before this
   moment read first (the fronts read their shell sockets). Should e have
   failed with stop_on_error, those are the ones aborted (exec_finish), as
   ipykernel 6.17 flushes its shell stream and aborts right after the
   reply. A request a client sends once it has the reply and the idle
   (jupyter_client's execute_interactive and nbclient send the next cell
   then, JupyterLab once its future is done) comes later and runs. */
static void
end_seen (gw_relay_t *self, gw_exec_t *e)
{
    if (e->end_seen || !e->stop_on_error || e->silent)
        return;
    gw_peers_event (self->peers, GW_EVENT_SHELL_FLUSH, NULL);
    e->waiting_at_end = zlistx_size (self->execs) - 1; /* e is the head */
    e->end_seen = true;
}

/* The request's reply and idle are both in: send the reply with its cost. */
static void
reply_send (gw_relay_t *self, gw_exec_t *e)
{
    end_seen (self, e);
    zmsg_t *msg = e->reply;
    e->reply = NULL;
    reply_rewrite (self, msg, e);
    client_deliver (self, WIRE_SHELL, &msg);
}

static void
reply_complete (gw_relay_t *self, void *handle, gw_exec_t *e)
{
    reply_send (self, e);
    exec_finish (self, handle, e, e->timed_out ? "timeout" : "ok");
}

static int
on_idle_wait_over (zloop_t *loop, int timer_id, void *arg)
{
    gw_relay_t *self = arg;
    for (gw_exec_t *e = zlistx_first (self->execs); e; e = zlistx_next (self->execs))
        if (e->idle_timer_id == timer_id) {
            e->idle_timer_id = 0;
            if (e->reply) {
                gw_log ("no_idle", "{s:s, s:s}", "conversation", self->id, "msg_id", e->msg_id);
                reply_complete (self, zlistx_cursor (self->execs), e);
            }
            break;
        }
    return 0;
}

/* An idle status on iopub for a tracked execution: its reply goes out now
   if it was held for it. Returns the execution to finish once the idle
   itself went out (its log line and the next execution's start are not on
   the client's path), or NULL. */
void *
iopub_idle_seen (gw_relay_t *self, zmsg_t *msg, const char *parent_id)
{
    char state[8];
    if (gw_peek_frame (msg, 5, "execution_state", state, sizeof state) != 4 || !streq (state, "idle"))
        return NULL;
    void *handle = parent_id ? exec_find (self, parent_id) : NULL;
    if (!handle)
        return NULL;
    gw_exec_t *e = zlistx_handle_item (handle);
    e->idle_seen = true;
    if (e->timed_out)
        timeout_report (self, e);
    if (!e->reply)
        return NULL;
    reply_send (self, e);
    return handle;
}

void
reply_hold (gw_relay_t *self, void *handle, zmsg_t *msg)
{
    gw_exec_t *e = zlistx_handle_item (handle);
    zmsg_destroy (&e->reply);
    e->reply = msg;
    char status[8];
    /* an error (an ExecutionTimeout's interrupt included) aborts what waits behind it */
    e->failed = e->timed_out
                || (gw_peek_frame (msg, 5, "status", status, sizeof status) == 5 && streq (status, "error"));
    if (e->idle_seen)
        reply_complete (self, handle, e);
    else if (!e->idle_timer_id)
        e->idle_timer_id = gw_timer_start (gw_server_loop (self->server), IDLE_WAIT_MS, 1, on_idle_wait_over, self);
}
