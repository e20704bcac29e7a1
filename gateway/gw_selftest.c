/*  gw_selftest.c - `kennel selftest`: start a real confined kernel through
    the same path as a conversation, run code inside that checks the sandbox
    from within, print the layer report and the findings; exit non-zero when
    anything is wrong. A health check that runs no code proves nothing.
*/
#include "gw_selftest.h"
#include "gw_config.h"
#include "gw_conv.h"
#include "gw_core.h"
#include "gw_curve.h"
#include "gw_server.h"
#include "gw_timer.h"
#include "gw_zmq_front.h"
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Runs inside the sandbox; prints one JSON line. The host paths it must not
   see and the ports of the host's loopback listeners are passed in. "No
   network" is proven without aiming anywhere off this machine: the host's
   listeners must see nothing, the sandbox has only lo and no route, and a
   nameserver in resolv.conf gets a route lookup only (connect on UDP sends
   nothing). */
static const char *check_code
    = "import json, os, socket\n"
      "r = {'uid': os.getuid(), 'hostname': socket.gethostname()}\n"
      "def attempt(kind, port):\n"
      "    try:\n"
      "        if kind == 'tcp':\n"
      "            socket.create_connection(('127.0.0.1', port), timeout=2).close()\n"
      "            return 'connected'\n"
      "        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:\n"
      "            s.sendto(b'kennel-selftest', ('127.0.0.1', port))\n"
      "        return 'sent to its own lo'\n"
      "    except OSError as e:\n"
      "        return type(e).__name__\n"
      "def routable(ns):\n"
      "    try:\n"
      "        with socket.socket(socket.AF_INET6 if ':' in ns else socket.AF_INET, socket.SOCK_DGRAM) as s:\n"
      "            s.connect((ns, 53))\n"
      "        return not ns.startswith('127.') and ns != '::1'\n"
      "    except OSError:\n"
      "        return False\n"
      "servers = []\n"
      "if os.path.exists('/etc/resolv.conf'):\n"
      "    servers = [l.split()[1] for l in open('/etc/resolv.conf') if l.startswith('nameserver')]\n"
      "r['network'] = {'tcp': attempt('tcp', TCP_PORT), 'udp': attempt('udp', UDP_PORT),\n"
      "    'interfaces': sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]),\n"
      "    'routes': len(open('/proc/net/route').read().splitlines()) - 1,\n"
      "    'routable_nameservers': [ns for ns in servers if routable(ns)]}\n"
      "r['visible_host_paths'] = [p for p in HOST_PATHS if os.path.exists(p)]\n"
      "try:\n"
      "    with open('/workspace/.kennel-selftest', 'w') as f: f.write('ok')\n"
      "    r['workspace_writable'] = open('/workspace/.kennel-selftest').read() == 'ok'\n"
      "    os.remove('/workspace/.kennel-selftest')\n"
      "except OSError as e:\n"
      "    r['workspace_writable'] = False\n"
      "r['env'] = sorted(os.environ)\n"
      "print('KENNEL-SELFTEST ' + json.dumps(r))\n";

/* A TCP listener and a UDP socket on the host's loopback: reaching either
   from inside is an escape. */
typedef struct {
    int tcp, udp;
    int tcp_port, udp_port;
} listeners_t;

typedef struct {
    gw_server_t *server;
    gw_conv_t *conv;
    zsock_t *shell;
    zsock_t *iopub;
    wire_key_t *key;
    char msg_id[64];
    char *stdout_text;
    json_t *reply;
    bool idle;
    int failures;
    const char *host_secret_env;
    listeners_t listeners;
} selftest_t;

static void
report (selftest_t *self, bool ok, const char *what, const char *detail)
{
    printf ("%s %-22s %s\n", ok ? "ok  " : "FAIL", what, detail ? detail : "");
    if (!ok)
        self->failures++;
}

