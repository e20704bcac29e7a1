"""The host-side conv/<id>/kernel.log is out of the kernel's reach (issue
12, F12): the kernel's stdout and stderr are a pipe that a pump outside the
sandbox copies into the log, each line marked "[kernel] ", at most
LAUNCH_LOG_MAX (8 MiB) per launch; no descriptor of the file itself is
inside, so the kernel can neither truncate it nor write a line that looks
like the launcher's."""
import json

import pytest

from gwtest import execute, remove_kept, stdout_of
from kennel_testlib import wait_until

LOG_MAX = 8 << 20
FORGED = "confine: the sandbox reached its memory limit (FAKE) \x1b[2J kennel-launch: FORGED"

# every fd of the kernel (and of the sandbox's init, as far as /proc lets
# it see them): what it is, and whether ftruncate or a write went through
ATTACK = r'''
import json, os, stat
forged = %r.encode()
def attack(fd):
    r = {}
    try:
        st = os.fstat(fd)
    except OSError as e:
        return {"fstat": e.strerror}
    r["kind"] = ("reg" if stat.S_ISREG(st.st_mode) else "fifo" if stat.S_ISFIFO(st.st_mode)
                 else "sock" if stat.S_ISSOCK(st.st_mode) else "chr" if stat.S_ISCHR(st.st_mode) else "other")
    if r["kind"] in ("sock", "fifo"):
        return r  # the kernel's own channels (ZeroMQ, output capture, log pipe)
    try:
        os.ftruncate(fd, 0)
        r["truncate"] = "ok"
    except OSError as e:
        r["truncate"] = e.strerror
    try:
        os.write(fd, forged + b"\n")
        r["write"] = "ok"
    except OSError as e:
        r["write"] = e.strerror
    return r
result = {"self": {}, "init": {}}
for name in os.listdir("/proc/self/fd"):
    result["self"][name] = attack(int(name))
try:
    names = os.listdir("/proc/1/fd")
except OSError as e:
    names = []
    result["init"] = e.strerror
for name in names:
    try:
        fd = os.open("/proc/1/fd/" + name, os.O_WRONLY | os.O_APPEND)
    except OSError as e:
        result["init"][name] = {"open": e.strerror}
        continue
    result["init"][name] = attack(fd)
    os.close(fd)
print(json.dumps(result))
''' % FORGED


BAD_MESSAGE = r'''
import time, zmq
s = zmq.Context.instance().socket(zmq.DEALER)
s.connect("ipc:///run/kennel/k-1")
s.send_multipart([b"<IDS|MSG>", b"not-a-signature", b"{}", b"{}", b"{}", b"{}"])
time.sleep(0.2)
s.close(0)
'''


def wait_for_line(log, prefix, timeout=10):
    """The log's text once a line starts with prefix."""
    def text():
        return log.read_text(errors="replace") if log.exists() else ""

    def found():
        now = text()
        return now if any(line.startswith(prefix) for line in now.splitlines()) else None

    return wait_until(found, timeout, text)


def assert_only_marked(lines, text):
    """text appears in the log only on lines marked as the kernel's."""
    for line in lines:
        if text in line:
            assert line.startswith("[kernel] "), line


@pytest.mark.parametrize("fork_server", [True, False], ids=["zygote", "cold"])
def test_the_kernel_holds_no_descriptor_of_its_host_log(make_gateway, fork_server):
    gw = make_gateway(config={"warm_pool": 0, "fork_server": {"enabled": fork_server}})
    _, kc = gw.open_client("klog")
    log = gw.state / "conv" / "klog" / "kernel.log"
    # a line the kernel logs itself (a badly signed message on its own shell
    # socket): it reaches the log marked, and stays there
    r, _ = execute(kc, BAD_MESSAGE)
    assert r["content"]["status"] == "ok", r["content"]
    before = wait_for_line(log, "[kernel] kennel-pykernel: ")
    r, out = execute(kc, ATTACK, timeout=60)
    assert r["content"]["status"] == "ok", r["content"]
    seen = json.loads(stdout_of(out))
    for where in ("self", "init"):
        if isinstance(seen[where], str):
            continue  # /proc/1/fd not listable: nothing there to reach
        for fd, what in seen[where].items():
            assert what.get("kind") != "reg", (where, fd, what, seen)
            assert what.get("truncate", "refused") != "ok", (where, fd, what)
            if what.get("kind") == "chr":
                continue  # /dev/null takes writes and keeps nothing
            assert what.get("write", "refused") != "ok", (where, fd, what)
    after = log.read_text(errors="replace")
    assert after.startswith(before) and FORGED not in after


