"""Steps 2-3: conversations through the daemon with jupyter_client."""
import json
import pathlib
import signal
import tempfile
import subprocess
import time

import pytest
import zmq
from jupyter_client.session import Session

from gwtest import connect, execute, gone, remove_kept, stdout_of


def test_open_execute_persist(gateway):
    reply, kc = gateway.open_client("conv-1")
    assert reply["created"] is True
    conn = reply["connection"]
    assert set(conn) >= {"transport", "ip", "shell_port", "iopub_port", "stdin_port", "control_port", "hb_port",
                         "key", "signature_scheme", "kernel_name"}
    assert gateway.inside(reply["workspace"]).is_dir()
    r, out = execute(kc, "x = 41")
    assert r["content"]["status"] == "ok"
    r, out = execute(kc, "print(x + 1)")
    assert r["content"]["status"] == "ok"
    assert stdout_of(out) == "42\n"
    kennel = r["metadata"]["kennel"]
    assert set(kennel) >= {"wall_seconds", "cpu_seconds", "max_rss_bytes", "output_bytes", "tool_calls", "state"}
    assert kennel["state"] == "kept" and kennel["output_bytes"] > 0 and kennel["max_rss_bytes"] > 0


def test_reopen_returns_same_connection(gateway):
    first = gateway.control.open("again")
    second = gateway.control.open("again")
    assert first["status"] == "ok" and second["status"] == "ok"
    assert first["created"] is True and second["created"] is False
    assert first["connection"] == second["connection"]


def test_invalid_ids_refused(gateway):
    for bad in ["", ".", "..", "a/b", "x" * 129, "ü", "a b"]:
        c = gateway.control.open(bad)
        assert c["status"] == "error" and c["ename"] == "InvalidConversationId", bad
    c = gateway.control.request("conversation_open_request", {})["content"]
    assert c["ename"] == "InvalidConversationId"


def test_nul_in_an_id_is_refused_not_truncated(gateway):
    """F8: "user-alice\u0000mallory" was read as "user-alice": its open got
    alice's connection and key, its close closed alice. Now both, and a
    restart, are InvalidConversationId, and alice keeps her kernel."""
    reply, kc = gateway.open_client("user-alice")
    execute(kc, "secret = 'alice-private-data'")
    for msg_type in ("conversation_open_request", "conversation_restart_request", "conversation_close_request"):
        for bad in ("user-alice\u0000mallory", "user-alice\u0000", "user-alice\u0000x"):
            c = gateway.control.request(msg_type, {"conversation_id": bad})["content"]
            assert c["status"] == "error" and c["ename"] == "InvalidConversationId", (msg_type, bad, c)
            assert "connection" not in c
    ids = [c["conversation_id"] for c in gateway.control.request("conversation_list_request")["content"]
           ["conversations"]]
    assert ids == ["user-alice"]
    r, out = execute(kc, "print(secret)")
    assert stdout_of(out) == "alice-private-data\n" and r["metadata"]["kennel"]["state"] == "kept"


@pytest.mark.parametrize("content, ename, needle", [
    ({"kernel": "python\u0000x"}, "UnknownKernel", "kernel"),
    ({"tools": [{"name": "calc\u0000evil"}]}, "InvalidTools", "name"),
    ({"tools": [{"name": "calc", "description": "a\u0000b"}]}, "InvalidTools", "NUL"),
    ({"policy": {"network": "none\u0000x"}}, "PolicyError", "NUL"),
    ({"policy": {"builtins": "agent\u0000"}}, "PolicyError", "NUL"),
    ({"policy": {"env": {"A": "b\u0000c"}}}, "PolicyError", "NUL"),
    ({"policy": {"imports": {"deny": ["os\u0000"]}}}, "PolicyError", "NUL"),
    ({"policy": {"imports": {"deny": [1]}}}, "PolicyError", "imports"),
])
def test_nul_in_open_strings_is_refused(gateway, content, ename, needle):
    """F8's audit: every string of conversation_open that the gateway
    compares or passes on is taken on its whole JSON length; a NUL is
    refused naming what, before a kernel starts."""
    c = gateway.control.open("nul", **content)
    assert c["status"] == "error" and c["ename"] == ename and needle in c["evalue"], c
    assert gateway.control.request("conversation_list_request")["content"]["conversations"] == []


