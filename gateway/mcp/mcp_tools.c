/*  mcp_tools.c - the tools `kennel mcp` offers: declarations a model can act
    on, their arguments checked, and what an execution becomes as an MCP
    CallToolResult.

    The schemas use only the subset the gateway checks tool arguments with
    (gateway/gw_schema.c), so one checker serves both: a bad argument is a
    tool result with isError (the model can correct itself, as the
    2025-11-25 revision asks), never a protocol error.
*/
#include "mcp.h"

#include <stdarg.h>
#include <string.h>

static const char *declarations_json =
    "["
    "{\"name\": \"python_exec\","
    " \"description\": \"Run Python code in a persistent, confined kernel (no network, no host files: only"
    " /workspace is writable). Variables, imports and files persist between calls in the same conversation:"
    " this client's default one, or one conversation_open gave. A new `kennel mcp` process starts with a fresh"
    " kernel; to keep a conversation across processes, run `kennel mcp --connection-file F` against a running"
    " `kennel serve` and pass a conversation_open handle. Returns stdout and stderr as text, the value of the last expression, images (matplotlib plots) as PNG,"
    " and on an exception isError with the traceback. Host tools declared for the conversation are Python"
    " functions inside (see tools['name']).\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"code\"],"
    "  \"properties\": {"
    "   \"code\": {\"type\": \"string\", \"description\": \"Python source; the last expression's value is returned\"},"
    "   \"conversation\": {\"type\": \"string\", \"description\": \"A handle from conversation_open; omit for this"
    " client's default conversation (over HTTP each MCP session has its own; without a session, name one)\"},"
    "   \"timeout\": {\"type\": \"number\", \"exclusiveMinimum\": 0, \"maximum\": 86400, \"description\": \"Seconds"
    " before the code is interrupted (KeyboardInterrupt; variables are kept); default 600\"}}}},"
    "{\"name\": \"conversation_open\","
    " \"description\": \"Open a new, separate Python conversation (its own kernel and /workspace). Returns its"
    " handle, to pass as `conversation` to the other tools.\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"
    "   \"tools\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"description\": \"Names of the host tools"
    " to make callable inside (default: all this server offers)\"},"
    "   \"policy\": {\"type\": \"object\", \"description\": \"Lower limits, e.g. {\\\"execution_timeout\\\": 60,"
    " \\\"memory_bytes\\\": 268435456}; kennel's docs/PROTOCOL.md section 5\"}}}},"
    "{\"name\": \"conversation_close\","
    " \"description\": \"Close a conversation: its kernel stops, its variables and /workspace are gone.\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"conversation\"],"
    "  \"properties\": {\"conversation\": {\"type\": \"string\"}}}},"
    "{\"name\": \"conversation_restart\","
    " \"description\": \"Restart a conversation's kernel: variables are lost, /workspace is kept.\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false,"
    "  \"properties\": {\"conversation\": {\"type\": \"string\", \"description\": \"default: this client's default"
    " conversation\"}}}},"
    "{\"name\": \"conversation_list\","
    " \"description\": \"List the conversations this client opened (its default one and conversation_open's)"
    " with their state, memory and CPU time.\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {}}},"
    "{\"name\": \"file_put\","
    " \"description\": \"Write a file into a conversation's /workspace (what its code sees), creating or"
    " replacing it; at most 4 MiB per call (for more, put the next part at offset = the size so far).\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"path\"],"
    "  \"properties\": {"
    "   \"path\": {\"type\": \"string\", \"description\": \"relative to /workspace, e.g. data/input.csv (its directory must exist)\"},"
    "   \"content\": {\"type\": \"string\", \"description\": \"the file's text (UTF-8)\"},"
    "   \"content_base64\": {\"type\": \"string\", \"description\": \"or its bytes, base64\"},"
    "   \"offset\": {\"type\": \"integer\", \"minimum\": 0, \"description\": \"0 (default) replaces the file;"
    " its current size appends a part\"},"
    "   \"conversation\": {\"type\": \"string\", \"description\": \"default: this client's default"
    " conversation\"}}}},"
    "{\"name\": \"file_get\","
    " \"description\": \"Read a file from a conversation's /workspace: text as text, other bytes as an"
    " embedded resource (base64), a PNG as an image; up to 4 MiB per call (offset and length for more).\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"path\"],"
    "  \"properties\": {"
    "   \"path\": {\"type\": \"string\", \"description\": \"relative to /workspace\"},"
    "   \"offset\": {\"type\": \"integer\", \"minimum\": 0},"
    "   \"length\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 4194304, \"description\": \"bytes;"
    " default 1 MiB\"},"
    "   \"conversation\": {\"type\": \"string\"}}}},"
    "{\"name\": \"file_list\","
    " \"description\": \"List a directory of a conversation's /workspace: names, types, sizes, times.\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"
    "   \"path\": {\"type\": \"string\", \"description\": \"relative to /workspace; default its root\"},"
    "   \"conversation\": {\"type\": \"string\"}}}}"
    "]";

