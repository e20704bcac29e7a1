/*  gw_unit.c - self-tests of the gateway's hot-path classes (make check):

    gw_io    the epoll set under zloop, with real ZeroMQ sockets over tcp:
             relays that forward every message to a socket with messages
             of its own waiting (the send that takes the fd's wake-up), many
             back-to-back messages each way on several channels at once, from
             another thread; a lost wake-up shows as a timeout. Readers and
             pollers ended from inside a dispatch (freed after it: ASan).
    gw_peek  answers as jansson would, on a table of edge cases and on
             random mutations of real headers.
    gw_proc  this process's own /proc readings.
    gw_clock intervals read CLOCK_MONOTONIC, dates CLOCK_REALTIME (a clock
             step is not simulated: what matters is which clock is read).
    gw_timer a timer ended by another timer's handler in the same pass of
             zloop does not fire (raw zloop's does: checked, as the premise);
             timers that fired their last time leave the registry.
    gw_linger what lingers ends once: at its time, earlier when more than
             GW_LINGER_MAX would linger (the oldest first), or at destroy.
    gw_log   a line is bounded whatever its fields hold (a kernel's 5 MiB
             tool name, 1,000 members, 100 levels, many long strings): each
             string cut between characters and marked with its size, the
             line valid JSON of at most ~20 KiB; a line within the bounds
             is written as packed.
    gw_zmtp_guard  between a ROUTER bound at an ipc path (the kernel) and
             a DEALER (the relay's): messages pass unchanged both ways, a
             3 MiB multipart under the limit included; a symlink at the path
             is refused; a message over the frame limit cuts the connection
             with its reason and none of it reaches the DEALER.

    Exit 0 when every check passed; each failure prints one line.
*/
#include "gateway/gw_io.h"
#include "gateway/gw_linger.h"
#include "gateway/gw_log.h"
#include "gateway/gw_peek.h"
#include "gateway/gw_proc.h"
#include "gateway/gw_timer.h"
#include "gateway/gw_util.h"
#include "gateway/gw_zmtp.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/gateway/gw_check.h"

static int
s_on_quit (zloop_t *loop, int timer_id, void *arg)
{
    return -1;
}

/* ---- gw_io: relays under load ----------------------------------------- */

#define CHANNELS 6
#define MESSAGES 3000 /* each way, per channel */

/* One channel: the loop relays left <-> right; the actor owns the outer ends. */
typedef struct {
    zsock_t *left, *right;       /* registered in gw_io (DEALERs) */
    char left_ep[64], right_ep[64];
    gw_io_t *io;
    int relayed;
} relay_t;

static int
s_forward (zsock_t *from, zsock_t *to, relay_t *r)
{
    zmsg_t *msg = zmsg_recv (from);
    if (!msg)
        return 0;
    zmsg_send (&msg, to);
    gw_io_sent (r->io, to); /* what the gateway does after every send */
    r->relayed++;
    return 0;
}

static int
s_on_left (zloop_t *loop, zsock_t *sock, void *arg)
{
    relay_t *r = arg;
    return s_forward (r->left, r->right, r);
}

static int
s_on_right (zloop_t *loop, zsock_t *sock, void *arg)
{
    relay_t *r = arg;
    return s_forward (r->right, r->left, r);
}

/* The outside world: sends MESSAGES each way on every channel in bursts
   and counts what comes back through the relays. */
static void
s_pump (zsock_t *pipe, void *arg)
{
    relay_t *relays = arg;
    zsock_t *outer[2 * CHANNELS];
    int sent[2 * CHANNELS] = {0}, got[2 * CHANNELS] = {0};
    zpoller_t *poller = zpoller_new (NULL);
    for (int i = 0; i < 2 * CHANNELS; i++) {
        outer[i] = zsock_new (ZMQ_DEALER);
        zsock_set_sndhwm (outer[i], 0);
        zsock_set_rcvhwm (outer[i], 0);
        zsock_connect (outer[i], "%s", i % 2 ? relays[i / 2].right_ep : relays[i / 2].left_ep);
        zpoller_add (poller, outer[i]);
    }
    zsock_signal (pipe, 0);
    int total = 0, burst = 1;
    int64_t deadline = zclock_mono () + 20000;
    while (total < 2 * CHANNELS * MESSAGES && zclock_mono () < deadline) {
        for (int i = 0; i < 2 * CHANNELS; i++)
            for (int b = 0; b < burst && sent[i] < MESSAGES; b++)
                zstr_sendf (outer[i], "%d %d", i, sent[i]++);
        burst = burst % 97 + 7; /* 7..103: single messages and floods */
        zsock_t *ready;
        while ((ready = zpoller_wait (poller, sent[0] < MESSAGES ? 0 : 100))) {
            for (int i = 0; i < 2 * CHANNELS; i++)
                if (outer[i] == ready) {
                    char *s = zstr_recv (ready);
                    int from = -1, n = -1;
                    if (s && sscanf (s, "%d %d", &from, &n) == 2 && from == (i ^ 1) && n == got[i])
                        got[i]++; /* in order, from the other end of the same channel */
                    else
                        fprintf (stderr, "gw_io: channel end %d got '%s', expected %d %d\n", i, s ? s : "",
                                 i ^ 1, got[i]);
                    zstr_free (&s);
                    total++;
                }
        }
    }
    zpoller_destroy (&poller);
    for (int i = 0; i < 2 * CHANNELS; i++)
        zsock_destroy (&outer[i]);
    zsock_signal (pipe, total == 2 * CHANNELS * MESSAGES ? 0 : 1);
    char *term = zstr_recv (pipe); /* $TERM from zactor_destroy */
    zstr_free (&term);
}

