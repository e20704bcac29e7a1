"""How a kernel died reaches the client truthfully (issue 11): the memory
limit's kill is "out of memory (memory_bytes N)", an operator's kill -9 is
"killed by signal 9 (SIGKILL)", in the execute reply, the iopub error,
metadata.kennel.kernel_ended and the gateway log. The launcher's waiter
reads the sandbox's cgroup (v1 memory.oom_control / v2 memory.events
oom_kill) and says it on the status pipe; without a memory cgroup it says
the cause is unknown, never out of memory. Each test probes the host's
cgroup for the gateway's user first (tests/hostprobe.py)."""
import os
import shutil
import signal

import pytest

import hostprobe
from gwtest import Gateway, execute, execute_started, traversable_dir

MEMORY = 300 << 20
# shared anonymous memory: not bounded by RLIMIT_DATA (private writable
# mappings only), so only the cgroup's limit stops it
BOMB = ("import mmap\nm = mmap.mmap(-1, 1 << 30)\n"
        "for i in range(0, len(m), 4096):\n    m[i] = 1\n")


def kernel_pid(gw, cid):
    listed = gw.control.request("conversation_list_request")["content"]["conversations"]
    return next(c["pid"] for c in listed if c["conversation_id"] == cid)


def memory_cgroup(gw, uid):
    """The host probe (can a launcher run as uid get cgroup limits here?),
    checked against the gateway's first confinement report."""
    probe = hostprobe.cgroup_limits(uid)
    layer = gw.events("confinement")[0]["layers"]["cgroup"]
    assert (layer["state"] == "active") == probe.ok, (probe.detail, layer)
    return probe


def kill_9_expected(probe):
    return "killed by signal 9 (SIGKILL)" + ("" if probe.ok else "; cause unknown: no memory cgroup")


def died(kc, msg_id):
    """The execute reply and the iopub error of a request its kernel's death
    ended."""
    reply = kc.get_shell_msg(timeout=60)
    assert reply["parent_header"]["msg_id"] == msg_id
    while True:
        m = kc.get_iopub_msg(timeout=10)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "error":
            return reply, m["content"]


def assert_reported(gw, reply, error, expected):
    c = reply["content"]
    assert c["ename"] == "KernelDied" and expected in c["evalue"], c
    assert error["ename"] == "KernelDied" and expected in error["evalue"], error
    assert reply["metadata"]["kennel"]["kernel_ended"] == expected
    assert [e["status"] for e in gw.events("kernel_exit")] == [expected]


def kill_9_and_check(gw, kc, cid, expected):
    """A real kill -9 of conversation cid's kernel mid-execution."""
    msg_id = execute_started(kc, "import time; time.sleep(60)")
    os.kill(kernel_pid(gw, cid), signal.SIGKILL)
    reply, error = died(kc, msg_id)
    assert_reported(gw, reply, error, expected)
    assert "out of memory" not in reply["content"]["evalue"] and "out of memory" not in error["evalue"]


def test_out_of_memory_is_named_with_its_limit(make_gateway):
    gw = make_gateway(config={"warm_pool": 0})
    _, kc = gw.open_client("oom", policy={"memory_bytes": MEMORY})
    probe = memory_cgroup(gw, os.geteuid())
    if not probe.ok:
        # without a cgroup the bomb would take host memory: nothing to test
        pytest.skip("no memory cgroup for the gateway's user: " + probe.detail)
    msg_id = kc.execute(BOMB)
    reply, error = died(kc, msg_id)
    assert_reported(gw, reply, error, "out of memory (memory_bytes %d)" % MEMORY)
    assert "signal 9" not in reply["content"]["evalue"]
    log = (gw.state / "conv" / "oom" / "kernel.log").read_text()
    assert any(line.startswith("kennel-launch: the sandbox reached its memory limit (%d bytes)" % MEMORY)
               for line in log.splitlines()), log
    r, _ = execute(kc, "1", timeout=60)
    assert r["content"]["status"] == "ok"


def test_kill_9_is_not_called_out_of_memory(make_gateway):
    gw = make_gateway(config={"warm_pool": 0})
    _, kc = gw.open_client("k9")
    kill_9_and_check(gw, kc, "k9", kill_9_expected(memory_cgroup(gw, os.geteuid())))


def test_unprivileged_gateway_never_claims_oom_without_a_cgroup():
    """A gateway run as uid 65534: on a cgroup v1 host (or v2 without
    delegation) its launchers have no memory cgroup, and a kill -9 is "cause
    unknown: no memory cgroup"; where the probe finds one, it is plain."""
    uid = hostprobe.NOBODY
    userns = hostprobe.user_namespaces(uid)
    if not userns.ok:
        pytest.skip(f"{userns.detail}: a gateway run as uid {uid} confines nothing on this host "
                    "(security/test_confine.py::test_refused_where_the_host_forbids_user_namespaces "
                    "asserts the refusal)")
    # in /tmp, not pytest's 0700 tmp dirs: uid 65534 reaches its own files
    home = traversable_dir("kennel-death-")
    config = {"warm_pool": 0, "confine": {"allow_degraded": hostprobe.allow_degraded(uid)}}
    gw = Gateway(home, config=config, user=uid)  # its state dir and home are its own
    try:
        _, kc = gw.open_client("k9")
        kill_9_and_check(gw, kc, "k9", kill_9_expected(memory_cgroup(gw, uid)))
    finally:
        gw.stop()
        shutil.rmtree(home, ignore_errors=True)
