"""The fork server: `kennel-launch --zygote SOCKET` started once, kernels
launched through `kennel-launch --spec-fd` with "zygote" in the spec (as the
gateway will), driven by jupyter_client over their ipc connection files.
Real processes throughout; run as root (the gateway's case)."""
import json
import os
import pathlib
import signal
import stat
import subprocess
import tempfile
import time

import pytest
from jupyter_client import BlockingKernelClient

import hostprobe
from kennel_testlib import gone
from sandboxlib import BUILDDIR, PROC_VIEW_CODE, built, host_paths_seen

KEY = "zygote-test-key"
ENV = {"ASAN_OPTIONS": "detect_leaks=0", "PATH": "/usr/bin:/bin"}

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="the zygote tests start sandboxes as root")


def connection(ip):
    return {"transport": "ipc", "ip": ip, "shell_port": 1, "iopub_port": 2, "stdin_port": 3,
            "control_port": 4, "hb_port": 5, "key": KEY, "signature_scheme": "hmac-sha256",
            "kernel_name": "kennel"}


class Zygote:
    def __init__(self, scratch, preload=None):
        self.path = str(scratch / f"zygote-{len(os.listdir(scratch))}.sock")
        args = [str(built("kernel-launcher/kennel-launch")), "--zygote", self.path]
        if preload:
            args += ["--preload", preload]
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=ENV)
        line = self.proc.stderr.readline()
        assert "ready on" in line, line

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=10)
        self.proc.stderr.close()


class Kernel:
    """kennel-launch --spec-fd 4 with the status line on fd 5, as the gateway runs it."""

    def __init__(self, scratch, zygote_path, env=None):
        self.run_dir = pathlib.Path(tempfile.mkdtemp(prefix="run-", dir=scratch))
        os.chmod(self.run_dir, 0o755)
        (self.run_dir / "kernel.json").write_text(json.dumps(connection("/run/kennel/k")))
        # the layers this host cannot give root, allowed by name (hostprobe)
        spec = {"run_dir": str(self.run_dir), "kernel": {"builtin": "python"}, "status_fd": 5,
                "env": env or {}, "policy": {"allow_degraded": hostprobe.allow_degraded(0)}}
        if zygote_path:
            spec["zygote"] = zygote_path
        spec_r, spec_w = os.pipe()
        st_r, st_w = os.pipe()
        os.write(spec_w, json.dumps(spec).encode())
        os.close(spec_w)
        self.proc = subprocess.Popen([str(built("kernel-launcher/kennel-launch")), "--spec-fd", "4"],
                                     stderr=subprocess.PIPE, text=True, env=ENV, pass_fds=(4, 5),
                                     preexec_fn=lambda: (os.dup2(spec_r, 4), os.dup2(st_w, 5)))
        os.close(spec_r)
        os.close(st_w)
        with os.fdopen(st_r) as f:
            self.status = json.loads(f.readline())
        self.kc = None

    def client(self):
        if not self.kc:
            self.kc = BlockingKernelClient()
            self.kc.load_connection_info(connection(str(self.run_dir / "k")))
            self.kc.start_channels()
            self.kc.wait_for_ready(timeout=60)
        return self.kc

    def run(self, code, timeout=30):
        out = []
        reply = self.client().execute_interactive(code, output_hook=out.append, timeout=timeout)
        text = "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")
        return reply["content"]["status"], text

    def close(self):
        if self.kc:
            self.kc.stop_channels()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stderr.close()


@pytest.fixture(scope="module")
def scratch():
    path = pathlib.Path(tempfile.mkdtemp(prefix="kennel-zygote-"))
    os.chmod(path, 0o755)
    yield path
    subprocess.run(["rm", "-rf", str(path)])


@pytest.fixture(scope="module")
def zygote(scratch):
    z = Zygote(scratch)
    yield z
    z.stop()


@pytest.fixture
def kernels(scratch):
    started = []
    yield lambda path, **kw: started.append(Kernel(scratch, path, **kw)) or started[-1]
    for k in started:
        k.close()


def test_socket_is_private(zygote):
    mode = os.stat(zygote.path).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600


def test_kernels_from_one_zygote_are_confined_separate_and_persistent(zygote, kernels):
    ks = [kernels(zygote.path, env={"WHO": f"k{i}"}) for i in range(3)]
    for k in ks:
        assert k.status["status"] == "confined"
        layers = k.status["layers"]
        for layer in ("userns", "pid", "net", "mount", "caps", "seccomp", "landlock", "cgroup"):
            assert layers[layer]["state"] == hostprobe.expected_layer_state(layer, 0), (layer, layers[layer])
    for i, k in enumerate(ks):
        assert k.run(f"x = {i}\nopen('/workspace/mine', 'w').write('{i}')") == ("ok", "")
    for i, k in enumerate(ks):
        state, text = k.run("import os\nprint(x, open('/workspace/mine').read(), os.getuid(), os.getcwd(),"
                            " os.environ['WHO'], os.environ['HOME'])")
        assert state == "ok"
        words = text.split()
        assert words == [str(i), str(i), "1000", "/workspace", f"k{i}", "/workspace"]
    # each sees only its own sandbox's processes
    for k in ks:
        state, text = k.run("print(len([p for p in os.listdir('/proc') if p.isdigit()]))")
        assert state == "ok" and int(text) <= 3


