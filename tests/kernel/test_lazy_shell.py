"""A kernel started without the fork server (issue 17) answers plain Python
before IPython is loaded: its shell is built at the first thing that needs
it, and then In, _iN, Out, execution_count and the history are as if it had
been there from the start.

The kernels here are direct launches: the dev-mode kernelspec
(`kennel-launch --unconfined --python`) and `kennel-launch --spec-fd`
without a zygote (confined). The probe `'IPython' in sys.modules` runs in
the cell; `sys` is importable in every builtins profile, and the probe
imports nothing itself."""
import pytest

from kernelclient import TIMEOUT, stream_text

LOADED = "sorted(m for m in __import__('sys').modules if m.split('.')[0] == 'IPython')"


def ok(kernel, code, **kwargs):
    reply, outputs = kernel.execute(code, **kwargs)
    assert reply["status"] == "ok", reply
    return reply, outputs


def result(outputs):
    return [m["content"]["data"]["text/plain"] for m in outputs
            if m["msg_type"] == "execute_result"]


def assert_not_loaded(kernel):
    assert kernel.value(LOADED) == "[]"


def test_plain_cells_run_before_ipython_is_loaded(fresh_kernel):
    kernel = fresh_kernel
    ok(kernel, "y = 1")
    for code, text in (("y + 1", "2"), ("1.5", "1.5"), ("'s'", "'s'"), ("True", "True"),
                       ("[y, {'a': (1, 2.0)}]", "[1, {'a': (1, 2.0)}]")):
        _, outputs = ok(kernel, code)
        assert result(outputs) == [text]
    _, outputs = ok(kernel, "print(y)")
    assert stream_text(outputs) == "1\n"
    reply, outputs = kernel.execute("1/0")
    assert reply["ename"] == "ZeroDivisionError"
    assert "\x1b[" not in "".join(reply["traceback"])
    assert "ZeroDivisionError: division by zero" in reply["traceback"][-1]
    # history variables of plain cells, still without IPython
    assert kernel.value("In[1], _i1, _ih[2], Out[2], _2") == "('y = 1', 'y = 1', 'y + 1', 2, 2)"
    assert kernel.value("_, __") == "(('y = 1', 'y = 1', 'y + 1', 2, 2), [1, {'a': (1, 2.0)}])"
    assert_not_loaded(kernel)


def test_the_shell_built_later_has_the_history_from_the_start(fresh_kernel):
    kernel = fresh_kernel
    ok(kernel, "y = 1")
    ok(kernel, "y + 41")
    kernel.execute("undefined_name")
    assert_not_loaded(kernel)                                         # cell 4
    _, outputs = ok(kernel, "%timeit -n1 -r1 pass")                   # cell 5
    assert "per loop" in stream_text(outputs), outputs
    assert kernel.value("In[1], _i1, _i2, In[5][:12]") == "('y = 1', 'y = 1', 'y + 41', 'get_ipython(')"
    assert kernel.value("_ih[3], len(In)") == "('undefined_name', 8)"   # In[0] is ''; cell 7 is this one
    assert kernel.value("Out[2], _2, sorted(Out)") == "(42, 42, [2, 4, 6, 7])"
    assert kernel.value("_i, _ii, _iii") == "('Out[2], _2, sorted(Out)', " \
        "'_ih[3], len(In)', 'In[1], _i1, _i2, In[5][:12]')"
    assert kernel.value("ip = get_ipython(); ip.execution_count") == "10"
    assert kernel.value("ip.history_manager.input_hist_raw[5]") == "'%timeit -n1 -r1 pass'"
    assert kernel.value("In is ip.history_manager.input_hist_parsed and "
                        "Out is ip.history_manager.output_hist and _oh is Out") == "True"
    assert kernel.value("ip.user_ns is globals()") == "True"
    # the history reply and %history both hold the cells run before the shell
    msg_id = kernel.kc.history(hist_access_type="range", session=0, start=1, stop=3, raw=True)
    reply = kernel.shell_reply(msg_id)["content"]
    assert [entry[2] for entry in reply["history"]] == ["y = 1", "y + 41"]
    _, outputs = ok(kernel, "%history -n 1-2")
    assert stream_text(outputs) == "   1: y = 1\n   2: y + 41\n"


def test_get_ipython_and_ipythons_own_get_ipython_build_the_shell(fresh_kernel):
    kernel = fresh_kernel
    ok(kernel, "x = 1")
    assert_not_loaded(kernel)
    assert kernel.value("type(get_ipython()).__mro__[1].__name__") == "'InteractiveShell'"
    assert kernel.value("import IPython; IPython.get_ipython() is get_ipython()") == "True"
    assert kernel.value("get_ipython().kernel.shell is get_ipython()") == "True"


