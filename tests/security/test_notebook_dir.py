"""Kernelspec mode: what a confined kernel may leave in the person's
directory (red team 3, H2-H4; confine/guard.c). Real parts: Debian's
notebook 6.4.12 saving the notebook, jupyter_client's KernelManager
starting `kennel kernel` in the directory as Jupyter does, and afterwards
the person's own `bash -i` (reads ~/.bashrc) and `python3` (loads .pth
files of the user site). Each scenario runs with Jupyter started by root
in a directory of uid 65534's, by root in a directory of root's (an
idmapped mount shows root's files to the sandbox's uid), and by uid 65534
itself in its own directory.

uid 65534 needs /dev/fuse: where this host's is root's 0600 (no udev rule
made it 0666, hostprobe.fuse_device says), the test gives that user's
processes a private 0666 node of the same device in a mount namespace of
their own, as a host with udev's default rule has; the host's node is
never changed."""
import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import time

import pytest
import requests

import hostprobe
from kennel_testlib import install_kernelspec, setpriv, traversable_dir

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "httpclients"))
import refserver  # noqa: E402

NOBODY = hostprobe.NOBODY
STRANGER = 12345  # another local user, who must gain nothing
PY = hostprobe.PYTHON

# Runs as the person: starts the kennel kernel in argv[1] as a front end
# does and runs the cells of argv[2]; prints [[status, text or ename], ...].
RUN_CELLS = """
import json, sys
from jupyter_client.manager import KernelManager
km = KernelManager(kernel_name="kennel")
km.start_kernel(cwd=sys.argv[1])
kc = km.client()
kc.start_channels()
results = []
try:
    kc.wait_for_ready(timeout=90)
    for code in json.loads(sys.argv[2]):
        out = []
        hook = lambda m: out.append(m["content"].get("text", ""))
        reply = kc.execute_interactive(code, timeout=120, output_hook=hook)["content"]
        results.append([reply["status"], "".join(out) if reply["status"] == "ok" else reply.get("ename", "")])
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
print(json.dumps(results))
"""

SCENARIOS = [("root", NOBODY), ("root", 0), ("nobody", NOBODY)]
IDS = ["root-in-nobodys-dir", "root-in-roots-dir", "nobody-in-own-dir"]


class Person:
    """A person (owner) with a home in /tmp, and the user Jupyter runs as."""

    def __init__(self, launcher, owner):
        if launcher == "nobody" and os.geteuid() != 0:
            pytest.skip("needs root to set up uid 65534's run")
        if os.geteuid() != 0 and owner == 0:
            pytest.skip("a directory of root's needs a root run")
        self.uid = 0 if launcher == "root" else NOBODY
        self.owner = owner
        if self.uid:
            userns = hostprobe.user_namespaces(self.uid)
            if not userns.ok:
                pytest.skip(userns.detail)
        self.home = traversable_dir("kennel-home-", 0o755)
        (self.home / ".bashrc").write_text("# the person's own\n")
        self.markers = traversable_dir("kennel-markers-", 0o1777)
        self.scratch = traversable_dir("kennel-jupyter-", 0o755)
        self.jupyter_path = install_kernelspec(self.scratch / "prefix")
        if self.uid:
            conf_file = self.scratch / "prefix/share/jupyter/kernels/kennel/kennel.conf"
            conf = json.loads(conf_file.read_text())
            # the host's lacking layers for this uid, but never the guard
            lacking = [layer for layer in hostprobe.allow_degraded(self.uid) if layer != "guard"]
            conf["confine"] = {"allow_degraded": lacking}
            conf_file.write_text(json.dumps(conf))
        for path in (self.home, self.home / ".bashrc"):
            os.chown(path, owner, owner)
        for path in [self.scratch, *self.scratch.rglob("*")]:
            os.chown(path, self.uid, self.uid)
        self.fuse_node = None
        if self.uid and not hostprobe.fuse_device(self.uid).ok:
            print(hostprobe.fuse_device(self.uid).detail + ": a private 0666 node for this user's processes")
            self.fuse_node = traversable_dir("kennel-devfuse-", 0o755)

    def env(self):
        env = dict(os.environ, HOME=str(self.home), JUPYTER_PATH=self.jupyter_path)
        for name, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                          ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython"), ("MPLCONFIGDIR", "mpl")):
            env[name] = str(self.scratch / sub)
        return env

    def prefix(self):
        """argv prefix: as the Jupyter user, with /dev/fuse it can open."""
        if not self.uid:
            return []
        if not self.fuse_node:
            return setpriv(self.uid)
        script = ('mount -t tmpfs -o size=16k,mode=0755 kennel-test-dev "$0" && mknod -m 0666 "$0/fuse" c 10 229 '
                  '&& mount --bind "$0/fuse" /dev/fuse && exec "$@"')
        return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, str(self.fuse_node),
                *setpriv(self.uid)]

    def run_cells(self, cwd, cells):
        out = subprocess.run(self.prefix() + [PY, "-c", RUN_CELLS, str(cwd), json.dumps(cells)], cwd=cwd,
                             env=self.env(), capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout.splitlines()[-1])

    def later(self, argv):
        """The person at the host afterwards: argv as the owner, at home."""
        env = {"HOME": str(self.home), "PATH": "/usr/bin:/bin", "TERM": "dumb"}
        prefix = setpriv(self.owner) if self.owner else []
        return subprocess.run(prefix + argv, cwd=self.home, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60)

    def cleanup(self):
        for path in (self.home, self.markers, self.scratch, self.fuse_node):
            if path:
                shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=SCENARIOS, ids=IDS)
