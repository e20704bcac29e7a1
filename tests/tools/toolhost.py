"""Helpers for the tool-call tests: a real `kennel serve` daemon of this build
in a temporary state dir, a bare control client (jupyter_client's Session over
a pyzmq DEALER, no kennel module), and the tool declarations the tests use.

The module has a name of its own (not conftest) because every test folder runs
in its own pytest process and conftest modules must not collide."""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import zmq
import zmq.asyncio
from jupyter_client import BlockingKernelClient
from jupyter_client.session import Session

import hostprobe

HERE = pathlib.Path(__file__).resolve().parent
SRCDIR = pathlib.Path(os.environ.get("KENNEL_SRCDIR", HERE.parent.parent))
BUILDDIR = pathlib.Path(os.environ.get("KENNEL_BUILDDIR", SRCDIR / "build" / "check"))

# the host module from the source tree (what `make install` installs)
sys.path.insert(0, str(SRCDIR / "gateway" / "python"))
import kennel  # noqa: E402


def built(relpath):
    """A program of this build; a missing one is a build bug, never a skip."""
    path = BUILDDIR / relpath
    if not path.exists():
        raise FileNotFoundError(f"{path} not built: run make in {BUILDDIR}")
    return path


def schema(required=(), **properties):
    return {"type": "object", "properties": properties, "required": list(required)}


STRING = {"type": "string"}

# tools of the conversations in these tests (OpenAI, Anthropic and MCP
# spellings of the schema key, all accepted)
TOOLS = [
    {"name": "echo", "description": "Returns its value unchanged.",
     "parameters": schema(["value"], value={"description": "any JSON value"})},
    {"name": "get_weather", "description": "Current weather for a city.",
     "input_schema": schema(["city"], city={"type": "string", "description": "City name"},
                            unit={"type": "string", "enum": ["C", "F"]})},
    {"name": "add", "description": "Adds two integers.",
     "inputSchema": schema(["a", "b"], a={"type": "integer"}, b={"type": "integer"})},
    {"name": "fail", "description": "Always fails on the host.",
     "parameters": schema(["message"], message=STRING)},
    {"name": "web-search", "description": "Searches the web (a name that is no identifier).",
     "parameters": schema(["query"], query=STRING)},
    {"name": "lambda", "description": "A keyword as a tool name.", "parameters": schema()},
    {"name": "open", "description": "Clashes with a builtin: only tools.open.",
     "parameters": schema(["path"], path=STRING)},
    {"name": "wait", "description": "The host does not answer this one in time.",
     "parameters": schema()},
]


class HostFailure(Exception):
    pass


def handlers(**extra):
    """Host functions for TOOLS (extra ones replace them by name)."""
    def fail(message):
        raise HostFailure(message)

    def get_weather(city, unit="C"):
        return {"city": city, "temp": {"Oslo": -3.5}.get(city, 20.0), "unit": unit}

    table = {
        "echo": lambda value: value,
        "get_weather": get_weather,
        "add": lambda a, b: a + b,
        "fail": fail,
        "web-search": lambda query: [f"result for {query}"],
        "lambda": lambda: "keyword tool",
        "open": lambda path: f"opened {path} on the host",
    }
    table.update(extra)
    return table


class Control:
    """A signed client of the gateway's control socket, jupyter_client only."""

    def __init__(self, connection_file):
        info = json.loads(pathlib.Path(connection_file).read_text())
        self.session = Session(key=info["key"].encode(), signature_scheme=info["signature_scheme"])
        self.sock = kennel.client_context(info).socket(zmq.DEALER)
        self.sock.linger = 0
        self.sock.connect(kennel.endpoint(info, "control_port"))

    def request(self, msg_type, content, timeout=30):
        sent = self.session.send(self.sock, msg_type, content)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.sock.poll(100):
                _, frames = self.session.feed_identities(self.sock.recv_multipart())
                reply = self.session.deserialize(frames)
                if reply["parent_header"].get("msg_id") == sent["header"]["msg_id"]:
                    return reply["content"]
        raise TimeoutError(f"no reply to {msg_type} within {timeout} s")

    def close(self):
        self.sock.close(0)


class Daemon:
    """`kennel serve` in a fresh state dir (0711: the sandbox's uid must
    traverse to its workspace, so not under pytest's 0700 tmp dirs)."""

    def __init__(self, log_dir, config=None):
        self.state = pathlib.Path(tempfile.mkdtemp(prefix="kennel-tools-test-"))
        os.chmod(self.state, 0o711)
        self.conn_file = self.state / "gateway.json"
        self.log_file = pathlib.Path(log_dir) / "gateway.log"
        config_file = pathlib.Path(log_dir) / "config.json"
        config_file.write_text(json.dumps(hostprobe.gateway_config(config or {})))
        self.proc = subprocess.Popen(
            [str(built("gateway/kennel")), "serve", "--state-dir", str(self.state),
             "--connection-file", str(self.conn_file), "--config", str(config_file),
             "--log-file", str(self.log_file)])
        deadline = time.monotonic() + 20
        while not self.conn_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"kennel serve did not start; log: {self.log()}")
            time.sleep(0.02)
        self.control = Control(self.conn_file)

    def log(self):
        try:
            return self.log_file.read_text()
        except FileNotFoundError:
            return ""

    def open(self, conversation_id, **content):
        reply = self.control.request("conversation_open_request",
                                     dict(conversation_id=conversation_id, **content))
        assert reply["status"] == "ok", reply
        return reply

    def client(self, connection):
        kc = BlockingKernelClient(context=kennel.client_context(connection, zmq.asyncio.Context.instance()))
        kc.load_connection_info(connection)
        kc.start_channels()
        kc.wait_for_ready(timeout=30)
        return kc

    def stop(self):
        self.control.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(20)
        shutil.rmtree(self.state, ignore_errors=True)
        return rc