@pytest.mark.parametrize("content", [
    {"policy": {"execution_timeout\u0000x": 5}},
    {"policy": {"env": {"A\u0000B": "c"}}},
    {"tools": [{"name": "calc", "parameters": {"type": "object", "properties": {"x\u0000y": {}}}}]},
])
def test_nul_in_a_key_never_reaches_the_control_api(gateway, content):
    """An object key with a NUL is refused by the wire decoder (logged as
    bad_message, no reply), so no field name is ever read cut short; the
    gateway's own check of keys (gw_text_clean) stays as a second line."""
    with pytest.raises(TimeoutError):
        gateway.control.request("conversation_open_request", dict(conversation_id="nulkey", **content), timeout=3)
    assert any(e.get("channel") == "control" for e in gateway.events("bad_message"))
    assert gateway.control.request("conversation_list_request")["content"]["conversations"] == []


def test_close_keep_workspace_must_be_a_boolean(gateway):
    """keep_workspace "yes" was read as false and removed the workspace."""
    reply = gateway.control.open("keep")
    assert reply["status"] == "ok"
    (gateway.inside(reply["workspace"]) / "f").write_text("data")
    c = gateway.control.request("conversation_close_request", {"conversation_id": "keep",
                                                               "keep_workspace": "yes"})["content"]
    assert c["status"] == "error" and c["ename"] == "InvalidRequest" and "keep_workspace" in c["evalue"], c
    assert (gateway.inside(reply["workspace"]) / "f").read_text() == "data"
    c = gateway.control.request("conversation_close_request", {"conversation_id": "keep"})["content"]
    assert c["status"] == "ok"


def test_policy_cannot_raise_limits(gateway):
    c = gateway.control.open("p", policy={"execution_timeout": 10 ** 9})
    assert c["status"] == "error" and c["ename"] == "PolicyError"
    assert "execution_timeout" in c["evalue"]
    c = gateway.control.open("p", policy={"no_such_field": 1})
    assert c["status"] == "error" and "no_such_field" in c["evalue"]
    assert gateway.control.request("conversation_list_request")["content"]["conversations"] == []


def test_list_close_restart(gateway):
    reply, kc = gateway.open_client("lc")
    execute(kc, "y = 7")
    convs = gateway.control.request("conversation_list_request")["content"]["conversations"]
    assert [c["conversation_id"] for c in convs] == ["lc"]
    entry = convs[0]
    assert entry["pid"] > 0 and entry["rss_bytes"] > 0 and entry["executions"] == 1
    assert entry["state"] == "idle" and entry["kernel"] == "python"
    old_pid = entry["pid"]

    r = gateway.control.request("conversation_restart_request", {"conversation_id": "lc"})
    assert r["content"]["status"] == "ok"
    r, out = execute(kc, "print('y' in globals())")
    assert stdout_of(out) == "False\n"
    entry = gateway.control.request("conversation_list_request")["content"]["conversations"][0]
    assert entry["pid"] != old_pid
    assert gone(old_pid)

    ws = gateway.inside(reply["workspace"])
    r = gateway.control.request("conversation_close_request", {"conversation_id": "lc"})
    assert r["content"]["status"] == "ok"
    assert gateway.control.request("conversation_list_request")["content"]["conversations"] == []
    assert not ws.exists()
    assert gone(entry["pid"])
    r = gateway.control.request("conversation_close_request", {"conversation_id": "lc"})
    assert r["content"]["ename"] == "NoSuchConversation"


def test_workspace_kept_on_restart(gateway):
    reply, kc = gateway.open_client("ws")
    execute(kc, "open('note.txt', 'w').write('hello')")
    assert (gateway.inside(reply["workspace"]) / "note.txt").read_text() == "hello"
    gateway.control.request("conversation_restart_request", {"conversation_id": "ws"})
    r, out = execute(kc, "print(open('note.txt').read())")
    assert stdout_of(out) == "hello\n"


