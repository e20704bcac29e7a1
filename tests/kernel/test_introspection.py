"""complete, inspect, is_complete, history and comm_info beyond the
conformance suite's samples."""
import pytest


def request(kernel, send, *args, **kwargs):
    msg_id = send(*args, **kwargs)
    reply = kernel.shell_reply(msg_id)
    kernel.iopub_until_idle(msg_id)
    return reply["content"]


def complete(kernel, code, cursor_pos=None):
    return request(kernel, kernel.kc.complete, code, cursor_pos)


def test_complete_user_names_keywords_and_builtins(kernel):
    kernel.execute("completion_alpha = 1\ncompletion_beta = 2")
    reply = complete(kernel, "completion_")
    assert reply["matches"] == ["completion_alpha", "completion_beta"]
    assert (reply["cursor_start"], reply["cursor_end"]) == (0, len("completion_"))
    assert "lambda" in complete(kernel, "lamb")["matches"]
    assert "isinstance" in complete(kernel, "isinst")["matches"]


def test_complete_attributes(kernel):
    kernel.execute("class Completed:\n    alpha = 1\n    def beta(self): pass\ncompleted = Completed()")
    reply = complete(kernel, "x = completed.")
    assert reply["matches"] == ["completed.alpha", "completed.beta"]
    assert reply["cursor_start"] == len("x = ")
    # private names only when asked for
    assert "completed.__class__" in complete(kernel, "completed.__cl")["matches"]


def test_complete_in_the_middle_of_the_code(kernel):
    kernel.execute("middle_value = 3")
    code = "print(middle_v)\nother = 1"
    reply = complete(kernel, code, cursor_pos=len("print(middle_v"))
    assert reply["matches"] == ["middle_value"]
    assert (reply["cursor_start"], reply["cursor_end"]) == (6, 14)


def test_complete_modules_after_import_and_from(kernel):
    assert complete(kernel, "import collections.ab")["matches"] == ["collections.abc"]
    assert complete(kernel, "from collections import OrderedD")["matches"] == ["OrderedDict"]
    assert "os" in complete(kernel, "from o")["matches"]
    assert "json" in complete(kernel, "import os, jso")["matches"]


def test_complete_counts_code_points(kernel):
    kernel.execute("unicode_name_é = 1")
    code = "s = 'ü'; unicode_na"
    reply = complete(kernel, code)
    assert reply["matches"] == ["unicode_name_é"]
    assert reply["cursor_end"] == len(code)  # code points, not bytes


def test_inspect_signature_and_docstring(kernel):
    kernel.execute("def inspected(a, *, b=2):\n    '''Does a thing.'''\n    return a")
    reply = request(kernel, kernel.kc.inspect, "inspected", 4)
    assert reply["found"] is True
    text = reply["data"]["text/plain"]
    assert "inspected(a, *, b=2)" in text and "Does a thing." in text
    # inside a call, the callee is inspected
    reply = request(kernel, kernel.kc.inspect, "inspected(1, ", len("inspected(1, "))
    assert "Does a thing." in reply["data"]["text/plain"]
    reply = request(kernel, kernel.kc.inspect, "inspected", 4, 1)
    assert "return a" in reply["data"]["text/plain"]  # detail_level 1: the source
    reply = request(kernel, kernel.kc.inspect, "not_defined_anywhere")
    assert reply["status"] == "ok" and reply["found"] is False


@pytest.mark.parametrize("code, status, indent", [
    ("x = 1", "complete", None),
    ("", "complete", None),
    ("len?", "complete", None),
    ("if x:", "incomplete", "    "),
    ("for i in range(3):\n    if i:", "incomplete", "        "),
    ("def f():\n    return 1", "incomplete", "    "),
    ("def f():\n    return 1\n", "complete", None),
    ("d = {'a':", "incomplete", ""),
    ("class C:\n    def m(self):", "incomplete", "        "),
    ("x = = 1", "invalid", None),
    ("return 1 +", "invalid", None),
])
def test_is_complete(kernel, code, status, indent):
    reply = request(kernel, kernel.kc.is_complete, code)
    assert reply["status"] == status
    if indent is not None:
        assert reply["indent"] == indent


def test_history_records_inputs_and_outputs(fresh_kernel):
    kernel = fresh_kernel
    kernel.execute("h1 = 1")
    kernel.execute("h1 + 1")
    kernel.execute("'not stored'", store_history=False)
    kernel.execute("h1 + 2")
    reply = request(kernel, kernel.kc.history, hist_access_type="tail", n=10, output=True, raw=True)
    assert [(line, entry) for _, line, entry in reply["history"]] == [
        (1, ["h1 = 1", None]), (2, ["h1 + 1", "2"]), (3, ["h1 + 2", "3"])]
    reply = request(kernel, kernel.kc.history, hist_access_type="range", session=0, start=2,
                    stop=4, raw=True, output=False)
    assert [entry[2] for entry in reply["history"]] == ["h1 + 1", "h1 + 2"]
    reply = request(kernel, kernel.kc.history, hist_access_type="search", pattern="h1 + *",
                    raw=True, output=False)
    assert [entry[2] for entry in reply["history"]] == ["h1 + 1", "h1 + 2"]


def test_comm_info_is_empty(kernel):
    reply = request(kernel, kernel.kc.comm_info)
    assert reply == {"status": "ok", "comms": {}}


def test_kernel_info(kernel):
    reply = request(kernel, kernel.kc.kernel_info)
    assert reply["status"] == "ok"
    assert reply["implementation"] == "kennel"
    assert reply["protocol_version"] == "5.3"
    import sys
    info = reply["language_info"]
    assert info["name"] == "python" and info["file_extension"] == ".py"
    assert info["version"].startswith("%d.%d." % sys.version_info[:2])  # the embedded /usr/bin/python3
    assert "Python" in reply["banner"]
