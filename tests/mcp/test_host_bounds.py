"""Host tool commands are bounded whatever kernel code does (red-team H5):
kernel code can reach its own `_stdin_request` and fire tool_requests
without waiting for their answers, and each call of a command tool starts
a process on the host, outside the sandbox, as the daemon's user. So the
calls a conversation has waiting for their host are bounded
(`max_concurrent_tool_calls`, `ToolBusy` beyond), so are the commands
running at once in a process (`mcp.max_commands`, `ToolBusy` beyond); a
command is killed when its call ends without its answer (the execution
ended, the tool timeout, the kernel died: the gateway's `tool_cancel`),
runs in a cgroup of its own (pids and memory limits; every process in it
is killed, a child that left the command's session too), and the daemon
keeps serving whatever the flood (t03b: it aborted under RLIMIT_NOFILE
1024 before)."""
import json
import os
import subprocess
import threading
import time

import pytest
import requests

import hostprobe
from kennel_testlib import HttpGateway, cmdline, pids, traversable_dir, wait_until
from mcplib import Mcp

PY = "/usr/bin/python3"
# a distinct argument, so the test counts only its own commands
SLEEP_ARG = "20.%03d" % (os.getpid() % 1000)
FLOOD = """
import json
sr = ToolError.__init__.__globals__['_stdin_request']
for i in range({n}):
    try:
        sr('tool_request', json.dumps({{'call_id': 'c%d' % i, 'name': '{tool}', 'arguments': {{}}}}), 0.002)
    except TimeoutError:
        pass
"""
CGROUP = hostprobe.cgroup_limits(os.geteuid())


def flood(n, tool="slow", then=""):
    return FLOOD.format(n=n, tool=tool) + then


def sleepers():
    """pids of the test's tool commands (and their children) now running."""
    want = f"/bin/sleep\0{SLEEP_ARG}\0".encode()
    return [p for p in pids() if cmdline(p) == want]


def daemon_fds(gw):
    return len(os.listdir(f"/proc/{gw.proc.pid}/fd"))


def tools(tmp_path):
    return [
        {"name": "slow", "description": "sleeps", "timeout": 60, "command": ["/bin/sleep", SLEEP_ARG]},
        # a child that leaves the command's session: a group kill misses it
        {"name": "escape", "description": "sleeps in a new session too", "timeout": 60,
         "command": ["/bin/sh", "-c", f"setsid /bin/sleep {SLEEP_ARG} & exec /bin/sleep {SLEEP_ARG}"]},
        {"name": "forks", "description": "starts ten sleeps, as many as it can", "timeout": 60,
         "command": [PY, "-c", "import subprocess, time\n"
                               "for i in range(10):\n"
                               "    try:\n"
                               f"        subprocess.Popen(['/bin/sleep', '{SLEEP_ARG}'])\n"
                               "    except OSError:\n"
                               "        pass\n"
                               "time.sleep(30)"]},
        {"name": "hog", "description": "writes 256 MiB of memory", "timeout": 60,
         "command": [PY, "-c", "x = b'x' * (256 << 20); print(len(x))"]},
    ]


def make_gateway(tmp_path, mcp=None, config=None, user=None):
    tools_file = tmp_path / "tools.json"
    tools_file.write_text(json.dumps(tools(tmp_path)))
    cfg = {"mcp": {"tools": str(tools_file), **(mcp or {})}, "warm_pool": 0}
    cfg.update(config or {})
    return HttpGateway(tmp_path, config=cfg, user=user)


def mcp_post(gw, msg, timeout=120, session=None):
    headers = {"Authorization": f"Bearer {gw.token}", "Accept": "application/json, text/event-stream"}
    if session:
        headers["Mcp-Session-Id"] = session
    return requests.post(gw.url + "mcp", headers=headers, json=msg, timeout=timeout)


def mcp_session(gw):
    """The test's MCP session on gw, initialized at first need: its default
    conversation is what a call naming none runs in."""
    if getattr(gw, "mcp_session", None) is None:
        r = mcp_post(gw, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "pytest", "version": "0"}}})
        assert r.status_code == 200 and r.headers.get("mcp-session-id"), r.text
        gw.mcp_session = r.headers["mcp-session-id"]
        r = mcp_post(gw, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session=gw.mcp_session)
        assert r.status_code == 202, r.text
    return gw.mcp_session


