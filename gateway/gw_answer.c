/*  gw_answer.c - the gateway's own messages on behalf of a conversation
    (gw_answer.h): Jupyter's shapes for a status, an error output and an
    error reply, so that every answer the gateway writes itself reads the
    same whoever sends it (the relay, a lingering ZeroMQ socket).
*/
#include "gw_answer.h"

#include <stdio.h>
#include <string.h>

#define REQUEST_SUFFIX "_request"

wire_msg_t *
gw_answer_msg (const char *session, const char *msg_type, const json_t *parent, zmsg_t *ids)
{
    wire_msg_t *m = wire_msg_new (session, msg_type, NULL);
    if (parent) {
        json_decref (m->parent_header);
        m->parent_header = json_deep_copy (parent);
    }
    if (ids) {
        zmsg_destroy (&m->identities);
        m->identities = zmsg_dup (ids);
    }
    return m;
}

void
gw_answer_publish (const gw_answer_to_t *to, const char *msg_type, const json_t *parent, json_t *content)
{
    wire_msg_t *m = gw_answer_msg (to->session, msg_type, parent, NULL);
    char topic[200];
    snprintf (topic, sizeof topic, "kernel.%s.%s", to->conv_id, msg_type);
    zmsg_addstr (m->identities, topic);
    wire_msg_set_content (m, content);
    to->send (to->arg, WIRE_IOPUB, m);
}

void
gw_answer_status (const gw_answer_to_t *to, const json_t *parent, const char *state)
{
    gw_answer_publish (to, "status", parent, json_pack ("{s:s}", "execution_state", state));
}

void
gw_answer_error (const gw_answer_to_t *to, const json_t *parent, const char *ename, const char *evalue)
{
    char *line = wire_xasprintf ("%s: %s", ename, evalue);
    gw_answer_publish (to, "error", parent,
                       json_pack ("{s:s, s:s, s:[s]}", "ename", ename, "evalue", evalue, "traceback", line));
    free (line);
}

json_t *
gw_answer_cost_none (const char *state)
{
    return json_pack ("{s:f, s:f, s:i, s:i, s:b, s:i, s:s}", "wall_seconds", 0.0, "cpu_seconds", 0.0,
                      "max_rss_bytes", 0, "output_bytes", 0, "output_truncated", 0, "tool_calls", 0, "state",
                      state);
}

void
gw_answer_not_run (char *out, size_t size, const char *why, const char *cause)
{
    snprintf (out, size, "not run: %s (%s)", why, cause);
}

/* <type>_reply of a <type>_request, or NULL: the message expects none. */
static char *
reply_type (const char *msg_type)
{
    size_t n = strlen (msg_type), suffix = strlen (REQUEST_SUFFIX);
    if (n <= suffix || strcmp (msg_type + n - suffix, REQUEST_SUFFIX) != 0)
        return NULL;
    return wire_xasprintf ("%.*s_reply", (int) (n - suffix), msg_type);
}

void
gw_answer_refuse (const gw_answer_to_t *to, wire_channel_t channel, const json_t *header, zmsg_t *ids,
                  const char *ename, const char *evalue, json_t *kennel, bool busy)
{
    const char *msg_type = json_string_value (json_object_get (header, "msg_type"));
    char *type = msg_type ? reply_type (msg_type) : NULL;
    if (!type) {
        json_decref (kennel);
        return;
    }
    bool execute = streq (msg_type, "execute_request");
    if (busy)
        gw_answer_status (to, header, "busy");
    if (execute)
        gw_answer_error (to, header, ename, evalue);
    wire_msg_t *reply = gw_answer_msg (to->session, type, header, ids);
    json_t *content = json_pack ("{s:s, s:s, s:s, s:[s]}", "status", "error", "ename", ename, "evalue", evalue,
                                 "traceback", evalue);
    if (execute) {
        json_object_set_new (content, "execution_count", json_integer (0));
        json_object_set_new (content, "user_expressions", json_object ());
        json_object_set_new (content, "payload", json_array ());
        json_object_set_new (reply->metadata, "kennel", kennel ? kennel : gw_answer_cost_none ("lost"));
    }
    else
        json_decref (kennel);
    wire_msg_set_content (reply, content);
    to->send (to->arg, channel, reply);
    gw_answer_status (to, header, "idle");
    free (type);
}
