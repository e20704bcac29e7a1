/*  alloc.c - allocation that cannot fail: out of memory aborts.

    The policy (README.md, "Allocation"): the launcher cannot confine
    anything without memory, and a half-built policy must never run code, so
    running out of it ends the process with one line on stderr and abort(),
    as bubblewrap's xmalloc does. libwire has the same set for the gateway
    (wire_xmalloc); the two libraries do not link each other (kennel-launch
    links only libconfine), so each has its own.

    The message is written with write(2), not stdio: these run in the
    sandbox's child between clone() and exec too.
*/
#include "private.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void
confine_alloc_fail (void)
{
    static const char msg[] = "kennel: out of memory\n";
    ssize_t rc = write (STDERR_FILENO, msg, sizeof msg - 1);
    (void) rc;                  /* nothing better to do: we abort either way */
    abort ();
}

void *
confine_xmalloc (size_t size)
{
    void *mem = malloc (size ? size : 1);
    if (!mem)
        confine_alloc_fail ();
    return mem;
}

void *
confine_xcalloc (size_t n, size_t size)
{
    void *mem = calloc (n ? n : 1, size ? size : 1);
    if (!mem)
        confine_alloc_fail ();
    return mem;
}

void *
confine_xreallocarray (void *ptr, size_t n, size_t size)
{
    void *mem = reallocarray (ptr, n ? n : 1, size ? size : 1);
    if (!mem)
        confine_alloc_fail ();
    return mem;
}

char *
confine_xstrdup (const char *s)
{
    char *copy = strdup (s);
    if (!copy)
        confine_alloc_fail ();
    return copy;
}

void
confine_alloc_json (void)
{
    json_set_alloc_funcs (confine_xmalloc, free);
}
