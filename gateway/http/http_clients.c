/*  http_clients.c - who holds the HTTP front's connections: each client
    (an IPv4 address, or an IPv6 /64: one host's share of addresses), and
    what it holds. Two things are bounded, per client and in all.

    Pending connections: accepted, with no whole request yet (a TLS
    handshake, a request head on its way, a keep-alive connection between
    two requests). libwebsockets bounds the time of each (5 s to begin, 10 s
    for a head once begun: bytes trickled in do not extend it) but not how
    many there are, and a flood of them (slowloris, no token needed) held
    its header pool while every new connection, the liveness probe's too,
    waited behind them and was dropped. Here a new connection is never the
    one turned away while others only wait: when its client has
    max_pending_per_client pending, or all clients max_pending_connections,
    the oldest pending connection of its client, or of the client with the
    most, is closed to make room. A request that arrived whole is never
    closed so. Without the token a client can hold nothing else (its
    request is answered at its head), so no flood without it keeps a new
    client out; libwebsockets' header pool is sized to hold every pending
    connection and every held request at once.

    Slots: max_connections bounds the websockets and the requests held for
    the gateway (a kernel start, an /mcp call, a /files transfer); a client
    may hold max_connections_per_client of them, a kernel (a conversation)
    max_connections_per_kernel: 503 beyond, so that one client's websockets
    leave room for the others'. The front has one token, so there is no
    principal finer than the address to share by.

    A connection's record hangs on its network wsi (lws's opaque user
    data): made when lws accepts it, gone with the wsi.
*/
#include "http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct http_client {
    char key[INET6_ADDRSTRLEN + 4]; /* "192.0.2.7", "2001:db8::/64" */
    int connections;                /* TCP connections */
    int slots;                      /* of max_connections */
    zlistx_t *pending;              /* http_conn_t*, oldest first */
};

typedef struct {
    http_client_t *client;
    struct lws *wsi;    /* the network connection */
    void *handle;       /* in client->pending while pending, else NULL */
    int64_t since;      /* when it became pending (zclock_mono, ms) */
    int requests;       /* requests being served on it (HTTP/2: several) */
    bool websocket;
    bool closing;       /* closed to make room: counted nowhere any more */
} http_conn_t;

struct http_clients {
    const http_settings_t *settings;
    zhashx_t *clients; /* key -> http_client_t* (owning) */
    zhashx_t *kernels; /* conversation id -> int* slots held for it (owning) */
    zlistx_t *conns;   /* every http_conn_t (owning): freed at the end whatever lws did */
    int pending;       /* of all clients */
    int slots;         /* of max_connections */
};

static void
item_free (void **item)
{
    free (*item);
    *item = NULL;
}

static void
client_free (void **item)
{
    http_client_t *c = *item;
    if (!c)
        return;
    zlistx_destroy (&c->pending);
    free (c);
    *item = NULL;
}

http_clients_t *
http_clients_new (const http_settings_t *settings)
{
    http_clients_t *self = wire_xcalloc (1, sizeof *self);
    self->settings = settings;
    self->clients = zhashx_new ();
    zhashx_set_destructor (self->clients, client_free);
    self->kernels = zhashx_new ();
    zhashx_set_destructor (self->kernels, item_free);
    self->conns = zlistx_new ();
    zlistx_set_destructor (self->conns, item_free);
    return self;
}

void
http_clients_destroy (http_clients_t **self_p)
{
    http_clients_t *self = *self_p;
    if (!self)
        return;
    zlistx_destroy (&self->conns);
    zhashx_destroy (&self->kernels);
    zhashx_destroy (&self->clients);
    free (self);
    *self_p = NULL;
}

/* ---- clients ------------------------------------------------------------- */

/* Who a peer is: IPv4 (also mapped into IPv6) by its address, IPv6 by its
   /64, which one host commonly has whole. */
static void
client_key (const struct sockaddr_storage *ss, char *out, size_t size)
{
    if (ss->ss_family == AF_INET) {
        inet_ntop (AF_INET, &((const struct sockaddr_in *) ss)->sin_addr, out, (socklen_t) size);
        return;
    }
    if (ss->ss_family != AF_INET6) {
        snprintf (out, size, "local");
        return;
    }
    struct in6_addr a = ((const struct sockaddr_in6 *) ss)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED (&a)) {
        inet_ntop (AF_INET, &a.s6_addr[12], out, (socklen_t) size);
        return;
    }
    memset (&a.s6_addr[8], 0, 8);
    char text[INET6_ADDRSTRLEN];
    inet_ntop (AF_INET6, &a, text, sizeof text);
    snprintf (out, size, "%s/64", text);
}

