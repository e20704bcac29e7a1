"""python_exec and the conversation tools of `kennel mcp`, end to end: a
real `kennel mcp`, its own `kennel serve` child (or a running daemon with
--connection-file), real confined kernels."""
import base64
import json
import os
import subprocess
import time

import pytest

import hostprobe
from kennel_testlib import Control, built, in_namespace_of, remove_state, serve, traversable_dir, wait_until
from mcplib import Mcp


@pytest.fixture
def mcp(tmp_path):
    m = Mcp(tmp_path, args=["--progress-interval", 0.2])
    m.initialize()
    yield m
    assert m.close() == 0, m.log_text()


def test_variables_persist_and_the_last_value_comes_back(mcp):
    r = mcp.call("python_exec", {"code": "x = 41\nprint('set')"})
    assert r["isError"] is False and mcp.text(r) == "set\n", r
    r = mcp.call("python_exec", {"code": "x + 1"})
    assert mcp.text(r) == "42", r
    sc = r["structuredContent"]
    assert sc["status"] == "ok" and sc["execution_count"] == 2
    assert sc["kennel"]["state"] == "kept" and "wall_seconds" in sc["kennel"]


def test_stdout_and_stderr_in_order(mcp):
    r = mcp.call("python_exec", {"code": "import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')"})
    texts = [c["text"] for c in r["content"]]
    assert texts == ["a\n", "[stderr]\nb\n", "c\n"], texts


def test_exception_is_iserror_with_the_traceback(mcp):
    r = mcp.call("python_exec", {"code": "def f():\n    return 1/0\nf()"})
    assert r["isError"] is True, r
    text = mcp.text(r)
    assert "ZeroDivisionError" in text and "f()" in text, text
    assert "\x1b[" not in text
    assert r["structuredContent"]["status"] == "error"
    # the kernel is fine afterwards
    assert mcp.text(mcp.call("python_exec", {"code": "'still here'"})) == "'still here'"


