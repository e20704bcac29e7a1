"""kennel-launch and the layer report: what the sandbox is, seen from outside
(report, posture, exit status, signals, the launch spec, refusals)."""
import json
import os
import signal
import subprocess
import textwrap
import time

import pytest

import hostprobe
from kennel_testlib import cmdline, pids, wait_until
# the fixtures come from sandboxlib (see its docstring)
from sandboxlib import (Launcher, any_launcher, canary_untouched, host_files, host_workspace,  # noqa: F401
                        launcher, scratch)


ALL_LAYERS = {"no_new_privs", "cgroup", "userns", "pid", "net", "ipc", "uts", "cgroupns", "mount", "quota",
              "caps", "rlimits", "landlock", "seccomp", "fds", "env"}


def test_report_says_every_layer_is_active(launcher):
    # Active everywhere but where the host lacks the layer (probed
    # unconfined: hostprobe); there the report says so, with the reason.
    res = launcher.run(["/bin/true"])
    assert res.returncode == 0, res.stderr
    layers = res.status["layers"]
    assert set(layers) == ALL_LAYERS
    for name, layer in layers.items():
        assert layer["reason"], name
        expected = hostprobe.expected_layer_state(name, launcher.uid)
        if expected != "active":
            print(f"{name}: {expected} on this host ({hostprobe.lacking_layers(launcher.uid)[name]}): {layer}")
        assert layer["state"] == expected, (name, layer, hostprobe.lacking_layers(launcher.uid))
    assert res.status["pid"] > 0


def refusal_param(user):
    uid = 0 if user == "root" else hostprobe.NOBODY
    layer, detail = hostprobe.first_refusal(uid)
    return pytest.param(user, id=f"{user}-{'host-lacks-' + layer if layer else detail}")


@pytest.mark.parametrize("user", [refusal_param("root"), refusal_param("nobody")])
def test_required_layer_missing_refuses_with_its_name(scratch, user):
    # A launch that allows no degradation: where the host lacks a layer for
    # this user (uid 65534 on cgroup v1, Landlock ABI < 6, no user
    # namespaces) it is refused naming that layer and runs nothing; where
    # the host has them all, it runs with every layer active.
    who = Launcher(user, scratch, str(scratch))
    layer, detail = hostprobe.first_refusal(who.uid)
    print(f"{user}: {detail}")
    res = who.run(["/bin/echo", "RAN"], policy={"allow_degraded": []}, strict=True)
    if layer:
        assert res.returncode == 125 and "RAN" not in res.stdout, (res.returncode, res.stdout)
        assert res.stderr.count("\n") == 1 and f"confinement refused: {layer}:" in res.stderr, res.stderr
        assert res.status["status"] == "error" and res.status["stage"] == layer
    else:
        assert (res.returncode, res.stdout) == (0, "RAN\n"), res.stderr
        assert {layer["state"] for layer in res.status["layers"].values()} == {"active"}, res.status


def test_refused_where_the_host_forbids_user_namespaces(any_launcher):
    # The real host (no simulation, see the next test for that): a user the
    # host gives no user namespaces gets a refusal naming userns; otherwise
    # the layer is active.
    probe = hostprobe.user_namespaces(any_launcher.uid)
    print(probe.detail)
    res = any_launcher.run(["/bin/echo", "RAN"])
    if probe.ok:
        assert res.status["layers"]["userns"]["state"] == "active", res.status
    else:
        assert res.returncode == 125 and "RAN" not in res.stdout
        assert res.status["stage"] == "userns" and "confinement refused: userns:" in res.stderr, res.stderr


def test_no_user_namespaces_refuses_naming_the_layer(launcher):
    rfd, wfd = os.pipe()
    cmd = launcher.prefix() + [launcher.no_userns, launcher.binary, "--policy", launcher.policy_file({}),
                               "--report-fd", str(wfd), "--", "/bin/echo", "RAN"]
    proc = subprocess.run(cmd, capture_output=True, text=True, pass_fds=(wfd,), timeout=30,
                          env={"ASAN_OPTIONS": "detect_leaks=0"})
    os.close(wfd)
    with os.fdopen(rfd) as f:
        status = json.loads(f.read())
    assert proc.returncode == 125 and "RAN" not in proc.stdout
    line = proc.stderr.strip()
    assert "\n" not in line and line.startswith("kennel-launch: confinement refused: userns: clone(CLONE_NEWUSER"), line
    assert "Operation not permitted" in line
    assert status["status"] == "error" and status["stage"] == "userns" and status["errno"] == 1


