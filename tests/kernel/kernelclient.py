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

