"""Tool calls end to end through the host module `kennel`: a real daemon, a
confined kernel, jupyter_client underneath. The host serves each call with a
plain Python function."""
import threading
import time

import toolhost


def run_ok(conv, code, **kw):
    result = conv.run(code, **kw)
    assert result.status == "ok", (result.error, result.stderr)
    return result


def test_results_of_every_json_kind(open_conv):
    conv = open_conv()
    result = run_ok(conv, "\n".join([
        "values = [echo('text'), echo(value=42), echo(2.5), echo([1, 'two', None]),",
        "          echo({'a': {'b': [1, {'c': True}]}, 'n': None}), echo(None)]",
        "print(repr(values))",
        "print(type(values[1]).__name__, type(values[2]).__name__)",
        "w = get_weather('Oslo')",
        "w['temp'], w['unit']",
    ]))
    assert result.stdout.splitlines() == [
        "['text', 42, 2.5, [1, 'two', None], {'a': {'b': [1, {'c': True}]}, 'n': None}, None]",
        "int float"]
    assert result.value == "(-3.5, 'C')"
    assert [c["name"] for c in result.tool_calls] == ["echo"] * 6 + ["get_weather"]
    assert all(c["status"] == "ok" for c in result.tool_calls)
    # an optional argument left as None is not sent: the host's default applies
    assert result.tool_calls[-1]["arguments"] == {"city": "Oslo"}
    assert result.kennel["tool_calls"] == 7


def test_host_error_raises_tool_error_with_ename_and_evalue(open_conv):
    conv = open_conv()
    result = run_ok(conv, "\n".join([
        "try:",
        "    fail(message='no such account')",
        "except ToolError as e:",
        "    caught = e",
        "print(caught.ename, '|', caught.evalue, '|', caught)",
        "print(isinstance(caught, Exception))",
    ]))
    assert result.stdout.splitlines() == [
        "HostFailure | no such account | HostFailure: no such account", "True"]
    assert result.tool_calls[0]["status"] == "error"
    # uncaught, it is the cell's error, without kennel's own frames
    result = conv.run("fail('boom')")
    assert result.status == "error"
    assert result.error["ename"] == "ToolError"
    assert result.error["evalue"] == "HostFailure: boom"
    traceback = "\n".join(result.error["traceback"])
    assert "fail('boom')" in traceback and "<kennel>" not in traceback


def test_thousand_calls_in_one_loop(open_conv):
    conv = open_conv()
    started = time.monotonic()
    result = run_ok(conv, "total = 0\nfor i in range(1000):\n    total = add(total, i)\ntotal",
                    timeout=120)
    elapsed = time.monotonic() - started
    assert result.value == str(sum(range(1000)))
    assert len(result.tool_calls) == 1000
    assert result.kennel["tool_calls"] == 1000
    print(f"1000 tool calls in {elapsed:.2f} s ({elapsed:.3f} ms per call round trip)")


def test_allow_stdin_false_raises_at_once_and_kernel_stays_usable(open_conv):
    conv = open_conv()
    started = time.monotonic()
    result = conv.run("echo('x')", allow_stdin=False)
    assert time.monotonic() - started < 5
    assert result.status == "error"
    assert result.error["ename"] == "ToolError"
    assert "no client is serving stdin" in result.error["evalue"]
    assert result.tool_calls == []
    result = run_ok(conv, "try:\n    echo(1)\nexcept ToolError as e:\n    print(e.ename)",
                    allow_stdin=False)
    assert result.stdout == "ToolUnavailable\n"
    assert run_ok(conv, "echo('back')").value == "'back'"


def test_interrupt_during_a_pending_call(open_conv):
    conv = None
    answered = threading.Event()

    def wait():
        # the host interrupts the execution while the kernel waits for this
        # call, and answers only afterwards: a late answer nobody waits for
        conv.interrupt()
        time.sleep(1.0)
        answered.set()
        return "too late"

    conv = open_conv(handlers=toolhost.handlers(wait=wait))
    result = conv.run("r = wait()")
    assert answered.is_set()
    assert result.status == "error"
    assert result.error["ename"] == "KeyboardInterrupt"
    # the late answer is not taken for the next call's
    result = run_ok(conv, "'r' in globals(), echo('fresh')")
    assert result.value == "(False, 'fresh')"


def test_help_and_inspection_show_the_declaration(open_conv):
    conv = open_conv()
    result = run_ok(conv, "help(get_weather)")
    assert "Current weather for a city." in result.stdout
    assert "get_weather(city: str, unit: str | None = None)" in result.stdout
    assert "City name" in result.stdout
    assert 'One of: "C", "F".' in result.stdout
    result = run_ok(conv, "import inspect\nstr(inspect.signature(add)), add.__doc__.splitlines()[0]")
    assert result.value == "('(a: int, b: int)', 'Adds two integers.')"
    result = run_ok(conv, "get_weather?")
    page = result.reply["content"]["payload"][0]["data"]["text/plain"]
    assert "Signature: get_weather(city: str, unit: str | None = None)" in page
    assert "Current weather for a city." in page and "<kennel>" not in page
    # a real signature: Python's own argument errors, before anything is sent
    result = conv.run("add(1)")
    assert result.error["ename"] == "TypeError" and "'b'" in result.error["evalue"]
    assert result.tool_calls == []


