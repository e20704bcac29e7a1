/*  gw_schema.c - the JSON Schema subset that tool parameters may use, and
    the check of a call's arguments against it.

    A tool's declared schema is the contract between the code in the kernel
    and the host's function: the gateway lets through only calls that meet
    it, so no undeclared or mistyped argument reaches host code. Supported
    keywords:
      assertions   type (one name or a list: string, number, integer,
                   boolean, object, array, null), enum, const, properties,
                   required, additionalProperties, items (one schema),
                   minItems, maxItems, minLength, maxLength (code points),
                   minimum, maximum, exclusiveMinimum, exclusiveMaximum
                   (numbers), anyOf, oneOf, allOf
      annotations  title, description, default, examples, format,
                   $schema, $comment, deprecated, readOnly, writeOnly
                   (accepted, not checked)
    Any other keyword ($ref, pattern, patternProperties, if/then/else, not,
    ...) makes the declaration fail at conversation_open: a constraint the
    gateway would silently skip is worse than a refused declaration.

    An object schema that lists properties (and the top-level parameters
    schema always) is closed: a property it does not name is refused unless
    additionalProperties is true or a schema. An object schema without
    properties and without additionalProperties accepts any keys (a
    free-form object). integer accepts a number with no fractional part
    (1.0), as JSON Schema does; enum and const compare numbers by value.

    Both walks recurse on the schema, whose depth is bounded at open
    (SCHEMA_MAX_DEPTH), so a deep argument value never deepens the C stack
    beyond it. No globals: callable from any thread.
*/
#include "gw_schema.h"
#include "gw_util.h"

#include <czmq.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SCHEMA_MAX_DEPTH 32
#define PATH_MAX_BYTES 256
#define KEY_SHOWN_BYTES 100 /* of a key or name inside a message */

static const char *type_names[] = {"string", "number", "integer", "boolean", "object", "array", "null", NULL};

static const char *annotations[] = {"title",      "description", "default",  "examples", "format",
                                    "$schema",    "$comment",    "deprecated", "readOnly", "writeOnly", NULL};

static const char *count_keys[] = {"minItems", "maxItems", "minLength", "maxLength", NULL};

static const char *bound_keys[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", NULL};

static const char *combinators[] = {"anyOf", "oneOf", "allOf", NULL};

static bool
in_list (const char *const *list, const char *word)
{
    for (int i = 0; list[i]; i++)
        if (streq (list[i], word))
            return true;
    return false;
}

/* The problem, cut to size between characters (a caller's buffer may be
   shorter than the message). */
static bool
fail (char *problem, size_t size, const char *fmt, ...)
{
    char full[1024];
    va_list ap;
    va_start (ap, fmt);
    vsnprintf (full, sizeof full, fmt, ap);
    va_end (ap);
    snprintf (problem, size, "%.*s", gw_text_fit (full, (int) size - 1), full);
    return false;
}

/* where + ".key" (key cut at KEY_SHOWN_BYTES) or "[index]", cut with "..."
   when too long; cuts fall between characters (gw_text_fit). */
static void
path_child (char out[PATH_MAX_BYTES], const char *where, const char *key, long index)
{
    int n = key ? snprintf (out, PATH_MAX_BYTES, "%s.%.*s", where, gw_text_fit (key, KEY_SHOWN_BYTES), key)
                : snprintf (out, PATH_MAX_BYTES, "%s[%ld]", where, index);
    if (n >= PATH_MAX_BYTES)
        memcpy (out + gw_text_fit (out, PATH_MAX_BYTES - 4), "...", 4);
}

/* ---- the declaration: only the subset, well formed ----------------------- */

static bool schema_supported_at (const json_t *schema, const char *where, int depth, char *problem, size_t size);

static bool
type_supported (const json_t *type, const char *where, char *problem, size_t size)
{
    if (json_is_string (type) && in_list (type_names, json_string_value (type)))
        return true;
    size_t i;
    json_t *name;
    json_array_foreach (type, i, name)
        if (!json_is_string (name) || !in_list (type_names, json_string_value (name)))
            break;
    if (json_is_array (type) && json_array_size (type) > 0 && i == json_array_size (type))
        return true;
    return fail (problem, size,
                 "%s.type must be one of string, number, integer, boolean, object, array, null, or a list of them",
                 where);
}

static bool
properties_supported (const json_t *props, const char *where, int depth, char *problem, size_t size)
{
    if (!json_is_object (props))
        return fail (problem, size, "%s.properties must be an object", where);
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) props, key, value) {
        if (!json_is_object (value) && !json_is_boolean (value))
            return fail (problem, size, "%s.properties['%.*s'] must be a JSON Schema", where,
                         gw_text_fit (key, KEY_SHOWN_BYTES), key);
        char at[PATH_MAX_BYTES], sub[PATH_MAX_BYTES];
        path_child (at, where, "properties", 0);
        path_child (sub, at, key, 0);
        if (!schema_supported_at (value, sub, depth + 1, problem, size))
            return false;
    }
    return true;
}

