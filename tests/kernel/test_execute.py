"""execute_request semantics beyond jupyter_kernel_test: persistence,
execution_count, silent, stop_on_error, user_expressions, errors, SystemExit."""
import time

from kernelclient import TIMEOUT, stream_text


def types_of(outputs):
    return [m["msg_type"] for m in outputs]


def test_namespace_persists_across_executes(kernel):
    reply, _ = kernel.execute("persist_a = 40\ndef persist_f(x):\n    return x + persist_a")
    assert reply["status"] == "ok"
    assert kernel.value("persist_f(2)") == "42"


def test_execution_count_counts_only_store_history(kernel):
    first, _ = kernel.execute("1")
    n = first["execution_count"]
    reply, outputs = kernel.execute("2", store_history=False)
    assert reply["execution_count"] == n  # not stored: the current value, unchanged
    reply, outputs = kernel.execute("", silent=True)
    assert reply["execution_count"] == n
    assert outputs == []
    reply, outputs = kernel.execute("3")
    assert reply["execution_count"] == n + 1
    assert outputs[0]["content"]["execution_count"] == n + 1
    # a failing cell still uses up its number
    reply, _ = kernel.execute("1/0")
    assert reply["status"] == "error" and reply["execution_count"] == n + 2
    reply, _ = kernel.execute("4")
    assert reply["execution_count"] == n + 3


def test_execute_input_echoes_code_and_count(kernel):
    msg_id = kernel.kc.execute("ei = 1", allow_stdin=False)
    reply = kernel.shell_reply(msg_id)
    outputs = kernel.iopub_until_idle(msg_id)
    echo = [m for m in outputs if m["msg_type"] == "execute_input"]
    assert len(echo) == 1
    assert echo[0]["content"] == {"code": "ei = 1",
                                  "execution_count": reply["content"]["execution_count"]}


def test_silent_publishes_nothing(kernel):
    msg_id = kernel.kc.execute("print('quiet'); display('quiet'); silent_v = 7; 8",
                               silent=True, allow_stdin=False)
    reply = kernel.shell_reply(msg_id)
    outputs = kernel.iopub_until_idle(msg_id)
    assert reply["content"]["status"] == "ok"
    assert outputs == []
    assert kernel.value("silent_v") == "7"  # it ran


def test_silent_error_publishes_nothing(kernel):
    msg_id = kernel.kc.execute("1/0", silent=True, allow_stdin=False)
    reply = kernel.shell_reply(msg_id)
    assert kernel.iopub_until_idle(msg_id) == []
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "ZeroDivisionError"


def test_last_expression_is_the_result_and_semicolon_hides_it(kernel):
    reply, outputs = kernel.execute("x_last = 5\nx_last * 2")
    assert [m["content"]["data"]["text/plain"] for m in outputs
            if m["msg_type"] == "execute_result"] == ["10"]
    reply, outputs = kernel.execute("x_last * 3;")
    assert outputs == []
    reply, outputs = kernel.execute("x_last * 3  ;  # a comment")
    assert outputs == []
    reply, outputs = kernel.execute("None")
    assert outputs == []
    reply, outputs = kernel.execute("if True:\n    x_last\n")
    assert outputs == []  # only a trailing top-level expression is shown


def test_result_variables(kernel):
    kernel.execute("'first'")
    kernel.execute("'second'")
    assert kernel.value("(_, __)") == "('second', 'first')"


def test_top_level_await(kernel):
    assert kernel.value("import asyncio\nawait asyncio.sleep(0.01)\nawait asyncio.sleep(0, 'awaited')") \
        == "'awaited'"


def test_stop_on_error_aborts_queued_executes(kernel):
    kernel.kc.execute("aborted_ran = []", allow_stdin=False)
    failing = kernel.kc.execute("import time; time.sleep(1); raise RuntimeError('stop here')",
                                allow_stdin=False)
    queued = [kernel.kc.execute("aborted_ran.append(%d)" % i, allow_stdin=False) for i in range(3)]
    replies = {}
    deadline = time.monotonic() + TIMEOUT
    while len(replies) < 5 and time.monotonic() < deadline:
        msg = kernel.kc.get_shell_msg(timeout=TIMEOUT)
        replies[msg["parent_header"]["msg_id"]] = msg["content"]
    assert replies[failing]["status"] == "error"
    assert replies[failing]["ename"] == "RuntimeError"
    for msg_id in queued:
        assert replies[msg_id]["status"] == "aborted", replies[msg_id]
    kernel.drain()
    # aborting lasts only for what was queued: the next request runs
    assert kernel.value("aborted_ran") == "[]"


