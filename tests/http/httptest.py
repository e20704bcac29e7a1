"""Helpers for the HTTP front's tests: REST calls with requests and kernel
websockets with websocket-client (both Debian's), speaking the legacy JSON
protocol and the v1.kernel.websocket.jupyter.org binary one exactly as
jupyter_server frames them."""
import json
import struct
import time
import uuid

import requests
import websocket

from kennel_testlib import Control, execute, kernel_client, stdout_of

V1 = "v1.kernel.websocket.jupyter.org"


def api(gw, method, path, token=True, **kw):
    headers = dict(kw.pop("headers", {}))
    if token is True and gw.token:
        headers["Authorization"] = f"token {gw.token}"
    elif isinstance(token, str):
        headers["Authorization"] = token
    return requests.request(method, gw.url + path.lstrip("/"), headers=headers, timeout=60, **kw)


def start_kernel(gw, body=None):
    r = api(gw, "POST", "api/kernels", json=body) if body is not None else api(gw, "POST", "api/kernels")
    assert r.status_code == 201, r.text
    return r.json()


def ws_url(gw, kernel_id, query=""):
    base = gw.url.replace("http://", "ws://").replace("https://", "wss://")
    return f"{base}api/kernels/{kernel_id}/channels{query}"


def connect(gw, kernel_id, subprotocol=None, token=True, query="", **kw):
    headers = [f"Authorization: token {gw.token}"] if token and gw.token else []
    ws = websocket.create_connection(ws_url(gw, kernel_id, query), header=headers,
                                     subprotocols=[subprotocol] if subprotocol else None, timeout=60, **kw)
    return ws


def message(msg_type, content=None, channel="shell", session=None):
    return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "session": session or uuid.uuid4().hex,
                       "username": "test", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "content": content or {}, "channel": channel, "buffers": {}}


def v1_encode(msg, buffers=()):
    parts = [msg["channel"].encode()] + [json.dumps(msg[k]).encode()
                                         for k in ("header", "parent_header", "metadata", "content")]
    parts += list(buffers)
    n = len(parts) + 1
    offsets = [8 * (n + 1)]
    for p in parts:
        offsets.append(offsets[-1] + len(p))
    return struct.pack("<Q", n) + b"".join(struct.pack("<Q", o) for o in offsets) + b"".join(parts)


def v1_decode(data):
    n = struct.unpack_from("<Q", data)[0]
    offsets = [struct.unpack_from("<Q", data, 8 * (i + 1))[0] for i in range(n)]
    channel = data[offsets[0]:offsets[1]].decode()
    parts = [data[offsets[i]:offsets[i + 1]] for i in range(1, n - 1)]
    msg = {k: json.loads(parts[i]) for i, k in enumerate(("header", "parent_header", "metadata", "content"))}
    msg.update(channel=channel, buffers=parts[4:], msg_type=msg["header"]["msg_type"])
    return msg


def legacy_binary_encode(msg, buffers):
    """jupyter_server's serialize_binary_message: u32be count, u32be
    offsets, the JSON without buffers, the buffers."""
    parts = [json.dumps({k: v for k, v in msg.items() if k != "buffers"}).encode()] + list(buffers)
    offsets = [4 * (len(parts) + 1)]
    for p in parts[:-1]:
        offsets.append(offsets[-1] + len(p))
    return struct.pack("!" + "I" * (len(parts) + 1), len(parts), *offsets) + b"".join(parts)


def legacy_binary_decode(data):
    nbufs = struct.unpack_from("!I", data)[0]
    offsets = list(struct.unpack_from("!" + "I" * nbufs, data, 4)) + [len(data)]
    msg = json.loads(data[offsets[0]:offsets[1]])
    msg["buffers"] = [data[offsets[i]:offsets[i + 1]] for i in range(1, nbufs)]
    return msg


def send(ws, msg, subprotocol=None, buffers=()):
    if subprotocol == V1:
        ws.send_binary(v1_encode(msg, buffers))
    elif buffers:
        ws.send_binary(legacy_binary_encode(msg, buffers))
    else:
        ws.send(json.dumps({k: v for k, v in msg.items()}))
    return msg["header"]["msg_id"]


def recv(ws, subprotocol=None):
    opcode, data = ws.recv_data()
    if subprotocol == V1:
        assert opcode == websocket.ABNF.OPCODE_BINARY
        return v1_decode(data)
    if opcode == websocket.ABNF.OPCODE_BINARY:
        return legacy_binary_decode(data)
    return json.loads(data)


def run(ws, code, subprotocol=None, timeout=60, until="both", **content):
    """Executes code; returns (reply, outputs) once the execute_reply and
    the request's iopub idle arrived (until="idle": idle only)."""
    msg = message("execute_request", dict({"code": code, "silent": False, "store_history": True,
                                           "user_expressions": {}, "allow_stdin": False}, **content))
    msg_id = send(ws, msg, subprotocol)
    reply, outputs, idle = None, [], False
    deadline = time.monotonic() + timeout
    ws.settimeout(timeout)
    while time.monotonic() < deadline:
        m = recv(ws, subprotocol)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "execute_reply":
            reply = m
        elif m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            idle = True
        elif m["channel"] == "iopub" and m["msg_type"] != "status":
            outputs.append(m)
        if idle and (reply or until == "idle"):
            return reply, outputs
    raise TimeoutError(f"no reply and idle for {code!r} within {timeout} s")


def stdout_until_idle(ws, msg_id, subprotocol=None):
    """The stream text of request msg_id read on ws until its iopub idle
    (ws may be another websocket of the kernel than the one that sent it)."""
    out = ""
    while True:
        m = recv(ws, subprotocol)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "stream":
            out += m["content"]["text"]
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return out


def stdout(outputs):
    return "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")


def close_code(ws, timeout=30):
    """Reads until the server's close frame; its status code (None when the
    connection ended without one)."""
    ws.settimeout(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            opcode, data = ws.recv_data(control_frame=True)
        except websocket.WebSocketConnectionClosedException:
            return None
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            return struct.unpack("!H", data[:2])[0] if len(data) >= 2 else None
    raise TimeoutError("no close frame")


class Conv:
    """A conversation opened on the control socket (the ZeroMQ front), its
    kernel id on the HTTP front, and run() in its kernel: the kernel's side
    of the workspace."""

    def __init__(self, gw, conversation_id, **content):
        self.control = Control(gw.conn_file)
        reply = self.control.open(conversation_id, **content)
        assert reply["status"] == "ok", reply
        self.kc = kernel_client(reply["connection"])
        kernels = api(gw, "GET", "api/kernels").json()
        self.kernel_id = next(k["id"] for k in kernels if k["kennel"]["conversation_id"] == conversation_id)

    def run(self, code, timeout=60):
        r, out = execute(self.kc, code, timeout=timeout)
        assert r["content"]["status"] == "ok", (r["content"], out)
        return stdout_of(out)

    def close(self):
        self.kc.stop_channels()
        self.control.close()
