"""kennel's Python kernel: what executing code means (see README.md here).

The C side owns sockets, keys, signing, threads and the message loop. It calls
configure(settings_json) once, then dispatch(msg_type, content_json,
header_json, buffers) for every shell request, and gives us the `_kennel` module
(publish, stdin_request, write_stream, flush_output). This file is compiled
into the binary and runs as a private module that is not in sys.modules.

User code runs in one persistent namespace (the `__main__` module). Its
`__builtins__` is a private mapping: the builtins of the chosen profile plus
the hidden helpers (display, get_ipython, `_`), which therefore resolve by
name but are not in globals(), dir() or vars()."""

import _thread
import builtins
import json
import os
import sys

import _kennel

_publish_raw = _kennel.publish
_stdin_request = _kennel.stdin_request
_write_stream = _kennel.write_stream
_flush_output = _kennel.flush_output
sys.modules.pop("_kennel", None)
del _kennel

# Frames whose code comes from this file are kennel's machinery: tracebacks
# shown to the user leave them out.
_OWN_FILE = (lambda: 0).__code__.co_filename

_VERSION = "0.1.0"
_SESSION = 1                      # history "session": one per kernel process
_TOOL_DEFAULT_TIMEOUT = 60.0       # s, when the settings name none
# the gateway answers a call its host leaves unanswered after the tool
# timeout; this backstop only covers a gateway that never does
_TOOL_BACKSTOP_SECONDS = 5.0

# Imports denied to user code by default (agent profile): foreign-function
# interfaces, which would let code poke at the interpreter's memory, and the
# kernel's own C module.
_DEFAULT_DENY = ("ctypes", "_ctypes", "cffi", "_cffi_backend", "_kennel")
_ALWAYS_DENY = ("_kennel",)
_PROFILES = ("agent", "notebook", "none")


class _State:
    """Everything the kernel keeps between requests."""

    def __init__(self):
        self.profile = "agent"
        self.deny = frozenset(_DEFAULT_DENY)
        self.policy_deny = frozenset()  # what the settings' imports.deny adds
        self.allow = None            # a frozenset in allow-list mode
        self.count = 1               # the next store_history execution's number
        self.cells = 0               # every execution, for unique file names
        self.future_flags = 0        # __future__ imports persist across cells
        self.history = []            # (session, line, input, output text or None)
        self.request = None          # the _Request being handled
        self.parent = None           # the last shell request handled (get_parent() when idle)
        self.running_user_code = False
        self.interrupt_pending = False  # SIGINT during an execute_request before its code ran
        self.main = None             # the user's __main__ module
        self.ns = None               # its namespace
        self.builtins = None         # the private builtins mapping
        self.helpers = {}            # hidden helper name -> object
        self.loop = None             # asyncio loop for top-level await
        self.settings = {}
        self.forked = False          # in a child made by os.fork()
        self.tool_declarations = []  # the host's tools as declared
        self.tool_specs = {}         # name -> _ToolSpec
        self.tools = {}              # name -> function
        self.tool_bare = frozenset()  # the tools' names in the helper namespace
        self.tool_timeout = _TOOL_DEFAULT_TIMEOUT
        self.shell_escapes = False
        self.colors = "NoColor"      # traceback colours asked for (the shell's once built)
        self.automagic = False       # likewise
        self.inputs = None           # _HistoryStandIn until the shell exists
        self.shell_building = False
        self.main_thread = None      # the thread the C loop calls us on
        self.mpl_activated = False   # kennel's matplotlib backend made its first figure
        self.figures_pending = False  # ... and one since the last end of a cell (interactive)


_state = _State()


class _Request:
    """The shell request being handled, as user-facing code needs it."""

    def __init__(self, msg_type, content, header):
        self.msg_type = msg_type
        self.content = content
        self.header = header
        self.silent = bool(content.get("silent", False))
        self.allow_stdin = bool(content.get("allow_stdin", False))
        self.payloads = []
        self.shown_figures = set()


def _lazy(name):
    """Imports a module when first needed: kernel start stays fast."""
    module = sys.modules.get(name)
    if module is None:
        __import__(name)
        module = sys.modules[name]
    return module


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


# ---- host tools ----------------------------------------------------------------
#
# Each tool the host declares becomes a function whose call is sent to the host
# as a tool_request on the stdin channel (through the gateway, which checks and
# relays it) and returns the host's JSON result. The functions are hidden
# helpers (private builtins mapping) and are also reachable as tools.NAME /
# tools["NAME"].

_TOOL_SCHEMA_KEYS = ("parameters", "input_schema", "inputSchema")
_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool,
               "array": list, "object": dict, "null": type(None)}
# names the kernel's own helpers use: a tool with one of these names (or a
# Python builtin's) is reachable only as tools.NAME / tools["NAME"]
_TOOL_RESERVED = ("display", "get_ipython", "tools", "ToolError", "_", "__", "___")


class ToolError(Exception):
    """A host tool call failed: `ename` and `evalue` are the error the host
    reported (its exception's type name and message), or kennel's reason when
    no host could answer (ToolUnavailable, ToolTimeout, BadToolReply,
    UnknownTool)."""

    def __init__(self, ename="ToolError", evalue=""):
        super().__init__(ename, evalue)
        self.ename = str(ename)
        self.evalue = str(evalue)

    def __str__(self):
        return "%s: %s" % (self.ename, self.evalue) if self.evalue else self.ename


ToolError.__module__ = "builtins"


class _ToolSpec:
    """One declared tool, checked: its parameters split into the ones that can
    be Python parameters (named) and the ones only **kwargs can carry."""

    def __init__(self, name, description, schema, named, required, var_kw):
        self.name = name
        self.description = description
        self.schema = schema
        self.named = named          # [(param name, required, property schema)]
        self.required = required    # every required property name
        self.var_kw = var_kw        # accepts **kwargs


# The declarations' rule is docs/PROTOCOL.md section 8, which the gateway
# applies first (gateway/gw_tools.c, gw_schema.c) with the same messages: a
# kennel_configure_request a client sends reaches the kernel unchecked. Both
# run every case of tests/fixtures/tool_declarations.json.
_TOOL_NAME_MAX = 256              # characters
_SCHEMA_MAX_DEPTH = 32
_SCHEMA_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
# keywords whose value is no schema: annotations (not checked), enum, const
_SCHEMA_VALUES = ("title", "description", "default", "examples", "format", "$schema",
                  "$comment", "deprecated", "readOnly", "writeOnly", "enum", "const")
_SCHEMA_COUNTS = ("minItems", "maxItems", "minLength", "maxLength")
_SCHEMA_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_SCHEMA_COMBINATORS = ("anyOf", "oneOf", "allOf")
_SCHEMA_SUPPORTED = ("type, enum, const, properties, required, additionalProperties, items, "
                     "minItems, maxItems, minLength, maxLength, minimum, maximum, exclusiveMinimum, "
                     "exclusiveMaximum, anyOf, oneOf, allOf, and annotations")
_PATH_MAX_BYTES = 256             # a schema path in a message, as the gateway cuts it
_KEY_SHOWN_BYTES = 100            # a key inside a message


def _tool_fail(index, name, problem):
    label = "tool %d" % index if name is None else "tool '%s'" % name
    raise ValueError("%s: %s" % (label, problem))


def _utf8_cut(text, max_bytes):
    """text cut to at most max_bytes of UTF-8 between characters."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


def _schema_path(where, key):
    """where + ".key" or "[index]", cut with "..." when too long."""
    path = ("%s[%d]" % (where, key) if isinstance(key, int)
            else "%s.%s" % (where, _utf8_cut(key, _KEY_SHOWN_BYTES)))
    if len(path.encode("utf-8")) >= _PATH_MAX_BYTES:
        path = _utf8_cut(path, _PATH_MAX_BYTES - 4) + "..."
    return path


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _schemas_problem(schemas, where, depth):
    """The first problem of a list of schemas (anyOf, ...), or None."""
    for index, schema in enumerate(schemas):
        problem = _schema_problem(schema, _schema_path(where, index), depth + 1)
        if problem:
            return problem
    return None


def _properties_problem(properties, where, depth):
    if not isinstance(properties, dict):
        return "%s.properties must be an object" % where
    at = _schema_path(where, "properties")
    for prop, schema in properties.items():
        if not isinstance(schema, (dict, bool)):
            return "%s.properties['%s'] must be a JSON Schema" % (where, _utf8_cut(prop, _KEY_SHOWN_BYTES))
        problem = _schema_problem(schema, _schema_path(at, prop), depth + 1)
        if problem:
            return problem
    return None


def _keyword_problem(key, value, where, depth):
    """Why one keyword of an object schema is outside the subset, or None."""
    if key in _SCHEMA_VALUES:
        return "%s.enum must be a list" % where if key == "enum" and not isinstance(value, list) else None
    if key == "type":
        names = value if isinstance(value, list) and value else [value]
        if all(isinstance(n, str) and n in _SCHEMA_TYPES for n in names):
            return None
        return ("%s.type must be one of string, number, integer, boolean, object, array, null, "
                "or a list of them" % where)
    if key == "properties":
        return _properties_problem(value, where, depth)
    if key == "required":
        if isinstance(value, list) and all(isinstance(n, str) for n in value):
            return None
        return "%s.required must be a list of property names" % where
    sub = _schema_path(where, key)
    if key in ("additionalProperties", "items"):
        if isinstance(value, list):
            return "%s: a list of schemas (tuple form) is not supported" % sub
        return _schema_problem(value, sub, depth + 1)
    if key in _SCHEMA_COUNTS:
        return None if _is_count(value) else "%s must be a non-negative integer" % sub
    if key in _SCHEMA_BOUNDS:
        return None if _is_number(value) else "%s must be a number" % sub
    if key in _SCHEMA_COMBINATORS:
        if not isinstance(value, list) or not value:
            return "%s.%s must be a non-empty list of JSON Schemas" % (where, key)
        return _schemas_problem(value, sub, depth)
    return ("%s: keyword '%s' is not supported by the gateway's argument check (supported: %s)"
            % (where, _utf8_cut(key, _KEY_SHOWN_BYTES), _SCHEMA_SUPPORTED))


def _schema_problem(schema, where, depth=0):
    """Why a schema is outside the subset the gateway checks calls against
    (gateway/gw_schema.c), or None."""
    if isinstance(schema, bool):
        return None
    if not isinstance(schema, dict):
        return "%s must be a JSON Schema (an object or a boolean)" % where
    if depth > _SCHEMA_MAX_DEPTH:
        return "%s: schemas nested deeper than %d levels are not supported" % (where, _SCHEMA_MAX_DEPTH)
    for key, value in schema.items():
        problem = _keyword_problem(key, value, where, depth)
        if problem:
            return problem
    return None


def _holds_nul(value):
    """Whether a string or a key anywhere in value holds NUL (walked without
    recursion: the value may be as deep as the JSON decoder allows)."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if "\0" in value:
                return True
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict):
            if any("\0" in key for key in value):
                return True
            stack.extend(value.values())
    return False


def _tool_schema(declaration):
    """The schema in effect: parameters, else the Anthropic and MCP aliases."""
    for key in _TOOL_SCHEMA_KEYS:
        if declaration.get(key) is not None:
            return declaration[key]
    return None


def _wrapped(declaration):
    """The declaration inside OpenAI's {"type": "function", "function":
    {...}}, or None."""
    if (isinstance(declaration, dict) and declaration.get("type") == "function"
            and isinstance(declaration.get("function"), dict)):
        return declaration["function"]
    return None


def _checked_declaration(index, declaration):
    """(name, description, schema) of one declaration, unwrapped from
    OpenAI's {"type": "function", "function": {...}} once (the gateway passes
    on the unwrapped form: one wrapped twice would name another tool here);
    ValueError naming the tool otherwise."""
    inner = _wrapped(declaration)
    if inner is not None and _wrapped(inner) is not None:
        _tool_fail(index, None, "a wrapped tool {\"type\": \"function\", \"function\": {...}} "
                   "must not wrap another")
    if inner is not None:
        declaration = inner
    if not isinstance(declaration, dict):
        _tool_fail(index, None, "a tool must be an object {name, description, parameters}")
    name = declaration.get("name")
    if (not isinstance(name, str) or not name or "\0" in name
            or len(name) > _TOOL_NAME_MAX):
        _tool_fail(index, None, "name must be a non-empty string of at most %d characters, "
                   "without NUL" % _TOOL_NAME_MAX)
    if _holds_nul(declaration):
        _tool_fail(index, name, "a string or a key holds a NUL byte")
    description = declaration.get("description")
    if description is not None and not isinstance(description, str):
        _tool_fail(index, name, "description must be a string")
    schema = _tool_schema(declaration)
    if schema is not None:
        if not isinstance(schema, dict):
            _tool_fail(index, name, "parameters must be a JSON Schema object")
        if schema.get("type", "object") != "object":
            _tool_fail(index, name, "parameters must be a JSON Schema of type \"object\"")
        problem = _schema_problem(schema, "parameters")
        if problem:
            _tool_fail(index, name, problem)
    return name, description or "", schema or {"type": "object", "properties": {}}


def _parse_tool(index, declaration):
    """A _ToolSpec from one declaration ({name, description, parameters}, or
    the aliases input_schema/inputSchema; other keys are ignored); ValueError
    naming the tool otherwise."""
    name, description, schema = _checked_declaration(index, declaration)
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    keyword = _lazy("keyword")
    usable = [p for p in properties if p.isidentifier() and not keyword.iskeyword(p)]
    named = [(p, True, properties[p]) for p in usable if p in required]
    named += [(p, False, properties[p]) for p in usable if p not in required]
    extra = schema.get("additionalProperties")
    var_kw = (len(usable) < len(properties) or any(r not in usable for r in required)
              or extra is True or isinstance(extra, dict))
    return _ToolSpec(name, description, schema, named, frozenset(required), var_kw)


