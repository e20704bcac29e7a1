/*  http_kernel.c - kernels as the HTTP front sees them: the core's
    conversations, found by their kernel id (a UUID the core gives each
    conversation, whichever front opened it), their model, and requests
    that wait for a kernel to be ready.

    gw_conv_when_ready cannot be withdrawn, and the HTTP connection that
    asked may be gone when it calls: a wait is a record of the front's that
    the connection cancels when it goes, and that the front orphans when it
    stops (gw_server_destroy still answers waiters after the front is gone).
*/
#include "http.h"

#include <string.h>

struct http_wait {
    http_front_t *front; /* NULL once cancelled or orphaned */
    http_wait_t **slot;  /* the request's pointer to this wait, cleared when it ends */
    http_wait_fn *fn;
    void *arg;
    void (*free_fn) (void *);
};

gw_conv_t *
http_kernel_conv (http_front_t *front, const char *kernel_id)
{
    return gw_core_find_kernel (front->core, kernel_id);
}

const char *
http_kernel_spec_name (const char *kernel)
{
    return streq (kernel, "python") ? "python3" : kernel;
}

static int
connections_of (http_front_t *front, gw_conv_t *conv)
{
    int n = 0;
    for (ws_conn_t *ws = zlistx_first (front->websockets); ws; ws = zlistx_next (front->websockets))
        n += ws_conn_conv (ws) == conv;
    return n;
}

json_t *
http_kernel_model (http_front_t *front, gw_conv_t *conv)
{
    json_t *entry = gw_conv_list_entry (conv);
    /* the kernelspec it was opened with; a conversation opened over ZeroMQ by kernel */
    const char *spec = json_string_value (json_object_get (entry, "kernelspec"));
    json_t *model = json_pack ("{s:s, s:s, s:O, s:O, s:i, s:{s:O}}", "id", gw_conv_kernel_id (conv), "name",
                               spec ? spec : http_kernel_spec_name (json_string_value (json_object_get (entry, "kernel"))),
                               "last_activity", json_object_get (entry, "last_activity"), "execution_state",
                               json_object_get (entry, "state"), "connections", connections_of (front, conv),
                               "kennel", "conversation_id", json_object_get (entry, "conversation_id"));
    json_decref (entry);
    return model;
}

/* ---- waiting for a kernel --------------------------------------------- */

static void
wait_free (http_wait_t *w)
{
    if (w->free_fn)
        w->free_fn (w->arg);
    free (w);
}

static void
on_ready (gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    http_wait_t *w = arg;
    if (w->front) {
        http_front_t *front = w->front;
        void *handle = zlistx_find (front->waits, w);
        if (handle)
            zlistx_delete (front->waits, handle);
        if (w->slot)
            *w->slot = NULL;
        w->fn (front, conv, ok, errmsg, w->arg);
        /* the answer is written on the loop's next turn: this runs inside
           the core (the kernel's readiness, a close), where a libuv pass
           could serve a DELETE that frees the conversation being notified */
        http_loop_run_soon (front->uv);
    }
    wait_free (w);
}

void
http_wait (http_front_t *front, gw_conv_t *conv, http_wait_fn *fn, void *arg, void (*free_fn) (void *),
           http_wait_t **slot)
{
    http_wait_t *w = wire_xcalloc (1, sizeof *w);
    w->front = front;
    w->fn = fn;
    w->arg = arg;
    w->free_fn = free_fn;
    w->slot = slot;
    *slot = w;
    zlistx_add_end (front->waits, w);
    gw_conv_when_ready (conv, on_ready, w); /* may answer at once: a kernel ready already */
}

void
http_wait_cancel (http_wait_t *w)
{
    if (!w || !w->front)
        return;
    void *handle = zlistx_find (w->front->waits, w);
    if (handle)
        zlistx_delete (w->front->waits, handle);
    if (w->slot)
        *w->slot = NULL;
    w->slot = NULL;
    w->front = NULL;
}

void
http_wait_forget_all (http_front_t *front)
{
    http_wait_t *w;
    while ((w = zlistx_detach (front->waits, NULL))) {
        w->front = NULL;
        w->slot = NULL;
    }
}
