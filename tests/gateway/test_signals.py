"""SIGHUP and SIGTERM over the ZeroMQ front, as root and as uid 65534 (an
unprivileged gateway enters a user and mount namespace of its own before
any thread starts, where the signals are already blocked for the loop's
signalfd): a reload raises max_conversations for the next open, and a
drain lets the running execution reply before the daemon exits 0. The
HTTP side (503, /healthz, /metrics) is tests/http/test_ops.py."""
import json
import signal
import threading
import time

import pytest

from kennel_testlib import wait_until

CONFIG = {"max_conversations": 1, "drain_grace": 30}


@pytest.fixture
def gateway_options():
    return {"config": CONFIG}


def test_reload_then_drain(either_gateway):
    gw = either_gateway
    _, kc = gw.open_client("first")
    assert gw.control.request("gateway_info_request")["content"]["draining"] is False
    refused = gw.control.open("second")
    assert refused["status"] == "error" and refused["ename"] == "TooManyConversations", refused

    config = json.loads(gw.config_file.read_text())
    config["max_conversations"] = 2
    gw.config_file.write_text(json.dumps(config))
    gw.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: gw.events("reload"), 10, "the reload")
    assert gw.control.open("second")["status"] == "ok"

    msg_id = kc.execute("import time; time.sleep(2); print('done')")
    wait_until(lambda: gw.events("execute_start"), 20, "the execution's start")
    stopped_at = time.monotonic()
    gw.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: gw.events("draining"), 10, "the drain")
    assert gw.control.open("third")["ename"] == "GatewayDraining"
    assert gw.control.request("gateway_info_request")["content"]["draining"] is True
    reply = kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "ok", reply
    states = []
    while "dead" not in states:
        msg = kc.get_iopub_msg(timeout=10)
        if msg["msg_type"] == "status":
            states.append(msg["content"]["execution_state"])
    assert gw.proc.wait(30) == 0
    assert time.monotonic() - stopped_at < 20


NOTICE = "[kennel: the gateway is stopping (SIGTERM): this execution has at most 30 s to finish"


def test_a_drain_tells_zeromq_clients(make_gateway, capsys):
    """What a jupyter_client BlockingKernelClient sees of a drain: its
    running execution gets a stderr stream saying the gateway stops (the
    default output hook of execute_interactive prints it to stderr) and
    then its own reply; a new execution during the drain, from a client of
    another conversation, returns at once with a GatewayDraining error
    reply and error output (before: it ran, and kept the drain waiting),
    while a kernel_info_request is still answered by its kernel."""
    gw = make_gateway(config={"drain_grace": 30})
    _, running = gw.open_client("running")
    _, other = gw.open_client("other")
    assert other.execute_interactive("x = 1", timeout=30)["content"]["status"] == "ok"
    box = {}

    def run():
        box["reply"] = running.execute_interactive("import time; time.sleep(3); print('done')", timeout=30)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    wait_until(lambda: [e for e in gw.events("execute_start") if e["conversation"] == "running"], 20,
               "the execution's start")
    gw.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: gw.events("draining"), 10, "the drain")

    outputs = []
    started = time.monotonic()
    refused = other.execute_interactive("print('never')", timeout=10, output_hook=outputs.append)
    assert time.monotonic() - started < 2
    assert refused["content"]["status"] == "error" and refused["content"]["ename"] == "GatewayDraining"
    assert refused["content"]["evalue"].startswith("the gateway is stopping (draining after SIGTERM)")
    assert [m["content"]["ename"] for m in outputs if m["msg_type"] == "error"] == ["GatewayDraining"]
    assert not [m for m in outputs if m["msg_type"] == "stream"]
    assert other.kernel_info(reply=True, timeout=10)["content"]["status"] == "ok"

    thread.join(30)
    assert box["reply"]["content"]["status"] == "ok", box
    printed = capsys.readouterr()
    assert printed.out == "done\n"
    assert NOTICE in printed.err, printed.err
    assert gw.proc.wait(30) == 0
    assert gw.events("drained")[0]["reason"] == "no execution left"


def test_a_drain_restarts_no_kernel(make_gateway):
    """During a drain a restart starts no kernel (it would only be killed at
    the stop): conversation_restart_request and a client's shutdown_request
    with restart are answered GatewayDraining, and the kernel the
    conversation had keeps its variables until the drain ends (before: each
    restart launched a fresh kernel)."""
    gw = make_gateway(config={"drain_grace": 30})
    _, running = gw.open_client("running")
    _, other = gw.open_client("other")
    assert other.execute_interactive("x = 1", timeout=30)["content"]["status"] == "ok"
    thread = threading.Thread(target=lambda: running.execute_interactive("import time; time.sleep(4)", timeout=30),
                              daemon=True)
    thread.start()
    wait_until(lambda: [e for e in gw.events("execute_start") if e["conversation"] == "running"], 20,
               "the execution's start")
    launches = len(gw.events("kernel_launch"))
    gw.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: gw.events("draining"), 10, "the drain")

    r = gw.control.request("conversation_restart_request", {"conversation_id": "other"})
    assert r["content"]["status"] == "error" and r["content"]["ename"] == "GatewayDraining", r["content"]
    other.shutdown(restart=True)
    reply = other.get_control_msg(timeout=10)
    assert reply["msg_type"] == "shutdown_reply", reply
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "GatewayDraining", reply
    assert reply["content"]["evalue"].startswith("the gateway is stopping (draining after SIGTERM)")
    r = other.kernel_info(reply=True, timeout=10)
    assert r["content"]["status"] == "ok"
    assert len(gw.events("kernel_launch")) == launches
    thread.join(30)
    assert gw.proc.wait(30) == 0
