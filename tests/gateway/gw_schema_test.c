/*  gw_schema_test.c - self-test of the tool argument check (make check):

    gw_schema   a table of (schema, arguments, expected problem or "") cases
                over every supported keyword, nested objects and arrays, type
                lists, boolean schemas and the top level's closed object; the
                open-time check of declarations (gw_tools_validate) refusing
                each kind of unsupported or malformed keyword and a nesting
                deeper than the limit.

    Exit 0 when every check passed; each failure prints one line.
*/
#include "gateway/gw_schema.h"
#include "gateway/gw_tools.h"
#include "tests/gateway/gw_check.h"

#include <czmq.h>
#include <stdio.h>
#include <string.h>


typedef struct {
    const char *schema;    /* NULL: a tool without parameters */
    const char *arguments;
    const char *problem;   /* "" when the arguments pass, else the problem's start */
} case_t;

#define ORDER                                                                                                      \
    "{\"type\": \"object\", \"required\": [\"lines\"], \"properties\": {\"lines\": {\"type\": \"array\", "        \
    "\"maxItems\": 2, \"items\": {\"type\": \"object\", \"required\": [\"sku\"], \"properties\": {\"sku\": "      \
    "{\"type\": \"string\", \"maxLength\": 3}, \"qty\": {\"type\": \"integer\", \"exclusiveMinimum\": 0}}}}}}"

