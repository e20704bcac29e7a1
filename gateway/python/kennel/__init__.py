"""kennel: a small host library for the kennel gateway, over jupyter_client.

    import kennel
    gw = kennel.Gateway.from_connection_file("/var/lib/kennel/gateway.json")
    conv = gw.open("chat-42", tools=[weather_schema], handlers={"weather": weather})
    result = conv.run("x = weather(city='Oslo')\\nprint(x['temp'])")
    print(result.stdout, result.kennel)

Everything here can also be done with plain jupyter_client and the messages of
docs/PROTOCOL.md (sections 3 and 8): this module only saves a host the
bookkeeping.
"""
from __future__ import annotations

import json
import os
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional

import zmq
import zmq.asyncio
from jupyter_client import BlockingKernelClient
from jupyter_client.session import Session

from . import loopsafe

__all__ = ["Gateway", "Conversation", "Result", "GatewayError", "client_context", "endpoint"]

#: the largest chunk of file_get and file_put (docs/PROTOCOL.md §3, "Files")
FILE_CHUNK = 4 << 20

#: the CURVE fields of a connection info (`kennel serve --transport tcp`),
#: named as pyzmq's socket options
CURVE_FIELDS = ("curve_serverkey", "curve_publickey", "curve_secretkey")


def endpoint(info: Dict[str, Any], port_field: str) -> str:
    """The address of one socket of a connection info (port_field:
    "control_port", "shell_port", ...), as jupyter_client forms it."""
    if info.get("transport", "tcp") == "ipc":
        return f"ipc://{info['ip']}-{info[port_field]}"
    return f"tcp://{info['ip']}:{info[port_field]}"


def client_context(info: Dict[str, Any], base: Optional[zmq.Context] = None) -> zmq.Context:
    """A zmq context for the sockets of a connection info: a shadow of base
    (same class, same I/O thread), whose sockets are CURVE clients with the
    info's keys when it has them (a gateway serving `--transport tcp`).
    The default base is zmq.asyncio.Context.instance(), what jupyter_client's
    clients take: BlockingKernelClient(context=client_context(info)) (its
    7.x context trait refuses any other class); pass zmq.Context.instance()
    for plain blocking pyzmq sockets. An asyncio base is shadowed by a
    loopsafe.Context: a client may be used from more than one thread."""
    base = base if base is not None else zmq.asyncio.Context.instance()
    shadow = loopsafe.Context if isinstance(base, zmq.asyncio.Context) else type(base)
    ctx = shadow.shadow(base.underlying)
    if any(k in info for k in CURVE_FIELDS):
        if not zmq.has("curve"):
            raise GatewayError("NoCurve", "the gateway serves CurveZMQ and this libzmq has no CURVE support")
        for name in CURVE_FIELDS:
            setattr(ctx, name, info[name].encode())
    return ctx



class GatewayError(RuntimeError):
    """An error reply from the gateway's control socket."""

    def __init__(self, ename: str, evalue: str):
        super().__init__(f"{ename}: {evalue}")
        self.ename = ename
        self.evalue = evalue


