"""The gateway as PID 1, as a container's entrypoint runs it: kernels still
start. A launcher must tell a gateway that died before it (its parent
re-set to a reaper) from a gateway that is PID 1 (its parent is 1 all
along). The host is probed first: a pid namespace of our own (unshare)."""
import json
import os
import pathlib
import shutil
import signal
import subprocess

import requests

import hostprobe
from fleetlib import auth, create_kernel, execute, target
from kennel_testlib import built, notebook_dir, serve, traversable_dir, wait_until


def test_gateway_as_pid_1_starts_kernels(tmp_path):
    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", "echo $$"],
                           capture_output=True, text=True)
    assert probe.returncode == 0 and probe.stdout.strip() == "1", f"unshare --pid: {probe.stderr}"
    config = tmp_path / "config.json"
    config.write_text(json.dumps(hostprobe.gateway_config({"launcher": str(built("kernel-launcher/kennel-launch"))})))
    conn = tmp_path / "gateway.json"
    state = traversable_dir("kennel-pid1-")
    proc = serve(state, config, tmp_path / "gateway.log", conn, ["--http", "127.0.0.1:0"],
                 prefix=["unshare", "--pid", "--fork", "--mount-proc"],
                 env=dict(os.environ, KENNEL_AUTH_TOKEN="pid1-token"))
    try:
        info = json.loads(conn.read_text())
        serve_line = next(json.loads(l) for l in (tmp_path / "gateway.log").read_text().splitlines()
                          if '"event":"serve"' in l)
        assert serve_line["pid"] == 1
        t = target(info["http_url"], "pid1-token")

        def kernelspecs():
            return requests.get(f"{t.base_url}/api/kernelspecs", headers=auth(t.token), timeout=5)
        wait_until(lambda: kernelspecs().status_code == 200, 30,
                   lambda: f"GET /api/kernelspecs 200; it answers {kernelspecs().text}")
        assert execute(t, create_kernel(t), "6 * 7")[0] == "42"
    finally:
        # unshare ignores SIGTERM while it waits: the gateway gets it
        gateway = int(pathlib.Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()[0])
        os.kill(gateway, signal.SIGTERM)
        assert proc.wait(30) == 0
        shutil.rmtree(state, ignore_errors=True)


def test_kernel_mode_under_a_pid_1_front_end(tmp_path):
    """`kennel kernel` (kernelspec mode) started by a front end that is PID
    1 (a notebook server as a container's entrypoint) runs: it ends with
    its front end, not because its parent is 1."""
    from jupyter_client import BlockingKernelClient
    from jupyter_client.connect import write_connection_file

    connection_file, _ = write_connection_file(str(tmp_path / "kernel.json"), key=b"k",
                                               transport="tcp", ip="127.0.0.1")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(hostprobe.gateway_config({"launcher": str(built("kernel-launcher/kennel-launch"))})))
    # sh is PID 1 of the namespace and the kernel's parent; --kill-child
    # takes the namespace down with unshare
    # front ends start a kernel in their notebook directory, a person's
    notebooks = notebook_dir("kennel-nb-")
    front_end = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c",
                                  '"$0" kernel -f "$1" --config "$2" & wait',
                                  str(built("gateway/kennel")), connection_file, str(config)],
                                 env=dict(os.environ), cwd=notebooks)
    kc = BlockingKernelClient(connection_file=connection_file)
    kc.load_connection_file()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=30)
        reply = kc.execute("6 * 7", reply=True, timeout=30)
        assert reply["content"]["status"] == "ok"
    finally:
        kc.stop_channels()
        front_end.kill()
        front_end.wait(30)
        shutil.rmtree(notebooks, ignore_errors=True)
