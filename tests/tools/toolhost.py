"""Helpers for the tool-call tests: a real `kennel serve` daemon of this build
in a temporary state dir with its control client (tests/kennel_testlib.py),
and the tool declarations and host functions the tests use.

The module has a name of its own (not conftest) because every test folder runs
in its own pytest process and conftest modules must not collide."""
import json
import pathlib
import shutil
import signal

import hostprobe
from kennel_testlib import Control, kernel_client, serve, stdout_of, traversable_dir


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


def interactive(kc, code, stdin_hook, timeout=30, **kw):
    """execute_interactive, whose stdin_hook answers tool_requests:
    (reply, stdout text, first error content or None)."""
    outputs = []
    reply = kc.execute_interactive(code, output_hook=outputs.append, stdin_hook=stdin_hook,
                                   timeout=timeout, **kw)
    errors = [m["content"] for m in outputs if m["msg_type"] == "error"]
    return reply, stdout_of(outputs), (errors[0] if errors else None)


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


class Daemon:
    """`kennel serve` in a fresh state dir (0711: the sandbox's uid must
    traverse to its workspace, so not under pytest's 0700 tmp dirs)."""

    def __init__(self, log_dir, config=None):
        self.state = traversable_dir("kennel-tools-test-")
        self.conn_file = self.state / "gateway.json"
        self.log_file = pathlib.Path(log_dir) / "gateway.log"
        config_file = pathlib.Path(log_dir) / "config.json"
        config_file.write_text(json.dumps(hostprobe.gateway_config(config or {})))
        self.proc = serve(self.state, config_file, self.log_file, self.conn_file)
        self.control = Control(self.conn_file)

    def log(self):
        try:
            return self.log_file.read_text()
        except FileNotFoundError:
            return ""

    def open(self, conversation_id, **content):
        reply = self.control.open(conversation_id, **content)
        assert reply["status"] == "ok", reply
        return reply

    def client(self, connection):
        return kernel_client(connection)

    def stop(self):
        self.control.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(20)
        shutil.rmtree(self.state, ignore_errors=True)
        return rc