@dataclass
class Result:
    """What one execution produced, in order, plus its reply."""

    reply: Dict[str, Any]
    outputs: List[Dict[str, Any]] = field(default_factory=list)
    #: one entry per tool_request served, in order: the request's call_id,
    #: name and arguments, plus what the host answered (status, and result or
    #: ename/evalue) and the handler's duration in seconds
    tool_calls: List[Dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.reply["content"]["status"]

    @property
    def kennel(self) -> Dict[str, Any]:
        """metadata.kennel of the execute_reply: what the execution cost."""
        return self.reply.get("metadata", {}).get("kennel", {})

    def _stream(self, name: str) -> str:
        return "".join(o["content"]["text"] for o in self.outputs
                       if o["msg_type"] == "stream" and o["content"]["name"] == name)

    @property
    def stdout(self) -> str:
        return self._stream("stdout")

    @property
    def stderr(self) -> str:
        return self._stream("stderr")

    @property
    def value(self) -> Optional[str]:
        """text/plain of the execute_result, if any."""
        for o in self.outputs:
            if o["msg_type"] == "execute_result":
                return o["content"]["data"].get("text/plain")
        return None

    @property
    def error(self) -> Optional[Dict[str, Any]]:
        for o in self.outputs:
            if o["msg_type"] == "error":
                return o["content"]
        return None


class Gateway:
    """A connection to a kennel daemon's control socket."""

    def __init__(self, info: Dict[str, Any], timeout: float = 30.0):
        self.info = info
        self.timeout = timeout
        self.session = Session(key=info["key"].encode(),
                               signature_scheme=info.get("signature_scheme", "hmac-sha256"))
        self.context = client_context(info, zmq.Context.instance())
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.linger = 0
        self.socket.connect(endpoint(info, "control_port"))

    @classmethod
    def from_connection_file(cls, path: str, **kw) -> "Gateway":
        with open(path) as f:
            return cls(json.load(f), **kw)

    def request(self, msg_type: str, content: Dict[str, Any]) -> Dict[str, Any]:
        """Sends one control request and returns the reply's content, raising
        GatewayError on status "error"."""
        return self.request_buffers(msg_type, content)[0]

    def request_buffers(self, msg_type: str, content: Dict[str, Any],
                        buffers: Iterable[bytes] = ()) -> "tuple[Dict[str, Any], List[bytes]]":
        """request() with raw frames after the content, both ways: the
        reply's content and its raw frames (file_get with "encoding":
        "buffer", file_put of a chunk)."""
        sent = self.session.send(self.socket, msg_type, content, buffers=list(buffers))
        deadline_ms = int(self.timeout * 1000)
        while True:
            if not self.socket.poll(deadline_ms):
                raise TimeoutError(f"no reply to {msg_type} within {self.timeout} s")
            _, reply = self.session.recv(self.socket, mode=0)
            if reply["parent_header"].get("msg_id") == sent["header"]["msg_id"]:
                break
        content = reply["content"]
        if content.get("status") == "error":
            raise GatewayError(content.get("ename", "Error"), content.get("evalue", ""))
        return content, [bytes(b) for b in reply.get("buffers", [])]

    def file_chunk(self) -> int:
        """The bytes of one file chunk: 4 MiB (the gateway's largest), less
        when the gateway's max_message_bytes would not hold it."""
        if getattr(self, "_file_chunk", None) is None:
            limit = self.gateway_info()["limits"]["max_message_bytes"]
            self._file_chunk = max(4096, min(FILE_CHUNK, limit - 65536))
        return self._file_chunk

    def gateway_info(self) -> Dict[str, Any]:
        return self.request("gateway_info_request", {})

    def list(self) -> List[Dict[str, Any]]:
        return self.request("conversation_list_request", {})["conversations"]

    def open(self, conversation_id: str, tools: Iterable[Dict[str, Any]] = (),
             handlers: Optional[Dict[str, Callable[..., Any]]] = None,
             policy: Optional[Dict[str, Any]] = None, kernel: str = "python") -> "Conversation":
        """Opens (or reattaches to) a conversation. handlers maps each tool's
        name to the host function that serves it."""
        content = {"conversation_id": conversation_id, "kernel": kernel,
                   "tools": list(tools), "policy": policy or {}}
        reply = self.request("conversation_open_request", content)
        conv = Conversation(self, reply, handlers or {})
        conv.declare_tools(content["tools"])
        return conv

    def close(self, conversation_id: str) -> None:
        self.request("conversation_close_request", {"conversation_id": conversation_id})

    def restart(self, conversation_id: str) -> None:
        self.request("conversation_restart_request", {"conversation_id": conversation_id})

    def shutdown(self) -> None:
        self.socket.close(0)


_SCHEMA_KEYS = ("parameters", "input_schema", "inputSchema")


def _declared_schemas(tools: Iterable[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """name -> parameters schema of each declaration (OpenAI's wrapped form
    and the Anthropic/MCP schema keys as the gateway reads them)."""
    schemas = {}
    for tool in tools:
        if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
            tool = tool["function"]
        schema = next((tool[k] for k in _SCHEMA_KEYS if tool.get(k) is not None), None)
        schemas[tool["name"]] = schema if isinstance(schema, dict) else {}
    return schemas


def _argument_problem(schema: Dict[str, Any], arguments: Any) -> Optional[str]:
    """Why arguments cannot go to the handler under its declared schema's top
    level, or None. The gateway already checked the whole schema; this is
    the host's own line: no undeclared keyword reaches a handler's defaults."""
    if not isinstance(arguments, dict):
        return "arguments must be an object"
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    if not (extra is True or isinstance(extra, dict)):
        undeclared = sorted(set(arguments) - set(properties))
        if undeclared:
            return (f"arguments.{undeclared[0]} is not a declared property "
                    "(additionalProperties is not allowed)")
    missing = sorted(set(schema.get("required") or ()) - set(arguments))
    if missing:
        return f"arguments.{missing[0]} is required and missing"
    return None


class Conversation:
    """One conversation: a persistent kernel behind standard Jupyter sockets."""

    #: name -> declared parameters schema (declare_tools); None: not known
    _schemas: Optional[Dict[str, Dict[str, Any]]] = None

    def __init__(self, gateway: Gateway, open_reply: Dict[str, Any],
                 handlers: Dict[str, Callable[..., Any]]):
        self.gateway = gateway
        self.id = open_reply["conversation_id"]
        self.created = open_reply.get("created", True)
        self.workspace = open_reply.get("workspace")
        self.connection = open_reply["connection"]
        self.handlers = handlers
        self.client = BlockingKernelClient(context=client_context(self.connection))
        self.client.load_connection_info(self.connection)
        self.client.start_channels()

    def declare_tools(self, tools: Iterable[Dict[str, Any]]) -> None:
        """The declarations the conversation was opened with (Gateway.open
        calls this): a call is then served only with the declared
        parameters, and a call to a tool not declared is refused."""
        self._schemas = _declared_schemas(tools)

    def run(self, code: str, timeout: Optional[float] = 60, allow_stdin: bool = True,
            stop_on_error: bool = True) -> Result:
        """Executes code, serving tool calls with the handlers, and returns
        every output with the reply."""
        outputs: List[Dict[str, Any]] = []
        calls: List[Dict[str, Any]] = []

        def on_output(msg):
            if msg["msg_type"] not in ("status", "execute_input"):
                outputs.append({"msg_type": msg["msg_type"], "content": msg["content"]})

        def on_stdin(msg):
            if msg["msg_type"] == "tool_request":
                calls.append(self._answer_tool(msg))
            elif msg["msg_type"] == "input_request":
                self.client.input("")

        reply = self.client.execute_interactive(code, timeout=timeout, allow_stdin=allow_stdin,
                                                stop_on_error=stop_on_error,
                                                output_hook=on_output, stdin_hook=on_stdin)
        return Result(reply=reply, outputs=outputs, tool_calls=calls)

    def _refusal(self, name: Any, arguments: Any,
                 handler: Optional[Callable[..., Any]]) -> Optional[tuple]:
        """(ename, evalue) when the handler must not run for this call."""
        if handler is None:
            return "UnknownTool", f"the host has no handler for tool {name!r}"
        if self._schemas is None:
            return None
        if name not in self._schemas:
            return "UnknownTool", f"tool {name!r} was not declared for this conversation"
        problem = _argument_problem(self._schemas[name], arguments)
        return None if problem is None else ("InvalidToolArguments", f"tool {name!r}: {problem}")

    def _answer_tool(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        """Runs the handler of one tool_request and sends its tool_reply
        (parent: the request, so the kernel knows it is this call's answer).
        Returns the call as recorded in Result.tool_calls."""
        request = msg["content"]
        name = request.get("name")
        arguments = request.get("arguments") or {}
        handler = self.handlers.get(name)
        reply: Dict[str, Any] = {"call_id": request.get("call_id")}
        started = time.monotonic()
        refusal = self._refusal(name, arguments, handler)
        if refusal is not None:
            reply.update(status="error", ename=refusal[0], evalue=refusal[1])
        else:
            try:
                result = handler(**arguments)
                # a result the kernel cannot receive is the host's bug: say so
                json.dumps(result, allow_nan=False)
                reply.update(status="ok", result=result)
            except Exception as exc:  # the host's tool failed: the kernel gets ToolError
                reply.update(status="error", ename=type(exc).__name__, evalue=str(exc))
                if os.environ.get("KENNEL_DEBUG"):
                    traceback.print_exc()
        seconds = time.monotonic() - started
        out = self.client.session.msg("tool_reply", reply, parent=msg["header"])
        self.client.stdin_channel.send(out)
        call = {"call_id": request.get("call_id"), "name": name, "arguments": arguments,
                "seconds": seconds}
        call.update((k, v) for k, v in reply.items() if k != "call_id")
        return call

    def _file(self, kind: str, remote: str, buffers: Iterable[bytes] = (), **content):
        content.update(conversation_id=self.id, path=remote)
        return self.gateway.request_buffers(f"file_{kind}_request", content, buffers)

    def upload(self, local: str, remote: str) -> int:
        """Copies the host file local to remote (relative to /workspace) in
        chunks, never whole in memory; returns the bytes written. A full
        workspace raises GatewayError WorkspaceFull."""
        chunk = self.gateway.file_chunk()
        offset = 0
        with open(local, "rb") as f:
            while True:
                data = f.read(chunk)
                if data or offset == 0:
                    self._file("put", remote, [data], offset=offset)
                offset += len(data)
                if len(data) < chunk:
                    return offset

    def download(self, remote: str, local: str) -> int:
        """Copies the workspace file remote to the host file local in
        chunks; returns the bytes read."""
        chunk = self.gateway.file_chunk()
        offset = 0
        with open(local, "wb") as f:
            while True:
                reply, frames = self._file("get", remote, offset=offset, length=chunk, encoding="buffer")
                f.write(frames[0])
                offset += reply["length"]
                if reply["eof"] or not reply["length"]:
                    return offset

    def files(self, path: str = "") -> List[Dict[str, Any]]:
        """The regular files and directories of a workspace directory: models
        with name, path, type ("file" or "directory"), size, last_modified."""
        return self._file("list", path)[0]["entries"]

    def rename(self, remote: str, new_remote: str) -> None:
        """Renames a workspace file or directory; an existing new_remote is
        never replaced (GatewayError FileExists)."""
        self._file("rename", remote, new_path=new_remote)

    def copy(self, remote: str, new_remote: str) -> None:
        """Copies a workspace file (at most 4 MiB) to a new name, in the
        workspace (GatewayError FileExists when the name is taken)."""
        self._file("copy", remote, new_path=new_remote)

    def interrupt(self) -> None:
        self.client.session.send(self.client.control_channel.socket, "interrupt_request", {})

    def detach(self) -> None:
        """Stops this host's channels; the conversation stays open."""
        self.client.stop_channels()

    def close(self) -> None:
        self.detach()
        self.gateway.close(self.id)
