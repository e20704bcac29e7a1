"""Streams: order across stdout, stderr and rich output; fd-level output
(os.write, subprocesses); big output; partial output arrives while a cell
is still running."""
import time

from kernelclient import TIMEOUT, stream_text


def test_interleaved_output_keeps_its_order(kernel):
    code = ("import sys\n"
            "print('one')\n"
            "print('two', file=sys.stderr)\n"
            "display('three')\n"
            "print('four')\n"
            "sys.stderr.write('five\\n')\n"
            "print('six')\n"
            "'seven'")
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok"
    seen = []
    for m in outputs:
        if m["msg_type"] == "stream":
            seen.append((m["content"]["name"], m["content"]["text"]))
        else:
            seen.append((m["msg_type"], m["content"]["data"]["text/plain"]))
    assert seen == [("stdout", "one\n"), ("stderr", "two\n"), ("display_data", "'three'"),
                    ("stdout", "four\n"), ("stderr", "five\n"), ("stdout", "six\n"),
                    ("execute_result", "'seven'")]


def test_fd_level_output_is_captured(kernel):
    reply, outputs = kernel.execute("import os\nos.write(1, b'fd one\\n')\nos.write(2, b'fd two\\n');")
    assert reply["status"] == "ok"
    assert stream_text(outputs, "stdout") == "fd one\n"
    assert stream_text(outputs, "stderr") == "fd two\n"


def test_fd_output_comes_before_later_python_output(kernel):
    reply, outputs = kernel.execute("import os\nos.write(1, b'from C\\n')\nprint('from Python')")
    assert stream_text(outputs) == "from C\nfrom Python\n"


def _stream_runs(outputs):
    """(name, text) per run of one stream (however the kernel cut it into
    messages) and (msg_type, text/plain) for other outputs, in order."""
    seen = []
    for m in outputs:
        if m["msg_type"] != "stream":
            seen.append((m["msg_type"], m["content"]["data"]["text/plain"]))
        elif seen and seen[-1][0] == m["content"]["name"]:
            seen[-1] = (seen[-1][0], seen[-1][1] + m["content"]["text"])
        else:
            seen.append((m["content"]["name"], m["content"]["text"]))
    return seen


def test_python_fd_and_subprocess_output_keep_their_order(kernel):
    """print, os.write to the fds, a subprocess and sys.stderr interleaved:
    each stream arrives in the order written, and a Python-level write comes
    after everything fd 1 and 2 received before it (both fds). Two raw fd
    writes to different fds with nothing Python-level between them are only
    ordered per fd (README: the output thread drains fd 1, then fd 2)."""
    code = ("import os, sys\n"
            "print('p1')\n"
            "os.write(1, b'w2\\n')\n"
            "os.system('echo s3')\n"
            "print('p4')\n"
            "sys.stderr.write('e1\\n')\n"
            "os.write(2, b'w-e2\\n')\n"
            "os.system('echo s-e3 >&2')\n"
            "print('p5')\n"
            "os.system('echo s6; echo s-e4 >&2')\n"
            "sys.stderr.write('e5\\n')\n"
            "print('p7', flush=True)\n"
            "os.write(1, b'w8\\n')\n")
    for _ in range(3):  # timing varies between runs: the order must not
        reply, outputs = kernel.execute(code)
        assert reply["status"] == "ok", reply
        assert stream_text(outputs, "stdout") == "p1\nw2\ns3\np4\np5\ns6\np7\nw8\n"
        assert stream_text(outputs, "stderr") == "e1\nw-e2\ns-e3\ns-e4\ne5\n"
        # each line's place in arrival order across both streams
        lines = [line for _, text in _stream_runs(outputs) for line in text.splitlines()]
        position = {line: i for i, line in enumerate(lines)}
        # a Python-level write follows all fd output written before it
        assert position["e1"] > position["p4"]
        assert position["p5"] > max(position["e1"], position["w-e2"], position["s-e3"])
        assert min(position["s6"], position["s-e4"]) > position["p5"]
        assert position["e5"] > max(position["s6"], position["s-e4"])
        assert position["p7"] > position["e5"]
        assert position["w8"] > position["p7"]


