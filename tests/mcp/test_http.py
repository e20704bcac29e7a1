"""MCP over streamable HTTP: POST /mcp on `kennel serve --http` (the
dispatcher of `kennel mcp` inside the daemon, talking to its core). The
official SDK's StreamableHTTPClientTransport runs the stdio test's scenario
(tests/mcp/node/client.mjs); requests and raw HTTP check auth, Origin, bad
JSON-RPC, the stream of a call with progress, sessions, and a client that
drops its connection mid-execution."""
import json
import os
import signal
import socket
import threading
import time

import pytest
import requests

from kennel_testlib import HttpGateway
from mcplib import exec_call, node, sdk_calls, sdk_report

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "pytest", "version": "0"}}}
ACCEPT = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    g = HttpGateway(tmp_path_factory.mktemp("mcp-http"))
    g.wait_ready()
    yield g
    if g.proc.poll() is None:
        assert g.stop() == 0, g.log_file.read_text()[-3000:]


def post(gw, msg, token=True, headers=None, stream=False, timeout=120):
    h = {"Accept": ACCEPT, "Content-Type": "application/json"}
    if token:
        h["Authorization"] = f"Bearer {gw.token}"
    h.update(headers or {})
    data = msg if isinstance(msg, (bytes, str)) else json.dumps(msg)
    return requests.post(gw.url + "mcp", data=data, headers=h, stream=stream, timeout=timeout)


def call(gw, rid, name, arguments, meta=None, **kw):
    params = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return post(gw, {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}, **kw)


def events(response):
    """The JSON messages of an event stream, in order."""
    out = []
    for line in response.iter_lines(decode_unicode=True):
        if line and line.startswith("data: "):
            out.append(json.loads(line[6:]))
    return out


def text(result):
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


@pytest.fixture(scope="module")
def report(gw):
    """One run of the SDK's streamable HTTP client: every scenario of the
    stdio test, one report."""
    return sdk_report("--http", gw.url + "mcp", env=dict(os.environ, KENNEL_HTTP_TOKEN=gw.token))


def test_sdk_over_http_lists_the_tools(report):
    assert report["server"]["name"] == "kennel"
    assert report["tools"] == ["python_exec", "conversation_open", "conversation_close",
                               "conversation_restart", "conversation_list", "file_put", "file_get", "file_list"]
    assert report["session"]  # initialize gave a Mcp-Session-Id, DELETE ended it


def test_sdk_over_http_variable_persists(report):
    assert report["persist"] == "42"


def test_sdk_over_http_gets_a_matplotlib_png(report):
    assert report["image"] == {"mimeType": "image/png", "magic": "89504e470d0a1a0a"}


def test_sdk_over_http_gets_iserror_for_1_0(report):
    assert report["zero_division"]["isError"] is True
    assert "ZeroDivisionError: division by zero" in report["zero_division"]["text"]


def test_sdk_over_http_cancel_interrupts_and_the_conversation_goes_on(report):
    assert report["cancel_rejected"] is True
    assert report["after_cancel"]["text"] == "82"


def test_sdk_over_http_gets_progress(report):
    assert report["progress_notifications"] >= 1


def test_sdk_over_http_no_network_from_inside(report):
    assert report["network"].startswith("refused"), report["network"]
    assert report["listener_reached"] is False


@pytest.mark.parametrize("auth", [None, "Bearer wrong", "token wrong"])
def test_a_request_without_the_token_is_401(gw, auth):
    r = post(gw, INIT, token=False, headers={"Authorization": auth} if auth else {})
    assert r.status_code == 401, r.text
    assert "mcp-session-id" not in r.headers


def test_a_foreign_origin_is_403(gw):
    r = post(gw, INIT, headers={"Origin": "http://evil.example:80"})
    assert r.status_code == 403, r.text


def test_initialize_answers_json_with_a_session(gw):
    r = post(gw, INIT)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["result"]["serverInfo"]["name"] == "kennel"
    assert r.headers["mcp-session-id"]


