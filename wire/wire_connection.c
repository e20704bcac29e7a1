/*  wire_connection.c - connection files, as jupyter_client reads and writes
    them (jupyter_client/connect.py: write_connection_file, _make_url).

    Required: ip and key (strings). Optional with jupyter_client's defaults:
    transport ("tcp"; "tcp" or "ipc"), signature_scheme ("hmac-sha256"),
    kernel_name (""), the five ports (0 = absent; the gateway's own file
    carries only control_port).
*/
#include "wire_private.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const s_port_names[WIRE_CHANNEL_COUNT_] = {
    [WIRE_SHELL] = "shell_port", [WIRE_IOPUB] = "iopub_port", [WIRE_STDIN] = "stdin_port",
    [WIRE_CONTROL] = "control_port", [WIRE_HB] = "hb_port",
};

static int *
s_port (wire_connection_t *self, wire_channel_t channel)
{
    switch (channel) {
    case WIRE_SHELL: return &self->shell_port;
    case WIRE_IOPUB: return &self->iopub_port;
    case WIRE_STDIN: return &self->stdin_port;
    case WIRE_CONTROL: return &self->control_port;
    case WIRE_HB: return &self->hb_port;
    default: return NULL;
    }
}

wire_connection_t *
wire_connection_new (void)
{
    wire_connection_t *self = wire_xcalloc (1, sizeof *self);
    self->transport = wire_xstrdup ("tcp");
    self->ip = wire_xstrdup ("127.0.0.1");
    self->key = wire_xstrdup ("");
    self->signature_scheme = wire_xstrdup (WIRE_SIGNATURE_SCHEME);
    self->kernel_name = wire_xstrdup ("");
    return self;
}

void
wire_connection_destroy (wire_connection_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    wire_connection_t *self = *self_p;
    free (self->transport);
    free (self->ip);
    if (self->key)
        memset (self->key, 0, strlen (self->key)); /* a secret */
    free (self->key);
    free (self->signature_scheme);
    free (self->kernel_name);
    free (self);
    *self_p = NULL;
}

/* Sets *errmsg (when wanted) to a formatted, malloc'd sentence. */
static void
s_fail (char **errmsg, const char *fmt, ...)
{
    if (!errmsg)
        return;
    va_list args;
    va_start (args, fmt);
    if (vasprintf (errmsg, fmt, args) < 0)
        wire_alloc_fail ();
    va_end (args);
}

/* Replaces *field with the string member name of json; a missing member
   keeps the default unless required. false when wrong. */
static bool
s_take_string (const json_t *json, const char *name, bool required, char **field, char **errmsg)
{
    const json_t *value = json_object_get (json, name);
    if (!value) {
        if (required)
            s_fail (errmsg, "field \"%s\" is missing", name);
        return !required;
    }
    if (!json_is_string (value)) {
        s_fail (errmsg, "field \"%s\" is not a string", name);
        return false;
    }
    free (*field);
    *field = wire_xstrdup (json_string_value (value));
    return true;
}

wire_connection_t *
wire_connection_from_json (const json_t *json, wire_error_t *err, char **errmsg)
{
    wire_error_t dummy;
    if (!err)
        err = &dummy;
    if (errmsg)
        *errmsg = NULL;
    *err = WIRE_ERR_BAD_CONNECTION_FILE;
    if (!json_is_object (json)) {
        s_fail (errmsg, "not a JSON object");
        return NULL;
    }
    wire_connection_t *self = wire_connection_new ();
    if (!self) {
        *err = WIRE_ERR_IO;
        return NULL;
    }
    bool ok = s_take_string (json, "ip", true, &self->ip, errmsg)
           && s_take_string (json, "key", true, &self->key, errmsg)
           && s_take_string (json, "transport", false, &self->transport, errmsg)
           && s_take_string (json, "signature_scheme", false, &self->signature_scheme, errmsg)
           && s_take_string (json, "kernel_name", false, &self->kernel_name, errmsg);
    if (ok && !streq (self->transport, "tcp") && !streq (self->transport, "ipc")) {
        s_fail (errmsg, "transport \"%s\" is neither \"tcp\" nor \"ipc\"", self->transport);
        ok = false;
    }
    for (int c = 0; ok && c < WIRE_CHANNEL_COUNT_; c++) {
        const json_t *value = json_object_get (json, s_port_names[c]);
        if (!value)
            continue;
        json_int_t port = json_integer_value (value);
        if (!json_is_integer (value) || port < 0 || port > 65535) {
            s_fail (errmsg, "field \"%s\" is not a port number (0-65535)", s_port_names[c]);
            ok = false;
        } else {
            *s_port (self, (wire_channel_t) c) = (int) port;
        }
    }
    if (!ok) {
        wire_connection_destroy (&self);
        return NULL;
    }
    *err = WIRE_OK;
    return self;
}