def mcp_call(gw, name, arguments, timeout=120):
    r = mcp_post(gw, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}}, timeout=timeout, session=mcp_session(gw))
    assert r.status_code == 200, r.text
    return r.json()["result"]


def text_of(result):
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


def run(gw, code, **kw):
    r = mcp_call(gw, "python_exec", {"code": code, **kw})
    assert r["isError"] is False, r
    return r


class Watch:
    """Samples how many of the test's commands run, every 20 ms."""

    def __enter__(self):
        self.samples = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run)
        self.thread.start()
        return self

    def _run(self):
        while not self.done.is_set():
            self.samples.append((time.monotonic(), len(sleepers())))
            time.sleep(0.02)

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()

    @property
    def peak(self):
        return max((n for _, n in self.samples), default=0)

    def last_running(self):
        """The last time a command was seen running."""
        return max((t for t, n in self.samples if n), default=None)


def stopped(gw):
    if gw.proc.poll() is None:
        assert gw.stop() == 0, gw.log_file.read_text()[-3000:]
    wait_until(lambda: sleepers() == [], 10, lambda: f"the test's tool commands all gone: {sleepers()}")


@pytest.fixture
def gw(tmp_path):
    g = make_gateway(tmp_path)
    g.wait_ready()
    yield g
    stopped(g)


def test_a_flood_of_tool_requests_starts_a_bounded_number_of_host_commands(gw):
    """t03: 300 tool_requests fired without waiting. Before: 300 root
    `sleep` processes at once, the daemon's fds 27 -> 954, and the commands
    ran on after the execution ended (until their own 60 s)."""
    run(gw, "1")    # the conversation's own fds are open
    fds_before = daemon_fds(gw)
    with Watch() as watch:
        r = run(gw, flood(300, then="\nimport time\ntime.sleep(1)"))
    # forwarded to the host: the conversation's bound; the rest was ToolBusy
    assert r["structuredContent"]["kennel"]["tool_calls"] == 16, r["structuredContent"]
    assert 0 < watch.peak <= 16, watch.peak
    busy = [e for e in gw.events("tool_call") if e.get("ename") == "ToolBusy"]
    assert busy and "max_concurrent_tool_calls" in busy[0]["reason"], busy[:1]
    # the execution ended: its calls ended, so their commands were killed
    wait_until(lambda: sleepers() == [], 5, lambda: f"the ended execution's commands killed: {sleepers()}")
    wait_until(lambda: daemon_fds(gw) <= fds_before + 2, 10,
               lambda: f"the daemon's fds back near {fds_before}: {daemon_fds(gw)}")
    cancelled = [e for e in gw.events("mcp_tool_call") if e["status"] == "ToolCancelled"]
    assert cancelled, gw.events("mcp_tool_call")[:3]


def test_the_daemon_outlives_a_flood_under_a_low_fd_limit(gw):
    """t03b: under RLIMIT_NOFILE 1024, 400 calls, then new conversations.
    The commands' fds stay within what gw_capacity.c reserves for them
    (mcp.max_commands x 3 + 3), so the conversations it admits can open.
    Before: 260-358 commands started (+780 fds, the reserve was none), then
    a POST /api/kernels aborted the daemon (zsock_new_checked assertion)."""
    subprocess.run(["prlimit", f"--pid={gw.proc.pid}", "--nofile=1024:1024"], check=True)
    run(gw, "1")
    fds_before = daemon_fds(gw)
    with Watch() as watch:
        run(gw, flood(400, then="\nimport time\ntime.sleep(0.5)"))
    assert watch.peak <= 16, watch.peak
    assert max(daemon_fds(gw), fds_before) - fds_before <= 64 * 3 + 3
    headers = {"Authorization": f"token {gw.token}"}
    opened = []
    for _ in range(3):
        r = requests.post(gw.url + "api/kernels", headers=headers, json={"name": "python"}, timeout=60)
        assert r.status_code == 201, r.text
        opened.append(r.json()["id"])
    for kid in opened:
        assert requests.delete(gw.url + f"api/kernels/{kid}", headers=headers, timeout=30).status_code == 204
    assert gw.proc.poll() is None
    assert text_of(run(gw, "6 * 7")) == "42"


