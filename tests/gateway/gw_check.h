/*  gw_check.h - CHECK for the gateway's C self-tests: a failed condition
    prints its file, line and text and counts in `failures`, the test goes on.
    Each test program includes it once. */
#ifndef GW_CHECK_H_INCLUDED
#define GW_CHECK_H_INCLUDED

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                                                                \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            fprintf (stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                              \
            failures++;                                                                                            \
        }                                                                                                          \
    } while (0)

#endif
