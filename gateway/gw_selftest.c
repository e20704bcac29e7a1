/*  gw_selftest.c - `kennel selftest`: start a real confined kernel through
    the same path as a conversation, run code inside that checks the sandbox
    from within, print the layer report and the findings; exit non-zero when
    anything is wrong. A health check that runs no code proves nothing.
*/
#include "gw.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Runs inside the sandbox; prints one JSON line. The host paths it must not
   see are passed in. */
static const char *check_code
    = "import json, os, socket\n"
      "r = {'uid': os.getuid(), 'hostname': socket.gethostname()}\n"
      "try:\n"
      "    socket.create_connection(('1.1.1.1', 53), timeout=2).close()\n"
      "    r['network'] = 'reachable'\n"
      "except OSError as e:\n"
      "    r['network'] = 'blocked (%s)' % type(e).__name__\n"
      "r['visible_host_paths'] = [p for p in HOST_PATHS if os.path.exists(p)]\n"
      "try:\n"
      "    with open('/workspace/.kennel-selftest', 'w') as f: f.write('ok')\n"
      "    r['workspace_writable'] = open('/workspace/.kennel-selftest').read() == 'ok'\n"
      "    os.remove('/workspace/.kennel-selftest')\n"
      "except OSError as e:\n"
      "    r['workspace_writable'] = False\n"
      "r['env'] = sorted(os.environ)\n"
      "print('KENNEL-SELFTEST ' + json.dumps(r))\n";

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
} selftest_t;

static void
report (selftest_t *self, bool ok, const char *what, const char *detail)
{
    printf ("%s %-22s %s\n", ok ? "ok  " : "FAIL", what, detail ? detail : "");
    if (!ok)
        self->failures++;
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
        const char *net = json_string_value (json_object_get (r, "network"));
        report (self, net && strncmp (net, "blocked", 7) == 0, "no network", net);
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
            char *joined = NULL;
            if (asprintf (&joined, "%s%s", self->stdout_text ? self->stdout_text : "", text ? text : "") >= 0) {
                free (self->stdout_text);
                self->stdout_text = joined;
            }
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
    json_t *layers = self->server->last_layers;
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
    json_t *c = gw_conv_connection_json (conv);
    const char *ip = json_string_value (json_object_get (c, "ip"));
    const char *key = json_string_value (json_object_get (c, "key"));
    wire_error_t err;
    self->key = wire_key_new (NULL, key, strlen (key), &err);
    self->shell = zsock_new (ZMQ_DEALER);
    self->iopub = zsock_new (ZMQ_SUB);
    zsock_set_subscribe (self->iopub, "");
    zsock_connect (self->shell, "tcp://%s:%d", ip, (int) json_integer_value (json_object_get (c, "shell_port")));
    zsock_connect (self->iopub, "tcp://%s:%d", ip, (int) json_integer_value (json_object_get (c, "iopub_port")));
    json_decref (c);
    zloop_reader (self->server->loop, self->shell, on_shell, self);
    zloop_reader (self->server->loop, self->iopub, on_iopub, self);
    /* the host paths the kernel must not see: secrets and our own state */
    json_t *paths = json_pack ("[s, s, s, s, s]", "/etc/shadow", "/root/.ssh", "/home", "/var/lib/kennel",
                               self->server->state_dir);
    char *plist = json_dumps (paths, JSON_COMPACT);
    json_decref (paths);
    char *code = NULL;
    if (asprintf (&code, "HOST_PATHS = %s\n%s", plist, check_code) < 0)
        code = NULL;
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
        fprintf (stderr, "kennel selftest: cannot create a temporary state dir\n");
        gw_config_destroy (&config);
        return 2;
    }
    chmod (tmpl, 0711);
    printf ("kennel selftest: launcher %s, state %s\n", config->launcher, tmpl);
    gw_server_t *server = gw_server_new (&config, tmpl, "127.0.0.1", "tcp", &errmsg);
    gw_config_destroy (&config);
    selftest_t self = {.server = server, .host_secret_env = "KENNEL_SELFTEST_HOST_SECRET"};
    if (!server) {
        fprintf (stderr, "kennel selftest: %s\n", errmsg ? errmsg : "?");
        free (errmsg);
        rmdir (tmpl);
        return 1;
    }
    server->kernel_mode = true; /* one conversation; the loop ends with it */
    gw_policy_t policy;
    gw_policy_copy (&policy, &server->config->defaults);
    gw_conv_t *conv = gw_conv_new (server, "selftest", "python", NULL, &policy, NULL, &errmsg);
    gw_policy_clear (&policy);
    if (!conv) {
        report (&self, false, "conversation", errmsg);
        free (errmsg);
    }
    else {
        zhashx_insert (server->conversations, "selftest", conv);
        self.conv = conv;
        gw_conv_when_ready (conv, on_ready, &self);
        zloop_timer (server->loop, 60000, 1, on_deadline, &self);
        gw_server_run (server);
    }
    if (self.shell) {
        zloop_reader_end (server->loop, self.shell);
        zloop_reader_end (server->loop, self.iopub);
    }
    zsock_destroy (&self.shell);
    zsock_destroy (&self.iopub);
    wire_key_destroy (&self.key);
    json_decref (self.reply);
    free (self.stdout_text);
    gw_server_destroy (&server);
    rmdir (tmpl);
    printf ("selftest: %s\n", self.failures ? "FAILED" : "passed");
    return self.failures ? 1 : 0;
}