def test_stop_on_error_false_keeps_running_the_queue(kernel):
    kernel.kc.execute("kept_ran = []", allow_stdin=False)
    failing = kernel.kc.execute("import time; time.sleep(0.3); 1/0", stop_on_error=False,
                                allow_stdin=False)
    queued = kernel.kc.execute("kept_ran.append(1)", allow_stdin=False)
    replies = {}
    while len(replies) < 3:
        msg = kernel.kc.get_shell_msg(timeout=TIMEOUT)
        replies[msg["parent_header"]["msg_id"]] = msg["content"]
    assert replies[failing]["status"] == "error"
    assert replies[queued]["status"] == "ok"
    kernel.drain()
    assert kernel.value("kept_ran") == "[1]"


def test_user_expressions(kernel):
    reply, _ = kernel.execute("ue = 6", user_expressions={"double": "ue * 2", "bad": "1/0",
                                                          "html": "__import__('IPython.display')"
                                                                  ".display.HTML('<i>x</i>')"})
    expressions = reply["user_expressions"]
    assert expressions["double"]["status"] == "ok"
    assert expressions["double"]["data"]["text/plain"] == "12"
    assert expressions["bad"]["status"] == "error"
    assert expressions["bad"]["ename"] == "ZeroDivisionError"
    assert expressions["html"]["data"]["text/html"] == "<i>x</i>"
    reply, _ = kernel.execute("1/0", user_expressions={"double": "ue * 2"})
    assert reply["user_expressions"] == {}


def test_error_is_one_message_with_a_clean_traceback(kernel):
    code = "def inner():\n    raise KeyError('missing')\ndef outer():\n    inner()\nouter()"
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "error"
    assert types_of(outputs) == ["error"]
    error = outputs[0]["content"]
    assert error["ename"] == "KeyError"
    assert error["evalue"] == "'missing'"
    text = "\n".join(error["traceback"])
    assert "in outer" in text and "in inner" in text
    assert "raise KeyError('missing')" in text  # the source line is shown
    assert "<kennel>" not in text and "kernel.py" not in text
    assert "dispatch" not in text and "_run_cell" not in text
    assert reply["traceback"] == error["traceback"]


def test_syntax_error(kernel):
    reply, outputs = kernel.execute("x = (1,\nprint('never')")
    assert reply["status"] == "error"
    assert reply["ename"] == "SyntaxError"
    assert types_of(outputs) == ["error"]
    assert "<kennel>" not in "\n".join(reply["traceback"])


def test_output_before_an_error_is_kept(kernel):
    reply, outputs = kernel.execute("print('before'); 1/0")
    assert types_of(outputs) == ["stream", "error"]
    assert stream_text(outputs) == "before\n"


def test_system_exit_is_caught_and_the_kernel_persists(kernel):
    kernel.execute("survivor = 'still here'")
    for code in ("import sys; sys.exit(3)", "raise SystemExit", "import sys; sys.exit()"):
        reply, outputs = kernel.execute(code)
        assert reply["status"] == "error"
        assert reply["ename"] == "SystemExit"
        assert types_of(outputs) == ["error"]
    assert kernel.value("survivor") == "'still here'"


def test_future_imports_persist(kernel):
    kernel.execute("from __future__ import annotations")
    assert kernel.value("def fut(x: NotDefinedAnywhere): pass\nfut.__annotations__") \
        == "{'x': 'NotDefinedAnywhere'}"


def test_help_syntax_gives_a_pager_payload(kernel):
    kernel.execute("def helped(a, b=2):\n    '''Adds things.'''\n    return a + b")
    reply, outputs = kernel.execute("helped?")
    assert reply["status"] == "ok"
    assert outputs == []
    (page,) = reply["payload"]
    assert page["source"] == "page"
    text = page["data"]["text/plain"]
    assert "helped(a, b=2)" in text and "Adds things." in text
    reply, _ = kernel.execute("helped??")
    assert "return a + b" in reply["payload"][0]["data"]["text/plain"]
    reply, _ = kernel.execute("no_such_name_anywhere?")
    assert "not found" in reply["payload"][0]["data"]["text/plain"]
    # a `?` inside a string is left alone
    assert kernel.value("q = '''\nwhy?\n'''\nq") == "'\\nwhy?\\n'"
