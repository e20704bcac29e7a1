/*  mcp_files.c - file_put, file_get and file_list: the gateway's file
    requests (docs/PROTOCOL.md section 3, "Files") as MCP tools.

    A call is one request: a put of at most 4 MiB (the gateway's chunk; a
    bigger file is put in parts with `offset`), a get of one chunk (its
    `offset` and `length`, `eof` says whether more follows), a listing.
    Paths are the gateway's to check (beneath the workspace only, no
    symlinks); its refusals come back as isError naming the ename. A file
    read back is text when it is UTF-8, else an embedded resource with its
    bytes as base64 (an image/png one as an image).
*/
#include "mcp.h"
#include "gateway/gw_files.h"

#include <string.h>

bool
mcp_files_tool (const char *name)
{
    return streq (name, "file_put") || streq (name, "file_get") || streq (name, "file_list");
}

/* The bytes of a put: content (UTF-8 text) or content_base64, as base64. */
static char *
s_put_content (const json_t *arguments, char **problem)
{
    json_t *text = json_object_get (arguments, "content");
    json_t *b64 = json_object_get (arguments, "content_base64");
    if ((text != NULL) == (b64 != NULL)) {
        *problem = wire_xstrdup ("give exactly one of content (text) and content_base64 (bytes)");
        return NULL;
    }
    if (text)
        return gw_base64_encode (json_string_value (text), json_string_length (text));
    size_t len;
    void *bytes = gw_base64_decode (json_string_value (b64), json_string_length (b64), &len);
    if (!bytes) {
        *problem = wire_xstrdup ("content_base64 is not valid base64 (RFC 4648, padded, no whitespace)");
        return NULL;
    }
    free (bytes);
    return wire_xstrdup (json_string_value (b64));
}

json_t *
mcp_files_request (const char *tool, const char *conversation, const json_t *arguments, const char **msg_type,
                   char **problem)
{
    json_t *content = json_pack ("{s:s, s:s}", "conversation_id", conversation, "path",
                                 gw_text (json_object_get (arguments, "path")) ?: "");
    const char *copied[] = {"offset", "length"};
    for (size_t i = 0; i < 2; i++)
        if (json_object_get (arguments, copied[i]))
            json_object_set (content, copied[i], json_object_get (arguments, copied[i]));
    if (streq (tool, "file_put")) {
        char *b64 = s_put_content (arguments, problem);
        if (!b64) {
            json_decref (content);
            return NULL;
        }
        json_object_set_new (content, "content", json_string (b64));
        free (b64);
        *msg_type = "file_put_request";
    }
    else
        *msg_type = streq (tool, "file_get") ? "file_get_request" : "file_list_request";
    return content;
}

/* A chunk read back: text when it is UTF-8, else its bytes. */
static json_t *
s_get_content (const char *path, const char *b64)
{
    size_t len = 0;
    char *bytes = gw_base64_decode (b64, strlen (b64), &len);
    json_t *text = bytes ? json_stringn (bytes, len) : NULL; /* NULL when not UTF-8 */
    bool png = len >= 8 && memcmp (bytes, "\x89PNG\r\n\x1a\n", 8) == 0;
    free (bytes);
    if (text && !png)
        return json_pack ("{s:s, s:o}", "type", "text", "text", text);
    json_decref (text);
    if (png)
        return json_pack ("{s:s, s:s, s:s}", "type", "image", "data", b64, "mimeType", "image/png");
    char *uri = wire_xasprintf ("file:///workspace/%s", path);
    json_t *resource = json_pack ("{s:s, s:{s:s, s:s, s:s}}", "type", "resource", "resource", "uri", uri, "mimeType",
                                  "application/octet-stream", "blob", b64);
    free (uri);
    return resource;
}

json_t *
mcp_files_result (const char *tool, const json_t *reply)
{
    const char *status = json_string_value (json_object_get (reply, "status"));
    if (!reply)
        return mcp_tools_error_result ("the gateway did not answer %s", tool);
    if (!status || !streq (status, "ok"))
        return mcp_tools_error_result ("%s: %s", json_string_value (json_object_get (reply, "ename")) ?: "Error",
                                       json_string_value (json_object_get (reply, "evalue")) ?: "");
    const char *path = json_string_value (json_object_get (reply, "path")) ?: "";
    json_t *structured = json_deep_copy (reply);
    json_object_del (structured, "status");
    json_object_del (structured, "content");
    json_object_del (structured, "conversation_id");
    json_object_set (structured, "conversation", json_object_get (reply, "conversation_id"));
    if (streq (tool, "file_put"))
        return mcp_tools_text_result (structured, "wrote %lld bytes to /workspace/%s",
                                      (long long) json_integer_value (json_object_get (reply, "length")), path);
    if (streq (tool, "file_list")) {
        char *text = json_dumps (json_object_get (reply, "entries"), JSON_INDENT (1));
        json_t *r = mcp_tools_text_result (structured, "%s", text ?: "[]");
        free (text);
        return r;
    }
    json_t *chunk = s_get_content (path, json_string_value (json_object_get (reply, "content")) ?: "");
    json_t *r = json_pack ("{s:[o], s:b, s:o}", "content", chunk, "isError", 0, "structuredContent", structured);
    if (!json_is_true (json_object_get (reply, "eof")))
        json_array_append_new (json_object_get (r, "content"),
                               json_pack ("{s:s, s:s}", "type", "text", "text",
                                          "[kennel: more follows: call file_get again with offset += length]"));
    return r;
}
