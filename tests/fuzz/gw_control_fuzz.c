/*  gw_control_fuzz.c - libFuzzer target: control requests through the real
    handler (gateway/gw_control.c, gw_control_on_message).

    A control client is authenticated but untrusted: every request here is
    signed with the gateway's key, so its bytes reach the handler, its
    checks (id, kernel, tools, policy, keep_workspace) and its replies. The
    handler runs against a gateway built by hand around a real control
    socket (an inproc PAIR), the real conversation table (gw_core.c),
    config, policy lowering, tool checks, capacity, log and epoll set; only
    the conversation layer below it and the ZeroMQ front are replaced by
    the stubs at the end of this file, so no kernel starts. The file
    requests (gw_control_files.c) work on a real workspace, reset before
    each, beside an outside tree of canaries (fuzz_tree.h).

    Input: one flags byte, then the request's content frame (any bytes).
        bits 0-2  msg_type (bit 6 clear): gateway_info, conversation_open,
                  _close, _restart, _list, an unknown "x_request", an open
                  request type with a NUL inside, "no_suffix";
                  (bit 6 set): file_list, file_stat, file_get, file_put,
                  file_delete, file_rename, file_copy, an unknown
                  "file_x_request"
        bit 3     a conversation "a" is open already (reattach, close,
                  restart find it; its workspace is the file requests')
        bit 4     its kernel then fails to start (KernelStartFailed)
        bit 5     making the conversation fails (OpenFailed)
    Checked, trapping otherwise:
    - one reply exactly when the request decodes (wire_msg_decode with the
      same key), none when it does not; the reply verifies, answers the
      request (parent header), is named <type>_reply or error_reply, and
      says status ok, or error with ename, evalue and traceback;
    - an id accepted is [A-Za-z0-9._-]{1,128} and not "." or "..", checked
      here without gw_conv_id_valid; InvalidConversationId only for others;
    - a conversation made has a known kernel, checked tools (they check
      again to themselves) and a policy within the maxima (fuzz_check.h);
    - the table never holds more than max_conversations; nothing leaks;
    - a file request's error is one of docs/PROTOCOL.md §3 "Files"; the
      bytes a file_get returns (base64 or a raw frame) hold no canary and
      are those of the file its path names, resolved with no symlink
      followed; the outside tree is unchanged after it; no fd leaks.
*/
#include "gateway/gw_capacity.h"
#include "gateway/gw_config.h"
#include "gateway/gw_control.h"
#include "gateway/gw_conv.h"
#include "gateway/gw_core.h"
#include "gateway/gw_files.h"
#include "gateway/gw_io.h"
#include "gateway/gw_log.h"
#include "gateway/gw_pool.h"
#include "gateway/gw_server_access.h"
#include "gateway/gw_server_private.h"
#include "gateway/gw_timer.h"
#include "gateway/gw_tools.h"
#include "gateway/gw_zmq_front.h"
#include "gateway/gw_zygote.h"
#include "wire.h"
#include "fuzz_check.h"
#include "fuzz_tree.h"
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

struct gw_conv {
    char *id;
    json_t *tools;
    gw_policy_t policy;
};

static const char *types[] = {"gateway_info_request",         "conversation_open_request",
                              "conversation_close_request",   "conversation_restart_request",
                              "conversation_list_request",    "x_request",
                              "conversation_open_request\0x", "no_suffix",
                              "file_list_request",            "file_stat_request",
                              "file_get_request",             "file_put_request",
                              "file_delete_request",          "file_rename_request",
                              "file_copy_request",            "file_x_request"};
/* the length of each type, its NUL included */
static const size_t type_lens[] = {20, 25, 26, 28, 25, 9, 27, 9, 17, 17, 16, 16, 19, 19, 17, 14};
#define FILE_TYPES 8 /* the first file request's index */

static const char config_text[] = "{\"max_conversations\": 1, \"kernels\": {\"r\": {\"argv\": [\"r\"]}},"
                                  " \"maxima\": {\"pids\": 100, \"network\": \"none\"},"
                                  " \"defaults\": {\"pids\": 50, \"network\": \"none\"}}";

static gw_server_t *s_server;
static zsock_t *s_client;
static json_t *s_maxima;
static bool s_start_fails, s_new_fails;
static fuzz_tree_t *s_tree;
/* the timer gw_core_close_later started, run once the handler returned */
static zloop_timer_fn *s_timer_fn;
static void *s_timer_arg;

/* ---- the gateway, made once ---------------------------------------------- */

