"""IPython syntax and API through the kernel's IPython shell (issue 16):
magics, shell escapes, history variables, `?`/`??`, pasted prompts,
%%capture, %timeit, get_ipython(). Shell escapes and the profiles run in
confined kernels (`kennel-launch --spec-fd`, default policy), where they
must stay inside the sandbox."""
import re

import pytest

from kernelclient import TIMEOUT, WHEEL_CELL, ConfinedKernel, built, stream_text

ANSI = re.compile(r"\x1b\[")


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """A confined kernel with builtins profile "notebook" (shell escapes on)."""
    kernel = ConfinedKernel(built("kernel-launcher/kennel-launch"), {"builtins": "notebook"},
                            str(tmp_path_factory.mktemp("notebook")))
    yield kernel.start()
    kernel.stop()


def ok(kernel, code, **kwargs):
    reply, outputs = kernel.execute(code, **kwargs)
    assert reply["status"] == "ok", reply
    return reply, outputs


def stderr_text(outputs):
    return "".join(m["content"]["text"] for m in outputs
                   if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")


# ---- line and cell magics ----------------------------------------------------

def test_timeit_prints_ipythons_format(kernel):
    _, outputs = ok(kernel, "%timeit -n 3 -r 2 sum(range(10))")
    text = stream_text(outputs).strip().split("\n")[-1]  # after a possible caching note
    assert re.search(r"^\d+(\.\d+)? [nµm]?s ± \d+(\.\d+)? [nµm]?s per loop "
                     r"\(mean ± std\. dev\. of 2 runs, 3 loops each\)$", text), text
    _, outputs = ok(kernel, "%%timeit -n 2 -r 1\ntotal = 0\nfor i in range(5):\n    total += i")
    assert "per loop (mean ± std. dev. of 1 run, 2 loops each)" in stream_text(outputs)


def test_time_returns_the_value_and_prints_times(kernel):
    reply, outputs = ok(kernel, "%time 6 * 7")
    assert "Wall time:" in stream_text(outputs)
    results = [m for m in outputs if m["msg_type"] == "execute_result"]
    assert results[-1]["content"]["data"]["text/plain"] == "42"


def test_capture_takes_output_and_displays(kernel):
    _, outputs = ok(kernel, "%%capture captured\nprint('kept aside')\n"
                            "display({'text/html': '<b>x</b>'}, raw=True)")
    assert outputs == []
    assert kernel.value("captured.stdout") == "'kept aside\\n'"
    assert kernel.value("len(captured.outputs)") == "1"


def test_precision_xmode_quickref_who(kernel):
    ok(kernel, "%precision 3")
    assert kernel.value("3.14159265") == "3.142"
    ok(kernel, "%precision")
    assert kernel.value("3.14159265") == "3.14159265"
    reply, _ = ok(kernel, "%quickref")
    assert "IPython -- An enhanced Interactive Python" in \
        reply["payload"][0]["data"]["text/plain"]
    ok(kernel, "who_am_i = 1")
    _, outputs = ok(kernel, "%who")
    assert "who_am_i" in stream_text(outputs) and "In" not in stream_text(outputs).split()
    _, outputs = ok(kernel, "%xmode Minimal")
    reply, outputs = kernel.execute("1/0")
    assert [line.strip() for line in reply["traceback"]] == ["ZeroDivisionError: division by zero"]
    ok(kernel, "%xmode Plain")


def test_matplotlib_magics(kernel):
    ok(kernel, "%matplotlib inline")
    _, outputs = ok(kernel, "%matplotlib notebook")
    assert "static PNG" in stderr_text(outputs)


def test_unknown_magic_is_a_usage_error_not_a_syntax_error(kernel):
    reply, _ = kernel.execute("%no_such_magic_here")
    assert reply["ename"] == "UsageError"
    assert "no_such_magic_here" in reply["evalue"]


def test_load_ext_obeys_the_import_policy(kernel):
    reply, _ = kernel.execute("%load_ext ctypes")
    assert reply["ename"] == "ImportError"
    assert "import policy" in reply["evalue"]
    ok(kernel, "%load_ext autoreload")
    ok(kernel, "%autoreload 2")


def test_colors_on_request(kernel, launch):
    reply, _ = kernel.execute("1/0")
    assert not ANSI.search("".join(reply["traceback"]))
    ok(kernel, "%colors Linux")
    reply, _ = kernel.execute("1/0")
    assert ANSI.search("".join(reply["traceback"]))
    assert reply["ename"] == "ZeroDivisionError"
    ok(kernel, "%colors NoColor")
    reply, _ = kernel.execute("1/0")
    assert not ANSI.search("".join(reply["traceback"]))
    colored = launch({"colors": "Linux"})
    reply, _ = colored.execute("1/0")
    assert ANSI.search("".join(reply["traceback"]))


def test_debug_runs_the_debugger_through_stdin(notebook):
    notebook.execute("def broken():\n    local_seven = 7\n    1/0\nbroken()")
    msg_id = notebook.kc.execute("%debug", allow_stdin=True)
    seen = []
    for answer in ("p local_seven", "q"):
        request = notebook.kc.get_stdin_msg(timeout=TIMEOUT)
        seen.append(request["content"]["prompt"])
        notebook.kc.input(answer)
    assert notebook.shell_reply(msg_id)["content"]["status"] == "ok"
    outputs = notebook.iopub_until_idle(msg_id)
    assert "ipdb> " in seen
    assert "7\n" in stream_text(outputs)


# ---- shell escapes -------------------------------------------------------------

def test_shell_escape_output_and_exit_status(notebook):
    _, outputs = ok(notebook, "!echo from-the-shell")
    assert stream_text(outputs) == "from-the-shell\n"
    ok(notebook, "!exit 3")
    assert notebook.value("_exit_code") == "3"
    ok(notebook, "files = !printf 'a\\nb\\n'; echo oops >&2")
    assert notebook.value("list(files)") == "['a', 'b', 'oops']"
    assert notebook.value("_exit_code") == "0"
    # Python variables expand into the command, as in IPython
    ok(notebook, "word = 'expanded'")
    _, outputs = ok(notebook, "!echo {word} $word")
    assert stream_text(outputs) == "expanded expanded\n"


def test_shell_escapes_run_inside_the_sandbox(notebook):
    """The child runs under the kernel's seccomp filter, no_new_privs and
    rlimits (the same sandbox, hence the conversation's limits)."""
    kernel_status = notebook.value(
        "[l for l in open('/proc/self/status').read().splitlines()"
        " if l.startswith(('NoNewPrivs', 'Seccomp:'))]")
    ok(notebook, "child = !grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status")
    assert notebook.value("list(child)") == kernel_status
    assert "'Seccomp:\\t2'" in kernel_status
    ok(notebook, "import resource; limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]")
    ok(notebook, "child_limit = !sh -c 'ulimit -n'")
    assert notebook.value("int(child_limit[0]) == limit") == "True"


def test_pip_install_without_network_says_where_packages_come_from(notebook):
    """The default policy has no network: pip is not even started."""
    assert notebook.value("[l.split(':')[0].strip() for l in "
                          "open('/proc/net/dev').read().splitlines()[2:]]") == "['lo']"
    for code in ("!pip install some-package", "%pip install some-package"):
        _, outputs = ok(notebook, code)
        text = stderr_text(outputs)
        assert "no network" in text and "image" in text and "PIP_FIND_LINKS" in text
        assert notebook.value("_exit_code") == "1"


def test_shell_escapes_are_off_in_the_agent_profile_unless_enabled(kernel, launch):
    for code in ("!echo hi", "x = !ls", "%pip install something"):
        reply, _ = kernel.execute(code)
        assert reply["ename"] == "PermissionError"
        # the fix named is the gateway's policy field (test_refusals.py applies it)
        assert '{"builtins": "notebook"}' in reply["evalue"]
    # a launch spec's own kernel setting (no gateway policy field)
    agent = launch({"builtins": "agent", "shell_escapes": True})
    _, outputs = ok(agent, "!echo allowed")
    assert stream_text(outputs) == "allowed\n"


# ---- history, help, prompts ----------------------------------------------------

def test_history_variables(fresh_kernel):
    kernel = fresh_kernel
    ok(kernel, "10 + 1")
    ok(kernel, "a_value = 5")
    ok(kernel, "a_value * 2")
    assert kernel.value("_i") == "'a_value * 2'"      # the previous input
    assert kernel.value("_ii") == "'a_value * 2'"  # two inputs back
    assert kernel.value("_iii") == "'a_value * 2'"
    assert kernel.value("_i2") == "'a_value = 5'"
    assert kernel.value("In[1]") == "'10 + 1'"
    assert kernel.value("Out[3]") == "10"
    assert kernel.value("_1 + _3") == "21"
    assert kernel.value("sorted(Out)[:2]") == "[1, 3]"
    # kept out of the user's namespace, like the other hidden helpers
    assert kernel.value("[n for n in ('In', 'Out', '_i', '_i1', '_1', '_ih', '_oh')"
                        " if n in globals()]") == "[]"


@pytest.mark.parametrize("code, expected", [
    ("len?", "Return the number of items"),
    ("?len", "Return the number of items"),
    ("len??", "Return the number of items"),
    ("x = 1\nlen?", "Return the number of items"),
    ("import collections\ncollections.Counter?", "Dict subclass for counting"),
    ("*int*?", "FloatingPointError"),
    ("?", "IPython -- An enhanced Interactive Python"),
    ("for i in range(2):\n    str.join?", "Concatenate any number of strings"),
])
def test_help_syntax_everywhere_ipython_takes_it(kernel, code, expected):
    reply, _ = ok(kernel, code)
    pages = [p["data"]["text/plain"] for p in reply["payload"] if p["source"] == "page"]
    assert pages and expected in pages[0], reply


@pytest.mark.parametrize("code", [
    ">>> pasted = 3\n>>> pasted * 2",
    "In [1]: pasted = 3\n\nIn [2]: pasted * 2",
    "In [7]: def pasted_f():\n   ...:     return 3\n   ...:\n\nIn [8]: pasted_f() * 2",
])
def test_pasted_prompts_are_stripped(kernel, code):
    reply, outputs = ok(kernel, code)
    assert [m["content"]["data"]["text/plain"] for m in outputs
            if m["msg_type"] == "execute_result"] == ["6"]


def test_is_complete_after_an_auto_indented_blank_line(kernel):
    msg_id = kernel.kc.is_complete("def f(n):\n    return n*2\n    ")
    assert kernel.shell_reply(msg_id)["content"]["status"] == "complete"
    msg_id = kernel.kc.is_complete("%%timeit\nx = 1")
    assert kernel.shell_reply(msg_id)["content"]["status"] == "incomplete"


def test_completion_of_paths_and_keyword_arguments(kernel):
    ok(kernel, "def kw_target(alpha_param=1, beta_param=2): pass")
    code = "kw_target(alp"
    msg_id = kernel.kc.complete(code, len(code))
    content = kernel.shell_reply(msg_id)["content"]
    assert "alpha_param=" in content["matches"]
    assert content["cursor_start"] == len("kw_target(")
    code = "open('/proc/sel"
    msg_id = kernel.kc.complete(code, len(code))
    content = kernel.shell_reply(msg_id)["content"]
    assert "/proc/self/" in content["matches"]


# ---- get_ipython() ---------------------------------------------------------------

def test_get_ipython_is_the_shell(kernel):
    assert kernel.value("from IPython import get_ipython as g; g() is get_ipython()") == "True"
    assert kernel.value("import IPython.core.interactiveshell as i; "
                        "isinstance(get_ipython(), i.InteractiveShell)") == "True"
    assert kernel.value("get_ipython().user_ns is globals()") == "True"
    assert kernel.value("get_ipython().run_line_magic('precision', '2')") == "'%.2f'"
    assert kernel.value("1.23456") == "1.23"
    ok(kernel, "get_ipython().run_line_magic('precision', '')")
    assert kernel.value("get_ipython().run_cell_magic('capture', 'cc', 'print(1)') or "
                        "cc.stdout") == "'1\\n'"


def test_get_ipython_kernel_attributes_without_sockets_or_keys(kernel):
    assert kernel.value("get_ipython().kernel.parent_header['header']['msg_type']") \
        == "'execute_request'"
    assert kernel.value("get_ipython().kernel.get_parent()['msg_type']") == "'execute_request'"
    _, outputs = ok(kernel, "k = get_ipython().kernel\n"
                            "k.session.send(k.iopub_socket, 'display_data', "
                            "{'data': {'text/plain': 'sent by hand'}, 'metadata': {}})")
    assert [m["content"]["data"] for m in outputs if m["msg_type"] == "display_data"] \
        == [{"text/plain": "sent by hand"}]
    # nothing on it is a socket, a context or a key
    assert kernel.value(
        "import gc, types\n"
        "k = get_ipython().kernel\n"
        "seen = [k, k.session, k.iopub_socket]\n"
        "[type(o).__name__ for o in seen for v in vars(o).values()"
        " if type(v).__module__.startswith('zmq') or isinstance(v, bytes)]") == "[]"
    assert kernel.value("hasattr(get_ipython().kernel.session, 'key')") == "False"


def test_events_reach_registered_callbacks(fresh_kernel):
    ok(fresh_kernel, "ran = []\nget_ipython().events.register('post_run_cell', "
                     "lambda result: ran.append(result.success))")
    fresh_kernel.execute("1/0")
    assert fresh_kernel.value("ran") == "[True, False]"


def test_pip_install_from_a_package_source_the_operator_allows(tmp_path):
    """No network, but a wheel directory the sandbox can read, named by the
    operator in the conversation's environment: %pip installs from it and the
    package imports in the same kernel (the user site under /workspace joins
    sys.path). The wheel is written from inside (the workspace is a tmpfs)."""
    kernel = ConfinedKernel(built("kernel-launcher/kennel-launch"), {"builtins": "notebook"},
                            str(tmp_path / "k"),
                            # Debian's Python is PEP 668 "externally managed": a user-site
                            # install needs the operator's PIP_BREAK_SYSTEM_PACKAGES too
                            env={"PIP_FIND_LINKS": "/workspace/wheels", "PIP_NO_INDEX": "1",
                                 "PIP_BREAK_SYSTEM_PACKAGES": "1"}).start()
    try:
        ok(kernel, WHEEL_CELL)
        reply, outputs = ok(kernel, "%pip install kennel-wheel-probe", timeout=120)
        assert "Successfully installed kennel-wheel-probe-1.0" in stream_text(outputs), outputs
        assert kernel.value("_exit_code") == "0"
        assert kernel.value("import kennel_wheel_probe; kennel_wheel_probe.ANSWER") == "42"
    finally:
        kernel.stop()


def test_automagic_only_in_the_notebook_profile(kernel, notebook):
    """A bare magic name is Python for an agent (NameError, as without
    IPython) and the magic in a notebook, as in IPython."""
    reply, _ = kernel.execute("who")
    assert reply["ename"] == "NameError"
    ok(kernel, "%who")
    assert notebook.value("pwd") == "'/workspace'"


# ---- found by the notebook corpus (tests/gateway/test_corpus.py) -------------

def test_a_future_import_after_other_statements(kernel):
    """IPython runs a cell statement by statement: IPython's own SymPy
    example has `from __future__ import division` after other imports."""
    _, outputs = ok(kernel, "import math\nfrom __future__ import division\nprint(math.floor(7 / 2), 7 / 2)")
    assert stream_text(outputs) == "3 3.5\n"


def test_a_png_formatter_returning_bytes_is_displayed(kernel):
    """IPython's formatters give image/png as bytes (IPython's Custom
    Display Logic example registers one): sent base64, as ipykernel does."""
    code = ("class Dot:\n    pass\n"
            "png = b'\\x89PNG\\r\\n\\x1a\\n' + bytes(8)\n"
            "get_ipython().display_formatter.formatters['image/png'].for_type(Dot, lambda d: png)\n"
            "from IPython.display import display\n"
            "display(Dot())")
    _, outputs = ok(kernel, code)
    shown = [m["content"]["data"] for m in outputs if m["msg_type"] == "display_data"]
    assert shown and shown[0]["image/png"] == "iVBORw0KGgoAAAAAAAAAAA==", shown
