/*  gw_reply.c - an execute_reply on its way to the client (once gw_exec.c
    has its idle too): metadata.kennel spliced in (the execution's cost),
    and after a timeout that the interrupt ended, its content made
    ExecutionTimeout with the one error output that says so.
*/
#include "gw_reply.h"
#include "gw_error.h"
#include "gw_launch.h"
#include "gw_meta.h"
#include "gw_proc.h"
#include "gw_quota.h"
#include "gw_relay_msg.h"
#include "gw_util.h"
#include "wire.h"

#include <string.h>

json_t *
gw_reply_cost (gw_relay_t *self, gw_exec_t *e, const char *state)
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
gw_reply_rewrite (gw_relay_t *self, zmsg_t *msg, gw_exec_t *e)
{
    zframe_t *meta_frame = wire_frames_part (msg, 4);
    zframe_t *content_frame = zmsg_next (msg);
    gw_meta_add_kennel (meta_frame, gw_reply_cost (self, e, self->state_lost ? "lost" : "kept"));
    self->state_lost = false;
    if (e->timed_out) {
        char *text;
        json_t *content
            = json_loadb ((const char *) zframe_data (content_frame), zframe_size (content_frame), 0, NULL);
        char evalue[200];
        snprintf (evalue, sizeof evalue, "execution exceeded %g s; it was interrupted and the variables are kept",
                  self->owner->policy (self->conv)->execution_timeout);
        json_t *fresh = json_pack ("{s:s, s:O?, s:s, s:s, s:[s], s:{}, s:[]}", "status", "error", "execution_count",
                                   json_object_get (content, "execution_count"), "ename",
                                   gw_error_name (GW_E_EXECUTION_TIMEOUT), "evalue", evalue, "traceback", evalue,
                                   "user_expressions", "payload");
        text = json_dumps (fresh, JSON_COMPACT);
        zframe_reset (content_frame, text, strlen (text));
        free (text);
        json_decref (fresh);
        json_decref (content);
        gw_reply_timeout_report (self, e);
    }
}

/* The one ExecutionTimeout error output of an execution the interrupt
   ended, before its idle (whichever of reply and idle comes first). */
void
gw_reply_timeout_report (gw_relay_t *self, gw_exec_t *e)
{
    if (e->timeout_reported)
        return;
    e->timeout_reported = true;
    char evalue[200];
    snprintf (evalue, sizeof evalue, "execution exceeded %g s; it was interrupted and the variables are kept",
              self->owner->policy (self->conv)->execution_timeout);
    gw_relay_msg_error (self, e->header, gw_error_name (GW_E_EXECUTION_TIMEOUT), evalue);
}
