/*  wire_test.c - runs libwire's self-tests (make check, under ASan/UBSan),
    then the allocation policy in child processes: out of memory, in
    wire_xmalloc or inside jansson after wire_alloc_json, ends the process
    with "kennel: out of memory" and SIGABRT, never a NULL to dereference. */
#include "wire.h"
#include "oom_check.h"

/* The child's side: allocate what cannot be had. Returns only when the
   allocation was survived, which is the failure. */
static int
oom_child (const char *what)
{
    wire_alloc_json ();
    if (streq (what, "malloc"))
        printf ("%p\n", wire_xmalloc (OOM_SIZE));
    else
        printf ("%p\n", (void *) json_stringn_nocheck ("x", OOM_SIZE));
    return 0;
}

int
main (int argc, char *argv[])
{
    if (argc == 3 && streq (argv[1], "--oom-child"))
        return oom_child (argv[2]);
    bool verbose = argc > 1 && (strcmp (argv[1], "-v") == 0 || strcmp (argv[1], "--verbose") == 0);
    /* Always verbose under make check, so the log shows each class. */
    if (getenv ("KENNEL_BUILDDIR"))
        verbose = true;
    int failures = wire_selftest (verbose);
    failures += oom_check ("malloc");
    failures += oom_check ("jansson");
    return failures ? 1 : 0;
}
