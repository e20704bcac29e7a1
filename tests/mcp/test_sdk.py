"""`kennel mcp` with the official MCP TypeScript SDK (@modelcontextprotocol/sdk
from npm, pinned in tests/mcp/node/package-lock.json, installed by `make
mcp-node`): its stdio client against kennel, and a tiny server written with
it whose tools kennel forwards into the kernel (--tools-from-mcp)."""
import json
import shutil
import time

import pytest

from kennel_testlib import built
from mcplib import Mcp, node_dir, sdk_report


@pytest.fixture(scope="module")
def report():
    """One run of tests/mcp/node/client.mjs: every scenario, one report."""
    return sdk_report(built("gateway/kennel"), "--progress-interval", "0.2")


def test_sdk_connects_and_lists_the_tools(report):
    assert report["server"]["name"] == "kennel"
    assert report["tools"] == ["python_exec", "conversation_open", "conversation_close",
                               "conversation_restart", "conversation_list", "file_put", "file_get", "file_list"]


def test_sdk_variable_persists_between_calls(report):
    assert report["persist"] == "42"


def test_sdk_gets_a_matplotlib_plot_as_png_image(report):
    assert report["image"] == {"mimeType": "image/png", "magic": "89504e470d0a1a0a"}


def test_sdk_gets_iserror_with_the_traceback_for_1_0(report):
    assert report["zero_division"]["isError"] is True
    assert "ZeroDivisionError: division by zero" in report["zero_division"]["text"]


def test_sdk_cancel_interrupts_a_busy_loop_and_the_conversation_goes_on(report):
    assert report["cancel_rejected"] is True
    assert report["after_cancel"]["text"] == "82"  # x survived the interrupt


def test_sdk_gets_progress_notifications(report):
    assert report["progress_notifications"] >= 3


def test_sdk_no_network_from_inside(report):
    assert report["network"].startswith("refused"), report["network"]
    assert report["listener_reached"] is False


@pytest.fixture
def forwarded(tmp_path):
    d = node_dir()
    cmd = f"{shutil.which('node')} {d / 'weather_server.mjs'}"
    m = Mcp(tmp_path, args=["--tools-from-mcp", cmd])
    m.initialize()
    yield m
    assert m.close() == 0, m.log_text()


def test_tools_of_a_second_mcp_server_are_functions_in_the_kernel(forwarded):
    m = forwarded
    r = m.call("python_exec", {"code": "w = weather(city='Oslo')\nprint(w['city'], w['temp'])\nshout(text='hi')"},
               timeout=90)
    assert r["isError"] is False, r
    assert m.text(r) == "Oslo 21\n'HI'", r
    r = m.call("python_exec", {"code": "try:\n    broken()\nexcept ToolError as e:\n    print(e.ename, '|', e.evalue)"})
    assert m.text(r) == "ToolFailed | tool 'broken' failed: the weather service is down\n", r
    # the gateway checks arguments against the forwarded schema
    r = m.call("python_exec", {"code": "try:\n    weather(city=5)\nexcept ToolError as e:\n    print(e.ename)"})
    assert m.text(r) == "InvalidToolArguments\n", r
    # a schema outside the checked subset: free-form here, the server checks it
    r = m.call("python_exec", {"code": "fancy(code='ABC')"})
    assert m.text(r) == "'got ABC'", r
    log = m.log_text()
    assert '"event":"mcp_upstream_schema_replaced","tool":"fancy"' in log
    assert '"via":"mcp","tool":"weather","status":"ok"' in log
    assert '"via":"mcp","tool":"broken","status":"ToolFailed"' in log


def test_a_forwarded_server_that_does_not_start_is_reported(tmp_path):
    m = Mcp(tmp_path, args=["--tools-from-mcp", "exit 3"])
    m.initialize()
    r = m.call("python_exec", {"code": "1"})  # waits for the forwarded server, which failed
    assert r["isError"] is True and "--tools-from-mcp" in m.text(r), r
    assert m.close() == 1
    assert '"event":"mcp_upstream_failed","setting":"--tools-from-mcp","command":"exit 3"' in m.log_text()


FAKE_SERVER = r'''
import json, sys, time
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "fake", "version": "1"}}
    elif msg.get("method") == "tools/list":
        result = {"tools": [TOOL]}
    elif msg.get("method") == "tools/call":
        ON_CALL
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
'''


def fake_server(tmp_path, tool, on_call):
    """A forwarded MCP server in Python with one tool (its tools/list entry)
    that runs on_call at each tools/call; its command."""
    server = tmp_path / "fake_server.py"
    server.write_text(FAKE_SERVER.replace("TOOL", json.dumps(tool)).replace("ON_CALL", on_call))
    return f"/usr/bin/python3 {server}"


def test_a_forwarded_server_that_exits_fails_its_calls_at_once(tmp_path):
    # gone in the middle of the call
    m = Mcp(tmp_path, args=["--tools-from-mcp", fake_server(tmp_path, {"name": "once", "inputSchema": {"type": "object"}},
                                                            "sys.exit(0)")])
    try:
        m.initialize()
        code = "try:\n    once()\nexcept ToolError as e:\n    print(e.ename, '|', e.evalue)"
        for _ in range(2):   # in the call it died in, and after
            t0 = time.monotonic()
            r = m.call("python_exec", {"code": code}, timeout=90)
            assert m.text(r) == "ToolUnavailable | the MCP server of tool 'once' exited\n", r
            assert time.monotonic() - t0 < 20
    finally:
        assert m.close() == 0, m.log_text()


def test_a_forwarded_server_that_stops_reading_does_not_stop_the_loop(tmp_path):
    """Calls with 900 kB of arguments each to a forwarded server that reads its
    stdin no more fill the pipe to it: the front queues them (bounded)
    instead of blocking in write (the gateway embedded on the same loop
    stopped with it: no answer to anything), so another conversation runs
    and the calls end with the gateway's tool_timeout."""
    stall = {"name": "stall", "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}}
    # it reads its stdin no more
    m = Mcp(tmp_path, args=["--tools-from-mcp", fake_server(tmp_path, stall, "time.sleep(3600)")])
    try:
        m.initialize()
        h = m.call("conversation_open", {"policy": {"tool_timeout": 5}}, timeout=90)["structuredContent"]
        other = m.call("conversation_open", {}, timeout=90)["structuredContent"]["conversation"]
        assert m.text(m.call("python_exec", {"code": "1", "conversation": other}, timeout=90)) == "1"
        code = "big = 'x' * 900000\nfor i in range(3):\n    try:\n        stall(a=big)\n    except ToolError as e:\n" \
               "        print(e.ename)"
        stalled = m.start("tools/call", {"name": "python_exec",
                                         "arguments": {"code": code, "conversation": h["conversation"]}})
        time.sleep(2)   # the first call's bytes fill the pipe
        t0 = time.monotonic()
        notes = []
        r = m.response(m.start("tools/call", {"name": "python_exec",
                                              "arguments": {"code": "6 * 7", "conversation": other}}), 30, notes)
        assert m.text(r["result"]) == "42" and time.monotonic() - t0 < 10, r
        assert not notes, json.dumps(notes)[:1500]   # the stalled call still waits
        r = m.response(stalled, timeout=60)["result"]
        assert m.text(r) == "ToolTimeout\n" * 3, r
    finally:
        assert m.close() == 0, m.log_text()