def test_python_with_numpy_threads_subprocess_multiprocessing(launcher):
    res = launcher.py(textwrap.dedent("""
        import ctypes, multiprocessing, subprocess, threading
        import numpy, pandas
        print("numpy", int(numpy.arange(10).sum()), "pandas", int(pandas.DataFrame({"a": [1, 2]}).a.sum()))
        out = []
        threads = [threading.Thread(target=out.append, args=(i,)) for i in range(32)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        print("threads", len(out))
        print("subprocess", subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout.strip())
        with multiprocessing.Pool(2) as pool:
            print("pool", sum(pool.map(abs, [-1, -2, -3])))
        q = multiprocessing.Queue()
        p = multiprocessing.Process(target=q.put, args=(42,))
        p.start()
        print("process", q.get(timeout=10))
        p.join()
        libc = ctypes.CDLL(None, use_errno=True)
        print("clone3", libc.syscall(435, 0, 0), ctypes.get_errno())
    """), timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["numpy", "45", "pandas", "3", "threads", "32", "subprocess", "hi",
                                  "pool", "6", "process", "42", "clone3", "-1", "38"]


def test_exit_status_and_signals_propagate(launcher):
    assert launcher.run(["/bin/sh", "-c", "exit 7"]).returncode == 7
    assert launcher.run(["/bin/sh", "-c", "kill -TERM $$"]).returncode == -signal.SIGTERM
    res = launcher.run(["/nonexistent/cmd"])
    assert res.returncode == 127 and "exec /nonexistent/cmd" in res.stderr


def test_signal_to_the_launcher_reaches_the_command(launcher, scratch):
    cmd = launcher.prefix() + [launcher.binary, "--policy", launcher.policy_file({}), "--",
                               "/usr/bin/python3", "-c",
                               "import os,signal,sys,time\n"
                               "signal.signal(signal.SIGTERM, lambda *a: (os.write(1, b'got-term\\n'), sys.exit(3)))\n"
                               "os.write(1, b'ready\\n')\ntime.sleep(30)"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env={"ASAN_OPTIONS": "detect_leaks=0"})
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=10)
    assert out.strip() == "got-term" and proc.returncode == 3


def test_sandbox_dies_with_the_launcher_and_takes_daemons_along(launcher):
    token = f"{os.getpid()}.{time.monotonic_ns() % 100000}"
    cmd = launcher.prefix() + [launcher.binary, "--policy", launcher.policy_file({}), "--", "/bin/sh", "-c",
                               f"setsid sleep {token} & echo started; sleep {token}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env={"ASAN_OPTIONS": "detect_leaks=0"})
    assert proc.stdout.readline().strip() == "started"

    def sleepers():
        return [pid for pid in pids() if cmdline(pid) == b"sleep\0" + token.encode() + b"\0"]

    try:
        wait_until(lambda: len(sleepers()) >= 2, 5, "both sleepers started")
        assert len(sleepers()) == 2
        proc.kill()  # SIGKILL to the waiter: PDEATHSIG takes the namespace down
        proc.wait()
        wait_until(lambda: not sleepers(), 5, lambda: f"sleepers left: {sleepers()}")
    finally:
        # on failure, leave nothing behind (these pids are this test's own)
        proc.kill()
        proc.wait()
        for pid in sleepers():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_posture_seen_from_the_host(launcher):
    cmd = launcher.prefix() + [launcher.binary, "--policy", launcher.policy_file({}), "--report-fd", "1", "--",
                               "/bin/sh", "-c", "read line"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={"ASAN_OPTIONS": "detect_leaks=0"})
    try:
        pid = json.loads(proc.stdout.readline())["pid"]
        status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines())
        for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(status[cap].strip(), 16) == 0, cap
        assert status["NoNewPrivs"].strip() == "1" and status["Seccomp"].strip() == "2"
        host_uid = hostprobe.SANDBOX_HOST_ID if launcher.root else 65534
        assert status["Uid"].split() == [str(host_uid)] * 4
        assert status["Groups"].strip() == ""
        uid_map = open(f"/proc/{pid}/uid_map").read().split()
        assert uid_map == ["1000", str(host_uid), "1"]
        for ns in ("user", "mnt", "pid", "net", "ipc", "uts", "cgroup"):
            assert os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"), ns
        assert sorted(os.listdir(f"/proc/{pid}/fd")) == ["0", "1", "2"]
    finally:
        proc.communicate("done\n", timeout=10)
    assert proc.returncode == 0


