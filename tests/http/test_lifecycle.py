"""Kernels and websockets over their life on a real `kennel serve --http`:
tool calls on stdin, a kernel killed with a websocket open, the gateway's
SIGTERM with websockets open, 100 websockets over 50 kernels, TLS."""
import json
import os
import signal
import ssl
import subprocess
import threading
import time

import pytest
import requests
import websocket

from httptest import (V1, api, close_code, connect, message, recv, run, send, start_kernel, stdout,
                      stdout_until_idle)
from kennel_testlib import gone, mounts_below

ECHO = {"name": "echo", "description": "Returns its value.",
        "parameters": {"type": "object", "properties": {"value": {}}, "required": ["value"]}}
CATCH = "try:\n    print({call})\nexcept ToolError as e:\n    print(e.ename, '|', e.evalue)"


def test_tool_call_on_stdin(http_gateway):
    """tool_request reaches the websocket on stdin with the execute as
    parent; the client's tool_reply on stdin is the call's result. With
    allow_stdin false the call fails at once (ToolUnavailable)."""
    kid = start_kernel(http_gateway, {"kennel": {"tools": [ECHO]}})["id"]
    ws = connect(http_gateway, kid)
    msg = message("execute_request", {"code": CATCH.format(call="echo({'a': [1, 2]})"), "allow_stdin": True})
    send(ws, msg)
    requests_seen, out = [], ""
    while True:
        m = recv(ws)
        if m["msg_type"] == "tool_request":
            assert m["channel"] == "stdin" and m["parent_header"]["msg_id"] == msg["header"]["msg_id"]
            assert m["content"]["name"] == "echo"
            requests_seen.append(m)
            reply = message("tool_reply", {"call_id": m["content"]["call_id"], "status": "ok",
                                           "result": m["content"]["arguments"]["value"]}, channel="stdin")
            reply["parent_header"] = m["header"]
            send(ws, reply)
        elif m["msg_type"] == "stream":
            out += m["content"]["text"]
        elif m["msg_type"] == "execute_reply":
            break
    assert len(requests_seen) == 1 and out == "{'a': [1, 2]}\n"
    reply, outputs = run(ws, CATCH.format(call="echo(1)"), allow_stdin=False)
    assert stdout(outputs).startswith("ToolUnavailable |"), stdout(outputs)
    ws.close()


# The kernel times the call and waits before printing, so that a second
# websocket, opened after the first closed, is attached when the line goes out.
TIMED_CALL = ("import time\n{before}t = time.monotonic()\ntry:\n    echo(1)\n    r = 'answered'\n"
              "except ToolError as e:\n    r = f'{{e.ename}} | {{e.evalue}}'\n"
              "time.sleep(2)\nprint(r, '|', round(time.monotonic() - t, 1))")


@pytest.mark.parametrize("closed", ["after_tool_request", "before_tool_request"])
def test_tool_call_when_stdin_websocket_closes(http_gateway, closed):
    """The websocket that serves stdin closes with a tool call pending (or
    before the kernel makes it): the kernel gets ToolUnavailable at once, as
    over ZeroMQ when no client serves stdin, not after tool_timeout (60 s
    here, the default); the error is seen on a new websocket."""
    kid = start_kernel(http_gateway, {"kennel": {"tools": [ECHO]}})["id"]
    ws = connect(http_gateway, kid)
    before = "time.sleep(1.5)\n" if closed == "before_tool_request" else ""
    msg = message("execute_request", {"code": TIMED_CALL.format(before=before), "allow_stdin": True})
    send(ws, msg)
    if closed == "after_tool_request":
        while recv(ws)["msg_type"] != "tool_request":
            pass
    ws.close()
    other = connect(http_gateway, kid)
    other.settimeout(30)
    line = stdout_until_idle(other, msg["header"]["msg_id"])
    ename, evalue, seconds = line.strip().split(" | ")
    assert ename == "ToolUnavailable" and "stdin" in evalue, line
    assert float(seconds) < 10, line
    other.close()


def test_kernel_killed_with_a_websocket_open(http_gateway):
    """kill -9 of the kernel during an execution: the client gets an error
    reply and status dead, the model says dead, the next request works on
    a fresh kernel."""
    gw = http_gateway
    kid = start_kernel(gw)["id"]
    ws = connect(gw, kid)
    reply, outputs = run(ws, "import os; print(os.getpid())")
    pid_inside = int(stdout(outputs))
    msg = message("execute_request", {"code": "import time; print('go', flush=True); time.sleep(60)"})
    send(ws, msg)
    while True:
        m = recv(ws)
        if m["msg_type"] == "stream" and "go" in m["content"]["text"]:
            break
    entry = [e for e in gw.events("kernel_start")][-1]
    os.kill(entry["pid"], signal.SIGKILL)
    got_error, got_dead = False, False
    deadline = time.monotonic() + 30
    while not (got_error and got_dead) and time.monotonic() < deadline:
        m = recv(ws)
        if m["msg_type"] == "execute_reply" and m["parent_header"]["msg_id"] == msg["header"]["msg_id"]:
            got_error = m["content"]["status"] == "error"
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "dead":
            got_dead = True
    assert got_error and got_dead
    assert api(gw, "GET", f"api/kernels/{kid}").json()["execution_state"] in ("dead", "starting", "idle")
    reply, outputs = run(ws, "print('again')", timeout=60)
    assert reply["content"]["status"] == "ok" and stdout(outputs) == "again\n"
    assert pid_inside  # the kernel's own pid namespace: not the host pid
    ws.close()


