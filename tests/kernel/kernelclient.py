"""Helpers for the kernel's tests: start a kennel kernel (the kernelspec that
conftest.py installs) with jupyter_client and collect what requests produce."""
import queue
import time

from jupyter_client.manager import start_new_kernel

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
        deadline = time.monotonic() + timeout
        outputs = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no idle for %s; got %r" % (msg_id, outputs))
            msg = self.kc.get_iopub_msg(timeout=remaining)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status":
                if msg["content"]["execution_state"] == "idle":
                    return outputs
                continue
            outputs.append(msg)

    def shell_reply(self, msg_id, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            msg = self.kc.get_shell_msg(timeout=max(0.01, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg

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
    from jupyter_client.manager import start_new_kernel
    km, kc = start_new_kernel(kernel_name=KERNEL_NAME, startup_timeout=TIMEOUT)
    return Kernel(km, kc)


def stop_kernel(kernel):
    kernel.kc.stop_channels()
    kernel.km.shutdown_kernel(now=False)


def start_kernel():
    km, kc = start_new_kernel(kernel_name=KERNEL_NAME, startup_timeout=TIMEOUT)
    return Kernel(km, kc)


def stop_kernel(kernel):
    kernel.kc.stop_channels()
    kernel.km.shutdown_kernel(now=False)


def stream_text(outputs, name="stdout"):
    return "".join(m["content"]["text"] for m in outputs
                   if m["msg_type"] == "stream" and m["content"]["name"] == name)
