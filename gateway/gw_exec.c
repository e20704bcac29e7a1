/*  gw_exec.c - a conversation's executions: the queue (its head is the one
    running: the kernel runs one at a time, in order) and its bound, the
    timeout ladder (limit -> SIGINT -> grace -> kill), an execution's end (its execute_reply held until its
    idle arrived on iopub: only then are all its outputs counted; then it
    goes out, rewritten by gw_reply.c), and the answers the gateway gives
    itself for executions the kernel will never finish (kernel died,
    conversation closed, queue full).
*/
#include "gw_exec.h"
#include "gw_calls.h"
#include "gw_config.h"
#include "gw_error.h"
#include "gw_launch.h"
#include "gw_log.h"
#include "gw_metrics.h"
#include "gw_peek.h"
#include "gw_proc.h"
#include "gw_relay_msg.h"
#include "gw_reply.h"
#include "gw_server_access.h"
#include "gw_timer.h"
#include "gw_util.h"
#include "wire.h"

#include <signal.h>
#include <string.h>

static int on_exec_timeout (zloop_t *loop, int timer_id, void *arg);

static void
exec_destroy (gw_exec_t **self_p)
{
    gw_exec_t *self = *self_p;
    if (!self)
        return;
    gw_proc_watch_close (&self->usage);
    free (self->msg_id);
    json_decref (self->header);
    zmsg_destroy (&self->ids);
    zmsg_destroy (&self->request);
    zmsg_destroy (&self->reply);
    free (self);
    *self_p = NULL;
}

void
gw_exec_destructor (void **item)
{
    exec_destroy ((gw_exec_t **) item);
}

gw_exec_t *
gw_exec_head (gw_relay_t *self)
{
    return zlistx_first (self->execs);
}

/* The head starts running: clock, cpu, timeout. Only while a kernel is attached. */
void
gw_exec_start_head (gw_relay_t *self)
{
    gw_exec_t *e = gw_exec_head (self);
    if (!e || e->started || !self->kernel_ready)
        return;
    e->started = true;
    e->started_at = gw_clock_mono ();
    gw_launch_t *launch = self->owner->launch (self->conv);
    gw_proc_watch_start (&e->usage, launch ? gw_launch_kernel_pid (launch) : 0);
    double timeout = self->owner->policy (self->conv)->execution_timeout;
    if (timeout != GW_UNLIMITED)
        e->timer_id = gw_timer_start (gw_server_loop (self->server), gw_limit_ms (timeout), 1, on_exec_timeout, self);
    gw_log ("execute_start", "{s:s, s:s}", "conversation", self->id, "msg_id", e->msg_id);
}

void
gw_exec_stop_timers (gw_relay_t *self, gw_exec_t *e)
{
    if (e->timer_id)
        gw_timer_end (gw_server_loop (self->server), e->timer_id);
    if (e->grace_timer_id)
        gw_timer_end (gw_server_loop (self->server), e->grace_timer_id);
    if (e->idle_timer_id)
        gw_timer_end (gw_server_loop (self->server), e->idle_timer_id);
    e->timer_id = e->grace_timer_id = e->idle_timer_id = 0;
}

/* The head goes to the kernel once it is the head: executions wait in the
   gateway, never in the kernel's queue, so what waits is the gateway's to
   answer (an abort after an error, below; the kernel's death). */
static void
exec_send_head (gw_relay_t *self)
{
    gw_exec_t *e = gw_exec_head (self);
    if (e && e->request)
        gw_relay_msg_to_kernel (self, WIRE_SHELL, &e->request);
}

/* The Jupyter rule of stop_on_error (ipykernel 6.17: _abort_queues): after
   an execution that failed with stop_on_error (and not silent), every
   execute_request waiting when its reply went out (gw_reply.c's end_seen,
   n of them) is answered "aborted" without running; one that arrives later runs.
   Requests of other types are not held here: they went to the kernel and
   are answered as usual. */
static void
execs_abort_queued (gw_relay_t *self, size_t n)
{
    gw_exec_t *e;
    while (n-- > 0 && (e = gw_exec_head (self))) {
        json_t *cost = gw_reply_cost (self, e, "kept");
        gw_relay_msg_status (self, e->header, "busy");
        wire_msg_t *reply = gw_relay_msg_own (self, "execute_reply", e->header, e->ids);
        wire_msg_set_content (reply, json_pack ("{s:s}", "status", "aborted"));
        json_object_set_new (reply->metadata, "status", json_string ("aborted"));
        json_object_set_new (reply->metadata, "kennel", cost);
        gw_relay_msg_send_own (self, reply, WIRE_SHELL);
        wire_msg_destroy (&reply);
        gw_relay_msg_status (self, e->header, "idle");
        gw_log ("execute_end", "{s:s, s:s, s:s, s:s}", "conversation", self->id, "msg_id", e->msg_id, "status",
                "aborted", "reason", "an execution before it failed (stop_on_error)");
        gw_metrics_execution ("aborted", -1);
        self->executions++;
        zlistx_delete (self->execs, zlistx_cursor (self->execs));
    }
}