@pytest.mark.parametrize("body, code", [
    (b"{not json", -32700),
    (b"", -32700),
    (b"[]", -32600),
    (json.dumps({"jsonrpc": "1.0", "id": 1, "method": "ping"}).encode(), -32600),
])
def test_bad_json_rpc_is_400_with_its_error(gw, body, code):
    r = post(gw, body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == code
    assert r.json()["id"] is None


def test_unknown_method_and_bad_params_are_json_rpc_errors(gw):
    r = post(gw, {"jsonrpc": "2.0", "id": 7, "method": "nope"})
    assert r.status_code == 200 and r.json()["error"]["code"] == -32601
    r = post(gw, {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": 3}})
    assert r.json()["error"]["code"] == -32602
    r = call(gw, 9, "no_such_tool", {})
    assert r.json()["error"]["code"] == -32602


def test_a_notification_is_202_without_a_body(gw):
    r = post(gw, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert r.status_code == 202 and r.content == b""


def test_get_is_405_and_an_unknown_protocol_version_400(gw):
    r = requests.get(gw.url + "mcp", headers={"Authorization": f"Bearer {gw.token}", "Accept": "text/event-stream"},
                     timeout=30)
    assert r.status_code == 405
    r = post(gw, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"MCP-Protocol-Version": "1999-01-01"})
    assert r.status_code == 400


def test_a_call_with_a_progress_token_streams_its_progress_then_the_answer(gw):
    conv = open_conversation(gw)
    r = call(gw, 11, "python_exec", {"code": "import time; time.sleep(2.5); print('slept')", "conversation": conv},
             meta={"progressToken": "p1"}, stream=True)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    msgs = events(r)
    progress = [m for m in msgs if m.get("method") == "notifications/progress"]
    assert progress and all(m["params"]["progressToken"] == "p1" for m in progress)
    assert msgs[-1]["id"] == 11 and text(msgs[-1]["result"]) == "slept\n"


def open_conversation(gw, **kw):
    r = call(gw, 1, "conversation_open", {}, **kw)
    conv = r.json()["result"]["structuredContent"]["conversation"]
    assert call(gw, 2, "python_exec", {"code": "alive = 1", "conversation": conv}, **kw).json()["result"]["isError"] \
        is False
    return conv


def test_the_stateless_revision_is_served_over_http(gw):
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    r = post(gw, {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}})
    assert r.status_code == 200 and "2026-07-28" in r.json()["result"]["supportedVersions"]
    r = call(gw, 2, "conversation_open", {}, meta=meta)
    conv = r.json()["result"]["structuredContent"]["conversation"]
    r = call(gw, 3, "python_exec", {"code": "21 * 2", "conversation": conv}, meta=meta)
    assert r.json()["result"]["resultType"] == "complete"
    assert text(r.json()["result"]) == "42"


def test_a_request_without_a_session_has_no_default_conversation(gw):
    """Every client of the daemon holds the same token: a default
    conversation for requests of no session would be shared by all of
    them. Before: it was (one client's variable read by another)."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    for m in (meta, None):
        r = call(gw, 4, "python_exec", {"code": "secret = 1"}, meta=m).json()["result"]
        assert r["isError"] is True, r
        assert "conversation_open" in text(r) and "Mcp-Session-Id" in text(r), r


def test_two_sdk_clients_never_share_a_default_conversation(gw):
    """Each MCP session has a default conversation of its own; a handle is
    the only way to share one. Before: the second client printed `41 7`,
    the first one's variables (one default conversation per daemon)."""
    [[first, mine]] = sdk_calls(gw, [exec_call("x, y = 41, 7"), exec_call("print(x, y)")])
    assert (first["isError"], mine["text"]) == (False, "41 7\n"), (first, mine)
    handle = first["structured"]["conversation"]
    [[other, listed, shared]] = sdk_calls(gw, [exec_call("print(x, y)"),
                                               {"name": "conversation_list", "arguments": {}},
                                               exec_call("print(x, y)", conversation=handle)])
    assert other["isError"] is True and "NameError: name 'x' is not defined" in other["text"], other
    assert other["structured"]["conversation"] != handle
    # its list has its own default conversation only, not the other client's
    assert [c["conversation_id"] for c in listed["structured"]["conversations"]] \
        == [other["structured"]["conversation"]], listed
    # the first client's session ended (DELETE at its close): its default
    # conversation was closed with it, so even its handle reaches nothing
    assert shared["isError"] is True and f"no conversation {handle}" in shared["text"], shared


def test_a_handle_is_how_two_clients_share_a_conversation(gw):
    conv = open_conversation(gw)
    [[r]] = sdk_calls(gw, [exec_call("alive + 41", conversation=conv)])
    assert r["text"] == "42", r


def test_a_client_that_drops_its_connection_mid_execution_interrupts_it(gw):
    conv = open_conversation(gw)
    s = socket.create_connection((gw.url.split("//")[1].split(":")[0], int(gw.url.rsplit(":", 1)[1].strip("/"))))
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "python_exec", "arguments": {"conversation": conv, "code": "n = 0\nwhile True:\n    n += 1"}}})
    s.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {gw.token}\r\nAccept: {ACCEPT}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
    time.sleep(1.5)  # it runs
    s.close()
    # the loop is interrupted: the next call runs at once, the state kept
    r = call(gw, 4, "python_exec", {"conversation": conv, "code": "print(alive, n > 0)"}, timeout=20)
    assert text(r.json()["result"]) == "1 True\n", r.text
    assert any(e.get("event") == "mcp_client_gone" for e in gw.log())


