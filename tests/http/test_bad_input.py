"""Bad input on the HTTP front: each case gets a clear status or close
code and a log line, and nothing is lost for other websockets or kernels."""
import json
import socket
import time

import websocket

from httptest import api, close_code, connect, message, run, start_kernel, stdout


def other_still_works(gw, kid):
    ws = connect(gw, kid)
    reply, outputs = run(ws, "print('fine')")
    assert reply["content"]["status"] == "ok" and stdout(outputs) == "fine\n"
    ws.close()


def test_bad_frames_close_1007(http_gateway):
    gw = http_gateway
    kid = start_kernel(gw)["id"]
    bystander = connect(gw, kid)
    cases = [("not json", "{nope"), ("no header", json.dumps({"content": {}})),
             ("unknown channel", json.dumps(dict(message("kernel_info_request"), channel="iopub"))),
             ("header not a string", json.dumps(dict(message("kernel_info_request"),
                                                     header={"msg_id": 1, "msg_type": "x"}))),
             ("not an object", "[1, 2]")]
    for name, payload in cases:
        ws = connect(gw, kid)
        ws.send(payload)
        assert close_code(ws) == 1007, name
    ws = connect(gw, kid)
    ws.send_frame(websocket.ABNF.create_frame(b"\xc3\x28 not utf-8", websocket.ABNF.OPCODE_TEXT))
    assert close_code(ws) == 1007, "invalid UTF-8"
    ws = connect(gw, kid)
    ws.send_binary(b"\x00\x00\x00\x05garbage")
    assert close_code(ws) == 1007, "bad binary frame"
    closed = gw.events("websocket_closed")
    assert sum(e["code"] == 1007 for e in closed) >= len(cases) + 1, closed
    reply, outputs = run(bystander, "print('still here')")
    assert stdout(outputs) == "still here\n"
    bystander.close()


def test_oversize_message_closes_1009(make_http_gateway):
    gw = make_http_gateway(config={"max_message_bytes": 1 << 20})
    kid = start_kernel(gw)["id"]
    ws = connect(gw, kid)
    big = message("execute_request", {"code": "x = '" + "a" * (2 << 20) + "'"})
    ws.send(json.dumps(big))
    assert close_code(ws) == 1009
    assert any(e["code"] == 1009 for e in gw.events("websocket_closed"))
    other_still_works(gw, kid)


def test_slow_reader_closes_1008(make_http_gateway):
    """A client that never reads while its kernel prints: its queue stops at
    ws_queue_bytes, it is closed with 1008 and logged; the kernel and a
    websocket that reads go on."""
    gw = make_http_gateway(http={"ws_queue_bytes": 65536},
                           config={"defaults": {"output_bytes": 16 << 20}})
    kid = start_kernel(gw)["id"]
    slow = connect(gw, kid, sockopt=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)])
    for _ in range(8):
        slow.send(json.dumps(message("execute_request", {"code": "print('y' * 2000000)", "silent": False})))
    deadline = time.monotonic() + 60
    while not gw.events("websocket_slow_reader"):
        assert time.monotonic() < deadline, "the slow reader was not closed"
        time.sleep(0.2)
    # the close frame follows what the client's socket already holds; the
    # server sends it when the socket takes it, else it hangs up
    assert close_code(slow, timeout=60) in (1008, None)
    line = gw.events("websocket_slow_reader")[0]
    assert line["code"] == 1008 and "ws_queue_bytes" in line["reason"]
    # the kernel goes on with the slow client's prints; a reader attached
    # meanwhile gets their 2 MB messages through the same 64 KiB queue and,
    # on a loaded host, is rightly closed too: it joins once they are done
    wait_idle(gw, kid)
    other_still_works(gw, kid)


def wait_idle(gw, kid, settle=1.0, timeout=120):
    """Until the kernel's model says idle for settle seconds on end (the
    slow client's queued executions run back to back, busy in between)."""
    deadline, since = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        state = api(gw, "GET", f"api/kernels/{kid}").json()["execution_state"]
        since = (since or time.monotonic()) if state == "idle" else None
        if since and time.monotonic() - since >= settle:
            return
        time.sleep(0.1)
    raise TimeoutError(f"kernel {kid} not idle within {timeout} s")


def test_connection_limit_503(make_http_gateway):
    gw = make_http_gateway(http={"max_connections": 3})
    kid = start_kernel(gw)["id"]
    held = [connect(gw, kid) for _ in range(3)]
    try:
        connect(gw, kid)
        raise AssertionError("a 4th websocket was admitted")
    except websocket.WebSocketBadStatusException as e:
        assert e.status_code == 503
    assert any(e["status"] == 503 for e in gw.events("http_error"))
    held.pop().close()
    deadline = time.monotonic() + 10
    while True:  # the slot frees once the server saw the close
        try:
            connect(gw, kid).close()
            break
        except websocket.WebSocketBadStatusException:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    for ws in held:
        ws.close()


def test_body_limits_and_bad_bodies(http_gateway):
    gw = http_gateway
    r = api(gw, "POST", "api/kernels", data=b"{" + b" " * (2 << 20) + b"}", headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    for body in (b"[]", b"\"x\"", b"{\"name\": 3}", b"{\"env\": {\"KERNEL_A\": 1}}", b"{\"kennel\": 5}"):
        r = api(gw, "POST", "api/kernels", data=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["reason"] == "Bad Request", (body, r.text)
    # a chunked body (requests sends one for a generator) is refused clearly:
    # lws 4.1 reads none and dropped the connection without an answer
    r = api(gw, "POST", "api/kernels", data=(part for part in [b"{}"]))
    assert r.status_code == 411 and r.json()["reason"] == "Length Required"
    assert api(gw, "GET", "api/kernels").json() == []


def test_only_a_websocket_upgrade_is_served(http_gateway):
    """An `Upgrade: h2c` on a kernel's channels path (HTTP/2 over one
    plain connection, whose streams would each be a request) is 400; only
    the websocket upgrade is served there."""
    gw = http_gateway
    kid = start_kernel(gw)["id"]
    host, port = gw.url.split("/")[2].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall((f"GET /api/kernels/{kid}/channels HTTP/1.1\r\nHost: {host}\r\nAuthorization: token {gw.token}\r\n"
                   "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"
                   "\r\n").encode())
        line = s.recv(4096).split(b"\r\n")[0]
        assert line.endswith(b" 400 Bad Request"), line
