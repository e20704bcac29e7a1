"""Kernelspec mode for a person at a notebook (issue 16), through Debian's
jupyter_client and nbclient: the kernel works in the directory the front
end starts it in (the notebook's), bound at /workspace, reads the files
beside the notebook and keeps what it writes; a SIGKILLed `kennel kernel`
leaves nothing in /tmp; the installed kennel.conf gives notebook defaults;
a kernel that dies is a dead kernel to the front end."""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

import hostprobe
from gwtest import gone, install_kernelspec, mounts_below, notebook_dir, traversable_dir
from kennel_testlib import descendants, setpriv, wait_until


@pytest.fixture
def notebooks(tmp_path, monkeypatch):
    """(JUPYTER_PATH with the kernelspec installed, a notebook directory)."""
    monkeypatch.setenv("JUPYTER_PATH", install_kernelspec(tmp_path))
    path = notebook_dir("kennel-nb-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def give(path, like):
    """path (a file the test wrote as a person would) owned as `like` is."""
    st = os.stat(like)
    os.chown(path, st.st_uid, st.st_gid)


def run_notebook(sources, path, **kw):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    NotebookClient(nb, kernel_name="kennel", timeout=120, startup_timeout=60,
                   resources={"metadata": {"path": str(path)}}, **kw).execute()
    return nb


def text_of(cell):
    return "".join(o.get("text", "") for o in cell.outputs if o["output_type"] == "stream")


def test_notebook_reads_the_files_beside_it_and_what_it_writes_stays(notebooks):
    (notebooks / "data.csv").write_text("x,y\n1,2\n3,4\n")
    give(notebooks / "data.csv", notebooks)
    nb = run_notebook([
        "import os; print(os.getcwd())",
        "import csv\nrows = list(csv.DictReader(open('data.csv')))\nprint(sum(int(r['y']) for r in rows))",
        "os.makedirs('results', exist_ok=True)\nopen('results/total.txt', 'w').write('6\\n')",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.savefig('figure.png')",
    ], notebooks)
    assert text_of(nb.cells[0]) == "/workspace\n"
    assert text_of(nb.cells[1]) == "6\n"
    # the kernel is gone (nbclient shut it down): nothing was removed
    assert (notebooks / "results" / "total.txt").read_text() == "6\n"
    assert (notebooks / "figure.png").read_bytes().startswith(b"\x89PNG")
    owner = os.stat(notebooks)
    for made in ("results", "results/total.txt", "figure.png"):
        st = os.stat(notebooks / made)
        assert (st.st_uid, st.st_gid) == (owner.st_uid, owner.st_gid), made
    # nothing else appeared beside the notebook (no caches of a HOME there)
    assert sorted(os.listdir(notebooks)) == ["data.csv", "figure.png", "results"]


def state_dir_of(pids):
    """The private state dir of a `kennel kernel`: where its launcher's log
    fd points (conv/kernel/kernel.log below it)."""
    found = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("/tmp/kennel-kernel-"):
                found.add("/".join(target.split("/")[:3]))
    assert len(found) == 1, found
    return pathlib.Path(found.pop())


def test_kill_9_leaves_nothing_in_tmp(notebooks):
    (notebooks / "kept.txt").write_text("mine\n")
    km = KernelManager(kernel_name="kennel")
    km.start_kernel(cwd=str(notebooks))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        reply = kc.execute_interactive("open('written.txt', 'w').write('x')", timeout=60)
        assert reply["content"]["status"] == "ok", reply["content"]
        pid = km.provisioner.process.pid
        below = descendants(pid)
        assert len(below) > 1, below  # the launcher and the sandbox's processes
        state = state_dir_of(below)
        assert state.is_dir()
        os.kill(pid, signal.SIGKILL)
        assert km.provisioner.process.wait(timeout=10) == -signal.SIGKILL
        wait_until(lambda: not state.exists(), 10, lambda: f"{state} still holds {list(state.rglob('*'))}")
        for p in below[1:]:
            assert gone(p, timeout=10), p
        assert mounts_below(state) == []
    finally:
        kc.stop_channels()
        km.cleanup_resources()
    assert sorted(os.listdir(notebooks)) == ["kept.txt", "written.txt"]


def test_a_kernel_that_dies_is_a_dead_kernel_to_nbclient(notebooks):
    """As with ipykernel: the process Jupyter started exits with its kernel,
    the cell gets no reply, nbclient raises DeadKernelError (before: an
    error reply, and the next cell ran in a fresh, empty kernel)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in ("x = 1", "import os; os._exit(1)", "print(x)")]
    client = NotebookClient(nb, kernel_name="kennel", timeout=120, startup_timeout=60,
                            resources={"metadata": {"path": str(notebooks)}})
    with pytest.raises(DeadKernelError):
        client.execute()
    assert nb.cells[1].outputs == [] and nb.cells[2].outputs == []


def test_notebook_defaults_from_the_installed_kennel_conf(notebooks):
    """install-kernelspec's kennel.conf: the notebook profile (shell escapes),
    output far past the agent's 1 MiB, no execution timeout."""
    conf = json.loads((pathlib.Path(os.environ["JUPYTER_PATH"]) / "kernels/kennel/kennel.conf").read_text())
    assert conf["defaults"]["builtins"] == "notebook"
    assert conf["defaults"]["execution_timeout"] == "unlimited"
    nb = run_notebook(["!echo from-the-shell", "print('x' * (3 << 20))"], notebooks)
    assert text_of(nb.cells[0]) == "from-the-shell\n"
    assert text_of(nb.cells[1]) == "x" * (3 << 20) + "\n"


def root_owned_dir():
    """A notebook directory of root's, as Jupyter run by root in a container
    or CI has (not a person's: gwtest.notebook_dir gives those)."""
    return traversable_dir("kennel-nb-root-", 0o755)


def log_to(jupyter_path, log):
    """The installed kernelspec's argv with --log-file log (the JSON log,
    the layer report among it)."""
    spec_file = pathlib.Path(jupyter_path) / "kernels/kennel/kernel.json"
    spec = json.loads(spec_file.read_text())
    spec["argv"] += ["--log-file", str(log)]
    spec_file.write_text(json.dumps(spec))


def guard_report(log):
    """The guard's entry of the last layer report in a kernel's log."""
    reports = [e["layers"] for e in map(json.loads, log.read_text().splitlines())
               if e.get("event") == "confinement" and e.get("layers")]
    assert reports, log.read_text()[-2000:]
    return reports[-1].get("guard")


root_only = pytest.mark.skipif(os.geteuid() != 0, reason="a directory of root's, started by root; this run is not root")


@root_only
def test_nbclient_in_a_directory_of_roots(tmp_path, monkeypatch):
    """Jupyter as root in a directory of root's (containers, CI): the kernel
    starts, reads and writes there, and what it writes is root's on the
    host, while the sandbox keeps its own host uid: an idmapped mount shows
    root's files to that uid for the guard alone (the layer report says
    so). Before: refused, nbclient's "Kernel died before replying to
    kernel_info"."""
    jupyter_path = install_kernelspec(tmp_path)
    monkeypatch.setenv("JUPYTER_PATH", jupyter_path)
    log_to(jupyter_path, tmp_path / "kernel.log")
    path = root_owned_dir()
    try:
        (path / "data.csv").write_text("x\n20\n22\n")
        os.chmod(path / "data.csv", 0o600)  # root's alone: read through the idmap
        nb = run_notebook([
            "print(sum(int(v) for v in open('data.csv').read().split()[1:]))",
            "import os; print(os.getuid(), os.stat('data.csv').st_uid)",
            "print([l.split(' - ')[1].split()[0] for l in open('/proc/self/mountinfo') if l.split()[4] == '/workspace'])",
            "open('out.csv', 'w').write('a\\n1\\n')\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\n"
            "plt.savefig('figure.png')",
        ], path)
        assert [text_of(c) for c in nb.cells] == ["42\n", "1000 1000\n", "['fuse']\n", ""]
        for made in ("out.csv", "figure.png"):
            st = os.stat(path / made)
            assert (st.st_uid, st.st_gid) == (0, 0), made
        assert (path / "figure.png").read_bytes().startswith(b"\x89PNG")
        guard = guard_report(tmp_path / "kernel.log")
        assert guard["state"] == "active", guard
        assert "on an idmapped mount (the owner 0/0 shown as 2000000000/2000000000)" in guard["reason"], guard
    finally:
        shutil.rmtree(path, ignore_errors=True)


@root_only
def test_jupyter_console_in_a_directory_of_roots(tmp_path):
    """jupyter console on a pty, as root in a directory of root's (before:
    a 60 s hang, then "Kernel didn't respond to kernel_info_request")."""
    import pexpect

    path = root_owned_dir()
    env = dict(os.environ, JUPYTER_PATH=install_kernelspec(tmp_path), TERM="dumb",
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), IPYTHONDIR=str(tmp_path / "ipython"))
    child = pexpect.spawn("/usr/bin/jupyter-console", ["--kernel", "kennel", "--simple-prompt"], env=env,
                          cwd=str(path), encoding="utf-8", timeout=60)
    try:
        child.expect(r"In \[1\]: ")
        child.sendline("_ = open('made.txt', 'w').write('6 x 7'); print(6 * 7)")
        child.expect("42")
        child.expect(r"In \[2\]: ")
        child.sendeof()
        if child.expect([r"\(\[y\]/n\)\?", pexpect.EOF]) == 0:
            child.sendline("y")
            child.expect(pexpect.EOF)
        st = os.stat(path / "made.txt")
        assert (st.st_uid, st.st_gid) == (0, 0)
    finally:
        child.close(force=True)
        shutil.rmtree(path, ignore_errors=True)


