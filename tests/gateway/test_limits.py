"""Step 4: kernel death, timeouts, output truncation, queue bound, interrupt,
shutdown and heartbeat answered by the gateway, idle culling."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest
import zmq

import hostprobe
from gwtest import Control, built, connect, execute, execute_started, gone, launcher, stdout_of
from kennel_testlib import stream_text
from kennel_testlib import serve, setpriv, traversable_dir, wait_until

NOBODY = hostprobe.NOBODY


def kernel_pid(gateway, cid):
    for c in gateway.control.request("conversation_list_request")["content"]["conversations"]:
        if c["conversation_id"] == cid:
            return c["pid"]
    raise KeyError(cid)


def test_kill_9_mid_execution(gateway):
    _, kc = gateway.open_client("die")
    execute(kc, "v = 1")
    pid = kernel_pid(gateway, "die")
    msg_id = execute_started(kc, "import time; time.sleep(30)")
    os.kill(pid, signal.SIGKILL)
    reply = kc.get_shell_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg_id
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "KernelDied"
    assert "signal 9" in c["evalue"] and "SIGKILL" in c["evalue"]
    assert reply["metadata"]["kennel"]["state"] == "lost"
    seen = []
    while True:
        m = kc.get_iopub_msg(timeout=10)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        seen.append(m["msg_type"])
        if m["msg_type"] == "error":
            assert "SIGKILL" in m["content"]["evalue"]
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    assert "error" in seen
    assert gateway.events("kernel_exit")
    # the next request starts a fresh kernel and says the state was lost
    r, out = execute(kc, "print('v' in globals())", timeout=60)
    assert r["content"]["status"] == "ok"
    assert stdout_of(out) == "False\n"
    assert r["metadata"]["kennel"]["state"] == "lost"
    r, out = execute(kc, "print(1)")
    assert r["metadata"]["kennel"]["state"] == "kept"
    assert kernel_pid(gateway, "die") != pid


@pytest.mark.parametrize("code", ["while True: pass", "import time; time.sleep(1000)"])
def test_timeout_interrupts_and_keeps_variables(gateway, code):
    reply, kc = gateway.open_client("to", policy={"execution_timeout": 1})
    execute(kc, "kept = 5")
    t0 = time.time()
    # stop_on_error=False: ipykernel would abort a request sent right after
    # the interrupted one, which is its business, not the gateway's
    r, out = execute(kc, code, timeout=30, stop_on_error=False)
    assert time.time() - t0 < 10
    c = r["content"]
    assert c["status"] == "error" and c["ename"] == "ExecutionTimeout"
    assert "kept" in c["evalue"]
    assert r["metadata"]["kennel"]["state"] == "kept"
    errors = [m["content"]["ename"] for m in out if m["msg_type"] == "error"]
    assert errors == ["ExecutionTimeout"]  # one error output, the kernel's KeyboardInterrupt replaced
    r, out = execute(kc, "print(kept)")
    assert stdout_of(out) == "5\n"
    assert gateway.events("timeout")


def test_timeout_kills_when_interrupt_is_ignored(gateway):
    reply, kc = gateway.open_client("tk", policy={"execution_timeout": 1})
    execute(kc, "lost = 5")
    pid = kernel_pid(gateway, "tk")
    r, out = execute(kc, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", timeout=30)
    c = r["content"]
    assert c["status"] == "error" and c["ename"] == "ExecutionTimeout"
    assert "killed" in c["evalue"] and "lost" in c["evalue"]
    assert r["metadata"]["kennel"]["state"] == "lost"
    assert any(m["msg_type"] == "error" and m["content"]["ename"] == "ExecutionTimeout" for m in out)
    assert gone(pid)
    r, out = execute(kc, "print('lost' in globals())", timeout=60)
    assert stdout_of(out) == "False\n"
    assert gateway.events("kill")


def test_output_truncated_with_marker(gateway):
    _, kc = gateway.open_client("out", policy={"output_bytes": 10000})
    r, out = execute(kc, "for i in range(2000): print('x' * 100, flush=True)")
    assert r["content"]["status"] == "ok"
    text = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")
    assert "output truncated" in text
    assert "x" * 100 in text and len(text) < 10000 + 200
    k = r["metadata"]["kennel"]
    assert k["output_truncated"] is True and k["output_bytes"] > 10000
    r, out = execute(kc, "print('small')")
    assert stdout_of(out) == "small\n"


PUBLISH = "pub = ToolError.__init__.__globals__['_publish']\n"


def iopub_bytes(messages):
    """What reached the client: content and buffers of each message."""
    return sum(len(json.dumps(m["content"])) + sum(len(b) for b in m.get("buffers") or []) for m in messages)


@pytest.mark.parametrize("kind", ["clear_output", "status", "custom"])
def test_every_iopub_message_counts_against_the_output_limit(gateway, kind):
    """t20: 8 messages of one iopub type from kernel code (through the
    kernel's own _publish), 8 x 512 KiB with a 256 KiB limit (the red-team
    sent 8 x 2 MiB with 1 MiB; this gateway's messages are at most 1 MiB).
    Before: clear_output, a status with an extra field and a type no one
    knows passed whole.
    Now every message of the execution counts; over the limit a status is
    trimmed to its execution_state (never dropped: a client waits for its
    idle) and anything else dropped, after one truncation marker."""
    _, kc = gateway.open_client(f"count-{kind}", policy={"output_bytes": 256 << 10})
    pad = "'x' * (512 << 10)"
    call = {"clear_output": f"pub('clear_output', {{'wait': False, 'pad': {pad}}})",
            "status": f"pub('status', {{'execution_state': 'busy', 'pad': {pad}}})",
            "custom": f"pub('kennel_custom', {{'pad': {pad}}})"}[kind]
    r, out = execute(kc, PUBLISH + f"for i in range(8):\n    {call}", timeout=120)
    assert r["content"]["status"] == "ok"
    k = r["metadata"]["kennel"]
    assert k["output_truncated"] is True and k["output_bytes"] > 4 << 20, k
    assert iopub_bytes(out) < (256 << 10) + 4096, iopub_bytes(out)
    assert "output truncated" in stream_text(out, "stderr")


def test_a_cells_own_code_echoed_is_not_its_output(gateway):
    """execute_input echoes the client's code: up to the request's own size
    it costs nothing, so a cell bigger than output_bytes still gets its
    execute_input (JupyterLab waits for it; tests/http's interrupt test
    hung without). What a kernel publishes as execute_input beyond that
    counts like any output."""
    _, kc = gateway.open_client("echo", policy={"output_bytes": 64 << 10})
    code = "_ = [\n" + "1,\n" * 40000 + "]\nprint('ran')"
    msg_id = kc.execute(code)
    seen = []
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        seen.append(m["msg_type"])
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    assert "execute_input" in seen and "stream" in seen, seen
    r, out = execute(kc, PUBLISH + "pub('execute_input', {'code': 'x' * (256 << 10), 'execution_count': 1})")
    k = r["metadata"]["kennel"]
    assert k["output_truncated"] is True and k["output_bytes"] > 256 << 10, k


def test_output_after_its_cell_counts_too(gateway):
    """t20b: a thread that prints 24 x 64 KiB after its cell ended, with a
    256 KiB limit (the red-team: 24 x 1 MiB past 1 MiB). Before: all of it
    reached the client. Now output outside the running execution has
    output_bytes from one client request to the next: at most 256 KiB,
    then a marker in that cell and nothing more; the client's next request
    opens the window again."""
    _, kc = gateway.open_client("after", policy={"output_bytes": 256 << 10})
    code = ("import threading, time\n"
            "def later():\n"
            "    time.sleep(0.5)\n"
            "    for i in range(24):\n"
            "        print('y' * (64 << 10), flush=True)\n"
            "        time.sleep(0.05)\n"
            "threading.Thread(target=later).start()")
    r, out = execute(kc, code)
    cell = r["parent_header"]["msg_id"]
    late = []
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        try:
            late.append(kc.get_iopub_msg(timeout=0.5))
        except Exception:
            continue
    assert all(m["parent_header"].get("msg_id") == cell for m in late if m["msg_type"] == "stream")
    got = sum(len(m["content"]["text"]) for m in late if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")
    assert 0 < got <= 256 << 10, got
    markers = [m for m in late if m["msg_type"] == "stream" and "outside a running execution" in m["content"]["text"]]
    assert len(markers) == 1, [m["content"]["text"][:80] for m in late if m["msg_type"] == "stream"][:5]
    r, out = execute(kc, "print('next')")
    assert stdout_of(out) == "next\n"


def test_queue_bound(make_gateway):
    gw = make_gateway(config={"queue_limit": 2})
    _, kc = gw.open_client("q")
    ids = [kc.execute("import time; time.sleep(1)") for _ in range(5)]
    replies = {}
    deadline = time.time() + 30
    while len(replies) < 5 and time.time() < deadline:
        m = kc.get_shell_msg(timeout=30)
        replies[m["parent_header"]["msg_id"]] = m["content"]
    assert len(replies) == 5
    statuses = [replies[i]["status"] for i in ids]
    assert statuses[:3] == ["ok", "ok", "ok"]
    assert [replies[i].get("ename") for i in ids[3:]] == ["QueueFull", "QueueFull"]


def test_interrupt_answered_by_gateway(gateway):
    _, kc = gateway.open_client("int")
    msg_id = execute_started(kc, "import time; time.sleep(60)")
    # what jupyter_client does for interrupt_mode "message"
    imsg = kc.session.msg("interrupt_request", {})
    kc.control_channel.send(imsg)
    ireply = kc.get_control_msg(timeout=10)
    assert ireply["msg_type"] == "interrupt_reply" and ireply["content"]["status"] == "ok"
    reply = kc.get_shell_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert gateway.events("interrupt")


def test_shutdown_request_restart_and_close(gateway):
    _, kc = gateway.open_client("sd")
    execute(kc, "z = 1")
    pid = kernel_pid(gateway, "sd")
    kc.shutdown(restart=True)
    r = kc.get_control_msg(timeout=10)
    assert r["msg_type"] == "shutdown_reply" and r["content"]["restart"] is True
    r, out = execute(kc, "print('z' in globals())", timeout=60)
    assert stdout_of(out) == "False\n"
    assert gone(pid)
    kc.shutdown(restart=False)
    r = kc.get_control_msg(timeout=10)
    assert r["content"]["restart"] is False
    wait_until(lambda: not gateway.control.request("conversation_list_request")["content"]["conversations"],
               10, "the conversation closed")


def test_heartbeat_answered(gateway):
    reply, kc = gateway.open_client("hb")
    conn = reply["connection"]
    s = connect(conn, "hb_port", zmq.REQ)
    s.send(b"ping")
    assert s.poll(2000)
    assert s.recv() == b"ping"
    s.close()


def test_idle_culling(gateway):
    reply, kc = gateway.open_client("idle", policy={"idle_ttl": 2})
    execute(kc, "1")
    pid = kernel_pid(gateway, "idle")
    wait_until(lambda: not gateway.control.request("conversation_list_request")["content"]["conversations"],
               10, "not culled", interval=0.1)
    assert gone(pid)
    assert any(e["reason"] == "idle" for e in gateway.events("close"))


def test_max_conversations(make_gateway):
    gw = make_gateway(config={"max_conversations": 1})
    assert gw.control.open("one")["status"] == "ok"
    c = gw.control.open("two")
    assert c["status"] == "error" and c["ename"] == "TooManyConversations"
    assert "maximum of 1" in c["evalue"]
    assert gw.control.open("one")["created"] is False


def test_startup_confinement_failure_refuses_conversations(make_gateway, tmp_path):
    """A launcher that cannot confine (here one that fails every launch at
    userns, as on a host without unprivileged user namespaces): the
    start-up probe fails, the daemon still writes its connection file and
    answers gateway_info with ready false and the layer and setting, every
    open is refused with them, `kennel info` exits 3, nothing is left."""
    bad = tmp_path / "bad_launch.sh"
    bad.write_text('#!/bin/sh\necho \'{"status":"error","stage":"userns","errno":1,"message":"unshare: EPERM; '
                   'set kernel.unprivileged_userns_clone=1"}\' >&4\nexit 1\n')
    bad.chmod(0o755)
    gw = make_gateway(config={"launcher": str(bad)})
    info = gw.control.request("gateway_info_request")["content"]
    assert info["ready"] is False
    assert info["startup_error"]["layer"] == "userns", info
    assert "unprivileged_userns_clone" in info["startup_error"]["reason"]
    assert info["confinement"]["userns"]["state"] == "unsupported"
    c = gw.control.open("refused")
    assert c["status"] == "error" and c["ename"] == "ConfinementUnavailable", c
    assert "userns" in c["evalue"] and "unprivileged_userns_clone" in c["evalue"]
    failed = gw.events("confinement_failed")
    assert failed and failed[0]["layer"] == "userns" and "unprivileged_userns_clone" in failed[0]["reason"]
    assert gw.events("ready")[0]["confined"] is False
    out = subprocess.run([str(built("gateway/kennel")), "info", "--connection-file", str(gw.conn_file)],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 3 and "unprivileged_userns_clone" in out.stderr, out
    assert gw.control.request("conversation_list_request")["content"]["conversations"] == []
    assert not list((gw.state / "conv").glob("*"))
    assert not gw.events("pool_launch") and not gw.events("fork_server_start")


def test_a_launcher_that_cannot_run_is_named_at_start(make_gateway, tmp_path):
    """The start-up probe's launcher ends before its status line (here it
    does not exist: exec fails): the reason has its exit status and its own
    last output (before: "the launcher ended without a status line (exit
    status 127)", its stderr sent to /dev/null). The probe's log is gone
    once the probe ended."""
    missing = tmp_path / "no-such-kennel-launch"
    gw = make_gateway(config={"launcher": str(missing)})
    info = gw.control.request("gateway_info_request")["content"]
    assert info["ready"] is False and info["startup_error"]["layer"] == "launcher", info
    reason = info["startup_error"]["reason"]
    assert reason == (f"the launcher ended without a status line (exit status 127); its last output: "
                      f"kennel: exec {missing}: No such file or directory"), reason
    c = gw.control.open("refused")
    assert c["ename"] == "ConfinementUnavailable" and f"exec {missing}" in c["evalue"], c
    assert not (gw.state / "probe.log").exists()


def test_a_required_layer_the_host_lacks_refuses(make_gateway):
    """The real launcher with a layer required that this host may not give.
    Probed first: a gateway with the default config reports the quota
    layer's state on this host. Where it is not active, a gateway requiring
    it (allow_degraded []) must fail closed naming quota; where the host
    gives a quota (the gateway's tmpfs workspaces), the strict gateway is
    ready (and the test says which case ran)."""
    probe = make_gateway("probe")
    quota = probe.control.request("gateway_info_request")["content"]["confinement"]["quota"]
    probe.stop()
    strict = make_gateway("strict", config={"confine": {"allow_degraded": []}})
    info = strict.control.request("gateway_info_request")["content"]
    print(f"host quota layer: {quota}")
    if quota["state"] == "active":
        assert info["ready"] is True, info
        assert strict.control.open("q")["status"] == "ok"
        return
    assert info["ready"] is False and info["startup_error"]["layer"] == "quota", info
    c = strict.control.open("q")
    assert c["ename"] == "ConfinementUnavailable" and "quota" in c["evalue"], c


def serve_as_nobody(config):
    """`kennel serve` as uid 65534 (setpriv) in a scratch dir it owns; returns
    (process, dir, Control) once the connection file is there."""
    d = traversable_dir("kennel-gw-nobody-", 0o755)
    os.chown(d, NOBODY, NOBODY)
    cfg = d / "config.json"
    cfg.write_text(json.dumps(dict({"launcher": launcher()}, **config)))
    os.chmod(cfg, 0o644)
    proc = serve(d / "state", cfg, d / "gw.log", d / "gw.json", prefix=setpriv(NOBODY), timeout=30,
                 env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
    return proc, d, Control(d / "gw.json")


def stop_nobody(proc, d, control):
    control.close()
    proc.terminate()
    assert proc.wait(20) == 0
    shutil.rmtree(d, ignore_errors=True)


def test_unprivileged_gateway_without_allow_degraded_refuses(tmp_path):
    """An unprivileged gateway that allows no layer to degrade. Probed
    first: the same gateway allowing every degradable layer reports which
    layers this host does not give uid 65534 (cgroup on a cgroup v1 host,
    quota on a host directory). The strict gateway must then be up but not
    ready, name one of those layers, and refuse opens with it; on a host
    that gives every layer to an unprivileged user it must be ready."""
    proc, d, control = serve_as_nobody({"confine": {"allow_degraded": ["cgroup", "cgroupns", "landlock", "quota"]}})
    try:
        permissive = control.request("gateway_info_request")["content"]
    finally:
        stop_nobody(proc, d, control)
    lacking = {name for name, layer in permissive["confinement"].items() if layer["state"] != "active"}
    print(f"unprivileged, permissive: ready {permissive['ready']}, layers not active: {sorted(lacking)}")
    proc, d, control = serve_as_nobody({"confine": {"allow_degraded": []}})
    try:
        info = control.request("gateway_info_request")["content"]
        if permissive["ready"] and not lacking:
            assert info["ready"] is True, info
            return
        assert info["ready"] is False, info
        layer = info["startup_error"]["layer"]
        assert layer in lacking, (layer, lacking)
        c = control.request("conversation_open_request", {"conversation_id": "u"})["content"]
        assert c["ename"] == "ConfinementUnavailable" and layer in c["evalue"], c
    finally:
        stop_nobody(proc, d, control)


def test_each_refusal_names_a_fix_that_works(tmp_path):
    """Issue 24 point 11: an unprivileged gateway on a host that lacks a
    layer for it (cgroup on cgroup v1) refused every open, and the message
    named no setting the operator could apply (only "start as root, or use
    a host with cgroup v2 delegation"). Now a degradable layer's refusal
    names `"confine": {"allow_degraded": ["<layer>"]}`: applying exactly
    what each refusal names, one after the other, makes the gateway ready
    and a conversation opens and runs."""
    allowed = []
    for _ in range(5):
        proc, d, control = serve_as_nobody({"confine": {"allow_degraded": list(allowed)}})
        try:
            info = control.request("gateway_info_request")["content"]
            if info["ready"]:
                reply = control.request("conversation_open_request", {"conversation_id": "fixed"})["content"]
                assert reply["status"] == "ok", reply
                break
            layer, reason = info["startup_error"]["layer"], info["startup_error"]["reason"]
            named = f'"confine": {{"allow_degraded": ["{layer}"]}}'
            assert named in reason, reason
            c = control.request("conversation_open_request", {"conversation_id": "u"})["content"]
            assert c["ename"] == "ConfinementUnavailable" and named in c["evalue"], c
            assert layer not in allowed
            allowed.append(layer)
        finally:
            stop_nobody(proc, d, control)
    else:
        pytest.fail(f"not ready after applying the fixes named: {allowed}")
    print(f"uid 65534 here needs allow_degraded {allowed} (probed: {hostprobe.lacking_layers(NOBODY)})")
    assert set(allowed) <= set(hostprobe.lacking_layers(NOBODY)) | {"quota"}, allowed


def test_reopen_after_kernel_death_gets_a_fresh_kernel(gateway):
    reply, kc = gateway.open_client("reopen-dead")
    pid = kernel_pid(gateway, "reopen-dead")
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: gateway.events("kernel_exit"), 10, "kernel_exit logged")
    again = gateway.control.open("reopen-dead")
    assert again["status"] == "ok" and again["created"] is False
    assert again["connection"] == reply["connection"]
    r, out = execute(kc, "print('alive')", timeout=60)
    assert stdout_of(out) == "alive\n"
    assert kernel_pid(gateway, "reopen-dead") != pid


def test_out_of_memory_is_reported_and_the_next_request_works(gateway):
    _, kc = gateway.open_client("oom", policy={"memory_bytes": 300 << 20})
    r, out = execute(kc, "b = bytearray(1 << 30); b[::4096] = b'x' * len(b[::4096])", timeout=60)
    c = r["content"]
    assert c["status"] == "error" and c["ename"] == "KernelDied"
    assert "out of memory" in c["evalue"] or "MemoryError" in c["evalue"]
    assert any(m["msg_type"] == "error" for m in out)
    r, out = execute(kc, "print('back')", timeout=60)
    assert stdout_of(out) == "back\n" and r["metadata"]["kennel"]["state"] == "lost"


def test_operator_maxima_from_the_config_file(make_gateway):
    gw = make_gateway(config={"maxima": {"execution_timeout": 5, "network": "none"},
                              "defaults": {"execution_timeout": 2}})
    c = gw.control.open("m1", policy={"execution_timeout": 10})
    assert c["status"] == "error" and "execution_timeout" in c["evalue"] and "5" in c["evalue"]
    c = gw.control.open("m2", policy={"network": "loopback"})
    assert c["status"] == "error" and "network" in c["evalue"]
    info = gw.control.request("gateway_info_request")["content"]
    assert info["limits"]["defaults"]["execution_timeout"] == 2 and info["limits"]["maxima"]["execution_timeout"] == 5
    assert gw.control.open("m3", policy={"execution_timeout": 5})["status"] == "ok"


LIMIT_FIELDS = ["execution_timeout", "tool_timeout", "idle_ttl", "memory_bytes", "pids", "workspace_bytes",
                "output_bytes"]
SECONDS_FIELDS = {"execution_timeout", "tool_timeout", "idle_ttl"}
UNLIMITABLE = ["execution_timeout", "idle_ttl", "memory_bytes", "pids", "output_bytes"]


def test_a_client_cannot_switch_a_limit_off(make_gateway):
    """F1/F15: 0, a fraction of a count, a negative, a huge value or the word
    "unlimited" from a client is a PolicyError naming the field, also where
    the operator's maximum is unlimited (so 1e300 meets the range, not the
    maximum). tool_timeout 0 is refused at open, before a pooled kernel
    could be claimed (the pool is on here)."""
    gw = make_gateway(config={"maxima": {f: "unlimited" for f in UNLIMITABLE}, "warm_pool": 1})
    bad = [0, 0.0004, -1, 1e300, "unlimited", "0", None, True]
    for field in LIMIT_FIELDS:
        values = bad + ([] if field in SECONDS_FIELDS else [0.5, 1.5])
        for value in values:
            c = gw.control.open("z", policy={field: value})
            assert c["status"] == "error" and c["ename"] == "PolicyError", (field, value, c)
            assert field in c["evalue"], (field, value, c)
    assert gw.control.request("conversation_list_request")["content"]["conversations"] == []
    # the same request with sane values opens
    c = gw.control.open("z", policy={"execution_timeout": 0.5, "tool_timeout": 0.5, "idle_ttl": 100,
                                     "memory_bytes": 512 << 20, "pids": 64, "output_bytes": 1000})
    assert c["status"] == "ok", c


@pytest.mark.parametrize("warm_pool", [0, 1])
def test_tool_timeout_zero_is_one_rule_cold_or_warm(make_gateway, warm_pool):
    """F15: tool_timeout 0 failed a cold open (the kernel refused it) and was
    accepted by a warm claim with no gateway timer. Now it is a PolicyError
    at open either way (with a ready pooled kernel waiting, or none), and
    the pool is untouched."""
    gw = make_gateway(config={"warm_pool": warm_pool})
    wait_until(lambda: gw.control.request("gateway_info_request")["content"]["warm_pool"]["ready"] >= warm_pool,
               30, "the warm pool filled")
    c = gw.control.open("t0", policy={"tool_timeout": 0})
    assert c["status"] == "error" and c["ename"] == "PolicyError" and "tool_timeout" in c["evalue"], c
    assert not gw.events("kernel_claimed") and not gw.events("kernel_launch")
    assert gw.control.request("gateway_info_request")["content"]["warm_pool"]["ready"] == warm_pool


def test_policy_zero_reproduction_is_refused(make_gateway):
    """The red-team reproduction (t08/t09/t39): zeros above the operator's
    maxima switched every limit off; now the open is refused."""
    gw = make_gateway(config={"maxima": {"execution_timeout": 5, "output_bytes": 1048576, "idle_ttl": 5,
                                         "memory_bytes": 536870912, "pids": 64},
                              "defaults": {"execution_timeout": 5, "idle_ttl": 5, "memory_bytes": 536870912,
                                           "pids": 64, "output_bytes": 1048576}})
    c = gw.control.open("zero", policy={"execution_timeout": 0, "output_bytes": 0, "idle_ttl": 0,
                                        "memory_bytes": 0, "pids": 0})
    assert c["status"] == "error" and c["ename"] == "PolicyError", c
    c = gw.control.open("half", policy={"memory_bytes": 0.5})
    assert c["status"] == "error" and "memory_bytes" in c["evalue"], c
    # and what is opened keeps the operator's maxima
    _, kc = gw.open_client("ok")
    t0 = time.time()
    r, _ = execute(kc, "import time; time.sleep(12)", timeout=30)
    assert r["content"]["ename"] == "ExecutionTimeout" and time.time() - t0 < 11


def test_operator_unlimited(make_gateway):
    """Only the operator's config lifts a limit, with the word "unlimited":
    gateway_info shows it, the launcher takes unlimited memory and pids,
    output is not cut, and a client may still set a finite value."""
    words = {f: "unlimited" for f in UNLIMITABLE}
    gw = make_gateway(config={"maxima": words, "defaults": words})
    limits = gw.control.request("gateway_info_request")["content"]["limits"]
    for f in UNLIMITABLE:
        assert limits["defaults"][f] == "unlimited" and limits["maxima"][f] == "unlimited", limits
    _, kc = gw.open_client("free")
    # above the default 1 MiB, in messages under max_message_bytes
    r, out = execute(kc, "import sys\nfor _ in range(4):\n    print('x' * 600000); sys.stdout.flush()", timeout=60)
    assert r["metadata"]["kennel"]["output_truncated"] is False
    assert len(stdout_of(out)) == 4 * 600001
    _, kc = gw.open_client("bounded", policy={"output_bytes": 10000, "execution_timeout": 1})
    r, out = execute(kc, "print('x' * 20000)")
    assert r["metadata"]["kennel"]["output_truncated"] is True
    r, _ = execute(kc, "import time; time.sleep(10)", timeout=30)
    assert r["content"]["ename"] == "ExecutionTimeout"


@pytest.mark.parametrize("config, needle", [
    ({"defaults": {"execution_timeout": 0}}, "execution_timeout"),
    ({"maxima": {"pids": 0}}, "pids"),
    ({"maxima": {"memory_bytes": 0.5}}, "memory_bytes"),
    ({"maxima": {"tool_timeout": "unlimited"}}, "tool_timeout"),
    ({"maxima": {"workspace_bytes": "unlimited"}}, "workspace_bytes"),
    ({"defaults": {"idle_ttl": "unlimited"}}, "idle_ttl"),  # above a finite maximum
    ({"maxima": {"output_bytes": "Unlimited"}}, "output_bytes"),
    # found by tests/fuzz/gw_policy_fuzz.c: a default network above its
    # maximum, and numbers past what their int or timer holds
    ({"maxima": {"network": "none"}, "defaults": {"network": "loopback"}}, "defaults.network"),
    ({"max_conversations": 1e300}, "max_conversations"),
    ({"interrupt_grace": 1e300}, "interrupt_grace"),
])
def test_operator_config_limits_are_checked(tmp_path, config, needle):
    """A 0 in the operator's config is an error too (it would have meant "no
    limit"): the daemon refuses to start, naming the field."""
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(config))
    out = subprocess.run([str(built("gateway/kennel")), "serve", "--state-dir", str(tmp_path / "s"),
                          "--config", str(cfg)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and needle in out.stderr, out.stderr


def test_an_rlimits_refusal_names_a_fix_that_works(make_gateway):
    """A daemon under a hard RLIMIT_NOFILE of 1000 (below the sandbox's 1024)
    starts, and its probe is refused at rlimits. Before, the refusal said
    only "a hard limit inherited from the caller is lower". Now it names
    both fixes: the caller's limit (ulimit -H, systemd's LimitNOFILE=) and
    the policy's, in the config's words; the second, applied, makes the
    same daemon ready and a conversation runs."""
    gw = make_gateway(name="low", prefix=["prlimit", "--nofile=1000:1000", "--"])
    info = gw.control.request("gateway_info_request")["content"]
    assert info["ready"] is False and info["startup_error"]["layer"] == "rlimits", info
    reason = info["startup_error"]["reason"]
    assert "LimitNOFILE=" in reason and '"confine": {"rlimits": {"nofile": N}}' in reason, reason
    gw.stop()
    gw = make_gateway(name="fixed", prefix=["prlimit", "--nofile=1000:1000", "--"],
                      config={"confine": {"rlimits": {"nofile": 512}}})
    info = gw.control.request("gateway_info_request")["content"]
    assert info["ready"] is True, info
    _, kc = gw.open_client("runs")
    r, out = execute(kc, "import resource\nprint(resource.getrlimit(resource.RLIMIT_NOFILE))")
    assert stdout_of(out) == "(512, 512)\n", out
