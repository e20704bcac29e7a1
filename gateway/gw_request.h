/*  gw_request.h - the control vocabulary: each request of docs/PROTOCOL.md
    section 3 (gateway_info, conversation_open, _close, _restart, _list,
    the file requests) is one call with one reply shape, whatever carries
    it (gw_request.c; the file requests gw_control_files.c). The ZeroMQ
    control socket (gw_control.c) and the MCP front inside the daemon
    (mcp/mcp_core.c) only translate their framing to it and back.
*/
#ifndef GW_REQUEST_H_INCLUDED
#define GW_REQUEST_H_INCLUDED

#include "gw_core.h"
#include "gw_files.h"
#include <czmq.h>
#include <jansson.h>

/* A reply: its content, {"status": "ok", ...} or {"status": "error",
   ename, evalue, "traceback": []}, and the raw frames that follow it (a
   file_get of encoding "buffer"), or NULL; both taken. Called once per
   request, at once or (conversation_open and _restart) once the kernel is
   confined or could not be. */
typedef void (gw_request_reply_fn) (json_t *content, zmsg_t *buffers, void *arg);

/* What the transport adds to the vocabulary. */
typedef struct {
    /* Its part of a conversation opened, before the kernel starts, or
       reattached (the ZeroMQ front's client sockets): 0, or -1 with
       *errmsg (the open fails, OpenFailed). NULL: none. */
    gw_core_attach_fn *attach;
    /* Its fields in an open reply (the ZeroMQ front's "connection"), or
       NULL. */
    void (*opened) (json_t *content, gw_conv_t *conv);
    /* The reason a close and a restart give (the log, the clients'
       ConversationClosed). */
    const char *close_why;
    const char *restart_why;
} gw_request_front_t;

/* Runs the request type (its msg_type: "conversation_open_request", ...)
   of content, with buffers (its raw frames, or NULL; borrowed), for
   front; the reply goes to fn. */
void gw_request_run (gw_server_t *server, const gw_request_front_t *front, const char *type, const json_t *content,
                     zmsg_t *buffers, gw_request_reply_fn *fn, void *arg);
/* An error reply's content. */
json_t *gw_request_error (const char *ename, const char *evalue);

/* ---- gw_control_files.c: the file requests ------------------------------ */
/* Whether type is one of them (file_list_request, ...). */
bool gw_control_files_handles (const char *type);
/* The reply content of a file request (status ok), *out the raw frames to
   send after it (an empty zmsg when none); NULL + err when refused. */
json_t *gw_control_files (gw_core_t *core, const char *type, const json_t *content, zmsg_t *buffers, zmsg_t *out,
                          gw_files_error_t *err);

#endif