wire_connection_t *
wire_connection_load (const char *path, wire_error_t *err, char **errmsg)
{
    wire_error_t dummy;
    if (!err)
        err = &dummy;
    if (errmsg)
        *errmsg = NULL;
    json_error_t jerr;
    json_t *json = json_load_file (path, 0, &jerr);
    if (!json) {
        *err = WIRE_ERR_BAD_CONNECTION_FILE;
        s_fail (errmsg, "%s: cannot read as JSON: %s (line %d)", path, jerr.text, jerr.line);
        return NULL;
    }
    char *why = NULL;
    wire_connection_t *self = wire_connection_from_json (json, err, &why);
    json_decref (json);
    if (!self)
        s_fail (errmsg, "%s: %s", path, why ? why : wire_strerror (*err));
    free (why);
    return self;
}

json_t *
wire_connection_to_json (const wire_connection_t *self)
{
    /* jupyter_client's keys, in its order (write_connection_file). */
    return json_pack ("{s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:s, s:s, s:s}", "shell_port", self->shell_port,
                      "iopub_port", self->iopub_port, "stdin_port", self->stdin_port, "control_port",
                      self->control_port, "hb_port", self->hb_port, "ip", self->ip, "key", self->key,
                      "transport", self->transport, "signature_scheme", self->signature_scheme, "kernel_name",
                      self->kernel_name ? self->kernel_name : "");
}

