"""kennel's Python kernel, its base: the state it keeps between requests,
the `_kennel` functions, the import watch and the way to the IPython shell.

The kernel package (this folder, README.md) is compiled into the binary; the
C side loads its modules in order, each importing only from those before it,
and none stays in sys.modules. The C side calls the last one's (kernel.py)
configure(settings_json) once, then dispatch(msg_type, content_json,
header_json, buffers) for every shell request, and gives this module the
`_kennel` module (publish, stdin_request, write_stream, flush_output).

User code runs in one persistent namespace (the `__main__` module). Its
`__builtins__` is a private mapping: the builtins of the chosen profile plus
the hidden helpers (display, get_ipython, `_`), which therefore resolve by
name but are not in globals(), dir() or vars()."""

import _thread
import sys

import _kennel


_publish_raw = _kennel.publish
_stdin_request = _kennel.stdin_request
_write_stream = _kennel.write_stream
_flush_output = _kennel.flush_output
sys.modules.pop("_kennel", None)
del _kennel

# Frames whose code comes from the kernel package are kennel's machinery:
# tracebacks shown to the user leave them out (every module is compiled with
# this one file name).
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
        self.shell = None            # IPython's shell, once built (_ipython())
        self.xmode_at_start = None   # its traceback mode when it was built
        # builds the shell and sets .shell: given at load by the IPython bridge
        # (ipython.py), which needs most of the kernel
        self.build_shell = None
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


# module name -> hook(module) run when it has loaded; the modules that patch
# a library add theirs (display: IPython's display and matplotlib; network:
# socket; comms: ipykernel.comm; ipython: IPython)
_POST_IMPORT = {}
# module name -> loader of a module kennel makes (display: the inline backend)
_MADE_MODULES = {}


class _ImportWatch:
    """First on sys.meta_path: refuses the kernel's C module to everyone,
    makes the modules of _MADE_MODULES (kennel's matplotlib backend), and
    runs the hooks of _POST_IMPORT when their modules load (IPython's display
    functions, matplotlib and pyplot.show patched, for libraries too, not
    only for imports in cells)."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname.split(".")[0] in _ALWAYS_DENY:
            raise ImportError("import of %r is not allowed: it is internal to kennel (no policy "
                              "allows it)" % fullname, name=fullname)
        loader = _MADE_MODULES.get(fullname)
        if loader is not None:
            return _lazy("importlib.machinery").ModuleSpec(fullname, loader)
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


def get_ipython():
    """The IPython shell of this kernel."""
    return _ipython()


_shell_lock = _thread.RLock()


def _ipython():
    """The shell, built now if it does not exist yet. Returns None only to a
    call made while it is being built (an import of IPython by the build
    itself)."""
    if _state.shell is None:
        with _shell_lock:
            if _state.shell is None and not _state.shell_building:
                _state.build_shell()
    return _state.shell


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
