"""The C side of the kernel (libpykernel): sockets, threads, signals, fd
capture and message checking, seen from a real client over real sockets.

These tests start `kennel-launch --unconfined --python -f FILE` themselves
(not through KernelManager) so that they can read the kernel's own stderr,
know its pid and see its exit status. They use ipc:// sockets (as the
gateway does) unless a test is about tcp: jupyter_client's tcp ports are
picked and let go before the kernel binds them, and on a busy machine
another process can take one in between."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest
import zmq
from jupyter_client import BlockingKernelClient
from jupyter_client.connect import write_connection_file
from jupyter_client.session import Session

from kennel_testlib import LSAN_SUPPRESSIONS, built, cpu_seconds, first_reply, iopub_until_idle, stream_text

TIMEOUT = 30


class Proc:
    """A kernel process with a client connected to it."""

    def __init__(self, tmp_path, env=None, transport="ipc", hold_shell_port=0):
        where = {"transport": "ipc", "ip": str(tmp_path / "k")} if transport == "ipc" else {}
        self.connection_file, _ = write_connection_file(str(tmp_path / "kernel.json"),
                                                        key=str(uuid.uuid4()).encode(), **where)
        with open(self.connection_file) as f:
            self.info = json.load(f)
        self.log = open(tmp_path / "kernel-stderr.log", "w+b")
        if hold_shell_port:
            # someone else has the port for a moment when the kernel starts
            blocker = socket.socket()
            blocker.bind((self.info["ip"], self.info["shell_port"]))
            blocker.listen()
            threading.Timer(hold_shell_port, blocker.close).start()
        env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "detect_leaks=0")) | (env or {})
        self.popen = subprocess.Popen(
            [str(built("kernel-launcher/kennel-launch")), "--unconfined", "--python", "-f",
             self.connection_file],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        self.kc = BlockingKernelClient(connection_file=self.connection_file)
        self.kc.load_connection_file()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=TIMEOUT)
        self.context = zmq.Context()

    def stderr(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def url(self, channel):
        if self.info["transport"] == "ipc":
            return "ipc://%s-%d" % (self.info["ip"], self.info[channel + "_port"])
        return "tcp://%s:%d" % (self.info["ip"], self.info[channel + "_port"])

    def socket(self, kind, channel):
        sock = self.context.socket(kind)
        sock.linger = 0
        sock.connect(self.url(channel))
        return sock

    def reply(self, msg_id, get, timeout=TIMEOUT):
        return first_reply(get, msg_id, timeout)

    def outputs(self, msg_id, timeout=TIMEOUT):
        """iopub messages of one request between busy and idle."""
        return iopub_until_idle(self.kc, msg_id, timeout)

    def execute(self, code, timeout=TIMEOUT, **kwargs):
        msg_id = self.kc.execute(code, allow_stdin=False, **kwargs)
        reply = self.reply(msg_id, self.kc.get_shell_msg, timeout)
        return reply["content"], self.outputs(msg_id, timeout)

    def wait(self, timeout):
        return self.popen.wait(timeout=timeout)

    def close(self):
        self.kc.stop_channels()
        self.context.destroy(linger=0)
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()
        self.log.close()


@pytest.fixture
def proc(tmp_path):
    p = Proc(tmp_path)
    yield p
    p.close()


def control_request(proc, msg_type, content=None):
    """Sends on control with the client's session; returns the msg_id."""
    msg = proc.kc.session.msg(msg_type, content or {})
    proc.kc.control_channel.send(msg)
    return msg["header"]["msg_id"]


@pytest.fixture
def tcp_proc(tmp_path):
    p = Proc(tmp_path, transport="tcp")
    yield p
    p.close()


def test_heartbeat_answers_while_python_holds_the_gil(tcp_proc):
    proc = tcp_proc
    hb = proc.socket(zmq.REQ, "hb")
    msg_id = proc.kc.execute("while True:\n    pass", allow_stdin=False)
    time.sleep(0.5)
    for i in range(3):
        payload = b"ping %d" % i
        hb.send(payload)
        assert hb.poll(2000), "no heartbeat while a tight loop runs"
        assert hb.recv() == payload
    control_request(proc, "interrupt_request")
    reply = proc.reply(msg_id, proc.kc.get_shell_msg)
    assert reply["content"]["status"] == "error"


