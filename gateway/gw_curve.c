/*  gw_curve.c - CurveZMQ on the client sockets of `--transport tcp`.

    A TCP port on the host is reachable by every local user (and, off
    loopback, by the network); the HMAC key only signs, it does not hide,
    and ROUTER identities are guessable from iopub. So every tcp socket a
    client talks to is a CURVE server: encrypted, and a peer is admitted
    only with the client key handed out with the same connection info.

    Each set of sockets (a conversation's five, or the control socket) has
    its own server keypair, client keypair and ZAP domain. libzmq asks the
    ZAP handler (RFC 27) about every CURVE handshake; ours runs in the
    gateway's loop and admits a client key only on the domain it was made
    for, so one conversation's keys open nothing else.
*/
#include "gw_curve.h"
#include "gw_log.h"
#include "wire.h"

#include <string.h>

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"

struct gw_zap {
    zloop_t *loop;
    zsock_t *rep;
    zhashx_t *allowed; /* domain -> client public key (z85) */
    int64_t refused;   /* since the last refusal logged */
    int64_t logged_at; /* ms, zclock_mono */
};

int
gw_curve_keys_new (gw_curve_keys_t *keys)
{
    if (!zmq_has ("curve"))
        return -1;
    if (zmq_curve_keypair (keys->server_public, keys->server_secret) < 0
        || zmq_curve_keypair (keys->client_public, keys->client_secret) < 0)
        return -1;
    char rnd[WIRE_ID_SIZE];
    wire_id_new (rnd);
    snprintf (keys->domain, sizeof keys->domain, "kennel-%.24s", rnd);
    return 0;
}

void
gw_curve_server (zsock_t *s, const gw_curve_keys_t *keys)
{
    zsock_set_curve_server (s, 1);
    zsock_set_curve_secretkey (s, keys->server_secret);
    zsock_set_zap_domain (s, keys->domain);
}

void
gw_curve_info (const gw_curve_keys_t *keys, json_t *info)
{
    /* pyzmq's option names: a client sets them as they come (pykernel
       host module, gateway/python/README.md) */
    json_object_set_new (info, "curve_serverkey", json_string (keys->server_public));
    json_object_set_new (info, "curve_publickey", json_string (keys->client_public));
    json_object_set_new (info, "curve_secretkey", json_string (keys->client_secret));
}

int
gw_client_connect (zsock_t *s, const json_t *info, int port)
{
    const char *transport = json_string_value (json_object_get (info, "transport"));
    const char *ip = json_string_value (json_object_get (info, "ip"));
    const char *server = json_string_value (json_object_get (info, "curve_serverkey"));
    if (!transport || !ip)
        return -1;
    if (server) {
        const char *pub = json_string_value (json_object_get (info, "curve_publickey"));
        const char *sec = json_string_value (json_object_get (info, "curve_secretkey"));
        if (!pub || !sec)
            return -1;
        zsock_set_curve_serverkey (s, server);
        zsock_set_curve_publickey (s, pub);
        zsock_set_curve_secretkey (s, sec);
    }
    return zsock_connect (s, streq (transport, "ipc") ? "ipc://%s-%d" : "tcp://%s:%d", ip, port);
}

/* ---- the ZAP handler ----------------------------------------------------- */

/* A local user may knock as often as it likes: one line a second at most,
   saying how many refusals it stands for. */
static void
zap_log_refusal (gw_zap_t *self, const char *domain, const char *address, const char *why)
{
    self->refused++;
    int64_t now = zclock_mono ();
    if (self->logged_at && now - self->logged_at < 1000)
        return;
    gw_log ("curve_refused", "{s:s, s:s, s:s, s:I}", "domain", domain, "address", address, "reason", why,
            "refusals", (json_int_t) self->refused);
    self->refused = 0;
    self->logged_at = now;
}

/* RFC 27: version, request id, domain, address, identity, mechanism,
   credentials (CURVE: the client's 32-byte public key). */
static int
on_zap_request (zloop_t *loop, zsock_t *sock, void *arg)
{
    gw_zap_t *self = arg;
    zmsg_t *req = zmsg_recv (sock);
    if (!req)
        return 0;
    char *version = zmsg_popstr (req);
    zframe_t *request_id = zmsg_pop (req);
    char *domain = zmsg_popstr (req);
    char *address = zmsg_popstr (req);
    zframe_t *identity = zmsg_pop (req);
    char *mechanism = zmsg_popstr (req);
    zframe_t *key = zmsg_pop (req);
    const char *expected = domain ? zhashx_lookup (self->allowed, domain) : NULL;
    char got[41] = "";
    if (key && zframe_size (key) == 32)
        zmq_z85_encode (got, zframe_data (key), 32);
    const char *why = !version || !streq (version, "1.0")         ? "bad ZAP request"
                      : !mechanism || !streq (mechanism, "CURVE") ? "not CURVE"
                      : !expected                                 ? "unknown domain"
                      : !*got || !streq (got, expected)           ? "wrong client key"
                                                                  : NULL;
    if (why)
        zap_log_refusal (self, domain ? domain : "", address ? address : "", why);
    zmsg_t *reply = zmsg_new ();
    zmsg_addstr (reply, "1.0");
    if (request_id)
        zmsg_append (reply, &request_id);
    else
        zmsg_addstr (reply, "");
    zmsg_addstr (reply, why ? "400" : "200");
    zmsg_addstr (reply, why ? why : "OK");
    zmsg_addstr (reply, "");
    zmsg_addmem (reply, NULL, 0);
    zmsg_send (&reply, sock);
    zframe_destroy (&request_id);
    zframe_destroy (&identity);
    zframe_destroy (&key);
    freen (version);
    freen (domain);
    freen (address);
    freen (mechanism);
    zmsg_destroy (&req);
    return 0;
}

gw_zap_t *
gw_zap_new (zloop_t *loop, char **errmsg)
{
    gw_zap_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->allowed = zhashx_new ();
    zhashx_set_destructor (self->allowed, (zhashx_destructor_fn *) zstr_free);
    zhashx_set_duplicator (self->allowed, (zhashx_duplicator_fn *) strdup);
    self->rep = zsock_new (ZMQ_REP);
    /* no handler bound means libzmq admits every CURVE client: fail closed */
    if (!self->rep || zsock_bind (self->rep, ZAP_ENDPOINT) < 0
        || zloop_reader (loop, self->rep, on_zap_request, self) < 0) {
        *errmsg = wire_xasprintf ("cannot start the CurveZMQ authentication (ZAP) handler on %s: %s", ZAP_ENDPOINT,
                                  zmq_strerror (zmq_errno ()));
        gw_zap_destroy (&self);
    }
    return self;
}

void
gw_zap_destroy (gw_zap_t **self_p)
{
    gw_zap_t *self = *self_p;
    if (!self)
        return;
    if (self->rep)
        zloop_reader_end (self->loop, self->rep);
    zsock_destroy (&self->rep);
    zhashx_destroy (&self->allowed);
    free (self);
    *self_p = NULL;
}

void
gw_zap_allow (gw_zap_t *self, const gw_curve_keys_t *keys)
{
    zhashx_update (self->allowed, keys->domain, (void *) keys->client_public);
}

void
gw_zap_forget (gw_zap_t *self, const gw_curve_keys_t *keys)
{
    zhashx_delete (self->allowed, keys->domain);
}
