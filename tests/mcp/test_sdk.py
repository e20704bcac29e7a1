"""`kennel mcp` with the official MCP TypeScript SDK (@modelcontextprotocol/sdk
from npm, pinned in tests/mcp/node/package-lock.json, installed by `make
mcp-node`): its stdio client against kennel, and a tiny server written with
it whose tools kennel forwards into the kernel (--tools-from-mcp)."""
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


DYING_SERVER = r'''
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "dying", "version": "1"}}
    elif msg.get("method") == "tools/list":
        result = {"tools": [{"name": "once", "inputSchema": {"type": "object"}}]}
    elif msg.get("method") == "tools/call":
        sys.exit(0)   # gone in the middle of the call
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
'''


def test_a_forwarded_server_that_exits_fails_its_calls_at_once(tmp_path):
    server = tmp_path / "dying.py"
    server.write_text(DYING_SERVER)
    m = Mcp(tmp_path, args=["--tools-from-mcp", f"/usr/bin/python3 {server}"])
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