static gw_config_t *
s_config (void)
{
    char path[] = "/tmp/kennel-fuzz-control-XXXXXX";
    int fd = mkstemp (path);
    if (fd < 0 || write (fd, config_text, sizeof config_text - 1) != (ssize_t) sizeof config_text - 1)
        __builtin_trap ();
    close (fd);
    char *errmsg = NULL;
    gw_config_t *config = gw_config_load (path, &errmsg);
    unlink (path);
    if (!config)
        __builtin_trap ();
    return config;
}

/* Everything freed at exit, before czmq's own clean-up, so that neither
   LeakSanitizer nor czmq reports what the process kept between inputs. */
static void
s_teardown (void)
{
    gw_server_t *self = s_server;
    zsock_destroy (&s_client);
    zsock_destroy (&self->control);
    gw_io_destroy (&self->io);
    zloop_destroy (&self->loop);
    zhashx_destroy (&self->conversations);
    zhashx_destroy (&self->kernel_ids);
    wire_key_destroy (&self->key);
    gw_config_destroy (&self->config);
    free (self->transport);
    free (self);
    json_decref (s_maxima);
    gw_log_close ();
}

static void
s_setup (void)
{
    s_tree = fuzz_tree_new (); /* before czmq's threads: a user namespace needs one thread */
    gw_log_open ("/dev/null");
    gw_server_t *self = calloc (1, sizeof *self);
    self->config = s_config ();
    self->loop = zloop_new ();
    self->io = gw_io_new (self->loop);
    self->key = wire_key_new (NULL, "fuzz-key", 8, NULL);
    self->limits = wire_limits_default;
    self->control = zsock_new_pair ("@inproc://kennel-fuzz-control");
    s_client = zsock_new_pair (">inproc://kennel-fuzz-control");
    zsock_set_rcvtimeo (s_client, 0);
    self->conversations = zhashx_new ();
    self->kernel_ids = zhashx_new ();
    self->transport = strdup ("ipc");
    snprintf (self->session, sizeof self->session, "fuzz-gateway");
    gw_capacity_init (&self->capacity, self->config);
    s_server = self;
    json_t *limits = gw_config_limits_json (self->config);
    s_maxima = json_incref (json_object_get (limits, "maxima"));
    json_decref (limits);
    atexit (s_teardown);
}

/* ---- one request ------------------------------------------------------------ */

/* The signed frames: header of type, empty parent and metadata, content. */
static zmsg_t *
s_request (const char *type, size_t type_len, const uint8_t *content, size_t size)
{
    static int count;
    char id[32];
    snprintf (id, sizeof id, "req-%d", ++count);
    json_t *header = json_pack ("{s:s, s:s%, s:s, s:s, s:s, s:s}", "msg_id", id, "msg_type", type, type_len, "session",
                                "fuzz-client", "username", "fuzz", "date", "2026-01-01T00:00:00.000000Z", "version",
                                "5.3");
    char *text = json_dumps (header, JSON_COMPACT);
    json_decref (header);
    zframe_t *parts[4] = {zframe_new (text, strlen (text)), zframe_new ("{}", 2), zframe_new ("{}", 2),
                          zframe_new (content, size)};
    free (text);
    char hex[WIRE_SIGNATURE_HEX_LEN + 1];
    wire_key_sign (s_server->key, parts, hex);
    zmsg_t *msg = zmsg_new ();
    zmsg_addstr (msg, WIRE_DELIMITER);
    zmsg_addstr (msg, hex);
    for (int i = 0; i < 4; i++)
        zmsg_append (msg, &parts[i]);
    return msg;
}

