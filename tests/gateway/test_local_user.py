"""A local user without the connection file can neither read nor disturb a
conversation (red-team F5).

The attacker is a separate process as uid 65534 (setpriv). It is given
more than it could find alone: the victim's socket addresses (ports from
/proc/net/tcp, or the ipc paths) and the victim's session id (which
jupyter_client uses as the ZMQ identity of its shell, stdin and control
sockets; before, it was read from iopub). It lists the state dir, connects
a SUB to iopub, DEALERs with the victim's identity to shell, stdin and
control (ROUTER_HANDOVER would give it the victim's routing), and pings hb,
while the victim runs executions that print a secret."""
import json
import os
import shutil
import subprocess
import time

import pytest

import hostprobe
from gwtest import execute, stdout_of
from kennel_testlib import HOST_MODULE_DIR, serve, setpriv, traversable_dir

NOBODY = hostprobe.NOBODY
SETPRIV = setpriv(NOBODY)
SECRET = "hunter2-password"

ATTACKER = r"""
import json, os, socket, sys, zmq
p = json.loads(sys.argv[1])
conn = p["conn"]
out = {"uid": os.getuid(), "listing": {}, "unix_connect": {}, "iopub": [], "hb": None, "shell": []}
for d in (p["state"], p["state"] + "/sock"):
    try:
        out["listing"][d] = os.listdir(d)
    except OSError as e:
        out["listing"][d] = type(e).__name__
ctx = zmq.Context()

def url(field):
    if conn["transport"] == "ipc":
        return "ipc://%s-%d" % (conn["ip"], conn[field])
    return "tcp://%s:%d" % (conn["ip"], conn[field])

def sock(kind, field, identity=None):
    s = ctx.socket(kind)
    s.linger = 0
    for name, value in (p.get("curve") or {}).items():
        setattr(s, name, value.encode())
    if identity:
        s.identity = identity.encode()
    s.connect(url(field))
    return s

if conn["transport"] == "ipc":
    for field in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"):
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            u.connect("%s-%d" % (conn["ip"], conn[field]))
            out["unix_connect"][field] = "connected"
        except OSError as e:
            out["unix_connect"][field] = type(e).__name__
        u.close()
sub = sock(zmq.SUB, "iopub_port")
if p.get("expect_read"):  # where reading is the documented residual: wait for the handshake, not a guess
    monitor = sub.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
    if monitor.poll(10000):
        monitor.recv_multipart()
    sub.disable_monitor()
sub.setsockopt(zmq.SUBSCRIBE, b"")
dealers = [sock(zmq.DEALER, f, p["session"]) for f in ("shell_port", "stdin_port", "control_port")
           if p["hijack"]]
hb = sock(zmq.REQ, "hb_port")
hb.send(b"ping")
print("ready", flush=True)
poller = zmq.Poller()
for s in [sub, hb] + dealers:
    poller.register(s, zmq.POLLIN)
poller.register(sys.stdin, zmq.POLLIN)
while True:
    ready = dict(poller.poll(100))
    if sys.stdin.fileno() in ready or sys.stdin in ready:
        break
    if sub in ready:
        out["iopub"].append(b"|".join(sub.recv_multipart()).decode(errors="replace"))
    if hb in ready:
        out["hb"] = hb.recv().decode()
    for d in dealers:
        if d in ready:
            out["shell"].append(b"|".join(d.recv_multipart()).decode(errors="replace"))
print(json.dumps(out), flush=True)
"""


