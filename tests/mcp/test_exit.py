"""How `kennel mcp` with its own gateway ends: stdin's end, SIGTERM, SIGINT
or SIGHUP while an execution runs (what MCP hosts and `timeout` send, and a
terminal that hangs up) is a clean end: exit 0, no answer for the running
call, nothing but protocol lines on stdout, and neither its private state
dir nor a mount under it left. A SIGKILL leaves the dir to the reaper
(gateway/gw_reaper.c)."""
import json
import os
import pathlib
import shutil
import signal

import pytest

import hostprobe
from kennel_testlib import wait_until
from mcplib import Mcp, unprivileged_home

ENDS = ["SIGTERM", "SIGINT", "SIGHUP", "stdin closed"]


def front(tmp_path, uid):
    """A `kennel mcp` as uid (None: root) whose default conversation runs
    code; its dir, for the config and log."""
    home = unprivileged_home(uid, "kennel-mcp-exit-") if uid is not None else pathlib.Path(tmp_path)
    m = Mcp(home, args=["--progress-interval", "0.2"], uid=uid)
    m.home = home
    m.initialize()
    r = m.call("python_exec", {"code": "print('ready')"}, timeout=120)
    assert m.text(r) == "ready\n", (r, m.log_text())
    return m


def state_dir(m):
    [start] = [e for e in map(json.loads, m.log_text().splitlines()) if e.get("event") == "mcp_gateway_start"]
    return start["state_dir"]


def mounts_under(path, pid="self"):
    """The mount points at or below path in the mount namespace of process
    pid (default: this one's, the host's)."""
    with open(f"/proc/{pid}/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return [p for p in points if p == path or p.startswith(path + "/")]


def running(m):
    """Starts a 30 s execution and returns once its code runs (its first
    progress notification)."""
    rid = m.start("tools/call", {"name": "python_exec", "arguments": {"code": "import time; time.sleep(30)"},
                                 "_meta": {"progressToken": "p"}})
    while True:
        msg = m.next(60)
        assert msg is not None, m.log_text()
        if msg.get("method") == "notifications/progress":
            return rid


@pytest.mark.parametrize("uid", [None, hostprobe.NOBODY], ids=["root", "uid65534"])
@pytest.mark.parametrize("end", ENDS)
def test_a_signal_or_stdin_s_end_during_an_execution_ends_cleanly(tmp_path, uid, end):
    """Before: SIGTERM and SIGINT crashed in the teardown (a call answered
    through the freed stdout sink: rc -11, ASan heap-use-after-free),
    SIGHUP killed it (rc -1), and both left the state dir with 7 tmpfs
    mounts (as root, in the host's namespace then)."""
    m = front(tmp_path, uid)
    try:
        state = state_dir(m)
        assert os.path.isdir(state)
        if uid is None:
            # the workspaces' tmpfs are mounted, in the front's own namespace
            # alone (gw_process_setup), never in the host's
            assert mounts_under(state, m.proc.pid), "a root gateway mounts its workspaces' tmpfs"
            assert mounts_under(state) == []
        rid = running(m)
        if end == "stdin closed":
            m.proc.stdin.close()
        else:
            m.proc.send_signal(getattr(signal, end))
        rc = m.proc.wait(60)
        assert rc == 0, m.log_text()[-4000:]
        assert not os.path.exists(state), os.listdir(state)
        assert mounts_under(state) == []
        # the running call got no answer (its client is gone), and stdout
        # carried protocol lines only (each parsed by the reader)
        msgs = []
        while (msg := m.next(5)) is not None:
            msgs.append(msg)
        assert not [x for x in msgs if x.get("id") == rid], msgs
        assert all(json.loads(line) for line in m.raw)
        reason = end if end == "stdin closed" else signal.strsignal(getattr(signal, end))
        assert any(e.get("event") == "mcp_client_gone" and e.get("reason") == reason
                   for e in map(json.loads, m.log_text().splitlines()))
    finally:
        if m.proc.poll() is None:
            m.proc.kill()
            m.proc.wait()
        if uid is not None:
            shutil.rmtree(m.home, ignore_errors=True)


def test_a_sigkill_leaves_no_state_dir():
    """The reaper removes the state dir once the front is gone, SIGKILL
    included (as uid 65534; a root front's mounts, in its own namespace
    too, are tests/mcp/test_mounts.py's). Before: the dir stayed."""
    m = front(None, hostprobe.NOBODY)
    try:
        state = state_dir(m)
        running(m)
        m.proc.kill()
        assert m.proc.wait(30) == -signal.SIGKILL
        wait_until(lambda: not os.path.exists(state), 30, f"{state} removed by the reaper")
    finally:
        if m.proc.poll() is None:
            m.proc.kill()
            m.proc.wait()
        shutil.rmtree(m.home, ignore_errors=True)
