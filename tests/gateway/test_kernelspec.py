"""Step 5: kernelspec mode (`kennel kernel -f`) and install-kernelspec, driven
by jupyter_client's own kernel manager and by jupyter_kernel_test; tools from
a file (--tools, KENNEL_TOOLS) served by the front end's stdin_hook."""
import json
import os
import shutil
import subprocess
import time
import unittest

import jupyter_kernel_test as jkt
import pytest
from jupyter_client.manager import KernelManager, start_new_kernel

from gwtest import built, execute, execute_started, gone, install_kernelspec, notebook_dir, stdout_of


def install_test_spec(tmp_path, extra=(), defaults=None):
    """The real kernelspec (install_kernelspec) under tmp_path, its argv and
    its kennel.conf checked."""
    path = install_kernelspec(tmp_path, extra, defaults)
    spec = json.loads((tmp_path / "share/jupyter/kernels/kennel/kernel.json").read_text())
    assert spec["display_name"] == "Python 3 (kennel)"
    assert spec["interrupt_mode"] == "message"
    assert spec["argv"][1:] == ["kernel", "-f", "{connection_file}", "--config", "{resource_dir}/kennel.conf"]
    return path


@pytest.fixture(autouse=True)
def in_notebook_dir(monkeypatch):
    """Front ends start the kernel in their working directory: each test's
    is a notebook directory (gwtest.notebook_dir)."""
    path = notebook_dir("kennel-nb-")
    monkeypatch.chdir(path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_kernel_mode_with_kernel_manager(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", install_test_spec(tmp_path))
    km, kc = start_new_kernel(kernel_name="kennel", startup_timeout=60)
    try:
        r, out = execute(kc, "a = 20")
        r, out = execute(kc, "print(a * 2)")
        assert stdout_of(out) == "40\n"
        assert r["metadata"]["kennel"]["state"] == "kept"
        # interrupt_mode "message": the manager sends interrupt_request
        msg_id = execute_started(kc, "import time; time.sleep(60)")
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=10)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        # the manager's restart: shutdown_request, the process exits, a new one starts
        first = km.provisioner.process.pid
        # channels stopped across the restart: a client reconnecting to the
        # kernel's fixed ports while nothing listens can TCP-self-connect
        # from one of them (they are in the ephemeral range) and hold it,
        # for any kernel, ipykernel included
        kc.stop_channels()
        km.restart_kernel(now=False)
        assert gone(first, timeout=10)
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        r, out = execute(kc, "print('a' in globals())")
        assert stdout_of(out) == "False\n"
    finally:
        kc.stop_channels()
        pid = km.provisioner.process.pid
        km.shutdown_kernel(now=False)
    assert gone(pid)


TOOLS = [{"name": "add", "description": "Adds a and b.",
          "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                         "required": ["a", "b"]}},
         # Anthropic's alias, as a kernelspec author may paste it
         {"name": "fail", "description": "Always refuses.", "input_schema": {"type": "object"}}]


def serve_tools(kc, served):
    """A stdin_hook that answers add with a + b and fail with an error reply."""
    def hook(msg):
        assert msg["msg_type"] == "tool_request", msg
        c = msg["content"]
        served.append(c["name"])
        if c["name"] == "add":
            reply = {"call_id": c["call_id"], "status": "ok", "result": c["arguments"]["a"] + c["arguments"]["b"]}
        else:
            reply = {"call_id": c["call_id"], "status": "error", "ename": "Refused", "evalue": "not today"}
        kc.stdin_channel.send(kc.session.msg("tool_reply", reply, parent=msg["header"]))
    return hook


def test_kernelspec_tools_served_by_the_front_end(tmp_path, monkeypatch, in_notebook_dir):
    """install-kernelspec --tools puts KENNEL_TOOLS (absolute) in the spec's
    env; the kernel declares those tools and the front end's stdin_hook
    serves their calls."""
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS))
    monkeypatch.chdir(tmp_path)  # a relative --tools path is made absolute
    monkeypatch.setenv("JUPYTER_PATH", install_test_spec(tmp_path, ["--tools", "tools.json"]))
    spec = json.loads((tmp_path / "share/jupyter/kernels/kennel/kernel.json").read_text())
    assert spec["env"] == {"KENNEL_TOOLS": str(tmp_path / "tools.json")}
    monkeypatch.chdir(in_notebook_dir)
    km, kc = start_new_kernel(kernel_name="kennel", startup_timeout=60)
    try:
        served, outputs = [], []
        code = ("print(tools.add(2, b=40))\n"
                "try:\n    tools.fail()\nexcept ToolError as e:\n    print('error', e.ename, e.evalue)\n"
                "print(sorted(tools))")
        reply = kc.execute_interactive(code, timeout=30, allow_stdin=True, stdin_hook=serve_tools(kc, served),
                                       output_hook=outputs.append)
        assert reply["content"]["status"] == "ok", reply["content"]
        assert stdout_of(outputs) == "42\nerror Refused not today\n['add', 'fail']\n"
        assert served == ["add", "fail"]
        assert reply["metadata"]["kennel"]["tool_calls"] == 2
        # the gateway's own checks apply as for any conversation
        reply = kc.execute_interactive("tools.add(1, 2)", timeout=30, allow_stdin=False, output_hook=outputs.append)
        assert reply["content"]["ename"] == "ToolError"
        assert "ToolUnavailable" in reply["content"]["evalue"]
    finally:
        kc.stop_channels()
        pid = km.provisioner.process.pid
        km.shutdown_kernel(now=False)
    assert gone(pid)


