/*  fuzz_gateway.h - a gateway built by hand, for the targets that drive a
    front's real handler (gw_control_fuzz.c: the control socket;
    gw_http_fuzz.c: the HTTP front's routes).

    The gateway holds the real conversation table (gw_core.c), config,
    policy lowering, tool checks, capacity, log and epoll set. Only the
    conversation layer below the table is replaced (fuzz_gateway.c defines
    its functions), so no kernel starts: a conversation is a record of its
    id, tools and policy with real peers (gw_peers.c: what a front attached
    hears the conversation close), its kernel ready at once or failing as
    asked, its workspace one of fuzz_tree's. What the layer is given is
    checked, trapping otherwise: an id accepted is [A-Za-z0-9._-]{1,128}
    and not "." or ".." (checked here without gw_conv_id_valid), the kernel
    is known, the tools check again to themselves, the policy is within
    the maxima (fuzz_check.h).
*/
#ifndef FUZZ_GATEWAY_H_INCLUDED
#define FUZZ_GATEWAY_H_INCLUDED

#include "gateway/gw_server_access.h"
#include "fuzz_tree.h"

#include <jansson.h>
#include <stdbool.h>

typedef struct {
    gw_server_t *server;
    fuzz_tree_t *tree;
    json_t *maxima;           /* the config's, as gateway_info shows them */
    bool start_fails;         /* kernels fail to start (KernelStartFailed) */
    bool new_fails;           /* making a conversation fails (OpenFailed) */
    fuzz_tree_ws_t workspace; /* every conversation's */
} fuzz_gateway_t;

/* The gateway of config_text (JSON; traps when it does not load), made once
   a process, before any thread (fuzz_tree_new may enter a user
   namespace); everything is freed at exit. */
fuzz_gateway_t *fuzz_gateway_new (const char *config_text);
/* A conversation of id with the defaults' policy, in the table. */
void fuzz_gateway_open (fuzz_gateway_t *self, const char *id);
/* Every conversation closed as gw_core_close closes one (its peers told). */
void fuzz_gateway_empty (fuzz_gateway_t *self);
/* Runs the timer gw_core_close_later started (one a request at most). */
void fuzz_gateway_run_timer (fuzz_gateway_t *self);
/* [A-Za-z0-9._-]{1,128}, not "." or "..". */
bool fuzz_gateway_id_ok (const char *id);

#endif
