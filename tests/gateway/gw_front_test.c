/*  gw_front_test.c - self-test of the core's peers (gateway/gw_peers.c, the
    contract of gw_front.h) on their own (make check):

    - what a peer submits reaches the core with the peer's token in front of
      its route; delivered back with that token, it reaches that peer only,
      token removed, route and parts intact;
    - iopub reaches every attached peer, the same frames each;
    - a peer detached (also from inside its own delivery, and another peer
      from inside a delivery) gets nothing more, and what names it is
      dropped; a peer attached during a delivery is served from then on;
    - gw_peers_find finds a front's own peer by its fns;
    - wrap and unwrap: route + delimiter + empty signature + parts, and back;
    - a peer detached is told to the core once, with the token that named
      it (the core's tool calls it served end), and no longer counts as
      attached; the peers destroy ends are not told;
    - a peer of events only (deliver NULL) gets no message, costs the
      others nothing (iopub goes whole to the last one that takes it),
      hears the events and may detach inside one;
    - at destroy every peer still attached hears GW_EVENT_CLOSED, once.

    Exit 0 when every check passed; each failure prints one line.
*/
#include "gateway/gw_peers.h"
#include "tests/gateway/gw_check.h"

#include <string.h>

static gw_peers_t *s_peers; /* the one conversation's peers */

typedef struct {
    int delivered[WIRE_CHANNEL_COUNT_];
    zmsg_t *last;
    int closed;
    int closing;
    gw_peer_t *peer;
    gw_peer_t **detach_on_deliver; /* a peer to detach from inside a delivery */
    bool attach_on_deliver;
} fake_t;

static fake_t s_late;
static const gw_front_fns_t fake_fns;

static void
fake_deliver (void *arg, wire_channel_t channel, zmsg_t **msg_p)
{
    fake_t *self = arg;
    self->delivered[channel]++;
    zmsg_destroy (&self->last);
    self->last = *msg_p;
    *msg_p = NULL;
    if (self->detach_on_deliver)
        gw_front_detach (self->detach_on_deliver);
    if (self->attach_on_deliver) {
        self->attach_on_deliver = false;
        s_late.peer = gw_peers_attach (s_peers, &fake_fns, &s_late);
    }
}

static void fake_event (void *arg, gw_event_t event, const char *detail);
static const gw_front_fns_t fake_fns = {fake_deliver, fake_event};
static const gw_front_fns_t other_fns = {fake_deliver, fake_event};

static void
fake_event (void *arg, gw_event_t event, const char *detail)
{
    fake_t *self = arg;
    if (event == GW_EVENT_CLOSED)
        self->closed++;
    if (event == GW_EVENT_CLOSING)
        self->closing++;
}

/* The core's side: what was submitted last. */
static zmsg_t *s_submitted;
static wire_channel_t s_submitted_channel;

static void
core_submit (void *arg, wire_channel_t channel, zmsg_t **msg_p)
{
    zmsg_destroy (&s_submitted);
    s_submitted = *msg_p;
    *msg_p = NULL;
    s_submitted_channel = channel;
}

/* The core's side: the peers it heard detach, the last one's token. */
static int s_gone;
static zframe_t *s_gone_token;

static void
core_gone (void *arg, zframe_t *token)
{
    s_gone++;
    zframe_destroy (&s_gone_token);
    s_gone_token = zframe_dup (token);
}

/* ["route-N", delimiter, "", header, parent, metadata, content] */
static zmsg_t *
message (const char *route)
{
    zmsg_t *parts = zmsg_new ();
    zmsg_addstr (parts, "{\"msg_type\":\"t\"}");
    zmsg_addstr (parts, "{}");
    zmsg_addstr (parts, "{}");
    zmsg_addstr (parts, "{\"x\":1}");
    zmsg_t *r = zmsg_new ();
    zmsg_addstr (r, route);
    return gw_front_msg_wrap (&r, &parts);
}

static bool
first_is (zmsg_t *msg, const char *text)
{
    return msg && zmsg_first (msg) && zframe_streq (zmsg_first (msg), text);
}