def test_control_answers_while_shell_is_busy(proc):
    msg_id = proc.kc.execute("import time\ntime.sleep(100)", allow_stdin=False)
    time.sleep(0.3)
    started = time.monotonic()
    info_id = control_request(proc, "kernel_info_request")
    info = proc.reply(info_id, proc.kc.get_control_msg, timeout=5)
    assert time.monotonic() - started < 2
    assert info["msg_type"] == "kernel_info_reply"
    assert info["content"]["status"] == "ok"
    assert info["content"]["implementation"] == "kennel"
    interrupt_id = control_request(proc, "interrupt_request")
    assert proc.reply(interrupt_id, proc.kc.get_control_msg, timeout=5)["content"]["status"] == "ok"
    reply = proc.reply(msg_id, proc.kc.get_shell_msg, timeout=10)
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert time.monotonic() - started < 5


def test_sigint_interrupts_a_sleep_and_is_harmless_when_idle(proc):
    pid = proc.popen.pid
    os.kill(pid, signal.SIGINT)  # idle: nothing to interrupt, nothing breaks
    time.sleep(0.3)
    reply, _ = proc.execute("after_sigint = 1")
    assert reply["status"] == "ok"
    msg_id = proc.kc.execute("import time\ntime.sleep(100)", allow_stdin=False)
    time.sleep(0.5)
    started = time.monotonic()
    os.kill(pid, signal.SIGINT)
    reply = proc.reply(msg_id, proc.kc.get_shell_msg, timeout=10)
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert time.monotonic() - started < 3
    proc.outputs(msg_id)
    reply, outputs = proc.execute("after_sigint + 1")
    assert reply["status"] == "ok"
    assert proc.popen.poll() is None


def test_badly_signed_and_replayed_messages_are_dropped_and_logged(proc):
    shell = proc.socket(zmq.DEALER, "shell")
    forger = Session(key=b"not-the-key", username="mallory")
    forger.send(shell, "execute_request", {"code": "forged = 1", "silent": False})
    unsigned = Session(key=b"", username="mallory")
    unsigned.send(shell, "execute_request", {"code": "forged = 2", "silent": False})
    # a correctly signed message sent twice: the second is a replay
    honest = Session(key=proc.info["key"].encode(), username="alice")
    msg = honest.msg("execute_request", {"code": "replayed = globals().get('replayed', 0) + 1",
                                         "silent": False, "store_history": False,
                                         "user_expressions": {}, "allow_stdin": False})
    frames = honest.serialize(msg)
    shell.send_multipart(frames)
    _, first = honest.recv(shell, mode=0)
    assert first["content"]["status"] == "ok"
    shell.send_multipart(frames)
    assert not shell.poll(500), "a replayed message was answered"
    # the kernel still serves, and ran neither the forged nor the replayed code
    reply, outputs = proc.execute("print(globals().get('forged'), replayed)")
    assert reply["status"] == "ok"
    assert stream_text(outputs, "stdout") == "None 1\n"
    log = proc.stderr()
    assert log.count("message dropped") >= 3, log
    assert "signature" in log
    # log lines go to the kernel's own stderr, never to the client's stream
    reply, outputs = proc.execute("1")
    assert "dropped" not in stream_text(outputs, "stderr")


def test_fd_output_keeps_utf8_whole_and_replaces_invalid_bytes(proc):
    code = ("import os\n"
            "e = 'é€😀'.encode()\n"
            "for i in range(len(e)):\n"
            "    os.write(1, e[i:i + 1])\n"
            "os.write(2, b'bad \\xff byte')\n")
    reply, outputs = proc.execute(code)
    assert reply["status"] == "ok"
    assert stream_text(outputs, "stdout") == "é€😀"
    assert stream_text(outputs, "stderr") == "bad \ufffd byte"


def test_many_small_fd_writes_are_batched(proc):
    reply, outputs = proc.execute("import os\nfor i in range(20000):\n    os.write(1, b'.')")
    assert reply["status"] == "ok"
    assert stream_text(outputs, "stdout") == "." * 20000
    assert len([m for m in outputs if m["msg_type"] == "stream"]) < 2000


