"""The C side's entry points: configure(), dispatch(), preload() and the
kernel_info content; and the start-up work done once when the package loads
(before a fork server forks): the execute path's imports and a throwaway
cell."""

import _thread
import builtins
import json
import os
import sys

from .base import (
    _ALWAYS_DENY, _DEFAULT_DENY, _ImportWatch, _POST_IMPORT, _PROFILES, _Request, _VERSION, _ipython,
    _lazy, _state)
from .streams import (
    _StdinReader, _after_fork_in_child, _dumps, _getpass, _input, _make_out_stream_class, _streams)
from .tools import _kennel_configure, _set_tools
from .policy import _build_builtins, _install_helpers
from .history import _history
from .introspect import _complete, _inspect, _is_complete
from .execute import (
    _compile_cell, _configure_future, _execute, _ipython_may_rewrite, _prepare_namespace,
    _transform)
from .comms import _comm_manager
from .ipython import _configure_shell, _look_like_ipython


# ---- kernel_info ---------------------------------------------------------------

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
    _configure_future()

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
# namespace and Landlock). The package is loaded by pykernel_prepare, i.e. in
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