def attack(gw, conn, session, curve=None, hijack=True, expect_read=False):
    """Starts the attacker (hijack: also the DEALERs with the victim's
    identity; expect_read: its iopub handshake must succeed, and it waits for
    it); returns finish(), which ends it and returns what it saw."""
    visible = {k: v for k, v in conn.items() if k != "key" and not k.startswith("curve")}
    params = json.dumps({"state": str(gw.state), "conn": visible, "session": session, "curve": curve,
                         "hijack": hijack, "expect_read": expect_read})
    proc = subprocess.Popen(SETPRIV + ["/usr/bin/python3", "-c", ATTACKER, params], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    time.sleep(1.0)  # its handshakes (and, before, the identity takeover) are done

    def finish():
        out, err = proc.communicate("", timeout=30)
        assert proc.returncode == 0, err
        return json.loads(out)
    return finish


def victim_runs(kc, n=3):
    """What went wrong in n executions of the victim ([] when nothing):
    collected, not raised, so that a failure also shows what the attacker read."""
    for i in range(n):
        try:
            r, out = execute(kc, f"secret = '{SECRET}'; print('run', {i}, secret)", timeout=10)
        except Exception as e:  # the identity takeover made the reply go elsewhere
            return [f"execution {i}: {type(e).__name__} {e}"]
        if r["content"]["status"] != "ok" or stdout_of(out) != f"run {i} {SECRET}\n":
            return [f"execution {i}: {r['content']} {stdout_of(out)!r}"]
    return []


def assert_untouched(seen, disturbed):
    assert seen["uid"] == NOBODY
    read = seen["iopub"] + seen["shell"] + ([seen["hb"]] if seen["hb"] else [])
    assert not read and not disturbed, {"attacker read": read[:4], "victim disturbed": disturbed}
    assert SECRET not in json.dumps(seen)


@pytest.fixture(scope="module", autouse=True)
def nobody_can_run_python():
    """The attacker needs only the system Python and pyzmq as uid 65534:
    checked first, so a failure below is the gateway's and not the host's."""
    r = subprocess.run(SETPRIV + ["/usr/bin/python3", "-c", "import os, zmq; print(os.getuid())"],
                       capture_output=True, text=True, cwd="/")
    assert r.returncode == 0 and r.stdout.strip() == str(NOBODY), r.stderr


def tcp_listeners(pid):
    """The TCP ports pid listens on (its socket inodes in /proc/net/tcp*)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).readlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:  # LISTEN
                ports.append(int(f[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.mark.parametrize("hijack", [False, True], ids=["subscribe", "hijack"])
def test_default_gateway_local_user_reads_and_disturbs_nothing(gateway, hijack):
    reply, kc = gateway.open_client("victim")
    conn = reply["connection"]
    finish = attack(gateway, conn, kc.session.session, hijack=hijack)
    disturbed = victim_runs(kc)
    seen = finish()
    assert_untouched(seen, disturbed)
    # the default is ipc in the 0700 sock dir: no port to find, no socket to connect to
    assert conn["transport"] == "ipc"
    assert tcp_listeners(gateway.proc.pid) == []
    assert set(seen["unix_connect"].values()) == {"PermissionError"}, seen["unix_connect"]
    assert set(seen["listing"].values()) == {"PermissionError"}, seen["listing"]


@pytest.mark.parametrize("keys", ["none", "own", "other_conversation"])
def test_curve_tcp_without_the_key_gets_nothing(make_gateway, keys):
    import zmq
    gw = make_gateway(transport="tcp")
    reply, kc = gw.open_client("victim")
    conn = reply["connection"]
    assert conn["transport"] == "tcp" and "curve_serverkey" in conn
    assert conn["shell_port"] in tcp_listeners(gw.proc.pid)  # what a local user finds in /proc/net/tcp
    curve = None
    if keys == "own":  # the server's public key (not a secret) with a keypair of its own
        public, secret = zmq.curve_keypair()
        curve = {"curve_serverkey": conn["curve_serverkey"], "curve_publickey": public.decode(),
                 "curve_secretkey": secret.decode()}
    elif keys == "other_conversation":  # a valid keypair, of another conversation
        other = gw.control.open("other")["connection"]
        curve = {k: other[k] for k in ("curve_publickey", "curve_secretkey")}
        curve["curve_serverkey"] = conn["curve_serverkey"]
    finish = attack(gw, conn, kc.session.session, curve)
    disturbed = victim_runs(kc)
    assert_untouched(finish(), disturbed)
    if keys != "none":  # no key at all fails the handshake before any ZAP request
        refused = gw.events("curve_refused")
        assert refused and refused[0]["reason"] == "wrong client key", refused
    assert gw.stop() == 0


def test_insecure_tcp_has_no_identity_takeover(make_gateway):
    """--insecure-tcp is the operator's explicit word: iopub is readable
    (README, "What is enforced"), but with ROUTER_HANDOVER off a peer naming
    the victim's identity cannot take its routing."""
    gw = make_gateway(transport="tcp", extra_args=["--insecure-tcp"])
    reply, kc = gw.open_client("victim")
    finish = attack(gw, reply["connection"], kc.session.session, expect_read=True)
    assert victim_runs(kc) == []
    seen = finish()
    assert any(SECRET in m for m in seen["iopub"])  # the residual risk, as documented
    assert seen["shell"] == []
    assert gw.stop() == 0


def _as(uid, argv, **kw):
    return subprocess.run(setpriv(uid) + argv,
                          capture_output=True, text=True, cwd="/", timeout=60, **kw)


OPERATOR_CLIENT = r"""
import sys, kennel
gw = kennel.Gateway.from_connection_file(sys.argv[1])
conv = gw.open("mine")
print(conv.connection["transport"], conv.connection["ip"])
r = conv.run("import os; print(os.getuid(), 6 * 7)")
print(r.status, r.stdout.strip())
conv.close()
"""


def test_unprivileged_operator_gets_a_private_sock_dir(tmp_path):
    """A non-root operator (uid 65534) runs `kennel serve` with the default
    transport: its sockets are in its own 0700 sock dir, its own client
    (same uid) works, another uid (65533) cannot connect."""
    from gwtest import launcher
    userns = hostprobe.user_namespaces(NOBODY)  # unconfined: can a non-root operator confine at all here?
    if not userns.ok:
        pytest.skip(userns.detail)
    base = traversable_dir("kennel-op-")
    try:
        os.chown(base, NOBODY, NOBODY)
        config = base / "config.json"
        config.write_text(json.dumps({"launcher": launcher(), "warm_pool": 0,
                                      "confine": {"allow_degraded": hostprobe.allow_degraded(NOBODY)}}))
        state = base / "state"
        daemon = serve(state, config, base / "log", prefix=SETPRIV, cwd="/",
                       env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
        try:
            conn_file = state / "gateway.json"
            sock = state / "sock"
            assert os.stat(sock).st_uid == NOBODY and os.stat(sock).st_mode & 0o777 == 0o700
            pypath = str(HOST_MODULE_DIR)
            out = _as(NOBODY, ["env", f"PYTHONPATH={pypath}", "/usr/bin/python3", "-c", OPERATOR_CLIENT,
                               str(conn_file)])
            assert out.returncode == 0, out.stderr
            transport_line, result_line = out.stdout.splitlines()
            assert transport_line.startswith(f"ipc {sock}/")
            assert result_line == "ok 1000 42"
            other = _as(NOBODY - 1, ["/usr/bin/python3", "-c",
                                     "import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
                                     "try:\n    s.connect(sys.argv[1]); print('connected')\n"
                                     "except OSError as e:\n    print(type(e).__name__)", f"{sock}/gateway-1"])
            assert other.stdout.strip() == "PermissionError", other
        finally:
            daemon.terminate()
            assert daemon.wait(20) == 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("keys", ["none", "own"])
def test_curve_control_socket_without_the_key_gets_nothing(make_gateway, keys):
    """With tcp the gateway's control socket is a CURVE server too: without
    gateway.json's client key no frame reaches the daemon (nothing to
    answer, nothing buffered, nothing logged but the refused handshake)."""
    import zmq
    from jupyter_client.session import Session
    gw = make_gateway(transport="tcp")
    info = json.loads(gw.conn_file.read_text())
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    if keys == "own":
        public, secret = zmq.curve_keypair()
        sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = (
            info["curve_serverkey"].encode(), public, secret)
    sock.connect(f"tcp://{info['ip']}:{info['control_port']}")
    # even with the right HMAC key (as if gateway.json's key had leaked but not its CURVE key)
    Session(key=info["key"].encode()).send(sock, "gateway_info_request", {})
    sock.send_multipart([b"<IDS|MSG>", b"0" * 64, b"{}", b"{}", b"{}", b"x" * 100000])
    assert sock.poll(1500) == 0
    sock.close()
    assert not [e for e in gw.log() if e["event"] in ("bad_message", "control_error")]
    if keys == "own":
        assert [e["reason"] for e in gw.events("curve_refused")] == ["wrong client key"]
    assert gw.control.request("gateway_info_request")["content"]["status"] == "ok"
    assert gw.stop() == 0
