/*  fuzz_check.h - invariants shared by the gateway's fuzz targets: each
    traps (__builtin_trap) when its property does not hold.
*/
#ifndef FUZZ_CHECK_H_INCLUDED
#define FUZZ_CHECK_H_INCLUDED

#include <jansson.h>

/* A policy (as gw_policy_to_json gives it) never above maxima (the same
   form): every numeric limit in its range, "unlimited" only where the
   maximum is too and the field permits it, network "loopback" only under
   a maximum "loopback". Also checks the policy's own ranges when maxima is
   the policy itself. */
void fuzz_check_policy (const json_t *policy, const json_t *maxima);

#endif
