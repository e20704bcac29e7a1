/*  gw_tools_fuzz.c - libFuzzer target: tool declarations (gateway/gw_tools.c)
    and the check of a call's arguments (gateway/gw_schema.c).

    Input: a tool list (conversation_open's "tools", from a client) and the
    arguments of a call (a tool_request's, from a kernel, which holds its
    own key: a good signature does not make its bytes trusted), separated
    by the byte 0x1f; both decoded as the gateway decodes them (NUL allowed).
    Checked, trapping otherwise:
    - gw_tools_validate answers a list or an error message, never both nor
      neither, and the same twice; a checked list checks again to itself,
      holds objects with distinct clean names that gw_tools_find returns,
      each with a supported schema;
    - against each checked tool's schema, gw_schema_check_arguments answers
      the same twice, names a problem whenever it refuses, and what it lets
      through conforms at the top level: an object, every required key
      present, a declared property's "type" (one name) met, no undeclared
      key in a closed schema.
*/
#include "gateway/gw_schema.h"
#include "gateway/gw_tools.h"
#include "gateway/gw_util.h"
#include <math.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* at most this many tools' schemas are tried per input, to keep runs fast */
#define TOOLS_TRIED 4

static json_t *
s_validate (const json_t *tools)
{
    char *errmsg = (char *) 1;
    json_t *checked = gw_tools_validate (tools, &errmsg);
    if ((checked == NULL) == (errmsg == NULL) || (errmsg && !*errmsg))
        __builtin_trap ();
    char *again_msg = NULL;
    json_t *again = gw_tools_validate (tools, &again_msg);
    if ((checked || again) && !json_equal (checked, again))
        __builtin_trap ();
    if (errmsg && strcmp (errmsg, again_msg) != 0)
        __builtin_trap (); /* deterministic */
    free (errmsg);
    free (again_msg);
    json_decref (again);
    return checked;
}

static void
s_check_list (const json_t *checked)
{
    json_t *twice = s_validate (checked);
    if (!json_equal (twice, checked))
        __builtin_trap (); /* a checked list is its own check */
    json_decref (twice);
    size_t i;
    json_t *tool;
    json_array_foreach (checked, i, tool) {
        const char *name = gw_text (json_object_get (tool, "name"));
        if (!json_is_object (tool) || !name || !*name || !gw_text_clean (tool) || gw_tools_find (checked, name) != tool)
            __builtin_trap ();
        char problem[512];
        const json_t *schema = gw_tools_schema (tool);
        if (schema && !gw_schema_supported (schema, "parameters", problem, sizeof problem))
            __builtin_trap ();
    }
}

/* What gw_schema_check_arguments let through, checked at the top level
   without it. */
static void
s_check_conforms (const json_t *schema, const json_t *args)
{
    if (!json_is_object (args))
        __builtin_trap ();
    const json_t *props = json_object_get (schema, "properties");
    const json_t *extra = json_object_get (schema, "additionalProperties");
    size_t i;
    json_t *name;
    json_array_foreach (json_object_get (schema, "required"), i, name)
        if (!json_object_get (args, json_string_value (name)))
            __builtin_trap ();
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) args, key, value) {
        const json_t *declared = json_object_get (props, key);
        if (!declared && (!schema || !(json_is_object (extra) || json_is_true (extra))))
            __builtin_trap (); /* the top level is closed */
        const char *type = json_string_value (json_object_get (declared, "type"));
        bool whole = json_is_integer (value) || (json_is_real (value) && json_real_value (value) == floor (json_real_value (value)));
        if (type && !((strcmp (type, "number") == 0 && json_is_number (value))
                      || (strcmp (type, "integer") == 0 && whole)
                      || (strcmp (type, "string") == 0 && json_is_string (value))
                      || (strcmp (type, "boolean") == 0 && json_is_boolean (value))
                      || (strcmp (type, "object") == 0 && json_is_object (value))
                      || (strcmp (type, "array") == 0 && json_is_array (value))
                      || (strcmp (type, "null") == 0 && json_is_null (value))))
            __builtin_trap ();
    }
}

static void
s_check_call (const json_t *tool, const json_t *args)
{
    const json_t *schema = gw_tools_schema (tool);
    char a[300], b[300];
    memset (a, 0, sizeof a);
    memset (b, 0, sizeof b);
    bool ok = gw_schema_check_arguments (schema, args, a, sizeof a);
    bool again = gw_schema_check_arguments (schema, args, b, sizeof b);
    if (ok != again || (!ok && (!*a || strcmp (a, b) != 0)))
        __builtin_trap ();
    if (ok)
        s_check_conforms (schema, args);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const uint8_t *sep = memchr (data, 0x1f, size);
    size_t list_size = sep ? (size_t) (sep - data) : size;
    json_t *tools = json_loadb ((const char *) data, list_size, JSON_ALLOW_NUL, NULL);
    json_t *args = sep ? json_loadb ((const char *) sep + 1, size - list_size - 1, JSON_ALLOW_NUL, NULL) : NULL;
    json_t *checked = tools ? s_validate (tools) : NULL;
    if (checked) {
        s_check_list (checked);
        for (size_t i = 0; args && i < json_array_size (checked) && i < TOOLS_TRIED; i++)
            s_check_call (json_array_get (checked, i), args);
    }
    json_decref (checked);
    json_decref (args);
    json_decref (tools);
    return 0;
}