def test_ten_megabytes_written_to_fd_1(proc):
    code = ("import os\nchunk = b'y' * 65535 + b'\\n'\n"
            "for i in range(160):\n    os.write(1, chunk)\n")
    started = time.monotonic()
    reply, outputs = proc.execute(code, timeout=60)
    assert reply["status"] == "ok"
    text = stream_text(outputs, "stdout")
    assert len(text) == 160 * 65536
    assert text.count("\n") == 160
    assert time.monotonic() - started < 30


def test_shutdown_request_on_control_exits_zero(proc):
    msg_id = control_request(proc, "shutdown_request", {"restart": False})
    reply = proc.reply(msg_id, proc.kc.get_control_msg, timeout=5)
    assert reply["content"] == {"status": "ok", "restart": False}
    assert proc.wait(10) == 0


def test_shutdown_while_a_cell_runs_exits_promptly(proc):
    proc.kc.execute("while True:\n    pass", allow_stdin=False)
    time.sleep(0.3)
    started = time.monotonic()
    control_request(proc, "shutdown_request", {"restart": False})
    assert proc.wait(10) == 0
    assert time.monotonic() - started < 5


def test_shutdown_request_on_shell_is_still_honoured(proc):
    msg = proc.kc.session.msg("shutdown_request", {"restart": False})
    proc.kc.shell_channel.send(msg)
    reply = proc.reply(msg["header"]["msg_id"], proc.kc.get_shell_msg, timeout=5)
    assert reply["content"]["status"] == "ok"
    assert proc.wait(10) == 0


def test_busy_and_idle_wrap_control_requests(proc):
    msg_id = control_request(proc, "kernel_info_request")
    proc.reply(msg_id, proc.kc.get_control_msg, timeout=5)
    states = []
    deadline = time.monotonic() + 5
    while len(states) < 2 and time.monotonic() < deadline:
        msg = proc.kc.get_iopub_msg(timeout=5)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status":
            states.append(msg["content"]["execution_state"])
    assert states == ["busy", "idle"]


def test_closing_fd_1_neither_breaks_nor_spins_the_kernel(proc):
    reply, _ = proc.execute("import os\nos.close(1)")
    assert reply["status"] == "ok"
    before = cpu_seconds(proc.popen.pid)
    time.sleep(1.0)
    assert cpu_seconds(proc.popen.pid) - before < 0.2, "the idle kernel burns CPU"
    reply, outputs = proc.execute("print('still here')\nos.write(2, b'fd 2 works\\n')")
    assert reply["status"] == "ok"
    assert stream_text(outputs, "stdout") == "still here\n"
    assert stream_text(outputs, "stderr") == "fd 2 works\n"


def test_clean_shutdown_leaks_nothing_of_its_own(tmp_path):
    """Under the sanitizer build, LeakSanitizer checks the exit after a
    shutdown_request: whatever the C side allocated is freed (CPython's own
    interned objects are suppressed by tests/lsan.supp). Without sanitizers
    this still checks the clean exit status."""
    p = Proc(tmp_path, env={"ASAN_OPTIONS": "detect_leaks=1",
                            "LSAN_OPTIONS": "suppressions=%s" % LSAN_SUPPRESSIONS})
    try:
        reply, _ = p.execute("import os, json\nprint(json.dumps([1]))\nos.write(2, b'x')")
        assert reply["status"] == "ok"
        p.kc.execute("1/0", allow_stdin=False)
        msg_id = control_request(p, "shutdown_request", {"restart": False})
        p.reply(msg_id, p.kc.get_control_msg, timeout=5)
        status = p.wait(20)
        log = p.stderr()
        assert "LeakSanitizer" not in log, log
        assert status == 0, log
    finally:
        p.close()


