"""Running kennel as a service (issue 18): SIGHUP reloads the config for new
conversations only, GET /metrics in Prometheus' text format moves with
what happens, SIGTERM drains, GET /healthz answers without the token.
A real `kennel serve --http` and real websockets throughout; the metrics
are parsed by python3-prometheus-client's own parser (Debian's), which
refuses text that breaks the format."""
import json
import os
import signal
import time

from prometheus_client.parser import text_string_to_metric_families

from httptest import api, close_code, connect, message, recv, run, send, start_kernel, stdout
from kennel_testlib import Control, wait_until

SLEEPER = "import time; time.sleep({}); print('done')"
# a kernel that ignores SIGINT: the timeout's interrupt cannot stop it
STUBBORN = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass"


def metrics(gw, token=True):
    r = api(gw, "GET", "metrics", token=token)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0)


def reload(gw, config):
    """Rewrites the config file and sends SIGHUP; the log line it led to."""
    def lines():
        return [e for e in gw.log() if e["event"] in ("reload", "reload_failed")]
    before = len(lines())
    if isinstance(config, str):
        gw.config_file.write_text(config)
    else:
        full = json.loads(gw.config_file.read_text())
        full.update(config)
        gw.config_file.write_text(json.dumps(full))
    gw.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: len(lines()) > before, 10, "a reload log line")
    return lines()[-1]


def timed_out(ws, seconds):
    reply, outputs = run(ws, SLEEPER.format(seconds), timeout=60)
    return reply["content"].get("ename") == "ExecutionTimeout", stdout(outputs)


# ---- SIGHUP ------------------------------------------------------------------

def test_reload_changes_limits_for_new_conversations_only(make_http_gateway):
    gw = make_http_gateway(config={"defaults": {"execution_timeout": 60}})
    old = connect(gw, start_kernel(gw)["id"])
    line = reload(gw, {"defaults": {"execution_timeout": 1}})
    assert line["event"] == "reload" and line["limits"]["defaults"]["execution_timeout"] == 1, line
    new = connect(gw, start_kernel(gw)["id"])
    assert timed_out(new, 3) == (True, "")
    assert timed_out(old, 3) == (False, "done\n")  # opened before: keeps its 60 s
    assert gw.proc.poll() is None


def test_reload_refuses_a_bad_config_and_keeps_the_old(make_http_gateway):
    gw = make_http_gateway(config={"defaults": {"execution_timeout": 1}})
    good = gw.config_file.read_text()
    line = reload(gw, "{\"defaults\": {\"execution_timeout\": 60}, \"no_such_key\": 1}")
    assert line["event"] == "reload_failed" and "no_such_key" in line["error"], line
    line = reload(gw, "{not json")
    assert line["event"] == "reload_failed" and line["outcome"] == "the old config is kept", line
    assert gw.proc.poll() is None
    ws = connect(gw, start_kernel(gw)["id"])
    assert timed_out(ws, 3) == (True, "")  # still the old config's 1 s
    # a key read only at start: logged, its running value kept
    config = json.loads(good)
    config["max_parallel_launches"] = 9
    line = reload(gw, json.dumps(config))
    assert line["event"] == "reload" and line["needs_restart"] == ["max_parallel_launches"], line
    assert [e["key"] for e in gw.events("reload_needs_restart")] == ["max_parallel_launches"]


def test_reload_checks_the_http_section_as_a_start_does(make_http_gateway):
    """A bad http section is refused at reload like any other bad key (before:
    `reload` logged it as a restart-only change and took the file), and
    each http key that changed is named restart-only. The front keeps
    serving with its settings from start."""
    gw = make_http_gateway(config={"defaults": {"execution_timeout": 60}}, http={"max_connections": 64})
    good = json.loads(gw.config_file.read_text())
    bad = {"max_connections": 0, "no_such_key": 1, "certfile": "/etc/ssl/only-a-cert.pem", "listen": "not a port",
           "anonymous": "yes"}
    for key, wrong in bad.items():
        config = dict(good, defaults={"execution_timeout": 1}, http=dict(good["http"], **{key: wrong}))
        line = reload(gw, json.dumps(config))
        assert line["event"] == "reload_failed" and line["outcome"] == "the old config is kept", line
        assert "http" in line["error"], line
    assert not gw.events("reload")
    config = dict(good, defaults={"execution_timeout": 1},
                  http=dict(good["http"], max_connections=8, ping_seconds=5, env_allow=["MY_VAR"]))
    line = reload(gw, json.dumps(config))
    assert line["event"] == "reload", line
    assert line["needs_restart"] == ["http.max_connections", "http.ping_seconds", "http.env_allow"], line
    assert [e["key"] for e in gw.events("reload_needs_restart")] == line["needs_restart"]
    assert line["limits"]["defaults"]["execution_timeout"] == 1, line  # the rest of the file applies
    assert api(gw, "GET", "healthz", token=False).status_code == 200
    assert gw.proc.poll() is None