static json_t *
s_declarations (void)
{
    static json_t *checked;
    if (!checked) {
        json_t *list = json_loads (declarations_json, 0, NULL);
        char *problem = NULL;
        checked = list ? gw_tools_validate (list, &problem) : NULL;
        if (!checked) {
            fprintf (stderr, "kennel mcp: the built-in tool declarations are invalid: %s\n", problem ?: "not JSON");
            abort ();
        }
        json_decref (list);
    }
    return checked;
}

json_t *
mcp_tools_list (void)
{
    return json_deep_copy (s_declarations ());
}

char *
mcp_tools_check (const char *name, const json_t *arguments, bool *unknown)
{
    const json_t *tool = gw_tools_find (s_declarations (), name);
    *unknown = tool == NULL;
    if (!tool)
        return wire_xasprintf ("unknown tool %s", name);
    char problem[512];
    if (!gw_schema_check_arguments (gw_tools_schema (tool), arguments, problem, sizeof problem))
        return wire_xasprintf ("%s", problem);
    return NULL;
}

/* ---- results ------------------------------------------------------------ */

static void
s_add_text (json_t *content, const char *text)
{
    json_array_append_new (content, json_pack ("{s:s, s:s}", "type", "text", "text", text));
}

/* Terminal colour codes (ESC [ ... letter) are noise to a model. */
static char *
s_strip_ansi (const char *s)
{
    char *out = wire_xmalloc (strlen (s) + 1);
    char *o = out;
    while (*s) {
        if (s[0] == '\x1b' && s[1] == '[') {
            s += 2;
            while (*s && !(*s >= '@' && *s <= '~'))
                s++;
            if (*s)
                s++;
            continue;
        }
        *o++ = *s++;
    }
    *o = 0;
    return out;
}

/* A display's richest form a model can take: a PNG, else its text. */
static void
s_add_data (json_t *content, const json_t *data)
{
    const char *png = json_string_value (json_object_get (data, "image/png"));
    const char *text = json_string_value (json_object_get (data, "text/plain"));
    if (png) {
        /* base64 as Jupyter sends it may hold newlines; MCP's may not */
        char *b64 = wire_xstrdup (png), *o = b64;
        for (const char *p = png; *p; p++)
            if (*p != '\n' && *p != '\r')
                *o++ = *p;
        *o = 0;
        json_array_append_new (content, json_pack ("{s:s, s:s, s:s}", "type", "image", "data", b64, "mimeType",
                                                   "image/png"));
        free (b64);
    }
    else if (text)
        s_add_text (content, text);
}

