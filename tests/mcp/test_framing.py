"""The JSON-RPC framing and the protocol's error codes of `kennel mcp`,
from raw lines on its stdin: each bad message gets its error, and the next
good one is still answered (the server never gives up on a connection)."""
import json

import pytest

from mcplib import Mcp


@pytest.fixture
def mcp(tmp_path):
    m = Mcp(tmp_path, args=["--max-message-bytes", 65536])
    yield m
    m.close()


def ping_ok(mcp):
    r = mcp.request("ping")
    assert r["result"] == {}, r


def error_of(mcp, raw: bytes):
    mcp.send_raw(raw)
    msg = mcp.next()
    assert msg and "error" in msg, msg
    return msg


@pytest.mark.parametrize("raw,code", [
    (b"{not json\n", -32700),
    (b"[1, 2]\n", -32600),                                              # batches are gone since 2025-06-18
    (b'"a string"\n', -32600),
    (b'{"id": 1, "method": "ping"}\n', -32600),                         # no jsonrpc
    (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}\n', -32600),
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}\n', -32600),    # MCP: ids are never null
    (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}\n', -32600),
    (b'{"jsonrpc": "2.0", "id": 1, "method": 7}\n', -32600),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}\n', -32600),
    (b'{"jsonrpc": "2.0", "id": 1}\n', -32600),
])
def test_bad_message_gets_its_error_and_the_next_is_answered(mcp, raw, code):
    msg = error_of(mcp, raw)
    assert msg["error"]["code"] == code, msg
    assert msg["id"] is None, msg
    ping_ok(mcp)


def test_unknown_method_is_32601(mcp):
    r = mcp.request("resources/list")
    assert r["error"]["code"] == -32601, r
    assert "resources/list" in r["error"]["message"]


def test_invalid_params_are_32602(mcp):
    r = mcp.request("initialize", {"capabilities": {}})
    assert r["error"]["code"] == -32602, r
    r = mcp.request("tools/call", {"arguments": {}})
    assert r["error"]["code"] == -32602, r
    r = mcp.request("tools/call", {"name": "no_such_tool", "arguments": {}})
    assert r["error"]["code"] == -32602 and "no_such_tool" in r["error"]["message"], r
    r = mcp.request("tools/call", {"name": "python_exec", "arguments": "x"})
    assert r["error"]["code"] == -32602, r


def test_bad_arguments_are_a_tool_error_the_model_can_read(mcp):
    """2025-11-25: input validation errors are tool results, not protocol
    errors, so the model sees them and can correct itself."""
    mcp.initialize()
    for args, needle in [({}, "code"), ({"code": 1}, "code"), ({"code": "1", "timeout": -1}, "timeout"),
                         ({"code": "1", "bogus": 1}, "bogus")]:
        r = mcp.call("python_exec", args)
        assert r["isError"] is True, r
        assert needle in mcp.text(r), r


@pytest.mark.parametrize("pad", [65537, 100000, 200000, 1 << 20])
def test_oversized_line_is_dropped_and_the_server_goes_on(mcp, pad):
    big = b'{"jsonrpc": "2.0", "id": 99, "method": "ping", "params": {"pad": "' + b"x" * pad + b'"}}\n'
    msg = error_of(mcp, big)
    assert msg["error"]["code"] == -32600 and "over 65536 bytes" in msg["error"]["message"], msg
    assert msg["error"]["data"]["bytes"] == len(big) - 1
    ping_ok(mcp)
    # a line just under the limit is read whole
    fits = {"jsonrpc": "2.0", "id": 100, "method": "ping", "params": {"pad": "y" * 60000}}
    mcp.send(fits)
    assert mcp.next() == {"jsonrpc": "2.0", "id": 100, "result": {}}


def test_notifications_and_blank_lines_get_no_answer(mcp):
    mcp.send_raw(b"\n\r\n")
    mcp.notify("notifications/initialized")
    mcp.notify("notifications/unknown_thing", {"x": 1})
    mcp.notify("notifications/cancelled", {"requestId": 12345})
    r = mcp.request("ping")
    assert r["result"] == {}
    assert len(mcp.raw) == 1, mcp.raw  # the ping's answer only


def test_stdout_carries_only_protocol_lines(mcp):
    mcp.initialize()
    mcp.call("python_exec", {"code": "import sys; print('to stdout'); print('to stderr', file=sys.stderr)"})
    mcp.close()
    for line in mcp.raw:
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert b"\n" not in b"".join(l[:-1] for l in mcp.raw)


@pytest.mark.parametrize("asked,answered", [
    ("2024-11-05", "2024-11-05"), ("2025-03-26", "2025-03-26"), ("2025-06-18", "2025-06-18"),
    ("2025-11-25", "2025-11-25"), ("1999-01-01", "2025-11-25")])
def test_initialize_negotiates_the_revision(mcp, asked, answered):
    r = mcp.initialize(asked)["result"]
    assert r["protocolVersion"] == answered
    assert r["capabilities"]["tools"] == {"listChanged": False}
    assert r["serverInfo"]["name"] == "kennel"


def test_stateless_revision_server_discover_and_meta_version(mcp):
    """2026-07-28: no handshake; each request names its version in _meta."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    r = mcp.request("server/discover", {"_meta": meta})["result"]
    assert r["resultType"] == "complete"
    assert "2026-07-28" in r["supportedVersions"] and "2025-06-18" in r["supportedVersions"]
    assert r["capabilities"]["tools"] is not None and r["serverInfo"]["name"] == "kennel"
    tools = mcp.request("tools/list", {"_meta": meta})["result"]
    assert tools["resultType"] == "complete"
    assert {t["name"] for t in tools["tools"]} >= {"python_exec", "conversation_open"}
    out = mcp.request("tools/call", {"_meta": meta, "name": "python_exec",
                                     "arguments": {"code": "6 * 7"}})["result"]
    assert out["resultType"] == "complete" and "42" in mcp.text(out), out
    bad = mcp.request("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}})
    assert bad["error"]["code"] == -32004, bad
    assert "2026-07-28" in bad["error"]["data"]["supported"]