def person(request):
    p = Person(*request.param)
    yield p
    p.cleanup()


def project(person):
    path = person.home / "proj"
    path.mkdir()
    os.chown(path, person.owner, person.owner)
    return path


def refused(result):
    return result[0] == "error" and result[1] == "PermissionError"


def owned_by_the_owner(person, path):
    st = os.lstat(path)
    assert (st.st_uid, st.st_gid) == (person.owner, person.owner), (path, st.st_uid, st.st_gid)
    return st


def test_a_symlink_swap_cannot_redirect_the_notebooks_save(person):
    """H2: the kernel swaps the open notebook for a link to ../.bashrc with
    its old mtime; the person's save (what autosave PUTs) must land in the
    notebook, and their next bash -i must run nothing of the kernel's."""
    proj = project(person)
    server = None
    try:
        port = refserver.free_port()
        log = open(person.scratch / "server.log", "wb")
        proc = subprocess.Popen(person.prefix() + refserver.notebook_command(port, "tok", proj), env=person.env(),
                                stdout=log, stderr=subprocess.STDOUT, cwd=proj)
        server = refserver.Server("notebook", f"http://127.0.0.1:{port}", "tok", proc, person.scratch / "server.log")
        refserver.ready_or_stopped(server)
        api = f"{server.base_url}/api/contents/nb.ipynb"
        auth = {"Authorization": "token tok"}
        empty = {"type": "notebook", "format": "json",
                 "content": {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}}
        assert requests.put(api, json=empty, headers=auth, timeout=30).status_code in (200, 201)
        before = requests.get(api, params={"content": 0}, headers=auth, timeout=30).json()["last_modified"]
        marker = person.markers / "h2"
        results = person.run_cells(proj, [
            "import os\nst = os.stat('nb.ipynb')\nos.symlink('../.bashrc', 'swap')\nos.replace('swap', 'nb.ipynb')\n"
            "os.utime('nb.ipynb', ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)",
            "os.symlink('../.bashrc', '.nb.tmp')",
            f"print('$(id > {marker})')",
        ])
        assert refused(results[0]) and refused(results[1]), results
        assert results[2] == ["ok", f"$(id > {marker})\n"], results
        assert requests.get(api, params={"content": 0}, headers=auth, timeout=30).json()["last_modified"] == before
        cell = {"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {},
                "source": f"print('$(id > {marker})')",
                "outputs": [{"output_type": "stream", "name": "stdout", "text": f"$(id > {marker})\n"}]}
        saved = dict(empty, content=dict(empty["content"], cells=[cell]))
        assert requests.put(api, json=saved, headers=auth, timeout=30).status_code == 200
    finally:
        if server:
            server.stop()
    assert stat.S_ISREG(os.lstat(proj / "nb.ipynb").st_mode)
    assert str(marker) in (proj / "nb.ipynb").read_text()
    assert (person.home / ".bashrc").read_text() == "# the person's own\n"
    bash = person.later(["bash", "-i", "-c", "true"])
    assert not marker.exists(), bash.stderr
    assert sorted(p.name for p in proj.iterdir()) == [".ipynb_checkpoints", "nb.ipynb"]  # the server's own


