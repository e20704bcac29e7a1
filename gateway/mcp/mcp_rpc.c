/*  mcp_rpc.c - JSON-RPC 2.0 envelopes, as MCP uses them.

    MCP narrows JSON-RPC: an id is a string or an integer (never null), and
    since the 2025-06-18 revision there are no batches. A message that is
    none of request, notification or response is answered with an error to
    id null, the only id JSON-RPC allows when the sender's cannot be read.
    Every reader of MCP lines (the client's, on stdio or HTTP; a forwarded
    server's) parses them here.
*/
#include "mcp.h"


static bool
s_id_valid (const json_t *id)
{
    return (json_is_string (id) && gw_text (id)) || json_is_integer (id);
}

static mcp_rpc_kind_t
s_classify (const json_t *msg, int *code, const char **why)
{
    *code = MCP_INVALID_REQUEST;
    if (json_is_array (msg)) {
        *why = "batches are not supported: send one message per line";
        return MCP_RPC_INVALID;
    }
    if (!json_is_object (msg)) {
        *why = "a message must be a JSON object";
        return MCP_RPC_INVALID;
    }
    const char *version = json_string_value (json_object_get (msg, "jsonrpc"));
    if (!version || !streq (version, "2.0")) {
        *why = "jsonrpc must be \"2.0\"";
        return MCP_RPC_INVALID;
    }
    json_t *id = json_object_get (msg, "id");
    json_t *method = json_object_get (msg, "method");
    if (!method) {
        if (id && (json_object_get (msg, "result") || json_object_get (msg, "error")))
            return MCP_RPC_RESPONSE;
        *why = "method is missing";
        return MCP_RPC_INVALID;
    }
    if (!gw_text (method)) {
        *why = "method must be a string";
        return MCP_RPC_INVALID;
    }
    json_t *params = json_object_get (msg, "params");
    if (params && !json_is_object (params)) {
        *why = "params must be an object";
        return MCP_RPC_INVALID;
    }
    if (!id)
        return MCP_RPC_NOTIFICATION;
    if (!s_id_valid (id)) {
        *why = "id must be a string or an integer";
        return MCP_RPC_INVALID;
    }
    return MCP_RPC_REQUEST;
}

mcp_rpc_kind_t
mcp_rpc_parse (const char *text, size_t len, json_t **msg, int *code, const char **why, json_t **data)
{
    json_error_t jerr;
    *data = NULL;
    /* any value, so that a scalar is an Invalid request, not a Parse error */
    *msg = json_loadb (text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!*msg) {
        *code = MCP_PARSE_ERROR;
        *why = "Parse error";
        *data = json_pack ("{s:s}", "detail", jerr.text);
        return MCP_RPC_INVALID;
    }
    return s_classify (*msg, code, why);
}

json_t *
mcp_rpc_result (const json_t *id, json_t *result)
{
    return json_pack ("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null (), "result", result);
}

json_t *
mcp_rpc_error (const json_t *id, int code, const char *message, json_t *data)
{
    json_t *error = json_pack ("{s:i, s:s}", "code", code, "message", message);
    if (data)
        json_object_set_new (error, "data", data);
    return json_pack ("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null (), "error", error);
}

json_t *
mcp_rpc_request (json_int_t id, const char *method, json_t *params)
{
    return json_pack ("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", id, "method", method, "params",
                      params ? params : json_object ());
}

json_t *
mcp_rpc_notification (const char *method, json_t *params)
{
    return json_pack ("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params",
                      params ? params : json_object ());
}