@root_only
def test_jupyter_kernel_test_in_a_directory_of_roots(tmp_path):
    """tests/gateway/test_kernelspec.py's jupyter_kernel_test suite, run
    from a directory of root's (before: every test failed)."""
    path = root_owned_dir()
    suite = (f"import os, sys, shutil, pathlib\nsys.path[:0] = {[str(pathlib.Path(__file__).parent), str(pathlib.Path(__file__).parents[1])]!r}\n"
             "import test_kernelspec\n"
             "class TestRootsDirectory(test_kernelspec.KennelKernelTests):\n"
             "    @classmethod\n"
             "    def setUpClass(cls):\n"
             "        super(test_kernelspec.KennelKernelTests, cls).setUpClass()\n"
             "    @classmethod\n"
             "    def tearDownClass(cls):\n"
             "        super(test_kernelspec.KennelKernelTests, cls).tearDownClass()\n")
    (tmp_path / "test_roots_directory.py").write_text(suite)
    env = dict(os.environ, JUPYTER_PATH=install_kernelspec(tmp_path / "spec"))
    try:
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                              str(tmp_path / "test_roots_directory.py")], cwd=path, env=env,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
        assert " passed" in out.stdout.splitlines()[-1] and "failed" not in out.stdout.splitlines()[-1], out.stdout
    finally:
        shutil.rmtree(path, ignore_errors=True)