static bool
list_supported (const json_t *list, const char *where, const char *key, int depth, char *problem, size_t size)
{
    if (!json_is_array (list) || json_array_size (list) == 0)
        return fail (problem, size, "%s.%s must be a non-empty list of JSON Schemas", where, key);
    size_t i;
    json_t *sub;
    json_array_foreach (list, i, sub) {
        char at[PATH_MAX_BYTES], subwhere[PATH_MAX_BYTES];
        path_child (at, where, key, 0);
        path_child (subwhere, at, NULL, (long) i);
        if (!schema_supported_at (sub, subwhere, depth + 1, problem, size))
            return false;
    }
    return true;
}

/* One keyword of an object schema: known and well formed. */
static bool
keyword_supported (const char *key, const json_t *value, const char *where, int depth, char *problem, size_t size)
{
    if (in_list (annotations, key) || streq (key, "enum") || streq (key, "const")) {
        if (streq (key, "enum") && !json_is_array (value))
            return fail (problem, size, "%s.enum must be a list", where);
        return true;
    }
    if (streq (key, "type"))
        return type_supported (value, where, problem, size);
    if (streq (key, "properties"))
        return properties_supported (value, where, depth, problem, size);
    if (streq (key, "required")) {
        size_t i;
        json_t *name;
        json_array_foreach (value, i, name)
            if (!json_is_string (name))
                break;
        if (json_is_array (value) && i == json_array_size (value))
            return true;
        return fail (problem, size, "%s.required must be a list of property names", where);
    }
    char sub[PATH_MAX_BYTES];
    path_child (sub, where, key, 0);
    if (streq (key, "additionalProperties") || streq (key, "items")) {
        if (json_is_array (value))
            return fail (problem, size, "%s: a list of schemas (tuple form) is not supported", sub);
        return schema_supported_at (value, sub, depth + 1, problem, size);
    }
    if (in_list (count_keys, key)) {
        if (json_is_integer (value) && json_integer_value (value) >= 0)
            return true;
        return fail (problem, size, "%s must be a non-negative integer", sub);
    }
    if (in_list (bound_keys, key)) {
        if (json_is_number (value))
            return true;
        return fail (problem, size, "%s must be a number", sub);
    }
    if (in_list (combinators, key))
        return list_supported (value, where, key, depth, problem, size);
    return fail (problem, size,
                 "%s: keyword '%.*s' is not supported by the gateway's argument check (supported: type, enum, "
                 "const, properties, required, additionalProperties, items, minItems, maxItems, minLength, "
                 "maxLength, minimum, maximum, exclusiveMinimum, exclusiveMaximum, anyOf, oneOf, allOf, and "
                 "annotations)",
                 where, gw_text_fit (key, KEY_SHOWN_BYTES), key);
}

static bool
schema_supported_at (const json_t *schema, const char *where, int depth, char *problem, size_t size)
{
    if (json_is_boolean (schema))
        return true;
    if (!json_is_object (schema))
        return fail (problem, size, "%s must be a JSON Schema (an object or a boolean)", where);
    if (depth > SCHEMA_MAX_DEPTH)
        return fail (problem, size, "%s: schemas nested deeper than %d levels are not supported", where,
                     SCHEMA_MAX_DEPTH);
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) schema, key, value)
        if (!keyword_supported (key, value, where, depth, problem, size))
            return false;
    return true;
}

