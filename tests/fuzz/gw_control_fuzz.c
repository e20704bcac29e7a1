/*  gw_control_fuzz.c - libFuzzer target: control requests through the real
    handler (gateway/gw_control.c, gw_control_on_message).

    A control client is authenticated but untrusted: every request here is
    signed with the gateway's key, so its bytes reach the handler, its
    checks (id, kernel, tools, policy, keep_workspace) and its replies. The
    handler runs against a gateway built by hand around a real control
    socket (an inproc PAIR) and fuzz_gateway.h's gateway (the real
    conversation table, config, policy lowering, tool checks, capacity, log
    and epoll set; the conversation layer below replaced, so no kernel
    starts); the ZeroMQ front is replaced by the stubs at the end of this
    file. The file
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
      bytes a file_get returns (base64 or a raw frame) are those of the
      file its path names, resolved with no symlink followed, a regular
      file of one name (fuzz_tree_check_served: no canary through a
      hardlink); the outside tree is unchanged after it; no fd leaks.
*/
#include "gateway/gw_control.h"
#include "gateway/gw_conv.h"
#include "gateway/gw_core.h"
#include "gateway/gw_files.h"
#include "gateway/gw_server_private.h"
#include "gateway/gw_zmq_front.h"
#include "wire.h"
#include "fuzz_gateway.h"
#include "fuzz_tree.h"
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

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

static fuzz_gateway_t *s_gw;
static gw_server_t *s_server;
static zsock_t *s_client;
static fuzz_tree_t *s_tree;

/* ---- the gateway, made once ---------------------------------------------- */

static void
s_teardown (void)
{
    zsock_destroy (&s_client);
}

static void
s_setup (void)
{
    s_gw = fuzz_gateway_new (config_text);
    s_server = s_gw->server;
    s_tree = s_gw->tree;
    s_server->control = zsock_new_pair ("@inproc://kennel-fuzz-control");
    s_client = zsock_new_pair (">inproc://kennel-fuzz-control");
    zsock_set_rcvtimeo (s_client, 0);
    atexit (s_teardown); /* before the gateway's own (atexit runs in reverse) */
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
                 && fuzz_gateway_id_ok (id);
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
    fuzz_tree_check_served (ws, path, offset, data, len);
    close (ws);
    free (data);
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
    s_gw->start_fails = flags & 16;
    s_gw->new_fails = flags & 32;
    if (flags & 8)
        fuzz_gateway_open (s_gw, "a");
    zmsg_t *msg = s_request (types[type], type_lens[type], data + 1, size - 1);

    zmsg_t *copy = zmsg_dup (msg);
    wire_error_t err;
    wire_msg_t *req = wire_msg_decode (&copy, s_server->key, NULL, &s_server->limits, &err);
    zmsg_send (&msg, s_client);
    gw_control_on_message (s_server->loop, s_server->control, s_server);
    fuzz_gateway_run_timer (s_gw);

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
    if (replies != (req ? 1 : 0) || gw_core_count (s_server->core) > s_server->config->max_conversations)
        __builtin_trap ();
    wire_msg_destroy (&req);
    fuzz_gateway_empty (s_gw);
    if (type >= FILE_TYPES)
        fuzz_tree_check_outside (s_tree);
    if (fuzz_tree_fds () != fds)
        __builtin_trap ();
    return 0;
}

/* ---- the ZeroMQ front, replaced ------------------------------------------ */

int
gw_zmq_open (gw_conv_t *conv, void *fixed, char **errmsg)
{
    (void) conv, (void) fixed, (void) errmsg;
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
    (void) self;
    return json_pack ("{s:s}", "transport", "ipc");
}