static http_client_t *
client_of (http_clients_t *self, int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char key[INET6_ADDRSTRLEN + 4];
    if (getpeername (fd, (struct sockaddr *) &ss, &len) < 0)
        ss.ss_family = AF_UNSPEC;
    client_key (&ss, key, sizeof key);
    http_client_t *c = zhashx_lookup (self->clients, key);
    if (!c) {
        c = wire_xcalloc (1, sizeof *c);
        snprintf (c->key, sizeof c->key, "%s", key);
        c->pending = zlistx_new ();
        zhashx_insert (self->clients, key, c);
    }
    return c;
}

/* A client that holds nothing is forgotten. */
static void
client_check (http_clients_t *self, http_client_t *c)
{
    if (!c->connections && !c->slots)
        zhashx_delete (self->clients, c->key);
}

/* ---- pending connections ------------------------------------------------- */

static http_conn_t *
conn_of (struct lws *wsi)
{
    struct lws *net = wsi ? lws_get_network_wsi (wsi) : NULL;
    return net ? lws_get_opaque_user_data (net) : NULL;
}

static void
pending_begin (http_clients_t *self, http_conn_t *c)
{
    if (c->handle || c->closing || c->websocket || c->requests)
        return;
    c->handle = zlistx_add_end (c->client->pending, c);
    c->since = zclock_mono ();
    self->pending++;
}

static void
pending_end (http_clients_t *self, http_conn_t *c)
{
    if (!c->handle)
        return;
    zlistx_delete (c->client->pending, c->handle);
    c->handle = NULL;
    self->pending--;
}

/* Closes a pending connection to make room, at once for the counts and on
   lws's next pass for the socket: lws is asked to kill it, and its socket
   is shut down so that a connection lws does not read meanwhile (one
   waiting for a header buffer) ends too. */
