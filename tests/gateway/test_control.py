"""Step 1: the daemon, its control socket and connection file, SIGTERM."""
import datetime
import json
import os
import shutil
import stat
import subprocess

from gwtest import Control, built, launcher, serve, traversable_dir


def test_connection_file_is_private_and_complete(gateway):
    mode = stat.S_IMODE(os.stat(gateway.conn_file).st_mode)
    assert mode == 0o600
    info = json.loads(gateway.conn_file.read_text())
    assert set(info) == {"transport", "ip", "control_port", "key", "signature_scheme"}
    # ipc by default, in the 0700 sock dir: no other local user can connect
    assert info["transport"] == "ipc" and info["ip"] == str(gateway.state / "sock" / "gateway")
    assert stat.S_IMODE(os.stat(gateway.state / "sock").st_mode) == 0o700
    assert info["signature_scheme"] == "hmac-sha256" and len(info["key"]) >= 32


def test_gateway_info(gateway):
    reply = gateway.control.request("gateway_info_request")
    assert reply["msg_type"] == "gateway_info_reply"
    c = reply["content"]
    assert c["status"] == "ok"
    assert c["implementation"] == "kennel" and c["protocol_version"] == "5.3"
    assert "python" in c["kernels"]
    assert c["conversations"] == 0
    assert c["limits"]["defaults"]["execution_timeout"] > 0
    assert reply["parent_header"]["msg_type"] == "gateway_info_request"


def test_gateway_info_reports_layers_before_any_conversation(gateway):
    """The daemon's start-up probe confines /bin/true as it will confine
    kernels; the report is there at the first request."""
    layers = gateway.control.request("gateway_info_request")["content"]["confinement"]
    for name in ["userns", "pid", "net", "mount", "seccomp", "caps", "no_new_privs"]:
        assert layers[name]["state"] == "active", (name, layers[name])
    assert all(layer["state"] in ("active", "degraded", "unsupported") and layer["reason"] for layer in layers.values())
    assert gateway.events("confinement")


def test_connection_file_means_ready(tmp_path):
    """Issue 11: the file appeared before the daemon knew its confinement,
    and a gateway_info sent at once got {"note": "no kernel has been
    confined yet..."}. Polled every millisecond and asked the instant it
    appears, the daemon now answers ready, with the layer report, when and
    how it was taken; the log says confinement before ready."""
    conn = tmp_path / "gw.json"
    log = tmp_path / "gw.log"
    state = traversable_dir("kennel-gw-test-")
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"launcher": launcher()}))
    # asked the instant the file appears: looked for every millisecond
    proc = serve(state, cfg, log, conn, timeout=30, interval=0.001)
    try:
        control = Control(conn)
        before = datetime.datetime.now(datetime.timezone.utc)
        c = control.request("gateway_info_request")["content"]
        control.close()
        assert c["ready"] is True and "note" not in c["confinement"], c["confinement"]
        for name in ["userns", "pid", "net", "mount", "seccomp", "caps", "no_new_privs"]:
            assert c["confinement"][name]["state"] == "active", (name, c["confinement"])
        taken = c["confinement_taken"]
        assert "/bin/true" in taken["by"] and taken["pid"] > 0 and 0 <= taken["seconds"] < 30, taken
        when = datetime.datetime.fromisoformat(taken["taken"].replace("Z", "+00:00"))
        assert before - datetime.timedelta(seconds=60) < when <= before, taken
        events = [json.loads(line)["event"] for line in log.read_text().splitlines()]
        assert events.index("confinement") < events.index("ready"), events
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
        shutil.rmtree(state, ignore_errors=True)


def test_list_empty(gateway):
    reply = gateway.control.request("conversation_list_request")
    assert reply["content"] == {"status": "ok", "conversations": []}


def test_unknown_request_gets_error(gateway):
    reply = gateway.control.request("frobnicate_request")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "UnknownRequest"


def test_nul_in_the_request_type_is_no_request(gateway):
    """F8's audit: the msg_type is taken on its whole length too."""
    for msg_type in ("gateway_info_request\u0000x", "conversation_open_request\u0000"):
        c = gateway.control.request(msg_type, {"conversation_id": "t"})["content"]
        assert c["status"] == "error" and c["ename"] == "UnknownRequest", (msg_type, c)
    assert gateway.control.request("conversation_list_request")["content"]["conversations"] == []


def test_kennel_info_command(gateway):
    out = subprocess.run([str(built("gateway/kennel")), "info", "--connection-file", str(gateway.conn_file)],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["implementation"] == "kennel"


def test_sigterm_clean_exit(gateway):
    assert gateway.stop() == 0
    assert not gateway.conn_file.exists()
    assert gateway.events("stopped")


def test_tcp_transport_is_curve(make_gateway):
    gw = make_gateway(transport="tcp")
    info = json.loads(gw.conn_file.read_text())
    assert info["transport"] == "tcp" and info["ip"] == "127.0.0.1"
    assert {len(info[k]) for k in ("curve_serverkey", "curve_publickey", "curve_secretkey")} == {40}
    content = gw.control.request("gateway_info_request")["content"]
    assert content["status"] == "ok" and content["transport"] == "tcp" and content["curve"] is True
    out = subprocess.run([str(built("gateway/kennel")), "info", "--connection-file", str(gw.conn_file)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert gw.stop() == 0


def test_insecure_tcp_only_when_asked(make_gateway, tmp_path):
    gw = make_gateway(transport="tcp", extra_args=["--insecure-tcp"])
    info = json.loads(gw.conn_file.read_text())
    assert info["transport"] == "tcp" and not any(k.startswith("curve") for k in info)
    assert gw.control.request("gateway_info_request")["content"]["curve"] is False
    assert gw.stop() == 0
    out = subprocess.run([str(built("gateway/kennel")), "serve", "--state-dir", str(tmp_path / "s"),
                          "--insecure-tcp"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "--insecure-tcp goes with --transport tcp" in out.stderr
    out = subprocess.run([str(built("gateway/kennel")), "kernel", "-f", str(tmp_path / "k.json"), "--insecure-tcp"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "--insecure-tcp is for `kennel serve`" in out.stderr


def test_state_dir_too_long_for_ipc(tmp_path):
    state = tmp_path / ("d" * 90)
    out = subprocess.run([str(built("gateway/kennel")), "serve", "--state-dir", str(state)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and "too long for ipc socket paths" in out.stderr, out.stderr


def test_bad_config_is_refused(tmp_path):
    cfg = tmp_path / "bad.json"
    cfg.write_text(json.dumps({"maxima": {"execution_timeout": 1}, "defaults": {"execution_timeout": 5}}))
    out = subprocess.run([str(built("gateway/kennel")), "serve", "--state-dir", str(tmp_path / "s"), "--config",
                          str(cfg)], capture_output=True, text=True, timeout=20)
    assert out.returncode == 2
    assert "execution_timeout" in out.stderr


def test_bad_control_messages_dropped_and_logged(gateway):
    from jupyter_client.session import Session
    sock = gateway.control.sock
    sock.send_multipart([b"garbage"])
    Session(key=b"wrong key").send(sock, "conversation_open_request", {"conversation_id": "x"})
    assert sock.poll(500) == 0  # nothing comes back for either
    reasons = {e["reason"] for e in gateway.events("bad_message") if e["channel"] == "control"}
    assert {"no_delimiter", "bad_signature"} <= reasons
    assert gateway.control.request("conversation_list_request")["content"]["conversations"] == []
