/*  http_reply.c - HTTP answers: JSON bodies, Jupyter's error shape
    {"reason", "message"}, the CORS headers, answers that wait for the
    gateway, and a big answer written in pieces (reply_more).
*/
#include "http.h"
#include "gateway/gw_ops.h"

#include <string.h>

#define HEADERS_MAX 2048

const char *
http_reply_reason (int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 507: return "Insufficient Storage";
    default: return "Error";
    }
}

void
http_peer (struct lws *wsi, char *out, size_t size)
{
    if (!lws_get_peer_simple (wsi, out, size))
        snprintf (out, size, "?");
}

/* The status line with its reason phrase. lws 4.1 has phrases only for
   the codes of its own tables (none for 201, 202, 204 or 507: it wrote
   "HTTP/1.1 201 "), so on HTTP/1.x the phrase after "HTTP/1.x NNN" is
   written again from http_reply_reason; HTTP/2 has no phrase (lws writes
   its :status). */
int
http_reply_status (struct lws *wsi, int status, unsigned char **p, unsigned char *end)
{
    unsigned char *line = *p;
    if (lws_add_http_header_status (wsi, (unsigned int) status, p, end))
        return -1;
    size_t len = (size_t) (*p - line);
    const unsigned char *eol = len > 12 ? memchr (line, '\r', len - 1) : NULL;
    if (!eol || eol[1] != '\n' || memcmp (line, "HTTP/1.", 7) != 0 || line[12] != ' ')
        return 0;
    char fixed[64];
    int n = snprintf (fixed, sizeof fixed, "%.12s %s\r\n", (const char *) line, http_reply_reason (status));
    size_t old = (size_t) (eol + 2 - line), tail = len - old;
    if (n >= (int) sizeof fixed || line + n + tail >= end)
        return -1;
    memmove (line + n, eol + 2, tail); /* what lws added after the line (the vhost's headers) */
    memcpy (line, fixed, (size_t) n);
    *p = line + n + tail;
    return 0;
}

static int
header_add (struct lws *wsi, const char *name, const char *value, unsigned char **p, unsigned char *end)
{
    return lws_add_http_header_by_name (wsi, (const unsigned char *) name, (const unsigned char *) value,
                                        (int) strlen (value), p, end);
}

/* Only when the operator named an origin: CORS is off by default. */
static int
cors_add (struct lws *wsi, const http_settings_t *settings, unsigned char **p, unsigned char *end)
{
    if (!settings->allow_origin)
        return 0;
    return header_add (wsi, "access-control-allow-origin:", settings->allow_origin, p, end)
           || header_add (wsi, "access-control-allow-methods:", "GET, POST, PUT, PATCH, DELETE, OPTIONS", p, end)
           || header_add (wsi, "access-control-allow-headers:",
                          "Authorization, Content-Type, Mcp-Session-Id, MCP-Protocol-Version", p, end)
           || header_add (wsi, "access-control-expose-headers:", "Mcp-Session-Id", p, end);
}

int
http_reply_head (struct lws *wsi, http_req_t *req, int status, const char *content_type, long long length,
                 const char *const *extra)
{
    unsigned char headers[LWS_PRE + HEADERS_MAX];
    unsigned char *start = headers + LWS_PRE, *p = start, *end = headers + sizeof headers - 1;
    /* every 503 (draining, not ready yet, connections full) is temporary:
       a client or balancer retries, elsewhere when the gateway drains */
    char retry[16];
    snprintf (retry, sizeof retry, "%d", GW_DRAIN_RETRY_AFTER);
    if (http_reply_status (wsi, status, &p, end)
        || (content_type && lws_add_http_header_by_token (wsi, WSI_TOKEN_HTTP_CONTENT_TYPE,
                                                          (const unsigned char *) content_type,
                                                          (int) strlen (content_type), &p, end))
        || (length >= 0 && lws_add_http_header_content_length (wsi, (lws_filepos_t) length, &p, end))
        || (status == 503 && header_add (wsi, "retry-after:", retry, &p, end))
        /* RFC 9110: a 401 names its scheme; no resource_metadata, as no
           OAuth is served (gateway/http/README.md, "MCP clients and OAuth") */
        || (status == 401 && header_add (wsi, "www-authenticate:", "Bearer realm=\"kennel\"", &p, end))
        || cors_add (wsi, &req->front->settings, &p, end))
        return -1;
    for (; extra && extra[0]; extra += 2)
        if (extra[1] && *extra[1] && header_add (wsi, extra[0], extra[1], &p, end))
            return -1;
    if (lws_finalize_http_header (wsi, &p, end) || lws_write (wsi, start, (size_t) (p - start), LWS_WRITE_HTTP_HEADERS) < 0)
        return -1;
    return 0;
}

/* The next piece of the answer being written (req->answer: LWS_PRE bytes,
   then answer_len bytes of body), its end then ending the transaction.
   One lws_write sends at most the protocol's buffer (64 KiB and
   LWS_PRE + 4) and keeps a copy of the rest in lws's own list for the
   next writable callbacks, while the timeout lws armed when the request
   came (timeout_secs, 5 s) runs on: an answer whose building and sending
   took longer was cut after its first 65,556 bytes (a listing of big
   sessions, an inline file to a slow client), and a body written whole
   was held twice. Pieces of 64 KiB, each written when the one before
   left and each giving the client HTTP_STALL_SECONDS more, arrive whole
   and keep one copy. The bytes before a piece are ones already sent: lws
   may write its framing there (LWS_PRE). */
