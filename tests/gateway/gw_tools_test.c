/*  gw_tools_test.c - the gateway's side of the one rule for tool
    declarations (make check): every case of tests/fixtures/
    tool_declarations.json through gw_tools_validate. The kernel's side runs
    the same file (tests/kernel/test_tool_rule.py).

    A good case must be accepted with its names in order; a bad one refused
    with an error that holds the case's substring and is valid UTF-8 (it
    travels in a JSON reply: a message jansson cannot encode is no reply).
    The fixture is read from argv[1], else $KENNEL_SRCDIR/tests/fixtures/,
    decoded as control requests are (NUL allowed in strings).

    Exit 0 when every case passed; each failure prints one line.
*/
#include "gateway/gw_tools.h"
#include "tests/gateway/gw_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURE "tests/fixtures/tool_declarations.json"

static json_t *
fixture_load (int argc, char **argv)
{
    char *path = NULL;
    const char *srcdir = getenv ("KENNEL_SRCDIR");
    if (argc > 1)
        path = strdup (argv[1]);
    else if (asprintf (&path, "%s/%s", srcdir ? srcdir : ".", FIXTURE) < 0)
        path = NULL;
    json_error_t jerr;
    json_t *fixture = path ? json_load_file (path, JSON_ALLOW_NUL, &jerr) : NULL;
    if (!fixture)
        fprintf (stderr, "gw_tools_test: cannot read %s: %s\n", path ? path : FIXTURE, path ? jerr.text : "asprintf");
    free (path);
    return fixture;
}

/* Whether the checked list names exactly names, in order. */
static bool
names_match (const json_t *checked, const json_t *names)
{
    if (json_array_size (checked) != json_array_size (names))
        return false;
    size_t i;
    json_t *name;
    json_array_foreach (names, i, name)
        if (!json_equal (json_object_get (json_array_get (checked, i), "name"), name))
            return false;
    return true;
}

static void
case_run (const json_t *c)
{
    const char *why = json_string_value (json_object_get (c, "case"));
    const char *error = json_string_value (json_object_get (c, "error"));
    char *errmsg = NULL;
    json_t *checked = gw_tools_validate (json_object_get (c, "tools"), &errmsg);
    json_t *encoded = errmsg ? json_string (errmsg) : NULL;
    bool ok = error ? !checked && errmsg && strstr (errmsg, error) && encoded
                    : checked && !errmsg && names_match (checked, json_object_get (c, "names"));
    if (!ok) {
        fprintf (stderr, "case '%s': got %s%s%s, expected %s '%s'\n", why, checked ? "accepted" : "refused: ",
                 errmsg ? errmsg : "", errmsg && !encoded ? " (not valid UTF-8)" : "",
                 error ? "refused:" : "accepted", error ? error : "");
        failures++;
    }
    json_decref (encoded);
    json_decref (checked);
    free (errmsg);
}

int
main (int argc, char **argv)
{
    json_t *fixture = fixture_load (argc, argv);
    json_t *cases = json_object_get (fixture, "cases");
    CHECK (json_array_size (cases) > 0);
    size_t i;
    json_t *c;
    json_array_foreach (cases, i, c)
        case_run (c);
    printf ("gw_tools_test: %s (%zu cases, %d failures)\n", failures ? "FAILED" : "OK", json_array_size (cases),
            failures);
    json_decref (fixture);
    return failures ? 1 : 0;
}
