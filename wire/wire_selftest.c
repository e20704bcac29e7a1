/*  wire_selftest.c - runs every libwire class self-test. */
#include "wire_private.h"

int
wire_selftest (bool verbose)
{
    int failures = 0;
    failures += wire_alloc_test (verbose);
    failures += wire_error_test (verbose);
    failures += wire_key_test (verbose);
    failures += wire_replay_test (verbose);
    failures += wire_json_test (verbose);
    failures += wire_header_test (verbose);
    failures += wire_frames_test (verbose);
    failures += wire_msg_test (verbose);
    failures += wire_connection_test (verbose);
    if (verbose)
        printf ("libwire self-test: %d failed check(s)\n", failures);
    return failures ? 1 : 0;
}