def test_kernelspec_bad_tools_file_fails_at_start(tmp_path, monkeypatch):
    """A bad tools file: the kernel exits 2 at once with one line naming the
    file and the tool, and the front end sees a kernel that died."""
    bad = tmp_path / "bad-tools.json"
    bad.write_text(json.dumps([TOOLS[0], {"name": "broken", "parameters": {"type": "array"}}]))
    monkeypatch.setenv("JUPYTER_PATH", install_test_spec(tmp_path))
    spec_file = tmp_path / "share/jupyter/kernels/kennel/kernel.json"
    spec = json.loads(spec_file.read_text())
    spec["env"] = {"KENNEL_TOOLS": str(bad)}
    spec_file.write_text(json.dumps(spec))
    km = KernelManager(kernel_name="kennel")
    with open(tmp_path / "kernel-output", "w") as out:
        km.start_kernel(stdout=out, stderr=out)
    kc = km.client()
    kc.start_channels()
    try:
        with pytest.raises(RuntimeError, match="died"):
            kc.wait_for_ready(timeout=20)
        assert km.provisioner.process.wait(timeout=5) == 2
    finally:
        kc.stop_channels()
        km.cleanup_resources()
    lines = (tmp_path / "kernel-output").read_text().splitlines()
    assert lines == [f"kennel kernel: tools file {bad}: tool 'broken': "
                     "parameters must be a JSON Schema of type \"object\""], lines


def test_tools_flag_wins_and_install_checks(tmp_path):
    """--tools wins over KENNEL_TOOLS; install-kernelspec refuses a bad file
    and writes nothing; JSON syntax errors name the file and line."""
    kennel = str(built("gateway/kennel"))
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(TOOLS))
    bad.write_text('[{"name": "x"},\n oops]')
    out = subprocess.run([kennel, "kernel", "-f", str(tmp_path / "none.json"), "--tools", str(bad)],
                         env=dict(os.environ, KENNEL_TOOLS=str(good)), capture_output=True, text=True, timeout=20)
    assert out.returncode == 2
    assert out.stderr.startswith(f"kennel kernel: tools file {bad}: ") and "(line 2)" in out.stderr, out.stderr
    # the good file passes the check, so the next failure is the missing connection file
    out = subprocess.run([kennel, "kernel", "-f", str(tmp_path / "none.json"), "--tools", str(good)],
                         env=dict(os.environ, KENNEL_TOOLS=str(bad)), capture_output=True, text=True, timeout=20)
    assert out.returncode == 2 and "tools file" not in out.stderr and "none.json" in out.stderr, out.stderr
    out = subprocess.run([kennel, "install-kernelspec", "--prefix", str(tmp_path / "p"), "--tools", str(bad)],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 2 and str(bad) in out.stderr, out.stderr
    assert not (tmp_path / "p").exists()
    out = subprocess.run([kennel, "install-kernelspec", "--prefix", str(tmp_path / "p"),
                          "--tools", str(tmp_path / "missing.json")], capture_output=True, text=True, timeout=20)
    assert out.returncode == 2 and "missing.json: No such file" in out.stderr, out.stderr


class KennelKernelTests(jkt.KernelTests):
    """jupyter_kernel_test 0.4.5 with every test configured."""

    kernel_name = "kennel"
    language_name = "python"
    file_extension = ".py"
    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    completion_samples = [{"text": "zi", "matches": {"zip"}}]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]
    code_page_something = "zip?"
    code_generate_error = "raise"
    code_execute_result = [{"code": "1+2+3", "result": "6"}, {"code": "[n*n for n in range(1, 4)]", "result": "[1, 4, 9]"}]
    code_display_data = [{"code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))",
                          "mime": "text/html"}]
    supported_history_operations = ("tail", "range", "search")
    code_history_pattern = "1?2*"
    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"

    @classmethod
    def setUpClass(cls):
        import tempfile, pathlib
        cls._tmp = tempfile.TemporaryDirectory()
        cls._old_cwd = os.getcwd()
        cls._notebooks = notebook_dir("kennel-nb-")
        os.chdir(cls._notebooks)
        cls._old_path = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = install_test_spec(pathlib.Path(cls._tmp.name))
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        if cls._old_path is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = cls._old_path
        cls._tmp.cleanup()
        os.chdir(cls._old_cwd)
        shutil.rmtree(cls._notebooks, ignore_errors=True)