RAMFS_NOTEBOOK = """
import sys, time
import nbformat
from nbclient import NotebookClient
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell("1")]
start = time.monotonic()
try:
    NotebookClient(nb, kernel_name="kennel", timeout=60, startup_timeout=60,
                   resources={"metadata": {"path": sys.argv[1]}}).execute()
except Exception as e:
    print(type(e).__name__, round(time.monotonic() - start, 1))
"""


@root_only
def test_a_directory_of_roots_that_cannot_be_idmapped_is_refused_at_once(tmp_path):
    """On a filesystem that cannot idmap (a ramfs, in a mount namespace of
    the test's own), a directory of root's is refused: the kernel process
    writes its one line naming the missing feature and ends, nbclient
    raises within seconds."""
    jupyter_path = install_kernelspec(tmp_path)
    path = tmp_path / "ramfs"
    path.mkdir()
    script = 'mount -t ramfs ramfs "$0" && cd "$0" && exec "$@"'
    out = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, str(path),
                          sys.executable, "-c", RAMFS_NOTEBOOK, str(path)],
                         env=dict(os.environ, JUPYTER_PATH=jupyter_path), capture_output=True, text=True, timeout=120)
    kind, seconds = out.stdout.split()
    assert kind == "RuntimeError" and float(seconds) < 30, out
    lines = [l for l in out.stderr.splitlines() if l.startswith("kennel")]
    assert lines == [f"kennel: the kernel could not be started: confinement failed at workspace: the notebook "
                     f"directory {path} belongs to root and cannot be shown to the sandbox's uid 2000000000: "
                     "mount_setattr(MOUNT_ATTR_IDMAP): Invalid argument; its filesystem cannot be idmapped (ext4, "
                     "xfs, btrfs and tmpfs can; NFS and most FUSE cannot); the sandbox never runs as host root: run "
                     "Jupyter as the user whose files these are, or give them the directory (chown)"], out.stderr


