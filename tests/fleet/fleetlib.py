"""tests/fleet: several `kennel serve --http` gateways behind HAProxy on
loopback, routed by the shipped config (gateway/deploy/k8s/base/haproxy.cfg)
with only its example server lines replaced by the test's gateways."""
import json
import os
import pathlib
import signal
import socket
import subprocess
import time
import types
import uuid

import requests
import websocket

from kennel_testlib import SRCDIR, HttpGateway, wait_until
from refserver import free_port

HAPROXY_CFG = pathlib.Path(SRCDIR) / "gateway" / "deploy" / "k8s" / "base" / "haproxy.cfg"
SERVER_LINE = "    server kennel-"


def shard_name(index):
    """The shard of gateway index as every id carries it: 8 hex digits."""
    return f"{index:08x}"


def target(base_url, token):
    """What tests/httpclients' clients take: base_url (no trailing /),
    ws_url, token."""
    base = base_url.rstrip("/")
    return types.SimpleNamespace(base_url=base, ws_url="ws" + base[len("http"):], token=token)


class Gateway:
    """One gateway of the fleet: shard index, its HttpGateway, a direct target.
    tls: (certfile, keyfile, CA file) for an HTTPS gateway."""

    def __init__(self, root, index, token, config=None, tls=None):
        self.index, self.shard = index, shard_name(index)
        d = pathlib.Path(root) / f"gw{index}"
        d.mkdir()
        cfg = {"shard": format(index, "x"), "max_conversations": 200, "warm_pool": 2}
        cfg.update(config or {})
        if tls:
            # the balancer's Lua calls name the certificate's host (Host:
            # kennel-gateway), which a loopback listener's Host check must be
            # told it serves (http.allow_hosts)
            cfg["http"] = dict(cfg.get("http", {}), certfile=str(tls[0]), keyfile=str(tls[1]),
                               allow_hosts=["kennel-gateway"])
        self.gw = HttpGateway(d, config=cfg, env={"KENNEL_AUTH_TOKEN": token})
        self.verify = str(tls[2]) if tls else True
        wait_until(lambda: self.ready(token), 60, "GET /api/kernelspecs answering 200")
        self.direct = target(self.gw.url, token)
        self.address = self.gw.url.split("://", 1)[1].rstrip("/")

    def ready(self, token):
        try:
            return requests.get(f"{self.gw.url}api/kernelspecs", headers=auth(token), timeout=5,
                                verify=self.verify).status_code == 200
        except requests.RequestException:
            return False

    def alive(self):
        return self.gw.proc.poll() is None

    def kernel_ids(self):
        r = requests.get(f"{self.direct.base_url}/api/kernels", headers=auth(self.direct.token), timeout=30,
                         verify=self.verify)
        r.raise_for_status()
        return {k["id"] for k in r.json()}


def auth(token):
    return {"Authorization": f"token {token}"}


def render_config(gateways, stats_socket):
    """The shipped config with the example servers replaced by gateways
    (name kennel-SHARD, their loopback address) and an admin socket."""
    lines = [line for line in HAPROXY_CFG.read_text().splitlines() if not line.startswith(SERVER_LINE)]
    text = "\n".join(lines) + "\n"
    text += "".join(f"{SERVER_LINE}{g.shard} {g.address}\n" for g in gateways)
    return text + f"\nglobal\n    stats socket {stats_socket} mode 600 level admin\n"