def test_nbclient_runs_a_notebook(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("JUPYTER_PATH", install_test_spec(tmp_path))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("total = sum(range(10))"),
                nbformat.v4.new_code_cell("print('total', total)"),
                nbformat.v4.new_code_cell("total * 2")]
    NotebookClient(nb, kernel_name="kennel", timeout=60, startup_timeout=60).execute()
    assert nb.cells[1].outputs[0]["text"] == "total 45\n"
    assert nb.cells[2].outputs[0]["data"]["text/plain"] == "90"


def test_jupyter_console_in_a_terminal(tmp_path):
    """jupyter console on a pty, the way a person uses it."""
    import pexpect

    env = dict(os.environ, JUPYTER_PATH=install_test_spec(tmp_path), TERM="dumb",
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), IPYTHONDIR=str(tmp_path / "ipython"))
    child = pexpect.spawn("/usr/bin/jupyter-console", ["--kernel", "kennel", "--simple-prompt"], env=env,
                          encoding="utf-8", timeout=60)
    try:
        child.expect(r"In \[1\]: ")
        child.sendline("animal = 'dog'")
        child.expect(r"In \[2\]: ")
        child.sendline("print(animal.upper() + 'GY')")
        child.expect("DOGGY")
        child.expect(r"In \[3\]: ")
        child.sendeof()  # Ctrl-D; `exit` belongs to the agent profile's guardrails
        if child.expect([r"\(\[y\]/n\)\?", pexpect.EOF]) == 0:
            child.sendline("y")
            child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


def test_jupyter_console_magics_shell_escape_and_a_def_ended_by_enter(tmp_path):
    """jupyter console with its full prompt (prompt_toolkit, auto-indent) on
    a pty (issue 16): `%timeit`, `!echo` and a two-line `def` ended by Enter
    on the auto-indented blank line run; no log line of kennel's reaches the
    screen."""
    import pexpect

    env = dict(os.environ, JUPYTER_PATH=install_test_spec(tmp_path),
               TERM="xterm", JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               IPYTHONDIR=str(tmp_path / "ipython"),
               # pexpect answers no cursor position request: without this,
               # prompt_toolkit may stop at "Press ENTER to continue..."
               PROMPT_TOOLKIT_NO_CPR="1")
    prompt = r"In \[(?:\x1b\[[0-9;]*m)*%s(?:\x1b\[[0-9;]*m)*\]: "
    # is_complete is asked at each Enter and given 1 s by default; a loaded
    # machine under ASan may take longer, and the console then inserts a line
    child = pexpect.spawn("/usr/bin/jupyter-console",
                          ["--kernel", "kennel", "--ZMQTerminalInteractiveShell.kernel_is_complete_timeout=30"],
                          env=env, encoding="utf-8", timeout=60, dimensions=(40, 160))
    screen = []
    child.logfile_read = type("Screen", (), {"write": lambda self, text: screen.append(text),
                                             "flush": lambda self: None})()

    def type_line(text):
        # a person's pace: prompt_toolkit handles each Enter (and its
        # is_complete request) before the next keys arrive
        time.sleep(0.5)
        child.send(text + "\r")

    try:
        child.expect(prompt % 1)
        type_line("%timeit -n 2 -r 1 pass")
        child.expect(r"per loop \(mean ± std\. dev\. of 1 run, 2 loops each\)")
        child.expect(prompt % 2)
        type_line("!echo from-the-shell")
        child.expect("from-the-shell\r\n")
        child.expect(prompt % 3)
        # prompt_toolkit indents the second line itself and asks is_complete
        # after each Enter: the blank third line ends the cell
        for text in ("def double(n):", "return n * 2", ""):
            type_line(text)
        child.expect(prompt % 4)
        type_line("double(21)")
        child.expect(r"Out\[(?:\x1b\[[0-9;]*m)*4(?:\x1b\[[0-9;]*m)*\]: (?:\x1b\[[0-9;]*m)*42")
        child.expect(prompt % 5)
    finally:
        child.close(force=True)
    text = "".join(screen)
    assert '"event"' not in text and '"ts"' not in text, text


def test_kernel_mode_logs_nothing_on_stderr_but_a_failed_start(tmp_path):
    """No JSON log line on the front end's terminal; a kernel that cannot
    start still says why, in one line."""
    from jupyter_client.connect import write_connection_file

    connection_file, _ = write_connection_file(str(tmp_path / "kernel.json"), key=b"k",
                                               transport="tcp", ip="127.0.0.1")
    (tmp_path / "config.json").write_text(json.dumps({"launcher": "/bin/false"}))
    out = subprocess.run([str(built("gateway/kennel")), "kernel", "-f", connection_file,
                          "--config", str(tmp_path / "config.json")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert out.stderr.splitlines() == [
        "kennel: the kernel could not be started: the launcher ended without a status line "
        "(exit status 1)"], out.stderr
    (tmp_path / "log.jsonl").touch()
    out = subprocess.run([str(built("gateway/kennel")), "kernel", "-f", connection_file,
                          "--config", str(tmp_path / "config.json"),
                          "--log-file", str(tmp_path / "log.jsonl")],
                         capture_output=True, text=True, timeout=60)
    assert '"event":"kernel_failed"' in (tmp_path / "log.jsonl").read_text()
