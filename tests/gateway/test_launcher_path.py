"""kennel finds kennel-launch beside its own binary wherever the binary lies,
on a mount other than / too (a bind-mounted tree, a separate /usr or /opt,
a clone under a unit's PrivateTmp). The daemon unshares a mount namespace
of its own at start (gateway/gw_quota.c), and from then on
/proc/self/exe names a binary on such a mount relative to that mount's
root, a path that does not exist: the launcher must be found before
(gw_config_default_launcher). Before that, the daemon fell back to
"kennel-launch" on PATH and refused every conversation ("exec kennel-launch:
No such file or directory"), and at SIGHUP a daemon that had found it lost
it.

Here the build tree is bind-mounted at a directory of the test's and kennel
started from the mount, in a mount namespace of the test's own (root only:
an unprivileged user cannot bind-mount in the host's user namespace)."""
import json
import os
import signal
import subprocess

import pytest

from kennel_testlib import BUILDDIR, Control, serve, wait_until


def events(log, name):
    return [e for e in map(json.loads, log.read_text().splitlines()) if e.get("event") == name]


def test_a_kennel_on_a_mount_of_its_own_finds_its_launcher_at_start_and_reload(tmp_path):
    if os.geteuid() != 0:
        pytest.skip(f"bind-mounting the build tree needs root (euid {os.geteuid()}); CI runs this as root")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    state, log, config = tmp_path / "state", tmp_path / "gw.log", tmp_path / "kennel.conf"
    state.mkdir()
    config.write_text("{}")
    # the test's namespace: the bind is gone with it, whatever happens
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
              'mount --bind "$1" "$2" && shift 2 && exec "$@"', "sh", str(BUILDDIR), str(mnt)]
    proc = serve(state, config, log, binary=mnt / "gateway" / "kennel", prefix=prefix)
    control = Control(state / "gateway.json")
    try:
        info = control.request("gateway_info_request")["content"]
        assert info["ready"] is True, info.get("startup_error")
        launcher = events(log, "serve")[0]["launcher"]
        assert launcher == str(mnt / "kernel-launcher" / "kennel-launch"), launcher
        proc.send_signal(signal.SIGHUP)
        wait_until(lambda: events(log, "reload") or events(log, "reload_failed"), 20, "the reload logged")
        assert events(log, "reload"), events(log, "reload_failed")
        assert not [e for e in events(log, "reload_needs_restart") if e["key"] == "launcher"]
        reply = control.open("on-a-mount")
        assert reply["status"] == "ok", reply
    finally:
        control.close()
        proc.terminate()
        assert proc.wait(30) == 0, log.read_text()[-3000:]
