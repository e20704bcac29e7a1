/*  wire_alloc.c - allocation that cannot fail: out of memory aborts.

    The policy (README.md, "Allocation"): the gateway cannot do anything
    meaningful without memory, so, as bubblewrap's xmalloc and czmq's
    zmalloc do, running out of it ends the process with one line on stderr
    and abort(). Sizes that come from a peer are bounded before anything is
    allocated for them; that check refuses the input, this one never sees it.

    The message is written with write(2), not stdio, so these functions are
    as safe after fork() as the allocation they wrap.
*/
#include "wire_private.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void
wire_alloc_fail (void)
{
    static const char msg[] = "kennel: out of memory\n";
    ssize_t rc = write (STDERR_FILENO, msg, sizeof msg - 1);
    (void) rc;                  /* nothing better to do: we abort either way */
    abort ();
}

void *
wire_xmalloc (size_t size)
{
    void *mem = malloc (size ? size : 1);
    if (!mem)
        wire_alloc_fail ();
    return mem;
}

void *
wire_xcalloc (size_t n, size_t size)
{
    void *mem = calloc (n ? n : 1, size ? size : 1);
    if (!mem)
        wire_alloc_fail ();
    return mem;
}

void *
wire_xreallocarray (void *ptr, size_t n, size_t size)
{
    void *mem = reallocarray (ptr, n ? n : 1, size ? size : 1);
    if (!mem)
        wire_alloc_fail ();
    return mem;
}

char *
wire_xstrdup (const char *s)
{
    char *copy = strdup (s);
    if (!copy)
        wire_alloc_fail ();
    return copy;
}

char *
wire_xstrndup (const char *s, size_t n)
{
    char *copy = strndup (s, n);
    if (!copy)
        wire_alloc_fail ();
    return copy;
}

char *
wire_xasprintf (const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    char *text = NULL;
    int rc = vasprintf (&text, fmt, args);
    va_end (args);
    if (rc < 0)
        wire_alloc_fail ();
    return text;
}

void
wire_alloc_json (void)
{
    json_set_alloc_funcs (wire_xmalloc, free);
}

int
wire_alloc_test (bool verbose)
{
    int failures = 0;
    if (verbose)
        printf (" * wire_alloc: ");
    char *s = wire_xasprintf ("%s-%d", "ipc", 7);
    WIRE_CHECK (streq (s, "ipc-7"));
    char *t = wire_xstrndup (s, 3);
    WIRE_CHECK (streq (t, "ipc"));
    int *v = wire_xcalloc (4, sizeof *v);
    WIRE_CHECK (v[3] == 0);
    v = wire_xreallocarray (v, 1000, sizeof *v);
    v[999] = 1;
    WIRE_CHECK (v[0] == 0 && v[999] == 1);
    free (s);
    free (t);
    free (v);
    if (verbose)
        printf ("%s\n", failures ? "FAILED" : "OK");
    return failures;
}
