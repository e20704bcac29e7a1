"""Helpers for the kernel's tests: start a kennel kernel (the kernelspec that
conftest.py installs) with jupyter_client and collect what requests produce.

Test files import helpers from here, never `from conftest import`: every
test folder has a conftest.py, and when the whole tests/ tree is collected
that name can be another folder's."""
import json
import os
import queue
import subprocess
import uuid

from jupyter_client import BlockingKernelClient
from jupyter_client.manager import start_new_kernel

import hostprobe
from kennel_testlib import built, first_reply, iopub_until_idle, stream_text  # noqa: F401

KERNEL_NAME = "kennel-dev"
TIMEOUT = 30


class Kernel:
    """A running kennel kernel and a blocking client, with helpers that
    collect everything a request produced (reply, iopub until idle)."""

    def __init__(self, km, kc):
        self.km = km
        self.kc = kc

    def iopub_until_idle(self, msg_id, timeout=TIMEOUT):
        """iopub messages of one request, from busy to idle (both excluded)."""
        return iopub_until_idle(self.kc, msg_id, timeout)

    def shell_reply(self, msg_id, timeout=TIMEOUT):
        return first_reply(self.kc.get_shell_msg, msg_id, timeout)

    def execute(self, code, timeout=TIMEOUT, **kwargs):
        """(reply content, [iopub messages other than execute_input])."""
        kwargs.setdefault("allow_stdin", False)
        msg_id = self.kc.execute(code, **kwargs)
        reply = self.shell_reply(msg_id, timeout)
        outputs = self.iopub_until_idle(msg_id, timeout)
        return reply["content"], [m for m in outputs if m["msg_type"] != "execute_input"]

    def value(self, expression):
        """The text/plain of an expression evaluated in the kernel."""
        reply, outputs = self.execute(expression)
        assert reply["status"] == "ok", reply
        results = [m for m in outputs if m["msg_type"] == "execute_result"]
        assert results, outputs
        return results[-1]["content"]["data"]["text/plain"]

    def drain(self):
        for get in (self.kc.get_iopub_msg, self.kc.get_shell_msg, self.kc.get_stdin_msg):
            while True:
                try:
                    get(timeout=0.05)
                except queue.Empty:
                    break


def start_kernel():
    km, kc = start_new_kernel(kernel_name=KERNEL_NAME, startup_timeout=TIMEOUT)
    return Kernel(km, kc)


def stop_kernel(kernel):
    kernel.kc.stop_channels()
    kernel.km.shutdown_kernel(now=False)


class ConfinedKernel(Kernel):
    """The built-in Python kernel started the way the gateway starts it:
    `kennel-launch --spec-fd N` (confined, default policy, tmpfs workspace)
    with kernel settings, reached through its ipc sockets in run_dir;
    policy: confine policy fields over that default (e.g. network)."""

    def __init__(self, launcher, settings, base_dir, env=None, policy=None):
        run_dir = os.path.join(base_dir, "run")
        os.makedirs(run_dir)
        os.chmod(run_dir, 0o777)  # the sandbox user creates its sockets here
        conn = {"transport": "ipc", "ip": "/run/kennel/k", "shell_port": 1, "iopub_port": 2,
                "stdin_port": 3, "control_port": 4, "hb_port": 5, "key": str(uuid.uuid4()),
                "signature_scheme": "hmac-sha256", "kernel_name": "kennel"}
        with open(os.path.join(run_dir, "kernel.json"), "w") as f:
            json.dump(conn, f)
        spec_r, spec_w = os.pipe()
        status_r, status_w = os.pipe()
        spec = {"policy": dict({"allow_degraded": hostprobe.allow_degraded()}, **(policy or {})), "run_dir": run_dir,
                "status_fd": status_w,
                "kernel": {"builtin": "python", "settings": settings}}
        if env:
            spec["env"] = env
        self.log_path = os.path.join(base_dir, "stderr.log")
        with open(self.log_path, "wb") as log:
            self.popen = subprocess.Popen([str(launcher), "--spec-fd", str(spec_r)],
                                          pass_fds=(spec_r, status_w), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=log)
        os.close(spec_r)
        os.close(status_w)
        with os.fdopen(spec_w, "w") as f:
            json.dump(spec, f)
        with os.fdopen(status_r) as f:
            self.status = json.loads(f.readline() or "null")
        kc = BlockingKernelClient()
        kc.load_connection_info(dict(conn, ip=os.path.join(run_dir, "k")))
        super().__init__(None, kc)

    def start(self):
        assert self.status and self.status["status"] == "confined", (self.status, self.stderr())
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=TIMEOUT)
        return self

    def stderr(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.kc.channels_running:
            self.kc.shutdown()
            self.kc.stop_channels()
        try:
            return self.popen.wait(timeout=TIMEOUT)
        except Exception:
            self.popen.kill()
            raise


# A cell that writes a wheel of one module (kennel_wheel_probe, ANSWER = 42)
# into /workspace/wheels, from inside the sandbox: a package source an
# operator may name (pip's refusal names it).
WHEEL_CELL = '''
import base64, hashlib, os, zipfile
def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))
files = {
    "kennel_wheel_probe/__init__.py": b"ANSWER = 42\\n",
    "kennel_wheel_probe-1.0.dist-info/METADATA":
        b"Metadata-Version: 2.1\\nName: kennel-wheel-probe\\nVersion: 1.0\\n",
    "kennel_wheel_probe-1.0.dist-info/WHEEL":
        b"Wheel-Version: 1.0\\nGenerator: hand\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = "\\n".join(_record_line(n, d) for n, d in files.items())
record += "\\nkennel_wheel_probe-1.0.dist-info/RECORD,,\\n"
os.makedirs("/workspace/wheels", exist_ok=True)
with zipfile.ZipFile("/workspace/wheels/kennel_wheel_probe-1.0-py3-none-any.whl", "w") as z:
    for name, data in files.items():
        z.writestr(name, data)
    z.writestr("kennel_wheel_probe-1.0.dist-info/RECORD", record)
'''


# ---- the reference: Debian's ipykernel ---------------------------------------

def start_ipykernel(cwd, ipython_dir):
    """Debian's ipykernel (kernelspec "python3"), what the fidelity tests
    compare kennel with: started in cwd, its IPython profile (and history
    database) under ipython_dir, nothing of the host's ~/.ipython."""
    env = dict(os.environ, IPYTHONDIR=str(ipython_dir))
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=TIMEOUT, cwd=str(cwd), env=env)
    return Kernel(km, kc)


def shape(reply, outputs):
    """What front ends and nbclient act on: the reply's status, error and
    payloads, and each output's kind (stream name and text, or message type
    and MIME types). Consecutive stream messages of one stream are one
    (kernels cut streams where their timing does)."""
    kinds = []
    for msg in outputs:
        content = msg["content"]
        if msg["msg_type"] == "stream":
            if kinds and kinds[-1][:2] == ("stream", content["name"]):
                kinds[-1] = ("stream", content["name"], kinds[-1][2] + content["text"])
            else:
                kinds.append(("stream", content["name"], content["text"]))
        elif msg["msg_type"] in ("display_data", "execute_result", "update_display_data"):
            kinds.append((msg["msg_type"], sorted(content["data"])))
        elif msg["msg_type"] == "error":
            kinds.append(("error", content["ename"], content["evalue"]))
        else:
            kinds.append((msg["msg_type"],))
    error = {key: reply.get(key) for key in ("ename", "evalue", "traceback")} if reply["status"] == "error" else {}
    return {"status": reply["status"], "error": error, "payload": reply.get("payload", []), "outputs": kinds}