def test_two_conversations_isolated(gateway):
    _, a = gateway.open_client("a")
    _, b = gateway.open_client("b")
    execute(a, "secret = 'A'")
    r, out = execute(b, "print(globals().get('secret'))")
    assert stdout_of(out) == "None\n"
    execute(a, "open('only-a', 'w').write('a')")
    r, out = execute(b, "import os; print(os.path.exists('only-a'))")
    assert stdout_of(out) == "False\n"
    # processes: a's sleeper is invisible from b (own pid namespaces)
    r, out = execute(a, "import subprocess; sleeper = subprocess.Popen(['sleep', '300']); print('started')")
    assert stdout_of(out) == "started\n"
    code = ("import os\n"
            "cmds = [open(f'/proc/{p}/cmdline', 'rb').read() for p in os.listdir('/proc') if p.isdigit()]\n"
            "print(any(c.startswith(b'sleep') for c in cmds), len(cmds) < 20)")
    r, out = execute(b, code)
    assert stdout_of(out) == "False True\n"
    r, out = execute(a, code.replace("len(cmds) < 20", "True"))
    assert stdout_of(out) == "True True\n"  # the same check does see it where it runs


def test_wrong_key_gets_nothing(gateway):
    reply, kc = gateway.open_client("k")
    conn = dict(reply["connection"])
    sock = connect(conn, "shell_port", zmq.DEALER)
    bad = Session(key=b"not-the-key")
    bad.send(sock, "execute_request", {"code": "print(1)", "silent": False})
    assert sock.poll(1000) == 0
    sock.close()
    r, out = execute(kc, "print('still fine')")
    assert stdout_of(out) == "still fine\n"
    bad_events = gateway.events("bad_message")
    assert any(e["reason"] == "bad_signature" and e["conversation"] == "k" for e in bad_events)


def _raw_shell(conn):
    return connect(conn, "shell_port", zmq.DEALER)


def test_malformed_messages_dropped_and_logged(gateway):
    reply, kc = gateway.open_client("m")
    _, other = gateway.open_client("other")
    conn = reply["connection"]
    session = Session(key=conn["key"].encode())
    sock = _raw_shell(conn)
    sock.send_multipart([b"just one frame"])                       # no delimiter
    sock.send_multipart([b"<IDS|MSG>", b"sig", b"{}"])             # too few frames
    frames = [b"{not json", b"{}", b"{}", b"{}"]
    sock.send_multipart([b"<IDS|MSG>", session.sign(frames)] + frames)  # bad JSON, signed
    msg = session.msg("execute_request", {"code": "print(2)"})
    wire = session.serialize(msg)
    sock.send_multipart(wire[:1] + [b"0" * 64] + wire[2:])         # bad signature
    sock.send_multipart(wire)                                       # good once...
    sock.send_multipart(wire)                                       # ...then a replay
    big = session.msg("execute_request", {"code": "x" * (3 << 19)})
    sock.send_multipart(session.serialize(big))                     # oversize: 1.5 MiB, limit 1 MiB here
    time.sleep(0.5)
    reasons = {e["reason"] for e in gateway.events("bad_message") if e.get("conversation") == "m"}
    assert {"no_delimiter", "too_few_frames", "invalid_json", "bad_signature", "duplicate_signature",
            "oversize"} <= reasons, reasons
    r, out = execute(other, "print('other ok')")
    assert stdout_of(out) == "other ok\n"
    r, out = execute(kc, "print('m ok')")
    assert stdout_of(out) == "m ok\n"
    sock.close()


def test_sigterm_leaves_no_process(gateway):
    _, kc = gateway.open_client("t1")
    _, kc2 = gateway.open_client("t2")
    pids = [c["pid"] for c in gateway.control.request("conversation_list_request")["content"]["conversations"]]
    assert gateway.stop() == 0  # also asserts the state dir is left empty
    for pid in pids:
        assert gone(pid, timeout=0.1)


def test_ipc_conversation_by_default(gateway):
    reply, kc = gateway.open_client("over-ipc")
    conn = reply["connection"]
    assert conn["transport"] == "ipc" and conn["ip"].startswith(str(gateway.state / "sock") + "/")
    assert not any(k.startswith("curve") for k in conn)
    r, out = execute(kc, "print(6 * 7)")
    assert stdout_of(out) == "42\n"


def test_tcp_conversation_is_curve(make_gateway):
    gw = make_gateway(transport="tcp")
    reply, kc = gw.open_client("over-curve")
    conn = reply["connection"]
    assert conn["transport"] == "tcp" and len(conn["curve_secretkey"]) == 40
    r, out = execute(kc, "print(6 * 7)")
    assert stdout_of(out) == "42\n"
    # each conversation has its own keys: another's do not open this one
    other, _ = gw.open_client("other")
    assert other["connection"]["curve_publickey"] != conn["curve_publickey"]
    assert gw.stop() == 0


