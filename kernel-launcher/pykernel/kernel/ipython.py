"""The IPython bridge: the shell behind get_ipython(), built on first need
(or by preload() in a fork server) and given the conversation, its display
hook and pager, the magics ipykernel adds, %load_ext under the import
policy, and the import of IPython itself."""

import builtins
import os
import sys

from .base import _InterruptsHeld, _POST_IMPORT, _VERSION, _ipython, _lazy, _state
from .streams import _write_payload
from .display import _DirectDisplay, _INLINE_BACKEND_NAME, _show_result, display
from .policy import _ask_exit, _module_denied
from .history import _HistoryStandIn, _hide, _show_history
from .execute import _set_last_results
from .escapes import _getoutput, _system
from .comms import _kernel_stand_in


# ---- the shell behind get_ipython() ------------------------------------------
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


def _shell_class():
    """InteractiveShell adapted to kennel (built inside a function: IPython is
    imported when it is first needed, not when this module loads)."""
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
            # IPython's own version also sets __IPYTHON__ (done when the kernel
            # loads: _look_like_ipython) and puts `display` into the builtins
            # module; kennel's helpers stay out of it
            self.builtin_trap = builtin_trap.BuiltinTrap(shell=self)

        def init_prompts(self):
            """IPython's sets sys.ps1/ps2/ps3, which _look_like_ipython set
            when the kernel loaded: nothing left to do."""

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
    if _state.shell is not None:
        _shell_attach(_state.shell)
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


def _load_extension(load, name):
    """%load_ext: only what the import policy lets user code import."""
    reason = _module_denied(str(name))
    if reason is not None:
        raise ImportError("%%load_ext %s is blocked: %s" % (name, reason), name=str(name))
    return load(name)


# ---- building the shell, and IPython's import -----------------------------------

def _build_shell():
    """Builds the shell and gives it the conversation (once configured)."""
    _state.shell_building = True
    try:
        with _InterruptsHeld():
            shell = _make_shell()
            _state.xmode_at_start = shell.InteractiveTB.mode
            if _state.main is not None:
                _shell_attach(shell)
            _state.shell = shell
            _state.inputs = None
    finally:
        _state.shell_building = False


_state.build_shell = _build_shell


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