def call_in_thread(gw, rid, conv, code, session):
    """A call running in a thread; got["r"] its response once joined."""
    got = {}

    def run():
        got["r"] = call(gw, rid, "python_exec", {"conversation": conv, "code": code},
                        headers={"Mcp-Session-Id": session}, timeout=60)
    th = threading.Thread(target=run)
    th.start()
    return th, got


def test_delete_cancels_the_session_s_running_calls(gw):
    conv = open_conversation(gw)
    sid = post(gw, INIT).headers["mcp-session-id"]
    th, got = call_in_thread(gw, 5, conv, "while True: pass", sid)
    time.sleep(1.5)
    r = requests.delete(gw.url + "mcp", headers={"Authorization": f"Bearer {gw.token}", "Mcp-Session-Id": sid},
                        timeout=30)
    assert r.status_code == 204
    th.join(30)
    assert got["r"].status_code == 202  # cancelled: no answer
    r = call(gw, 6, "python_exec", {"conversation": conv, "code": "alive + 1"}, timeout=20)
    assert text(r.json()["result"]) == "2"


def call_without_session(gw, rid, conv, code):
    """A call of no session running in a thread; got["r"] its response."""
    got = {}

    def run():
        got["r"] = call(gw, rid, "python_exec", {"conversation": conv, "code": code}, timeout=60)
    th = threading.Thread(target=run)
    th.start()
    return th, got


def test_a_cancel_without_a_session_reaches_only_its_own_stream(gw):
    """Clients number their requests from 0: B's cancel of its request 3
    must not cancel A's request 3. Without sessions the only stream a
    cancel could name is its own POST's (the stateless revision cancels by
    closing the stream). Before: A's call was interrupted, its POST 202."""
    a = open_conversation(gw)
    b = open_conversation(gw)
    th, got = call_without_session(gw, 3, a, "import time; time.sleep(3); 'done'")
    time.sleep(1)
    r = post(gw, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
    assert r.status_code == 202
    th.join(60)
    assert got["r"].status_code == 200 and text(got["r"].json()["result"]) == "'done'", got["r"].text
    assert call(gw, 4, "python_exec", {"conversation": b, "code": "alive"}).json()["result"]["isError"] is False


def test_a_session_id_the_server_did_not_mint_is_404(gw):
    """Session ids are the server's: a client cannot pick one (and so
    cannot name another's to DELETE its calls). Before: any value was taken
    as a session, and `DELETE` of it cancelled the calls of whoever used it."""
    conv = open_conversation(gw)
    for method in ("POST", "DELETE"):
        r = requests.request(method, gw.url + "mcp", headers={
            "Authorization": f"Bearer {gw.token}", "Accept": ACCEPT, "Content-Type": "application/json",
            "Mcp-Session-Id": "my-session"}, data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                              "params": {"name": "python_exec", "arguments": {
                                                                  "conversation": conv, "code": "1"}}}), timeout=30)
        assert r.status_code == 404, (method, r.status_code, r.text)
        assert r.json()["error"]["code"] == -32001 and r.json()["id"] is None, r.text
    # a minted session works until it is deleted, then it is unknown too
    sid = post(gw, INIT).headers["mcp-session-id"]
    assert len(sid) == 32 and int(sid, 16) >= 0
    assert post(gw, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers={"Mcp-Session-Id": sid}).status_code == 200
    h = {"Authorization": f"Bearer {gw.token}", "Mcp-Session-Id": sid}
    assert requests.delete(gw.url + "mcp", headers=h, timeout=30).status_code == 204
    r = post(gw, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers={"Mcp-Session-Id": sid})
    assert r.status_code == 404, r.text
    assert requests.delete(gw.url + "mcp", headers=h, timeout=30).status_code == 404