static const case_t cases[] = {
    {NULL, "{}", ""},
    {NULL, "{\"a\": 1}", "arguments.a is not a declared property (additionalProperties is not allowed)"},
    {"{}", "{\"a\": 1}", "arguments.a is not a declared property"}, /* the top level is closed */
    {"{\"additionalProperties\": true}", "{\"a\": 1}", ""},
    {"{\"additionalProperties\": false, \"properties\": {}}", "{\"a\": 1}",
     "arguments.a is not a declared property (additionalProperties is false)"},
    {"{\"properties\": {\"a\": {\"type\": \"string\"}}}", "[]", "arguments must be an object, not array"},
    {"{\"properties\": {\"a\": {\"type\": \"string\"}}}", "{\"a\": \"x\"}", ""},
    {"{\"properties\": {\"a\": {\"type\": \"string\"}}}", "{\"a\": null}", "arguments.a must be of type string, not null"},
    {"{\"properties\": {\"a\": {\"type\": \"integer\"}}}", "{\"a\": 2.0}", ""},
    {"{\"properties\": {\"a\": {\"type\": \"integer\"}}}", "{\"a\": 2.5}", "arguments.a must be of type integer, not number"},
    {"{\"properties\": {\"a\": {\"type\": \"integer\"}}}", "{\"a\": true}", "arguments.a must be of type integer, not boolean"},
    {"{\"properties\": {\"a\": {\"type\": \"number\"}}}", "{\"a\": 3}", ""},
    {"{\"properties\": {\"a\": {\"type\": \"boolean\"}}}", "{\"a\": 0}", "arguments.a must be of type boolean, not integer"},
    {"{\"properties\": {\"a\": {\"type\": \"null\"}}}", "{\"a\": null}", ""},
    {"{\"properties\": {\"a\": {\"type\": [\"string\", \"null\"]}}}", "{\"a\": null}", ""},
    {"{\"properties\": {\"a\": {\"type\": [\"string\", \"null\"]}}}", "{\"a\": 1}",
     "arguments.a must be of one of the types [\"string\",\"null\"], not integer"},
    {"{\"required\": [\"a\", \"b\"], \"properties\": {\"a\": {}, \"b\": {}}}", "{\"a\": 1}",
     "arguments.b is required and missing"},
    {"{\"properties\": {\"a\": {\"enum\": [\"x\", 1]}}}", "{\"a\": 1.0}", ""}, /* numbers by value */
    {"{\"properties\": {\"a\": {\"enum\": [\"x\", 1]}}}", "{\"a\": \"y\"}", "arguments.a must be one of [\"x\",1]"},
    {"{\"properties\": {\"a\": {\"const\": {\"k\": [1]}}}}", "{\"a\": {\"k\": [1]}}", ""},
    {"{\"properties\": {\"a\": {\"const\": {\"k\": [1]}}}}", "{\"a\": {\"k\": [2]}}",
     "arguments.a must equal the schema's const value"},
    {"{\"properties\": {\"a\": {\"minLength\": 2, \"maxLength\": 3}}}", "{\"a\": \"\xc3\xa9\xc3\xa9\xc3\xa9\"}", ""},
    {"{\"properties\": {\"a\": {\"maxLength\": 2}}}", "{\"a\": \"abc\"}",
     "arguments.a has 3 characters, more than maxLength 2"},
    {"{\"properties\": {\"a\": {\"minimum\": 1, \"maximum\": 2}}}", "{\"a\": 2}", ""},
    {"{\"properties\": {\"a\": {\"maximum\": 2}}}", "{\"a\": 2.5}", "arguments.a is 2.5, outside maximum 2"},
    {"{\"properties\": {\"a\": {\"exclusiveMaximum\": 2}}}", "{\"a\": 2}", "arguments.a is 2, outside exclusiveMaximum 2"},
    {"{\"properties\": {\"a\": {\"minimum\": 1}}}", "{\"a\": \"0\"}", ""}, /* bounds apply to numbers only */
    {"{\"properties\": {\"a\": false}}", "{\"a\": 1}", "arguments.a is not allowed (its schema is false)"},
    {"{\"properties\": {\"a\": true}}", "{\"a\": {\"any\": [1]}}", ""},
    {"{\"properties\": {\"a\": {\"type\": \"object\"}}}", "{\"a\": {\"free\": 1}}", ""}, /* free-form below */
    {"{\"properties\": {\"a\": {\"type\": \"object\", \"properties\": {}}}}", "{\"a\": {\"k\": 1}}",
     "arguments.a.k is not a declared property"},
    {ORDER, "{\"lines\": [{\"sku\": \"ab\", \"qty\": 1}, {\"sku\": \"c\"}]}", ""},
    {ORDER, "{\"lines\": [{\"sku\": \"ab\"}, {\"sku\": \"abcd\"}]}",
     "arguments.lines[1].sku has 4 characters, more than maxLength 3"},
    {ORDER, "{\"lines\": [{\"sku\": \"ab\", \"qty\": 0}]}", "arguments.lines[0].qty is 0, outside exclusiveMinimum 0"},
    {ORDER, "{\"lines\": [{\"qty\": 1}]}", "arguments.lines[0].sku is required and missing"},
    {ORDER, "{\"lines\": [{}, {}, {}]}", "arguments.lines has 3 items, more than maxItems 2"},
    {ORDER, "{\"lines\": [{\"sku\": \"a\", \"x\": 1}]}", "arguments.lines[0].x is not a declared property"},
    {"{\"properties\": {\"a\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"integer\"}]}}}", "{\"a\": 1}", ""},
    {"{\"properties\": {\"a\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"integer\"}]}}}", "{\"a\": []}",
     "arguments.a matches none of the 2 schemas of anyOf (first: arguments.a must be of type string, not array)"},
    {"{\"properties\": {\"a\": {\"oneOf\": [{\"type\": \"number\"}, {\"type\": \"integer\"}]}}}", "{\"a\": 1}",
     "arguments.a matches 2 of the 2 schemas of oneOf, not exactly one"},
    {"{\"properties\": {\"a\": {\"oneOf\": [{\"type\": \"number\"}, {\"type\": \"integer\"}]}}}", "{\"a\": 1.5}", ""},
    {"{\"properties\": {\"a\": {\"allOf\": [{\"minimum\": 1}, {\"maximum\": 3}]}}}", "{\"a\": 4}",
     "arguments.a fails a schema of allOf: arguments.a is 4, outside maximum 3"},
    {"{\"properties\": {\"a\": {\"title\": \"A\", \"description\": \"d\", \"default\": 1, \"format\": \"date\", "
     "\"examples\": [2]}}}",
     "{\"a\": \"not a date\"}", ""}, /* annotations are not checked */
};

static void
test_check (void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const case_t *c = &cases[i];
        json_t *schema = c->schema ? json_loads (c->schema, 0, NULL) : NULL;
        json_t *arguments = json_loads (c->arguments, 0, NULL);
        char problem[512] = "";
        CHECK (!c->schema || gw_schema_supported (schema, "parameters", problem, sizeof problem));
        bool ok = gw_schema_check_arguments (schema, arguments, problem, sizeof problem);
        bool expected = !*c->problem;
        if (ok != expected || (!ok && strncmp (problem, c->problem, strlen (c->problem)) != 0)) {
            fprintf (stderr, "case %zu (%s on %s): got %s '%s', expected '%s'\n", i, c->arguments,
                     c->schema ? c->schema : "no parameters", ok ? "pass" : "fail", problem, c->problem);
            failures++;
        }
        json_decref (schema);
        json_decref (arguments);
    }
    char problem[64];
    json_t *deep = json_loads ("{\"properties\": {\"a\": {\"type\": \"integer\"}}}", 0, NULL);
    CHECK (!gw_schema_check_arguments (deep, NULL, problem, sizeof problem));
    CHECK (streq (problem, "arguments must be an object, not absent"));
    json_decref (deep);
}

