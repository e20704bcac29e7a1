"""Execution: a cell from source to `execute_reply`: IPython's transforms,
compiling (top-level await, __future__ imports kept across cells), running
in the user's namespace, results and their history, user_expressions, the
shell's events."""

import sys

# _publish_raw and _stdin_request are not used here: a cell's calling frame
# (_run_code's) has them among its globals, and tests/gateway/test_sockets.py
# and tests/tools/test_arguments.py play code that takes them from there, to
# check what the gateway does with what it sends. Leaving them out would hide
# nothing: any kernel function's __globals__ leads to base's.
from .base import _SESSION, _ipython, _lazy, _publish_raw, _state, _stdin_request  # noqa: F401
from .streams import _publish, _write_payload
from .display import _format, _show_figures_at_cell_end, _show_result
from .policy import _autocall_exit
from .history import _OUT_CACHE_SIZE, _input_history
from .tracebacks import _error_content, _show_error
from .introspect import _inspect_text


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


_FUTURE_FLAGS = 0               # every __future__ feature's flag, from configure()


def _configure_future():
    global _FUTURE_FLAGS
    _FUTURE_FLAGS = _future_flags()
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
    automagic = _state.shell.automagic if _state.shell is not None else _state.automagic
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
        if _state.shell is None:
            # what the one callback IPython registers itself does: a warning
            # from line N of this cell is not taken for one an earlier cell gave
            _state.ns.pop("__warningregistry__", None)
            return
        if not self._registered():
            return
        _state.shell.execution_count = self.count
        info = self._new_result().info
        _state.shell.events.trigger("pre_execute")
        _state.shell.events.trigger("pre_run_cell", info)

    def after(self, error):
        if _state.shell is None or not self._registered():
            return
        result = self.result if self.result is not None else self._new_result()
        if error is not None:
            result.error_in_exec = sys.last_value
        _state.shell.last_execution_succeeded = error is None
        _state.shell.last_execution_result = result
        _state.shell.events.trigger("post_execute")
        _state.shell.events.trigger("post_run_cell", result)

    @staticmethod
    def _registered():
        callbacks = _state.shell.events.callbacks
        return any(callbacks.get(event) for event in _CELL_EVENTS)

    def _new_result(self):
        interactiveshell = _lazy("IPython.core.interactiveshell")
        info = interactiveshell.ExecutionInfo(self.code, self.store, False, True, None)
        self.result = interactiveshell.ExecutionResult(info)
        return self.result