def _parse_tools(declarations, timeout):
    """(specs by name in declaration order, timeout) or ValueError."""
    if not isinstance(declarations, list):
        raise ValueError("tools must be a list of {name, description, parameters}")
    specs = {}
    for index, declaration in enumerate(declarations):
        spec = _parse_tool(index, declaration)
        if spec.name in specs:
            _tool_fail(index, spec.name, "declared twice")
        specs[spec.name] = spec
    if timeout is None:
        timeout = _TOOL_DEFAULT_TIMEOUT
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError("tool_timeout must be a positive number of seconds")
    return specs, float(timeout)


def _json_annotation(prop_schema):
    """A Python type for a property's JSON Schema "type" (or None)."""
    if not isinstance(prop_schema, dict):
        return None
    kinds = prop_schema.get("type")
    if isinstance(kinds, str):
        kinds = [kinds]
    if not isinstance(kinds, list) or not kinds:
        return None
    types = [_JSON_TYPES.get(kind) for kind in kinds]
    if None in types:
        return None
    annotation = types[0]
    for extra in types[1:]:
        annotation = annotation | extra
    return annotation


_JSON_TYPE_NAMES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
                    "array": "list", "object": "dict", "null": "None"}


def _json_type_text(prop_schema):
    """A property's JSON type in Python's words, for the docstring."""
    if not isinstance(prop_schema, dict):
        return "any"
    kinds = prop_schema.get("type")
    if isinstance(kinds, list):
        return " or ".join(_JSON_TYPE_NAMES.get(kind, str(kind)) for kind in kinds)
    items = prop_schema.get("items")
    if kinds == "array" and isinstance(items, dict) and isinstance(items.get("type"), str):
        return "list of %s" % _JSON_TYPE_NAMES.get(items["type"], items["type"])
    return _JSON_TYPE_NAMES.get(kinds, str(kinds)) if kinds else "any"


def _tool_doc(spec):
    """numpydoc-like text: the description, each parameter, what a call does."""
    lines = [spec.description.strip() or "(no description)", ""]
    properties = spec.schema.get("properties", {})
    if properties or spec.required:
        lines += ["Parameters", "----------"]
        order = [p for p, _, _ in spec.named] + [p for p in properties
                                                 if p not in {n for n, _, _ in spec.named}]
        order += [p for p in sorted(spec.required) if p not in order]
        for prop in order:
            prop_schema = properties.get(prop, {})
            label = prop if prop in {n for n, _, _ in spec.named} else "**{%r: ...}" % prop
            kind = _json_type_text(prop_schema)
            lines.append("%s : %s%s" % (label, kind, "" if prop in spec.required else ", optional"))
            if isinstance(prop_schema, dict):
                if isinstance(prop_schema.get("description"), str):
                    lines.append("    " + prop_schema["description"].strip().replace("\n", "\n    "))
                if isinstance(prop_schema.get("enum"), list):
                    lines.append("    One of: %s." % ", ".join(json.dumps(v) for v in prop_schema["enum"]))
                if "default" in prop_schema:
                    lines.append("    Default (on the host): %s." % json.dumps(prop_schema["default"]))
        lines.append("")
    lines.append("A host tool: the call is sent to the host, which runs it. Returns its JSON")
    lines.append("result as Python objects; raises ToolError(ename, evalue) when the host")
    lines.append("reports an error. Optional arguments left as None are not sent.")
    return "\n".join(lines)


def _tool_function_name(name):
    keyword = _lazy("keyword")
    if name.isidentifier() and not keyword.iskeyword(name):
        return name
    re = _lazy("re")
    safe = re.sub(r"\W", "_", name)
    if not safe.isidentifier() or keyword.iskeyword(safe):
        safe = "tool_" + safe
    return safe


def _make_tool_function(spec):
    """A real Python function for the tool: a signature built from the schema
    (required parameters first, optional ones default None; positional or
    keyword), its docstring, and a body that sends the call."""
    taken = {p for p, _, _ in spec.named}
    call_name = "_call"
    while call_name in taken:
        call_name = "_" + call_name
    kw_name = "kwargs"
    while kw_name in taken:
        kw_name += "_"
    params = [p if required else p + "=None" for p, required, _ in spec.named]
    if spec.var_kw:
        params.append("**" + kw_name)
    fname = _tool_function_name(spec.name)
    source = ("def _factory(%s):\n"
              "    def %s(%s):\n"
              "        return %s({%s}, %s)\n"
              "    return %s\n") % (
        call_name, fname, ", ".join(params), call_name,
        ", ".join("%r: %s" % (p, p) for p, _, _ in spec.named),
        kw_name if spec.var_kw else "None", fname)
    namespace = {}
    # compiled as this file, so tracebacks leave the tool's frame out
    exec(compile(source, _OWN_FILE, "exec", dont_inherit=True), namespace)

    def call(arguments, extra):
        return _call_tool(spec, arguments, extra)

    function = namespace["_factory"](call)
    function.__doc__ = _tool_doc(spec)
    function.__module__ = "tools"
    annotations = {}
    for prop, required, prop_schema in spec.named:
        annotation = _json_annotation(prop_schema)
        if annotation is not None:
            annotations[prop] = annotation if required or annotation is type(None) \
                else annotation | None
    function.__annotations__ = annotations
    return function


def _tool_arguments(spec, arguments, extra):
    """The arguments object of a call: None-valued optional arguments left
    out; a missing required property only **kwargs can carry is a TypeError."""
    merged = {key: value for key, value in arguments.items()
              if value is not None or key in spec.required}
    for key, value in (extra or {}).items():
        if value is not None or key in spec.required:
            merged[key] = value
    missing = [key for key in spec.required if key not in merged]
    if missing:
        raise TypeError("%s() missing required argument(s): %s (pass %s)"
                        % (spec.name, ", ".join(repr(m) for m in sorted(missing)),
                           ", ".join("**{%r: ...}" % m for m in sorted(missing))))
    return merged


def _tool_unavailable():
    """Why no host can answer a tool call now, or None."""
    request = _state.request
    if _state.forked:
        return "host tools cannot be called from a forked child process"
    if request is None or request.msg_type != "execute_request":
        return "host tools can only be called while an execution runs"
    if not request.allow_stdin:
        return ("no client is serving stdin for this execution (allow_stdin is false), so no "
                "host can answer tool calls; send the execute_request with allow_stdin true and "
                "answer its tool_request (the kennel host module's execute does)")
    return None


def _call_tool(spec, arguments, extra):
    name = spec.name
    if _state.tool_specs.get(name) is not spec:
        raise ToolError("UnknownTool", "tool %r is no longer declared for this conversation" % name)
    arguments = _tool_arguments(spec, arguments, extra)
    try:
        arguments_json = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
        arguments_json.encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise TypeError("the arguments of tool %r must be JSON (dict, list, str, int, float, "
                        "bool, None): %s" % (name, exc)) from None
    reason = _tool_unavailable()
    if reason is not None:
        raise ToolError("ToolUnavailable", reason)
    call_id = os.urandom(12).hex()
    content = '{"call_id": "%s", "name": %s, "arguments": %s}' % (
        call_id, json.dumps(name, ensure_ascii=False), arguments_json)
    timeout = _state.tool_timeout + _TOOL_BACKSTOP_SECONDS
    # one call at a time on the stdin socket, also from user threads
    with _tool_lock():
        _streams.flush()
        try:
            reply_type, reply_json = _stdin_request("tool_request", content, timeout)
        except TimeoutError:
            raise ToolError("ToolTimeout", "no reply for tool %r within %g s"
                            % (name, _state.tool_timeout)) from None
        except (RuntimeError, OSError, ValueError) as exc:
            raise ToolError("ToolUnavailable", "tool %r: %s" % (name, exc)) from None
    return _tool_result(name, call_id, reply_type, reply_json)


def _tool_result(name, call_id, reply_type, reply_json):
    if reply_type != "tool_reply":
        raise ToolError("BadToolReply", "expected tool_reply for tool %r, got %s"
                        % (name, reply_type))
    reply = json.loads(reply_json)
    if reply.get("call_id") != call_id:
        raise ToolError("BadToolReply", "the reply for tool %r names call_id %r, not this call's"
                        % (name, reply.get("call_id")))
    status = reply.get("status")
    if status == "ok":
        return reply.get("result")
    if status == "error":
        raise ToolError(str(reply.get("ename") or "ToolError"), str(reply.get("evalue") or ""))
    raise ToolError("BadToolReply", "tool %r: reply status %r is neither \"ok\" nor \"error\""
                    % (name, status))


_tool_lock_instance = None


def _tool_lock():
    global _tool_lock_instance
    if _tool_lock_instance is None:
        _tool_lock_instance = _lazy("threading").Lock()
    return _tool_lock_instance


class Tools:
    """The host's tools for this conversation: tools.NAME or tools["NAME"]
    (names that are not Python identifiers only the latter), `NAME in tools`,
    iteration over the names; print(tools) lists them with their signatures.
    help(tools.NAME) shows one."""

    __slots__ = ()

    def __getitem__(self, name):
        try:
            return _state.tools[name]
        except (KeyError, TypeError):
            raise KeyError("no host tool %r (declared: %s)" % (name, self._names())) from None

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return _state.tools[name]
        except KeyError:
            raise AttributeError("no host tool %r (declared: %s)" % (name, self._names())) from None

    def __contains__(self, name):
        return name in _state.tools

    def __iter__(self):
        return iter(list(_state.tools))

    def __len__(self):
        return len(_state.tools)

    def __dir__(self):
        keyword = _lazy("keyword")
        return sorted(n for n in _state.tools if n.isidentifier() and not keyword.iskeyword(n))

    def keys(self):
        return list(_state.tools)

    def values(self):
        return list(_state.tools.values())

    def items(self):
        return list(_state.tools.items())

    def get(self, name, default=None):
        return _state.tools.get(name, default)

    @staticmethod
    def _names():
        return ", ".join(repr(n) for n in _state.tools) or "none"

    def __repr__(self):
        if not _state.tools:
            return "<no host tools are declared for this conversation>"
        inspect = _lazy("inspect")
        lines = ["Host tools (call them as functions; help(tools.NAME) for one):"]
        for name, function in _state.tools.items():
            shown = name if name in _state.tool_bare else (
                "tools.%s" % name if name in dir(self) else "tools[%r]" % name)
            lines.append("  %s%s" % (shown, inspect.signature(function)))
            description = _state.tool_specs[name].description.strip().split("\n")[0]
            if description:
                lines.append("      " + description)
        return "\n".join(lines)


Tools.__module__ = "builtins"
tools = Tools()


def _set_tools(declarations, timeout):
    """Replaces the tools (all or nothing): the functions in the hidden helper
    namespace and in `tools`. ValueError naming the bad tool."""
    specs, timeout = _parse_tools(declarations, timeout)
    functions = {name: _make_tool_function(spec) for name, spec in specs.items()}
    reserved = set(vars(builtins)) | set(_TOOL_RESERVED) | set(_state.helpers)
    keyword = _lazy("keyword")
    bare = [name for name in functions if name.isidentifier() and not keyword.iskeyword(name)
            and name not in reserved]
    mapping = _state.builtins
    for name in _state.tool_bare:
        if mapping is not None and mapping.get(name) is _state.tools.get(name):
            del mapping[name]
    _state.tool_declarations = declarations
    _state.tool_specs = specs
    _state.tools = functions
    _state.tool_bare = frozenset(bare)
    _state.tool_timeout = timeout
    if mapping is not None:
        for name in bare:
            mapping[name] = functions[name]


def _kennel_configure(content):
    """kennel_configure_request: replaces the tools (and tool_timeout) of a
    running kernel; a field left out keeps its value."""
    declarations = content["tools"] if "tools" in content else _state.tool_declarations
    try:
        _set_tools(declarations, content.get("tool_timeout", _state.tool_timeout))
    except ValueError as exc:
        return {"status": "error", "ename": "InvalidTools", "evalue": str(exc), "traceback": []}
    return {"status": "ok"}

# ---- rich output -------------------------------------------------------------

_REPR_METHODS = (
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
    ("application/javascript", "_repr_javascript_"),
    ("application/pdf", "_repr_pdf_"),
)
_BINARY_MIMES = ("image/png", "image/jpeg", "application/pdf")


def _warn_repr(obj, method, exc):
    sys.stderr.write("kennel: %s.%s() raised %s: %s; that representation is left out\n"
                     % (type(obj).__name__, method, type(exc).__name__, exc))


def _encode_mime(mime, value):
    """JSON-ready form of one representation (binary data as base64)."""
    if mime in _BINARY_MIMES and isinstance(value, (bytes, bytearray)):
        return _lazy("base64").b64encode(bytes(value)).decode("ascii")
    if mime == "application/json":
        if isinstance(value, str):
            value = json.loads(value)
        json.dumps(value)  # refuse what cannot be sent, here, with a clear error
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return value


def _split_repr(result):
    """A _repr_*_ result may be data or (data, metadata)."""
    if isinstance(result, tuple) and len(result) == 2:
        return result[0], result[1]
    return result, None


def _is_figure(obj):
    figure = sys.modules.get("matplotlib.figure")
    return figure is not None and isinstance(obj, figure.Figure)


