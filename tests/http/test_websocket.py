"""Kernel websockets on a real `kennel serve --http`: the legacy JSON
protocol and the v1.kernel.websocket.jupyter.org binary one, messages
without a channel, several websockets on one kernel, one websocket per
execution, the first execute right after connecting, comm buffers both
ways, tool calls on stdin."""
import json
import time

import pytest
import websocket

from httptest import V1, api, connect, message, recv, run, send, start_kernel, stdout, stdout_until_idle


@pytest.mark.parametrize("proto", [None, V1], ids=["legacy", "v1"])
def test_execute_round_trip(http_gateway, proto):
    kid = start_kernel(http_gateway)["id"]
    ws = connect(http_gateway, kid, subprotocol=proto)
    assert ws.getsubprotocol() == proto
    reply, outputs = run(ws, "x = 6 * 7\nprint('out', x)\nx", subprotocol=proto)
    assert reply["content"]["status"] == "ok" and reply["channel"] == "shell"
    assert "kennel" in reply["metadata"], reply["metadata"]
    assert stdout(outputs) == "out 42\n"
    result = [m for m in outputs if m["msg_type"] == "execute_result"]
    assert result and result[0]["content"]["data"]["text/plain"] == "42"
    if proto is None:  # R4: top-level msg_type and msg_id on legacy messages
        assert reply["msg_type"] == "execute_reply" and reply["msg_id"] == reply["header"]["msg_id"]
    # an error keeps its evalue whole (R10)
    reply, outputs = run(ws, "raise ValueError('x' * 5000)", subprotocol=proto)
    assert reply["content"]["status"] == "error"
    err = [m for m in outputs if m["msg_type"] == "error"]
    assert err and err[0]["content"]["evalue"] == "x" * 5000
    ws.close()


def test_smolagents_sequence(http_gateway):
    """smolagents: POST with no body and ?token=, a new websocket per
    execution with ?token=, messages without channel nor date, done at
    iopub idle; the first execute is sent right after connecting."""
    r = api(http_gateway, "POST", f"api/kernels?token={http_gateway.token}", token=False)
    assert r.status_code == 201
    kid = r.json()["id"]
    for i in range(5):
        ws = websocket.create_connection(
            http_gateway.url.replace("http://", "ws://") + f"api/kernels/{kid}/channels?token={http_gateway.token}")
        msg = {"header": {"msg_id": f"m{i}-{time.monotonic()}", "username": "anonymous", "session": "s",
                          "msg_type": "execute_request", "version": "5.0"},
               "parent_header": {}, "metadata": {},
               "content": {"code": f"print({i})", "silent": False, "store_history": True, "user_expressions": {},
                           "allow_stdin": False}}
        ws.send(json.dumps(msg))
        assert stdout_until_idle(ws, msg["header"]["msg_id"]) == f"{i}\n"
        ws.close()


def test_several_websockets_on_one_kernel(http_gateway):
    """iopub goes to every websocket, a reply only to the one that asked."""
    kid = start_kernel(http_gateway)["id"]
    a, b = connect(http_gateway, kid), connect(http_gateway, kid, subprotocol=V1)
    model = api(http_gateway, "GET", f"api/kernels/{kid}").json()
    assert model["connections"] == 2
    reply, outputs = run(a, "print('from a')")
    assert reply and stdout(outputs) == "from a\n"
    seen_stream, seen_reply = False, False
    b.settimeout(2)
    try:
        while True:
            m = recv(b, V1)
            if m["parent_header"].get("msg_id") == reply["parent_header"]["msg_id"]:
                seen_stream |= m["msg_type"] == "stream"
                seen_reply |= m["msg_type"] == "execute_reply"
    except websocket.WebSocketTimeoutException:
        pass
    assert seen_stream and not seen_reply
    a.close()
    b.close()


def test_kernel_info_on_shell_and_control(http_gateway):
    kid = start_kernel(http_gateway)["id"]
    ws = connect(http_gateway, kid)
    for channel in ("shell", "control"):
        msg_id = send(ws, message("kernel_info_request", channel=channel))
        while True:
            m = recv(ws)
            if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "kernel_info_reply":
                assert m["channel"] == channel and m["content"]["status"] == "ok"
                break
    ws.close()


# bytes that are no UTF-8, and an empty buffer
BUFFERS = [bytes.fromhex("89504e470d0a1a0a") + bytes(range(256)), b"", b"\x00\x01"]


def comm_round(ws, proto, msg_type, content, buffers=()):
    """Sends a comm message; the comm messages (content, buffers) the
    kernel published for it until its idle."""
    msg_id = send(ws, message(msg_type, content), proto, buffers)
    got = []
    while True:
        m = recv(ws, proto)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return got
        if m["msg_type"].startswith("comm_"):
            got.append((m["content"], [bytes(b) for b in m["buffers"]]))


