/*  mcp_sessions_test.c - self-test of the MCP session table (make check):

    mcp_sessions  ids are 32 hex characters and distinct, each with a
                  default conversation id of its own that does not carry the
                  session id; an id never added, or removed, is not found;
                  the table refuses past its maximum, and the oldest is the
                  one used least recently (a find counts as a use).

    Exit 0 when every check passed; each failure prints one line.
*/
#include "gateway/mcp/mcp.h"
#include "tests/gateway/gw_check.h"

#include <string.h>

int
main (void)
{
    mcp_sessions_t *t = mcp_sessions_new (3);
    char a[64], b[64], c[64];
    snprintf (a, sizeof a, "%s", mcp_sessions_add (t));
    snprintf (b, sizeof b, "%s", mcp_sessions_add (t));
    CHECK (strlen (a) == 32 && strspn (a, "0123456789abcdef") == 32);
    CHECK (!streq (a, b));
    const char *conv_a = mcp_sessions_find (t, a);
    const char *conv_b = mcp_sessions_find (t, b);
    CHECK (conv_a && conv_b && !streq (conv_a, conv_b));
    CHECK (conv_a && !strstr (conv_a, a) && strncmp (conv_a, "mcp-", 4) == 0);
    CHECK (mcp_sessions_find (t, "my-session") == NULL);
    CHECK (mcp_sessions_find (t, NULL) == NULL);
    snprintf (c, sizeof c, "%s", mcp_sessions_add (t));
    CHECK (mcp_sessions_size (t) == 3);
    CHECK (mcp_sessions_add (t) == NULL); /* full */
    CHECK (streq (mcp_sessions_oldest (t), a));
    mcp_sessions_find (t, a); /* used: b is now the oldest */
    CHECK (streq (mcp_sessions_oldest (t), b));
    mcp_sessions_remove (t, mcp_sessions_oldest (t));
    CHECK (mcp_sessions_find (t, b) == NULL);
    CHECK (mcp_sessions_size (t) == 2);
    CHECK (mcp_sessions_add (t) != NULL);
    mcp_sessions_remove (t, "never added");
    CHECK (mcp_sessions_size (t) == 3);
    mcp_sessions_destroy (&t);
    CHECK (t == NULL);
    printf ("mcp_sessions_test: %s (%d failures)\n", failures ? "FAILED" : "OK", failures);
    return failures ? 1 : 0;
}