bool
gw_schema_supported (const json_t *schema, const char *where, char *problem, size_t size)
{
    return schema_supported_at (schema, where, 0, problem, size);
}

/* ---- a value against a supported schema --------------------------------- */

static bool check_at (const json_t *schema, const json_t *value, const char *where, bool closed, char *problem,
                      size_t size);

static const char *
type_of (const json_t *value)
{
    switch (json_typeof (value)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

static bool
type_matches (const char *type, const json_t *value)
{
    if (streq (type, "number"))
        return json_is_number (value);
    if (streq (type, "integer")) {
        double d = json_is_real (value) ? json_real_value (value) : 0;
        return json_is_integer (value) || (json_is_real (value) && isfinite (d) && d == floor (d));
    }
    return streq (type, type_of (value));
}

static bool
type_check (const json_t *type, const json_t *value, const char *where, char *problem, size_t size)
{
    if (!type)
        return true;
    if (json_is_string (type)) {
        if (type_matches (json_string_value (type), value))
            return true;
        return fail (problem, size, "%s must be of type %s, not %s", where, json_string_value (type), type_of (value));
    }
    size_t i;
    json_t *name;
    json_array_foreach (type, i, name)
        if (type_matches (json_string_value (name), value))
            return true;
    char *names = json_dumps (type, JSON_COMPACT);
    fail (problem, size, "%s must be of one of the types %s, not %s", where, names ? names : "(listed)",
          type_of (value));
    free (names);
    return false;
}

static bool
value_equal (const json_t *a, const json_t *b)
{
    if (json_is_number (a) && json_is_number (b))
        return json_number_value (a) == json_number_value (b);
    return json_equal ((json_t *) a, (json_t *) b);
}

static bool
enum_check (const json_t *schema, const json_t *value, const char *where, char *problem, size_t size)
{
    const json_t *constant = json_object_get (schema, "const");
    if (constant && !value_equal (constant, value))
        return fail (problem, size, "%s must equal the schema's const value", where);
    const json_t *choices = json_object_get (schema, "enum");
    if (!choices)
        return true;
    size_t i;
    json_t *choice;
    json_array_foreach (choices, i, choice)
        if (value_equal (choice, value))
            return true;
    char *text = json_dumps (choices, JSON_COMPACT);
    const char *shown = text ? text : "the enum";
    fail (problem, size, "%s must be one of %.*s%s", where, gw_text_fit (shown, 120), shown,
          strlen (shown) > 120 ? "..." : "");
    free (text);
    return false;
}

/* min/max keyword as an integer, or -1 when absent. */
static json_int_t
count_limit (const json_t *schema, const char *key)
{
    const json_t *v = json_object_get (schema, key);
    return v ? json_integer_value (v) : -1;
}

static bool
count_check (const json_t *schema, const char *what, json_int_t count, const char *min_key, const char *max_key,
             const char *where, char *problem, size_t size)
{
    json_int_t min = count_limit (schema, min_key), max = count_limit (schema, max_key);
    if (min >= 0 && count < min)
        return fail (problem, size, "%s has %" JSON_INTEGER_FORMAT " %s, fewer than %s %" JSON_INTEGER_FORMAT, where,
                     count, what, min_key, min);
    if (max >= 0 && count > max)
        return fail (problem, size, "%s has %" JSON_INTEGER_FORMAT " %s, more than %s %" JSON_INTEGER_FORMAT, where,
                     count, what, max_key, max);
    return true;
}

static bool
number_check (const json_t *schema, double x, const char *where, char *problem, size_t size)
{
    for (int i = 0; bound_keys[i]; i++) {
        const json_t *bound = json_object_get (schema, bound_keys[i]);
        if (!bound)
            continue;
        double b = json_number_value (bound);
        bool ok = i == 0 ? x >= b : i == 1 ? x <= b : i == 2 ? x > b : x < b;
        if (!ok)
            return fail (problem, size, "%s is %g, outside %s %g", where, x, bound_keys[i], b);
    }
    return true;
}

static bool
object_check (const json_t *schema, const json_t *value, const char *where, bool closed, char *problem, size_t size)
{
    const json_t *props = json_object_get (schema, "properties");
    const json_t *extra = json_object_get (schema, "additionalProperties");
    size_t i;
    json_t *name;
    json_array_foreach (json_object_get (schema, "required"), i, name)
        if (!json_object_get (value, json_string_value (name)))
            return fail (problem, size, "%s.%.*s is required and missing", where,
                         gw_text_fit (json_string_value (name), KEY_SHOWN_BYTES), json_string_value (name));
    closed = closed || props;
    const char *key;
    json_t *member;
    json_object_foreach ((json_t *) value, key, member) {
        char sub[PATH_MAX_BYTES];
        path_child (sub, where, key, 0);
        const json_t *declared = json_object_get (props, key);
        if (declared) {
            if (!check_at (declared, member, sub, false, problem, size))
                return false;
        }
        else if (json_is_object (extra) || json_is_boolean (extra)) {
            if (json_is_false (extra))
                return fail (problem, size, "%s is not a declared property (additionalProperties is false)", sub);
            if (!check_at (extra, member, sub, false, problem, size))
                return false;
        }
        else if (closed)
            return fail (problem, size, "%s is not a declared property (additionalProperties is not allowed)", sub);
    }
    return true;
}

static bool
array_check (const json_t *schema, const json_t *value, const char *where, char *problem, size_t size)
{
    if (!count_check (schema, "items", (json_int_t) json_array_size (value), "minItems", "maxItems", where, problem,
                      size))
        return false;
    const json_t *items = json_object_get (schema, "items");
    size_t i;
    json_t *item;
    json_array_foreach (value, i, item) {
        char sub[PATH_MAX_BYTES];
        path_child (sub, where, NULL, (long) i);
        if (items && !check_at (items, item, sub, false, problem, size))
            return false;
    }
    return true;
}

/* anyOf: at least one, oneOf: exactly one, allOf: every one. */
static bool
combinator_check (const json_t *schema, const json_t *value, const char *where, char *problem, size_t size)
{
    for (int c = 0; combinators[c]; c++) {
        const json_t *list = json_object_get (schema, combinators[c]);
        if (!list)
            continue;
        size_t i, matched = 0;
        json_t *sub;
        char first[300] = "";
        json_array_foreach (list, i, sub) {
            char why[300];
            if (check_at (sub, value, where, false, why, sizeof why))
                matched++;
            else if (!*first)
                memcpy (first, why, sizeof first);
        }
        size_t n = json_array_size (list);
        if (c == 0 && matched == 0)
            return fail (problem, size, "%s matches none of the %zu schemas of anyOf (first: %s)", where, n, first);
        if (c == 1 && matched != 1)
            return fail (problem, size, "%s matches %zu of the %zu schemas of oneOf, not exactly one", where, matched,
                         n);
        if (c == 2 && matched < n)
            return fail (problem, size, "%s fails a schema of allOf: %s", where, first);
    }
    return true;
}

/* closed: an object here refuses undeclared keys even without properties
   (the top level). */
static bool
check_at (const json_t *schema, const json_t *value, const char *where, bool closed, char *problem, size_t size)
{
    if (json_is_boolean (schema))
        return json_is_true (schema) || fail (problem, size, "%s is not allowed (its schema is false)", where);
    if (!type_check (json_object_get (schema, "type"), value, where, problem, size)
        || !enum_check (schema, value, where, problem, size))
        return false;
    if (json_is_object (value) && !object_check (schema, value, where, closed, problem, size))
        return false;
    if (json_is_array (value) && !array_check (schema, value, where, problem, size))
        return false;
    if (json_is_string (value)
        && !count_check (schema, "characters", (json_int_t) gw_text_chars (json_string_value (value), json_string_length (value)),
                         "minLength", "maxLength", where, problem, size))
        return false;
    if (json_is_number (value) && !number_check (schema, json_number_value (value), where, problem, size))
        return false;
    return combinator_check (schema, value, where, problem, size);
}

bool
gw_schema_check_arguments (const json_t *parameters, const json_t *arguments, char *problem, size_t size)
{
    if (!json_is_object (arguments))
        return fail (problem, size, "arguments must be an object, not %s", arguments ? type_of (arguments) : "absent");
    json_t *none = parameters ? NULL : json_object (); /* no parameters: no arguments */
    bool ok = check_at (parameters ? parameters : none, arguments, "arguments", true, problem, size);
    json_decref (none);
    return ok;
}