def test_a_cancel_matches_its_own_session_only(gw):
    conv = open_conversation(gw)
    a = post(gw, INIT).headers["mcp-session-id"]
    b = post(gw, INIT).headers["mcp-session-id"]
    th, got = call_in_thread(gw, 9, conv, "import time; time.sleep(3); 'done'", a)
    time.sleep(1)
    r = post(gw, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}},
             headers={"Mcp-Session-Id": b})
    assert r.status_code == 202
    th.join(60)
    assert text(got["r"].json()["result"]) == "'done'"


def test_file_tools_over_http(gw):
    conv = open_conversation(gw)
    r = call(gw, 1, "file_put", {"path": "h.txt", "content": "over http", "conversation": conv})
    assert r.json()["result"]["isError"] is False, r.text
    r = call(gw, 2, "python_exec", {"code": "open('/workspace/h.txt').read()", "conversation": conv})
    assert text(r.json()["result"]) == "'over http'"
    r = call(gw, 3, "file_get", {"path": "h.txt", "conversation": conv})
    assert r.json()["result"]["content"][0]["text"] == "over http"
    r = call(gw, 4, "file_list", {"conversation": conv})
    assert "h.txt" in [e["name"] for e in r.json()["result"]["structuredContent"]["entries"]]
    r = call(gw, 5, "file_get", {"path": "../x", "conversation": conv})
    assert r.json()["result"]["isError"] is True and text(r.json()["result"]).startswith("InvalidPath")


def test_a_call_cut_by_the_drain_gets_a_json_rpc_error(tmp_path):
    """SIGTERM drains: once drain_grace has passed, a call still running is
    answered with a JSON-RPC error saying so, carrying what the code
    printed before. Before: the connection closed without an answer
    (curl: empty reply, rc 52)."""
    g = HttpGateway(tmp_path, config={"drain_grace": 1})
    g.wait_ready()
    conv = open_conversation(g)
    got = {}

    def run():
        try:
            got["r"] = call(g, 5, "python_exec", {"conversation": conv, "code": (
                "print('started', flush=True)\nimport time\nwhile True:\n    time.sleep(0.1)")}, timeout=60)
        except requests.RequestException as e:
            got["error"] = e
    th = threading.Thread(target=run)
    th.start()
    time.sleep(1.5)  # it runs
    g.proc.send_signal(signal.SIGTERM)
    th.join(60)
    assert g.proc.wait(30) == 0, g.log_file.read_text()[-3000:]
    assert "r" in got, got
    r = got["r"]
    assert r.status_code == 200, r.text
    error = r.json()["error"]
    assert r.json()["id"] == 5 and error["code"] == -32603, r.text
    assert error["message"].startswith("the gateway is stopping (draining after SIGTERM)"), error
    assert error["data"]["ename"] == "GatewayDraining" and error["data"]["conversation"] == conv
    assert "started" in "".join(c.get("text", "") for c in error["data"]["content"]), error


def test_a_401_names_bearer_and_no_oauth_is_found(gw):
    """No OAuth here: the 401 names its scheme (no resource_metadata), and
    every place an MCP client looks for OAuth metadata or endpoints is 404
    without a token. The SDK's client then concludes the server has no
    protected resource metadata and, with an OAuth provider as the MCP
    Inspector's, is never sent to an authorization page; its error carries
    the server's sentence about the token. Before: no WWW-Authenticate, and
    every one of those places answered 401 (the metadata "exists, behind
    the token")."""
    r = post(gw, INIT, token=False)
    assert r.status_code == 401 and r.headers.get("www-authenticate") == 'Bearer realm="kennel"', r.headers
    for path in (".well-known/oauth-protected-resource", ".well-known/oauth-protected-resource/mcp",
                 ".well-known/oauth-authorization-server", ".well-known/openid-configuration"):
        r = requests.get(gw.url + path, timeout=30)
        assert r.status_code == 404 and "no OAuth" in r.json()["message"], (path, r.status_code, r.text)
    done = node("auth.mjs", gw.url + "mcp")
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["plain"]["code"] == 401 and "a token is required" in report["plain"]["message"], report
    oauth = report["oauth"]
    assert oauth.get("connected") is not True and oauth["redirected"] is None, oauth
    first, *looked = oauth["requests"]
    assert (first["status"], first["wwwAuthenticate"]) == (401, 'Bearer realm="kennel"'), first
    assert looked and all(x["status"] == 404 for x in looked), looked
    assert "this server has no OAuth" in oauth["message"], oauth
    assert report["discovery"]["message"] == "Resource server does not implement OAuth 2.0 Protected Resource Metadata."