def test_a_notebook_at_home_leaves_nothing_the_next_shell_or_python_runs(person):
    """H3: Jupyter started in ~: /workspace is the home. The kernel's
    writes to ~/.bashrc, a .pth in the user site, .git/hooks and .envrc
    are refused; its results, a CSV and a matplotlib figure, appear beside
    the notebook as the owner's; the person's next bash -i and python3 run
    nothing of the kernel's."""
    sh, py = person.markers / "h3-sh", person.markers / "h3-py"
    results = person.run_cells(person.home, [
        f"open('.bashrc', 'a').write('\\ntouch {sh}\\n')",
        "import os, sys\nsite = '.local/lib/python%d.%d/site-packages' % sys.version_info[:2]\n"
        "os.makedirs(site, exist_ok=True)\n"
        f"open(site + '/zz_kennel.pth', 'w').write('import os; os.system(\"touch {py}\")\\n')",
        "os.makedirs('.git/hooks', exist_ok=True)",
        "open('.envrc', 'w').write('touch /tmp/x\\n')",
        "os.makedirs('results', exist_ok=True)\nopen('results/table.csv', 'w').write('a,b\\n1,2\\n')",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.savefig('figure.png')",
    ])
    assert all(refused(r) for r in results[:4]), results
    assert results[4:] == [["ok", ""], ["ok", ""]], results
    assert (person.home / ".bashrc").read_text() == "# the person's own\n"
    for name in ("results", "results/table.csv", "figure.png"):
        owned_by_the_owner(person, person.home / name)
    assert (person.home / "figure.png").read_bytes().startswith(b"\x89PNG")
    assert (person.home / "results/table.csv").read_text() == "a,b\n1,2\n"
    assert sorted(p.name for p in person.home.iterdir()) == [".bashrc", "figure.png", "results"]
    bash = person.later(["bash", "-i", "-c", "true"])
    python = person.later([PY, "-c", "pass"])
    assert python.returncode == 0, python.stderr
    assert not sh.exists() and not py.exists(), (bash.stderr, python.stderr)


def test_no_set_id_exec_bits_special_files_or_directory_modes(person):
    """H4: the kernel plants a copy of id(1) set-id, chmods the person's
    directory 0777, makes a FIFO and a hardlink; none of it reaches the
    host: no file gets an exec or set-id bit, the directory keeps its mode,
    a stranger can neither run the copy nor write in the directory."""
    proj = project(person)
    mode = stat.S_IMODE(os.stat(proj).st_mode)
    results = person.run_cells(proj, [
        "import os, shutil, stat\nshutil.copyfile('/usr/bin/id', 'tool')",
        "os.chmod('tool', 0o6755)",
        "os.chmod('tool', 0o755)",
        "os.chmod('.', 0o777)",
        "os.mknod('fifo', 0o600 | stat.S_IFIFO)",
        "os.link('tool', 'tool2')",
        "os.mkdir('made', 0o777)\nos.close(os.open('made/x', os.O_CREAT | os.O_WRONLY, 0o777))",
    ])
    assert results[0] == ["ok", ""] and results[6] == ["ok", ""], results
    assert all(refused(r) for r in results[1:6]), results
    assert stat.S_IMODE(owned_by_the_owner(person, proj / "tool").st_mode) & 0o7111 == 0
    assert stat.S_IMODE(os.stat(proj).st_mode) == mode
    assert stat.S_IMODE(owned_by_the_owner(person, proj / "made").st_mode) & 0o7022 == 0
    assert stat.S_IMODE(owned_by_the_owner(person, proj / "made/x").st_mode) & 0o7111 == 0
    assert sorted(p.name for p in proj.iterdir()) == ["made", "tool"]
    stranger = subprocess.run(setpriv(STRANGER) + ["sh", "-c", f"{proj}/tool; touch {proj}/dropped"],
                              capture_output=True, text=True, timeout=30)
    assert stranger.returncode != 0 and "Permission denied" in stranger.stderr, stranger
    assert not (proj / "dropped").exists()
