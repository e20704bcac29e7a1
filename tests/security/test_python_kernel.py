"""The built-in Python kernel served confined (kennel-launch --python) and in
the development mode (--unconfined), driven by jupyter_client over ipc
sockets in the run directory."""
import json
import os
import pathlib
import subprocess
import tempfile

import pytest
from jupyter_client import BlockingKernelClient

import hostprobe
# the fixtures come from sandboxlib (see its docstring)
from sandboxlib import (BUILDDIR, PROC_VIEW_CODE, Launcher, canary_untouched, host_files,  # noqa: F401
                        host_paths_seen, host_workspace, launcher, scratch)

KEY = "kernel-key-for-tests"


def connection(ip):
    return {"transport": "ipc", "ip": ip, "shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4,
            "hb_port": 5, "key": KEY, "signature_scheme": "hmac-sha256", "kernel_name": "kennel"}


def run_cell(run_dir, code):
    info = connection(str(run_dir / "k"))
    kc = BlockingKernelClient()
    kc.load_connection_info(info)
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        out = []
        reply = kc.execute_interactive(code, output_hook=out.append, timeout=60)
        text = "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")
        kc.shutdown()
        return reply["content"]["status"], text
    finally:
        kc.stop_channels()


@pytest.fixture
def run_dir(launcher, scratch):
    path = tempfile.mkdtemp(prefix="run-", dir=scratch)
    os.chmod(path, 0o755)
    if not launcher.root:
        os.chown(path, 65534, 65534)
    return pathlib.Path(path)


def start(cmd):
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={"ASAN_OPTIONS": "detect_leaks=0", "KENNEL_GATEWAY_SECRET": "hunter2"})


def test_confined_python_kernel_serves_jupyter_clients(launcher, run_dir):
    conn = run_dir / "kernel.json"
    conn.write_text(json.dumps(connection("/run/kennel/k")))
    if not launcher.root:
        os.chown(conn, 65534, 65534)
    cmd = launcher.prefix() + [launcher.binary, "--policy", launcher.policy_file({}), "--report-fd", "1",
                               "--python", "-f", str(conn)]
    proc = start(cmd)
    try:
        status = json.loads(proc.stdout.readline())
        assert status["status"] == "confined"
        state, text = run_cell(run_dir, "import os, socket\n"
                                        "print(os.getuid(), socket.gethostname(), os.getcwd(),"
                                        " 'KENNEL_GATEWAY_SECRET' in os.environ, os.path.exists('/home'))")
        assert state == "ok"
        assert text.split() == ["1000", "kennel", "/workspace", "False", "False"]
        proc.wait(timeout=30)
        assert proc.returncode == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_proc_shows_no_host_path(launcher, run_dir, scratch):
    # F13: the launcher's install dir, its policy and connection file paths
    # (the run dir's name) appeared in /proc/1/cmdline and the built-in
    # kernel's own cmdline (both are the launcher's argv).
    conn = run_dir / "kernel.json"
    conn.write_text(json.dumps(connection("/run/kennel/k")))
    if not launcher.root:
        os.chown(conn, 65534, 65534)
    policy = launcher.policy_file({})
    cmd = launcher.prefix() + [launcher.binary, "--policy", policy, "--report-fd", "1", "--python", "-f", str(conn)]
    proc = start(cmd)
    try:
        assert json.loads(proc.stdout.readline())["status"] == "confined"
        state, text = run_cell(run_dir, PROC_VIEW_CODE)
        assert state == "ok", text
        view = json.loads(text)
        host_paths = [str(scratch), str(BUILDDIR), run_dir.name, os.path.basename(policy)]
        assert host_paths_seen(view, host_paths) == {}, view
        assert view["/proc/1/cmdline"] == view["/proc/self/cmdline"] == "kennel-launch\0", view
        assert str(BUILDDIR) not in view["mountinfo"] and os.path.basename(policy) not in view["mountinfo"]
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_unconfined_mode_warns_loudly_and_runs(launcher, run_dir):
    if not launcher.root:
        os.chown(run_dir, 65534, 65534)
    conn = run_dir / "kernel.json"
    conn.write_text(json.dumps(connection(str(run_dir / "k"))))
    cmd = launcher.prefix() + [launcher.binary, "--unconfined", "--python", "-f", str(conn)]
    proc = start(cmd)
    try:
        state, text = run_cell(run_dir, "import os\nprint(os.getuid(), os.path.exists('/home'))")
        assert state == "ok"
        assert text.split() == [str(os.getuid() if launcher.root else 65534), "True"]
        proc.wait(timeout=30)
        assert "WITHOUT ANY SANDBOX" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_launch_spec_starts_the_builtin_kernel(launcher, run_dir):
    # As the gateway does: kennel-launch --spec-fd, status line on status_fd.
    conn = run_dir / "kernel.json"
    conn.write_text(json.dumps(connection("/run/kennel/k")))
    if not launcher.root:
        os.chown(conn, 65534, 65534)
    spec = {"policy": {"allow_degraded": hostprobe.allow_degraded(launcher.uid)}, "run_dir": str(run_dir),
            "kernel": {"builtin": "python", "settings": {"builtins": "agent"}}, "status_fd": 5}
    spec_r, spec_w = os.pipe()
    st_r, st_w = os.pipe()
    os.write(spec_w, json.dumps(spec).encode())
    os.close(spec_w)
    proc = subprocess.Popen(launcher.prefix() + [launcher.binary, "--spec-fd", "4"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={"ASAN_OPTIONS": "detect_leaks=0"},
                            pass_fds=(4, 5), preexec_fn=lambda: (os.dup2(spec_r, 4), os.dup2(st_w, 5)))
    os.close(spec_r)
    os.close(st_w)
    try:
        with os.fdopen(st_r) as f:
            status = json.loads(f.readline())
        assert status["status"] == "confined" and status["pid"] > 0
        state, text = run_cell(run_dir, "import os\nprint(os.getuid(), os.getcwd())")
        assert (state, text.split()) == ("ok", ["1000", "/workspace"])
        proc.wait(timeout=30)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
