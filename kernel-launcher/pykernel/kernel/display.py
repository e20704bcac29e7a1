"""Rich output: objects' `_repr_*_` methods and IPython's formatters to MIME
bundles, display / update_display / clear_output and execute results; and
the patches that route IPython's display functions and matplotlib (kennel's
inline backend, figures shown at the end of a cell) through them."""

import json
import sys

from .base import _MADE_MODULES, _POST_IMPORT, _ipython, _lazy, _state
from .streams import _publish, _quiet


# ---- rich output -------------------------------------------------------------

_REPR_METHODS = (
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
    ("application/javascript", "_repr_javascript_"),
    ("application/pdf", "_repr_pdf_"),
)
_BINARY_MIMES = ("image/png", "image/jpeg", "application/pdf")


def _warn_repr(obj, method, exc):
    sys.stderr.write("kennel: %s.%s() raised %s: %s; that representation is left out\n"
                     % (type(obj).__name__, method, type(exc).__name__, exc))


def _encode_mime(mime, value):
    """JSON-ready form of one representation (binary data as base64)."""
    if mime in _BINARY_MIMES and isinstance(value, (bytes, bytearray)):
        return _lazy("base64").b64encode(bytes(value)).decode("ascii")
    if mime == "application/json":
        if isinstance(value, str):
            value = json.loads(value)
        json.dumps(value)  # refuse what cannot be sent, here, with a clear error
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return value


def _split_repr(result):
    """A _repr_*_ result may be data or (data, metadata)."""
    if isinstance(result, tuple) and len(result) == 2:
        return result[0], result[1]
    return result, None


def _is_figure(obj):
    figure = sys.modules.get("matplotlib.figure")
    return figure is not None and isinstance(obj, figure.Figure)