static int
reply_more (struct lws *wsi, http_req_t *req)
{
    size_t left = req->answer_len - req->answer_sent;
    size_t n = left < HTTP_REPLY_PIECE ? left : HTTP_REPLY_PIECE;
    bool last = n == left;
    unsigned char *at = (unsigned char *) req->answer + LWS_PRE + req->answer_sent;
    lws_set_timeout (wsi, PENDING_TIMEOUT_HTTP_CONTENT, HTTP_STALL_SECONDS);
    if (lws_write (wsi, at, n, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) < 0)
        return -1;
    req->answer_sent += n;
    if (!last) {
        lws_callback_on_writable (wsi);
        return 0;
    }
    free (req->answer);
    req->answer = NULL;
    req->answer_len = req->answer_sent = 0;
    if (req->upgrading)
        return 0;
    return lws_http_transaction_completed (wsi) ? -1 : 0;
}

/* The headers, then the body: len bytes after LWS_PRE in block (taken;
   NULL when none), of type (NULL when none). */
static int
reply_block (struct lws *wsi, http_req_t *req, int status, const char *type, char *block, size_t len,
             const char *location)
{
    const char *extra[] = {"location:", location, NULL};
    if (http_reply_head (wsi, req, status, type, (long long) len, extra) < 0) {
        free (block);
        return -1;
    }
    free (req->answer);
    req->answer = block;
    req->answer_len = len;
    req->answer_sent = 0;
    if (!len) {
        free (req->answer);
        req->answer = NULL;
        return req->upgrading ? 0 : lws_http_transaction_completed (wsi) ? -1 : 0;
    }
    return reply_more (wsi, req);
}

int
http_reply_write (struct lws *wsi, http_req_t *req, int status, json_t *body, const char *location)
{
    /* serialized once, into the block that is written: json_dumpb says
       the length first */
    size_t len = body ? json_dumpb (body, NULL, 0, JSON_COMPACT) : 0;
    char *block = len ? wire_xmalloc (LWS_PRE + len) : NULL;
    if (block && json_dumpb (body, block + LWS_PRE, len, JSON_COMPACT) != len)
        len = 0; /* cannot happen: the same value, the same flags */
    json_decref (body);
    return reply_block (wsi, req, status, len ? "application/json" : NULL, block, len, location);
}

int
http_reply_text (struct lws *wsi, http_req_t *req, int status, const char *type, const char *text, size_t len)
{
    char *block = wire_xmalloc (LWS_PRE + len + 1);
    memcpy (block + LWS_PRE, text, len);
    return reply_block (wsi, req, status, type, block, len, NULL);
}

/* An error's body {"reason", "message"}, and its log line (rate-limited
   per peer). */
static json_t *
error_body (struct lws *wsi, http_req_t *req, int status, const char *message)
{
    char peer[64], source[96], path[HTTP_PATH_MAX];
    http_peer (wsi, peer, sizeof peer);
    snprintf (source, sizeof source, "http/%s", peer);
    /* the path as the client sent it: its %FF shown as \xFF (a log line holds only UTF-8) */
    gw_log_limited (source, "http_error", "{s:s, s:i, s:s, s:s}", "peer", peer, "status", status, "path",
                    gw_text_escape (req->path, strlen (req->path), path, sizeof path), "message", message);
    return json_pack ("{s:s, s:s}", "reason", http_reply_reason (status), "message", message);
}

int
http_reply_error (struct lws *wsi, http_req_t *req, int status, const char *message)
{
    return http_reply_write (wsi, req, status, error_body (wsi, req, status, message), NULL);
}

void
http_reply_error_later (struct lws *wsi, http_req_t *req, int status, const char *message)
{
    http_reply_later (wsi, req, status, error_body (wsi, req, status, message), NULL);
}

void
http_reply_wait (struct lws *wsi)
{
    /* lws's own timeout (5 s) would drop the connection while a kernel
       starts; the core answers every wait, within launch_timeout */
    lws_set_timeout (wsi, NO_PENDING_TIMEOUT, 0);
}

void
http_reply_later (struct lws *wsi, http_req_t *req, int status, json_t *body, const char *location)
{
    req->status = status;
    free (req->answer);
    req->answer = body ? json_dumps (body, JSON_COMPACT) : NULL;
    json_decref (body);
    snprintf (req->location, sizeof req->location, "%s", location ? location : "");
    lws_callback_on_writable (wsi);
}

int
http_reply_flush (struct lws *wsi, http_req_t *req)
{
    if (req->answer_len)
        return reply_more (wsi, req);
    if (!req->status)
        return 0;
    int status = req->status;
    json_t *body = req->answer ? json_loads (req->answer, 0, NULL) : NULL;
    free (req->answer);
    req->answer = NULL;
    req->status = 0;
    return http_reply_write (wsi, req, status, body, req->location);
}
