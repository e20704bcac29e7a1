"""How a kernel died reaches the client truthfully (issue 11): the memory
limit's kill is "out of memory (memory_bytes N)", an operator's kill -9 is
"killed by signal 9 (SIGKILL)", in the execute reply, the iopub error,
metadata.kennel.kernel_ended and the gateway log. The launcher's waiter
reads the sandbox's cgroup (v1 memory.oom_control / v2 memory.events
oom_kill) and says it on the status pipe; without a memory cgroup it says
the cause is unknown, never out of memory."""
import os
import signal

import pytest

from gwtest import execute, execute_started

MEMORY = 300 << 20
# shared anonymous memory: not bounded by RLIMIT_DATA (private writable
# mappings only), so only the cgroup's limit stops it
BOMB = ("import mmap\nm = mmap.mmap(-1, 1 << 30)\n"
        "for i in range(0, len(m), 4096):\n    m[i] = 1\n")


def kernel_pid(gw, cid):
    listed = gw.control.request("conversation_list_request")["content"]["conversations"]
    return next(c["pid"] for c in listed if c["conversation_id"] == cid)


def cgroup_layer(gw):
    """The memory cgroup as the gateway's first confinement reported it
    (this host: cgroup v1 as root, or v2 with delegation)."""
    layers = gw.events("confinement")[0]["layers"]
    return layers["cgroup"]


def died(kc, msg_id):
    """The execute reply and the iopub error of a request its kernel's death
    ended."""
    reply = kc.get_shell_msg(timeout=60)
    assert reply["parent_header"]["msg_id"] == msg_id
    while True:
        m = kc.get_iopub_msg(timeout=10)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "error":
            return reply, m["content"]


def test_out_of_memory_is_named_with_its_limit(make_gateway):
    gw = make_gateway(config={"warm_pool": 0})
    _, kc = gw.open_client("oom", policy={"memory_bytes": MEMORY})
    layer = cgroup_layer(gw)
    # the host probe: this test needs the memory cgroup it is about
    assert layer["state"] == "active" and "memory %d B" % (2 << 30) in layer["reason"], layer
    msg_id = kc.execute(BOMB)
    reply, error = died(kc, msg_id)
    expected = "out of memory (memory_bytes %d)" % MEMORY
    c = reply["content"]
    assert c["ename"] == "KernelDied" and expected in c["evalue"], c
    assert "signal 9" not in c["evalue"]
    assert error["ename"] == "KernelDied" and expected in error["evalue"]
    assert reply["metadata"]["kennel"]["kernel_ended"] == expected
    assert [e["status"] for e in gw.events("kernel_exit")] == [expected]
    log = (gw.state / "conv" / "oom" / "kernel.log").read_text()
    assert any(line.startswith("kennel-launch: the sandbox reached its memory limit (%d bytes)" % MEMORY)
               for line in log.splitlines()), log
    r, _ = execute(kc, "1", timeout=60)
    assert r["content"]["status"] == "ok"


def test_kill_9_is_not_called_out_of_memory(make_gateway):
    gw = make_gateway(config={"warm_pool": 0})
    _, kc = gw.open_client("k9")
    assert cgroup_layer(gw)["state"] == "active"
    msg_id = execute_started(kc, "import time; time.sleep(60)")
    os.kill(kernel_pid(gw, "k9"), signal.SIGKILL)
    reply, error = died(kc, msg_id)
    expected = "killed by signal 9 (SIGKILL)"
    c = reply["content"]
    assert c["ename"] == "KernelDied" and expected in c["evalue"], c
    assert "memory" not in c["evalue"] and "memory" not in error["evalue"]
    assert expected in error["evalue"]
    assert reply["metadata"]["kennel"]["kernel_ended"] == expected
    assert [e["status"] for e in gw.events("kernel_exit")] == [expected]
