"""Helpers for the gateway's tests: a real `kennel serve` process, a signed
control client (jupyter_client's Session over a pyzmq DEALER), and
jupyter_client BlockingKernelClients on the conversations it opens.

A uniquely named module, not conftest.py: every test folder has a
conftest.py, and `from conftest import` picks whichever pytest loaded last
when it collects the whole tree.

The launcher is this build's kennel-launch (confined, the built-in Python
kernel) unless KENNEL_TEST_LAUNCHER says otherwise (see launcher())."""
import json
import os
import pathlib
import signal
import shutil
import subprocess
import tempfile
import time

import sys

import zmq
import zmq.asyncio
from jupyter_client import BlockingKernelClient
from jupyter_client.session import Session

import hostprobe

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "gateway" / "python"))
import kennel  # noqa: E402  (the host module: how to reach a connection info's sockets)
BUILDDIR = pathlib.Path(os.environ.get("KENNEL_BUILDDIR", HERE.parent.parent / "build" / "check"))


def built(relpath):
    path = BUILDDIR / relpath
    if not path.exists():
        raise FileNotFoundError(f"{path} not built: run make in {BUILDDIR}")
    return path

DEV_LAUNCH = HERE / "dev_launch.py"


def launcher():
    """The real, confining kennel-launch of this build by default (what the
    gateway runs in production); KENNEL_TEST_LAUNCHER=dev selects the
    unconfined dev_launch.py (ipykernel), any other value is a path."""
    chosen = os.environ.get("KENNEL_TEST_LAUNCHER")
    if chosen == "dev":
        return str(DEV_LAUNCH)
    return chosen or str(built("kernel-launcher/kennel-launch"))


class Control:
    """A signed client of the gateway's control socket."""

    def __init__(self, connection_file):
        info = json.loads(pathlib.Path(connection_file).read_text())
        self.info = info
        self.session = Session(key=info["key"].encode(), signature_scheme=info["signature_scheme"])
        self.sock = connect(info, "control_port", zmq.DEALER)

    def request(self, msg_type, content=None, timeout=30):
        msg = self.session.send(self.sock, msg_type, content or {})
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.sock.poll(100):
                _, frames = self.session.feed_identities(self.sock.recv_multipart())
                reply = self.session.deserialize(frames)
                if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                    return reply
        raise TimeoutError(f"no reply to {msg_type} within {timeout} s")

    def open(self, conversation_id, **content):
        reply = self.request("conversation_open_request", dict(conversation_id=conversation_id, **content))
        return reply["content"]

    def close(self):
        self.sock.close()


def connect(info, port_field, socket_type):
    """A pyzmq socket connected to one socket of a connection info as a
    client would (ipc, or tcp with the info's CURVE keys)."""
    sock = kennel.client_context(info).socket(socket_type)
    sock.linger = 0
    sock.connect(kennel.endpoint(info, port_field))
    return sock


class Gateway:
    """`kennel serve` with transport None: the daemon's default (ipc);
    "tcp" is CURVE, extra_args e.g. ["--insecure-tcp"]."""

    def __init__(self, tmp_path, config=None, transport=None, preexec_fn=None, extra_args=(), user=None):
        self.dir = tmp_path
        # the confined kernel's host uid must traverse to its workspace:
        # pytest's tmp dirs are 0700, so the state dir lives in /tmp
        self.state = pathlib.Path(tempfile.mkdtemp(prefix="kennel-gw-test-"))
        os.chmod(self.state, 0o711)
        if user is not None:
            # an unprivileged gateway (uid user): its state dir and tmp_path
            # (which that uid must be able to reach) are its own
            for path in (self.state, tmp_path):
                os.chown(path, user, user)
            preexec_fn = preexec_fn or (lambda: become(user))
        self.conn_file = tmp_path / "gateway.json"
        self.log_file = tmp_path / "gateway.log"
        cfg = {"launcher": launcher(), "idle_check_interval": 0.2, "interrupt_grace": 1,
               "max_message_bytes": 1 << 20}
        cfg.update(config or {})
        self.config_file = tmp_path / "config.json"
        self.config_file.write_text(json.dumps(hostprobe.gateway_config(cfg)))
        cmd = [str(built("gateway/kennel")), "serve", "--state-dir", str(self.state), "--connection-file",
               str(self.conn_file), "--config", str(self.config_file), "--log-file", str(self.log_file)]
        cmd += (["--transport", transport] if transport else []) + list(extra_args)
        # in a sanitizer build, every daemon of these tests must exit leak-free
        # (stop() asserts exit status 0)
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:halt_on_error=1",
                   LSAN_OPTIONS=f"suppressions={HERE.parent / 'lsan.supp'}",
                   KENNEL_TEST_SECRET="the gateway's environment never reaches a kernel")
        self.proc = subprocess.Popen(cmd, env=env, preexec_fn=preexec_fn)
        deadline = time.time() + 20
        while not self.conn_file.exists():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"kennel serve did not start: {self.log()}")
            time.sleep(0.02)
        self.control = Control(self.conn_file)
        self.clients = []

    def log(self):
        try:
            return [json.loads(line) for line in self.log_file.read_text().splitlines() if line.strip()]
        except FileNotFoundError:
            return []

    def events(self, name):
        return [e for e in self.log() if e["event"] == name]

    def client(self, connection):
        kc = BlockingKernelClient(context=kennel.client_context(connection, zmq.asyncio.Context.instance()))
        kc.load_connection_info(connection)
        kc.start_channels()
        kc.wait_for_ready(timeout=30)
        self.clients.append(kc)
        return kc

    def open_client(self, conversation_id, **content):
        reply = self.control.open(conversation_id, **content)
        assert reply["status"] == "ok", reply
        return reply, self.client(reply["connection"])

    def stop(self, sig=signal.SIGTERM, timeout=20):
        for kc in self.clients:
            kc.stop_channels()
        self.clients = []
        self.control.close()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout)
        leftovers = list(self.state.rglob("*"))
        shutil.rmtree(self.state, ignore_errors=True)
        assert not leftovers, leftovers
        return rc


def become(uid):
    """In a child before exec: drop to uid (its own group, no others)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def execute(kc, code, timeout=30, **kw):
    """Runs code; returns (reply, outputs) where outputs are the iopub messages
    of this request between busy and idle (status excluded)."""
    msg_id = kc.execute(code, **kw)
    outputs = []
    deadline = time.time() + timeout
    while True:
        remaining = deadline - time.time()
        if remaining <= 0:
            raise TimeoutError("no idle for " + code)
        msg = kc.get_iopub_msg(timeout=remaining)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status":
            if msg["content"]["execution_state"] == "idle":
                break
            continue
        if msg["msg_type"] != "execute_input":
            outputs.append(msg)
    reply = kc.get_shell_msg(timeout=max(1, deadline - time.time()))
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=max(1, deadline - time.time()))
    return reply, outputs


def stdout_of(outputs):
    return "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")


def gone(pid, timeout=5.0):
    """True once pid no longer exists (killed and reaped) within timeout."""
    deadline = time.time() + timeout
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if time.time() > deadline:
            return False
        time.sleep(0.02)


def execute_started(kc, code, timeout=30):
    """Sends code that first prints 'started' and returns once that output
    arrived: the execution is running in the kernel (not merely queued)."""
    msg_id = kc.execute("print('started', flush=True)\n" + code)
    deadline = time.time() + timeout
    while True:
        msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.time()))
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream"
                and "started" in msg["content"]["text"]):
            return msg_id