def test_a_forked_child_that_returns_from_the_cell_exits_quietly(proc):
    """os.fork() without os._exit: the child runs the rest of the cell, then
    must leave without answering on the parent's sockets."""
    reply, outputs = proc.execute(
        "import os, time\n"
        "pid = os.fork()\n"
        "if pid:\n"
        "    _, status = os.waitpid(pid, 0)\n"
        "    print('child exit status', os.waitstatus_to_exitcode(status))\n"
        "else:\n"
        "    os.write(1, b'child ran\\n')\n")
    assert reply["status"] == "ok", reply
    text = stream_text(outputs, "stdout")
    assert "child ran\n" in text
    assert text.endswith("child exit status 0\n")
    # exactly one reply reached the client, and the kernel goes on
    try:
        extra = proc.kc.get_shell_msg(timeout=0.5)
    except Exception:
        extra = None
    assert extra is None, extra
    reply, outputs = proc.execute("print('parent still serves')")
    assert stream_text(outputs, "stdout") == "parent still serves\n"


def test_stdin_reply_to_an_earlier_request_is_not_taken_for_this_one(proc):
    """A late answer naming an abandoned input_request as its parent is
    dropped; the answer to the current one is used."""
    msg_id = proc.kc.execute("first = input('first?')", allow_stdin=True)
    first_request = proc.kc.get_stdin_msg(timeout=TIMEOUT)
    control_request(proc, "interrupt_request")
    assert proc.reply(msg_id, proc.kc.get_shell_msg)["content"]["ename"] == "KeyboardInterrupt"
    proc.outputs(msg_id)
    msg_id = proc.kc.execute("second = input('second?')", allow_stdin=True)
    second_request = proc.kc.get_stdin_msg(timeout=TIMEOUT)
    assert second_request["content"]["prompt"] == "second?"
    late = proc.kc.session.msg("input_reply", {"value": "late"}, parent=first_request)
    proc.kc.stdin_channel.send(late)
    time.sleep(0.3)
    answer = proc.kc.session.msg("input_reply", {"value": "right"}, parent=second_request)
    proc.kc.stdin_channel.send(answer)
    reply = proc.reply(msg_id, proc.kc.get_shell_msg)
    assert reply["content"]["status"] == "ok"
    proc.outputs(msg_id)
    reply, outputs = proc.execute("print(second)")
    assert stream_text(outputs, "stdout") == "right\n"
    assert "for another request dropped" in proc.stderr()


def test_fork_server_path_prepare_then_fork_then_serve(tmp_path):
    """pykernel_prepare() starts CPython once; pykernel_fork() makes a child
    that serves the connection file with the interpreter inherited."""
    connection_file, _ = write_connection_file(str(tmp_path / "kernel.json"),
                                               key=str(uuid.uuid4()).encode(),
                                               transport="ipc", ip=str(tmp_path / "k"))
    log = open(tmp_path / "stderr.log", "w+b")
    env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "detect_leaks=0"))
    server = subprocess.Popen([str(built("tests/unit/pykernel_fork")), "-f", connection_file],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env)
    # pykernel_prepare (CPython, kernel.py, IPython's shell: seconds under
    # ASan) runs before the child binds: a client that heartbeats earlier
    # would call the kernel dead
    deadline = time.monotonic() + TIMEOUT
    while b"serving in child" not in (tmp_path / "stderr.log").read_bytes():
        assert server.poll() is None and time.monotonic() < deadline, \
            (tmp_path / "stderr.log").read_bytes()
        time.sleep(0.05)
    kc = BlockingKernelClient(connection_file=connection_file)
    kc.load_connection_file()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        reply = kc.execute_interactive("import os, time\nkernel_pid = os.getpid()", timeout=TIMEOUT)
        assert reply["content"]["status"] == "ok"
        seen = []
        pid = kc.execute_interactive("kernel_pid", timeout=TIMEOUT, output_hook=seen.append)
        assert pid["content"]["status"] == "ok"
        results = [m["content"]["data"]["text/plain"] for m in seen if m["msg_type"] == "execute_result"]
        assert results and int(results[0]) != server.pid
        # the child's SIGINT handling came through the fork
        msg_id = kc.execute("time.sleep(100)", allow_stdin=False)
        time.sleep(0.5)
        kc.control_channel.send(kc.session.msg("interrupt_request", {}))
        while True:
            msg = kc.get_shell_msg(timeout=10)
            if msg["parent_header"].get("msg_id") == msg_id:
                break
        assert msg["content"]["ename"] == "KeyboardInterrupt"
        kc.control_channel.send(kc.session.msg("shutdown_request", {"restart": False}))
        assert server.wait(timeout=20) == 0
    finally:
        kc.stop_channels()
        if server.poll() is None:
            server.kill()
            server.wait()
        log.close()