NOTEBOOK_AS_A_USER = """
import json, sys
import nbformat
from nbclient import NotebookClient
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell(s) for s in json.loads(sys.argv[1])]
NotebookClient(nb, kernel_name="kennel", timeout=120, startup_timeout=60,
               resources={"metadata": {"path": sys.argv[2]}}).execute()
print(json.dumps([[o.get("text", "") for o in c.outputs] for c in nb.cells]))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="this run is an ordinary user already: the other tests are this one")
def test_an_ordinary_user_at_a_notebook(tmp_path):
    """Jupyter run by an ordinary user (NOBODY via setpriv): the kernel
    confines as that user in a user namespace of its own, works in their
    notebook directory, and the files it writes are theirs."""
    userns = hostprobe.user_namespaces(hostprobe.NOBODY)
    if not userns.ok:
        pytest.skip(userns.detail)
    home = traversable_dir("kennel-nb-user-", 0o755)
    try:
        jupyter_path = install_kernelspec(home / "prefix")
        conf_file = home / "prefix/share/jupyter/kernels/kennel/kennel.conf"
        conf = json.loads(conf_file.read_text())
        conf["confine"] = {"allow_degraded": hostprobe.allow_degraded(hostprobe.NOBODY)}
        conf_file.write_text(json.dumps(conf))
        notebooks = home / "notebooks"
        notebooks.mkdir()
        (notebooks / "data.csv").write_text("x\n20\n22\n")
        for path in (home, notebooks, notebooks / "data.csv"):
            os.chown(path, hostprobe.NOBODY, hostprobe.NOBODY)
        cells = ["import os; print(os.getcwd())",
                 "print(sum(int(line) for line in open('data.csv').read().split()[1:]))",
                 "_ = open('answer.txt', 'w').write('42\\n')"]
        env = dict(os.environ, JUPYTER_PATH=jupyter_path, HOME=str(home), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
                   JUPYTER_DATA_DIR=str(home / "data"), JUPYTER_CONFIG_DIR=str(home / "config"),
                   IPYTHONDIR=str(home / "ipython"))
        out = subprocess.run(setpriv(hostprobe.NOBODY) + ["/usr/bin/python3", "-c", NOTEBOOK_AS_A_USER,
                                                          json.dumps(cells), str(notebooks)],
                             cwd=notebooks, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout.splitlines()[-1]) == [["/workspace\n"], ["42\n"], []]
        st = os.stat(notebooks / "answer.txt")
        assert (st.st_uid, st.st_gid) == (hostprobe.NOBODY, hostprobe.NOBODY)
        assert (notebooks / "answer.txt").read_text() == "42\n"
        assert sorted(os.listdir(notebooks)) == ["answer.txt", "data.csv"]
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_the_persons_edits_show_in_the_kernel(notebooks):
    """Live both ways through the guard: a file the person replaces (a new
    file renamed over it, as editors save) or rewrites in place on the host
    reads new in the kernel within the guard's 1 s cache, and what the
    kernel writes is on the host at once."""
    import time
    data = notebooks / "data.txt"
    data.write_text("one\n")
    give(data, notebooks)
    km = KernelManager(kernel_name="kennel")
    km.start_kernel(cwd=str(notebooks))
    kc = km.client()
    kc.start_channels()

    def run(code):
        out = []
        reply = kc.execute_interactive(code, timeout=60, output_hook=lambda m: out.append(m["content"].get("text", "")))
        assert reply["content"]["status"] == "ok", reply["content"]
        return "".join(out)

    try:
        kc.wait_for_ready(timeout=60)
        assert run("print(open('data.txt').read(), end='')") == "one\n"
        (notebooks / "new.txt").write_text("two\n")
        os.replace(notebooks / "new.txt", data)
        time.sleep(1.5)
        assert run("print(open('data.txt').read(), end='')") == "two\n"
        with open(data, "r+") as f:
            f.write("six\n")
        time.sleep(1.5)
        assert run("print(open('data.txt').read(), end='')") == "six\n"
        run("open('from_kernel.txt', 'w').write('k\\n')")
        assert (notebooks / "from_kernel.txt").read_text() == "k\n"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