def test_policy_env_reaches_kernel_and_nothing_else(gateway):
    _, kc = gateway.open_client("env", policy={"env": {"GREETING": "hello"}})
    r, out = execute(kc, "import os; print(os.environ.get('GREETING'), os.environ.get('KENNEL_TEST_SECRET'))")
    assert stdout_of(out) == "hello None\n"


def test_close_can_keep_workspace(gateway):
    reply, kc = gateway.open_client("keep")
    execute(kc, "open('result.txt', 'w').write('kept')")
    ws = pathlib.Path(reply["workspace"])
    r = gateway.control.request("conversation_close_request", {"conversation_id": "keep", "keep_workspace": True})
    assert r["content"]["status"] == "ok"
    assert (gateway.inside(ws) / "result.txt").read_text() == "kept"
    assert any(e.get("keep_workspace") for e in gateway.events("close"))
    remove_kept(ws.parent)


def test_gateway_killed_with_sigkill_leaves_no_kernel(gateway):
    _, kc = gateway.open_client("orphan")
    execute(kc, "x = 1")
    pid = gateway.control.request("conversation_list_request")["content"]["conversations"][0]["pid"]
    launcher_pid = gateway.events("kernel_start")[0]["launcher_pid"]
    for c in gateway.clients:
        c.stop_channels()
    gateway.clients = []
    gateway.proc.send_signal(signal.SIGKILL)
    gateway.proc.wait(10)
    assert gone(pid) and gone(launcher_pid)
    # a SIGKILLed daemon cannot clean its state dir: that is the operator's
    import shutil
    shutil.rmtree(gateway.state, ignore_errors=True)


def test_input_goes_to_the_client_and_back(gateway):
    _, kc = gateway.open_client("stdin")
    outputs = []

    def answer(msg):
        assert msg["msg_type"] == "input_request" and msg["content"]["prompt"] == "name? "
        kc.input("kennel")

    r = kc.execute_interactive("who = input('name? '); print('hello', who)", timeout=30, allow_stdin=True,
                               stdin_hook=answer, output_hook=outputs.append)
    assert r["content"]["status"] == "ok"
    assert stdout_of(outputs) == "hello kennel\n"


def test_kernel_info_on_control_is_relayed(gateway):
    _, kc = gateway.open_client("ctl")
    msg = kc.session.msg("kernel_info_request", {})
    kc.control_channel.send(msg)
    reply = kc.get_control_msg(timeout=10)
    assert reply["msg_type"] == "kernel_info_reply" and reply["parent_header"]["msg_id"] == msg["header"]["msg_id"]
    assert reply["content"]["protocol_version"].startswith("5.")


def test_close_removes_symlinks_not_their_targets(gateway, tmp_path):
    canary_dir = pathlib.Path(tempfile.mkdtemp(prefix="kennel-canary-"))
    (canary_dir / "precious").write_text("keep me")
    reply, kc = gateway.open_client("links")
    code = (f"import os; os.symlink({str(canary_dir)!r}, 'evil'); os.makedirs('d/e'); "
            f"os.symlink({str(canary_dir)!r}, 'd/e/evil'); os.symlink('/', 'root')")
    r, _ = execute(kc, code)
    assert r["content"]["status"] == "ok"
    size = gateway.control.request("conversation_list_request")["content"]["conversations"][0]["workspace_bytes"]
    assert size < 1 << 20  # the walk did not follow 'root' -> /
    gateway.control.request("conversation_close_request", {"conversation_id": "links"})
    assert (canary_dir / "precious").read_text() == "keep me"
    assert not gateway.inside(reply["workspace"]).exists()
    import shutil
    shutil.rmtree(canary_dir)


def test_max_rss_is_per_execution(gateway):
    _, kc = gateway.open_client("rss")
    # an anonymous mmap, touched then unmapped: its pages leave RSS at once
    # (a bytearray's would stay with the allocator, e.g. ASan's quarantine)
    r1, _ = execute(kc, "import mmap\nm = mmap.mmap(-1, 200 << 20)\n"
                        "for i in range(0, 200 << 20, 4096): m[i] = 1\nm.close()")
    r2, _ = execute(kc, "x = 1")
    first, second = r1["metadata"]["kennel"]["max_rss_bytes"], r2["metadata"]["kennel"]["max_rss_bytes"]
    assert first > 200 << 20
    assert second < first - (150 << 20)