/* Ends the head (or any) execution: log, drop, start the next one. */
void
gw_exec_finish (gw_relay_t *self, void *handle, gw_exec_t *e, const char *status)
{
    gw_exec_stop_timers (self, e);
    gw_log ("execute_end", "{s:s, s:s, s:s, s:f, s:I, s:b}", "conversation", self->id, "msg_id", e->msg_id, "status",
            status, "duration", e->started ? gw_clock_mono () - e->started_at : 0.0, "output_bytes",
            (json_int_t) e->output_bytes, "truncated", e->truncated);
    gw_metrics_execution (status, e->started ? gw_clock_mono () - e->started_at : -1);
    self->executions++;
    gw_calls_end (self, e->msg_id, "abandoned");
    size_t aborted = e->failed && e->stop_on_error && !e->silent ? e->waiting_at_end : 0;
    zlistx_delete (self->execs, handle);
    execs_abort_queued (self, aborted);
    exec_send_head (self);
    gw_exec_start_head (self);
}

void *
gw_exec_find (gw_relay_t *self, const char *msg_id)
{
    for (gw_exec_t *e = zlistx_first (self->execs); e; e = zlistx_next (self->execs))
        if (streq (e->msg_id, msg_id))
            return zlistx_cursor (self->execs);
    return NULL;
}

/* The reply waits at most this long for its idle (a kernel that does not
   publish one must not hold its client forever). */
#define IDLE_WAIT_MS 2000

/* e's reply is about to go out, its idle with it or before it: which
   executions wait behind e now, with what the clients sent before this
   moment read first (the fronts read their shell sockets). Should e have
   failed with stop_on_error, those are the ones aborted (gw_exec_finish), as
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
    gw_reply_rewrite (self, msg, e);
    gw_relay_msg_deliver (self, WIRE_SHELL, &msg);
}

static void
reply_complete (gw_relay_t *self, void *handle, gw_exec_t *e)
{
    reply_send (self, e);
    gw_exec_finish (self, handle, e, e->timed_out ? "timeout" : "ok");
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
gw_exec_idle_seen (gw_relay_t *self, zmsg_t *msg, const char *parent_id)
{
    char state[8];
    if (gw_peek_frame (msg, 5, "execution_state", state, sizeof state) != 4 || !streq (state, "idle"))
        return NULL;
    void *handle = parent_id ? gw_exec_find (self, parent_id) : NULL;
    if (!handle)
        return NULL;
    gw_exec_t *e = zlistx_handle_item (handle);
    e->idle_seen = true;
    if (e->timed_out)
        gw_reply_timeout_report (self, e);
    if (!e->reply)
        return NULL;
    reply_send (self, e);
    return handle;
}

void
gw_exec_reply_hold (gw_relay_t *self, void *handle, zmsg_t *msg)
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

/* The gateway answers an execute_request itself (kernel died, timeout kill,
   queue full): error output, error reply, idle. */
static void
exec_fail (gw_relay_t *self, gw_exec_t *e, const char *ename, const char *evalue, const char *state, bool busy)
{
    gw_answer_refuse (&self->answer_to, WIRE_SHELL, e->header, e->ids, ename, evalue, gw_reply_cost (self, e, state),
                      busy);
}

static int
on_grace_over (zloop_t *loop, int timer_id, void *arg)
{
    gw_relay_t *self = arg;
    gw_exec_t *e = gw_exec_head (self); /* only the head runs, and its end ends its timers */
    e->grace_timer_id = 0;
    char cause[256];
    snprintf (cause, sizeof cause,
              "execution exceeded %g s and did not stop on interrupt; the kernel was killed and restarts, "
              "variables are lost",
              self->owner->policy (self->conv)->execution_timeout);
    gw_log ("kill", "{s:s, s:s, s:s}", "conversation", self->id, "msg_id", e->msg_id, "reason",
            "timeout");
    self->owner->kill_kernel (self->conv, gw_error_name (GW_E_EXECUTION_TIMEOUT), cause);
    return 0;
}