def test_kernel_output_is_marked_and_bounded(make_gateway):
    """A kernel command that writes forged launcher lines, terminal escapes
    and 3 x LOG_MAX bytes before it becomes ipykernel: the log keeps the
    first LOG_MAX bytes, marked, and the launcher's own line says the rest
    was dropped."""
    script = ("printf '%s\\n' \"$1\" >&2; printf 'no newline at the end' ; "
              f"head -c {3 * LOG_MAX} /dev/zero | tr '\\0' x; echo; "
              "exec /usr/bin/python3 -m ipykernel_launcher -f \"$0\"")
    argv = ["/bin/sh", "-c", script, "{connection_file}", FORGED]
    gw = make_gateway(config={"kernels": {"noisy": {"argv": argv}}, "warm_pool": 0})
    # ipykernel needs loopback (as in test_tools.py)
    _, kc = gw.open_client("noisy", kernel="noisy", policy={"network": "loopback"})
    r, out = execute(kc, "print('alive')", timeout=60)
    assert stdout_of(out) == "alive\n"
    log = gw.state / "conv" / "noisy" / "kernel.log"
    size = log.stat().st_size
    assert LOG_MAX - 1024 < size < LOG_MAX + 1024, size
    lines = log.read_text(errors="replace").splitlines()
    assert_only_marked(lines, "FAKE")
    assert_only_marked(lines, "FORGED")
    assert not any("\x1b" in line for line in lines)
    assert any("\\x1b[2J" in line for line in lines)
    assert any(line.startswith("kennel-launch: the kernel wrote more than 8388608 bytes") for line in lines)


def test_a_conversations_logs_stay_bounded_across_restarts(make_gateway):
    """Each launch logs at most LOG_MAX; a conversation whose kernel is
    restarted again and again rotates its log (kernel.log.1, one older
    file), so its logs stay under 2 x (LOG_MAX + LOG_MAX + a few lines)."""
    script = (f"head -c {LOG_MAX + (1 << 20)} /dev/zero | tr '\\0' x; echo; "
              "exec /usr/bin/python3 -m ipykernel_launcher -f \"$0\"")
    gw = make_gateway(config={"kernels": {"big": {"argv": ["/bin/sh", "-c", script, "{connection_file}"]}},
                              "warm_pool": 0})
    gw.open_client("big", kernel="big", policy={"network": "loopback"})
    conv = gw.state / "conv" / "big"
    for _ in range(4):
        r = gw.control.request("conversation_restart_request", {"conversation_id": "big"})
        assert r["content"]["status"] == "ok", r["content"]
    sizes = {p.name: p.stat().st_size for p in conv.glob("kernel.log*")}
    assert set(sizes) == {"kernel.log", "kernel.log.1"}, sizes
    assert all(size < 2 * LOG_MAX + (64 << 10) for size in sizes.values()), sizes
    # a close that keeps the workspace removes both logs
    gw.control.request("conversation_close_request", {"conversation_id": "big", "keep_workspace": True})
    assert [p.name for p in conv.iterdir()] == ["workspace"]
    remove_kept(conv)


def test_a_kernel_that_ends_before_it_answers_is_shown_with_its_last_output(make_gateway):
    """A kernel command that fails at start (here: prints an import error and
    exits 3): the open's error has the exit status and the kernel's last
    lines as kernel.log holds them (before: the status and "see <path of
    kernel.log>" only, a file that `kennel selftest` removes with its state
    dir and a remote client cannot read)."""
    argv = ["/bin/sh", "-c", "echo 'ModuleNotFoundError: No module named ipykernel' >&2; exit 3",
            "{connection_file}"]
    gw = make_gateway(config={"kernels": {"broken": {"argv": argv}}, "warm_pool": 0})
    c = gw.control.open("broken", kernel="broken")
    assert c["status"] == "error" and c["ename"] == "KernelStartFailed", c
    assert c["evalue"].startswith("the kernel ended before it answered (exit status 3); its last output: "), c
    assert "[kernel] ModuleNotFoundError: No module named ipykernel" in c["evalue"], c
    assert c["evalue"].endswith("see " + str(gw.state / "conv" / "broken" / "kernel.log")), c
