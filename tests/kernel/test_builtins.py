"""The default ("agent") builtins profile, the import policy and the hidden
helper namespace."""
import pytest


@pytest.mark.parametrize("call", ["exit()", "quit()", "exit(0)", "breakpoint()"])
def test_exit_quit_breakpoint_are_disabled_with_a_message(kernel, call):
    reply, outputs = kernel.execute(call)
    assert reply["status"] == "error"
    assert "disabled" in reply["evalue"]
    assert "'agent'" in reply["evalue"]
    assert kernel.value("1 + 1") == "2"  # still alive


@pytest.mark.parametrize("code, module", [
    ("import ctypes", "ctypes"),
    ("import _ctypes", "_ctypes"),
    ("import cffi", "cffi"),
    ("from ctypes import CDLL", "ctypes"),
    ("import ctypes.util", "ctypes"),
    ("from ctypes import *", "ctypes"),
    ("__import__('ctypes')", "ctypes"),
    ("def later():\n    import ctypes\nlater()", "ctypes"),
])
def test_denied_imports_name_the_policy(kernel, code, module):
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "error"
    assert reply["ename"] == "ImportError"
    assert "import policy" in reply["evalue"]
    assert module in reply["evalue"]


def test_the_kernels_own_module_is_out_of_reach(kernel):
    for code in ("import _kennel", "import importlib; importlib.import_module('_kennel')"):
        reply, _ = kernel.execute(code)
        assert reply["status"] == "error" and reply["ename"] == "ImportError", code
    assert kernel.value("import sys; '_kennel' in sys.modules") == "False"


def test_ordinary_imports_work(kernel):
    assert kernel.value("import json, collections.abc\nfrom os import path\njson.dumps([1])") \
        == "'[1]'"


def test_libraries_may_use_denied_modules_internally(kernel):
    # the policy covers the user's own imports, not those of the libraries
    # they use: multiprocessing.sharedctypes imports ctypes itself
    reply, _ = kernel.execute("import multiprocessing.sharedctypes")
    assert reply["status"] == "ok", reply


def test_denied_modules_are_not_offered_by_completion(kernel):
    msg_id = kernel.kc.complete("import ctyp")
    reply = kernel.shell_reply(msg_id)
    assert reply["content"]["matches"] == []


HIDDEN = ["display", "get_ipython"]


@pytest.mark.parametrize("name", HIDDEN)
def test_helpers_resolve_but_are_not_in_the_namespace(kernel, name):
    assert kernel.value("callable(%s)" % name) == "True"
    assert kernel.value("'%s' in globals(), '%s' in dir(), '%s' in vars()" % (name, name, name)) \
        == "(False, False, False)"
    assert kernel.value("import builtins; hasattr(builtins, '%s')" % name) == "False"


def test_helpers_are_not_offered_as_user_variables(kernel):
    kernel.execute("displayed_thing = 1")
    msg_id = kernel.kc.complete("displ")
    reply = kernel.shell_reply(msg_id)
    assert reply["content"]["matches"] == ["displayed_thing"]


def test_a_user_variable_shadows_a_helper_and_del_brings_it_back(kernel):
    assert kernel.value("display = 'mine'\ndisplay") == "'mine'"
    assert kernel.value("'display' in globals()") == "True"
    assert kernel.value("del display\ncallable(display)") == "True"
    reply, outputs = kernel.execute("display('back')")
    assert [m["msg_type"] for m in outputs] == ["display_data"]


def test_helpers_survive_globals_clear(fresh_kernel):
    kernel = fresh_kernel
    kernel.execute("user_thing = 1")
    reply, outputs = kernel.execute("globals().clear()\ndisplay('same cell')")
    assert reply["status"] == "ok"
    assert [m["msg_type"] for m in outputs] == ["display_data"]
    reply, outputs = kernel.execute("display('next cell')\nsorted(k for k in globals() if not k.startswith('__'))")
    assert reply["status"] == "ok", reply
    assert [m["msg_type"] for m in outputs] == ["display_data", "execute_result"]
    assert outputs[1]["content"]["data"]["text/plain"] == "[]"
    reply, _ = kernel.execute("user_thing")
    assert reply["ename"] == "NameError"
    # imports still go through the policy after the namespace was wiped
    reply, _ = kernel.execute("import ctypes")
    assert reply["ename"] == "ImportError"


def test_get_ipython_is_the_shell_and_stays_hidden(kernel):
    """get_ipython() is IPython's shell (tests/kernel/test_ipython.py has the
    rest); it and the shell's In/Out stay out of globals() and builtins."""
    assert "InteractiveShell" in kernel.value("type(get_ipython()).__mro__")
    reply, _ = kernel.execute("get_ipython().run_line_magic('matplotlib', 'inline')")
    assert reply["status"] == "ok"
    assert kernel.value("[n for n in ('get_ipython', 'display', 'In', 'Out') "
                        "if n in globals() or hasattr(__import__('builtins'), n)]") == "[]"


def test_matplotlib_magic_line_is_accepted(kernel):
    reply, _ = kernel.execute("%matplotlib inline\nmagic_ok = 1")
    assert reply["status"] == "ok"
    assert kernel.value("magic_ok") == "1"
