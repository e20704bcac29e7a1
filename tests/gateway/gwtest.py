"""Helpers for the gateway's tests: a real `kennel serve` process (Gateway)
with its control client and the jupyter_client clients on the conversations
it opens, which the test stops and checks for leftovers. What other folders
use too (built(), Control, execute, stdout_of, gone, become, ...) is in
tests/kennel_testlib.py and re-exported here for the gateway's tests.

The launcher is this build's kennel-launch (confined, the built-in Python
kernel) unless KENNEL_TEST_LAUNCHER says otherwise (see launcher())."""
import json
import os
import signal
import shutil
import time

import hostprobe
from kennel_testlib import (LSAN_SUPPRESSIONS, Control, become, built, connect, execute, gone,  # noqa: F401
                            in_namespace_of, install_kernelspec, json_log, kernel_client, launcher, mounts_below, notebook_dir, serve,
                            remove_state, stdout_of, traversable_dir, unmount_below)


# ASan keeps up to 256 MiB of freed memory in quarantine by default, resident
# in each process of a sanitizer build (the gateway, and its kernels, which
# inherit ASAN_OPTIONS): a Gateway's asan_options for tests that measure or
# bound memory, so that a sanitizer build's peaks are near a release build's.
SMALL_QUARANTINE = ":quarantine_size_mb=16"


class Gateway:
    """`kennel serve` with transport None: the daemon's default (ipc);
    "tcp" is CURVE, extra_args e.g. ["--insecure-tcp"], prefix a command
    that execs the daemon (e.g. kennel_testlib.private_etc)."""

    def __init__(self, tmp_path, config=None, transport=None, preexec_fn=None, extra_args=(), user=None,
                 asan_options="", prefix=()):
        self.dir = tmp_path
        self.state = traversable_dir("kennel-gw-test-")
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
        args = (["--transport", transport] if transport else []) + list(extra_args)
        # in a sanitizer build, every daemon of these tests must exit leak-free
        # (stop() asserts exit status 0)
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:halt_on_error=1" + asan_options,
                   LSAN_OPTIONS=f"suppressions={LSAN_SUPPRESSIONS}",
                   KENNEL_TEST_SECRET="the gateway's environment never reaches a kernel")
        self.proc = serve(self.state, self.config_file, self.log_file, self.conn_file, args,
                          env=env, preexec_fn=preexec_fn, prefix=prefix)
        self.control = Control(self.conn_file)
        self.clients = []

    def log(self):
        return json_log(self.log_file)

    def inside(self, path):
        """path as the daemon sees it: a workspace is a tmpfs in the
        daemon's own mount namespace (at its path on the host is the empty
        directory below it)."""
        return in_namespace_of(self.proc.pid, path)

    def events(self, name):
        return [e for e in self.log() if e["event"] == name]

    def client(self, connection):
        kc = kernel_client(connection)
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


def unprivileged_gateway(prefix, config=None, **kw):
    """Yields `kennel serve` as uid 65534 (it then owns its sandboxes' files)
    with the layers this host cannot give that uid allowed to degrade, and
    stops it: a fixture's body (kw: Gateway's). Skipped, with the probe's
    detail, where that uid cannot make a user namespace (no sandbox at all
    for it)."""
    import pytest
    userns = hostprobe.user_namespaces(hostprobe.NOBODY)
    if not userns.ok:
        pytest.skip(userns.detail)
    home = traversable_dir(prefix)
    config = dict(config or {}, confine={"allow_degraded": hostprobe.allow_degraded(hostprobe.NOBODY)})
    gw = Gateway(home, config=config, user=hostprobe.NOBODY, **kw)
    yield gw
    try:
        if gw.proc.poll() is None:
            assert gw.stop() == 0
    finally:
        shutil.rmtree(home, ignore_errors=True)


def remove_kept(conv_dir):
    """Removes a conversation directory closed with keep_workspace from the
    host's side: its workspace is still a tmpfs in the running daemon's
    namespace, which Linux detaches there when the directory under it is
    removed (a mount point removed from another namespace)."""
    shutil.rmtree(conv_dir)


def execute_started(kc, code, timeout=30):
    """Sends code that first prints 'started' and returns once that output
    arrived: the execution is running in the kernel (not merely queued)."""
    msg_id = kc.execute("print('started', flush=True)\n" + code)
    deadline = time.monotonic() + timeout
    while True:
        msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream"
                and "started" in msg["content"]["text"]):
            return msg_id
