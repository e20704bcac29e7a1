/*  pykernel_test.c - runs libpykernel's C self-tests (utf8, iopub, output, beat).
    The kernel as a whole is tested through real processes in tests/kernel/. */
#include "pykernel_internal.h"

#include <string.h>

int
main (int argc, char *argv[])
{
    bool verbose = argc > 1 && strcmp (argv[1], "-v") == 0;
    zsys_handler_set (NULL);
    int failures = pykernel_selftest (verbose);
    return failures ? 1 : 0;
}