static int
s_on_pump_done (zloop_t *loop, zsock_t *pipe, void *arg)
{
    *(int *) arg = zsock_wait (pipe);
    return -1;
}

static int
s_on_timeout (zloop_t *loop, int timer_id, void *arg)
{
    *(int *) arg = 2;
    return -1;
}

static void
test_io_relay (void)
{
    zloop_t *loop = zloop_new ();
    gw_io_t *io = gw_io_new (loop);
    CHECK (io && gw_io_of (loop) == io);
    relay_t relays[CHANNELS];
    for (int c = 0; c < CHANNELS; c++) {
        relay_t *r = &relays[c];
        *r = (relay_t){.io = io};
        r->left = zsock_new (ZMQ_DEALER);
        r->right = zsock_new (ZMQ_DEALER);
        zsock_set_sndhwm (r->left, 0), zsock_set_sndhwm (r->right, 0);
        zsock_set_rcvhwm (r->left, 0), zsock_set_rcvhwm (r->right, 0);
        int lp = zsock_bind (r->left, "tcp://127.0.0.1:*"), rp = zsock_bind (r->right, "tcp://127.0.0.1:*");
        snprintf (r->left_ep, sizeof r->left_ep, "tcp://127.0.0.1:%d", lp);
        snprintf (r->right_ep, sizeof r->right_ep, "tcp://127.0.0.1:%d", rp);
        CHECK (gw_io_reader (io, r->left, s_on_left, r) == 0);
        CHECK (gw_io_reader (io, r->right, s_on_right, r) == 0);
    }
    CHECK (gw_io_reader (io, relays[0].left, s_on_left, &relays[0]) == -1); /* twice: refused */
    CHECK (gw_io_size (io) == 2 * CHANNELS);
    int outcome = -1;
    zactor_t *pump = zactor_new (s_pump, relays);
    zloop_reader (loop, zactor_sock (pump), s_on_pump_done, &outcome);
    zloop_timer (loop, 30000, 1, s_on_timeout, &outcome);
    zloop_start (loop);
    if (outcome != 0)
        fprintf (stderr, "gw_io: relays %s\n", outcome == 2 ? "hung (a lost wake-up)" : "lost or reordered");
    CHECK (outcome == 0);
    int relayed = 0;
    for (int c = 0; c < CHANNELS; c++)
        relayed += relays[c].relayed;
    CHECK (relayed == 2 * CHANNELS * MESSAGES);
    zloop_reader_end (loop, zactor_sock (pump));
    zactor_destroy (&pump);
    for (int c = 0; c < CHANNELS; c++) {
        gw_io_reader_end (io, relays[c].left);
        gw_io_reader_end (io, relays[c].right);
        zsock_destroy (&relays[c].left);
        zsock_destroy (&relays[c].right);
    }
    CHECK (gw_io_size (io) == 0);
    gw_io_destroy (&io);
    CHECK (gw_io_of (loop) == NULL);
    zloop_destroy (&loop);
}

/* ---- gw_io: the wake-up a send takes ------------------------------------

   The case gw_io_sent exists for, made to happen on purpose: a message
   arrives for a drained socket (its ZMQ_FD becomes readable), then a send on
   that socket processes the socket's commands and takes the signal, so the
   fd is quiet while a message waits. The first socket is left like that and
   the loop must not see it (the premise, checked: else this test proves
   nothing); after gw_io_sent the loop reads it. */

typedef struct {
    int calls;
} counter_t;

static int
s_on_count (zloop_t *loop, zsock_t *sock, void *arg)
{
    zmsg_t *msg = zmsg_recv (sock);
    zmsg_destroy (&msg);
    ((counter_t *) arg)->calls++;
    return 0;
}

static bool
s_fd_readable (zsock_t *sock, int wait_ms)
{
    struct pollfd pfd = {zsock_fd (sock), POLLIN, 0};
    return poll (&pfd, 1, wait_ms) == 1;
}

