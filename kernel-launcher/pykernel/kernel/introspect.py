"""Introspection: `complete_request`, `inspect_request` (and the text of
`obj?`), `is_complete_request`."""

import builtins
import sys

from .base import _OWN_FILE, _ipython, _lazy, _state
from .policy import _module_denied


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
