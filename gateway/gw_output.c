/*  gw_output.c - the output limits: every byte the kernel publishes counts,
    the running execution's against its output_bytes, the rest against the
    window between two client requests. Over a limit a status is trimmed,
    never dropped (clients wait for idle), the stream that crosses it is
    cut, anything else is dropped, and a stderr stream says so once.
*/
#include "gw_output.h"
#include "gw_exec.h"
#include "gw_log.h"
#include "gw_peek.h"
#include "gw_relay_msg.h"
#include "gw_util.h"
#include "wire.h"

#include <string.h>

/* Cuts a stream message's text so that the whole message (bytes now) takes
   at most room bytes (on a UTF-8 boundary): the part of the output that
   still fits goes out. false when not even one byte of text fits. */
static bool
stream_cut (zmsg_t *msg, int64_t room, int64_t bytes)
{
    zframe_t *content_frame = wire_frames_part (msg, 5);
    json_t *content = json_loadb ((const char *) zframe_data (content_frame), zframe_size (content_frame), 0, NULL);
    const char *text = json_string_value (json_object_get (content, "text"));
    bool fits = false;
    if (text) {
        int64_t len = (int64_t) strlen (text);
        int64_t allowed = room - (bytes - len); /* the rest of the message costs what it costs */
        if (allowed > 0) {
            size_t n = len < allowed ? (size_t) len : (size_t) allowed;
            while (n > 0 && ((unsigned char) text[n] & 0xC0) == 0x80)
                n--;
            json_object_set_new (content, "text", json_stringn (text, n));
            char *dumped = json_dumps (content, JSON_COMPACT);
            zframe_reset (content_frame, dumped, strlen (dumped));
            free (dumped);
            fits = n > 0;
        }
    }
    json_decref (content);
    return fits;
}

/* A status over the bound still goes (a client waits for its idle), as
   {"execution_state": S} with empty metadata and no buffers; false
   (dropped) when that is no status or its header and parent header alone
   are over STATUS_HEADERS_MAX: a kernel's padding, not a status. */
#define STATUS_HEADERS_MAX 4096
static bool
status_trim (zmsg_t *msg)
{
    char state[16];
    if (gw_peek_frame (msg, 5, "execution_state", state, sizeof state) < 0
        || (int64_t) zframe_size (wire_frames_part (msg, 2)) + (int64_t) zframe_size (wire_frames_part (msg, 3))
               > STATUS_HEADERS_MAX)
        return false;
    zframe_reset (wire_frames_part (msg, 4), "{}", 2);
    json_t *content = json_pack ("{s:s}", "execution_state", state);
    char *dumped = json_dumps (content, JSON_COMPACT);
    zframe_reset (wire_frames_part (msg, 5), dumped, strlen (dumped));
    free (dumped);
    json_decref (content);
    zframe_t *f;
    while ((f = wire_frames_part (msg, 6))) {
        zmsg_remove (msg, f);
        zframe_destroy (&f);
    }
    return true;
}

/* Output outside the running execution (a thread of an ended cell, a
   comm's answer to a client's message, anything with no or another
   parent): at most output_bytes from one client request on shell to the
   next, so a kernel alone cannot renew it. The first message over it is
   replaced by a stderr stream, with that message's parent, saying so. */
static bool
background_admit (gw_relay_t *self, zmsg_t *msg, bool status, int64_t bytes, int64_t limit)
{
    self->background_bytes += bytes;
    if (limit == GW_UNLIMITED || self->background_bytes <= limit)
        return true;
    if (status)
        return status_trim (msg);
    if (!self->background_truncated) {
        self->background_truncated = true;
        json_t *parent = gw_relay_msg_json (msg, 3, NULL);
        char text[300];
        snprintf (text, sizeof text,
                  "\n[kennel: output truncated: output outside a running execution reached its limit of %lld bytes; "
                  "more is dropped until the client's next request]\n",
                  (long long) limit);
        gw_relay_msg_publish (self, "stream", json_is_object (parent) ? parent : NULL,
                 json_pack ("{s:s, s:s}", "name", "stderr", "text", text));
        json_decref (parent);
        gw_log ("output_truncated", "{s:s, s:n, s:I}", "conversation", self->id, "msg_id", "limit",
                (json_int_t) limit);
    }
    return false;
}

void
gw_output_renew (gw_relay_t *self)
{
    self->background_bytes = 0;
    self->background_truncated = false;
}

/* What an execute_input may take beyond its request (a header of its own,
   the execution count) and still be the echo of the client's code. */
#define ECHO_ALLOWANCE 1024

/* Output accounting and truncation for every iopub message of the kernel:
   false = drop. Its bytes count against the running execution's
   output_bytes when it is that execution's, else against the window
   outside executions (background_admit). Over the limit a status is
   trimmed, never dropped (clients wait for idle), the stream that crosses
   it is cut, anything else is dropped. *marker: send the running
   execution's truncation marker after it. */
bool
gw_output_admit (gw_relay_t *self, zmsg_t *msg, const char *msg_type, const char *pid, bool *marker)
{
    gw_exec_t *e = gw_exec_head (self);
    bool mine = e && pid && streq (pid, e->msg_id);
    if (mine && e->timed_out && streq (msg_type, "error"))
        return false; /* the interrupt's KeyboardInterrupt: ExecutionTimeout replaces it */
    bool status = streq (msg_type, "status");
    int64_t bytes = gw_relay_msg_size (msg);
    int64_t limit = self->owner->policy (self->conv)->output_bytes;
    if (!mine)
        return background_admit (self, msg, status, bytes, limit);
    if (streq (msg_type, "execute_input") && bytes <= e->request_bytes + ECHO_ALLOWANCE)
        return true; /* the client's own code echoed: its bytes, not the kernel's output */
    int64_t room = limit - e->output_bytes;
    e->output_bytes += bytes;
    if (limit == GW_UNLIMITED || e->output_bytes <= limit)
        return true;
    bool admit = status ? status_trim (msg)
                        : !e->truncated && room > 0 && streq (msg_type, "stream") && stream_cut (msg, room, bytes);
    if (!e->truncated) {
        e->truncated = true;
        *marker = true;
        gw_log ("output_truncated", "{s:s, s:s, s:I}", "conversation", self->id, "msg_id", e->msg_id, "limit",
                (json_int_t) limit);
    }
    return admit;
}

void
gw_output_marker (gw_relay_t *self)
{
    gw_exec_t *e = gw_exec_head (self);
    char text[200];
    snprintf (text, sizeof text, "\n[kennel: output truncated: this execution reached its limit of %lld bytes]\n",
              (long long) self->owner->policy (self->conv)->output_bytes);
    gw_relay_msg_publish (self, "stream", e->header, json_pack ("{s:s, s:s}", "name", "stderr", "text", text));
}