def spec_launch(launcher, spec, status_fd_in_child=5, timeout=30):
    """kennel-launch --spec-fd: the spec on one pipe, the status on another."""
    spec_r, spec_w = os.pipe()
    st_r, st_w = os.pipe()
    spec = dict(spec, status_fd=status_fd_in_child)
    os.write(spec_w, json.dumps(spec).encode())
    os.close(spec_w)
    # place the pipes at the fd numbers the spec names
    args = launcher.prefix() + [launcher.binary, "--spec-fd", "4"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={"ASAN_OPTIONS": "detect_leaks=0"},
                            pass_fds=(4, status_fd_in_child),
                            preexec_fn=lambda: (os.dup2(spec_r, 4), os.dup2(st_w, status_fd_in_child)))
    os.close(spec_r)
    os.close(st_w)
    out, err = proc.communicate(timeout=timeout)
    with os.fdopen(st_r) as f:
        lines = f.read().splitlines()
    return proc.returncode, out, err, lines


def test_launch_spec_runs_argv_kernel_after_status_line(launcher, host_workspace):
    run_dir = host_workspace.parent / (host_workspace.name + "-run")
    run_dir.mkdir()
    (run_dir / "kernel.json").write_text('{"key": "k"}')
    if not launcher.root:
        os.chown(run_dir, 65534, 65534)
        os.chown(run_dir / "kernel.json", 65534, 65534)
    policy = {"allow_degraded": hostprobe.allow_degraded(launcher.uid, ["quota"])}
    rc, out, err, lines = spec_launch(launcher, {
        "policy": policy, "workspace": str(host_workspace), "run_dir": str(run_dir),
        "env": {"KENNEL_CONVERSATION": "c1"},
        "kernel": {"argv": ["/bin/sh", "-c", 'cat "$1"; echo " $KENNEL_CONVERSATION"; echo hi > /workspace/out',
                            "sh", "{connection_file}"]},
    })
    assert rc == 0, err
    assert len(lines) == 2
    status = json.loads(lines[0])
    assert status["status"] == "confined" and status["layers"]["userns"]["state"] == "active"
    # the waiter's last line: the memory cgroup's OOM count, -1 without one
    ended = json.loads(lines[1])
    has_cgroup = status["layers"]["cgroup"]["state"] == "active"
    assert ended == {"status": "ended", "wait_status": 0, "oom_kills": 0 if has_cgroup else -1,
                     "memory_bytes": 2 << 30}
    # a spec's kernel writes to the launcher's stderr through its pump, marked
    assert out == ""
    assert '[kernel] {"key": "k"} c1' in err.splitlines(), err
    assert (host_workspace / "out").read_text() == "hi\n"


def test_launch_spec_errors_come_back_on_the_status_fd(launcher):
    rc, out, err, lines = spec_launch(launcher, {"kernel": {"argv": ["/bin/true"]}, "policy": {"netwrok": "none"}})
    assert rc == 125
    status = json.loads(lines[0])
    assert status["status"] == "error" and status["stage"] == "spec" and "netwrok" in status["message"]


def test_cgroup_memory_limit_kills_and_says_so(scratch):
    # As root the cgroup is the memory bound (here without RLIMIT_DATA):
    # the OOM kill is reported on stderr, the launcher dies of SIGKILL. On a
    # host that gives root no cgroup limits the launch must be refused
    # instead (cgroup is not allowed to degrade here: nothing would bound
    # the bomb).
    root = Launcher("root", scratch, str(scratch))
    probe = hostprobe.cgroup_limits(0)
    print(probe.detail)
    others = [name for name in hostprobe.lacking_layers(0) if name != "cgroup"]
    res = root.py("chunks = []\nwhile True: chunks.append(bytearray(16 << 20))", strict=True,
                  policy={"memory_bytes": 128 << 20, "rlimits": {"data": 0}, "allow_degraded": others})
    if not probe.ok:
        assert res.returncode == 125 and res.status["stage"] == "cgroup", (res.returncode, res.stderr)
        return
    assert res.returncode == -signal.SIGKILL, (res.returncode, res.stderr)
    assert "reached its memory limit (134217728 bytes)" in res.stderr
    assert "OOM killer" in res.stderr


def test_inherited_ignored_sigchld_does_not_hang_the_waiter(launcher):
    # A parent that ignores SIGCHLD passes that on through exec.
    code = ("import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); "
            "os.execv(sys.argv[1], sys.argv[1:])")
    cmd = launcher.prefix() + ["/usr/bin/python3", "-c", code, launcher.binary, "--policy",
                               launcher.policy_file({}), "--", "/bin/sh", "-c", "exit 5"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=20, env={"ASAN_OPTIONS": "detect_leaks=0"})
    assert proc.returncode == 5, proc.stderr


