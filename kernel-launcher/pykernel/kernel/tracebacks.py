"""Tracebacks: an error's content with kennel's own frames left out,
IPython's formatting when the shell's colours or mode ask for it, and %pdb's
post-mortem debugger."""

import sys

from .base import _OWN_FILE, _ipython, _lazy, _state
from .streams import _publish


def _strip_kennel_frames(exc, seen=None):
    """Drop the kernel's own frames from exc's traceback (and its chain's)."""
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
    if _state.shell is None:
        return _state.colors != "NoColor"
    return _state.shell.colors != "NoColor" or _state.shell.InteractiveTB.mode != _state.xmode_at_start


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


def _post_mortem(request):
    """%pdb on: the debugger after an error, through stdin when served."""
    if _state.shell is None or not _state.shell.call_pdb or not request.allow_stdin:
        return  # %pdb is a magic: no shell, no %pdb
    _state.running_user_code = True
    try:
        _state.shell.debugger(force=True)
    except BaseException as exc:
        sys.stderr.write("kennel: the debugger ended: %s: %s\n" % (type(exc).__name__, exc))
    finally:
        _state.running_user_code = False
