"""`kennel mcp` driven as an MCP client drives it: a real process, JSON-RPC
lines on its stdin, answers read from its stdout. Only what tests/mcp
needs; the shared helpers are in tests/kennel_testlib.py."""
import json
import os
import pathlib
import queue
import shutil
import socket
import subprocess
import threading
import time

import pytest

import hostprobe
from kennel_testlib import BUILDDIR, SRCDIR, built, setpriv, traversable_dir

NODE_DIR = BUILDDIR / "mcp-node"        # `make mcp-node`: the pinned MCP SDK
NODE_SCRIPTS = SRCDIR / "tests" / "mcp" / "node"


class Mcp:
    """One `kennel mcp` process. stderr goes to a file (log) so the test can
    show it; stdout is read by a thread into a queue of parsed lines."""

    def __init__(self, tmp_path, args=(), env=None, log_name="mcp.log", uid=None, config=None):
        self.log = pathlib.Path(tmp_path) / log_name
        args = [str(a) for a in args]
        if "--connection-file" not in args and "--config" not in args:
            # its own gateway: where this host lacks a layer for this uid,
            # exactly that layer is allowed to degrade (tests/hostprobe.py)
            cfg = dict(config or {})
            if uid is not None:
                cfg.setdefault("confine", {"allow_degraded": hostprobe.allow_degraded(uid, also=["quota"])})
            path = pathlib.Path(tmp_path) / f"{log_name}.config.json"
            path.write_text(json.dumps(hostprobe.gateway_config(cfg)))
            if uid is not None:
                os.chown(path, uid, uid)
            args += ["--config", str(path)]
        prefix = [] if uid is None else setpriv(uid)
        self.proc = subprocess.Popen(
            prefix + [str(built("gateway/kennel")), "mcp", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(self.log, "wb"),
            env=env, bufsize=0, cwd="/tmp")
        self.lines = queue.Queue()
        self.raw = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.raw.append(line)
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def send_raw(self, data: bytes):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg):
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def notify(self, method, params=None):
        self.send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def start(self, method, params=None):
        """Sends a request; returns its id."""
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.next_id

    def next(self, timeout=30):
        """The next message from the server, or None at its end."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"kennel mcp said nothing within {timeout} s; log:\n{self.log_text()}")

    def response(self, rid, timeout=60, notes=None):
        """The response to request rid; other messages go to notes."""
        deadline = time.monotonic() + timeout
        while True:
            msg = self.next(max(0.1, deadline - time.monotonic()))
            if msg is None:
                raise EOFError(f"kennel mcp ended before answering {rid}; log:\n{self.log_text()}")
            if msg.get("id") == rid and ("result" in msg or "error" in msg):
                return msg
            if notes is not None:
                notes.append(msg)

    def request(self, method, params=None, timeout=60):
        return self.response(self.start(method, params), timeout)

    def initialize(self, version="2025-06-18"):
        r = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "pytest", "version": "1"}})
        self.notify("notifications/initialized")
        return r

    def call(self, name, arguments=None, timeout=60, meta=None):
        params = {"name": name, "arguments": arguments or {}}
        if meta:
            params["_meta"] = meta
        r = self.request("tools/call", params, timeout)
        assert "result" in r, r
        return r["result"]

    def text(self, result):
        return "".join(c["text"] for c in result["content"] if c["type"] == "text")

    def log_text(self):
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def close(self, timeout=20):
        """Closes stdin (the client is gone) and returns the exit status."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


def unprivileged_home(uid, prefix):
    """A dir uid owns and a sandbox uid can traverse, for a `kennel mcp` run
    as uid; the test is skipped, saying why, where uid cannot make the user
    namespaces its own gateway confines in."""
    userns = hostprobe.user_namespaces(uid)
    if not userns.ok:
        pytest.skip(f"{userns.detail}: a gateway run as uid {uid} confines nothing on this host "
                    "(security/test_confine.py asserts the refusal)")
    home = traversable_dir(prefix)
    os.chown(home, uid, uid)
    return home


def node_dir():
    """The build dir's pinned SDK with the test scripts beside it: ESM
    resolves node_modules from the script's own folder. A missing SDK is an
    error (make mcp-node installs it; ./quickstart check runs that)."""
    if not (NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        raise FileNotFoundError(f"{NODE_DIR}/node_modules lacks @modelcontextprotocol/sdk: run make mcp-node")
    for script in NODE_SCRIPTS.glob("*.mjs"):
        shutil.copy(script, NODE_DIR / script.name)
    return NODE_DIR


def node(script, *args, timeout=180, env=None):
    """Runs one of tests/mcp/node's scripts with node; its CompletedProcess."""
    d = node_dir()
    return subprocess.run([shutil.which("node") or "node", str(d / script), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def sdk_calls(gw, *lanes):
    """One client of the official SDK's streamable HTTP transport (one MCP
    session) making the lanes' calls on gw's /mcp (lanes at once, each in
    order; tests/mcp/node/calls.mjs): per lane, per call {ms, isError,
    text, structured}."""
    done = node("calls.mjs", gw.url + "mcp", json.dumps(lanes), env=dict(os.environ, KENNEL_HTTP_TOKEN=gw.token))
    assert done.returncode == 0, f"stdout: {done.stdout}\nstderr: {done.stderr[-6000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def exec_call(code, **args):
    """A python_exec call for sdk_calls' lanes."""
    return {"name": "python_exec", "arguments": {"code": code, **args}}


def sdk_report(*args, env=None):
    """One run of tests/mcp/node/client.mjs (args after its PORT): every
    scenario, one report, plus whether code inside reached the listener on
    the host's loopback that it must not reach."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    done = node("client.mjs", port, *args, env=env)
    assert done.returncode == 0, f"stdout: {done.stdout}\nstderr: {done.stderr[-6000:]}"
    r = json.loads(done.stdout.strip().splitlines()[-1])
    try:
        listener.accept()
        r["listener_reached"] = True
    except BlockingIOError:
        r["listener_reached"] = False
    listener.close()
    return r