def test_matplotlib_plot_is_image_content(mcp):
    r = mcp.call("python_exec", {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"},
                 timeout=120)
    images = [c for c in r["content"] if c["type"] == "image"]
    assert images and images[0]["mimeType"] == "image/png", r
    assert base64.b64decode(images[0]["data"]).startswith(b"\x89PNG\r\n\x1a\n")


def test_timeout_interrupts_and_keeps_variables(mcp):
    mcp.call("python_exec", {"code": "kept = 'yes'"})
    t0 = time.monotonic()
    r = mcp.call("python_exec", {"code": "import time\nwhile True: time.sleep(0.01)", "timeout": 1})
    assert time.monotonic() - t0 < 15
    assert r["isError"] is True and "KeyboardInterrupt" in mcp.text(r) and "timeout" in mcp.text(r), r
    assert mcp.text(mcp.call("python_exec", {"code": "kept"})) == "'yes'"


def test_cancel_interrupts_and_the_conversation_stays_usable(mcp):
    mcp.call("python_exec", {"code": "before = 1"})
    rid = mcp.start("tools/call", {"name": "python_exec", "arguments": {"code": "while True: pass"}})
    time.sleep(1.0)
    mcp.notify("notifications/cancelled", {"requestId": rid, "reason": "user"})
    t0 = time.monotonic()
    r = mcp.request("tools/call", {"name": "python_exec", "arguments": {"code": "before + 1"}}, timeout=30)
    assert time.monotonic() - t0 < 20
    assert mcp.text(r["result"]) == "2", r
    # no answer ever came for the cancelled request
    assert not any(json.loads(l).get("id") == rid for l in mcp.raw)
    assert "mcp_cancelled" in mcp.log_text()


def test_progress_notifications_with_a_token(mcp):
    notes = []
    rid = mcp.start("tools/call", {"name": "python_exec", "arguments": {"code": "import time; time.sleep(1.5)"},
                                   "_meta": {"progressToken": "tok-1"}})
    r = mcp.response(rid, notes=notes)
    assert r["result"]["isError"] is False
    progress = [n for n in notes if n.get("method") == "notifications/progress"]
    assert len(progress) >= 3, notes
    values = [p["params"]["progress"] for p in progress]
    assert all(p["params"]["progressToken"] == "tok-1" for p in progress)
    assert values == sorted(values) and len(set(values)) == len(values)
    # without a token, none
    notes = []
    mcp.response(mcp.start("tools/call", {"name": "python_exec", "arguments": {"code": "import time; time.sleep(0.6)"}}),
                 notes=notes)
    assert notes == []


def test_conversations_are_separate_and_listed(mcp):
    mcp.call("python_exec", {"code": "who = 'default'"})
    opened = mcp.call("conversation_open", {"policy": {"execution_timeout": 30}})
    assert opened["isError"] is False, opened
    handle = opened["structuredContent"]["conversation"]
    r = mcp.call("python_exec", {"code": "'who' in dir()", "conversation": handle})
    assert mcp.text(r) == "False"
    mcp.call("python_exec", {"code": "who = 'second'", "conversation": handle})
    assert mcp.text(mcp.call("python_exec", {"code": "who"})) == "'default'"
    listed = mcp.call("conversation_list")["structuredContent"]["conversations"]
    assert handle in [c["conversation_id"] for c in listed] and len(listed) == 2
    r = mcp.call("conversation_restart", {"conversation": handle})
    assert r["isError"] is False, r
    r = mcp.call("python_exec", {"code": "who", "conversation": handle})
    assert r["isError"] is True and "NameError" in mcp.text(r)
    assert mcp.call("conversation_close", {"conversation": handle})["isError"] is False
    r = mcp.call("python_exec", {"code": "1", "conversation": handle})
    assert r["isError"] is True and "no conversation" in mcp.text(r)
    r = mcp.call("conversation_open", {"policy": {"memory_bytes": 10 ** 15}})
    assert r["isError"] is True and "PolicyError" in mcp.text(r), r
    r = mcp.call("conversation_open", {"tools": ["nope"]})
    assert r["isError"] is True and "nope" in mcp.text(r), r


def test_no_network_inside(mcp):
    """A listener on the host's loopback sees nothing from inside."""
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    code = ("import socket\ntry:\n    socket.create_connection(('127.0.0.1', %d), timeout=3).close()\n"
            "    print('connected')\nexcept OSError as e:\n    print('refused', type(e).__name__)" % port)
    r = mcp.call("python_exec", {"code": code})
    assert mcp.text(r).startswith("refused"), r
    with pytest.raises(BlockingIOError):
        listener.accept()
    listener.close()


def shared_conversation(tmp_path):
    """A running daemon (warm_pool 0) and a conversation a first front
    opened there with `kept = 7`: (daemon, state dir, handle, its workspace)."""
    state = traversable_dir("kennel-mcp-test-")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(hostprobe.gateway_config({"warm_pool": 0})))
    daemon = serve(state, config, tmp_path / "gateway.log")
    m = Mcp(tmp_path, args=["--connection-file", state / "gateway.json"], log_name="mcp0.log")
    m.initialize()
    opened = m.call("conversation_open")
    handle = opened["structuredContent"]["conversation"]
    m.call("python_exec", {"code": "kept = 7", "conversation": handle})
    assert m.close() == 0, m.log_text()
    # the workspace as the daemon sees it: a tmpfs in its own mount namespace
    return daemon, state, handle, in_namespace_of(daemon.pid, opened["structuredContent"]["workspace"])


def state_of(control, handle):
    convs = control.request("conversation_list_request")["content"]["conversations"]
    return {c["conversation_id"]: c["state"] for c in convs}.get(handle)


def reattached_value(tmp_path, state, handle):
    """A second front takes the handle up again: `kept * 6` there."""
    m2 = Mcp(tmp_path, args=["--connection-file", state / "gateway.json"], log_name="mcp2.log")
    m2.initialize()
    r = m2.call("python_exec", {"code": "kept * 6", "conversation": handle})
    text = m2.text(r)
    r = m2.call("python_exec", {"code": "1", "conversation": "mcp-no-such-handle"})
    assert r["isError"] is True and "no conversation mcp-no-such-handle" in m2.text(r), r
    assert m2.close() == 0, m2.log_text()
    return text


def test_client_gone_mid_execution_interrupts_and_keeps_the_conversation(tmp_path):
    """With a running daemon (--connection-file) the conversation outlives
    the client for its idle_ttl; the code it was running is interrupted,
    and a later front takes the handle up again."""
    daemon, state, handle, workspace = shared_conversation(tmp_path)
    try:
        m = Mcp(tmp_path, args=["--connection-file", state / "gateway.json"])
        m.initialize()
        m.start("tools/call", {"name": "python_exec", "arguments": {
            "code": "open('/workspace/started', 'w').close()\nwhile True: pass", "conversation": handle}})
        control = Control(state / "gateway.json")
        # the loop runs (a SIGINT before the code starts would be lost)
        wait_until((workspace / "started").exists, 20, "the loop to start")
        assert state_of(control, handle) == "busy"
        assert m.close() == 0, m.log_text()
        wait_until(lambda: state_of(control, handle) == "idle", 20,
                   lambda: f"the interrupted loop to end: {state_of(control, handle)}")
        control.close()
        assert reattached_value(tmp_path, state, handle) == "42"
    finally:
        daemon.terminate()
        daemon.wait(20)
        remove_state(state)