def test_importing_ipython_gives_the_kernels_shell(fresh_kernel):
    """Libraries that ask IPython itself (InteractiveShell.initialized(),
    .instance()) find the kernel's shell, not a second, plain one."""
    kernel = fresh_kernel
    assert kernel.value("from IPython.core.interactiveshell import InteractiveShell as S; "
                        "S.initialized() and S.instance() is get_ipython()") == "True"


def test_completion_and_is_complete_build_the_shell(fresh_kernel):
    kernel = fresh_kernel
    ok(kernel, "value_one = 1")
    msg_id = kernel.kc.complete("value_o", 7)
    assert kernel.shell_reply(msg_id)["content"]["matches"] == ["value_one"]
    assert_not_loaded(kernel)       # kennel's own rules found it
    msg_id = kernel.kc.complete("%tim", 4)
    assert {"%time", "%timeit"} <= set(kernel.shell_reply(msg_id)["content"]["matches"])
    msg_id = kernel.kc.is_complete("for i in range(3):")
    reply = kernel.shell_reply(msg_id)["content"]
    assert reply == {"status": "incomplete", "indent": "    "}
    msg_id = kernel.kc.is_complete("%%timeit\nx = 1")
    assert kernel.shell_reply(msg_id)["content"]["status"] == "incomplete"


def test_a_magic_first_and_events_registered_later(fresh_kernel):
    kernel = fresh_kernel
    _, outputs = ok(kernel, "%time z = 2")
    assert "Wall time" in stream_text(outputs)
    ok(kernel, "seen = []\nget_ipython().events.register('pre_run_cell', "
               "lambda info: seen.append(info.raw_cell))")
    ok(kernel, "z + 1")
    assert kernel.value("seen") == "['z + 1', 'seen']"


def test_a_warning_repeats_in_each_cell_as_in_ipython(fresh_kernel):
    """IPython clears the namespace's __warningregistry__ before each cell
    (a pre_execute callback it registers itself); without the shell kennel
    does the same, or a warning from line 1 of cell 2 would be taken for the
    one cell 1 already showed."""
    kernel = fresh_kernel
    for _ in range(2):
        reply, outputs = kernel.execute("import warnings; warnings.warn('twice')")
        assert reply["status"] == "ok", reply
        assert "UserWarning: twice" in stream_text(outputs, "stderr"), outputs
    assert_not_loaded(kernel)


@pytest.mark.parametrize("profile", ["agent", "none"])
def test_a_confined_direct_launch_runs_plain_cells_without_ipython(launch, profile):
    """`kennel-launch --spec-fd` without a zygote: the gateway's fallback."""
    kernel = launch({"builtins": profile})
    ok(kernel, "y = 1")
    ok(kernel, "y + 1")
    assert_not_loaded(kernel)
    reply, _ = kernel.execute("pwd")
    assert reply["ename"] == "NameError"
    assert_not_loaded(kernel)
    assert kernel.value("%pwd") == "'/workspace'"
    assert kernel.value("In[1], Out[2]") == "('y = 1', 2)"


def test_a_notebook_kernel_has_its_shell_before_its_first_reply(launch):
    """The notebook profile (kernelspec mode, people's front ends) builds the
    shell at start: jupyter console asks for the history with a 1 s timeout
    and completes while the user types; a shell built by those requests
    answered them late, and the console took the late replies for the
    answers to its next requests (it hung at the first cell)."""
    kernel = launch({"builtins": "notebook"})
    assert kernel.value(LOADED) != "[]"
    # automagic: a bare magic name is the magic
    assert kernel.value("pwd") == "'/workspace'"
    assert kernel.value("In[1]") == repr(LOADED)


def test_an_interrupt_while_the_shell_is_built_leaves_a_whole_shell(fresh_kernel):
    """An interrupt_request that comes while a cell's `import IPython` builds
    the shell interrupts the cell once the shell is whole: IPython's import
    and the shell's construction are not cut in half (which left a
    half-initialized IPython.core.profiledir in sys.modules, and every later
    magic failed with an ImportError)."""
    kernel = fresh_kernel
    ok(kernel, "y = 1")
    msg_id = kernel.kc.execute("import IPython")
    while kernel.kc.get_iopub_msg(timeout=TIMEOUT)["msg_type"] != "execute_input":
        continue  # the cell has started once its input is published
    kernel.km.interrupt_kernel()
    reply = kernel.shell_reply(msg_id)["content"]
    kernel.iopub_until_idle(msg_id)
    # (an interrupt that comes after the import has nothing left to stop)
    assert reply["status"] == "ok" or reply["ename"] == "KeyboardInterrupt", reply
    assert kernel.value("type(get_ipython()).__name__, len(In)") == "('KennelShell', 4)"
    _, outputs = ok(kernel, "%time 1")
    assert "Wall time" in stream_text(outputs)