static int
listener_open (int type, int *port)
{
    int fd = socket (AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    socklen_t len = sizeof addr;
    if (fd < 0 || bind (fd, (struct sockaddr *) &addr, sizeof addr) < 0
        || (type == SOCK_STREAM && listen (fd, 8) < 0) || getsockname (fd, (struct sockaddr *) &addr, &len) < 0) {
        if (fd >= 0)
            close (fd);
        return -1;
    }
    *port = ntohs (addr.sin_port);
    return fd;
}

static int
listeners_open (listeners_t *l)
{
    l->tcp = listener_open (SOCK_STREAM, &l->tcp_port);
    l->udp = listener_open (SOCK_DGRAM, &l->udp_port);
    return l->tcp >= 0 && l->udp >= 0 ? 0 : -1;
}

/* Whether anything connected or arrived since the listeners opened. */
static bool
listeners_reached (listeners_t *l)
{
    char byte;
    int conn = accept4 (l->tcp, NULL, NULL, SOCK_CLOEXEC);
    if (conn >= 0)
        close (conn);
    return conn >= 0 || recv (l->udp, &byte, 1, MSG_DONTWAIT) >= 0;
}

static void
listeners_close (listeners_t *l)
{
    if (l->tcp >= 0)
        close (l->tcp);
    if (l->udp >= 0)
        close (l->udp);
}

static void
evaluate_network (selftest_t *self, json_t *net)
{
    const char *tcp = json_string_value (json_object_get (net, "tcp"));
    json_t *ifs = json_object_get (net, "interfaces");
    bool only_lo = json_array_size (ifs) == 1 && streq (json_string_value (json_array_get (ifs, 0)), "lo");
    bool reached = listeners_reached (&self->listeners);
    json_int_t routes = json_integer_value (json_object_get (net, "routes"));
    size_t resolvers = json_array_size (json_object_get (net, "routable_nameservers"));
    char *text = json_dumps (net, JSON_COMPACT);
    char buf[768];
    snprintf (buf, sizeof buf, "host listeners on 127.0.0.1 tcp:%d udp:%d %s; inside %s", self->listeners.tcp_port,
              self->listeners.udp_port, reached ? "WERE REACHED" : "saw nothing", text ? text : "?");
    free (text);
    report (self, !reached && tcp && !streq (tcp, "connected") && only_lo && routes == 0 && resolvers == 0,
            "no network", buf);
}

static void
evaluate (selftest_t *self)
{
    const char *marker = self->stdout_text ? strstr (self->stdout_text, "KENNEL-SELFTEST ") : NULL;
    json_t *r = marker ? json_loads (marker + 16, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    const char *status = json_string_value (json_object_get (self->reply, "status"));
    report (self, status && streq (status, "ok") && r, "code ran inside", status ? status : "no reply");
    if (r) {
        char buf[512];
        int uid = (int) json_integer_value (json_object_get (r, "uid"));
        snprintf (buf, sizeof buf, "uid %d", uid);
        report (self, uid != 0, "not root inside", buf);
        evaluate_network (self, json_object_get (r, "network"));
        json_t *seen = json_object_get (r, "visible_host_paths");
        char *text = json_dumps (seen, JSON_COMPACT);
        report (self, json_array_size (seen) == 0, "no host secrets", text);
        free (text);
        json_t *env = json_object_get (r, "env");
        bool leaked = false;
        size_t i;
        json_t *v;
        json_array_foreach (env, i, v)
            if (streq (json_string_value (v), self->host_secret_env))
                leaked = true;
        report (self, !leaked, "no host environment", leaked ? "a gateway variable is visible" : "");
        report (self, json_is_true (json_object_get (r, "workspace_writable")), "/workspace writable", "");
        report (self, true, "hostname", json_string_value (json_object_get (r, "hostname")));
    }
    json_decref (r);
}

static void
maybe_done (selftest_t *self)
{
    if (self->reply && self->idle) {
        evaluate (self);
        gw_server_stop (self->server);
    }
}

static int
on_shell (zloop_t *loop, zsock_t *sock, void *arg)
{
    selftest_t *self = arg;
    zmsg_t *msg = zmsg_recv (sock);
    wire_error_t err;
    wire_msg_t *m = msg ? wire_msg_decode (&msg, self->key, NULL, &wire_limits_default, &err) : NULL;
    if (m && streq (wire_msg_type (m), "execute_reply")) {
        self->reply = json_incref (m->content);
        json_t *kennel = json_object_get (m->metadata, "kennel");
        report (self, kennel != NULL, "metadata.kennel", "");
    }
    wire_msg_destroy (&m);
    maybe_done (self);
    return 0;
}

static int
on_iopub (zloop_t *loop, zsock_t *sock, void *arg)
{
    selftest_t *self = arg;
    zmsg_t *msg = zmsg_recv (sock);
    wire_error_t err;
    wire_msg_t *m = msg ? wire_msg_decode (&msg, self->key, NULL, &wire_limits_default, &err) : NULL;
    const char *parent = m ? json_string_value (json_object_get (m->parent_header, "msg_id")) : NULL;
    if (m && parent && streq (parent, self->msg_id)) {
        const char *type = wire_msg_type (m);
        if (streq (type, "stream")) {
            const char *text = json_string_value (json_object_get (m->content, "text"));
            char *joined = wire_xasprintf ("%s%s", self->stdout_text ? self->stdout_text : "", text ? text : "");
            free (self->stdout_text);
            self->stdout_text = joined;
        }
        else if (streq (type, "error"))
            report (self, false, "error inside", json_string_value (json_object_get (m->content, "evalue")));
        else if (streq (type, "status")
                 && streq (json_string_value (json_object_get (m->content, "execution_state")), "idle"))
            self->idle = true;
    }
    wire_msg_destroy (&m);
    maybe_done (self);
    return 0;
}

static void
on_ready (gw_conv_t *conv, bool ok, const char *errmsg, void *arg)
{
    selftest_t *self = arg;
    json_t *layers = gw_server_last_layers (self->server);
    if (layers) {
        printf ("layers:\n");
        const char *name;
        json_t *layer;
        json_object_foreach (layers, name, layer)
            printf ("  %-10s %-12s %s\n", name, json_string_value (json_object_get (layer, "state")),
                    json_string_value (json_object_get (layer, "reason")));
    }
    report (self, ok, "confined kernel start", ok ? "" : errmsg);
    if (!ok) {
        gw_server_stop (self->server);
        return;
    }
    json_t *c = gw_zmq_connection_json (gw_zmq_of (conv));
    const char *key = json_string_value (json_object_get (c, "key"));
    wire_error_t err;
    self->key = wire_key_new (NULL, key, strlen (key), &err);
    self->shell = zsock_new (ZMQ_DEALER);
    self->iopub = zsock_new (ZMQ_SUB);
    zsock_set_subscribe (self->iopub, "");
    gw_client_connect (self->shell, c, (int) json_integer_value (json_object_get (c, "shell_port")));
    gw_client_connect (self->iopub, c, (int) json_integer_value (json_object_get (c, "iopub_port")));
    json_decref (c);
    zloop_reader (gw_server_loop (self->server), self->shell, on_shell, self);
    zloop_reader (gw_server_loop (self->server), self->iopub, on_iopub, self);
    /* the host paths the kernel must not see: secrets and our own state */
    json_t *paths = json_pack ("[s, s, s, s, s]", "/etc/shadow", "/root/.ssh", "/home", "/var/lib/kennel",
                               gw_server_state_dir (self->server));
    char *plist = json_dumps (paths, JSON_COMPACT);
    json_decref (paths);
    char *code = wire_xasprintf ("HOST_PATHS = %s\nTCP_PORT = %d\nUDP_PORT = %d\n%s", plist, self->listeners.tcp_port,
                                 self->listeners.udp_port, check_code);
    free (plist);
    /* the SUB needs a moment to subscribe; the relay's own handshake made
       the kernel side ready, this is the client side of the same race */
    zclock_sleep (300);
    wire_msg_t *req = wire_msg_new (NULL, "execute_request", NULL);
    wire_msg_set_content (req, json_pack ("{s:s, s:b, s:b, s:{}, s:b, s:b}", "code", code, "silent", 0,
                                          "store_history", 0, "user_expressions", "allow_stdin", 0, "stop_on_error",
                                          1));
    snprintf (self->msg_id, sizeof self->msg_id, "%s", wire_msg_id (req));
    wire_msg_send (req, self->shell, self->key);
    wire_msg_destroy (&req);
    free (code);
}

static int
on_deadline (zloop_t *loop, int timer_id, void *arg)
{
    selftest_t *self = arg;
    report (self, false, "finished in time", "no answer within 60 s");
    gw_server_stop (self->server);
    return 0;
}

int
gw_selftest_run (const char *config_path)
{
    char *errmsg = NULL;
    /* a variable only the gateway has: it must not be seen inside */
    setenv ("KENNEL_SELFTEST_HOST_SECRET", "do-not-leak", 1);
    gw_config_t *config = gw_config_load (config_path, &errmsg);
    if (!config) {
        fprintf (stderr, "kennel selftest: %s\n", errmsg);
        free (errmsg);
        return 2;
    }
    char tmpl[] = "/tmp/kennel-selftest-XXXXXX";
    if (!mkdtemp (tmpl)) {
        fprintf (stderr, "kennel selftest: cannot create a temporary state dir %s: %s\n", tmpl, strerror (errno));
        gw_config_destroy (&config);
        return 2;
    }
    chmod (tmpl, 0711);
    printf ("kennel selftest: launcher %s, state %s\n", config->launcher, tmpl);
    gw_server_t *server = gw_server_new (&config, tmpl, "127.0.0.1", "ipc", &errmsg);
    gw_config_destroy (&config);
    selftest_t self = {.server = server, .host_secret_env = "KENNEL_SELFTEST_HOST_SECRET", .listeners = {.tcp = -1, .udp = -1}};
    if (server && listeners_open (&self.listeners) < 0)
        report (&self, false, "host loopback listeners", strerror (errno));
    if (!server) {
        fprintf (stderr, "kennel selftest: %s\n", errmsg ? errmsg : "?");
        free (errmsg);
        rmdir (tmpl);
        return 1;
    }
    gw_server_set_kernel_mode (server); /* one conversation; the loop ends with it */
    gw_policy_t policy;
    gw_policy_copy (&policy, &gw_server_config (server)->defaults);
    gw_conv_t *conv
        = gw_core_open_checked (gw_server_core (server), "selftest", "python", NULL, &policy, false, gw_zmq_open, NULL, &errmsg);
    gw_policy_clear (&policy);
    if (!conv) {
        report (&self, false, "conversation", errmsg);
        free (errmsg);
    }
    else {
        self.conv = conv;
        gw_conv_when_ready (conv, on_ready, &self);
        gw_timer_start (gw_server_loop (server), 60000, 1, on_deadline, &self);
        gw_server_run (server);
    }
    if (self.shell) {
        zloop_reader_end (gw_server_loop (server), self.shell);
        zloop_reader_end (gw_server_loop (server), self.iopub);
    }
    zsock_destroy (&self.shell);
    zsock_destroy (&self.iopub);
    wire_key_destroy (&self.key);
    json_decref (self.reply);
    free (self.stdout_text);
    listeners_close (&self.listeners);
    gw_server_destroy (&server);
    rmdir (tmpl);
    printf ("selftest: %s\n", self.failures ? "FAILED" : "passed");
    return self.failures ? 1 : 0;
}
