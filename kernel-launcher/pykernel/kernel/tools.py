"""Host tools: the host's tool declarations checked against the one rule
(docs/PROTOCOL.md section 8), made into functions (the `kennel` helper's,
hidden in the builtins) whose calls go to the host over stdin as
`tool_request`; `kennel_configure_request`."""

import builtins
import json
import os

from .base import _OWN_FILE, _TOOL_BACKSTOP_SECONDS, _TOOL_DEFAULT_TIMEOUT, _lazy, _state, _stdin_request
# _publish is not used here: tests/gateway/test_limits.py plays hostile code
# that takes it from ToolError.__init__.__globals__ (the helper namespace is
# hidden, not unreachable) to check that the gateway's output limits hold
# whatever a kernel publishes.
from .streams import _publish, _streams  # noqa: F401


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
    # compiled as the kernel's files are, so tracebacks leave the tool's frame out
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
