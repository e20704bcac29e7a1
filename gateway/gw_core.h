/*  gw_core.h - the core: the conversation table, which it alone holds,
    and what every front and ops file calls to open, find, close,
    restart, interrupt, count, list and visit conversations.

    One core serves all fronts (the control socket, HTTP, MCP); no front
    inserts into its table, removes from it or walks it itself. A
    conversation is found by its conversation_id or by its kernel id (a
    UUID the core gives it). The server makes the core and hands it the
    services its conversations use (gw_server_access.h).
*/
#ifndef GW_CORE_H_INCLUDED
#define GW_CORE_H_INCLUDED

#include "gw_config.h"
#include "gw_conv.h"

typedef struct gw_core gw_core_t;

/* An empty table on server's services. */
gw_core_t *gw_core_new (gw_server_t *server);
/* Closes every conversation ("shutdown"), then the table. */
void gw_core_destroy (gw_core_t **self_p);

/* Why an open was refused: ename (static text) and evalue (malloc'd). */
typedef struct {
    const char *ename;
    char *evalue;
} gw_core_error_t;

/* A front that must be in place before a new conversation's kernel starts
   (the ZeroMQ front: its sockets' addresses go in the open reply) attaches
   here: 0, or -1 with *errmsg (malloc'd) to refuse the open. */
typedef int (gw_core_attach_fn) (gw_conv_t *conv, void *arg, char **errmsg);

/* The conversation id (valid: gw_conv_id_valid) opened as request asks
   ({kernel, kernelspec, tools, policy}; NULL: the defaults; a kernelspec
   of the config gives the kernel and the policy to start from), with attach (may be NULL)
   called before its kernel starts, *created true; or the open one of that
   id, *created false, its tools replaced by request's when it has some.
   NULL with *err (evalue to free) when refused. */
gw_conv_t *gw_core_open (gw_core_t *self, const char *id, const json_t *request, gw_core_attach_fn *attach,
                         void *arg, bool *created, gw_core_error_t *err);
/* A conversation of a checked kernel, tools and policy (also kernelspec
   mode, the selftest); pooled: it may take a warm-pool kernel. NULL +
   *errmsg. */
gw_conv_t *gw_core_open_checked (gw_core_t *self, const char *id, const char *kernel, json_t *tools,
                                 const gw_policy_t *policy, bool pooled, gw_core_attach_fn *attach, void *arg,
                                 char **errmsg);
gw_conv_t *gw_core_find (gw_core_t *self, const char *id);
gw_conv_t *gw_core_find_kernel (gw_core_t *self, const char *kernel_id);
int gw_core_count (const gw_core_t *self);
/* fn on every conversation, in the table's order; fn neither opens nor
   closes one. */
typedef void (gw_core_visit_fn) (gw_conv_t *conv, void *arg);
void gw_core_visit (gw_core_t *self, gw_core_visit_fn *fn, void *arg);
/* Closes ("idle") every conversation idle past its idle_timeout at now. */
void gw_core_close_idle (gw_core_t *self, double now);
/* Closes a conversation (every execution answered ConversationClosed, the
   peers told) and removes it from the table; nothing when id is unknown. */
void gw_core_close (gw_core_t *self, const char *id, bool keep_workspace, const char *why);
/* The same, from the loop's next turn: safe inside a handler or a front's
   callback of that conversation. */
void gw_core_close_later (gw_core_t *self, const char *id, const char *why);
/* Kills the kernel (if any) and starts a fresh one; state "lost". NULL
   once restarted, else why not (static text): during a drain no kernel
   starts, a fresh one would only be killed at the stop. */
GW_MUST_CHECK const char *gw_core_restart (gw_conv_t *conv, const char *reason);

/* SIGINT to the running kernel: 0, or -1 when no kernel runs. */
int gw_core_interrupt (gw_conv_t *conv);
/* Every conversation's list entry, an array. */
json_t *gw_core_list (gw_core_t *self);

#endif