@pytest.mark.parametrize("proto", [None, V1], ids=["legacy", "v1"])
def test_comm_buffers_both_ways(http_gateway, proto):
    """A comm message's binary buffers reach the client (legacy: the binary
    frame; v1: the parts after content) and a client's reach the kernel's
    on_msg, which sends them back reversed."""
    kid = start_kernel(http_gateway)["id"]
    ws = connect(http_gateway, kid, subprotocol=proto)
    reply, outputs = run(ws, "from ipykernel.comm import Comm\n"
                             "c = Comm(target_name='blobs', data={'n': 1})\n"
                             f"c.send({{'n': 2}}, buffers={BUFFERS!r})\n"
                             "def opened(comm, msg):\n"
                             "    comm.on_msg(lambda m: comm.send({'types': [type(b).__name__ for b in m['buffers']]},\n"
                             "                                    buffers=[bytes(b)[::-1] for b in m['buffers']]))\n"
                             "get_ipython().kernel.comm_manager.register_target('mirror', opened)",
                         subprotocol=proto)
    assert reply["content"]["status"] == "ok", reply["content"]
    sent = [(m["content"]["data"], [bytes(b) for b in m.get("buffers") or []])
            for m in outputs if m["msg_type"] == "comm_msg"]
    assert sent == [({"n": 2}, BUFFERS)]
    assert comm_round(ws, proto, "comm_open", {"comm_id": "m-1", "target_name": "mirror", "data": {}}) == []
    echoed = comm_round(ws, proto, "comm_msg", {"comm_id": "m-1", "data": {}}, BUFFERS)
    assert echoed == [({"comm_id": "m-1", "data": {"types": ["memoryview"] * 3}}, [b[::-1] for b in BUFFERS])]
    ws.close()


def test_interrupt_over_rest_while_running(http_gateway):
    """ipybox/OpenHands: a timeout on their side POSTs interrupt; the
    running execution ends with KeyboardInterrupt and the kernel lives on."""
    kid = start_kernel(http_gateway)["id"]
    ws = connect(http_gateway, kid)
    run(ws, "import time; keep = 5")
    msg = message("execute_request", {"code": "print('started', flush=True); time.sleep(60)", "silent": False})
    send(ws, msg)
    while True:
        m = recv(ws)
        if m["msg_type"] == "stream" and "started" in m["content"]["text"]:
            break
    assert api(http_gateway, "POST", f"api/kernels/{kid}/interrupt", json={"kernel_id": kid}).status_code == 204
    while True:
        m = recv(ws)
        if m["msg_type"] == "execute_reply" and m["parent_header"]["msg_id"] == msg["header"]["msg_id"]:
            assert m["content"]["status"] == "error" and m["content"]["ename"] == "KeyboardInterrupt"
            break
    reply, outputs = run(ws, "print(keep)")
    assert stdout(outputs) == "5\n"
    ws.close()


def test_interrupt_at_execute_input(http_gateway):
    """An interrupt sent as soon as execute_input arrives (JupyterLab's
    stop button pressed at once) lands before the cell's code runs, here
    while a long cell compiles: the cell still ends with KeyboardInterrupt,
    as with ipykernel, instead of running to its end."""
    kid = start_kernel(http_gateway)["id"]
    ws = connect(http_gateway, kid)
    run(ws, "import time; keep = 5")
    code = "_ = [\n" + "1,\n" * 300000 + "]\ntime.sleep(30)\nprint('ran to the end')"
    msg = message("execute_request", {"code": code, "silent": False})
    send(ws, msg)
    while not (recv(ws)["msg_type"] == "execute_input"):
        pass
    assert api(http_gateway, "POST", f"api/kernels/{kid}/interrupt").status_code == 204
    started = time.monotonic()
    ws.settimeout(60)
    while True:
        m = recv(ws)
        if m["msg_type"] == "execute_reply" and m["parent_header"]["msg_id"] == msg["header"]["msg_id"]:
            break
    assert m["content"]["status"] == "error" and m["content"]["ename"] == "KeyboardInterrupt", m["content"]
    assert time.monotonic() - started < 20
    reply, outputs = run(ws, "print(keep)")
    assert stdout(outputs) == "5\n"
    ws.close()


def test_restart_with_a_websocket_open(http_gateway):
    """AG2 and AutoGen restart the kernel over REST while their websocket is
    open: the websocket lives on and runs on the fresh kernel."""
    kid = start_kernel(http_gateway)["id"]
    ws = connect(http_gateway, kid)
    run(ws, "x = 1")
    r = api(http_gateway, "POST", f"api/kernels/{kid}/restart")
    assert r.status_code == 200, r.text
    reply, outputs = run(ws, "print('x' in dir())")
    assert stdout(outputs) == "False\n"
    ws.close()
    assert api(http_gateway, "GET", f"api/kernels/{kid}").json()["execution_state"] in ("idle", "busy")


def test_delete_with_a_websocket_open(http_gateway):
    """DELETE while a websocket is open: the websocket is closed with 1001
    and logged, the gateway goes on (the conversation is gone by then)."""
    from httptest import close_code
    kid = start_kernel(http_gateway)["id"]
    ws = connect(http_gateway, kid)
    run(ws, "x = 1")
    assert api(http_gateway, "DELETE", f"api/kernels/{kid}").status_code == 204
    assert close_code(ws) == 1001
    assert api(http_gateway, "GET", "api").status_code == 200
    closed = [e for e in http_gateway.events("websocket_closed") if e["code"] == 1001]
    assert closed and closed[0]["kernel"] == kid


def test_server_pings_an_idle_websocket(make_http_gateway):
    """Keepalive: an idle websocket gets a ping after http.ping_seconds and
    stays open while it answers (websocket-client answers pongs itself)."""
    gw = make_http_gateway(http={"ping_seconds": 1})
    kid = start_kernel(gw)["id"]
    ws = connect(gw, kid)
    ws.settimeout(10)
    t0 = time.monotonic()
    opcode, _ = ws.recv_data(control_frame=True)
    assert opcode == websocket.ABNF.OPCODE_PING and time.monotonic() - t0 < 5
    ws.pong(b"")
    time.sleep(2.5)
    reply, outputs = run(ws, "print('alive')")
    assert stdout(outputs) == "alive\n"
    ws.close()