CLIENT = """
import json, subprocess, sys, time
kennel, conn, handle, log = sys.argv[1:]
p = subprocess.Popen([kennel, "mcp", "--connection-file", conn], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=open(log, "wb"))
def send(m):
    p.stdin.write(json.dumps(m).encode() + b"\\n"); p.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
      "capabilities": {}, "clientInfo": {"name": "doomed", "version": "1"}}})
p.stdout.readline()
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "python_exec", "arguments": {
      "code": "open('/workspace/started', 'w').close()\\nwhile True: pass", "conversation": handle}}})
print(p.pid, flush=True)
time.sleep(600)
"""


def test_a_client_killed_mid_execution_interrupts_and_keeps_the_conversation(tmp_path):
    """The MCP client process is SIGKILLed while its call runs `while True`
    (its pipes close with it): kennel mcp interrupts the loop and ends; the
    conversation stays on the daemon with its variables."""
    daemon, state, handle, workspace = shared_conversation(tmp_path)
    try:
        client = subprocess.Popen(["/usr/bin/python3", "-c", CLIENT, str(built("gateway/kennel")),
                                   str(state / "gateway.json"), handle, str(tmp_path / "doomed.log")],
                                  stdout=subprocess.PIPE, text=True)
        front = int(client.stdout.readline())
        control = Control(state / "gateway.json")
        wait_until((workspace / "started").exists, 30, "the loop to start")
        assert state_of(control, handle) == "busy"
        client.kill()
        client.wait(10)
        wait_until(lambda: state_of(control, handle) == "idle", 20,
                   lambda: f"the interrupted loop to end: {state_of(control, handle)}")
        wait_until(lambda: not os.path.exists(f"/proc/{front}") or
                   open(f"/proc/{front}/stat").read().split()[2] == "Z", 20, "kennel mcp to end")
        assert "mcp_client_gone" in (tmp_path / "doomed.log").read_text()
        control.close()
        assert reattached_value(tmp_path, state, handle) == "42"
    finally:
        daemon.terminate()
        daemon.wait(20)
        remove_state(state)


def test_a_connection_file_without_a_daemon_fails_at_start(tmp_path):
    """A file left by a daemon that is gone: the first call says so within
    the 5 s gateway_info wait, and the front exits 1."""
    state = traversable_dir("kennel-mcp-test-")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(hostprobe.gateway_config({"warm_pool": 0})))
    daemon = serve(state, config, tmp_path / "gateway.log", conn_file=tmp_path / "kept.json")
    stale = tmp_path / "stale.json"
    stale.write_text((tmp_path / "kept.json").read_text())
    daemon.terminate()
    daemon.wait(20)
    remove_state(state)
    m = Mcp(tmp_path, args=["--connection-file", stale])
    m.initialize()
    t0 = time.monotonic()
    r = m.call("python_exec", {"code": "1"})
    assert r["isError"] is True and "no answer from the gateway" in m.text(r), r
    assert time.monotonic() - t0 < 15
    assert m.close() == 1, m.log_text()


def test_a_conversation_culled_while_idle_comes_back_fresh_and_says_so(tmp_path):
    """The gateway culls a conversation idle past its idle_ttl; the next
    call must not wait on sockets that are gone: the front opens it again,
    the code runs in a fresh kernel and the result says the variables are
    gone. A short idle spell keeps everything."""
    m = Mcp(tmp_path, config={"warm_pool": 0, "idle_check_interval": 0.2, "defaults": {"idle_ttl": 2}})
    try:
        m.initialize()
        assert m.call("python_exec", {"code": "x = 5"})["isError"] is False
        time.sleep(1.2)   # idle, not culled: confirmed with the gateway, same kernel
        r = m.call("python_exec", {"code": "x + 1"})
        assert m.text(r) == "6", r
        time.sleep(4)     # culled
        r = m.call("python_exec", {"code": "'x' in dir()"}, timeout=60)
        text = m.text(r)
        assert "fresh kernel" in text and text.endswith("False"), r
        r = m.call("python_exec", {"code": "1 + 1"})
        assert m.text(r) == "2", r
        assert '"event":"mcp_conversation_renewed"' in m.log_text()
    finally:
        assert m.close() == 0, m.log_text()