def test_sigterm_with_websockets_open(make_http_gateway):
    """The gateway stops cleanly (exit 0, no leak in a sanitizer build, no
    kernel left) with websockets open and an execution running past the
    drain's grace (tests/http/test_ops.py); each client gets a close frame
    1001."""
    gw = make_http_gateway(config={"drain_grace": 1})
    sockets = []
    for _ in range(3):
        kid = start_kernel(gw)["id"]
        ws = connect(gw, kid)
        run(ws, "x = 1")
        sockets.append(ws)
    send(sockets[0], message("execute_request", {"code": "import time; time.sleep(60)"}))
    kernels = [e["pid"] for e in gw.events("kernel_start")]
    time.sleep(0.3)
    assert gw.stop(signal.SIGTERM) == 0
    for ws in sockets:
        assert close_code(ws, timeout=10) == 1001
    assert all(gone(pid) for pid in kernels)


def test_hundred_websockets_over_fifty_kernels(make_http_gateway):
    """50 kernels, two websockets each (one legacy, one v1), all executing
    at once: every websocket gets its own reply and its outputs."""
    gw = make_http_gateway(config={"max_conversations": 64, "warm_pool": 4})
    kernels = [start_kernel(gw)["id"] for _ in range(50)]
    pairs = [(kid, proto) for kid in kernels for proto in (None, V1)]
    sockets = [connect(gw, kid, subprotocol=proto) for kid, proto in pairs]
    results = [None] * len(sockets)

    def work(i):
        kid, proto = pairs[i]
        reply, outputs = run(sockets[i], f"print('ws{i}')", subprotocol=proto, timeout=120)
        results[i] = (reply["content"]["status"], stdout(outputs))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(sockets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert results == [("ok", f"ws{i}\n") for i in range(len(sockets))]
    models = api(gw, "GET", "api/kernels").json()
    assert sorted(m["connections"] for m in models) == [2] * 50
    for ws in sockets:
        ws.close()


def test_tls(make_http_gateway, tmp_path):
    """With the operator's certificate and key (a self-signed pair made
    here by openssl) the API and the websocket are served over TLS only."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    gw = make_http_gateway(http={"certfile": str(cert), "keyfile": str(key)})
    assert gw.url.startswith("https://127.0.0.1:")
    r = requests.get(gw.url + "api", headers={"Authorization": f"token {gw.token}"}, verify=str(cert), timeout=30)
    assert r.status_code == 200 and "version" in r.json()
    plain = gw.url.replace("https://", "http://")
    try:
        requests.get(plain + "api", headers={"Authorization": f"token {gw.token}"}, timeout=10)
        raise AssertionError("plain HTTP was answered on the TLS port")
    except requests.exceptions.ConnectionError:
        pass
    kid = requests.post(gw.url + "api/kernels", headers={"Authorization": f"token {gw.token}"}, verify=str(cert),
                        timeout=60).json()["id"]
    ws = websocket.create_connection(gw.url.replace("https://", "wss://") + f"api/kernels/{kid}/channels",
                                     header=[f"Authorization: token {gw.token}"],
                                     sslopt={"cert_reqs": ssl.CERT_REQUIRED, "ca_certs": str(cert)}, timeout=60)
    reply, outputs = run(ws, "print('over tls')")
    assert stdout(outputs) == "over tls\n"
    ws.close()
    assert json.loads(gw.conn_file.read_text())["http_url"] == gw.url


def test_a_slow_kernel_start_is_waited_for(make_http_gateway, tmp_path):
    """A kernel whose launch takes longer than libwebsockets' own 5 s
    timeout still gets its 201 on the same connection (a cold start on a
    loaded host): a launcher that waits 6 s before the real one."""
    from kennel_testlib import built
    slow = tmp_path / "slow-launch"
    slow.write_text(f"#!/bin/sh\nsleep 6\nexec {built('kernel-launcher/kennel-launch')} \"$@\"\n")
    slow.chmod(0o755)
    gw = make_http_gateway(wait=False, config={"launcher": str(slow), "warm_pool": 0,
                                               "fork_server": {"enabled": False}, "launch_timeout": 60})
    gw.wait_ready(timeout=60)
    t0 = time.monotonic()
    model = start_kernel(gw)
    assert time.monotonic() - t0 > 5.5 and model["execution_state"] in ("idle", "busy", "starting")


def test_a_killed_gateway_leaves_no_mounts_behind(make_http_gateway):
    """The gateway mounts a tmpfs per workspace and run dir in a mount
    namespace of its own; SIGKILLed, it cannot unmount them, and none was
    ever in the host's (where a root gateway's once stayed, ~100 per killed
    gateway, until service_exec.py, which remounts each, timed out)."""
    gw = make_http_gateway()
    start_kernel(gw)
    with open(f"/proc/{gw.proc.pid}/mountinfo") as f:
        assert any(line.split()[4].startswith(f"{gw.state}/") for line in f), "the daemon's own mounts"
    assert mounts_below(gw.state) == []
    gw.proc.kill()
    gw.proc.wait(10)
    assert mounts_below(gw.state) == []
    gw.stop()