def test_forked_kernel_proc_shows_no_host_path(zygote, kernels, scratch):
    # F13, the gateway's path: init and the kernel are forks of the zygote,
    # whose command line names its socket in the state dir.
    k = kernels(zygote.path)
    state, text = k.run(PROC_VIEW_CODE)
    assert state == "ok", text
    view = json.loads(text)
    host_paths = [str(scratch), str(BUILDDIR), k.run_dir.name, zygote.path]
    assert host_paths_seen(view, host_paths) == {}, view
    assert view["/proc/1/cmdline"] == view["/proc/self/cmdline"] == "kennel-launch\0", view


def test_kernel_environment_is_its_own_not_the_zygotes(zygote, kernels):
    k = kernels(zygote.path, env={"FOO": "bar"})
    state, text = k.run("import os\nprint(sorted(os.environ))\nprint(os.environ['FOO'], os.getenv('FOO'))\n"
                        "import subprocess\nprint(subprocess.run(['sh', '-c', 'echo $FOO'],"
                        " capture_output=True, text=True).stdout.strip())")
    assert state == "ok"
    names, values, child = text.splitlines()
    assert "OPENBLAS_NUM_THREADS" not in names and "'FOO'" in names
    assert values == "bar bar" and child == "bar"


def test_interrupt_reaches_the_forked_kernel(zygote, kernels):
    k = kernels(zygote.path)
    kc = k.client()
    k.run("kept = 'yes'")
    msg_id = kc.execute("import time\ntime.sleep(60)")
    time.sleep(0.5)
    kc.control_channel.send(kc.session.msg("interrupt_request", {}))
    reply = kc.get_shell_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
    assert k.run("print(kept)") == ("ok", "yes\n")


def test_proxy_exits_with_the_kernels_status(zygote, kernels):
    k = kernels(zygote.path)
    kc = k.client()
    kc.execute("import os\nos._exit(7)")
    assert k.proc.wait(timeout=20) == 7


def test_sigterm_to_the_proxy_ends_the_kernel_and_the_proxy_dies_of_it(zygote, kernels):
    k = kernels(zygote.path)
    assert k.run("1") == ("ok", "")
    k.proc.send_signal(signal.SIGTERM)
    assert k.proc.wait(timeout=20) == -signal.SIGTERM
    assert gone(k.status["pid"], 10)


def test_sigkill_to_the_proxy_takes_the_kernel_along(zygote, kernels):
    k = kernels(zygote.path)
    assert k.run("1") == ("ok", "")
    k.proc.kill()
    k.proc.wait()
    assert gone(k.status["pid"], 10)


def test_unreachable_zygote_falls_back_to_a_normal_launch(scratch, kernels):
    k = kernels(str(scratch / "no-such.sock"))
    assert k.status["status"] == "confined"
    assert k.run("print(6 * 7)") == ("ok", "42\n")
    k.kc.shutdown()
    assert k.proc.wait(timeout=20) == 0
    assert "unreachable" in k.proc.stderr.read()


def test_bad_spec_naming_a_zygote_is_refused_before_the_zygote_is_asked(zygote, scratch):
    spec_r, spec_w = os.pipe()
    st_r, st_w = os.pipe()
    run_dir = tempfile.mkdtemp(dir=scratch)
    os.write(spec_w, json.dumps({"run_dir": run_dir, "kernel": {"builtin": "python"}, "status_fd": 5,
                                 "zygote": zygote.path, "policy": {"nope": 1}}).encode())
    os.close(spec_w)
    proc = subprocess.Popen([str(built("kernel-launcher/kennel-launch")), "--spec-fd", "4"], env=ENV,
                            stderr=subprocess.DEVNULL, pass_fds=(4, 5),
                            preexec_fn=lambda: (os.dup2(spec_r, 4), os.dup2(st_w, 5)))
    os.close(spec_r)
    os.close(st_w)
    with os.fdopen(st_r) as f:
        status = json.loads(f.readline())
    assert status["status"] == "error" and status["stage"] == "spec"
    assert proc.wait(timeout=10) == 125


def test_preloaded_numpy_is_shared_but_seeded_per_kernel(scratch, kernels):
    z = Zygote(scratch, preload="numpy")
    try:
        a, b = kernels(z.path), kernels(z.path)
        draws = []
        for k in (a, b):
            state, text = k.run("import sys\nprint('numpy' in sys.modules)\nimport numpy\n"
                                "print(numpy.random.randint(1 << 30))")
            assert state == "ok"
            preloaded, draw = text.split()
            assert preloaded == "True"
            draws.append(draw)
        assert draws[0] != draws[1]
    finally:
        z.stop()


def test_kernel_log_lines_reach_the_proxys_stderr(zygote, kernels):
    # a message signed with another key is dropped with one log line on the
    # kernel's own stderr: with the zygote that is the proxy's fd 2
    k = kernels(zygote.path)
    assert k.run("1") == ("ok", "")
    other = BlockingKernelClient()
    info = connection(str(k.run_dir / "k"))
    info["key"] = "not-the-key"
    other.load_connection_info(info)
    other.start_channels()
    other.execute("print('never')")
    time.sleep(0.5)
    other.stop_channels()
    k.kc.shutdown()
    assert k.proc.wait(timeout=20) == 0
    assert "kennel-pykernel" in k.proc.stderr.read()


def test_stopping_the_zygote_ends_its_kernels_and_their_proxies(scratch, kernels):
    z = Zygote(scratch)
    k = kernels(z.path)
    assert k.run("1") == ("ok", "")
    z.stop()
    assert not os.path.exists(z.path)
    assert k.proc.wait(timeout=20) == 125
    assert "connection lost" in k.proc.stderr.read()
    assert gone(k.status["pid"], 10)
