"""Shell escapes (!cmd, x = !cmd, %sx, %pip): refused when the profile
turns them off or pip has no package source, run otherwise."""

import os
import sys

from .base import _lazy, _state
from .streams import _streams
from .network import _network_reachable
from .policy import _OTHER_PROFILES, _policy_fix


_PIP_INSTALL = None              # compiled on first use
_PIP_SOURCE_ENV = ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONFIG_FILE")
# a package source pip's refusal names: wheels the workspace holds
_PIP_WHEELS_ENV = {"PIP_FIND_LINKS": "/workspace/wheels", "PIP_NO_INDEX": "1",
                   "PIP_BREAK_SYSTEM_PACKAGES": "1"}
_PIP_SOURCE_ARGS = ("--find-links", "-f", "--index-url", "-i", "--no-index", "--extra-index-url")


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