def test_tools_are_hidden_helpers(open_conv):
    conv = open_conv()
    result = run_ok(conv, "\n".join([
        "print('echo' in globals(), 'tools' in globals(), 'ToolError' in dir(), 'echo' in vars())",
        "print('echo' in tools, list(tools) == [t for t in tools.keys()], len(tools))",
        "print(tools.echo is echo, tools['web-search'] is tools.get('web-search'))",
        "echo = 'mine'",
        "print(echo)",
        "del echo",
        "print(echo('helper again'))",
        "globals().clear()",
        "print(echo('after clear'))",
    ]))
    assert result.stdout.splitlines() == [
        "False False False False", f"True True {len(toolhost.TOOLS)}", "True True",
        "mine", "helper again", "after clear"]
    listing = run_ok(conv, "print(tools)").stdout
    assert "get_weather(city: str, unit: str | None = None)" in listing
    assert "tools['web-search'](query: str)" in listing and "tools.open(path: str)" in listing


def test_names_that_are_not_identifiers_or_clash(open_conv):
    conv = open_conv()
    result = run_ok(conv, "\n".join([
        "print(tools['web-search'](query='kennel'))",
        "print(tools['lambda']())",
        "print(tools.open(path='/etc/x'))",
        "print('web-search' in dir(tools), 'echo' in dir(tools))",
        "import builtins",
        "print(open is builtins.open)",
    ]))
    assert result.stdout.splitlines() == [
        "['result for kennel']", "keyword tool", "opened /etc/x on the host",
        "False True", "True"]
    result = conv.run("tools.nonexistent")
    assert result.error["ename"] == "AttributeError" and "'echo'" in result.error["evalue"]


def test_arguments_must_be_json(open_conv):
    conv = open_conv()
    for argument in ("object()", "{1, 2}", "float('nan')", "b'bytes'"):
        result = conv.run(f"echo({argument})")
        assert result.status == "error", argument
        assert result.error["ename"] == "TypeError", (argument, result.error)
        assert "must be JSON" in result.error["evalue"]
        assert result.tool_calls == [] and result.kennel["tool_calls"] == 0
    circular = conv.run("l = []\nl.append(l)\necho(l)")
    assert circular.error["ename"] == "TypeError" and circular.tool_calls == []


def test_two_conversations_see_only_their_own_tools(open_conv):
    calls = []

    def alpha():
        calls.append("alpha")
        return "a"

    def beta():
        calls.append("beta")
        return "b"

    a = open_conv(tools=[{"name": "alpha", "description": "A's tool"}], handlers={"alpha": alpha})
    b = open_conv(tools=[{"name": "beta", "description": "B's tool"}], handlers={"beta": beta})
    assert run_ok(a, "alpha()").value == "'a'"
    assert run_ok(b, "beta()").value == "'b'"
    assert run_ok(a, "list(tools), 'beta' in tools").value == "(['alpha'], False)"
    assert run_ok(b, "list(tools), 'alpha' in tools").value == "(['beta'], False)"
    assert a.run("beta()").error["ename"] == "NameError"
    assert b.run("tools['alpha']").error["ename"] == "KeyError"
    assert calls == ["alpha", "beta"]


def test_upload_download_and_files(open_conv, tmp_path):
    """conv.upload, conv.files, conv.download, conv.rename, conv.copy: a
    file of three chunks and a bit (the chunk follows the gateway's
    max_message_bytes), the kernel sees it, an empty file, a missing one
    raises GatewayError, a rename onto an existing name raises FileExists."""
    import os
    import kennel
    conv = open_conv()
    chunk = conv.gateway.file_chunk()
    data = os.urandom(3 * chunk + 1234)
    (tmp_path / "in.bin").write_bytes(data)
    (tmp_path / "empty").write_bytes(b"")
    assert conv.upload(str(tmp_path / "in.bin"), "in.bin") == len(data)
    assert conv.upload(str(tmp_path / "empty"), "empty") == 0
    listed = {e["name"]: (e["type"], e["size"]) for e in conv.files()}
    assert listed == {"in.bin": ("file", len(data)), "empty": ("file", 0)}, listed
    result = run_ok(conv, "import hashlib; print(hashlib.sha256(open('/workspace/in.bin','rb').read()).hexdigest())")
    import hashlib
    assert result.stdout.strip() == hashlib.sha256(data).hexdigest()
    run_ok(conv, "open('/workspace/out.txt', 'w').write('made by the kernel')")
    assert conv.download("out.txt", str(tmp_path / "out.txt")) == 18
    assert (tmp_path / "out.txt").read_text() == "made by the kernel"
    assert conv.download("in.bin", str(tmp_path / "back.bin")) == len(data)
    assert (tmp_path / "back.bin").read_bytes() == data
    try:
        conv.download("missing", str(tmp_path / "x"))
        raise AssertionError("no error")
    except kennel.GatewayError as e:
        assert e.ename == "NoSuchFile", e
    conv.rename("out.txt", "renamed.txt")
    conv.copy("renamed.txt", "copied.txt")
    assert {e["name"] for e in conv.files()} == {"in.bin", "empty", "renamed.txt", "copied.txt"}
    assert run_ok(conv, "print(open('/workspace/copied.txt').read())").stdout.strip() == "made by the kernel"
    try:
        conv.rename("copied.txt", "renamed.txt")
        raise AssertionError("no error")
    except kennel.GatewayError as e:
        assert e.ename == "FileExists", e
