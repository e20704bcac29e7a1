"""Output and input: publishing on iopub (JSON as the C side takes it), the
stdout/stderr streams, written through `_kennel.write_stream` so that they
keep their order with fd-level output, a forked child's output, the
payloads of a reply, and stdin (input, getpass, sys.stdin) over the stdin
channel."""

import json
import os

from .base import _flush_output, _lazy, _publish_raw, _state, _stdin_request, _write_stream


# ---- publishing ---------------------------------------------------------------

def _quiet():
    request = _state.request
    return request is not None and request.silent


def _publish(msg_type, content, metadata=None, buffers=None):
    """One iopub message, with binary buffers (bytes-like objects) as the
    frames after its content. The C side publishes queued stream text
    (Python's and fd 1/2's) before it, so order is kept."""
    if _state.forked:
        _publish_from_child(msg_type, content)
        return
    _publish_raw(msg_type, _dumps(content), None if metadata is None else _dumps(metadata),
                 list(buffers) if buffers else None)


def _dumps(obj):
    """JSON text the C side can always take: strict JSON (NaN and infinities
    become null) in valid UTF-8 (lone surrogates become "?")."""
    try:
        text = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(obj), ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _finite(obj):
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {key: _finite(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(value) for value in obj]
    return obj


def _publish_from_child(msg_type, content):
    """In a forked child (multiprocessing, os.fork) the kernel's sockets and
    threads are the parent's and must not be touched: what can be shown as
    text goes to the inherited fd 1, which the parent captures."""
    data = content.get("data") if isinstance(content, dict) else None
    if msg_type in ("display_data", "execute_result") and isinstance(data, dict):
        _write_fd(1, str(data.get("text/plain", "")) + "\n")
    elif msg_type == "error":
        _write_fd(2, "\n".join(content.get("traceback", [])) + "\n")


def _write_fd(fd, text):
    data = text.encode("utf-8", "replace")
    while data:
        try:
            written = os.write(fd, data)
        except InterruptedError:
            continue
        except OSError:
            return
        data = data[written:]


def _after_fork_in_child():
    _state.forked = True


class _Streams:
    """Python-level stdout/stderr. Text goes to the C side's one ordered
    queue (_kennel.write_stream), which also holds what fd 1 and 2 received:
    a buffer kept here could only be published after fd output that arrived
    meanwhile, so `print("a"); os.system("echo b")` would show b first. The
    C output thread publishes the queue within milliseconds; flush() (before
    any other output, input() and the reply) publishes it at once."""

    def __init__(self):
        self._child_pending = {}

    def write(self, name, text):
        if not text or _quiet():
            return
        if _state.forked:
            self._child_write(name, text)
            return
        _write_stream(name, text)

    def _child_write(self, name, text):
        """In a forked child: whole lines straight to the inherited fd (so
        lines of several children do not mix), the rest on flush."""
        pending = self._child_pending.get(name, "") + text
        cut = pending.rfind("\n") + 1
        if cut:
            _write_fd(1 if name == "stdout" else 2, pending[:cut])
        self._child_pending[name] = pending[cut:]

    def flush(self):
        if _state.forked:
            for name, pending in list(self._child_pending.items()):
                if pending:
                    _write_fd(1 if name == "stdout" else 2, pending)
            self._child_pending = {}
            return
        _flush_output()


_streams = _Streams()


class _BinaryOut:
    """sys.stdout.buffer: bytes decoded as UTF-8 into the text stream."""

    def __init__(self, text_stream):
        self._text = text_stream

    def write(self, data):
        self._text.write(bytes(data).decode("utf-8", "replace"))
        return len(data)

    def flush(self):
        self._text.flush()

    def writable(self):
        return True


def _make_out_stream_class():
    io = _lazy("io")

    class OutStream(io.TextIOBase):
        """sys.stdout / sys.stderr of the kernel: text goes to iopub."""

        def __init__(self, name, fd):
            super().__init__()
            self._name = name
            self._fd = fd
            self.buffer = _BinaryOut(self)

        name = property(lambda self: "<%s>" % self._name)
        encoding = "utf-8"
        errors = "replace"
        newlines = None
        line_buffering = False

        def write(self, text):
            if not isinstance(text, str):
                raise TypeError("write() argument must be str, not %s" % type(text).__name__)
            _streams.write(self._name, text)
            return len(text)

        def writelines(self, lines):
            for line in lines:
                self.write(line)

        def flush(self):
            _streams.flush()

        def writable(self):
            return True

        def readable(self):
            return False

        def isatty(self):
            return False

        def fileno(self):
            # the fd is captured too, so code that writes to it directly
            # (subprocess, faulthandler) still reaches the client
            return self._fd

        def close(self):
            pass

        @property
        def closed(self):
            return False

    return OutStream


# ---- stdin ---------------------------------------------------------------------

class StdinNotImplementedError(NotImplementedError):
    """input() was called by a request that does not allow stdin."""


# user-facing classes print without the private module's name
StdinNotImplementedError.__module__ = "builtins"


def _ask(prompt, password):
    request = _state.request
    if _state.forked:
        raise StdinNotImplementedError("input() is not available in a forked child process: "
                                       "ask in the kernel's own process")
    if request is None or not request.allow_stdin:
        raise StdinNotImplementedError(
            "input() is not available: the request running this code does not allow stdin "
            "(allow_stdin is false), so no one can answer; pass the value in the code instead, "
            "or send the execute_request with allow_stdin true and answer its input_request")
    _streams.flush()
    reply_type, content = _stdin_request(
        "input_request", _dumps({"prompt": str(prompt), "password": bool(password)}), -1.0)
    if reply_type != "input_reply":
        raise RuntimeError("expected input_reply on stdin, got %s" % reply_type)
    value = json.loads(content).get("value", "")
    if value == "\x04":
        raise EOFError("EOF when reading a line")
    return value


def _input(prompt=""):
    """Read a line from the client through the Jupyter stdin channel."""
    return _ask(prompt, False)


def _getpass(prompt="Password: ", stream=None):
    """Read a secret from the client through the Jupyter stdin channel."""
    return _ask(prompt, True)


class _StdinReader:
    """sys.stdin: each line is asked of the client (input_request)."""

    encoding = "utf-8"
    name = "<stdin>"
    closed = False

    def readline(self, size=-1):
        try:
            return _ask("", False) + "\n"
        except EOFError:
            return ""  # the client answered Ctrl-D

    def read(self, size=-1):
        return self.readline()

    def readlines(self):
        return [self.readline()]

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def isatty(self):
        return False

    def readable(self):
        return True

    def fileno(self):
        return 0

    def close(self):
        pass


# ---- a reply's payloads -------------------------------------------------------

def _write_payload(payload):
    """A payload of the running request's reply (page, set_next_input,
    ask_exit): one of each source, the latest in the place of the first, as
    ipykernel's PayloadManager keeps them."""
    request = _state.request
    if request is None:
        return
    for index, old in enumerate(request.payloads):
        if old.get("source") == payload["source"]:
            request.payloads[index] = payload
            return
    request.payloads.append(payload)
