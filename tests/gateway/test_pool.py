"""The warm pool: kernels confined ahead of need, claimed by one conversation
each, bound to its identity, tools and settings at claim time, refilled in
the background; a policy that needs another sandbox gets a cold kernel."""
import os
import signal
import statistics
import time

from jupyter_client import BlockingKernelClient

from gwtest import execute, stdout_of
from kennel_testlib import wait_until


def pool_info(gw):
    return gw.control.request("gateway_info_request")["content"]["warm_pool"]


def wait_pool(gw, ready, timeout=30):
    wait_until(lambda: pool_info(gw)["ready"] >= ready, timeout, lambda: pool_info(gw))


def pids(gw):
    convs = gw.control.request("conversation_list_request")["content"]["conversations"]
    return {c["conversation_id"]: c["pid"] for c in convs}


def connect(gw, reply):
    """A client on an open reply's connection, without wait_for_ready (its
    polling adds 200 ms)."""
    kc = BlockingKernelClient()
    kc.load_connection_info(reply["connection"])
    kc.start_channels()
    gw.clients.append(kc)
    return kc


def open_timed(gw, cid, **content):
    """(seconds from open request to the first execute_reply of x = 1, open
    reply, client)."""
    started = time.perf_counter()
    reply = gw.control.open(cid, **content)
    assert reply["status"] == "ok", reply
    kc = connect(gw, reply)
    msg_id = kc.execute("x = 1")
    r = kc.get_shell_msg(timeout=30)
    assert r["parent_header"]["msg_id"] == msg_id and r["content"]["status"] == "ok", r
    return time.perf_counter() - started, reply, kc


SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def test_claims_bind_identity_tools_and_settings_and_the_pool_refills(make_gateway):
    gw = make_gateway(config={"warm_pool": 2})
    wait_pool(gw, 2)
    assert pool_info(gw)["size"] == 2
    seconds, a_reply, a = open_timed(gw, "a", tools=[{"name": "alpha", "description": "A.", "parameters": SCHEMA}],
                                     policy={"tool_timeout": 7})
    seconds_b, b_reply, b = open_timed(gw, "b")
    claimed = [e["conversation"] for e in gw.events("kernel_claimed")]
    assert claimed == ["a", "b"]
    got = pids(gw)
    assert got["a"] != got["b"]
    # a's own tools and tool timeout, bound at claim; b has none
    r, out = execute(a, "print(sorted(tools)); open('/workspace/mine', 'w').write('a')")
    assert stdout_of(out) == "['alpha']\n", out
    r, out = execute(b, "import os; print(sorted(tools), os.listdir('/workspace'), 'x' in globals())")
    assert stdout_of(out) == "[] [] True\n", out
    # the workspace the kernel sees is the one the open reply names
    assert (gw.inside(a_reply["workspace"]) / "mine").read_text() == "a"
    assert a_reply["workspace"].endswith("/conv/a/workspace")
    # refilled in the background, with fresh kernels
    wait_pool(gw, 2)
    assert pool_info(gw)["claimed"] == 2
    gw.control.request("conversation_close_request", {"conversation_id": "a"})
    _, _, c = open_timed(gw, "c")
    assert pids(gw)["c"] not in (got["a"], got["b"])
    assert not gw.inside(a_reply["workspace"]).exists()
    assert gw.stop() == 0


def test_a_policy_that_needs_another_sandbox_starts_cold(make_gateway):
    gw = make_gateway(config={"warm_pool": 1})
    wait_pool(gw, 1)
    clients = {}
    for cid, policy in [("mem", {"memory_bytes": 512 << 20}), ("net", {"network": "loopback"}),
                        ("env", {"env": {"A": "1"}}), ("nb", {"builtins": "notebook"})]:
        _, _, clients[cid] = open_timed(gw, cid, policy=policy)
    assert gw.events("kernel_claimed") == []
    assert pool_info(gw)["ready"] == 1
    # the cold kernel has what a pooled one could not have had
    r, out = execute(clients["env"], "import os; print(os.environ.get('A'))")
    assert stdout_of(out) == "1\n", out
    # and a default policy still takes the pooled one
    open_timed(gw, "plain")
    assert [e["conversation"] for e in gw.events("kernel_claimed")] == ["plain"]
    assert gw.stop() == 0


def test_warm_start_time(make_gateway, capsys):
    gw = make_gateway(config={"warm_pool": 1})
    times = []
    for i in range(5):
        wait_pool(gw, 1)
        seconds, _, kc = open_timed(gw, f"w{i}")
        times.append(seconds)
    assert len(gw.events("kernel_claimed")) == 5
    cold, _, _ = open_timed(gw, "cold", policy={"memory_bytes": 512 << 20})
    assert len(gw.events("kernel_claimed")) == 5
    # the pool spares the whole launch: confinement and Python's start
    assert statistics.median(times) < cold, (times, cold)
    with capsys.disabled():
        print(f"\ncold start: {cold * 1000:.1f} ms")
        print(f"\nwarm start (open -> first execute_reply, jupyter_client): median {statistics.median(times) * 1000:.1f} ms,"
              f" all {[round(t * 1000, 1) for t in times]}")
    assert gw.stop() == 0


def test_a_claimed_kernel_that_dies_right_after_the_open_fails_the_request_with_its_cause(make_gateway):
    """An open that claims a pooled kernel is answered before the relay's
    handshake with it ends; requests sent meanwhile are held. A kernel that
    dies then fails the held or running request with a named cause (not a
    hang), and the next request gets a fresh kernel that says so."""
    gw = make_gateway(config={"warm_pool": 1})
    wait_pool(gw, 1)
    pooled = gw.events("pool_ready")[-1]["pid"]
    reply = gw.control.open("dies")
    assert reply["status"] == "ok", reply
    kc = connect(gw, reply)
    msg_id = kc.execute("import time; time.sleep(5)")
    os.kill(pooled, signal.SIGKILL)
    r = kc.get_shell_msg(timeout=30)
    assert r["parent_header"]["msg_id"] == msg_id
    assert [e["conversation"] for e in gw.events("kernel_claimed")] == ["dies"]
    # The kill races the request to the gateway. Held (the kill beat the
    # handshake: the start failed) or running (died): the request fails
    # naming SIGKILL and the next one learns its state was lost. Or the
    # gateway saw the death before it read the request: the request ran on
    # the fresh kernel and its own reply says the state was lost.
    if r["content"]["status"] == "ok":
        print("the death was seen before the request arrived")
        assert r["metadata"]["kennel"]["state"] == "lost", r["metadata"]
        return
    assert r["content"]["ename"] in ("KernelStartFailed", "KernelDied"), r["content"]
    assert "SIGKILL" in r["content"]["evalue"], r["content"]
    r, out = execute(kc, "x = 2; print(x)")
    assert r["content"]["status"] == "ok" and stdout_of(out) == "2\n", r["content"]
    assert r["metadata"]["kennel"]["state"] == "lost"
