/*  wire_test.c - runs libwire's self-tests (make check, under ASan/UBSan). */
#include "wire.h"
#include <string.h>

int
main (int argc, char *argv[])
{
    bool verbose = argc > 1 && (strcmp (argv[1], "-v") == 0 || strcmp (argv[1], "--verbose") == 0);
    /* Always verbose under make check, so the log shows each class. */
    if (getenv ("KENNEL_BUILDDIR"))
        verbose = true;
    return wire_selftest (verbose);
}