static void
test_io_send_takes_wakeup (void)
{
    zloop_t *loop = zloop_new ();
    gw_io_t *io = gw_io_new (loop);
    zsock_t *inner = zsock_new (ZMQ_DEALER), *outer = zsock_new (ZMQ_DEALER);
    int port = zsock_bind (inner, "tcp://127.0.0.1:*");
    zsock_connect (outer, "tcp://127.0.0.1:%d", port);
    counter_t count = {0};
    CHECK (gw_io_reader (io, inner, s_on_count, &count) == 0);
    /* connected and drained: one message through the loop */
    zstr_send (outer, "first");
    zloop_timer (loop, 300, 1, s_on_quit, NULL);
    zloop_start (loop);
    CHECK (count.calls == 1);
    /* a message arrives: the fd is readable */
    zstr_send (outer, "second");
    CHECK (s_fd_readable (inner, 5000));
    /* a send on the socket (past libzmq's ~1 ms throttle) takes the signal */
    zclock_sleep (5);
    zstr_send (inner, "reply");
    bool premise = !s_fd_readable (inner, 0) && (zsock_events (inner) & ZMQ_POLLIN);
    CHECK (premise);
    /* without gw_io_sent, epoll never hears of it */
    zloop_timer (loop, 200, 1, s_on_quit, NULL);
    zloop_start (loop);
    CHECK (count.calls == 1);
    /* with it, the next turn reads the waiting message */
    gw_io_sent (io, inner);
    zloop_timer (loop, 200, 1, s_on_quit, NULL);
    zloop_start (loop);
    CHECK (count.calls == 2);
    char *reply = zstr_recv (outer);
    CHECK (reply && streq (reply, "reply"));
    zstr_free (&reply);
    gw_io_reader_end (io, inner);
    zsock_destroy (&inner);
    zsock_destroy (&outer);
    gw_io_destroy (&io);
    zloop_destroy (&loop);
}

/* ---- gw_io: ending entries from inside a dispatch ----------------------- */

typedef struct {
    gw_io_t *io;
    zsock_t *a, *b;
    zmq_pollitem_t pipe_item;
    int calls;
} ender_t;

/* a's handler ends both a and b, though b's event may be in the same batch */
static int
s_on_end_both (zloop_t *loop, zsock_t *sock, void *arg)
{
    ender_t *e = arg;
    e->calls++;
    gw_io_reader_end (e->io, e->a);
    gw_io_reader_end (e->io, e->b);
    return 0;
}

static int
s_on_pipe (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    ender_t *e = arg;
    char c;
    CHECK (item == &e->pipe_item && (item->revents & ZMQ_POLLIN));
    CHECK (read (item->fd, &c, 1) == 1 && c == 'x');
    gw_io_poller_end (e->io, item->fd);
    e->calls++;
    return 0;
}

static void
test_io_end_in_dispatch (void)
{
    zloop_t *loop = zloop_new ();
    ender_t e = {.io = gw_io_new (loop)};
    e.a = zsock_new_pair ("@inproc://gw-unit-a");
    e.b = zsock_new_pair ("@inproc://gw-unit-b");
    zsock_t *pa = zsock_new_pair (">inproc://gw-unit-a");
    zsock_t *pb = zsock_new_pair (">inproc://gw-unit-b");
    zstr_send (pa, "to a");
    zstr_send (pb, "to b");
    gw_io_reader (e.io, e.a, s_on_end_both, &e);
    gw_io_reader (e.io, e.b, s_on_end_both, &e);
    int fds[2];
    CHECK (pipe2 (fds, O_CLOEXEC) == 0);
    e.pipe_item = (zmq_pollitem_t){NULL, fds[0], ZMQ_POLLIN, 0};
    CHECK (gw_io_poller (e.io, &e.pipe_item, s_on_pipe, &e) == 0);
    CHECK (write (fds[1], "x", 1) == 1);
    zloop_timer (loop, 200, 1, s_on_quit, NULL);
    zloop_start (loop);
    CHECK (e.calls == 2); /* one of a/b (it ended the other), the pipe once */
    CHECK (gw_io_size (e.io) == 0);
    close (fds[0]);
    close (fds[1]);
    zsock_destroy (&pa), zsock_destroy (&pb), zsock_destroy (&e.a), zsock_destroy (&e.b);
    gw_io_destroy (&e.io);
    zloop_destroy (&loop);
}

/* ---- gw_peek: as jansson answers --------------------------------------- */

static int
s_jansson (const char *data, size_t size, const char *key, char *out, size_t out_size)
{
    json_t *obj = json_loadb (data, size, 0, NULL);
    json_t *v = json_object_get (obj, key);
    int rc = -1;
    if (json_is_string (v)) {
        rc = (int) json_string_length (v);
        snprintf (out, out_size, "%s", json_string_value (v));
    }
    json_decref (obj);
    return rc;
}

/* gw_peek_object: 1 only for what jansson takes as an object, 0 only for
   what it refuses or is no object. */
static void
s_object_same (const char *data, size_t size)
{
    json_t *obj = json_loadb (data, size, 0, NULL);
    int rc = gw_peek_object (data, size);
    if ((rc == 1 && !json_is_object (obj)) || (rc == 0 && json_is_object (obj))) {
        fprintf (stderr, "gw_peek_object: '%.*s': %d, jansson %s\n", (int) size, data, rc,
                 json_is_object (obj) ? "an object" : "no object");
        failures++;
    }
    json_decref (obj);
}