def test_root_started_workspace_below_a_root_only_directory(scratch):
    # The gateway keeps state under root-only directories: the launcher opens
    # the sources before it becomes the sandbox user.
    root = Launcher("root", scratch, str(scratch))
    private = scratch / "root-only"
    (private / "ws").mkdir(parents=True)
    private.chmod(0o700)
    res = root.run(["/bin/sh", "-c", "echo hi > /workspace/x && cat /workspace/x"],
                   policy={"workspace": str(private / "ws"), "allow_degraded": ["quota"]})
    assert (res.returncode, res.stdout) == (0, "hi\n"), res.stderr
    st = (private / "ws" / "x").stat()
    assert (st.st_uid, st.st_gid) == (hostprobe.SANDBOX_HOST_ID,) * 2


def test_a_missing_workspace_is_refused_at_the_mount_stage(launcher):
    res = launcher.run(["/bin/echo", "RAN"], policy={"workspace": "/nonexistent/ws", "allow_degraded": ["quota"]})
    assert res.returncode == 125 and "RAN" not in res.stdout
    assert res.status["status"] == "error" and res.status["stage"] == "mount" and res.status["errno"] == 2
    assert "/nonexistent/ws" in res.stderr and res.stderr.count("\n") == 1, res.stderr


def launcher_cgroup_parent():
    """Where a root launcher makes its cgroups (v1: the pids hierarchy, v2:
    the unified one, below this process's own cgroup); None (with the probe's
    reason) where it makes none."""
    probe = hostprobe.cgroup_limits(0)
    if not probe.ok:
        return None, probe.detail
    if hostprobe.cgroup_version() == 1:
        own = next(line.split(":", 2)[2].strip() for line in open("/proc/self/cgroup")
                   if "pids" in line.split(":")[1].split(","))
        hierarchy = "/sys/fs/cgroup/pids"
    else:
        own = next(line.split(":", 2)[2].strip() for line in open("/proc/self/cgroup") if line.startswith("0::"))
        hierarchy = "/sys/fs/cgroup"
    return f"{hierarchy}{'' if own == '/' else own}", None


def pid_namespace():
    """This process's pid namespace's inode, which a launcher's cgroup name
    carries (kennel-p<namespace>-<pid>, confine/cgroup.c)."""
    return os.stat("/proc/self/ns/pid").st_ino


def test_stale_cgroup_of_a_killed_launcher_is_removed(scratch):
    # A launcher killed with SIGKILL cannot remove its cgroup; the next one
    # removes cgroups of launchers of its pid namespace that no longer
    # exist, and those of older versions' names (kennel-<pid>).
    parent, why = launcher_cgroup_parent()
    if parent is None:
        pytest.skip(f"{why}: the launcher makes no cgroup here, so none is left to remove "
                    "(test_report_says_every_layer_is_active asserts the layer is reported unsupported)")
    root = Launcher("root", scratch, str(scratch))
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = [f"{parent}/kennel-p{pid_namespace()}-{dead.pid}", f"{parent}/kennel-p{pid_namespace()}-{dead.pid}-3",
             f"{parent}/kennel-{dead.pid}"]
    for path in stale:
        os.mkdir(path)
    try:
        assert root.run(["/bin/true"]).returncode == 0
        assert [p for p in stale if os.path.exists(p)] == []
    finally:
        for path in stale:
            if os.path.exists(path):
                os.rmdir(path)


def test_a_cgroup_made_in_another_pid_namespace_is_left_alone(scratch):
    """Gateways in other pid namespaces (a container given the host's
    /sys/fs/cgroup, a gateway as a container's PID 1) share the cgroup tree.
    A launcher of another namespace sees none of this one's pids, so it once
    took any empty cgroup beside its own for a dead launcher's: also one a
    live launcher here had just made and not yet moved into (names carried
    the pid alone). Seen when such runs met: 'KernelStartFailed: confinement
    failed at cgroup: move pid N into .../kennel-M/cgroup.procs: No such file
    or directory'. Here: a live process's cgroup, empty, then a launcher in
    a pid namespace of its own; the cgroup stays."""
    parent, why = launcher_cgroup_parent()
    if parent is None:
        pytest.skip(f"{why}: the launcher makes no cgroup here")
    root = Launcher("root", scratch, str(scratch))
    alive = subprocess.Popen(["sleep", "60"])
    mine = f"{parent}/kennel-p{pid_namespace()}-{alive.pid}"
    os.mkdir(mine)
    try:
        res = root.run(["/bin/true"], wrapper=["unshare", "--pid", "--fork", "--mount-proc"])
        assert res.returncode == 0, res.stderr
        assert os.path.isdir(mine), "a launcher of another pid namespace removed a live launcher's cgroup"
    finally:
        alive.kill()
        alive.wait()
        if os.path.exists(mine):
            os.rmdir(mine)