static bool
s_id_ok (const char *id)
{
    size_t n = strlen (id);
    return n >= 1 && n <= 128 && strspn (id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n
           && strcmp (id, ".") != 0 && strcmp (id, "..") != 0;
}

/* The reply to req: named after it, answering it, ok or a whole error. */
static void
s_check_reply (const wire_msg_t *req, const wire_msg_t *reply)
{
    /* named after the type as a C string: "x_request\0y" is answered as an
       unknown x_reply */
    const char *type = wire_msg_type (req);
    size_t len = strlen (type);
    char expected[160];
    if (len > 8 && len < 128 && strcmp (type + len - 8, "_request") == 0)
        snprintf (expected, sizeof expected, "%.*s_reply", (int) (len - 8), type);
    else
        snprintf (expected, sizeof expected, "error_reply");
    if (strcmp (wire_msg_type (reply), expected) != 0 || !json_equal (reply->parent_header, req->header))
        __builtin_trap ();
    const char *status = json_string_value (json_object_get (reply->content, "status"));
    const char *ename = json_string_value (json_object_get (reply->content, "ename"));
    const char *evalue = json_string_value (json_object_get (reply->content, "evalue"));
    if (!status || (strcmp (status, "ok") != 0 && strcmp (status, "error") != 0))
        __builtin_trap ();
    if (strcmp (status, "error") == 0
        && (!ename || !*ename || !evalue || !*evalue || !json_is_array (json_object_get (reply->content, "traceback"))))
        __builtin_trap ();
    const char *id = json_string_value (json_object_get (req->content, "conversation_id"));
    bool id_ok = id && strlen (id) == json_string_length (json_object_get (req->content, "conversation_id"))
                 && s_id_ok (id);
    if (ename && strcmp (ename, "InvalidConversationId") == 0 && id_ok)
        __builtin_trap ();
    bool names_one = (strstr (expected, "conversation_") == expected && strcmp (expected, "conversation_list_reply") != 0)
                     || strstr (expected, "file_") == expected;
    if (strcmp (status, "ok") == 0 && names_one && !id_ok)
        __builtin_trap ();
}

/* The bytes of a file_get's reply: base64 content or its raw frame. */
static void *
s_get_bytes (const wire_msg_t *reply, size_t *len)
{
    const char *content = json_string_value (json_object_get (reply->content, "content"));
    zframe_t *frame = zmsg_first (reply->buffers);
    if (content)
        return gw_base64_decode (content, strlen (content), len);
    if (!frame)
        __builtin_trap (); /* neither */
    *len = zframe_size (frame);
    void *data = malloc (*len + 1);
    memcpy (data, zframe_data (frame), *len);
    return data;
}

/* A file request's reply: a documented error, or bytes of the workspace
   and no canary's. */
static void
s_check_file_reply (const wire_msg_t *req, const wire_msg_t *reply)
{
    const json_t *content = reply->content;
    const char *status = json_string_value (json_object_get (content, "status"));
    if (strcmp (status, "error") == 0) {
        if (strcmp (wire_msg_type (req), "file_x_request") != 0)
            fuzz_tree_check_error (json_string_value (json_object_get (content, "ename")),
                                   json_string_value (json_object_get (content, "evalue")));
        return;
    }
    if (strcmp (wire_msg_type (req), "file_get_request") != 0)
        return;
    size_t len;
    void *data = s_get_bytes (reply, &len);
    const char *path = json_string_value (json_object_get (content, "path"));
    json_int_t offset = json_integer_value (json_object_get (content, "offset"));
    int ws = open (s_tree->workspace[FUZZ_TREE_PLAIN], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!data || !path || len != (size_t) json_integer_value (json_object_get (content, "length")) || ws < 0)
        __builtin_trap ();
    fuzz_tree_check_bytes (s_tree, data, len);
    fuzz_tree_check_read (ws, path, offset, data, len);
    close (ws);
    free (data);
}

static gw_conv_t *
s_conv_make (const char *id, json_t *tools, const gw_policy_t *policy)
{
    gw_conv_t *self = calloc (1, sizeof *self);
    self->id = strdup (id);
    self->tools = json_incref (tools);
    gw_policy_copy (&self->policy, policy);
    return self;
}

static void
s_empty_table (void)
{
    gw_conv_t *conv;
    while ((conv = zhashx_first (s_server->conversations))) {
        zhashx_delete (s_server->conversations, conv->id);
        zhashx_delete (s_server->kernel_ids, conv->id);
        gw_conv_destroy (&conv, false);
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (!s_server)
        s_setup ();
    if (size == 0)
        return 0;
    uint8_t flags = data[0];
    size_t type = (flags & 7) | ((flags & 64) ? FILE_TYPES : 0);
    if (type >= FILE_TYPES)
        fuzz_tree_reset (s_tree, FUZZ_TREE_PLAIN);
    int fds = fuzz_tree_fds ();
    s_start_fails = flags & 16;
    s_new_fails = flags & 32;
    if (flags & 8) {
        gw_policy_t policy;
        if (gw_policy_lower (s_server->config, NULL, &policy, NULL) < 0)
            __builtin_trap (); /* the defaults alone always lower */
        gw_conv_t *conv = s_conv_make ("a", NULL, &policy);
        zhashx_insert (s_server->conversations, "a", conv);
        zhashx_insert (s_server->kernel_ids, "a", conv);
        gw_policy_clear (&policy);
    }
    zmsg_t *msg = s_request (types[type], type_lens[type], data + 1, size - 1);

    zmsg_t *copy = zmsg_dup (msg);
    wire_error_t err;
    wire_msg_t *req = wire_msg_decode (&copy, s_server->key, NULL, &s_server->limits, &err);
    zmsg_send (&msg, s_client);
    gw_control_on_message (s_server->loop, s_server->control, s_server);
    if (s_timer_fn) {
        zloop_timer_fn *fn = s_timer_fn;
        s_timer_fn = NULL;
        fn (s_server->loop, 1, s_timer_arg);
    }

    int replies = 0;
    zmsg_t *frames;
    while ((frames = zmsg_recv (s_client))) {
        wire_msg_t *reply = wire_msg_decode (&frames, s_server->key, NULL, NULL, &err);
        if (!reply || !req)
            __builtin_trap (); /* an unreadable reply, or one to nothing */
        s_check_reply (req, reply);
        if (type >= FILE_TYPES)
            s_check_file_reply (req, reply);
        wire_msg_destroy (&reply);
        replies++;
    }
    if (replies != (req ? 1 : 0) || (int) zhashx_size (s_server->conversations) > s_server->config->max_conversations)
        __builtin_trap ();
    wire_msg_destroy (&req);
    s_empty_table ();
    if (type >= FILE_TYPES)
        fuzz_tree_check_outside (s_tree);
    if (fuzz_tree_fds () != fds)
        __builtin_trap ();
    return 0;
}

/* ---- the conversation layer, replaced ------------------------------------- */

gw_conv_t *
gw_conv_new (gw_server_t *server, const char *id, const char *kernel, json_t *tools, const gw_policy_t *policy,
             bool pooled, gw_conv_close_fn *close_later, char **errmsg)
{
    (void) pooled;
    (void) close_later;
    if (!s_id_ok (id) || (strcmp (kernel, "python") != 0 && !json_object_get (server->config->kernels, kernel)))
        __builtin_trap ();
    json_t *got = gw_policy_to_json (policy);
    fuzz_check_policy (got, s_maxima);
    json_decref (got);
    if (tools) {
        char *why = NULL;
        json_t *again = gw_tools_validate (tools, &why);
        if (!json_equal (again, tools))
            __builtin_trap ();
        json_decref (again);
        free (why);
    }
    if (s_new_fails) {
        *errmsg = strdup ("the fuzz target refused this conversation");
        return NULL;
    }
    return s_conv_make (id, tools, policy);
}

void
gw_conv_destroy (gw_conv_t **self_p, bool keep_workspace)
{
    (void) keep_workspace;
    gw_conv_t *self = *self_p;
    if (!self)
        return;
    free (self->id);
    json_decref (self->tools);
    gw_policy_clear (&self->policy);
    free (self);
    *self_p = NULL;
}

const char *
gw_conv_id (const gw_conv_t *self)
{
    return self->id;
}

gw_server_t *
gw_conv_server (const gw_conv_t *self)
{
    (void) self;
    return s_server;
}

void
gw_conv_start (gw_conv_t *self)
{
    (void) self; /* no kernel in this target: gw_conv_when_ready answers for it */
}

const char *
gw_conv_kernel_id (const gw_conv_t *self)
{
    return self->id;
}

void
gw_conv_closing (gw_conv_t *self, const char *why)
{
    (void) self, (void) why; /* no execution runs here to end with ConversationClosed */
}

int
gw_conv_interrupt (gw_conv_t *self)
{
    return -1;
}

int
gw_zmq_open (gw_conv_t *conv, void *fixed, char **errmsg)
{
    return 0;
}

gw_zmq_t *
gw_zmq_of (gw_conv_t *conv)
{
    return (gw_zmq_t *) conv;
}

json_t *
gw_zmq_connection_json (const gw_zmq_t *self)
{
    return json_pack ("{s:s}", "transport", "ipc");
}

const char *
gw_conv_workspace (const gw_conv_t *self)
{
    return s_tree->workspace[FUZZ_TREE_PLAIN];
}

json_t *
gw_conv_list_entry (const gw_conv_t *self)
{
    return json_pack ("{s:s}", "conversation_id", self->id);
}

void
gw_conv_restart (gw_conv_t *self, const char *reason)
{
    (void) self, (void) reason; /* the reply is the handler's: no kernel to replace */
}

/* Answers at once: the handler's deferred reply goes out before it returns. */
void
gw_conv_when_ready (gw_conv_t *self, gw_conv_ready_fn *fn, void *arg)
{
    fn (self, !s_start_fails, s_start_fails ? "the fuzz target's kernel did not start" : NULL, arg);
}

void
gw_conv_set_tools (gw_conv_t *self, json_t *tools)
{
    json_decref (self->tools);
    self->tools = json_incref (tools);
}

/* Only gw_core_close_later starts one: run after the handler. */
int
gw_timer_start (zloop_t *loop, size_t delay_ms, size_t times, zloop_timer_fn *handler, void *arg)
{
    if (s_timer_fn)
        __builtin_trap (); /* one close per request at most */
    s_timer_fn = handler;
    s_timer_arg = arg;
    return 1;
}

json_t *
gw_pool_info (gw_pool_t *self)
{
    return json_object ();
}

json_t *
gw_zygote_info (const gw_zygote_t *self, const gw_config_t *config)
{
    return json_object ();
}
