/*  http_route.c - a complete request (headers and body) to its route by
    path: /api here; /api/kernelspecs and /api/kernels (http_api.c),
    /api/sessions, /api/contents, /files, /metrics, /mcp (each in its own
    file). Anything else is 404.
*/
#include "http.h"
#include "config.h"

#include <string.h>

/* rest after prefix when path is prefix or prefix/..., else NULL */
static const char *
under (const char *path, const char *prefix)
{
    size_t n = strlen (prefix);
    if (strncmp (path, prefix, n) != 0 || (path[n] && path[n] != '/'))
        return NULL;
    return path + n;
}

int
http_route_dispatch (struct lws *wsi, http_req_t *req)
{
    if (req->wait || req->status || req->mcp)
        return 0; /* answered already, or waiting for the gateway */
    size_t n = strlen (req->path);
    /* every route, its messages and its log line take the path as text:
       a %FF in the URL is refused here, as tornado refuses it (400
       "Invalid unicode in path") */
    if (!wire_utf8_valid ((const unsigned char *) req->path, n)) {
        char message[120];
        snprintf (message, sizeof message, "%s: the path is not UTF-8 text (each %%XX of the URL must encode UTF-8)",
                  gw_error_name (GW_E_INVALID_PATH));
        return http_reply_error (wsi, req, gw_error_status (GW_E_INVALID_PATH), message);
    }
    while (n > 1 && req->path[n - 1] == '/')
        req->path[--n] = 0; /* jupyter_server accepts a trailing slash */
    const char *rest;
    if (streq (req->path, "/api"))
        return req->method == LWSHUMETH_GET
                   ? http_reply_write (wsi, req, 200, json_pack ("{s:s, s:s}", "version", PACKAGE_VERSION,
                                                                 "implementation", "kennel"), NULL)
                   : http_reply_error (wsi, req, 405, "GET only");
    if ((rest = under (req->path, "/api/kernelspecs")))
        return req->method == LWSHUMETH_GET ? http_api_kernelspecs_route (wsi, req, rest)
                                            : http_reply_error (wsi, req, 405, "GET only");
    if ((rest = under (req->path, "/api/kernels")))
        return http_api_kernels_route (wsi, req, rest);
    if ((rest = under (req->path, "/api/sessions")))
        return http_sessions_route (wsi, req, rest);
    if (streq (req->path, "/metrics"))
        return http_ops_metrics (wsi, req);
    if ((rest = under (req->path, "/api/contents")))
        return http_contents_route (wsi, req, rest);
    if ((rest = under (req->path, "/files")))
        return http_files_route (wsi, req, rest);
    if ((rest = under (req->path, "/mcp")))
        return http_mcp_route (wsi, req, rest);
    return http_reply_error (wsi, req, 404, "no such path");
}