def test_a_command_is_killed_at_the_gateways_tool_timeout(gw):
    """The conversation's tool_timeout (1 s) ends the call before the
    command's own 60 s: ToolTimeout in the kernel, and the command is killed
    then, while the execution runs on (before: it ran its 20 s)."""
    opened = mcp_call(gw, "conversation_open", {"policy": {"tool_timeout": 1}})
    conv = opened["structuredContent"]["conversation"]
    with Watch() as watch:
        start = time.monotonic()
        r = run(gw, "import time\ntry:\n    slow()\nexcept ToolError as e:\n    print(e.ename)\ntime.sleep(4)",
                conversation=conv)
        end = time.monotonic()
    assert text_of(r) == "ToolTimeout\n", r
    assert watch.last_running() is not None, "the command never ran"
    assert watch.last_running() < end - 2, (watch.last_running() - start, end - start)


def test_a_command_is_killed_when_its_kernel_dies(gw):
    """A kernel that dies during a call: the call ends (kernel_ended), the
    command with it."""
    with Watch() as watch:
        r = mcp_call(gw, "python_exec", {"code": "import os, threading\n"
                                                 "threading.Timer(0.5, os._exit, [3]).start()\nslow()"})
        end = time.monotonic()
    assert r["isError"] is True and "KernelDied" in text_of(r), r
    assert watch.peak == 1
    wait_until(lambda: sleepers() == [], 5, lambda: f"the dead kernel's command killed: {sleepers()}")
    assert time.monotonic() - end < 5


@pytest.mark.parametrize("probe", [CGROUP], ids=lambda p: "host-gives-cgroups" if p.ok else "host-lacks-cgroups")
def test_every_process_of_a_command_is_killed_with_its_cgroup(gw, probe):
    """A command's child that left its session (setsid) is killed with the
    command's cgroup when the execution ends; a group kill alone misses it."""
    if not probe.ok:
        pytest.fail(f"the daemon as uid {os.geteuid()} gets no cgroup here ({probe.detail}): "
                    "test_commands_without_a_cgroup covers this host")
    started = gw.events("mcp_host_tools")
    assert started and started[-1]["cgroup"] == "active", (started, probe.detail)
    with Watch() as watch:
        run(gw, flood(1, tool="escape", then="\nimport time\ntime.sleep(1)"))
    assert watch.peak == 2, (watch.peak, probe.detail)
    wait_until(lambda: sleepers() == [], 5, lambda: f"both sleeps killed: {sleepers()} ({probe.detail})")


@pytest.fixture
def limited(tmp_path):
    g = make_gateway(tmp_path, mcp={"command_pids": 4, "command_memory_bytes": 64 << 20, "max_commands": 3})
    g.wait_ready()
    yield g
    stopped(g)


def test_a_command_runs_within_its_cgroups_limits(limited):
    """mcp.command_pids 4: the command and three of the ten sleeps it
    starts; mcp.command_memory_bytes 64 MiB: a command writing
    256 MiB is killed, ToolFailed naming the limit."""
    if not CGROUP.ok:
        pytest.fail(f"no cgroup for uid {os.geteuid()} here ({CGROUP.detail})")
    with Watch() as watch:
        run(limited, flood(1, tool="forks", then="\nimport time\ntime.sleep(1.5)"))
    assert watch.peak == 3, (watch.peak, CGROUP.detail)
    r = run(limited, "try:\n    hog()\nexcept ToolError as e:\n    print(e.ename, '|', e.evalue)")
    assert text_of(r).startswith("ToolFailed | ") and "out of memory (mcp.command_memory_bytes 67108864)" in text_of(r), r