static void
make_room (http_clients_t *self, http_client_t *c, const char *why)
{
    http_conn_t *victim = c ? zlistx_first (c->pending) : NULL;
    if (!victim)
        return;
    pending_end (self, victim);
    victim->closing = true;
    lws_set_timeout (victim->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
    shutdown (lws_get_socket_fd (victim->wsi), SHUT_RDWR);
    char source[96];
    snprintf (source, sizeof source, "http/%s", c->key);
    gw_log_limited (source, "http_pending_closed", "{s:s, s:s}", "client", c->key, "why", why);
}

/* The client holding the most pending connections; of two as many, the
   one whose oldest is older, so that among many clients of one each (a
   flood from many addresses) the connection closed is the longest
   waiting, never one whose head is just arriving. */
static http_client_t *
busiest (http_clients_t *self)
{
    http_client_t *best = NULL;
    for (http_client_t *c = zhashx_first (self->clients); c; c = zhashx_next (self->clients)) {
        size_t n = zlistx_size (c->pending), m = best ? zlistx_size (best->pending) : 0;
        if (n && (n > m || (n == m && ((http_conn_t *) zlistx_first (c->pending))->since
                                          < ((http_conn_t *) zlistx_first (best->pending))->since)))
            best = c;
    }
    return best;
}

int
http_clients_accepted (http_clients_t *self, struct lws *wsi)
{
    const http_settings_t *s = self->settings;
    http_client_t *c = client_of (self, lws_get_socket_fd (wsi));
    if (c->connections >= s->max_connections_per_client + s->max_pending_per_client) {
        if (!zlistx_size (c->pending)) {
            char source[96];
            snprintf (source, sizeof source, "http/%s", c->key);
            gw_log_limited (source, "http_connection_refused", "{s:s, s:s}", "client", c->key, "why",
                            "the client holds http.max_connections_per_client + http.max_pending_per_client "
                            "connections");
            client_check (self, c);
            return -1;
        }
        make_room (self, c, "http.max_connections_per_client + http.max_pending_per_client: the client's oldest "
                            "connection without a request");
    }
    if ((int) zlistx_size (c->pending) >= s->max_pending_per_client)
        make_room (self, c, "http.max_pending_per_client: the client's oldest connection without a request");
    else if (self->pending >= s->max_pending)
        make_room (self, busiest (self), "http.max_pending_connections: the oldest connection without a request "
                                         "of the client with the most");
    http_conn_t *conn = wire_xcalloc (1, sizeof *conn);
    conn->client = c;
    conn->wsi = wsi;
    c->connections++;
    zlistx_add_end (self->conns, conn);
    lws_set_opaque_user_data (wsi, conn);
    pending_begin (self, conn);
    return 0;
}

void
http_clients_gone (http_clients_t *self, struct lws *wsi)
{
    http_conn_t *conn = lws_get_opaque_user_data (wsi);
    if (!conn || conn->wsi != wsi)
        return; /* not a connection of ours (the listener, an HTTP/2 stream) */
    lws_set_opaque_user_data (wsi, NULL);
    pending_end (self, conn);
    http_client_t *c = conn->client;
    c->connections--;
    client_check (self, c);
    zlistx_delete (self->conns, zlistx_find (self->conns, conn));
}

void
http_clients_request_begin (http_clients_t *self, struct lws *wsi, bool *busy)
{
    http_conn_t *conn = conn_of (wsi);
    if (*busy || !conn)
        return;
    *busy = true;
    conn->requests++;
    pending_end (self, conn);
}

void
http_clients_request_end (http_clients_t *self, struct lws *wsi, bool *busy)
{
    http_conn_t *conn = conn_of (wsi);
    if (!*busy)
        return;
    *busy = false;
    if (!conn)
        return;
    conn->requests--;
    pending_begin (self, conn); /* the next request's head is awaited */
}

void
http_clients_websocket (http_clients_t *self, struct lws *wsi)
{
    http_conn_t *conn = conn_of (wsi);
    if (!conn)
        return;
    conn->websocket = true;
    pending_end (self, conn);
}

bool
http_clients_closing (struct lws *wsi)
{
    http_conn_t *conn = conn_of (wsi);
    return conn && conn->closing;
}

/* ---- slots of max_connections --------------------------------------------- */

static int *
kernel_slots (http_clients_t *self, const char *conv_id)
{
    int *n = zhashx_lookup (self->kernels, conv_id);
    if (!n) {
        n = wire_xcalloc (1, sizeof *n);
        zhashx_insert (self->kernels, conv_id, n);
    }
    return n;
}

const char *
http_clients_refusal (http_clients_t *self, struct lws *wsi, gw_conv_t *conv)
{
    const http_settings_t *s = self->settings;
    http_conn_t *conn = conn_of (wsi);
    int *held = conv ? zhashx_lookup (self->kernels, gw_conv_id (conv)) : NULL;
    if (self->slots >= s->max_connections)
        return "the gateway holds its maximum of connections (http.max_connections)";
    if (conn && conn->client->slots >= s->max_connections_per_client)
        return "this client holds its share of the gateway's connections (http.max_connections_per_client): "
               "it closes some of its websockets or waiting requests first";
    if (held && *held >= s->max_connections_per_kernel)
        return "this kernel holds its share of the gateway's connections (http.max_connections_per_kernel): "
               "close some of its websockets first";
    return NULL;
}

void
http_clients_take (http_clients_t *self, struct lws *wsi, http_slot_t *slot, gw_conv_t *conv)
{
    http_clients_release (self, slot);
    http_conn_t *conn = conn_of (wsi);
    self->slots++;
    slot->taken = true;
    if (conn) {
        slot->client = conn->client;
        slot->client->slots++;
    }
    if (conv) {
        slot->conv = wire_xstrdup (gw_conv_id (conv));
        (*kernel_slots (self, slot->conv))++;
    }
}

void
http_clients_release (http_clients_t *self, http_slot_t *slot)
{
    if (!slot->taken)
        return;
    self->slots--;
    if (slot->client) {
        slot->client->slots--;
        client_check (self, slot->client);
    }
    if (slot->conv) {
        int *n = kernel_slots (self, slot->conv);
        if (--*n <= 0)
            zhashx_delete (self->kernels, slot->conv);
        free (slot->conv);
    }
    memset (slot, 0, sizeof *slot);
}

int
http_clients_slots (const http_clients_t *self)
{
    return self->slots;
}