def test_shutdown_ends_a_cell_that_swallows_interrupts(proc):
    """A cell that catches KeyboardInterrupt cannot hold the kernel up: after
    a grace period the process exits anyway."""
    proc.kc.execute("import time\nwhile True:\n    try:\n        time.sleep(100)\n"
                    "    except KeyboardInterrupt:\n        pass", allow_stdin=False)
    time.sleep(0.3)
    started = time.monotonic()
    msg_id = control_request(proc, "shutdown_request", {"restart": True})
    reply = proc.reply(msg_id, proc.kc.get_control_msg, timeout=5)
    assert reply["content"] == {"status": "ok", "restart": True}
    assert proc.wait(15) == 0
    assert 4 < time.monotonic() - started < 10
    assert "did not end" in proc.stderr()


def test_ipc_socket_names(tmp_path):
    """The gateway talks to confined kernels over ipc:// sockets named
    {ip}-{port}, as jupyter_client names them."""
    p = Proc(tmp_path)
    try:
        for channel in ("shell", "iopub", "stdin", "control", "hb"):
            assert (tmp_path / ("k-%d" % p.info[channel + "_port"])).is_socket()
        reply, outputs = p.execute("import os\nos.write(1, b'over ipc\\n')")
        assert reply["status"] == "ok"
        assert stream_text(outputs, "stdout") == "over ipc\n"
        hb = p.socket(zmq.REQ, "hb")
        hb.send(b"ping")
        assert hb.poll(2000) and hb.recv() == b"ping"
    finally:
        p.close()


def test_modules_in_the_current_directory_import(proc, tmp_path):
    """As in a notebook: a helper module written next to the user's files
    imports, and the interpreter is the system one with Debian's packages."""
    (tmp_path / "kennel_helper_mod.py").write_text("ANSWER = 42\n")
    reply, outputs = proc.execute(
        "import os, sys\nos.chdir(%r)\nimport kennel_helper_mod\n"
        "import numpy\n"
        "print(kennel_helper_mod.ANSWER, sys.executable, sys.flags.no_user_site)" % str(tmp_path))
    assert reply["status"] == "ok", reply
    # the interpreter the tests run with is the configured one (make pytest)
    assert stream_text(outputs, "stdout") == "42 %s 1\n" % sys.executable


def test_a_port_held_for_a_moment_at_start_is_waited_for(tmp_path):
    """jupyter_client picks the ports and lets go of them before the kernel
    binds; a port briefly in use (a connection attempt's source port) must
    not kill the kernel."""
    p = Proc(tmp_path, transport="tcp", hold_shell_port=0.7)
    try:
        reply, _ = p.execute("1")
        assert reply["status"] == "ok"
    finally:
        p.close()


def test_input_from_several_threads_at_once_is_served_one_at_a_time(proc):
    """The stdin socket is used by one request at a time whatever thread
    asks; each thread gets the answer to its own prompt."""
    msg_id = proc.kc.execute(
        "import threading\n"
        "answers = {}\n"
        "def ask(n):\n"
        "    answers[n] = input('q%d' % n)\n"
        "threads = [threading.Thread(target=ask, args=(n,)) for n in range(4)]\n"
        "for t in threads: t.start()\n"
        "answers['main'] = input('qmain')\n"
        "for t in threads: t.join()\n"
        "print(sorted(answers.items(), key=str))", allow_stdin=True)
    for _ in range(5):
        request = proc.kc.get_stdin_msg(timeout=TIMEOUT)
        assert request["msg_type"] == "input_request"
        prompt = request["content"]["prompt"]
        proc.kc.input("answer to " + prompt)
    reply = proc.reply(msg_id, proc.kc.get_shell_msg)
    assert reply["content"]["status"] == "ok", reply["content"]
    outputs = proc.outputs(msg_id)
    expected = sorted([(n, "answer to q%d" % n) for n in range(4)] + [("main", "answer to qmain")], key=str)
    assert stream_text(outputs, "stdout") == "%s\n" % expected
