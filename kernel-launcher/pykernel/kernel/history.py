"""The in-memory history: In / Out and the _i / _iN / _N variables, kept
hidden before and after IPython's shell exists, and `history_request`."""

import os

from .base import _SESSION, _lazy, _state


_OUT_CACHE_SIZE = 1000           # results kept in Out, as IPython's displayhook


def _hide(names):
    """Names IPython puts in the user namespace (In, Out, _i, _iN, _N): kept
    in the private builtins mapping instead, like the other hidden helpers."""
    if _state.builtins is not None:
        _state.builtins.update(names)


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
    return _state.shell.history_manager if _state.shell is not None else _state.inputs


def _show_history(history):
    """In, Out, _ih, _oh, _dh as hidden helpers naming history's lists."""
    names = {"_ih": history.input_hist_parsed, "_oh": history.output_hist,
             "_dh": history.dir_hist, "In": history.input_hist_parsed,
             "Out": history.output_hist}
    _state.helpers.update(names)
    _hide(names)
    return names


# ---- history_request ---------------------------------------------------------

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
