/*  http_loop.c - libwebsockets' event library (libuv) inside the gateway's
    one zloop: no second thread, no second loop to wait in.

    Debian's libwebsockets is built without external-poll callbacks, so the
    front gives it a libuv loop as a "foreign loop" and embeds that loop in
    zloop the way libuv documents: its backend (an epoll fd) sits in the
    gateway's epoll set (gw_io), and when it is readable, or libuv's next timer is
    due, uv_run(UV_RUN_NOWAIT) runs what is ready. A timer on zloop follows
    libuv's next deadline (uv_backend_timeout).
*/
#include "http.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <uv.h>

#define RUN_MAX 8         /* passes per wake-up while libuv still has work due now */
#define CLOSE_PASSES 100  /* at most this many passes to let lws close its handles */

struct http_loop {
    zloop_t *loop;
    gw_io_t *io;
    uv_loop_t uv;
    zmq_pollitem_t item;
    int timer;
    int timer_ms; /* the delay the timer was started with, -1 when none */
    bool running; /* inside uv_run: libuv may not be entered again */
    unsigned long activity; /* lws callbacks so far (http_loop_note) */
};

static int on_timer (zloop_t *loop, int timer_id, void *arg);

/* zloop's timers have a fixed delay: re-armed only when libuv's next
   deadline moved. */
static void
timer_follow (http_loop_t *self)
{
    int ms = uv_backend_timeout (&self->uv);
    if (ms < 0)
        ms = 1000; /* nothing due: a slow tick keeps lws's own housekeeping going */
    if (ms == 0)
        ms = 1;
    if (self->timer && ms == self->timer_ms)
        return;
    if (self->timer)
        gw_timer_end (self->loop, self->timer);
    self->timer = gw_timer_start (self->loop, (size_t) ms, 0, on_timer, self);
    self->timer_ms = ms;
}

void
http_loop_note (http_loop_t *self)
{
    self->activity++;
}

/* libuv applies a watcher change (lws asking for POLLOUT) only in its next
   poll, inside uv_run: the front calls this after anything that may have
   made one, and a pass whose callbacks may have made one is followed by
   another (bounded), so a write asked for in a callback is not left until
   libuv's next wake-up. */
void
http_loop_run (http_loop_t *self)
{
    if (self->running)
        return;
    self->running = true;
    for (int i = 0; i < RUN_MAX; i++) {
        unsigned long before = self->activity;
        if (!uv_run (&self->uv, UV_RUN_NOWAIT))
            break;
        if (self->activity == before && uv_backend_timeout (&self->uv) != 0)
            break;
    }
    self->running = false;
    timer_follow (self);
}

void
http_loop_run_soon (http_loop_t *self)
{
    if (self->timer && self->timer_ms == 0)
        return;
    if (self->timer)
        gw_timer_end (self->loop, self->timer);
    /* zloop runs a due timer on its next turn; the pass re-arms it for libuv's deadline */
    self->timer = gw_timer_start (self->loop, 0, 0, on_timer, self);
    self->timer_ms = 0;
}

static int
on_timer (zloop_t *loop, int timer_id, void *arg)
{
    http_loop_run (arg);
    return 0;
}

static int
on_ready (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    http_loop_run (arg);
    return 0;
}

http_loop_t *
http_loop_new (zloop_t *loop)
{
    http_loop_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->timer_ms = -1;
    int rc = uv_loop_init (&self->uv);
    if (rc != 0) {
        free (self);
        errno = -rc; /* libuv's errors are negated errnos */
        return NULL;
    }
    self->item.fd = uv_backend_fd (&self->uv);
    self->item.events = ZMQ_POLLIN;
    self->io = gw_io_of (loop);
    if (gw_io_poller (self->io, &self->item, on_ready, self) < 0) {
        int saved = errno;
        uv_loop_close (&self->uv);
        free (self);
        errno = saved;
        return NULL;
    }
    return self;
}

#if defined(LWS_WITH_EVLIB_PLUGINS)
/* Where lws looks for it (its install libdir, no environment variable),
   the symbol it takes, and who provides it. */
#define EVLIB_PATH LWS_INSTALL_LIBDIR "/libwebsockets-evlib_uv.so"
#define EVLIB_SYMBOL "evlib_uv"
#define EVLIB_PACKAGE "libwebsockets-evlib-uv"

int
http_loop_evlib_check (char **errmsg)
{
    void *lib = dlopen (EVLIB_PATH, RTLD_NOW | RTLD_LOCAL);
    bool found = lib && dlsym (lib, EVLIB_SYMBOL);
    const char *why = !lib ? dlerror () : found ? NULL : "it has no " EVLIB_SYMBOL;
    if (lib)
        dlclose (lib);
    if (found)
        return 0;
    size_t skip = strlen (EVLIB_PATH ": "); /* dlerror names the file first */
    if (why && !strncmp (why, EVLIB_PATH ": ", skip))
        why += skip;
    *errmsg = wire_xasprintf ("cannot start the HTTP front: libwebsockets' libuv event library %s does not load "
                              "(%s); Debian's package " EVLIB_PACKAGE " provides it",
                              EVLIB_PATH, why ? why : "?");
    return -1;
}
#else
int
http_loop_evlib_check (char **errmsg)
{
    return 0; /* built into libwebsockets */
}
#endif

void *
http_loop_uv (http_loop_t *self)
{
    return &self->uv;
}

void
http_loop_drain (http_loop_t *self)
{
    for (int i = 0; i < CLOSE_PASSES && uv_run (&self->uv, UV_RUN_NOWAIT); i++)
        ;
}

void
http_loop_destroy (http_loop_t **self_p)
{
    http_loop_t *self = *self_p;
    if (!self)
        return;
    gw_io_poller_end (self->io, self->item.fd);
    if (self->timer)
        gw_timer_end (self->loop, self->timer);
    http_loop_drain (self);
    if (uv_loop_close (&self->uv) == UV_EBUSY) {
        gw_log ("warning", "{s:s}", "message", "libuv still had handles open at exit: its loop is left allocated");
        *self_p = NULL;
        return;
    }
    free (self);
    *self_p = NULL;
}