static int
s_json_depth (const json_t *v)
{
    int deepest = 0;
    if (json_is_object (v)) {
        const char *k;
        json_t *item;
        json_object_foreach ((json_t *) v, k, item) {
            int d = s_json_depth (item);
            deepest = d > deepest ? d : deepest;
        }
        return deepest + 1;
    }
    if (json_is_array (v)) {
        for (size_t i = 0; i < json_array_size (v); i++) {
            int d = s_json_depth (json_array_get (v, i));
            deepest = d > deepest ? d : deepest;
        }
        return deepest + 1;
    }
    return 0;
}

/* gw_peek_check against jansson (NULs allowed, as in Python) and a depth
   count of its tree; where jansson refuses what Python takes (a number out
   of its range, a lone surrogate) the check may take it. */
static void
s_check_same (const char *data, size_t size, int max_depth)
{
    json_error_t error;
    json_t *obj = json_loadb (data, size, JSON_ALLOW_NUL, &error);
    int rc = gw_peek_check (data, size, max_depth);
    bool python_only = !obj && (strstr (error.text, "too big") || strstr (error.text, "overflow")
                                || strstr (error.text, "surrogate") || strstr (error.text, "nesting"));
    int expect = json_is_object (obj) && s_json_depth (obj) <= max_depth;
    if (rc != expect && !(python_only && rc == 1)) {
        fprintf (stderr, "gw_peek_check: '%.*s' depth %d: %d, jansson %d (%s)\n", (int) size, data, max_depth, rc,
                 expect, obj ? "" : error.text);
        failures++;
    }
    json_decref (obj);
}

static void
s_peek_same (const char *data, size_t size, const char *key)
{
    s_object_same (data, size);
    s_check_same (data, size, 3);
    s_check_same (data, size, GW_JSON_DEPTH_MAX);
    char a[64], b[64];
    int ra = gw_peek_string (data, size, key, a, sizeof a);
    int rb = s_jansson (data, size, key, b, sizeof b);
    if (ra != rb || (ra >= 0 && strcmp (a, b) != 0)) {
        fprintf (stderr, "gw_peek: '%.*s' key %s: %d '%s', jansson %d '%s'\n", (int) size, data, key, ra,
                 ra >= 0 ? a : "", rb, rb >= 0 ? b : "");
        failures++;
    }
}