def _figure_png(fig):
    io = _lazy("io")
    buf = io.BytesIO()
    fig.canvas.print_figure(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def _plain_text(obj):
    """text/plain like IPython: _repr_pretty_ if defined, pretty-printed
    containers, else repr()."""
    if getattr(type(obj), "_repr_pretty_", None) is not None and not isinstance(obj, type):
        try:
            pretty = _lazy("IPython.lib.pretty")
            return pretty.pretty(obj, max_width=79)
        except ImportError:
            pass
    if type(obj) in (dict, list, tuple, set, frozenset):
        if len(obj) > _MAX_ITEMS:
            return _short_repr().repr(obj)  # like IPython: not a million items
        text = repr(obj)
        if len(text) > 79:
            return _lazy("pprint").pformat(obj, width=79, sort_dicts=False)
        return text
    return repr(obj)


_MAX_ITEMS = 1000
_short_repr_instance = None


def _short_repr():
    global _short_repr_instance
    if _short_repr_instance is None:
        reprlib = _lazy("reprlib")
        short = reprlib.Repr()
        short.maxlist = short.maxtuple = short.maxset = short.maxfrozenset = short.maxdict = \
            _MAX_ITEMS
        short.maxlevel = 6
        short.maxstring = short.maxother = short.maxlong = 10 ** 6
        _short_repr_instance = short
    return _short_repr_instance


def _format(obj, include=None, exclude=None):
    """(data, metadata) MIME bundle of obj; text/plain is always there."""
    data, metadata = {}, {}
    if not isinstance(obj, type):
        method = _safe_attr(obj, "_repr_mimebundle_")
        if callable(method):
            try:
                result = method(include=include, exclude=exclude)
            except Exception as exc:
                _warn_repr(obj, "_repr_mimebundle_", exc)
                result = None
            bundle, md = _split_repr(result)
            if isinstance(bundle, dict):
                for mime, value in bundle.items():
                    try:
                        data[mime] = _encode_mime(mime, value)
                    except Exception as exc:
                        _warn_repr(obj, "_repr_mimebundle_[%s]" % mime, exc)
            if isinstance(md, dict):
                metadata.update(md)
        for mime, name in _REPR_METHODS:
            if mime in data:
                continue
            method = _safe_attr(obj, name)
            if not callable(method):
                continue
            try:
                value, md = _split_repr(method())
                if value is None:
                    continue
                data[mime] = _encode_mime(mime, value)
            except Exception as exc:
                _warn_repr(obj, name, exc)
                continue
            if md is not None:
                metadata[mime] = md
        if "image/png" not in data and _is_figure(obj):
            data["image/png"] = _encode_mime("image/png", _figure_png(obj))
            request = _state.request
            if request is not None:
                request.shown_figures.add(id(obj))
    data.update(_registered_formats(obj, data))
    if "text/plain" not in data:
        data["text/plain"] = _plain_text(obj)
    if include:
        data = {k: v for k, v in data.items() if k in include or k == "text/plain"}
    if exclude:
        data = {k: v for k, v in data.items() if k not in exclude or k == "text/plain"}
    return data, metadata


def _registered_formats(obj, data):
    """Representations libraries registered with IPython's formatters for
    obj's type (sympy's init_printing, for_type calls), and %precision for
    floats; IPython's built-in pretty printers are left to _plain_text.
    Nothing is registered before the shell exists (registering goes through
    it, and importing IPython builds it)."""
    if _shell is None:
        return {}
    pretty = _lazy("IPython.lib.pretty")
    found = {}
    for mime, formatter in _shell.display_formatter.formatters.items():
        if mime in data and mime != "text/plain":
            continue
        try:
            printer = formatter.lookup(obj)
        except KeyError:
            continue
        except Exception:
            continue
        default = pretty._type_pprinters.get(type(obj))
        if mime == "text/plain" and (printer is default or
                                    (isinstance(obj, float) and not formatter.float_precision)):
            continue
        try:
            value = formatter(obj)
        except Exception as exc:
            _warn_repr(obj, "IPython formatter %s" % mime, exc)
            continue
        if value is not None:
            found[mime] = _encode_mime(mime, value)
    return found


def _safe_attr(obj, name):
    """getattr that survives objects with odd __getattr__ (proxies, mocks)."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _new_display_id():
    return _lazy("uuid").uuid4().hex


class DisplayHandle:
    """A display that can be updated later (display(..., display_id=...))."""

    def __init__(self, display_id=None):
        self.display_id = display_id if display_id is not None else _new_display_id()

    def __repr__(self):
        return "<DisplayHandle display_id=%s>" % self.display_id

    def display(self, obj, **kwargs):
        display(obj, display_id=self.display_id, **kwargs)

    def update(self, obj, **kwargs):
        display(obj, display_id=self.display_id, update=True, **kwargs)


def display(*objs, include=None, exclude=None, metadata=None, transient=None,
            display_id=None, raw=False, clear=False, update=False, **kwargs):
    """Show objects in the front end, as rich as they can be (HTML, images,
    ...). display_id=True (or a string) returns a handle to update it."""
    if clear:
        clear_output(wait=True)
    if display_id is True:
        display_id = _new_display_id()
    if update and not display_id:
        raise TypeError("display(update=True) needs a display_id")
    transient = dict(transient or {})
    if display_id:
        transient["display_id"] = display_id
    for obj in objs:
        if raw:
            data, md = dict(obj), {}
        elif _displays_itself(obj):
            continue
        else:
            data, md = _format(obj, include, exclude)
        if metadata:
            md.update(metadata)
        _display_pub().publish(data, md, transient=transient, update=update)
    if display_id:
        return DisplayHandle(display_id)
    return None


def _displays_itself(obj):
    """IPython's protocol for objects that publish their own output
    (`_ipython_display_`): call it, and show nothing else for them."""
    if isinstance(obj, type):
        return False
    method = _safe_attr(obj, "_ipython_display_")
    if not callable(method):
        return False
    method()
    return True


def _display_pub():
    """Where displays go: the shell's display_pub once the shell exists
    (%%capture swaps it), iopub before."""
    return _shell.display_pub if _shell is not None else _DirectDisplay


class _DirectDisplay:
    """The display publisher before IPython's shell exists."""

    @staticmethod
    def publish(data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
        # IPython's formatters give a PNG as bytes (ipykernel base64s it)
        data = {mime: _encode_mime(mime, value) for mime, value in data.items()}
        _publish_display(data, metadata or {}, transient, update)

    @staticmethod
    def clear_output(wait=False):
        _publish_clear(wait)


def _publish_display(data, metadata, transient=None, update=False):
    if _quiet():
        return
    content = {"data": data, "metadata": metadata or {}}
    if transient or update:
        content["transient"] = transient or {}
    _publish("update_display_data" if update else "display_data", content)


def update_display(obj, *, display_id, **kwargs):
    """Replace what an earlier display(..., display_id=...) showed."""
    kwargs["update"] = True
    display(obj, display_id=display_id, **kwargs)


def clear_output(wait=False):
    """Clear this cell's output (wait=True: when the next output arrives)."""
    _display_pub().clear_output(wait)


def _publish_clear(wait):
    if not _quiet():
        _publish("clear_output", {"wait": bool(wait)})


def _publish_display_data(data, metadata=None, source=None, *, transient=None, **kwargs):
    _display_pub().publish(dict(data), metadata or {}, transient=transient,
                           update=bool(kwargs.get("update")))


def _show_result(value, request, count):
    """The cell's last expression as execute_result; returns its text."""
    if request.silent or _displays_itself(value):
        return None
    data, md = _format(value)
    _publish("execute_result", {"execution_count": count, "data": data, "metadata": md})
    return data.get("text/plain")


# ---- IPython and matplotlib compatibility -----------------------------------

def _patch_ipython_display(module):
    """IPython's display() only prints when no IPython shell runs: send its
    display functions to ours."""
    module.display = display
    module.update_display = update_display
    module.clear_output = clear_output
    module.publish_display_data = _publish_display_data


# matplotlib: figures reach the front end through kennel's own backend,
# module://kennel_inline (an Agg canvas), the kernel's default as ipykernel's
# is matplotlib_inline's, and decided as that one decides: plt.show() under it
# shows every open figure; at the end of a cell the open figures are shown
# if one was made under it in interactive mode (on from its first figure, as
# the inline backend's activation sets it; plt.ioff() stops it). Under
# another backend (matplotlib.use("Agg"), "svg", ...) nothing is shown, as
# in ipykernel. The processes the kernel starts keep MPLBACKEND=Agg.

_INLINE_BACKEND = "kennel_inline"            # the module matplotlib loads
_INLINE_BACKEND_NAME = "module://" + _INLINE_BACKEND


class _InlineBackendLoader:
    """Makes the kennel_inline module when matplotlib first loads it (so
    `import matplotlib` alone does not import the Agg backend)."""

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        agg = _lazy("matplotlib.backends.backend_agg")
        module.__doc__ = "kennel's matplotlib backend: figures as PNG images in the front end."
        module.FigureCanvas = agg.FigureCanvasAgg
        module.FigureManager = agg.FigureManager
        module.new_figure_manager = _mpl_new_figure_manager
        module.new_figure_manager_given_figure = _mpl_new_figure_manager_given_figure
        module.show = _mpl_backend_show


def _mpl_new_figure_manager(num, *args, FigureClass=None, **kwargs):
    if FigureClass is None:
        FigureClass = _lazy("matplotlib.figure").Figure
    return _mpl_new_figure_manager_given_figure(num, FigureClass(*args, **kwargs))


def _mpl_new_figure_manager_given_figure(num, figure):
    """A figure made under kennel's backend: shown at the end of the cell
    when matplotlib is interactive."""
    matplotlib = sys.modules["matplotlib"]
    if not _state.mpl_activated:
        # as the inline backend's first load does (IPython's activate_matplotlib)
        _state.mpl_activated = True
        matplotlib.interactive(True)
    manager = _lazy("matplotlib.backends.backend_agg").new_figure_manager_given_figure(num, figure)
    if matplotlib.is_interactive():
        _state.figures_pending = True
    return manager


def _mpl_backend_show(close=None, block=None):
    """plt.show() under kennel's backend: every open figure as image/png,
    then closed."""
    _show_figures()


def _patch_matplotlib(module):
    """kennel's backend is the kernel's default (user code may choose
    another with matplotlib.use, %matplotlib)."""
    module.use(_INLINE_BACKEND_NAME)


def _patch_matplotlib_inline(module):
    """matplotlib_inline's backend chosen by name (matplotlib.use(
    "module://matplotlib_inline.backend_inline")) shows its figures at the
    end of a cell as under ipykernel: its flush is a post_execute callback,
    which its import registers only when it already is the backend (as
    ipykernel's MPLBACKEND makes it); it shows nothing unless that backend
    made a figure."""
    shell = _ipython()
    if shell is not None and module.flush_figures not in shell.events.callbacks["post_execute"]:
        shell.events.register("post_execute", module.flush_figures)


def _patch_pyplot(module):
    """plt.show() under a backend that draws nothing for the front end
    (Agg, after matplotlib.use("Agg")) with figures open says so on stderr,
    naming the fix: ipykernel shows nothing there either, silently."""
    real_show = module.show

    def show(*args, **kwargs):
        result = real_show(*args, **kwargs)
        _explain_unshown_figures()
        return result

    show.__doc__ = real_show.__doc__
    show.__wrapped__ = real_show
    module.show = show


def _explain_unshown_figures():
    matplotlib = sys.modules.get("matplotlib")
    if matplotlib is None or not _lazy("matplotlib._pylab_helpers").Gcf.get_all_fig_managers():
        return
    backend = str(matplotlib.get_backend())
    if backend.lower() not in _lazy("matplotlib.rcsetup").non_interactive_bk:
        return
    sys.stderr.write("kennel: plt.show() showed nothing: matplotlib's backend is %r, which draws "
                     "no figure for the front end (matplotlib.use or MPLBACKEND chose it). kennel's "
                     "default backend sends figures as PNG: leave matplotlib.use(%r) out, or call "
                     "matplotlib.use(%r) or %%matplotlib inline; plt.savefig(\"plot.png\") writes "
                     "a file\n" % (backend, backend, _INLINE_BACKEND_NAME))


def _show_figures_at_cell_end():
    """As the inline backend's post-execute flush: the open figures, when
    one was made under kennel's backend in interactive mode since the last
    end of a cell."""
    if _state.figures_pending:
        _state.figures_pending = False
        _show_figures()


def _show_figures():
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    request = _state.request
    gcf = _lazy("matplotlib._pylab_helpers").Gcf
    managers = gcf.get_all_fig_managers()
    if not managers:
        return
    for manager in managers:
        fig = manager.canvas.figure
        if request is not None and id(fig) in request.shown_figures:
            continue
        if not _quiet():
            display(fig)
    pyplot.close("all")


# ---- the sandbox's network, explained where Python raises --------------------
#
# Confined, the kernel has only loopback (network "none": seccomp refuses
# sockets but AF_UNIX; "loopback": 127.0.0.1 and ::1 only), and the errors
# that gives (EPERM, ENETUNREACH, a name that does not resolve) read like a
# passing fault worth retrying. The socket module's calls users reach
# (socket(), connect, getaddrinfo, gethostbyname: urllib, http.client,
# requests/urllib3, asyncio, socket.create_connection all come through them)
# add to such an error's text why, and what can be changed. They only
# rewrite the text of the error the real call raised (same class, errno and
# args[0]), after it failed: nothing else is called, nothing is retried, and
# a loopback socket under "loopback" goes through untouched. Unconfined, or
# with an interface besides loopback, errors are left as they are.

_NETWORK_ROUTE = ("retrying will not help: no policy routes a sandbox to other hosts. Data comes "
                  "in through the workspace (the gateway's file calls) or a host tool, packages "
                  "from the image or the operator's package source")
_NETWORK_NOTES = {
    "socket": ("kennel: this sandbox has no network (policy \"network\": \"none\": AF_UNIX "
               "sockets only); the conversation's policy {\"network\": \"loopback\"} allows "
               "sockets to the sandbox's own 127.0.0.1 and ::1; " + _NETWORK_ROUTE),
    "connect": ("kennel: this sandbox reaches only its own loopback (policy \"network\": "
                "\"loopback\": 127.0.0.1 and ::1); " + _NETWORK_ROUTE),
    "name": ("kennel: this sandbox has no network, so names resolve only from its /etc/hosts "
             "(localhost); " + _NETWORK_ROUTE),
}
_sandbox_network_cut = None     # see _network_is_cut()


def _network_is_cut():
    """Whether this kernel is confined (a seccomp filter) in a network
    namespace with only loopback: then a refused or unreachable network is
    the sandbox's policy. Read once: neither changes while a kernel runs."""
    global _sandbox_network_cut
    if _sandbox_network_cut is None:
        try:
            with open("/proc/self/status") as f:
                confined = any(line.split() == ["Seccomp:", "2"] for line in f)
        except OSError:
            confined = False
        _sandbox_network_cut = confined and not _network_reachable()
    return _sandbox_network_cut


def _explain_network_error(exc, kind):
    """Adds _NETWORK_NOTES[kind] to the text of an error the sandbox caused
    (once); exc's class, errno and args[0] stay what the call raised, so
    code that tests them sees no difference."""
    if not isinstance(exc.strerror, str) or "kennel: this sandbox" in exc.strerror \
            or not _network_is_cut():
        return
    text = "%s; %s" % (exc.strerror, _NETWORK_NOTES[kind])
    exc.strerror = text
    if len(exc.args) >= 2:
        exc.args = (exc.args[0], text) + tuple(exc.args[2:])


def _patch_socket(module):
    errno = _lazy("errno")
    refused = (errno.EPERM, errno.EACCES)
    unreachable = (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EACCES, errno.EPERM)
    unresolved = tuple(getattr(module, name) for name in
                       ("EAI_AGAIN", "EAI_FAIL", "EAI_NONAME", "EAI_NODATA", "EAI_SYSTEM")
                       if hasattr(module, name))
    inet = (-1, module.AF_INET, module.AF_INET6)
    cls = module.socket
    real_init, real_connect = cls.__init__, cls.connect

    def __init__(self, *args, **kwargs):
        try:
            real_init(self, *args, **kwargs)
        except OSError as exc:
            family = args[0] if args else kwargs.get("family", -1)
            if exc.errno in refused and family in inet:
                _explain_network_error(exc, "socket")
            raise

    def connect(self, address):
        try:
            return real_connect(self, address)
        except OSError as exc:
            if exc.errno in unreachable and self.family in inet:
                _explain_network_error(exc, "connect")
            raise

    def resolving(real):
        def call(*args, **kwargs):
            try:
                return real(*args, **kwargs)
            except module.gaierror as exc:
                if exc.errno in unresolved:
                    _explain_network_error(exc, "name")
                raise

        call.__name__, call.__qualname__, call.__doc__ = real.__name__, real.__qualname__, real.__doc__
        call.__wrapped__ = real
        return call

    __init__.__doc__, connect.__doc__ = real_init.__doc__, real_connect.__doc__
    cls.__init__, cls.connect = __init__, connect
    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
        setattr(module, name, resolving(getattr(module, name)))


_POST_IMPORT = {
    "socket": _patch_socket,
    "IPython.core.display_functions": _patch_ipython_display,
    "matplotlib": _patch_matplotlib,
    "matplotlib.pyplot": _patch_pyplot,
    "matplotlib_inline.backend_inline": _patch_matplotlib_inline,
}


class _ImportWatch:
    """First on sys.meta_path: refuses the kernel's C module to everyone,
    makes kennel's matplotlib backend, and patches IPython's display
    functions, matplotlib and pyplot.show when they load (for libraries too,
    not only for imports in cells)."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname.split(".")[0] in _ALWAYS_DENY:
            raise ImportError("import of %r is not allowed: it is internal to kennel (no policy "
                              "allows it)" % fullname, name=fullname)
        if fullname == _INLINE_BACKEND:
            return _lazy("importlib.machinery").ModuleSpec(fullname, _InlineBackendLoader)
        hook = _POST_IMPORT.get(fullname)
        if hook is None:
            return None
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is cls or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            with _InterruptsHeld(fullname in _IMPORTS_HELD):
                run(module)
                hook(module)

        spec.loader.exec_module = exec_module
        return spec

    @classmethod
    def invalidate_caches(cls):
        pass


# ---- IPython: the shell behind get_ipython(), magics and shell escapes --------
#
# A real InteractiveShell (IPython from the system, the one ipykernel uses) is
# built once: by preload() in the fork server before it forks (its kernels
# share it), else by _ipython() at the first thing that needs it, so that a
# kernel started on its own answers plain Python before IPython is imported.
# kennel keeps its own execute path (compile, run, result, tracebacks, history
# reply); the shell provides what IPython is good at: input transformation
# (magics, `!`, `?`, pasted prompts), the magics, In/Out and `_iN`/`_N`,
# formatters libraries register with, the completer and `get_ipython()`.
# README.md "IPython" says why.

_SHELL_ESCAPES_DEFAULT = {"agent": False, "notebook": True, "none": True}
_COLORS_DEFAULT = {"agent": "NoColor", "notebook": "Neutral", "none": "NoColor"}
_OUT_CACHE_SIZE = 1000           # results kept in Out, as IPython's displayhook
_PIP_INSTALL = None              # compiled on first use
_PIP_SOURCE_ENV = ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONFIG_FILE")
# a package source pip's refusal names: wheels the workspace holds
_PIP_WHEELS_ENV = {"PIP_FIND_LINKS": "/workspace/wheels", "PIP_NO_INDEX": "1",
                   "PIP_BREAK_SYSTEM_PACKAGES": "1"}
_PIP_SOURCE_ARGS = ("--find-links", "-f", "--index-url", "-i", "--no-index", "--extra-index-url")


def _hide(names):
    """Names IPython puts in the user namespace (In, Out, _i, _iN, _N): kept
    in the private builtins mapping instead, like the other hidden helpers."""
    if _state.builtins is not None:
        _state.builtins.update(names)


class _IopubStandIn:
    """get_ipython().kernel.iopub_socket: names the iopub channel for
    session.send(); it holds no socket."""

    def __repr__(self):
        return "<kennel iopub channel: publish with get_ipython().kernel.session.send(...)>"


class _SessionStandIn:
    """get_ipython().kernel.session: sends on iopub as the current request's
    child; signing and keys stay in the C side."""

    def __init__(self):
        self.session = os.urandom(16).hex()
        self.username = "kernel"

    def msg(self, msg_type, content=None, parent=None, header=None, metadata=None):
        header = dict(header or {}, msg_type=msg_type, session=self.session,
                      msg_id=os.urandom(16).hex(), username=self.username, version="5.3")
        return {"header": header, "msg_id": header["msg_id"], "msg_type": msg_type,
                "parent_header": dict((parent or {}).get("header", parent or {})),
                "content": content or {}, "metadata": metadata or {}}

    def send(self, stream, msg_or_type, content=None, parent=None, ident=None, buffers=None,
             track=False, header=None, metadata=None):
        if stream is not _iopub_stand_in:
            raise ValueError("kennel's session sends on iopub only "
                             "(get_ipython().kernel.iopub_socket)")
        if isinstance(msg_or_type, dict):
            msg = msg_or_type
        else:
            msg = self.msg(msg_or_type, content, parent, header, metadata)
        _publish(msg["msg_type"], msg.get("content", {}), msg.get("metadata") or None, buffers)
        return msg


class _KernelStandIn:
    """get_ipython().kernel: what libraries look for on ipykernel's kernel
    (iopub_socket, session, parent_header, get_parent), without sockets or
    keys."""

    iopub_socket = _IopubStandIn()
    implementation = "kennel"

    def __init__(self):
        self.session = _SessionStandIn()

    def __repr__(self):
        return "<kennel kernel: sockets and keys stay outside Python>"

    @property
    def shell(self):
        return _ipython()

    @property
    def comm_manager(self):
        return _comm_manager

    def get_parent(self, channel="shell"):
        """The shell request being handled, or the last one (as ipykernel
        keeps it) for a thread that runs on after its cell; {} before any."""
        request = _state.request or _state.parent
        if request is None:
            return {}
        header = dict(request.header)
        return {"header": header, "msg_id": header.get("msg_id", ""),
                "msg_type": request.msg_type, "content": dict(request.content),
                "parent_header": {}, "metadata": {}, "buffers": []}

    parent_header = property(get_parent)


_iopub_stand_in = _KernelStandIn.iopub_socket
_kernel_stand_in = _KernelStandIn()


class _HistoryStandIn:
    """IPython's HistoryManager as kennel uses it, before the shell exists:
    In/_ih, the raw inputs, Out/_oh and the results' text, _dh, the _i, _ii,
    _iii, _iN variables and the inputs not yet written to the (in-memory)
    history database, kept as HistoryManager.store_inputs keeps them. The
    shell's history manager takes these very lists over when it is built
    (init_user_ns below), so In, Out, _iN, %history and the database's
    searches are as if it had been there from the start."""

    _exit_re = None

    def __init__(self):
        self.input_hist_parsed = [""]
        self.input_hist_raw = [""]
        self.output_hist = {}
        self.output_hist_reprs = {}
        self.dir_hist = [os.getcwd()]
        self.db_input_cache = []
        self._i00 = self._i = self._ii = self._iii = ""

    def store_inputs(self, line_num, source, source_raw=None):
        if source_raw is None:
            source_raw = source
        source = source.rstrip("\n")
        source_raw = source_raw.rstrip("\n")
        if _HistoryStandIn._exit_re is None:
            _HistoryStandIn._exit_re = _lazy("re").compile(r"(exit|quit)(\s*\(.*\))?$")
        if self._exit_re.match(source_raw.strip()):
            return  # IPython does not store exit/quit either
        self.input_hist_parsed.append(source)
        self.input_hist_raw.append(source_raw)
        self.db_input_cache.append((line_num, source, source_raw))
        self._iii, self._ii, self._i, self._i00 = self._ii, self._i, self._i00, source_raw
        _hide({"_i": self._i, "_ii": self._ii, "_iii": self._iii,
               "_i%s" % line_num: self._i00})

    def adopted_by(self, manager):
        """The shell's history manager continues from here."""
        manager.input_hist_parsed = self.input_hist_parsed
        manager.input_hist_raw = self.input_hist_raw
        manager.output_hist = self.output_hist
        manager.output_hist_reprs = self.output_hist_reprs
        manager.dir_hist = self.dir_hist
        # moved, not copied: adopting twice adds nothing twice
        manager.db_input_cache.extend(self.db_input_cache)
        self.db_input_cache = []
        manager._i00, manager._i, manager._ii, manager._iii = \
            self._i00, self._i, self._ii, self._iii


def _input_history():
    """The shell's history manager, or its stand-in while there is no shell."""
    return _shell.history_manager if _shell is not None else _state.inputs


def _show_history(history):
    """In, Out, _ih, _oh, _dh as hidden helpers naming history's lists."""
    names = {"_ih": history.input_hist_parsed, "_oh": history.output_hist,
             "_dh": history.dir_hist, "In": history.input_hist_parsed,
             "Out": history.output_hist}
    _state.helpers.update(names)
    _hide(names)
    return names


# ---- comms: front-end widgets (ipywidgets) ---------------------------------------

class Comm:
    """One comm (messaging spec "Custom messages"): what ipykernel.comm.Comm
    offers libraries (ipywidgets imports it; kernel.py puts this class in
    its place). Binary buffers (bytes, memoryview, bytearray) travel as the
    message's frames after the content, as ipykernel sends them."""

    def __init__(self, target_name="", data=None, metadata=None, buffers=None, comm_id=None,
                 primary=True, target_module=None, **kwargs):
        self.comm_id = comm_id or _new_display_id()
        self.target_name = target_name
        self.target_module = target_module
        self.primary = primary
        self.kernel = _kernel_stand_in
        self._msg_callback = None
        self._close_callback = None
        self._closed = True
        if primary:
            self.open(data, metadata, buffers)
        else:
            self._closed = False

    def _publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        content = dict(keys, data={} if data is None else data, comm_id=self.comm_id)
        _publish(msg_type, content, metadata or None, buffers)

    def open(self, data=None, metadata=None, buffers=None):
        _comm_manager.register_comm(self)
        self._closed = False
        self._publish_msg("comm_open", data, metadata, buffers, target_name=self.target_name,
                          target_module=self.target_module)

    def close(self, data=None, metadata=None, buffers=None, deleting=False):
        if self._closed:
            return
        self._closed = True
        if not deleting:
            self._publish_msg("comm_close", data, metadata, buffers)
        _comm_manager.unregister_comm(self)

    def send(self, data=None, metadata=None, buffers=None):
        self._publish_msg("comm_msg", data, metadata, buffers)

    def on_close(self, callback):
        self._close_callback = callback

    def on_msg(self, callback):
        self._msg_callback = callback

    def handle_close(self, msg):
        if self._close_callback is not None:
            self._close_callback(msg)

    def handle_msg(self, msg):
        if self._msg_callback is not None:
            self._msg_callback(msg)


Comm.__module__ = "ipykernel.comm"


class CommManager:
    """get_ipython().kernel.comm_manager: comm targets and the open comms;
    handles the front end's comm_open, comm_msg and comm_close."""

    def __init__(self):
        self.comms = {}
        self.targets = {}

    def register_target(self, target_name, f):
        if isinstance(f, str):
            f = _lazy("traitlets.utils.importstring").import_item(f)
        self.targets[target_name] = f

    def unregister_target(self, target_name, f=None):
        return self.targets.pop(target_name, None)

    def register_comm(self, comm):
        self.comms[comm.comm_id] = comm
        return comm.comm_id

    def unregister_comm(self, comm):
        self.comms.pop(comm.comm_id, None)

    def get_comm(self, comm_id):
        return self.comms.get(comm_id)

    def info(self, target_name=None):
        return {comm_id: {"target_name": comm.target_name}
                for comm_id, comm in self.comms.items()
                if target_name is None or comm.target_name == target_name}

    def handle(self, msg_type, content, header, buffers=()):
        """A front end's comm message, its binary buffers as memoryviews (as
        ipykernel gives them); a callback's error goes to stderr."""
        msg = {"header": header, "msg_id": header.get("msg_id", ""), "msg_type": msg_type,
               "content": content, "metadata": {}, "buffers": list(buffers), "parent_header": {}}
        comm_id = content.get("comm_id", "")
        _state.running_user_code = True
        try:
            if msg_type == "comm_open":
                self._open(comm_id, content, msg)
            elif comm_id in self.comms:
                comm = self.comms[comm_id]
                if msg_type == "comm_msg":
                    comm.handle_msg(msg)
                else:
                    comm._closed = True
                    self.unregister_comm(comm)
                    comm.handle_close(msg)
        except Exception:
            _state.running_user_code = False
            _lazy("traceback").print_exc()
        finally:
            _state.running_user_code = False

    def _open(self, comm_id, content, msg):
        target = self.targets.get(content.get("target_name", ""))
        if target is None:
            # no such target: close it at once so the front end does not wait
            _publish("comm_close", {"comm_id": comm_id, "data": {}})
            return
        comm = Comm(comm_id=comm_id, primary=False, target_name=content.get("target_name", ""))
        self.register_comm(comm)
        try:
            target(comm, msg)
        except Exception:
            comm.close()
            raise


_comm_manager = CommManager()


def _patch_ipykernel_comm(module):
    """ipywidgets (and others) take Comm from ipykernel.comm: kennel's."""
    module.Comm = Comm
    module.CommManager = CommManager


_POST_IMPORT["ipykernel.comm"] = _patch_ipykernel_comm


def _shell_class():
    """InteractiveShell adapted to kennel (built inside a function: IPython is
    imported when kernel.py loads, not when this file is compiled)."""
    interactiveshell = _lazy("IPython.core.interactiveshell")
    displaypub = _lazy("IPython.core.displaypub")
    traitlets = _lazy("traitlets")
    builtin_trap = _lazy("IPython.core.builtin_trap")
    displayhook = _lazy("IPython.core.displayhook")

    class DisplayHook(displayhook.DisplayHook):
        """A result of the shell's own run_cell (%rerun, a macro,
        get_ipython().run_cell(...)): an execute_result, as kennel shows a
        cell's and ipykernel's displayhook publishes it (IPython's own
        prints "Out[N]: " on stdout)."""

        def __call__(self, result=None):
            request = _state.request
            if result is None or request is None or self.quiet():
                return
            count = self.shell.execution_count
            _set_last_results(result, count, _show_result(result, request, count))

    class DisplayPublisher(displaypub.DisplayPublisher):
        """Every display (kennel's and IPython's) goes through the shell's
        display_pub, so %%capture can take it."""

        def publish(self, data, metadata=None, source=None, *, transient=None, update=False,
                    **kwargs):
            _DirectDisplay.publish(data, metadata, transient=transient, update=update)

        def clear_output(self, wait=False):
            _DirectDisplay.clear_output(wait)

    class KennelShell(interactiveshell.InteractiveShell):
        display_pub_class = traitlets.Type(DisplayPublisher)
        displayhook_class = traitlets.Type(DisplayHook)

        def init_builtins(self):
            # IPython's own version also sets __IPYTHON__ (done when kernel.py
            # loads: _look_like_ipython) and puts `display` into the builtins
            # module; kennel's helpers stay out of it
            self.builtin_trap = builtin_trap.BuiltinTrap(shell=self)

        def init_prompts(self):
            """IPython's sets sys.ps1/ps2/ps3, which _look_like_ipython set
            when kernel.py loaded: nothing left to do."""

        def init_user_ns(self):
            if _state.inputs is not None:
                _state.inputs.adopted_by(self.history_manager)
            self.user_ns_hidden.update(_show_history(self.history_manager))

        def push(self, variables, interactive=True):
            if interactive or not isinstance(variables, dict):
                return super().push(variables, interactive)
            _hide(variables)  # IPython's bookkeeping: _i, _ii, _iN, _N
            return None

        def system(self, cmd):
            _system(self.var_expand(cmd, depth=1))

        system_piped = system_raw = system

        def getoutput(self, cmd, split=True, depth=0):
            return _getoutput(self.var_expand(cmd, depth=depth + 1), split)

        def enable_matplotlib(self, gui=None):
            """%matplotlib [GUI] and %pylab, as IPython's activation:
            interactive mode on and the backend switched: "agg" to Agg
            (figures shown nowhere), anything else to kennel's (a GUI is
            not available: said on stderr)."""
            if gui not in (None, "inline", "agg", "auto"):
                sys.stderr.write("kennel: %%matplotlib %s is not available: figures are shown "
                                 "as static PNG images (the inline backend)\n" % gui)
            gui, backend = ("agg", "agg") if gui == "agg" else ("inline", _INLINE_BACKEND_NAME)
            matplotlib = _lazy("matplotlib")
            _state.mpl_activated = True
            matplotlib.interactive(True)
            matplotlib.use(backend)
            return gui, backend

        def enable_gui(self, gui=None):
            if gui:
                sys.stderr.write("kennel: %%gui %s is not available: the kernel has no display\n"
                                 % gui)

        def debugger(self, force=False):
            if not (force or self.call_pdb):
                return
            self.InteractiveTB.tb = None  # post-mortem of sys.last_traceback (kennel's)
            self.InteractiveTB.debugger(force=True)

        # what ipykernel's shell adds, which libraries and magics use
        @property
        def parent_header(self):
            """The shell request being handled (the last one when idle), as
            ipykernel's shell has it: code that updates displays by id or
            routes output (ipywidgets' Output) reads its header."""
            return _kernel_stand_in.get_parent()

        def get_parent(self):
            return _kernel_stand_in.get_parent()

        def set_next_input(self, text, replace=False):
            """%load, %recall: the front end's next input, a payload of the
            reply."""
            _write_payload({"source": "set_next_input", "text": str(text), "replace": bool(replace)})

        def ask_exit(self):
            _ask_exit(bool(self.keepkernel_on_exit))

        keepkernel_on_exit = False

    return KennelShell


def _make_shell():
    """The one shell: no history file (inputs are kept in memory), no jedi, no
    colours until asked; its profile directory is scratch, removed at once
    (nothing of IPython's is written where the kernel runs)."""
    tempfile = _lazy("tempfile")
    shutil = _lazy("shutil")
    config_module = _lazy("traitlets.config")
    profiledir = _lazy("IPython.core.profiledir")
    types = _lazy("types")
    config = config_module.Config()
    # history in an in-memory database, as IPython's ":memory:" file: the
    # searches (%history -g, -l, get_tail) work within the session, nothing
    # is written, and no saving thread runs (the fork server stays one thread)
    config.HistoryManager.hist_file = ":memory:"
    config.InteractiveShell.colors = "NoColor"
    config.IPCompleter.use_jedi = False
    scratch = tempfile.mkdtemp(prefix="kennel-ipython-")
    try:
        profile = profiledir.ProfileDir.create_profile_dir(os.path.join(scratch, "profile"),
                                                           config)
        shell = _shell_class().instance(ipython_dir=scratch, profile_dir=profile, config=config,
                                        user_module=types.ModuleType("__main__"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    shell.kernel = _kernel_stand_in
    shell.set_hook("show_in_pager", _pager_hook, 99)
    for name, function in _KERNEL_MAGICS.items():
        shell.register_magic_function(function, "line", name)
    load = shell.extension_manager.load_extension
    shell.extension_manager.load_extension = lambda name: _load_extension(load, name)
    return shell


def _configure_shell(profile, settings):
    """The conversation's shell settings: checked now (a bad one stops the
    kernel), given to the shell now or when it is built."""
    colors = settings.get("colors", _COLORS_DEFAULT[profile])
    if colors not in ("NoColor", "Neutral", "Linux", "LightBG"):
        raise ValueError("colors must be one of NoColor, Neutral, Linux, LightBG")
    escapes = settings.get("shell_escapes", _SHELL_ESCAPES_DEFAULT[profile])
    if not isinstance(escapes, bool):
        raise ValueError("shell_escapes must be true or false")
    _state.shell_escapes = escapes
    _state.colors = colors
    # a bare `who` or `time` is a NameError for an agent, as in Python; a
    # notebook runs it as %who, as IPython does
    _state.automagic = profile == "notebook"
    if _shell is not None:
        _shell_attach(_shell)
    else:
        _state.inputs = _HistoryStandIn()
        _show_history(_state.inputs)


def _shell_attach(shell):
    """Points the shell at this conversation's namespace, history and
    settings."""
    shell.user_module = _state.main
    shell.user_ns = _state.ns
    shell.user_ns_hidden = {}
    shell.ns_table = {"user_global": _state.ns, "user_local": _state.ns,
                      "builtin": builtins.__dict__}
    shell.init_user_ns()
    shell.Completer.namespace = shell.Completer.global_namespace = _state.ns
    shell.execution_count = _state.count
    # the shell made its own (throwaway) module __main__ when it was built
    sys.modules["__main__"] = _state.main
    if _state.colors != shell.colors:  # each change rebuilds IPython's colourers
        shell.colors = _state.colors
        shell.InteractiveTB.set_colors(_state.colors)
        shell.SyntaxTB.set_colors(_state.colors)
    if shell.automagic != _state.automagic:
        shell.automagic = _state.automagic


# ---- the magics ipykernel adds to IPython's (its KernelMagics) ----------------

def _connect_info_text():
    """What %connect_info can truthfully say: the kernel holds no connection
    a front end can use (its sockets and key are the gateway's side of the
    sandbox, out of Python's reach), so it says where the front end's is."""
    return "\n".join([
        "This is kennel's Python kernel (kennel %s, builtins profile %r), confined in a sandbox."
        % (_VERSION, _state.profile),
        "Front ends never connect to it directly: they connect to the kennel gateway that",
        "started it, which relays this conversation; its connection (sockets, key) stays",
        "outside the sandbox and is not shown here.",
        "",
        "To attach another front end to this same kernel:",
        "  - a Jupyter front end started it (notebook, lab, console, nbclient: kernelspec",
        "    mode): use the connection file that front end wrote for it:",
        "        $> jupyter console --existing FILE",
        "    (the files are in `jupyter --runtime-dir`; the newest: --existing alone);",
        "  - a kennel daemon runs it: open this conversation again, by its id, through",
        "    the daemon (conversation_open_request on its control socket, or",
        "    /api/kernels/ID/channels on its HTTP front).",
    ])


def _magic_connect_info(line):
    """Print how other front ends can reach this kernel (kennel: through the
    gateway, never the kernel's own sockets)."""
    print(_connect_info_text())


def _magic_qtconsole(line):
    """Would open a Qt console on this kernel: the sandbox has no display."""
    sys.stderr.write("kennel: %qtconsole cannot start a Qt console here: the kernel runs in a "
                     "sandbox with no display. Start one on your machine with `jupyter qtconsole "
                     "--existing FILE`, FILE being the connection file of this kernel's front end "
                     "(%connect_info says more)\n")


def _magic_autosave(line):
    """Set the notebook's autosave interval in seconds (0 turns it off)."""
    try:
        interval = int(line)
    except ValueError:
        raise _lazy("IPython.core.error").UsageError(
            "%%autosave requires an integer, got %r" % line) from None
    javascript = _lazy("IPython.display").Javascript
    display(javascript("IPython.notebook.set_autosave_interval(%i)" % (1000 * interval)),
            include=["application/javascript"])
    print("Autosaving every %i seconds" % interval if interval else "Autosave disabled")


def _magic_less(line):
    """Show a file through the pager (a `page` payload)."""
    if not line:
        raise _lazy("IPython.core.error").UsageError("Missing filename.")
    with open(line, encoding="utf-8", errors="replace") as f:
        _lazy("IPython.core.page").page(f.read())


_KERNEL_MAGICS = {"connect_info": _magic_connect_info, "qtconsole": _magic_qtconsole,
                  "autosave": _magic_autosave, "less": _magic_less, "more": _magic_less}


def _pager_hook(shell, data, start=0, screen_lines=0, pager_cmd=None):
    """IPython's pager (`obj?`, %quickref, %magic): a `page` payload of the
    reply, as ipykernel sends it."""
    if not isinstance(data, dict):
        data = {"text/plain": str(data)}
    _write_payload({"source": "page", "data": data, "start": int(start)})


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


def _ask_exit(keep_kernel):
    """exit / quit in the notebook profile: the reply asks the front end to
    close (an `ask_exit` payload, as ipykernel's); jupyter console then
    quits, and shuts the kernel down unless keepkernel. The kernel itself
    goes on until its front end or gateway stops it."""
    _write_payload({"source": "ask_exit", "keepkernel": keep_kernel})


def _load_extension(load, name):
    """%load_ext: only what the import policy lets user code import."""
    reason = _module_denied(str(name))
    if reason is not None:
        raise ImportError("%%load_ext %s is blocked: %s" % (name, reason), name=str(name))
    return load(name)


def get_ipython():
    """The IPython shell of this kernel."""
    return _ipython()


_shell = None                   # see _ipython()
_XMODE_AT_START = None          # the shell's traceback mode when it was built
_shell_lock = _thread.RLock()


def _ipython():
    """The shell, built now if it does not exist yet. Returns None only to a
    call made while it is being built (an import of IPython by the build
    itself)."""
    if _shell is None:
        with _shell_lock:
            if _shell is None and not _state.shell_building:
                _build_shell()
    return _shell


def _build_shell():
    """Builds the shell and gives it the conversation (once configured)."""
    global _shell, _XMODE_AT_START
    _state.shell_building = True
    try:
        with _InterruptsHeld():
            shell = _make_shell()
            _XMODE_AT_START = shell.InteractiveTB.mode
            if _state.main is not None:
                _shell_attach(shell)
            _shell = shell
            _state.inputs = None
    finally:
        _state.shell_building = False


class _InterruptsHeld:
    """A block user code runs that must not stop half-way: IPython's import
    and the shell's construction (an interrupt there leaves half-initialized
    IPython modules in sys.modules, and no shell for the rest of the
    session). SIGINT (it reaches the main thread) is held until the block
    ends, then interrupts the cell."""

    def __init__(self, active=True):
        self.held = active and _state.running_user_code and \
            _thread.get_ident() == _state.main_thread

    def __enter__(self):
        if self.held:
            _state.running_user_code = False  # _sigint now only notes it

    def __exit__(self, exc_type, exc, tb):
        if not self.held:
            return
        _state.running_user_code = True
        if exc_type is None and _state.interrupt_pending:
            _state.interrupt_pending = False
            raise KeyboardInterrupt


# the IPython package is imported with interrupts held: the import builds
# the shell (_on_ipython_import)
_IMPORTS_HELD = ("IPython",)


def _on_ipython_import(module):
    """Whoever imports IPython (a cell, a library) finds the kernel's shell
    as InteractiveShell's instance: libraries ask InteractiveShell.
    initialized() and .instance(), which would otherwise give a second,
    plain shell."""
    _ipython()


_POST_IMPORT["IPython"] = _on_ipython_import


def _look_like_ipython():
    """What IPython's shell sets for everyone when it is built (__IPYTHON__,
    sys.ps1/ps2/ps3: code tests them to see an interactive session), set
    before it exists, so libraries see the same session either way."""
    builtins.__dict__["__IPYTHON__"] = True
    sys.ps1, sys.ps2, sys.ps3 = "In : ", "...: ", "Out: "


# ---- shell escapes: !cmd, files = !cmd, %sx, %pip ----------------------------

def _escape_refusal(cmd):
    """Why a shell escape may not run here, or None."""
    if not _state.shell_escapes:
        return ("shell escapes (!cmd, %%sx, %%pip) are off in builtins profile %r; %s turns them "
                "on (subprocess.run is not affected)" % (_state.profile, _policy_fix(*_OTHER_PROFILES)))
    return None


def _pip_refusal(cmd):
    """A pip install that cannot reach any package source: why, or None."""
    global _PIP_INSTALL
    if _PIP_INSTALL is None:
        _PIP_INSTALL = _lazy("re").compile(
            r"(?:^|[\s;&|/])(?:pip[\d.]*|-m\s+pip)\s+install\b(.*)")
    match = _PIP_INSTALL.search(cmd)
    if match is None or _network_reachable():
        return None
    args = match.group(1).split()
    if any(os.environ.get(name) for name in _PIP_SOURCE_ENV):
        return None
    if any(a.split("=")[0] in _PIP_SOURCE_ARGS or "/" in a or a.endswith(".whl") for a in args):
        return None
    return ("pip install: this sandbox has no network, so packages cannot be downloaded here. "
            "Packages come from the kernel's image or from the operator's package policy: a "
            "wheel directory or an index the sandbox can reach, named in the conversation's "
            "environment; for wheels in /workspace/wheels, %s (Debian's Python needs "
            "PIP_BREAK_SYSTEM_PACKAGES for a user install)" % _policy_fix({"env": _PIP_WHEELS_ENV}))


def _network_reachable():
    """Whether the sandbox's network namespace has any interface besides
    loopback (/proc/net/dev: netlink may be refused by the sandbox)."""
    try:
        with open("/proc/net/dev") as f:
            lines = f.read().splitlines()[2:]
    except OSError:
        return False
    return any(line.split(":")[0].strip() not in ("lo", "") for line in lines)


def _after_pip(cmd):
    """A user-site install (the image's site-packages is read-only) becomes
    importable at once: the embedded interpreter runs isolated, without the
    user site on sys.path."""
    if _PIP_INSTALL is None or _PIP_INSTALL.search(cmd) is None:
        return
    site = _lazy("site")
    user_site = site.getusersitepackages()
    if os.path.isdir(user_site) and user_site not in sys.path:
        sys.path.append(user_site)
    _lazy("importlib").invalidate_caches()


def _escape_command(cmd):
    """The command line to run, or raise/print why not."""
    refusal = _escape_refusal(cmd)
    if refusal is not None:
        raise PermissionError(refusal)
    refusal = _pip_refusal(cmd)
    if refusal is not None:
        sys.stderr.write("kennel: %s\n" % refusal)
        _state.ns["_exit_code"] = 1
        return None
    return cmd


def _system(cmd):
    """!cmd: runs in the sandbox with the conversation's limits; its output
    reaches the client through fd 1 and 2 like any child's. The exit status
    is _exit_code (negative: the signal), as in IPython."""
    cmd = _escape_command(cmd)
    if cmd is None:
        return
    subprocess = _lazy("subprocess")
    _streams.flush()
    try:
        code = subprocess.call(cmd, shell=True, executable=os.environ.get("SHELL") or None)
    except KeyboardInterrupt:
        sys.stderr.write("\nKeyboardInterrupt\n")
        code = 130
    _state.ns["_exit_code"] = -(code - 128) if code > 128 else code
    _after_pip(cmd)


def _getoutput(cmd, split):
    """files = !cmd: stdout and stderr together, as IPython's SList/LSString."""
    text = _lazy("IPython.utils.text")
    cmd = _escape_command(cmd)
    if cmd is None:
        return text.SList() if split else text.LSString("")
    subprocess = _lazy("subprocess")
    done = subprocess.run(cmd, shell=True, executable=os.environ.get("SHELL") or None,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL)
    _state.ns["_exit_code"] = done.returncode
    out = done.stdout.decode("utf-8", "replace")
    return text.SList(out.splitlines()) if split else text.LSString(out)


# ---- builtins profiles and the import policy --------------------------------
#
# Every refusal names a fix that can be applied: a conversation's policy
# (the gateway's fields, gateway/gw_config.c; the same keys are a launch
# spec's kernel settings), written as the JSON to send, which
# tests/kernel/test_refusals.py applies through a real gateway.

def _policy_fix(*policies):
    """'the conversation's policy {...} (or {...})' for the given policy
    objects."""
    shown = [json.dumps(policy, sort_keys=True) for policy in policies]
    return "the conversation's policy %s" % " (or ".join(shown) + ")" * (len(shown) - 1)


_OTHER_PROFILES = ({"builtins": "notebook"}, {"builtins": "none"})

class _Disabled:
    """exit/quit/breakpoint where the profile turns them off."""

    def __init__(self, message):
        self._message = message

    def __repr__(self):
        return self._message

    def __call__(self, *args, **kwargs):
        raise RuntimeError(self._message)


class _Exit:
    """exit / quit in the notebook profile, as ipykernel's: called, or alone
    on a one-line cell (IPython's autocall), they ask the front end to close
    (_ask_exit); exit(keep_kernel=True) asks it to leave the kernel
    running."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return ("%s: asks the front end to close (jupyter console quits and shuts the kernel "
                "down; %s(keep_kernel=True) leaves it running)" % (self._name, self._name))

    def __call__(self, keep_kernel=False):
        _ask_exit(bool(keep_kernel))


def _autocall_exit(code):
    """A one-line cell that is only `exit` or `quit` (no variable shadowing
    it) runs it, as IPython's autocall does. True when it did."""
    name = code.strip()
    if name not in ("exit", "quit") or name in _state.ns:
        return False
    exiter = _state.builtins.get(name)
    if not isinstance(exiter, _Exit):
        return False
    exiter()
    return True


def _module_denied(name):
    """The policy's reason to refuse importing `name` and its fix, or None."""
    parts = name.split(".")
    prefixes = {".".join(parts[:i + 1]) for i in range(len(parts))}
    if prefixes & set(_ALWAYS_DENY):
        return "it is internal to kennel (no policy allows it)"
    if _state.allow is not None:
        if not prefixes & _state.allow:
            allow = sorted(_state.allow | {parts[0]})
            return ("kennel's import policy allows only: %s; %s allows it"
                    % (", ".join(sorted(_state.allow)), _policy_fix({"imports": {"allow": allow}})))
        return None
    denied = prefixes & _state.deny
    if not denied:
        return None
    # the fix: the policy's own deny list without these, another profile
    # for the agent's guardrail (denied by the profile: FFI)
    fix = {}
    if denied & _state.policy_deny:
        fix["imports"] = {"deny": sorted(_state.policy_deny - denied)}
    fixes = [fix]
    if _state.profile == "agent" and denied & set(_DEFAULT_DENY):
        fixes = [dict(fix, **profile) for profile in _OTHER_PROFILES]
    return ("kennel's import policy denies %s (builtins profile %r%s); %s allows it"
            % (", ".join(sorted(denied)), _state.profile,
               ", the policy's \"imports\"" if "imports" in fix else "", _policy_fix(*fixes)))


def _make_import(real_import):
    def __import__(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name:
            # `from pkg import sub` may name a denied submodule
            names = [name] + ["%s.%s" % (name, item) for item in (fromlist or ())
                              if isinstance(item, str) and item != "*"]
            for full in names:
                reason = _module_denied(full)
                if reason is not None and (full == name or _state.allow is None):
                    raise ImportError("import of %r is blocked: %s" % (full, reason), name=full)
        return real_import(name, globals, locals, fromlist, level)

    __import__.__doc__ = real_import.__doc__
    return __import__


def _build_builtins(profile):
    """The private builtins mapping for user code."""
    mapping = dict(vars(builtins))
    mapping["input"] = _input
    if profile == "agent":
        for name in ("exit", "quit"):
            mapping[name] = _Disabled(
                "%s() is disabled in builtins profile 'agent': the kernel and its variables "
                "persist; the host ends the conversation (conversation_close_request, or "
                "DELETE /api/kernels/ID over HTTP)" % name)
        mapping["breakpoint"] = _Disabled(
            "breakpoint() is disabled in builtins profile 'agent' (an agent has no debugger "
            "front end); %s runs pdb over the stdin channel" % _policy_fix({"builtins": "notebook"}))
    elif profile == "notebook":
        mapping["exit"] = _Exit("exit")
        mapping["quit"] = _Exit("quit")
    if profile != "none":
        mapping["__import__"] = _make_import(builtins.__import__)
    mapping.update(_state.helpers)
    return mapping


def _install_helpers():
    _state.helpers.update({
        "display": display,
        "get_ipython": get_ipython,
        "tools": tools,
        "ToolError": ToolError,
    })


# ---- tracebacks ----------------------------------------------------------------

def _strip_kennel_frames(exc, seen=None):
    """Drop this file's frames from exc's traceback (and its chain's)."""
    types = _lazy("types")
    seen = set() if seen is None else seen
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        entries = []
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename != _OWN_FILE:
                entries.append(tb)
            tb = tb.tb_next
        new = None
        for entry in reversed(entries):
            new = types.TracebackType(new, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
        exc.__traceback__ = new
        if exc.__cause__ is not None:
            _strip_kennel_frames(exc.__cause__, seen)
        exc = exc.__context__


def _error_content(exc):
    traceback = _lazy("traceback")
    _strip_kennel_frames(exc)
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
    if _is_usage_error(exc):
        # as ipykernel: the message is the whole story (a misspelt magic, a
        # bad option), no traceback
        lines = []
    elif isinstance(exc, SystemExit):
        lines = ["SystemExit: %s" % (exc.code if exc.code is not None else ""),
                 "kennel caught SystemExit: the kernel keeps running and your variables are kept."]
    elif _ipython_tracebacks():
        lines = _ipython_traceback(exc)
    else:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        lines = text.rstrip("\n").split("\n")
    return {"ename": type(exc).__name__, "evalue": str(exc), "traceback": lines}


def _is_usage_error(exc):
    """IPython's UsageError (an unknown magic, a magic's bad arguments),
    which IPython shows as one line on stderr rather than as a traceback.
    Only that class, as IPython's showtraceback tests it, not subclasses."""
    error = sys.modules.get("IPython.core.error")
    return error is not None and type(exc) is error.UsageError


def _show_error(exc, error, request):
    """A failed cell's error for the front ends: an `error` message, or for
    a UsageError one stderr line "UsageError: ..." and no error message, as
    ipykernel shows it (front ends and nbclient treat the two differently);
    the reply says status "error" either way."""
    if _is_usage_error(exc):
        sys.stderr.write("UsageError: %s\n" % exc)
        return
    _publish("error", error)
    _post_mortem(request)


def _ipython_tracebacks():
    """Plain Python tracebacks (no ANSI) unless colours were asked for (the
    colors setting, %colors) or %xmode changed the mode."""
    if _shell is None:
        return _state.colors != "NoColor"
    return _shell.colors != "NoColor" or _shell.InteractiveTB.mode != _XMODE_AT_START


def _ipython_traceback(exc):
    """IPython's traceback lines (ultratb), in the shell's colours and mode."""
    shell = _ipython()
    try:
        if isinstance(exc, SyntaxError):
            return shell.SyntaxTB.structured_traceback(type(exc), exc, [])
        return shell.InteractiveTB.structured_traceback(type(exc), exc, exc.__traceback__,
                                                        tb_offset=0)
    finally:
        shell.InteractiveTB.tb = None  # %debug takes sys.last_traceback


# ---- execute ---------------------------------------------------------------------

def _register_source(filename, source):
    linecache = _lazy("linecache")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def _help_request(line):
    """(expression, detail_level) if line is IPython's `obj?` / `obj??`."""
    stripped = line.strip()
    if not stripped or "?" not in stripped:
        return None
    level = 0
    body = stripped
    if body.endswith("??"):
        body, level = body[:-2], 1
    elif body.endswith("?"):
        body = body[:-1]
    elif body.startswith("??"):
        body, level = body[2:], 1
    elif body.startswith("?"):
        body = body[1:]
    else:
        return None
    body = body.strip()
    if not body or not all(part.isidentifier() for part in body.split(".")):
        return None
    return body, level


def _page(expression, level):
    """`obj?` in a cell: help text as a pager payload of the reply."""
    text = _inspect_text(expression, level)
    if text is None:
        text = "Object `%s` not found." % expression
    _write_payload({"source": "page", "data": {"text/plain": text}, "start": 0})


def _transform(code):
    """IPython's input transformation: magics, `!`, `?` in any place IPython
    takes it, pasted `>>> ` / `In [1]: ` prompts, automagic."""
    try:
        return _ipython().transform_cell(code)
    except (SyntaxError, ValueError):
        return code  # compiling it reports the error in the user's own text


def _ends_with_semicolon(source):
    tokenize = _lazy("tokenize")
    io = _lazy("io")
    skip = (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER,
            tokenize.INDENT, tokenize.DEDENT)
    last = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type not in skip:
                last = token
    except (tokenize.TokenError, SyntaxError):
        return False
    return last is not None and last.type == tokenize.OP and last.string == ";"


def _compile_cell(source, filename):
    """(body code, last-expression code or None)."""
    ast = _lazy("ast")
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT | _state.future_flags
    tree = compile(source, filename, "exec", flags | ast.PyCF_ONLY_AST, dont_inherit=True)
    # IPython runs a cell statement by statement, so a __future__ import may
    # come anywhere in it (SymPy's examples put one after other imports);
    # in one code object it must come first
    future = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    if future:
        tree.body = future + [n for n in tree.body if n not in future]
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not _ends_with_semicolon(source):
        last = tree.body.pop()
    body = compile(tree, filename, "exec", flags, dont_inherit=True)
    _state.future_flags |= body.co_flags & _FUTURE_FLAGS
    expr = None
    if last is not None:
        expr = compile(ast.Expression(last.value), filename, "eval", flags | _state.future_flags,
                       dont_inherit=True)
    return body, expr


def _future_flags():
    future = _lazy("__future__")
    mask = 0
    for name in future.all_feature_names:
        mask |= getattr(future, name).compiler_flag
    return mask


_FUTURE_FLAGS = 0
_CO_COROUTINE = 0x0080


def _run_code(code):
    """Runs a code object of a cell in the user namespace (awaiting it when
    it uses top-level await)."""
    # eval() would give a namespace without __builtins__ (globals().clear()
    # earlier in the cell) the real builtins: keep the private mapping
    _state.ns.setdefault("__builtins__", _state.builtins)
    result = eval(code, _state.ns)
    if code.co_flags & _CO_COROUTINE:
        if _state.loop is None:
            _state.loop = _lazy("asyncio").new_event_loop()
        result = _state.loop.run_until_complete(result)
    return result


def _prepare_namespace():
    ns = _state.ns
    ns["__builtins__"] = _state.builtins
    ns.setdefault("__name__", "__main__")
    sys.modules["__main__"] = _state.main


def _compile_with_ipython_syntax(code, filename):
    """Compiles code as IPython would. Plain Python that IPython would leave
    alone compiles without running IPython's code: in a forked kernel every
    object IPython's transformers touch costs a private copy of its page
    (README.md, "IPython"). Returns (source used, body, last expression)."""
    _register_source(filename, code)
    if not _ipython_may_rewrite(code):
        try:
            return (code,) + _compile_cell(code, filename)
        except (SyntaxError, ValueError, OverflowError):
            pass
    _ipython().execution_count = _state.count
    source = _transform(code)
    _register_source(filename, source)
    return (source,) + _compile_cell(source, filename)


_REWRITTEN_PYTHON = None


def _ipython_may_rewrite(code):
    """Whether IPython's transformation could change code that is valid
    Python: pasted prompts (`In [1]: x = 3` is an annotation), or a lone
    line naming a line magic or alias that no variable or keyword shadows
    and that is no assignment (automagic: `pwd`, `who x`, not `pwd = 1`:
    IPython's AssignmentChecker)."""
    global _REWRITTEN_PYTHON
    if _REWRITTEN_PYTHON is None:
        re = _lazy("re")
        _REWRITTEN_PYTHON = (re.compile(r"(?m)^(>>>|\s*In \[\d+\]:|\s*\.\.\.:)"),
                             re.compile(r"\s*([A-Za-z_]\w*)(?:\s|$)\s*(.?)"))
    prompts, first_word = _REWRITTEN_PYTHON
    if prompts.search(code):
        return True
    word = first_word.match(code)
    if word is None or "\n" in code.strip():
        return False
    name, rest = word.groups()
    automagic = _shell.automagic if _shell is not None else _state.automagic
    if (not automagic or rest in ("=", ",") or name in _state.ns or name in _state.builtins
            or _lazy("keyword").iskeyword(name)):
        return False
    return name in _ipython().magics_manager.magics["line"]


def _run_cell(code, request, count, store):
    """Runs one cell. Returns (the exception that ended it or None, result
    text or None)."""
    _state.cells += 1
    filename = "<cell %d>" % count if store else "<cell %d.%d>" % (count, _state.cells)
    whole = _help_request(code) if "\n" not in code.strip() else None
    if whole is not None:
        _store_input(store, count, code, code)
        _page(*whole)
        return None, None
    if _autocall_exit(code):
        _store_input(store, count, code, code)  # not kept: IPython's history leaves exit out
        return None, None
    _prepare_namespace()
    try:
        source, body, expr = _compile_with_ipython_syntax(code, filename)
    except (SyntaxError, ValueError, OverflowError) as exc:
        _store_input(store, count, code, code)
        return exc, None
    _store_input(store, count, source, code)
    result_text = None
    try:
        _state.running_user_code = True
        try:
            if _state.interrupt_pending:
                raise KeyboardInterrupt
            _run_code(body)
            if expr is not None:
                value = _run_code(expr)
                if value is not None:
                    result_text = _show_result(value, request, count)
                    if store:
                        _set_last_results(value, count, result_text)
        finally:
            _state.running_user_code = False
    except BaseException as exc:  # KeyboardInterrupt, SystemExit: the kernel persists
        return exc, None
    return None, result_text


def _store_input(store, count, source, raw):
    """In[N], _i, _ii, _iii, _iN (IPython's history manager), before the cell
    runs, as IPython does."""
    if store:
        _input_history().store_inputs(count, source, raw)


def _set_last_results(value, count, text):
    """_, __, ___, _N, Out[N] and the result's text (%history -o, as
    IPython's displayhook logs it); Out and the texts keep the last
    _OUT_CACHE_SIZE."""
    mapping = _state.builtins
    mapping["___"] = mapping.get("__", "")
    mapping["__"] = mapping.get("_", "")
    mapping["_"] = value
    history = _input_history()
    out, reprs = history.output_hist, history.output_hist_reprs
    if len(out) >= _OUT_CACHE_SIZE:
        for old in sorted(out)[:_OUT_CACHE_SIZE // 5]:
            del out[old]
            reprs.pop(old, None)
            mapping.pop("_%d" % old, None)
    out[count] = value
    if text is not None:
        reprs[count] = text
    mapping["_%d" % count] = value


def _user_expressions(expressions):
    results = {}
    for key, expression in (expressions or {}).items():
        try:
            _state.running_user_code = True
            try:
                value = _run_code(compile(str(expression), "<user_expression>", "eval",
                                          dont_inherit=True))
            finally:
                _state.running_user_code = False
            data, md = _format(value)
            results[key] = {"status": "ok", "data": data, "metadata": md}
        except BaseException as exc:
            content = _error_content(exc)
            content["status"] = "error"
            results[key] = content
    return results


def _execute(request):
    content = request.content
    code = str(content.get("code", ""))
    silent = request.silent
    store = bool(content.get("store_history", not silent)) and not silent
    stop_on_error = bool(content.get("stop_on_error", True))
    count = _state.count if store else _state.count - 1
    if not silent:
        _publish("execute_input", {"code": code, "execution_count": count})
    events = None if silent else _CellEvents(code, store, count)
    if events is not None:
        events.before()
    exc, result_text = _run_cell(code, request, count, store)
    error = None if exc is None else _error_content(exc)
    if error is not None and not silent:
        _show_error(exc, error, request)
    try:
        # before the post_execute callbacks, as the inline backend's flush
        # is one, and so that matplotlib's own (it redraws the figures still
        # open) has none left to draw
        if not silent:
            _show_figures_at_cell_end()
    except Exception as problem:
        sys.stderr.write("kennel: showing matplotlib figures failed: %s: %s\n"
                         % (type(problem).__name__, problem))
    if events is not None:
        events.after(error)
    if store:
        _state.history.append((_SESSION, count, code, result_text))
        _state.count += 1
    if error is None:
        reply = {"status": "ok", "execution_count": count, "payload": request.payloads,
                 "user_expressions": _user_expressions(content.get("user_expressions"))}
    else:
        reply = dict(error, status="error", execution_count=count, payload=[],
                     user_expressions={})
    abort = error is not None and stop_on_error and not silent
    return "execute_reply", reply, abort


_CELL_EVENTS = ("pre_execute", "pre_run_cell", "post_execute", "post_run_cell")


class _CellEvents:
    """IPython's cell events around one non-silent cell: pre_execute and
    pre_run_cell before it (ExecutionInfo), post_execute and post_run_cell
    after it (ExecutionResult). Callbacks are registered through the shell
    (libraries, get_ipython().events), so before the shell exists there is
    none; a cell that builds it (to register one) still gets its post_
    events, as if the shell had been there. With no callback at all,
    IPython's code is not run (see _compile_with_ipython_syntax)."""

    def __init__(self, code, store, count):
        self.code = code
        self.store = store
        self.count = count
        self.result = None

    def before(self):
        if _shell is None:
            # what the one callback IPython registers itself does: a warning
            # from line N of this cell is not taken for one an earlier cell gave
            _state.ns.pop("__warningregistry__", None)
            return
        if not self._registered():
            return
        _shell.execution_count = self.count
        info = self._new_result().info
        _shell.events.trigger("pre_execute")
        _shell.events.trigger("pre_run_cell", info)

    def after(self, error):
        if _shell is None or not self._registered():
            return
        result = self.result if self.result is not None else self._new_result()
        if error is not None:
            result.error_in_exec = sys.last_value
        _shell.last_execution_succeeded = error is None
        _shell.last_execution_result = result
        _shell.events.trigger("post_execute")
        _shell.events.trigger("post_run_cell", result)

    @staticmethod
    def _registered():
        callbacks = _shell.events.callbacks
        return any(callbacks.get(event) for event in _CELL_EVENTS)

    def _new_result(self):
        interactiveshell = _lazy("IPython.core.interactiveshell")
        info = interactiveshell.ExecutionInfo(self.code, self.store, False, True, None)
        self.result = interactiveshell.ExecutionResult(info)
        return self.result


def _post_mortem(request):
    """%pdb on: the debugger after an error, through stdin when served."""
    if _shell is None or not _shell.call_pdb or not request.allow_stdin:
        return  # %pdb is a magic: no shell, no %pdb
    _state.running_user_code = True
    try:
        _shell.debugger(force=True)
    except BaseException as exc:
        sys.stderr.write("kennel: the debugger ended: %s: %s\n" % (type(exc).__name__, exc))
    finally:
        _state.running_user_code = False


# ---- introspection: complete, inspect, is_complete -----------------------------

def _resolve(expression):
    """The object a dotted name refers to in user code, or raise LookupError."""
    parts = expression.split(".")
    if not all(part.isidentifier() for part in parts):
        raise LookupError(expression)
    name = parts[0]
    if name in _state.ns:
        obj = _state.ns[name]
    elif name in _state.builtins:
        obj = _state.builtins[name]
    elif name in sys.modules and _module_denied(name) is None:
        # a module the cell imports but has not run yet (`import sys; sys.`)
        obj = sys.modules[name]
    else:
        raise LookupError(expression)
    for part in parts[1:]:
        try:
            obj = getattr(obj, part)
        except Exception:
            raise LookupError(expression) from None
    return obj


def _signature(obj):
    inspect = _lazy("inspect")
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return None


def _inspect_text(expression, level):
    """IPython-like help text for a dotted name, or None if unknown."""
    inspect = _lazy("inspect")
    try:
        obj = _resolve(expression)
    except LookupError:
        return None
    lines = []
    if callable(obj):
        signature = _signature(obj)
        if signature is not None:
            lines.append("Signature: %s%s" % (expression, signature))
    else:
        text = repr(obj)
        if len(text) > 200:
            text = text[:200] + "..."
        lines.append("String form: %s" % text)
    if level > 0:
        try:
            lines.append("Source:\n%s" % inspect.getsource(obj).rstrip("\n"))
        except (TypeError, OSError):
            level = 0
    if level == 0:
        doc = inspect.getdoc(obj)
        if not doc:
            lines.append("Docstring: <no docstring>")
        elif "\n" in doc:
            lines.append("Docstring:\n%s" % doc)
        else:
            lines.append("Docstring: %s" % doc)
    try:
        filename = inspect.getsourcefile(obj) or inspect.getfile(obj)
    except TypeError:
        filename = None
    if filename and filename != _OWN_FILE:
        lines.append("File: %s" % filename)
    lines.append("Type: %s" % type(obj).__name__)
    return "\n".join(lines)


def _name_at(code, cursor):
    """The dotted name under the cursor, or the callee of the call the cursor
    is in (`print(` -> print)."""
    re = _lazy("re")
    left = re.search(r"[A-Za-z_][\w.]*$", code[:cursor])
    right = re.match(r"\w*", code[cursor:])
    name = (left.group(0) if left else "") + (right.group(0) if right else "")
    name = name.strip(".")
    if name and all(part.isidentifier() for part in name.split(".")):
        return name
    depth = 0
    for i in range(cursor - 1, -1, -1):
        char = code[i]
        if char == ")":
            depth += 1
        elif char == "(":
            if depth == 0:
                callee = re.search(r"[A-Za-z_][\w.]*$", code[:i])
                return callee.group(0).strip(".") if callee else None
            depth -= 1
    return None


def _inspect(content):
    code = str(content.get("code", ""))
    cursor = _cursor(content, code)
    level = int(content.get("detail_level", 0) or 0)
    name = _name_at(code, cursor)
    text = _inspect_text(name, level) if name else None
    if text is None:
        return {"status": "ok", "found": False, "data": {}, "metadata": {}}
    return {"status": "ok", "found": True, "data": {"text/plain": text}, "metadata": {}}


def _cursor(content, code):
    cursor = content.get("cursor_pos")
    if cursor is None or not 0 <= int(cursor) <= len(code):
        return len(code)
    return int(cursor)


_module_names_cache = None


def _top_level_modules():
    global _module_names_cache
    if _module_names_cache is None:
        pkgutil = _lazy("pkgutil")
        names = set(sys.builtin_module_names)
        names.update(info.name for info in pkgutil.iter_modules())
        names.update(name.split(".")[0] for name in list(sys.modules))
        _module_names_cache = sorted(n for n in names if n.isidentifier())
    return _module_names_cache


def _submodules(package_name):
    """Names under package_name: its submodules and module attributes."""
    if _module_denied(package_name) is not None:
        return []
    importlib = _lazy("importlib")
    pkgutil = _lazy("pkgutil")
    try:
        module = importlib.import_module(package_name)
    except Exception:
        return []
    names = set()
    path = getattr(module, "__path__", None)
    if path is not None:
        names.update(info.name for info in pkgutil.iter_modules(path))
    types = _lazy("types")
    for attr, value in list(vars(module).items()):
        if isinstance(value, types.ModuleType):
            names.add(attr)
    return sorted(names)


def _complete_module(dotted):
    if "." not in dotted:
        candidates = _top_level_modules()
        prefix = dotted
        base = ""
    else:
        parent, _, prefix = dotted.rpartition(".")
        candidates = _submodules(parent)
        base = parent + "."
    matches = [base + name for name in candidates if name.startswith(prefix)
               and _module_denied(base + name) is None]
    if not prefix.startswith("_"):
        matches = [m for m in matches if not m.rpartition(".")[2].startswith("_")]
    return matches


def _complete_names(prefix):
    keyword = _lazy("keyword")
    names = set(_state.ns)
    real = vars(builtins)
    # hidden helpers are not offered: only real builtins and user names
    names.update(name for name in _state.builtins if name in real)
    names.update(_state.tool_bare)  # the host's tools are meant to be found
    names.update(keyword.kwlist)
    matches = [n for n in names if n.startswith(prefix)]
    if not prefix.startswith("_"):
        matches = [n for n in matches if not n.startswith("_")]
    return sorted(matches)


def _complete_attributes(expression, prefix):
    try:
        obj = _resolve(expression)
    except LookupError:
        return []
    try:
        names = dir(obj)
    except Exception:
        return []
    matches = [n for n in names if isinstance(n, str) and n.startswith(prefix)]
    if not prefix.startswith("_"):
        matches = [n for n in matches if not n.startswith("_")]
    return ["%s.%s" % (expression, n) for n in sorted(set(matches))]


def _complete(content):
    re = _lazy("re")
    code = str(content.get("code", ""))
    cursor = _cursor(content, code)
    before = code[:cursor]
    line = before.rsplit("\n", 1)[-1]
    matches = []
    start = cursor
    import_line = re.match(r"\s*(?:import\s+(?:[\w.]+\s*,\s*)*|from\s+)([\w.]*)$", line)
    from_import = re.match(r"\s*from\s+([\w.]+)\s+import\s+(?:\w+\s*,\s*)*(\w*)$", line)
    if from_import:
        module, prefix = from_import.groups()
        start = cursor - len(prefix)
        matches = _from_import_names(module, prefix)
    elif import_line:
        dotted = import_line.group(1)
        start = cursor - len(dotted)
        matches = _complete_module(dotted)
    else:
        token = re.search(r"[A-Za-z_][\w.]*$|(?<![\w.])$", before)
        text = token.group(0) if token else ""
        start = cursor - len(text)
        if token is None:
            matches = []
        elif "." in text:
            expression, _, prefix = text.rpartition(".")
            matches = _complete_attributes(expression, prefix)
        else:
            matches = _complete_names(text)
    if not matches and not (import_line or from_import):
        start, matches = _ipython_complete(code, cursor)
    return {"status": "ok", "matches": matches, "cursor_start": start, "cursor_end": cursor,
            "metadata": {}}


def _ipython_complete(code, cursor):
    """What kennel's own rules leave out, from IPython's completer: paths in
    strings, keyword arguments (`f(na` -> `name=`), magics. (cursor start,
    matches); private names only when asked for, as above."""
    line_start = code.rfind("\n", 0, cursor) + 1
    try:
        text, matches = _ipython().complete(None, code[line_start:cursor], cursor - line_start)
    except Exception:
        return cursor, []
    if not text.rpartition("/")[2].startswith("_"):
        matches = [m for m in matches if not m.rpartition("/")[2].lstrip("%").startswith("_")]
    return cursor - len(text), list(matches)


def _from_import_names(module, prefix):
    if _module_denied(module) is not None:
        return []
    names = set(_submodules(module))
    loaded = sys.modules.get(module)
    if loaded is not None:
        names.update(n for n in dir(loaded) if isinstance(n, str))
    matches = [n for n in names if n.startswith(prefix)]
    if not prefix.startswith("_"):
        matches = [n for n in matches if not n.startswith("_")]
    return sorted(matches)


def _is_complete(content):
    """IPython's TransformerManager.check_complete: magics, `?`, and a cell
    ended by an auto-indented blank line is complete, as in ipykernel."""
    code = str(content.get("code", ""))
    status, indent = _ipython().input_transformer_manager.check_complete(code)
    if status == "incomplete":
        return {"status": status, "indent": " " * (indent or 0)}
    return {"status": status}


# ---- history, kernel_info ----------------------------------------------------

def _history(content):
    access = content.get("hist_access_type", "tail")
    output = bool(content.get("output", False))
    entries = list(_state.history)
    if access == "tail":
        n = content.get("n")
        if n is not None:
            entries = entries[-int(n):] if int(n) > 0 else []
    elif access == "range":
        session = int(content.get("session", 0) or 0)
        if session not in (0, _SESSION):
            entries = []
        start = int(content.get("start", 0) or 0)
        stop = content.get("stop")
        entries = [e for e in entries
                   if e[1] >= start and (stop is None or e[1] < int(stop))]
    elif access == "search":
        fnmatch = _lazy("fnmatch")
        pattern = str(content.get("pattern", "*") or "*")
        entries = [e for e in entries if fnmatch.fnmatchcase(e[2], pattern)]
        if content.get("unique"):
            seen = set()
            kept = []
            for entry in reversed(entries):
                if entry[2] not in seen:
                    seen.add(entry[2])
                    kept.append(entry)
            entries = kept[::-1]
        n = content.get("n")
        if n is not None:
            entries = entries[-int(n):] if int(n) > 0 else []
    else:
        entries = []
    if output:
        history = [[s, line, [source, out]] for s, line, source, out in entries]
    else:
        history = [[s, line, source] for s, line, source, _ in entries]
    return {"status": "ok", "history": history}


def _kernel_info():
    version = "%d.%d.%d" % sys.version_info[:3]
    return {
        "status": "ok",
        "protocol_version": "5.3",
        "implementation": "kennel",
        "implementation_version": _VERSION,
        "language_info": {
            "name": "python",
            "version": version,
            "mimetype": "text/x-python",
            "file_extension": ".py",
            "pygments_lexer": "ipython3",
            "codemirror_mode": {"name": "ipython", "version": sys.version_info[0]},
            "nbconvert_exporter": "python",
        },
        "banner": "Python %s (kennel %s, builtins profile %r)\n" % (
            sys.version.split("\n")[0], _VERSION, _state.profile),
        "help_links": [
            {"text": "Python Reference",
             "url": "https://docs.python.org/%d.%d" % sys.version_info[:2]},
        ],
    }


# ---- entry points (called by the C side) -------------------------------------

def _sigint(signum, frame):
    """SIGINT interrupts user code; one that comes during an execute_request
    before its code runs (a front end's stop pressed at execute_input, while
    the cell compiles) interrupts the cell as it starts, as ipykernel's
    does; when the kernel is idle or busy with other requests it is ignored."""
    if _state.running_user_code:
        raise KeyboardInterrupt
    if _state.request is not None and _state.request.msg_type == "execute_request":
        _state.interrupt_pending = True


def configure(settings_json):
    """Called once by the C side after start: the builtins profile, the
    import policy, the host's tools and the kernel's settings."""
    global _FUTURE_FLAGS
    settings = json.loads(settings_json or "{}") or {}
    if not isinstance(settings, dict):
        raise ValueError("kernel settings must be a JSON object")
    profile = settings.get("builtins", "agent")
    if profile not in _PROFILES:
        raise ValueError("unknown builtins profile %r (expected one of %s)"
                         % (profile, ", ".join(_PROFILES)))
    _state.profile = profile
    _state.settings = settings
    _state.main_thread = _thread.get_ident()
    imports = settings.get("imports") or {}
    if not isinstance(imports, dict) or ("deny" in imports and "allow" in imports):
        raise ValueError("imports must be {\"deny\": [...]} or {\"allow\": [...]}")
    default_deny = _DEFAULT_DENY if profile == "agent" else _ALWAYS_DENY
    if profile == "none":
        default_deny = ()
    _state.policy_deny = frozenset(str(m) for m in imports.get("deny", ()))
    _state.deny = frozenset(default_deny) | _state.policy_deny
    if "allow" in imports:
        _state.allow = frozenset(str(m) for m in imports["allow"])
    _FUTURE_FLAGS = _future_flags()

    _install_helpers()
    _state.builtins = _build_builtins(profile)
    _set_tools(settings.get("tools", []), settings.get("tool_timeout"))
    types = _lazy("types")
    _state.main = types.ModuleType("__main__")
    _state.ns = _state.main.__dict__
    _prepare_namespace()
    _configure_shell(profile, settings)

    os.environ["MPLBACKEND"] = "Agg"  # no GUI: figures are sent as PNG
    sys.meta_path.insert(0, _ImportWatch)
    for name, hook in _POST_IMPORT.items():
        if name in sys.modules:
            hook(sys.modules[name])

    out_stream = _make_out_stream_class()
    sys.stdout = out_stream("stdout", 1)
    sys.stderr = out_stream("stderr", 2)
    sys.stdin = _StdinReader()
    # libraries (pdb, cmd, getpass users) read through the stdin channel too
    builtins.input = _input
    getpass = _lazy("getpass")
    getpass.getpass = _getpass
    signal = _lazy("signal")
    signal.signal(signal.SIGINT, _sigint)
    os.register_at_fork(after_in_child=_after_fork_in_child)
    if profile == "notebook":
        # a person's front end asks for completions while they type and for
        # the history at start, each with a short timeout (jupyter console:
        # 1 s for the history, then a late reply is read as the answer to its
        # next request): the shell is ready before the first reply, as in
        # ipykernel. An agent's kernel (other profiles) answers first.
        _ipython()
    return None


def dispatch(msg_type, content_json, header_json, buffers=()):
    """One shell request (buffers: its binary frames as memoryviews). Returns (reply type, reply content JSON, reply
    metadata JSON, abort queue) or None when the request has no reply."""
    reply_type = msg_type[:-len("_request")] + "_reply" if msg_type.endswith("_request") else None
    try:
        content = json.loads(content_json or "{}") or {}
        header = json.loads(header_json or "{}") or {}
        if not isinstance(content, dict) or not isinstance(header, dict):
            raise ValueError("content and header must be JSON objects")
    except ValueError as exc:
        return _internal_error(reply_type, exc) if reply_type else None
    request = _Request(msg_type, content, header)
    _state.request = _state.parent = request
    try:
        abort = False
        if msg_type == "execute_request":
            reply_type, reply, abort = _execute(request)
        elif msg_type == "kernel_info_request":
            reply = _kernel_info()
        elif msg_type == "complete_request":
            reply = _complete(content)
        elif msg_type == "inspect_request":
            reply = _inspect(content)
        elif msg_type == "is_complete_request":
            reply = _is_complete(content)
        elif msg_type == "history_request":
            reply = _history(content)
        elif msg_type == "comm_info_request":
            reply = {"status": "ok", "comms": _comm_manager.info(content.get("target_name"))}
        elif msg_type == "kennel_configure_request":
            reply = _kennel_configure(content)
        elif msg_type == "shutdown_request":
            reply = {"status": "ok", "restart": bool(content.get("restart", False))}
        elif msg_type in ("comm_open", "comm_msg", "comm_close"):
            _comm_manager.handle(msg_type, content, header, buffers)
            _streams.flush()
            return None
        else:
            return None
        _streams.flush()
        return reply_type, _dumps(reply), "{}", abort
    except BaseException as exc:  # never let an exception escape into C
        try:
            _streams.flush()
        except BaseException:
            pass
        if reply_type is None:
            return None
        return _internal_error(reply_type, exc)
    finally:
        _state.request = None
        _state.running_user_code = False
        _state.interrupt_pending = False


def _internal_error(reply_type, exc):
    content = {"status": "error", "ename": "KennelInternalError",
               "evalue": "%s: %s" % (type(exc).__name__, exc),
               "traceback": ["kennel's kernel failed to handle this request: %s: %s"
                             % (type(exc).__name__, exc)]}
    if reply_type == "execute_reply":
        content.update(execution_count=_state.count - 1, payload=[], user_expressions={})
    return reply_type, _dumps(content), "{}", False


# ---- start-up -------------------------------------------------------------------

# Modules that configure() and the execute path import lazily. configure()
# (getpass, signal: ~4 ms) runs after the fork server's fork, and the first
# execution imported the rest (linecache, tokenize, token, ast: ~4 ms
# unconfined, ~8 ms in the sandbox, where every file open crosses the mount
# namespace and Landlock). kernel.py is loaded by pykernel_prepare, i.e. in
# the fork server before it forks, so paying here takes that off every
# conversation's start.
_WARM_MODULES = ("linecache", "io", "tokenize", "ast", "__future__", "traceback", "getpass", "signal",
                 "types")


def _warm_up():
    """Runs the execute path's one-time work on a throwaway cell: no user
    namespace, no history, nothing published."""
    for name in _WARM_MODULES:
        _lazy(name)
    _compile_cell("_ = 1\n_", "<kennel warm-up>")
    _ipython_may_rewrite("_ = 1\n_")
    _dumps({"status": "ok", "execution_count": 0, "payload": [], "user_expressions": {}})


def preload():
    """Called by the C side in a fork server before it forks
    (pykernel_prepare): the shell, built once, shared by every kernel it
    forks. IPython's transformers and check_complete compile their patterns
    on first use: here too, once, rather than in each kernel."""
    shell = _ipython()
    _transform("%time _ = 1\n")
    shell.input_transformer_manager.check_complete("_ = 1")


_look_like_ipython()
_warm_up()