static int
on_exec_timeout (zloop_t *loop, int timer_id, void *arg)
{
    gw_relay_t *self = arg;
    gw_exec_t *e = gw_exec_head (self); /* only the head runs, and its end ends its timers */
    e->timer_id = 0;
    e->timed_out = true;
    gw_metrics_timeout ();
    gw_log ("timeout", "{s:s, s:s, s:f}", "conversation", self->id, "msg_id", e->msg_id, "limit",
            self->owner->policy (self->conv)->execution_timeout);
    gw_launch_t *launch = self->owner->launch (self->conv);
    if (launch)
        gw_launch_signal (launch, SIGINT);
    double grace = self->owner->config (self->conv)->interrupt_grace;
    e->grace_timer_id = gw_timer_start (loop, (size_t) (grace * 1000) + 1, 1, on_grace_over, self);
    return 0;
}

/* A client's execute_request as the relay tracks it (not yet queued). */
gw_exec_t *
gw_exec_new (zmsg_t *msg, json_t *header)
{
    zmsg_t *ids = zmsg_new ();
    zframe_t *delimiter = wire_frames_delimiter (msg, NULL);
    for (zframe_t *f = zmsg_first (msg); f && f != delimiter; f = zmsg_next (msg))
        zmsg_append (ids, &(zframe_t *){zframe_dup (f)});
    gw_exec_t *e = wire_xcalloc (1, sizeof *e);
    e->usage.stat_fd = e->usage.status_fd = -1;
    e->msg_id = wire_xstrdup (json_string_value (json_object_get (header, "msg_id")));
    e->header = json_incref (header);
    e->ids = ids;
    e->request_bytes = gw_relay_msg_size (msg);
    /* the protocol's default is true; false means no client answers stdin */
    json_t *content = gw_relay_msg_json (msg, 5, NULL);
    json_t *allow = json_object_get (content, "allow_stdin");
    e->allow_stdin = !json_is_false (allow);
    e->silent = json_is_true (json_object_get (content, "silent"));
    e->stop_on_error = !json_is_false (json_object_get (content, "stop_on_error"));
    json_decref (content);
    /* a client that understands tool_cancel says so (docs/PROTOCOL.md §8) */
    json_t *metadata = gw_relay_msg_json (msg, 4, NULL);
    e->tool_cancel = json_is_true (json_object_get (json_object_get (metadata, "kennel"), "tool_cancel"));
    json_decref (metadata);
    return e;
}

void
gw_exec_track (gw_relay_t *self, zmsg_t **msg_p, json_t *header)
{
    int limit = self->owner->config (self->conv)->queue_limit;
    gw_exec_t *e = gw_exec_new (*msg_p, header);
    if ((int) zlistx_size (self->execs) > limit) {
        char evalue[160];
        snprintf (evalue, sizeof evalue, "too many queued requests: %d are waiting, the limit is %d",
                  (int) zlistx_size (self->execs) - 1, limit);
        char source[200];
        snprintf (source, sizeof source, "conversation/%s/queue_full", self->id);
        gw_log_limited (source, "queue_full", "{s:s, s:s}", "conversation", self->id, "msg_id", e->msg_id);
        exec_fail (self, e, gw_error_name (GW_E_QUEUE_FULL), evalue, "kept", true);
        exec_destroy (&e);
        zmsg_destroy (msg_p);
        return;
    }
    zlistx_add_end (self->execs, e);
    if (gw_exec_head (self) == e)
        gw_relay_msg_to_kernel (self, WIRE_SHELL, msg_p);
    else {
        e->request = *msg_p; /* until the ones before it finished: exec_send_head */
        *msg_p = NULL;
    }
    gw_exec_start_head (self);
}

/* The running request and those queued behind it each get an answer, in
   order, none is silently lost: the running one's evalue is cause, a queued
   one's "not run: <queued> (cause)"; state goes to metadata.kennel. */
void
gw_exec_answer_all (gw_relay_t *self, const char *ename, const char *cause, const char *queued, const char *state)
{
    gw_exec_t *e;
    bool first = true;
    while ((e = zlistx_first (self->execs))) {
        gw_exec_stop_timers (self, e);
        char evalue[512];
        if (first)
            snprintf (evalue, sizeof evalue, "%s", cause);
        else
            gw_answer_not_run (evalue, sizeof evalue, queued, cause);
        if (e->reply) {
            /* it had finished; only its idle was missing */
            zmsg_t *msg = e->reply;
            e->reply = NULL;
            gw_reply_rewrite (self, msg, e);
            gw_relay_msg_deliver (self, WIRE_SHELL, &msg);
            gw_relay_msg_status (self, e->header, "idle");
        }
        else
            exec_fail (self, e, ename, evalue, state, !first || !e->started);
        gw_log ("execute_end", "{s:s, s:s, s:s, s:s}", "conversation", self->id, "msg_id",
                e->msg_id, "status", "error", "reason", evalue);
        gw_metrics_execution ("cut", e->started ? gw_clock_mono () - e->started_at : -1);
        self->executions++;
        zlistx_delete (self->execs, zlistx_cursor (self->execs));
        first = false;
    }
}
