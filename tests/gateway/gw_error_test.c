/*  gw_error_test.c - the error table (gw_error.c) on its own (make check):
    every row filled, names unique and one CamelCase word, lookup by name
    the inverse of gw_error_name, statuses an HTTP status or none, and the
    HTTP front's statuses for the names it answers (gateway/http/README.md).
    tests/error_table.py checks the same rows against docs/PROTOCOL.md.

    Exit 0 when every check passed; each failure prints one line.
*/
#include "gateway/gw_error.h"
#include "tests/gateway/gw_check.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static bool
camel_case (const char *name)
{
    if (!isupper ((unsigned char) name[0]))
        return false;
    for (const char *p = name; *p; p++)
        if (!isalpha ((unsigned char) *p))
            return false;
    return true;
}

static void
check_rows (void)
{
    for (int i = 0; i < GW_E_COUNT; i++) {
        const char *name = gw_error_name ((gw_error_t) i);
        const char *text = gw_error_text ((gw_error_t) i);
        int status = gw_error_status ((gw_error_t) i);
        if (!name || !text) {
            fprintf (stderr, "gw_error_test: row %d has no %s\n", i, name ? "text" : "name");
            failures++;
            continue;
        }
        CHECK (camel_case (name));
        CHECK (*text && !strchr (text, '\n'));
        CHECK (strncmp (text, name, strlen (name)) != 0); /* a text says what, the name is beside it */
        CHECK (status == 0 || (status >= 400 && status <= 599));
        gw_error_t found;
        CHECK (gw_error_lookup (name, &found) && found == (gw_error_t) i);
        for (int j = 0; j < i; j++)
            CHECK (!gw_error_name ((gw_error_t) j) || strcmp (gw_error_name ((gw_error_t) j), name) != 0);
    }
}

static void
check_lookup (void)
{
    gw_error_t found = GW_E_COUNT;
    CHECK (!gw_error_lookup ("NoSuchThing", &found) && found == GW_E_COUNT);
    CHECK (!gw_error_lookup (NULL, &found));
    CHECK (!gw_error_lookup ("nosuchconversation", &found));
    CHECK (gw_error_lookup ("NoSuchConversation", &found) && found == GW_E_NO_SUCH_CONVERSATION);
}

/* The statuses the HTTP front answers with, each name once. */
static void
check_http_statuses (void)
{
    static const struct {
        const char *name;
        int status;
    } expected[] = {
        {"NoSuchFile", 404},          {"NoSuchConversation", 404},  {"NoSuchCheckpoint", 404},
        {"SymlinkRefused", 403},      {"HardlinkRefused", 403},     {"NotARegularFile", 403},
        {"PermissionDenied", 403},    {"IsADirectory", 400},        {"NotADirectory", 400},
        {"DirectoryNotEmpty", 409},   {"FileExists", 409},          {"WorkspaceFull", 507},
        {"FileApiUnavailable", 503},  {"FileError", 500},           {"TooLarge", 413},
        {"InvalidPath", 400},         {"InvalidRequest", 400},      {"InvalidOffset", 400},
        {"UnreadableNotebook", 400},  {"TooManyConversations", 403}, {"CapacityError", 403},
        {"ConfinementUnavailable", 503}, {"GatewayDraining", 503},  {"KernelStartFailed", 500},
        {"OpenFailed", 500},          {"InvalidConversationId", 400}, {"InvalidTools", 400},
        {"UnknownKernel", 400},       {"PolicyError", 400},         {"TooManySessions", 403},
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (gw_error_http_status (expected[i].name) != expected[i].status) {
            fprintf (stderr, "gw_error_test: %s answers HTTP %d, not %d\n", expected[i].name,
                     gw_error_http_status (expected[i].name), expected[i].status);
            failures++;
        }
    CHECK (gw_error_http_status ("NoSuchThing") == 400);
    CHECK (gw_error_http_status ("ToolBusy") == 400); /* no status of its own: the default */
    CHECK (gw_error_status (GW_E_TOOL_BUSY) == 0);
}

int
main (void)
{
    check_rows ();
    check_lookup ();
    check_http_statuses ();
    CHECK (strncmp (gw_error_text (GW_E_GATEWAY_DRAINING), GW_DRAINING, strlen (GW_DRAINING)) == 0);
    CHECK (strcmp (gw_error_text (GW_E_FILE_ERROR), GW_FILES_ERROR_UNSAID) == 0);
    if (failures)
        fprintf (stderr, "gw_error_test: %d failed\n", failures);
    return failures ? 1 : 0;
}