def _figure_png(fig):
    io = _lazy("io")
    buf = io.BytesIO()
    fig.canvas.print_figure(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def _plain_text(obj):
    """text/plain like IPython: _repr_pretty_ if defined, pretty-printed
    containers, else repr()."""
    if getattr(type(obj), "_repr_pretty_", None) is not None and not isinstance(obj, type):
        try:
            pretty = _lazy("IPython.lib.pretty")
            return pretty.pretty(obj, max_width=79)
        except ImportError:
            pass
    if type(obj) in (dict, list, tuple, set, frozenset):
        if len(obj) > _MAX_ITEMS:
            return _short_repr().repr(obj)  # like IPython: not a million items
        text = repr(obj)
        if len(text) > 79:
            return _lazy("pprint").pformat(obj, width=79, sort_dicts=False)
        return text
    return repr(obj)


_MAX_ITEMS = 1000
_short_repr_instance = None


def _short_repr():
    global _short_repr_instance
    if _short_repr_instance is None:
        reprlib = _lazy("reprlib")
        short = reprlib.Repr()
        short.maxlist = short.maxtuple = short.maxset = short.maxfrozenset = short.maxdict = \
            _MAX_ITEMS
        short.maxlevel = 6
        short.maxstring = short.maxother = short.maxlong = 10 ** 6
        _short_repr_instance = short
    return _short_repr_instance


def _format(obj, include=None, exclude=None):
    """(data, metadata) MIME bundle of obj; text/plain is always there."""
    data, metadata = {}, {}
    if not isinstance(obj, type):
        method = _safe_attr(obj, "_repr_mimebundle_")
        if callable(method):
            try:
                result = method(include=include, exclude=exclude)
            except Exception as exc:
                _warn_repr(obj, "_repr_mimebundle_", exc)
                result = None
            bundle, md = _split_repr(result)
            if isinstance(bundle, dict):
                for mime, value in bundle.items():
                    try:
                        data[mime] = _encode_mime(mime, value)
                    except Exception as exc:
                        _warn_repr(obj, "_repr_mimebundle_[%s]" % mime, exc)
            if isinstance(md, dict):
                metadata.update(md)
        for mime, name in _REPR_METHODS:
            if mime in data:
                continue
            method = _safe_attr(obj, name)
            if not callable(method):
                continue
            try:
                value, md = _split_repr(method())
                if value is None:
                    continue
                data[mime] = _encode_mime(mime, value)
            except Exception as exc:
                _warn_repr(obj, name, exc)
                continue
            if md is not None:
                metadata[mime] = md
        if "image/png" not in data and _is_figure(obj):
            data["image/png"] = _encode_mime("image/png", _figure_png(obj))
            request = _state.request
            if request is not None:
                request.shown_figures.add(id(obj))
    data.update(_registered_formats(obj, data))
    if "text/plain" not in data:
        data["text/plain"] = _plain_text(obj)
    if include:
        data = {k: v for k, v in data.items() if k in include or k == "text/plain"}
    if exclude:
        data = {k: v for k, v in data.items() if k not in exclude or k == "text/plain"}
    return data, metadata


def _registered_formats(obj, data):
    """Representations libraries registered with IPython's formatters for
    obj's type (sympy's init_printing, for_type calls), and %precision for
    floats; IPython's built-in pretty printers are left to _plain_text.
    Nothing is registered before the shell exists (registering goes through
    it, and importing IPython builds it)."""
    if _state.shell is None:
        return {}
    pretty = _lazy("IPython.lib.pretty")
    found = {}
    for mime, formatter in _state.shell.display_formatter.formatters.items():
        if mime in data and mime != "text/plain":
            continue
        try:
            printer = formatter.lookup(obj)
        except KeyError:
            continue
        except Exception:
            continue
        default = pretty._type_pprinters.get(type(obj))
        if mime == "text/plain" and (printer is default or
                                    (isinstance(obj, float) and not formatter.float_precision)):
            continue
        try:
            value = formatter(obj)
        except Exception as exc:
            _warn_repr(obj, "IPython formatter %s" % mime, exc)
            continue
        if value is not None:
            found[mime] = _encode_mime(mime, value)
    return found


def _safe_attr(obj, name):
    """getattr that survives objects with odd __getattr__ (proxies, mocks)."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _new_display_id():
    return _lazy("uuid").uuid4().hex


class DisplayHandle:
    """A display that can be updated later (display(..., display_id=...))."""

    def __init__(self, display_id=None):
        self.display_id = display_id if display_id is not None else _new_display_id()

    def __repr__(self):
        return "<DisplayHandle display_id=%s>" % self.display_id

    def display(self, obj, **kwargs):
        display(obj, display_id=self.display_id, **kwargs)

    def update(self, obj, **kwargs):
        display(obj, display_id=self.display_id, update=True, **kwargs)


def display(*objs, include=None, exclude=None, metadata=None, transient=None,
            display_id=None, raw=False, clear=False, update=False, **kwargs):
    """Show objects in the front end, as rich as they can be (HTML, images,
    ...). display_id=True (or a string) returns a handle to update it."""
    if clear:
        clear_output(wait=True)
    if display_id is True:
        display_id = _new_display_id()
    if update and not display_id:
        raise TypeError("display(update=True) needs a display_id")
    transient = dict(transient or {})
    if display_id:
        transient["display_id"] = display_id
    for obj in objs:
        if raw:
            data, md = dict(obj), {}
        elif _displays_itself(obj):
            continue
        else:
            data, md = _format(obj, include, exclude)
        if metadata:
            md.update(metadata)
        _display_pub().publish(data, md, transient=transient, update=update)
    if display_id:
        return DisplayHandle(display_id)
    return None


def _displays_itself(obj):
    """IPython's protocol for objects that publish their own output
    (`_ipython_display_`): call it, and show nothing else for them."""
    if isinstance(obj, type):
        return False
    method = _safe_attr(obj, "_ipython_display_")
    if not callable(method):
        return False
    method()
    return True


def _display_pub():
    """Where displays go: the shell's display_pub once the shell exists
    (%%capture swaps it), iopub before."""
    return _state.shell.display_pub if _state.shell is not None else _DirectDisplay


class _DirectDisplay:
    """The display publisher before IPython's shell exists."""

    @staticmethod
    def publish(data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
        # IPython's formatters give a PNG as bytes (ipykernel base64s it)
        data = {mime: _encode_mime(mime, value) for mime, value in data.items()}
        _publish_display(data, metadata or {}, transient, update)

    @staticmethod
    def clear_output(wait=False):
        _publish_clear(wait)


def _publish_display(data, metadata, transient=None, update=False):
    if _quiet():
        return
    content = {"data": data, "metadata": metadata or {}}
    if transient or update:
        content["transient"] = transient or {}
    _publish("update_display_data" if update else "display_data", content)


def update_display(obj, *, display_id, **kwargs):
    """Replace what an earlier display(..., display_id=...) showed."""
    kwargs["update"] = True
    display(obj, display_id=display_id, **kwargs)


def clear_output(wait=False):
    """Clear this cell's output (wait=True: when the next output arrives)."""
    _display_pub().clear_output(wait)


def _publish_clear(wait):
    if not _quiet():
        _publish("clear_output", {"wait": bool(wait)})


def _publish_display_data(data, metadata=None, source=None, *, transient=None, **kwargs):
    _display_pub().publish(dict(data), metadata or {}, transient=transient,
                           update=bool(kwargs.get("update")))


def _show_result(value, request, count):
    """The cell's last expression as execute_result; returns its text."""
    if request.silent or _displays_itself(value):
        return None
    data, md = _format(value)
    _publish("execute_result", {"execution_count": count, "data": data, "metadata": md})
    return data.get("text/plain")


# ---- IPython and matplotlib compatibility -----------------------------------

def _patch_ipython_display(module):
    """IPython's display() only prints when no IPython shell runs: send its
    display functions to ours."""
    module.display = display
    module.update_display = update_display
    module.clear_output = clear_output
    module.publish_display_data = _publish_display_data


# matplotlib: figures reach the front end through kennel's own backend,
# module://kennel_inline (an Agg canvas), the kernel's default as ipykernel's
# is matplotlib_inline's, and decided as that one decides: plt.show() under it
# shows every open figure; at the end of a cell the open figures are shown
# if one was made under it in interactive mode (on from its first figure, as
# the inline backend's activation sets it; plt.ioff() stops it). Under
# another backend (matplotlib.use("Agg"), "svg", ...) nothing is shown, as
# in ipykernel. The processes the kernel starts keep MPLBACKEND=Agg.

_INLINE_BACKEND = "kennel_inline"            # the module matplotlib loads
_INLINE_BACKEND_NAME = "module://" + _INLINE_BACKEND


class _InlineBackendLoader:
    """Makes the kennel_inline module when matplotlib first loads it (so
    `import matplotlib` alone does not import the Agg backend)."""

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        agg = _lazy("matplotlib.backends.backend_agg")
        module.__doc__ = "kennel's matplotlib backend: figures as PNG images in the front end."
        module.FigureCanvas = agg.FigureCanvasAgg
        module.FigureManager = agg.FigureManager
        module.new_figure_manager = _mpl_new_figure_manager
        module.new_figure_manager_given_figure = _mpl_new_figure_manager_given_figure
        module.show = _mpl_backend_show


def _mpl_new_figure_manager(num, *args, FigureClass=None, **kwargs):
    if FigureClass is None:
        FigureClass = _lazy("matplotlib.figure").Figure
    return _mpl_new_figure_manager_given_figure(num, FigureClass(*args, **kwargs))


def _mpl_new_figure_manager_given_figure(num, figure):
    """A figure made under kennel's backend: shown at the end of the cell
    when matplotlib is interactive."""
    matplotlib = sys.modules["matplotlib"]
    if not _state.mpl_activated:
        # as the inline backend's first load does (IPython's activate_matplotlib)
        _state.mpl_activated = True
        matplotlib.interactive(True)
    manager = _lazy("matplotlib.backends.backend_agg").new_figure_manager_given_figure(num, figure)
    if matplotlib.is_interactive():
        _state.figures_pending = True
    return manager


def _mpl_backend_show(close=None, block=None):
    """plt.show() under kennel's backend: every open figure as image/png,
    then closed."""
    _show_figures()


def _patch_matplotlib(module):
    """kennel's backend is the kernel's default (user code may choose
    another with matplotlib.use, %matplotlib)."""
    module.use(_INLINE_BACKEND_NAME)


def _patch_matplotlib_inline(module):
    """matplotlib_inline's backend chosen by name (matplotlib.use(
    "module://matplotlib_inline.backend_inline")) shows its figures at the
    end of a cell as under ipykernel: its flush is a post_execute callback,
    which its import registers only when it already is the backend (as
    ipykernel's MPLBACKEND makes it); it shows nothing unless that backend
    made a figure."""
    shell = _ipython()
    if shell is not None and module.flush_figures not in shell.events.callbacks["post_execute"]:
        shell.events.register("post_execute", module.flush_figures)


def _patch_pyplot(module):
    """plt.show() under a backend that draws nothing for the front end
    (Agg, after matplotlib.use("Agg")) with figures open says so on stderr,
    naming the fix: ipykernel shows nothing there either, silently."""
    real_show = module.show

    def show(*args, **kwargs):
        result = real_show(*args, **kwargs)
        _explain_unshown_figures()
        return result

    show.__doc__ = real_show.__doc__
    show.__wrapped__ = real_show
    module.show = show


_MADE_MODULES[_INLINE_BACKEND] = _InlineBackendLoader
_POST_IMPORT.update({
    "IPython.core.display_functions": _patch_ipython_display,
    "matplotlib": _patch_matplotlib,
    "matplotlib.pyplot": _patch_pyplot,
    "matplotlib_inline.backend_inline": _patch_matplotlib_inline,
})


def _explain_unshown_figures():
    matplotlib = sys.modules.get("matplotlib")
    if matplotlib is None or not _lazy("matplotlib._pylab_helpers").Gcf.get_all_fig_managers():
        return
    backend = str(matplotlib.get_backend())
    if backend.lower() not in _lazy("matplotlib.rcsetup").non_interactive_bk:
        return
    sys.stderr.write("kennel: plt.show() showed nothing: matplotlib's backend is %r, which draws "
                     "no figure for the front end (matplotlib.use or MPLBACKEND chose it). kennel's "
                     "default backend sends figures as PNG: leave matplotlib.use(%r) out, or call "
                     "matplotlib.use(%r) or %%matplotlib inline; plt.savefig(\"plot.png\") writes "
                     "a file\n" % (backend, backend, _INLINE_BACKEND_NAME))


def _show_figures_at_cell_end():
    """As the inline backend's post-execute flush: the open figures, when
    one was made under kennel's backend in interactive mode since the last
    end of a cell."""
    if _state.figures_pending:
        _state.figures_pending = False
        _show_figures()


def _show_figures():
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    request = _state.request
    gcf = _lazy("matplotlib._pylab_helpers").Gcf
    managers = gcf.get_all_fig_managers()
    if not managers:
        return
    for manager in managers:
        fig = manager.canvas.figure
        if request is not None and id(fig) in request.shown_figures:
            continue
        if not _quiet():
            display(fig)
    pyplot.close("all")
