/*  gw_tools.c - a conversation's tool declarations, checked at open.

    One rule, docs/PROTOCOL.md section 8 ("Declarations"), which the kernel
    applies too (kernel-launcher/pykernel/kernel/tools.py, _parse_tools) with the same messages; both run
    every case of tests/fixtures/tool_declarations.json. The gateway checks
    first so that a bad list gets an error reply naming the tool and no
    kernel is started or changed. The parameters schema must stay within the
    subset that gw_schema.c checks every call's arguments against.
    OpenAI's wrapped form {"type": "function", "function": {...}} is unwrapped
    here, so the kernel only ever sees {name, description, parameters}.
*/
#include "gw_tools.h"
#include "gw_schema.h"
#include "gw_util.h"
#include "wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define TOOL_NAME_MAX 256 /* characters: up to 1024 bytes of UTF-8 */

static char *
tool_error (int index, const char *name, const char *fmt, ...)
{
    char problem[512];
    va_list ap;
    va_start (ap, fmt);
    vsnprintf (problem, sizeof problem, fmt, ap);
    va_end (ap);
    /* the name is whole: it was checked to be at most TOOL_NAME_MAX characters */
    return name ? wire_xasprintf ("tool '%s': %s", name, problem) : wire_xasprintf ("tool %d: %s", index, problem);
}

/* The schema key in effect: parameters, else the Anthropic and MCP aliases. */
const json_t *
gw_tools_schema (const json_t *tool)
{
    static const char *keys[] = {"parameters", "input_schema", "inputSchema", NULL};
    for (int i = 0; keys[i]; i++) {
        const json_t *s = json_object_get (tool, keys[i]);
        if (s && !json_is_null (s))
            return s;
    }
    return NULL;
}

const json_t *
gw_tools_find (const json_t *tools, const char *name)
{
    size_t i;
    json_t *tool;
    json_array_foreach (tools, i, tool)
        if (json_is_string (json_object_get (tool, "name"))
            && streq (json_string_value (json_object_get (tool, "name")), name))
            return tool;
    return NULL;
}

/* The declaration inside OpenAI's wrapped form {"type": "function",
   "function": {...}}, or NULL. Unwrapped once and passed on unwrapped: one
   inside would be unwrapped again by the kernel, which would then see
   another tool than the gateway checked. */
static json_t *
wrapped (const json_t *tool)
{
    json_t *fn = json_object_get (tool, "function");
    const char *type = gw_text (json_object_get (tool, "type"));
    return type && streq (type, "function") && json_is_object (fn) ? fn : NULL;
}

/* The top level is an object schema; below it, the subset gw_schema checks
   calls against (a keyword outside it is refused here, never ignored). */
static bool
schema_check (const json_t *schema, char problem[512])
{
    if (!schema)
        return true; /* no parameters */
    if (!json_is_object (schema)) {
        snprintf (problem, 512, "parameters must be a JSON Schema object");
        return false;
    }
    json_t *type = json_object_get (schema, "type");
    if (type && !(json_is_string (type) && streq (json_string_value (type), "object"))) {
        snprintf (problem, 512, "parameters must be a JSON Schema of type \"object\"");
        return false;
    }
    return gw_schema_supported (schema, "parameters", problem, 512);
}

json_t *
gw_tools_validate (const json_t *tools, char **errmsg)
{
    *errmsg = NULL;
    if (!json_is_array (tools)) {
        *errmsg = wire_xstrdup ("tools must be a list of {name, description, parameters}");
        return NULL;
    }
    json_t *out = json_array ();
    json_t *seen = json_object ();
    size_t index;
    json_t *tool;
    json_array_foreach (tools, index, tool) {
        json_t *inner = wrapped (tool);
        if (inner && wrapped (inner)) {
            *errmsg = tool_error ((int) index, NULL,
                                  "a wrapped tool {\"type\": \"function\", \"function\": {...}} must not wrap another");
            break;
        }
        if (inner)
            tool = inner;
        if (!json_is_object (tool)) {
            *errmsg = tool_error ((int) index, NULL, "a tool must be an object {name, description, parameters}");
            break;
        }
        const char *name = gw_text (json_object_get (tool, "name"));
        if (!name || !*name || gw_text_chars (name, strlen (name)) > TOOL_NAME_MAX) {
            *errmsg = tool_error ((int) index, NULL,
                                  "name must be a non-empty string of at most %d characters, without NUL",
                                  TOOL_NAME_MAX);
            break;
        }
        if (!gw_text_clean (tool)) {
            *errmsg = tool_error ((int) index, name, "a string or a key holds a NUL byte");
            break;
        }
        json_t *desc = json_object_get (tool, "description");
        if (desc && !json_is_null (desc) && !json_is_string (desc)) {
            *errmsg = tool_error ((int) index, name, "description must be a string");
            break;
        }
        char problem[512];
        if (!schema_check (gw_tools_schema (tool), problem)) {
            *errmsg = tool_error ((int) index, name, "%s", problem);
            break;
        }
        if (json_object_get (seen, name)) {
            *errmsg = tool_error ((int) index, name, "declared twice");
            break;
        }
        json_object_set_new (seen, name, json_true ());
        json_array_append (out, tool);
    }
    json_decref (seen);
    if (*errmsg || index < json_array_size (tools)) {
        json_decref (out);
        if (!*errmsg)
            *errmsg = wire_xstrdup ("invalid tool list");
        return NULL;
    }
    return out;
}