/* A declaration with parameters p: NULL when accepted, else the problem. */
static char *
declaration_problem (const char *parameters)
{
    char *text = NULL;
    if (asprintf (&text, "[{\"name\": \"t\", \"parameters\": %s}]", parameters) < 0)
        return strdup ("asprintf");
    json_t *tools = json_loads (text, 0, NULL);
    free (text);
    char *errmsg = NULL;
    json_t *checked = gw_tools_validate (tools, &errmsg);
    json_decref (checked);
    json_decref (tools);
    return errmsg;
}

static void
expect_refused (const char *parameters, const char *problem)
{
    char *got = declaration_problem (parameters);
    if (!got || !strstr (got, problem)) {
        fprintf (stderr, "declaration %s: got '%s', expected '%s'\n", parameters, got ? got : "accepted", problem);
        failures++;
    }
    free (got);
}

static void
test_declarations (void)
{
    char *accepted = declaration_problem (ORDER);
    CHECK (!accepted);
    free (accepted);
    expect_refused ("{\"properties\": {\"a\": {\"pattern\": \"x\"}}}",
                    "tool 't': parameters.properties.a: keyword 'pattern' is not supported");
    expect_refused ("{\"properties\": {\"a\": {\"$ref\": \"#/a\"}}}", "keyword '$ref' is not supported");
    expect_refused ("{\"if\": {}}", "parameters: keyword 'if' is not supported");
    expect_refused ("{\"properties\": {\"a\": {\"items\": [{}]}}}",
                    "parameters.properties.a.items: a list of schemas (tuple form) is not supported");
    expect_refused ("{\"properties\": {\"a\": {\"items\": {\"patternProperties\": {}}}}}",
                    "parameters.properties.a.items: keyword 'patternProperties' is not supported");
    expect_refused ("{\"properties\": {\"a\": {\"anyOf\": []}}}",
                    "parameters.properties.a.anyOf must be a non-empty list of JSON Schemas");
    expect_refused ("{\"properties\": {\"a\": {\"oneOf\": [{}, {\"not\": {}}]}}}",
                    "parameters.properties.a.oneOf[1]: keyword 'not' is not supported");
    expect_refused ("{\"properties\": {\"a\": {\"type\": [\"string\", \"text\"]}}}",
                    "parameters.properties.a.type must be one of");
    expect_refused ("{\"properties\": {\"a\": {\"type\": []}}}", "parameters.properties.a.type must be one of");
    expect_refused ("{\"properties\": {\"a\": {\"minItems\": 1.5}}}",
                    "parameters.properties.a.minItems must be a non-negative integer");
    expect_refused ("{\"properties\": {\"a\": {\"maximum\": \"3\"}}}", "parameters.properties.a.maximum must be a number");
    expect_refused ("{\"properties\": {\"a\": {\"enum\": \"x\"}}}", "parameters.properties.a.enum must be a list");
    expect_refused ("{\"properties\": {\"a\": 1}}", "parameters.properties['a'] must be a JSON Schema");
    expect_refused ("{\"required\": \"a\"}", "parameters.required must be a list of property names");
    expect_refused ("{\"type\": \"array\"}", "parameters must be a JSON Schema of type \"object\"");
    /* nesting: 32 levels of properties are fine, 33 are refused */
    for (int levels = 32; levels <= 33; levels++) {
        char text[4096] = "{\"type\": \"object\"}";
        for (int i = 0; i < levels; i++) {
            char outer[4096];
            snprintf (outer, sizeof outer, "{\"properties\": {\"a\": %s}}", text);
            memcpy (text, outer, sizeof text);
        }
        char *got = declaration_problem (text);
        CHECK (levels == 32 ? !got : got && strstr (got, "nested deeper than 32 levels"));
        free (got);
    }
}

int
main (void)
{
    test_check ();
    test_declarations ();
    printf ("gw_schema_test: %s (%d failures)\n", failures ? "FAILED" : "OK", failures);
    return failures ? 1 : 0;
}