def test_host_commands_are_bounded_in_all(limited):
    """mcp.max_commands 3 across two conversations that each fire 10 calls:
    never more than 3 commands at once; the front answers the rest ToolBusy."""
    other = mcp_call(limited, "conversation_open", {})["structuredContent"]["conversation"]
    results = []

    def fire(conv):
        results.append(run(limited, flood(10, then="\nimport time\ntime.sleep(1.5)"),
                           **({"conversation": conv} if conv else {})))
    with Watch() as watch:
        lanes = [threading.Thread(target=fire, args=(c,)) for c in (None, other)]
        for t in lanes:
            t.start()
        for t in lanes:
            t.join()
    assert len(results) == 2
    assert 0 < watch.peak <= 3, watch.peak
    busy = [e for e in limited.events("mcp_tool_call") if e["status"] == "ToolBusy"]
    assert busy, limited.events("mcp_tool_call")[:5]
    wait_until(lambda: sleepers() == [], 5, lambda: f"every command killed: {sleepers()}")


def test_kennel_mcp_on_stdio_bounds_the_same_flood(tmp_path):
    """t34: `kennel mcp --tools` (its own gateway): 100 host processes from
    one call before; now the conversation's bound, killed at the end."""
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools(tmp_path)))
    m = Mcp(tmp_path, args=["--tools", path])
    try:
        m.initialize()
        with Watch() as watch:
            r = m.call("python_exec", {"code": flood(100, then="\nimport time\ntime.sleep(1)")}, timeout=120)
        assert r["isError"] is False, r
        assert r["structuredContent"]["kennel"]["tool_calls"] == 16, r["structuredContent"]
        assert 0 < watch.peak <= 16, watch.peak
        wait_until(lambda: sleepers() == [], 5, lambda: f"the ended execution's commands killed: {sleepers()}")
    finally:
        assert m.close() == 0, m.log_text()[-3000:]


@pytest.mark.parametrize("probe", [hostprobe.cgroup_limits(hostprobe.NOBODY)],
                         ids=lambda p: "nobody-host-gives-cgroups" if p.ok else "nobody-host-lacks-cgroups")
def test_commands_without_a_cgroup(tmp_path, probe):
    """As uid 65534: where the host gives that user no cgroup (v1), a
    command is refused, ToolUnavailable naming the host's reason and the
    setting that lets it run without one, unless the config lets the layer
    degrade (the sandbox's own confine.allow_degraded); where it gives one,
    the command runs in it. `kennel mcp --connection-file` runs the commands
    in its own process, under its --config."""
    d = traversable_dir("kennel-hostbounds-")
    os.chown(d, hostprobe.NOBODY, hostprobe.NOBODY)
    gw = make_gateway(d, user=hostprobe.NOBODY)
    gw.wait_ready()
    try:
        tools_file = d / "front-tools.json"
        tools_file.write_text(json.dumps(tools(d)))
        os.chown(tools_file, hostprobe.NOBODY, hostprobe.NOBODY)
        code = "try:\n    print(slow())\nexcept ToolError as e:\n    print(e.ename, '|', e.evalue)"
        for degrade in ([], ["cgroup"]):
            config = d / f"front-{len(degrade)}.json"
            config.write_text(json.dumps({"confine": {"allow_degraded": degrade}}))
            os.chown(config, hostprobe.NOBODY, hostprobe.NOBODY)
            m = Mcp(d, args=["--connection-file", gw.conn_file, "--tools", tools_file, "--config", config],
                    uid=hostprobe.NOBODY, log_name=f"front-{len(degrade)}.log")
            try:
                m.initialize()
                opened = m.call("conversation_open", {"policy": {"tool_timeout": 1}})
                conv = opened["structuredContent"]["conversation"]
                out = m.text(m.call("python_exec", {"code": code, "conversation": conv}, timeout=120))
            finally:
                assert m.close() == 0, m.log_text()[-3000:]
            if probe.ok or degrade:
                # it ran (and the gateway's 1 s ended it)
                assert out.startswith("ToolTimeout | "), (out, probe.detail)
            else:
                assert out.startswith("ToolUnavailable | "), (out, probe.detail)
                assert "cgroup v1 cannot be delegated" in out and '"allow_degraded": ["cgroup"]' in out, out
    finally:
        stopped(gw)