class Balancer:
    """HAProxy on 127.0.0.1:port in front of gateways; restart() starts a
    new process with another server list on the same port. env: more of
    the config's environment (KENNEL_GATEWAY_TLS, KENNEL_GATEWAY_CA)."""

    def __init__(self, directory, gateways, token, port=None, env=None):
        self.dir = pathlib.Path(directory)
        self.token = token
        self.env = env or {}
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.target = target(self.url, token)
        self.stats = self.dir / "haproxy.sock"
        self.proc = None
        self.start(gateways)

    def start(self, gateways, expect_down=()):
        """expect_down: gateways that run but whose health check must fail."""
        cfg = self.dir / "haproxy.cfg"
        cfg.write_text(render_config(gateways, self.stats))
        self.log = open(self.dir / "haproxy.log", "ab")
        env = dict(os.environ, KENNEL_LISTEN=f"127.0.0.1:{self.port}", KENNEL_AUTH_TOKEN=self.token,
                   KENNEL_HAPROXY_DIR=str(HAPROXY_CFG.parent), **self.env)
        self.proc = subprocess.Popen(["haproxy", "-db", "-f", str(cfg)], env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        try:
            wait_until(lambda: self.states() and all(s == "UP" for n, s in self.states().items()
                                                     if any(g.shard in n and g.alive() and g not in expect_down
                                                            for g in gateways)),
                       30, lambda: f"haproxy up with its gateways UP: {self.states()}; "
                                   f"{(self.dir / 'haproxy.log').read_text()[-2000:]}", interval=0.1)
        except TimeoutError:
            self.stop()   # no fixture holds it yet to stop it
            raise

    def admin(self, command):
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(self.stats))
                s.sendall(command.encode() + b"\n")
                out = b""
                while chunk := s.recv(65536):
                    out += chunk
            return out.decode()
        except OSError:
            return ""

    def states(self):
        """{server name: UP/DOWN/...} from the admin socket's CSV stats."""
        out = {}
        for line in self.admin("show stat").splitlines():
            f = line.split(",")
            if len(f) > 17 and f[0] == "kennel" and f[1].startswith("kennel-"):
                out[f[1]] = f[17]
        return out

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)  # soft stop
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def restart(self, gateways, expect_down=()):
        self.stop()
        self.start(gateways, expect_down)


def create_kernel(t):
    r = requests.post(f"{t.base_url}/api/kernels", headers=auth(t.token), json={"name": "python3"}, timeout=120)
    assert r.status_code == 201, (r.status_code, r.text)
    return r.json()["id"]


def execute(t, kernel_id, code, timeout=60):
    """One execute round trip over a new websocket (smolagents' way):
    (execute_result text/plain or None, stdout)."""
    ws = websocket.create_connection(f"{t.ws_url}/api/kernels/{kernel_id}/channels",
                                     header=auth(t.token), timeout=timeout)
    try:
        return round_trip(ws, code)
    finally:
        ws.close()


def round_trip(ws, code):
    return receive_reply(ws, send_execute(ws, code))


def send_execute(ws, code):
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({"header": {"msg_id": msg_id, "msg_type": "execute_request", "session": msg_id,
                                   "username": "fleet", "version": "5.3"},
                        "parent_header": {}, "metadata": {}, "channel": "shell",
                        "content": {"code": code, "silent": False, "store_history": False,
                                    "user_expressions": {}, "allow_stdin": False}}))
    return msg_id


def receive_reply(ws, msg_id):
    """(execute_result text/plain or None, stdout) of msg_id, at its idle."""
    result, out = None, ""
    while True:
        msg = json.loads(ws.recv())
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "execute_result":
            result = msg["content"]["data"].get("text/plain")
        elif msg["msg_type"] == "stream":
            out += msg["content"]["text"]
        elif msg["msg_type"] == "error":
            raise RuntimeError(msg["content"]["ename"] + ": " + msg["content"]["evalue"])
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return result, out


def upgrade_status(t, kernel_id):
    """The HTTP status a websocket upgrade to kernel_id gets (101 when it opens)."""
    try:
        ws = websocket.create_connection(f"{t.ws_url}/api/kernels/{kernel_id}/channels",
                                         header=auth(t.token), timeout=30)
    except websocket.WebSocketBadStatusException as e:
        return e.status_code
    ws.close()
    return 101


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def elapsed(fn, *args):
    t0 = time.perf_counter()
    value = fn(*args)
    return value, time.perf_counter() - t0
