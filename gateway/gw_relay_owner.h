/*  gw_relay_owner.h - what a relay (gw_relay.h) asks of the conversation
    that owns it: the functions the conversation hands it, so that the
    relay's family reaches the conversation only through them, never by
    name (gw_conv.c calls the relay, never the other way). A header of
    types only: the conversation fills the table, the relay's files call it.
*/
#ifndef GW_RELAY_OWNER_H_INCLUDED
#define GW_RELAY_OWNER_H_INCLUDED

#include "gw_config.h"
#include "gw_front.h"
#include <jansson.h>
#include <stdbool.h>

typedef struct gw_launch gw_launch_t; /* gw_launch.h */

/* What the relay asks of the conversation that owns it; each is called
   with that conversation. */
typedef struct gw_relay_owner {
    const char *(*id) (const gw_conv_t *conv);
    /* The config the conversation was opened under. */
    const gw_config_t *(*config) (const gw_conv_t *conv);
    const gw_policy_t *(*policy) (const gw_conv_t *conv);
    const char *(*workspace) (const gw_conv_t *conv);
    /* The declared tool named name, or NULL. */
    const json_t *(*tool) (const gw_conv_t *conv, const char *name);
    /* The running kernel's launch, or NULL. */
    gw_launch_t *(*launch) (gw_conv_t *conv);
    /* The kernel is gone (dead and not yet restarted). */
    bool (*kernel_dead) (const gw_conv_t *conv);
    /* A fresh kernel for a request that arrived while none runs. */
    void (*kernel_start) (gw_conv_t *conv);
    /* The relay's handshake with a fresh kernel succeeded. */
    void (*kernel_ready) (gw_conv_t *conv);
    /* Kills the kernel now; its death is reported as the given cause. */
    void (*kill_kernel) (gw_conv_t *conv, const char *ename, const char *cause);
    /* A client's message went through: the conversation is not idle. */
    void (*touch) (gw_conv_t *conv);
    /* interrupt_request: SIGINT to the kernel, 0, or -1 when none runs. */
    int (*interrupt) (gw_conv_t *conv);
    /* shutdown_request restart:true. */
    void (*restart) (gw_conv_t *conv, const char *reason);
    /* shutdown_request restart:false: close after the reply went out. */
    void (*request_close) (gw_conv_t *conv);
} gw_relay_owner_t;

#endif