static void
test_peek (void)
{
    const char *cases[] = {
        "{\"msg_type\":\"execute_reply\",\"msg_id\":\"a\"}",
        " { \"msg_id\" : \"x-1\" , \"msg_type\" : \"status\" } ",
        "{\"msg_type\":\"a\",\"msg_type\":\"b\"}",            /* the last one */
        "{\"msg_type\":\"a\",\"msg_type\":1}",                /* the last one is no string */
        "{\"msg_type\":1,\"msg_type\":\"b\"}",
        "{\"x\":{\"msg_type\":\"inner\"},\"msg_type\":\"outer\"}",
        "{\"x\":[1,2.5,-0,true,false,null,{},[]],\"msg_type\":\"t\"}",
        "{\"msg_type\":\"t\"",                                 /* unterminated */
        "{\"msg_type\":\"t\"} x",                              /* trailing bytes */
        "{\"msg_type\":\"t\"}   \n",
        "{\"msg_type\":\"t\",}",                              /* trailing comma */
        "{\"x\":01,\"msg_type\":\"t\"}",                      /* leading zero */
        "{\"x\":1e999,\"msg_type\":\"t\"}",                   /* overflow: jansson refuses */
        "{\"x\":1.5e3,\"msg_type\":\"t\"}",
        "{\"x\":123456789012345678901234,\"msg_type\":\"t\"}", /* too big an integer */
        "{\"x\":-,\"msg_type\":\"t\"}",
        "{\"x\":tru,\"msg_type\":\"t\"}",
        "{\"msg_type\":\"a\\\"b\"}",                          /* escapes: jansson decodes */
        "{\"msg_\\u0074ype\":\"t\"}",
        "{\"msg_type\":\"caf\xc3\xa9\"}",                     /* UTF-8 */
        "{\"msg_type\":\"bad \xff utf8\"}",
        "{\"msg_type\":\"tab\there\"}",                       /* a raw control character */
        "[\"msg_type\",\"t\"]",
        "\"msg_type\"",
        "",
        "{}",
        "{\"msg_type\":\"0123456789012345678901234567890123456789012345678901234567890123456789\"}", /* cut */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        s_peek_same (cases[i], strlen (cases[i]), "msg_type");
    /* what only the check decides: escapes, UTF-8, numbers, depth */
    const char *checks[] = {
        "{\"a\":\"\\n\\t\\\"\\\\\\/\\b\\f\\r\\u00e9\"}",
        "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}", "{\"a\":\"\\u12G4\"}", "{\"a\":\"\\\"}",
        "{\"a\":\"\\u0000\"}", "{\"a\":\"\xe2\x82\xac \xf0\x9f\x98\x80\"}", "{\"a\":\"\xc0\xaf\"}",
        "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xf4\x90\x80\x80\"}", "{\"a\":\"\xe2\x82\"}",
        "{\"a\":\"\x7f\"}", "{\"a\":1.5e-3}", "{\"a\":1E+2}", "{\"a\":1e}", "{\"a\":-1.0e5}",
        "{\"a\":NaN}", "{\"a\":[[[]]]}", "{\"a\":[[{}]]}", "{\"a\":{\"b\":{}}}", "{\"a\":[1,[2,[3]]]}",
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        s_peek_same (checks[i], strlen (checks[i]), "a");
    char deep[4200] = "{\"a\":";
    for (int n = 1; n < 1024; n = n * 2 + 1) {
        size_t len = 5;
        for (int i = 0; i < n; i++)
            deep[len++] = '[';
        for (int i = 0; i < n; i++)
            deep[len++] = ']';
        deep[len++] = '}';
        CHECK (gw_peek_check (deep, len, n + 1) == 1 && gw_peek_check (deep, len, n) == 0);
        s_check_same (deep, len, GW_JSON_DEPTH_MAX);
    }
    char digits[5000] = "{\"a\":";
    memset (digits + 5, '7', 4096);
    memcpy (digits + 5 + 4096, "}", 2);
    CHECK (gw_peek_check (digits, strlen (digits), 3) == 1);
    memcpy (digits + 5 + 4096, "7}", 3);
    CHECK (gw_peek_check (digits, strlen (digits), 3) == 0);
    /* random mutations of real headers */
    const char *seeds[] = {
        "{\"msg_id\":\"5d1c9a0e-3b1f4c2a_1234_7\",\"msg_type\":\"execute_request\",\"username\":\"u\","
        "\"session\":\"0f2e\",\"date\":\"2026-11-29T13:00:00.000000Z\",\"version\":\"5.3\"}",
        "{\"execution_state\":\"idle\"}",
        "{\"status\":\"ok\",\"execution_count\":12,\"user_expressions\":{},\"payload\":[]}",
    };
    const char alphabet[] = "{}[]\",:\\ 0-1e.tfnux\x01\x7f\xc3\xa9\xed\xf4\x80";
    unsigned seed = 7;
    for (int round = 0; round < 20000; round++) {
        const char *base = seeds[round % 3];
        char buf[256];
        size_t len = strlen (base);
        memcpy (buf, base, len);
        int edits = 1 + (int) ((seed = seed * 1103515245 + 12345) >> 16) % 3;
        for (int k = 0; k < edits; k++) {
            seed = seed * 1103515245 + 12345;
            size_t at = (seed >> 16) % len;
            seed = seed * 1103515245 + 12345;
            if ((seed >> 16) % 4 == 0 && len > 1) /* cut */
                len = at + 1;
            else
                buf[at] = alphabet[(seed >> 20) % (sizeof alphabet - 1)];
        }
        const char *keys[] = {"msg_type", "msg_id", "execution_state", "status"};
        s_peek_same (buf, len, keys[round % 4]);
    }
}

/* ---- gw_proc ------------------------------------------------------------ */

static void
test_proc (void)
{
    double cpu;
    int64_t rss, hwm;
    gw_proc_usage (getpid (), &cpu, &rss, &hwm);
    CHECK (cpu > 0 && rss > 0 && hwm >= rss);
    gw_proc_watch_t w;
    gw_proc_watch_start (&w, getpid ());
    CHECK (w.stat_fd >= 0 && w.status_fd >= 0);
    /* 50 ms of this process's own CPU time, not of the wall clock: on a
       loaded machine 50 ms of wall time can be less than one clock tick of
       CPU, which /proc counts in (cpu was 0, under make distcheck with other
       builds running) */
    volatile double x = 0;
    struct timespec t0, t;
    clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &t0);
    int64_t give_up = zclock_mono () + 10000;
    do {
        for (int i = 0; i < 100000; i++)
            x += 1;
        clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 50 && zclock_mono () < give_up);
    gw_proc_watch_end (&w, &cpu, &hwm);
    CHECK (w.stat_fd == -1 && w.status_fd == -1);
    CHECK (cpu > 0 && cpu < 5 && hwm > 0);
    /* at most 64 executions hold fds; the others read by pid, same answers */
    gw_proc_watch_t many[70];
    for (int i = 0; i < 70; i++)
        gw_proc_watch_start (&many[i], getpid ());
    CHECK (many[63].held && many[63].stat_fd >= 0 && !many[64].held && many[64].stat_fd == -1);
    for (int i = 0; i < 70; i++) {
        gw_proc_watch_end (&many[i], &cpu, &hwm);
        CHECK (cpu >= 0 && hwm > 0 && !many[i].held);
    }
    gw_proc_watch_start (&w, getpid ()); /* all given back */
    CHECK (w.held);
    gw_proc_watch_close (&w);
    gw_proc_watch_start (&w, 0); /* no kernel: nothing opened, zeros */
    gw_proc_watch_end (&w, &cpu, &hwm);
    CHECK (cpu == 0 && hwm == 0);
}

/* ---- gw_clock ----------------------------------------------------------- */

static double
s_clock (clockid_t id)
{
    struct timespec ts;
    clock_gettime (id, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* A reading of fn lies between two readings of the clock it must use. */
static bool
s_reads (double (*fn) (void), clockid_t id)
{
    double before = s_clock (id), v = fn (), after = s_clock (id);
    return before <= v && v <= after;
}

static void
test_clock (void)
{
    /* the two clocks are days apart on any host (boot vs. epoch), so a
       helper reading the wrong one fails both bounds */
    CHECK (fabs (s_clock (CLOCK_REALTIME) - s_clock (CLOCK_MONOTONIC)) > 86400);
    CHECK (s_reads (gw_clock_mono, CLOCK_MONOTONIC));
    CHECK (s_reads (gw_clock_wall, CLOCK_REALTIME));
    /* a monotonic instant shown as a date: now is now, 10 s ago is 10 s ago */
    double mono = gw_clock_mono (), wall = s_clock (CLOCK_REALTIME);
    CHECK (fabs (gw_clock_wall_of (mono) - wall) < 0.5);
    CHECK (fabs (gw_clock_wall_of (mono - 10) - (wall - 10)) < 0.5);
    char iso[40];
    gw_iso_time (86400 * 365.0 + 0.25, iso);
    CHECK (streq (iso, "1971-01-01T00:00:00.250000Z"));
}

/* ---- gw_timer: an ended timer never fires ------------------------------

   Timers A and B are due in the same pass; A, first in zloop's list, ends
   B. czmq's zloop still runs B (it removes ended timers after the pass):
   checked on a raw zloop, as the premise. Through gw_timer B never runs. */

typedef struct {
    bool through_gw;
    int b_id;
    int b_fired;
} ends_t;

static int
s_on_a (zloop_t *loop, int timer_id, void *arg)
{
    ends_t *t = arg;
    if (t->through_gw)
        gw_timer_end (loop, t->b_id);
    else
        zloop_timer_end (loop, t->b_id);
    return 0;
}

static int
s_on_b (zloop_t *loop, int timer_id, void *arg)
{
    ((ends_t *) arg)->b_fired++;
    return 0;
}

static int
s_count (zloop_t *loop, int timer_id, void *arg)
{
    ++*(int *) arg;
    return 0;
}

static int
s_end_self (zloop_t *loop, int timer_id, void *arg)
{
    ++*(int *) arg;
    gw_timer_end (loop, timer_id);
    return 0;
}

static void
test_timer_ended_in_pass (bool through_gw)
{
    zloop_t *loop = zloop_new ();
    gw_timers_t *timers = gw_timers_new (loop);
    ends_t t = {.through_gw = through_gw};
    if (through_gw) {
        CHECK (gw_timer_start (loop, 5, 1, s_on_a, &t) > 0);
        t.b_id = gw_timer_start (loop, 5, 1, s_on_b, &t);
        gw_timer_start (loop, 30, 1, s_on_quit, NULL);
    }
    else {
        zloop_timer (loop, 5, 1, s_on_a, &t);
        t.b_id = zloop_timer (loop, 5, 1, s_on_b, &t);
        zloop_timer (loop, 30, 1, s_on_quit, NULL);
    }
    CHECK (t.b_id > 0);
    zloop_start (loop);
    if (through_gw)
        CHECK (t.b_fired == 0);
    else
        CHECK (t.b_fired == 1); /* czmq's behaviour, which gw_timer exists for */
    CHECK (gw_timers_size (timers) == 0);
    gw_timers_destroy (&timers);
    zloop_destroy (&loop);
}

#define ONE_SHOTS 1000

static void
test_timer_registry (void)
{
    zloop_t *loop = zloop_new ();
    gw_timers_t *timers = gw_timers_new (loop);
    int one_shots = 0, thrice = 0, self_ended = 0;
    for (int i = 0; i < ONE_SHOTS; i++)
        CHECK (gw_timer_start (loop, (size_t) (i % 7), 1, s_count, &one_shots) > 0);
    gw_timer_start (loop, 2, 3, s_count, &thrice);
    gw_timer_start (loop, 2, 0, s_end_self, &self_ended);
    int forever = gw_timer_start (loop, 2, 0, s_count, &(int){0});
    CHECK (gw_timers_size (timers) == ONE_SHOTS + 3);
    gw_timer_start (loop, 40, 1, s_on_quit, NULL);
    gw_timer_end (loop, forever);
    gw_timer_end (loop, forever); /* twice, and ids never given: ignored */
    gw_timer_end (loop, 0);
    gw_timer_end (loop, -1);
    zloop_start (loop);
    CHECK (one_shots == ONE_SHOTS);
    CHECK (thrice == 3);
    CHECK (self_ended == 1);
    CHECK (gw_timers_size (timers) == 0);
    gw_timers_destroy (&timers);
    CHECK (gw_timer_start (loop, 1, 1, s_count, &one_shots) == -1); /* no registry: refused */
    zloop_destroy (&loop);
}

/* ---- gw_linger: bounded in number and in time --------------------------- */

static int s_ended[GW_LINGER_MAX + 5];
static int s_end_order[GW_LINGER_MAX + 5];
static int s_ends;

static void
s_linger_end (void *obj)
{
    int i = (int) (intptr_t) obj;
    s_ended[i]++;
    s_end_order[s_ends++] = i;
}

static void
test_linger (void)
{
    zloop_t *loop = zloop_new ();
    gw_timers_t *timers = gw_timers_new (loop);
    gw_lingers_t *lingers = gw_lingers_new (loop);
    for (int i = 0; i < GW_LINGER_MAX + 3; i++)
        gw_linger_add (lingers, (void *) (intptr_t) i, s_linger_end);
    /* the three oldest made room, in the order they came */
    CHECK (s_ends == 3 && s_end_order[0] == 0 && s_end_order[1] == 1 && s_end_order[2] == 2);
    gw_timer_start (loop, GW_LINGER_MS + 500, 1, s_on_quit, NULL);
    zloop_start (loop);
    CHECK (s_ends == GW_LINGER_MAX + 3); /* the others at their time */
    for (int i = 0; i < GW_LINGER_MAX + 3; i++)
        CHECK (s_ended[i] == 1);
    gw_linger_add (lingers, (void *) (intptr_t) (GW_LINGER_MAX + 3), s_linger_end);
    gw_linger_add (lingers, (void *) (intptr_t) (GW_LINGER_MAX + 4), s_linger_end);
    gw_lingers_destroy (&lingers); /* the gateway stops: ended now */
    CHECK (s_ends == GW_LINGER_MAX + 5 && s_ended[GW_LINGER_MAX + 3] == 1 && s_ended[GW_LINGER_MAX + 4] == 1);
    CHECK (gw_timers_size (timers) == 0);
    gw_timers_destroy (&timers);
    zloop_destroy (&loop);
}

/* ---- gw_zmtp_guard: a kernel connection through the ZMTP check --------- */

/* Runs the loop for ms: the guard moves bytes meanwhile. */
static void
s_run (zloop_t *loop, int ms)
{
    zloop_timer (loop, (size_t) ms, 1, s_on_quit, NULL);
    zloop_start (loop);
}

static zmsg_t *
s_recv_now (zsock_t *sock)
{
    return (zsock_events (sock) & ZMQ_POLLIN) ? zmsg_recv (sock) : NULL;
}

static void
test_zmtp_guard (void)
{
    zloop_t *loop = zloop_new ();
    gw_io_t *io = gw_io_new (loop);
    char dir[] = "/tmp/gw-unit-XXXXXX", path[64], link_path[64], endpoint[64];
    CHECK (mkdtemp (dir) != NULL);
    snprintf (path, sizeof path, "%s/k-1", dir);
    snprintf (link_path, sizeof link_path, "%s/k-2", dir);
    zsock_t *kernel = zsock_new (ZMQ_ROUTER);
    CHECK (zsock_bind (kernel, "ipc://%s", path) == 0);
    CHECK (symlink (path, link_path) == 0);
    gw_zmtp_limits_t limits = {4u << 20, 8};
    errno = 0;
    CHECK (gw_zmtp_guard_new (io, link_path, &limits, "unit", "shell", endpoint, sizeof endpoint) == NULL
           && errno == ELOOP);
    gw_zmtp_guard_t *guard = gw_zmtp_guard_new (io, path, &limits, "unit", "shell", endpoint, sizeof endpoint);
    CHECK (guard && strncmp (endpoint, "ipc://@", 7) == 0);
    zsock_t *relay = zsock_new (ZMQ_DEALER);
    zsock_set_identity (relay, "gw");
    CHECK (zsock_connect (relay, "%s", endpoint) == 0);
    zstr_send (relay, "hello");
    s_run (loop, 300);
    zmsg_t *in = s_recv_now (kernel);
    CHECK (in && zmsg_size (in) == 2 && zframe_streq (zmsg_last (in), "hello"));
    zmsg_destroy (&in);

    /* under the limits: 3 frames, 3 MiB + 2 bytes, unchanged */
    zmsg_t *out = zmsg_new ();
    zmsg_addstr (out, "gw");
    zmsg_addstr (out, "a");
    zframe_t *big = zframe_new (NULL, 3u << 20);
    memset (zframe_data (big), 'b', zframe_size (big));
    zmsg_append (out, &big);
    zmsg_addstr (out, "c");
    zmsg_send (&out, kernel);
    s_run (loop, 500);
    in = s_recv_now (relay);
    CHECK (in && zmsg_size (in) == 3);
    if (in) {
        zframe_t *f = zmsg_first (in);
        CHECK (zframe_streq (f, "a"));
        f = zmsg_next (in);
        CHECK (zframe_size (f) == 3u << 20 && zframe_data (f)[0] == 'b' && zframe_data (f)[(3u << 20) - 1] == 'b');
        CHECK (zframe_streq (zmsg_next (in), "c"));
    }
    zmsg_destroy (&in);
    CHECK (gw_zmtp_guard_cut (guard) == NULL);

    /* nine frames, the limit is eight: cut at the ninth's header */
    out = zmsg_new ();
    zmsg_addstr (out, "gw");
    for (int i = 0; i < 9; i++)
        zmsg_addstr (out, "x");
    zmsg_send (&out, kernel);
    s_run (loop, 300);
    CHECK (s_recv_now (relay) == NULL);
    const char *cut = gw_zmtp_guard_cut (guard);
    CHECK (cut && streq (cut, "a message over the frame limit"));

    zsock_destroy (&relay);
    gw_zmtp_guard_destroy (&guard);
    zsock_destroy (&kernel);
    unlink (link_path);
    unlink (path);
    rmdir (dir);
    CHECK (gw_io_size (io) == 0);
    gw_io_destroy (&io);
    zloop_destroy (&loop);
}

/* Every line of the log file at path, parsed; NULL at the first that is
   not a JSON object (a check fails then). *longest: its longest line. */
static json_t *
log_lines (const char *path, size_t *longest)
{
    FILE *f = fopen (path, "r");
    json_t *lines = json_array ();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    *longest = 0;
    while (f && (n = getline (&line, &cap, f)) > 0) {
        if ((size_t) n > *longest)
            *longest = (size_t) n;
        json_t *obj = json_loadb (line, (size_t) n, 0, NULL);
        CHECK (json_is_object (obj));
        json_array_append_new (lines, obj ? obj : json_null ());
    }
    free (line);
    if (f)
        fclose (f);
    return lines;
}

static void
test_log_bounds (void)
{
    char path[] = "/tmp/gw_unit_log_XXXXXX";
    int fd = mkstemp (path);
    CHECK (fd >= 0);
    close (fd);
    CHECK (gw_log_open (path) == 0);
    /* a kernel's tool name of 5 MiB, with a character across the cut */
    size_t big = 5 << 20;
    char *name = wire_xmalloc (big + 1);
    memset (name, 'n', big);
    memcpy (name + 2040, "\xc3\xa9\xc3\xa9\xc3\xa9", 6);
    name[big] = 0;
    gw_log ("tool_call", "{s:s, s:s}", "tool", name, "status", "refused");
    json_t *wide = json_object (), *deep = json_object (), *many = json_array ();
    for (int i = 0; i < 1000; i++) {
        char key[16];
        snprintf (key, sizeof key, "k%d", i);
        json_object_set_new (wide, key, json_integer (i));
        json_array_append_new (many, json_string (name + big - 4000)); /* 4,000 bytes each */
    }
    for (int i = 0; i < 100; i++)
        deep = json_pack ("{s:o}", "d", deep);
    gw_log ("arguments", "{s:o, s:o, s:o}", "wide", wide, "deep", deep, "many", many);
    gw_log ("plain", "{s:s, s:i}", "conversation", "c-1", "n", 7);
    gw_log_close ();
    size_t longest;
    json_t *lines = log_lines (path, &longest);
    CHECK (json_array_size (lines) == 3);
    CHECK (longest < 24 * 1024);
    const char *tool = json_string_value (json_object_get (json_array_get (lines, 0), "tool"));
    CHECK (tool && strlen (tool) <= 2048 && strstr (tool, "...[cut: 5242880 bytes]"));
    json_t *valid = tool ? json_string (tool) : NULL; /* NULL unless valid UTF-8 */
    CHECK (valid != NULL);
    json_decref (valid);
    CHECK (streq (json_string_value (json_object_get (json_array_get (lines, 0), "status")) ?: "", "refused"));
    json_t *args = json_array_get (lines, 1);
    CHECK (json_object_size (json_object_get (args, "wide")) == 65); /* 64 and the marker */
    CHECK (strstr (json_string_value (json_object_get (json_object_get (args, "wide"), "...")) ?: "", "936 more"));
    json_t *d = json_object_get (args, "deep");
    int levels = 0;
    while (json_is_object (d)) {
        d = json_object_get (d, "d");
        levels++;
    }
    CHECK (levels <= 8 && json_is_string (d));
    json_t *plain = json_array_get (lines, 2);
    CHECK (streq (json_string_value (json_object_get (plain, "conversation")) ?: "", "c-1"));
    CHECK (json_integer_value (json_object_get (plain, "n")) == 7);
    json_decref (lines);
    free (name);
    unlink (path);
}

int
main (void)
{
    zsys_init ();
    zsys_set_max_sockets (4096);
    test_clock ();
    test_peek ();
    test_proc ();
    test_io_end_in_dispatch ();
    test_io_send_takes_wakeup ();
    test_io_relay ();
    test_timer_ended_in_pass (false);
    test_timer_ended_in_pass (true);
    test_timer_registry ();
    test_linger ();
    test_zmtp_guard ();
    test_log_bounds ();
    printf ("gw_unit: %s (%d failures)\n", failures ? "FAILED" : "OK", failures);
    return failures ? 1 : 0;
}