# ---- /healthz and /metrics ---------------------------------------------------

def test_healthz_needs_no_token_metrics_does(make_http_gateway):
    gw = make_http_gateway()
    r = api(gw, "GET", "healthz", token=False)
    assert r.status_code == 200 and r.json() == {"status": "ok", "draining": False}, r.text
    assert api(gw, "GET", "metrics", token=False).status_code == 401
    assert api(gw, "GET", "metrics", token="token wrong").status_code == 401
    assert value(metrics(gw), "kennel_draining") == 0
    opened = make_http_gateway("open", http={"metrics_open": True})
    assert value(metrics(opened, token=False), "kennel_conversations", state="idle") == 0


def test_metrics_move_with_executions_timeouts_and_kills(make_http_gateway):
    gw = make_http_gateway(config={"warm_pool": 1, "interrupt_grace": 0.5})
    first = metrics(gw)
    families = {name for name, _ in first}
    for name in ("kennel_conversations", "kennel_capacity_conversations_left", "kennel_kernel_starts_total",
                 "kennel_kernel_start_seconds_bucket", "kennel_executions_total", "kennel_execution_seconds_count",
                 "kennel_execution_timeouts_total", "kennel_kernel_deaths_total", "kennel_tool_calls_total",
                 "kennel_relayed_bytes_total", "kennel_warm_pool_kernels", "kennel_confinement_layer_active"):
        assert name in families, name
    assert all("conversation" not in dict(labels) and "kernel_id" not in dict(labels) for _, labels in first)
    cap = value(first, "kennel_capacity_conversations_left")
    wait_until(lambda: value(metrics(gw), "kennel_warm_pool_kernels", state="ready") == 1, 60, "a warm kernel")

    kernel = start_kernel(gw, {"kennel": {"policy": {"execution_timeout": 1}}})
    ws = connect(gw, kernel["id"])
    for i in range(3):
        reply, _ = run(ws, f"print({i})")
        assert reply["content"]["status"] == "ok"
    m = metrics(gw)
    assert value(m, "kennel_conversations", state="idle") == 1
    assert value(m, "kennel_capacity_conversations_left") == cap - 1
    starts = value(m, "kennel_kernel_starts_total", kind="cold") + value(m, "kennel_kernel_starts_total", kind="warm")
    assert starts == 1
    assert value(m, "kennel_executions_total", status="ok") - value(first, "kennel_executions_total", status="ok") == 3
    assert value(m, "kennel_execution_seconds_count") == 3
    assert value(m, "kennel_execution_seconds_bucket", le="+Inf") == 3
    assert value(m, "kennel_relayed_bytes_total", direction="to_kernel") > 0
    assert value(m, "kennel_relayed_bytes_total", direction="from_kernel") > 0

    reply, _ = run(ws, STUBBORN)  # interrupted in vain: killed past interrupt_grace
    assert reply["content"]["ename"] == "ExecutionTimeout", reply["content"]
    m2 = metrics(gw)
    assert value(m2, "kennel_execution_timeouts_total") == 1
    assert value(m2, "kennel_kernel_deaths_total", cause="timeout") == 1

    reply, _ = run(ws, "import os; print(os.getpid())")  # a fresh kernel starts cold
    pid = [e["pid"] for e in gw.events("kernel_start")][-1]
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: value(metrics(gw), "kennel_kernel_deaths_total", cause="signal") == 1, 20,
               "the kill counted as a signal")
    m3 = metrics(gw)
    assert value(m3, "kennel_kernel_starts_total", kind="cold") >= 1
    assert value(m3, "kennel_kernel_start_seconds_count", kind="cold") == value(m3, "kennel_kernel_starts_total",
                                                                               kind="cold")
    assert value(m3, "kennel_kernel_deaths_total", cause="oom") == 0
    ws.close()


# ---- SIGTERM -----------------------------------------------------------------

