"""Builtins profiles and the import policy: the private builtins mapping
user code gets (hidden helpers included), exit / quit, and which imports are
denied and why."""

import builtins
import json

from .base import _ALWAYS_DENY, _DEFAULT_DENY, _state, get_ipython
from .streams import _input, _write_payload
from .tools import ToolError, tools
from .display import display


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


def _ask_exit(keep_kernel):
    """exit / quit in the notebook profile: the reply asks the front end to
    close (an `ask_exit` payload, as ipykernel's); jupyter console then
    quits, and shuts the kernel down unless keepkernel. The kernel itself
    goes on until its front end or gateway stops it."""
    _write_payload({"source": "ask_exit", "keepkernel": keep_kernel})


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