static void
test_route_by_token (void)
{
    fake_t a = {0}, b = {0};
    a.peer = gw_peers_attach (s_peers, &fake_fns, &a);
    b.peer = gw_peers_attach (s_peers, &fake_fns, &b);
    zmsg_t *msg = message ("client-b");
    gw_front_submit (b.peer, WIRE_SHELL, &msg);
    CHECK (!msg && s_submitted && s_submitted_channel == WIRE_SHELL);
    CHECK (zmsg_size (s_submitted) == 8); /* token + route + delimiter + signature + 4 parts */
    /* the answer comes back with the same routing frames */
    zmsg_t *answer = zmsg_dup (s_submitted);
    gw_peers_deliver (s_peers, WIRE_SHELL, &answer);
    CHECK (!answer);
    CHECK (b.delivered[WIRE_SHELL] == 1 && a.delivered[WIRE_SHELL] == 0);
    CHECK (first_is (b.last, "client-b") && zmsg_size (b.last) == 7);
    zmsg_t *route = NULL;
    zmsg_t *parts = gw_front_msg_unwrap (&b.last, &route);
    CHECK (parts && zmsg_size (parts) == 4 && route && zmsg_size (route) == 1 && first_is (route, "client-b"));
    zmsg_destroy (&parts);
    zmsg_destroy (&route);
    /* iopub: everyone */
    zmsg_t *pub = message ("kernel.x.status");
    gw_peers_deliver (s_peers, WIRE_IOPUB, &pub);
    CHECK (!pub && a.delivered[WIRE_IOPUB] == 1 && b.delivered[WIRE_IOPUB] == 1);
    CHECK (a.last && b.last && zmsg_size (a.last) == 7 && first_is (a.last, "kernel.x.status")
           && first_is (b.last, "kernel.x.status"));
    CHECK (gw_peers_find (s_peers, &fake_fns) == &a && gw_peers_find (s_peers, &other_fns) == NULL);
    /* b goes: what answers it is dropped, a is unaffected */
    gw_front_detach (&b.peer);
    CHECK (!b.peer);
    answer = zmsg_dup (s_submitted);
    gw_peers_deliver (s_peers, WIRE_SHELL, &answer);
    CHECK (!answer && b.delivered[WIRE_SHELL] == 1 && a.delivered[WIRE_SHELL] == 0);
    /* a message with no token, or a token of nobody: dropped */
    zmsg_t *stray = message ("x");
    gw_peers_deliver (s_peers, WIRE_SHELL, &stray);
    CHECK (!stray && a.delivered[WIRE_SHELL] == 0);
    gw_front_detach (&a.peer);
    zmsg_destroy (&a.last);
    zmsg_destroy (&b.last);
}

static void
test_detach_inside_delivery (void)
{
    fake_t a = {0}, b = {0}, c = {0};
    a.peer = gw_peers_attach (s_peers, &fake_fns, &a);
    b.peer = gw_peers_attach (s_peers, &fake_fns, &b);
    c.peer = gw_peers_attach (s_peers, &fake_fns, &c);
    a.detach_on_deliver = &a.peer; /* itself */
    b.detach_on_deliver = &c.peer; /* a peer later in the walk */
    b.attach_on_deliver = true;
    zmsg_t *pub = message ("topic");
    gw_peers_deliver (s_peers, WIRE_IOPUB, &pub);
    CHECK (a.delivered[WIRE_IOPUB] == 1 && b.delivered[WIRE_IOPUB] == 1 && c.delivered[WIRE_IOPUB] == 0);
    CHECK (!a.peer && !c.peer && b.peer);
    b.detach_on_deliver = NULL;
    pub = message ("topic");
    gw_peers_deliver (s_peers, WIRE_IOPUB, &pub);
    CHECK (a.delivered[WIRE_IOPUB] == 1 && b.delivered[WIRE_IOPUB] == 2 && c.delivered[WIRE_IOPUB] == 0);
    CHECK (s_late.peer && s_late.delivered[WIRE_IOPUB] == 1); /* attached during the first walk */
    gw_front_detach (&s_late.peer);
    zmsg_destroy (&s_late.last);
    /* submitting through a detached handle is not possible (NULL); b's works */
    zmsg_t *msg = message ("b");
    gw_front_submit (b.peer, WIRE_STDIN, &msg);
    CHECK (s_submitted_channel == WIRE_STDIN);
    gw_front_detach (&b.peer);
    zmsg_destroy (&a.last);
    zmsg_destroy (&b.last);
}