static void
s_add_error (json_t *content, const json_t *error)
{
    json_t *tb = json_object_get (error, "traceback");
    char *joined = wire_xstrdup ("");
    size_t i;
    json_t *line;
    json_array_foreach (tb, i, line) {
        char *next = wire_xasprintf ("%s%s%s", joined, i ? "\n" : "", json_string_value (line) ?: "");
        free (joined);
        joined = next;
    }
    if (!*joined) {
        free (joined);
        joined = wire_xasprintf ("%s: %s", json_string_value (json_object_get (error, "ename")) ?: "Error",
                                 json_string_value (json_object_get (error, "evalue")) ?: "");
    }
    char *clean = s_strip_ansi (joined);
    s_add_text (content, clean);
    free (clean);
    free (joined);
}

/* Consecutive stream outputs of one name are one text; stderr is marked. */
static void
s_add_stream (json_t *content, const char *name, const char *text, char **pending, const char **pending_name)
{
    if (*pending && name && streq (*pending_name, name)) {
        char *joined = wire_xasprintf ("%s%s", *pending, text);
        free (*pending);
        *pending = joined;
        return;
    }
    if (*pending) {
        char *t = streq (*pending_name, "stderr") ? wire_xasprintf ("[stderr]\n%s", *pending) : wire_xstrdup (*pending);
        s_add_text (content, t);
        free (t);
        free (*pending);
        *pending = NULL;
    }
    if (name) {
        *pending = wire_xstrdup (text);
        *pending_name = name;
    }
}

json_t *
mcp_tools_exec_result (const char *conversation, const mcp_exec_result_t *r)
{
    json_t *content = json_array ();
    char *pending = NULL;
    const char *pending_name = NULL;
    bool saw_error = false;
    size_t i;
    json_t *out;
    json_array_foreach (r->outputs, i, out) {
        const char *type = json_string_value (json_object_get (out, "msg_type"));
        json_t *c = json_object_get (out, "content");
        if (streq (type, "stream")) {
            s_add_stream (content, json_string_value (json_object_get (c, "name")) ?: "stdout",
                          json_string_value (json_object_get (c, "text")) ?: "", &pending, &pending_name);
            continue;
        }
        s_add_stream (content, NULL, NULL, &pending, &pending_name);
        if (streq (type, "error")) {
            saw_error = true;
            s_add_error (content, c);
        }
        else
            s_add_data (content, json_object_get (c, "data"));
    }
    s_add_stream (content, NULL, NULL, &pending, &pending_name);
    const char *status = json_string_value (json_object_get (r->reply, "status")) ?: "error";
    bool is_error = !streq (status, "ok") || r->timed_out;
    if (!streq (status, "ok") && !saw_error)
        s_add_error (content, r->reply);
    if (r->timed_out)
        s_add_text (content, "[kennel: the timeout passed; the code was interrupted and the variables are kept]");
    if (json_array_size (content) == 0)
        s_add_text (content, "(no output)");
    json_t *structured = json_pack ("{s:s, s:s, s:o}", "conversation", conversation, "status", status, "kennel",
                                    r->kennel ? json_incref (r->kennel) : json_object ());
    json_t *count = json_object_get (r->reply, "execution_count");
    if (json_is_integer (count))
        json_object_set (structured, "execution_count", count);
    return json_pack ("{s:o, s:b, s:o}", "content", content, "isError", is_error, "structuredContent", structured);
}

static json_t *
s_text_result (bool is_error, json_t *structured, const char *fmt, va_list ap)
{
    char *text = NULL;
    if (vasprintf (&text, fmt, ap) < 0)
        wire_alloc_fail ();
    json_t *result = json_pack ("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text, "isError", is_error);
    if (structured)
        json_object_set_new (result, "structuredContent", structured);
    free (text);
    return result;
}

json_t *
mcp_tools_error_result (const char *fmt, ...)
{
    va_list ap;
    va_start (ap, fmt);
    json_t *r = s_text_result (true, NULL, fmt, ap);
    va_end (ap);
    return r;
}

json_t *
mcp_tools_text_result (json_t *structured, const char *fmt, ...)
{
    va_list ap;
    va_start (ap, fmt);
    json_t *r = s_text_result (false, structured, fmt, ap);
    va_end (ap);
    return r;
}