def test_rich_output_and_the_result_come_after_earlier_fd_output(kernel):
    code = ("import os\n"
            "print('a')\n"
            "os.system('echo b')\n"
            "display('c')\n"
            "os.write(2, b'd\\n')\n"
            "'e'")
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok", reply
    seen = _stream_runs(outputs)
    assert seen == [("stdout", "a\nb\n"), ("display_data", "'c'"), ("stderr", "d\n"),
                    ("execute_result", "'e'")]


def test_subprocess_output_reaches_the_client(kernel):
    reply, outputs = kernel.execute("import subprocess\nsubprocess.run(['echo', 'child says hi'])"
                                    ";")
    assert reply["status"] == "ok"
    assert stream_text(outputs) == "child says hi\n"


def test_ten_megabytes_of_output(kernel):
    reply, outputs = kernel.execute(
        "import sys\nchunk = 'x' * 1023 + '\\n'\nfor i in range(10 * 1024):\n    sys.stdout.write(chunk)",
        timeout=120)
    assert reply["status"] == "ok"
    text = stream_text(outputs)
    assert len(text) == 10 * 1024 * 1024
    assert set(text) == {"x", "\n"}
    # batched, not one message per write, and no message is huge
    streams = [m for m in outputs if m["msg_type"] == "stream"]
    assert 1 < len(streams) < 2000
    assert max(len(m["content"]["text"]) for m in streams) <= 1024 * 1024


def test_ten_megabytes_in_one_print(kernel):
    reply, outputs = kernel.execute("print('y' * (10 * 1024 * 1024))", timeout=120)
    assert reply["status"] == "ok"
    assert len(stream_text(outputs)) == 10 * 1024 * 1024 + 1


def test_partial_output_arrives_while_the_cell_runs(kernel):
    msg_id = kernel.kc.execute("import time\nprint('early', end='')\ntime.sleep(3)\nprint('late')",
                               allow_stdin=False)
    started = time.monotonic()
    while True:
        msg = kernel.kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
            break
    assert msg["content"]["text"] == "early"
    assert time.monotonic() - started < 2  # long before the cell ends
    outputs = kernel.iopub_until_idle(msg_id)
    assert stream_text(outputs) == "late\n"
    kernel.shell_reply(msg_id)


def test_reply_comes_after_all_output(kernel):
    """Everything the cell printed is on iopub before idle, and the shell
    reply is only sent once it is (so a client that waits for the reply and
    then idle sees it all)."""
    msg_id = kernel.kc.execute("for i in range(1000):\n    print(i)", allow_stdin=False)
    kernel.shell_reply(msg_id)
    outputs = kernel.iopub_until_idle(msg_id)
    assert stream_text(outputs) == "".join("%d\n" % i for i in range(1000))


def test_forked_children_print_through_the_parent(kernel):
    """Children made by fork (multiprocessing's default) must not touch the
    parent's sockets: their output goes to the captured fd 1, whole lines."""
    reply, outputs = kernel.execute(
        "import multiprocessing\n"
        "def work(i):\n"
        "    print('child', i)\n"
        "    return i * i\n"
        "with multiprocessing.get_context('fork').Pool(2) as pool:\n"
        "    squares = pool.map(work, range(4))\n"
        "print(squares)", timeout=60)
    assert reply["status"] == "ok", reply
    lines = stream_text(outputs).splitlines()
    assert sorted(lines[:4]) == ["child 0", "child 1", "child 2", "child 3"]
    assert lines[4:] == ["[0, 1, 4, 9]"]
    reply, outputs = kernel.execute(
        "import os\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    print('from the child'); display('shown as text'); os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "print('from the parent')")
    assert stream_text(outputs) == "from the child\n'shown as text'\nfrom the parent\n"
    assert kernel.value("'still', 'fine'") == "('still', 'fine')"


def test_text_that_is_not_valid_utf8_still_arrives(kernel):
    reply, outputs = kernel.execute("print('caf\\udce9 ok'); print('ünïcødé ✓')")
    assert reply["status"] == "ok"
    assert stream_text(outputs) == "caf? ok\nünïcødé ✓\n"