static void
test_gone_told_once (void)
{
    fake_t a = {0};
    a.peer = gw_peers_attach (s_peers, &fake_fns, &a);
    zmsg_t *msg = message ("client-a");
    gw_front_submit (a.peer, WIRE_SHELL, &msg);
    zframe_t *token = zframe_dup (zmsg_first (s_submitted));
    CHECK (gw_peers_attached (s_peers, token));
    int before = s_gone;
    gw_front_detach (&a.peer);
    CHECK (s_gone == before + 1 && s_gone_token && zframe_eq (s_gone_token, token));
    CHECK (!gw_peers_attached (s_peers, token));
    gw_front_detach (&a.peer); /* already NULL: nothing */
    CHECK (s_gone == before + 1);
    zframe_destroy (&token);
}

/* A peer of events only (deliver NULL): no message reaches it, iopub
   goes whole to the others, it hears the events, it detaches inside one. */
static gw_peer_t *s_events_only;
static int s_events_heard;

static void
events_only_event (void *arg, gw_event_t event, const char *detail)
{
    (void) arg, (void) detail;
    s_events_heard++;
    if (event == GW_EVENT_CLOSING)
        gw_front_detach (&s_events_only);
}

static const gw_front_fns_t events_only_fns = {NULL, events_only_event};

static void
test_events_only (void)
{
    fake_t a = {0};
    s_events_only = gw_peers_attach (s_peers, &events_only_fns, NULL);
    a.peer = gw_peers_attach (s_peers, &fake_fns, &a);
    zmsg_t *pub = message ("topic");
    gw_peers_deliver (s_peers, WIRE_IOPUB, &pub);
    CHECK (!pub && a.delivered[WIRE_IOPUB] == 1 && a.last && zmsg_size (a.last) == 7);
    gw_peers_event (s_peers, GW_EVENT_KERNEL_READY, NULL);
    CHECK (s_events_heard == 1 && s_events_only);
    gw_peers_event (s_peers, GW_EVENT_CLOSING, "closed");
    CHECK (s_events_heard == 2 && !s_events_only && a.closing == 1);
    gw_peers_event (s_peers, GW_EVENT_CLOSING, "closed");
    CHECK (s_events_heard == 2); /* detached inside its event: nothing more */
    gw_front_detach (&a.peer);
    zmsg_destroy (&a.last);
}

static void
test_closed_once (void)
{
    fake_t a = {0}, b = {0};
    a.peer = gw_peers_attach (s_peers, &fake_fns, &a);
    b.peer = gw_peers_attach (s_peers, &fake_fns, &b);
    gw_front_detach (&b.peer);
    gw_peers_event (s_peers, GW_EVENT_CLOSING, "the conversation was closed by the host; the kernel is gone");
    CHECK (a.closing == 1 && b.closing == 0);
    int gone = s_gone;
    gw_peers_destroy (&s_peers, "close_request");
    CHECK (!s_peers && a.closed == 1 && b.closed == 0 && s_gone == gone);
}

int
main (void)
{
    s_peers = gw_peers_new (NULL, core_submit, core_gone, NULL);
    test_route_by_token ();
    test_detach_inside_delivery ();
    test_gone_told_once ();
    test_events_only ();
    test_closed_once ();
    zframe_destroy (&s_gone_token);
    zmsg_destroy (&s_submitted);
    if (failures)
        fprintf (stderr, "gw_front_test: %d checks failed\n", failures);
    return failures ? 1 : 0;
}