def test_drain_lets_a_running_execution_finish(make_http_gateway):
    gw = make_http_gateway(config={"drain_grace": 30})
    kid = start_kernel(gw)["id"]
    ws = connect(gw, kid)
    msg_id = send(ws, message("execute_request", {"code": SLEEPER.format(3)}))
    wait_until(lambda: gw.events("execute_start"), 10, "the execution's start")
    stopped_at = time.monotonic()
    gw.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: gw.events("draining"), 10, "the drain")

    created = api(gw, "POST", "api/kernels")
    assert created.status_code == 503 and created.headers["Retry-After"] == "5", created.text
    assert "GatewayDraining" in created.json()["message"]
    assert api(gw, "GET", "api/kernelspecs").status_code == 503  # readiness
    assert api(gw, "GET", "healthz", token=False).json() == {"status": "ok", "draining": True}  # liveness
    m = metrics(gw)  # the warm pool's kernels stopped: nothing will claim them
    assert value(m, "kennel_draining") == 1 and value(m, "kennel_warm_pool_size") == 0, m
    opened = Control(gw.conn_file).open("over-zmq")
    assert opened["status"] == "error" and opened["ename"] == "GatewayDraining", opened
    restarted = api(gw, "POST", f"api/kernels/{kid}/restart")  # no fresh kernel, killed at the stop
    assert restarted.status_code == 503 and "starts no kernel, a restart included" in restarted.json()["message"], \
        restarted.text

    # a new execution is refused: the drain waits only for those it found
    late = send(ws, message("execute_request", {"code": "print('never')"}))
    reply, refused, output, dead = None, None, {"stdout": "", "stderr": ""}, False
    ws.settimeout(30)
    while not dead:
        m = recv(ws)
        if m["msg_type"] == "execute_reply" and m["parent_header"].get("msg_id") == msg_id:
            reply = m
        elif m["msg_type"] == "execute_reply" and m["parent_header"].get("msg_id") == late:
            refused = m
        elif m["msg_type"] == "stream":
            output[m["content"]["name"]] += m["content"]["text"]
        elif m["msg_type"] == "status" and m["content"]["execution_state"] == "dead":
            dead = True
    assert reply and reply["content"]["status"] == "ok" and output["stdout"] == "done\n", (reply, output)
    assert refused and refused["content"]["ename"] == "GatewayDraining", refused
    assert "[kennel: the gateway is stopping (SIGTERM)" in output["stderr"], output  # the running one is told
    assert close_code(ws, timeout=10) == 1001
    assert gw.proc.wait(30) == 0
    took = time.monotonic() - stopped_at
    assert took < 15, took  # the execution's 3 s, not the 30 s grace
    assert gw.events("drained")[0]["reason"] == "no execution left"


def test_drain_stops_at_the_grace_or_a_second_sigterm(make_http_gateway):
    gw = make_http_gateway("grace", config={"drain_grace": 1})
    ws = connect(gw, start_kernel(gw)["id"])
    send(ws, message("execute_request", {"code": SLEEPER.format(120)}))
    wait_until(lambda: gw.events("execute_start"), 10, "the execution's start")
    stopped_at = time.monotonic()
    gw.proc.send_signal(signal.SIGTERM)
    assert gw.proc.wait(20) == 0
    assert time.monotonic() - stopped_at < 10
    assert gw.events("drained")[0]["busy_cut"] == 1
    assert close_code(ws, timeout=10) == 1001

    gw2 = make_http_gateway("second", config={"drain_grace": 300})
    ws2 = connect(gw2, start_kernel(gw2)["id"])
    send(ws2, message("execute_request", {"code": SLEEPER.format(120)}))
    wait_until(lambda: gw2.events("execute_start"), 10, "the execution's start")
    gw2.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: gw2.events("draining"), 10, "the drain")
    stopped_at = time.monotonic()
    gw2.proc.send_signal(signal.SIGTERM)
    assert gw2.proc.wait(20) == 0
    assert time.monotonic() - stopped_at < 10
    assert gw2.events("stop_now")


def test_metrics_count_an_out_of_memory_kill(make_http_gateway):
    """A kernel past memory_bytes is killed by its memory cgroup: counted
    with cause "oom". Probed first: without cgroup memory limits for root
    (hostprobe.cgroup_limits) the kill cannot be told from another SIGKILL,
    and the test says so and skips."""
    import pytest
    import hostprobe
    probe = hostprobe.cgroup_limits(0)
    if os.geteuid() != 0 or not probe.ok:
        pytest.skip(f"no memory cgroup for the sandbox here: {probe.detail}")
    gw = make_http_gateway(config={"warm_pool": 0})
    ws = connect(gw, start_kernel(gw, {"kennel": {"policy": {"memory_bytes": 300 << 20}}})["id"])
    reply, _ = run(ws, "b = bytearray(1 << 30); b[::4096] = b'x' * len(b[::4096])")
    content = reply["content"]
    assert content["ename"] == "KernelDied" and "out of memory" in content["evalue"], content
    m = metrics(gw)
    assert value(m, "kennel_kernel_deaths_total", cause="oom") == 1
    assert value(m, "kennel_kernel_deaths_total", cause="signal") == 0
    ws.close()