int
wire_connection_save (const wire_connection_t *self, const char *path)
{
    json_t *json = wire_connection_to_json (self);
    char *text = json ? json_dumps (json, JSON_INDENT (2) | JSON_ENSURE_ASCII) : NULL;
    json_decref (json);
    if (!text) {
        errno = EINVAL;
        return -1;
    }
    /* Write a temporary file that mkstemp creates 0600, then rename it over
       path: the key is never readable by others, not even for an instant,
       and a reader never sees half a file. */
    char *tmp = wire_xasprintf ("%s.XXXXXX", path);
    int rc = -1;
    int fd = mkstemp (tmp);
    if (fd < 0)
        goto done;
    size_t len = strlen (text), off = 0;
    while (off < len) {
        ssize_t n = write (fd, text + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            goto done;
        off += (size_t) n;
    }
    if (fchmod (fd, 0600) < 0 || close (fd) < 0) {
        fd = -1;
        goto done;
    }
    fd = -1;
    if (rename (tmp, path) < 0)
        goto done;
    rc = 0;
done:;
    int saved = errno;
    if (fd >= 0)
        close (fd);
    if (rc < 0 && tmp)
        unlink (tmp);
    free (tmp);
    memset (text, 0, strlen (text));
    free (text);
    errno = saved;
    return rc;
}

char *
wire_connection_endpoint (const wire_connection_t *self, wire_channel_t channel)
{
    if (!self || (int) channel < 0 || channel >= WIRE_CHANNEL_COUNT_)
        return NULL;
    int port = *s_port ((wire_connection_t *) self, channel);
    if (streq (self->transport, "ipc"))
        return wire_xasprintf ("ipc://%s-%d", self->ip, port);
    return wire_xasprintf ("%s://%s:%d", self->transport, self->ip, port);
}

wire_key_t *
wire_connection_key (const wire_connection_t *self, wire_error_t *err)
{
    const char *key = self->key ? self->key : "";
    return wire_key_new (self->signature_scheme, key, strlen (key), err);
}

int
wire_connection_test (bool verbose)
{
    int failures = 0;
    if (verbose)
        printf (" * wire_connection: ");
    char dir[] = "/tmp/wire_connection_test.XXXXXX";
    WIRE_CHECK (mkdtemp (dir));
    char path[sizeof dir + 32];
    snprintf (path, sizeof path, "%s/kernel.json", dir);

    /* Round trip through a file. */
    wire_connection_t *conn = wire_connection_new ();
    WIRE_CHECK (conn && streq (conn->transport, "tcp") && streq (conn->signature_scheme, "hmac-sha256"));
    free (conn->key);
    conn->key = wire_xstrdup ("a0436f6c-1916-498b-8eb9-e81ab9368e84");
    free (conn->kernel_name);
    conn->kernel_name = wire_xstrdup ("python3");
    conn->shell_port = 57503, conn->iopub_port = 40885, conn->stdin_port = 52597;
    conn->control_port = 50160, conn->hb_port = 42540;
    /* A file that exists with a wider mode ends up 0600. */
    int fd = open (path, O_CREAT | O_WRONLY, 0644);
    WIRE_CHECK (fd >= 0);
    close (fd);
    WIRE_CHECK (wire_connection_save (conn, path) == 0);
    struct stat st;
    WIRE_CHECK (stat (path, &st) == 0 && (st.st_mode & 0777) == 0600);
    wire_error_t err;
    char *errmsg = NULL;
    wire_connection_t *back = wire_connection_load (path, &err, &errmsg);
    WIRE_CHECK (back && err == WIRE_OK && errmsg == NULL);
    if (back) {
        WIRE_CHECK (streq (back->key, conn->key) && streq (back->ip, "127.0.0.1"));
        WIRE_CHECK (back->shell_port == 57503 && back->hb_port == 42540 && back->control_port == 50160);
        WIRE_CHECK (back->iopub_port == 40885 && back->stdin_port == 52597);
        WIRE_CHECK (streq (back->kernel_name, "python3") && streq (back->transport, "tcp"));
        char *url = wire_connection_endpoint (back, WIRE_SHELL);
        WIRE_CHECK (url && streq (url, "tcp://127.0.0.1:57503"));
        free (url);
        WIRE_CHECK (wire_connection_endpoint (back, WIRE_CHANNEL_COUNT_) == NULL);
        wire_key_t *key = wire_connection_key (back, &err);
        WIRE_CHECK (key && streq (wire_key_text (key), conn->key));
        wire_key_destroy (&key);
    }
    wire_connection_destroy (&back);

    /* The exact JSON text jupyter_client writes (json.dump, indent=2). */
    json_t *json = wire_connection_to_json (conn);
    char *text = json_dumps (json, JSON_INDENT (2) | JSON_ENSURE_ASCII);
    const char *start = "{\n  \"shell_port\": 57503,\n  \"iopub_port\": 40885,\n";
    WIRE_CHECK (text && strncmp (text, start, strlen (start)) == 0);
    WIRE_CHECK (text && strstr (text, "\"kernel_name\": \"python3\"\n}"));
    free (text);
    json_decref (json);

    /* ipc endpoints: ipc://{ip}-{port}. */
    free (conn->transport);
    conn->transport = wire_xstrdup ("ipc");
    free (conn->ip);
    conn->ip = wire_xstrdup ("/run/kennel/c1/kernel");
    char *url = wire_connection_endpoint (conn, WIRE_HB);
    WIRE_CHECK (url && streq (url, "ipc:///run/kennel/c1/kernel-42540"));
    free (url);
    /* A bad scheme reaches the key. */
    free (conn->signature_scheme);
    conn->signature_scheme = wire_xstrdup ("hmac-sha1");
    WIRE_CHECK (wire_connection_key (conn, &err) == NULL && err == WIRE_ERR_BAD_SCHEME);
    wire_connection_destroy (&conn);
    WIRE_CHECK (conn == NULL);

    /* Defaults for optional fields; the gateway file has one port. */
    json = json_pack ("{s:s, s:s, s:i}", "ip", "127.0.0.1", "key", "", "control_port", 9);
    conn = wire_connection_from_json (json, &err, &errmsg);
    WIRE_CHECK (conn && conn->control_port == 9 && conn->shell_port == 0 && streq (conn->transport, "tcp"));
    WIRE_CHECK (conn && streq (conn->kernel_name, "") && streq (conn->signature_scheme, "hmac-sha256"));
    wire_key_t *key = conn ? wire_connection_key (conn, &err) : NULL;
    WIRE_CHECK (key && wire_key_is_empty (key));
    wire_key_destroy (&key);
    wire_connection_destroy (&conn);
    json_decref (json);

    /* Bad files: each names the field. */
    struct {
        const char *json;
        const char *says;
    } bad[] = {
        {"{\"key\":\"k\"}", "\"ip\" is missing"},
        {"{\"ip\":\"h\"}", "\"key\" is missing"},
        {"{\"ip\":1,\"key\":\"k\"}", "\"ip\" is not a string"},
        {"{\"ip\":\"h\",\"key\":\"k\",\"transport\":\"udp\"}", "neither"},
        {"{\"ip\":\"h\",\"key\":\"k\",\"shell_port\":\"1\"}", "\"shell_port\" is not a port"},
        {"{\"ip\":\"h\",\"key\":\"k\",\"hb_port\":70000}", "\"hb_port\" is not a port"},
        {"{\"ip\":\"h\",\"key\":\"k\",\"iopub_port\":-1}", "\"iopub_port\" is not a port"},
        {"[1]", "not a JSON object"},
        {"{", "cannot read as JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen (path, "w");
        fputs (bad[i].json, f);
        fclose (f);
        conn = wire_connection_load (path, &err, &errmsg);
        WIRE_CHECK (!conn && err == WIRE_ERR_BAD_CONNECTION_FILE);
        WIRE_CHECK (errmsg && strstr (errmsg, bad[i].says) && strstr (errmsg, path));
        if (!errmsg || !strstr (errmsg, bad[i].says))
            fprintf (stderr, "case %zu said: %s\n", i, errmsg ? errmsg : "(nothing)");
        free (errmsg);
        wire_connection_destroy (&conn);
    }
    unlink (path);
    conn = wire_connection_load (path, &err, NULL); /* missing file */
    WIRE_CHECK (!conn && err == WIRE_ERR_BAD_CONNECTION_FILE);

    /* Saving into a missing directory fails with errno, leaves nothing. */
    conn = wire_connection_new ();
    char nodir[sizeof dir + 32];
    snprintf (nodir, sizeof nodir, "%s/missing/kernel.json", dir);
    WIRE_CHECK (wire_connection_save (conn, nodir) == -1 && errno == ENOENT);
    wire_connection_destroy (&conn);
    WIRE_CHECK (rmdir (dir) == 0);
    if (verbose)
        printf ("%s\n", failures ? "FAILED" : "OK");
    return failures;
}
