"""Helpers and fixtures for the sandbox tests (imported by each test file, not
a conftest.py: other test folders import their own conftest by name, and two
modules called conftest would shadow each other). The fixtures: kennel-launch run as root and as an
unprivileged user (uid 65534 via setpriv), a canary and a secret on the host.

Every test that takes `launcher` runs twice, once per user. The binaries are
copied into a world-readable directory first: the checkout may sit in a
directory that uid 65534 cannot traverse."""
import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

import hostprobe
from kennel_testlib import BUILDDIR, built  # noqa: F401

NOBODY = hostprobe.NOBODY
SETPRIV = hostprobe.SETPRIV
PYTHON = hostprobe.PYTHON


@dataclasses.dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    status: dict  # the status line on --report-fd (None if none was written)


class Launcher:
    """Runs kennel-launch as one user, with a policy given as a dict."""

    def __init__(self, user, bindir, scratch):
        self.user = user
        self.binary = str(bindir / "kennel-launch")
        self.no_userns = str(bindir / "no_userns")
        self.scratch = scratch

    @property
    def root(self):
        return self.user == "root"

    def prefix(self):
        return [] if self.root else list(SETPRIV)

    @property
    def uid(self):
        return 0 if self.root else NOBODY

    def policy_file(self, policy, strict=False):
        """The policy as a file; unless strict, it also allows the layers
        this host cannot give this user (hostprobe: e.g. cgroup v1 for uid
        65534), and the report then says which."""
        policy = dict(policy or {})
        if not strict:
            policy["allow_degraded"] = hostprobe.allow_degraded(self.uid, policy.get("allow_degraded", ()))
        fd, path = tempfile.mkstemp(suffix=".json", dir=self.scratch)
        with os.fdopen(fd, "w") as f:
            json.dump(policy, f)
        os.chmod(path, 0o644)
        return path

    def run(self, argv, policy=None, stdin=None, timeout=60, env=None, wrapper=(), raw_args=None, strict=False):
        """kennel-launch --policy P --report-fd N -- argv; returns Result."""
        rfd, wfd = os.pipe()
        args = raw_args if raw_args is not None else [
            "--policy", self.policy_file(policy, strict), "--report-fd", str(wfd), "--", *argv]
        cmd = self.prefix() + list(wrapper) + [self.binary, *args]
        run_env = {"PATH": "/usr/bin:/bin", "ASAN_OPTIONS": "detect_leaks=0"}
        run_env.update(env or {})
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                pass_fds=(wfd,), env=run_env, cwd=self.scratch, text=True)
        os.close(wfd)
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        with os.fdopen(rfd) as f:
            line = f.read()
        status = json.loads(line) if line.strip() else None
        return Result(proc.returncode, out, err, status)

    def py(self, code, policy=None, **kw):
        """Runs Python code inside the sandbox."""
        return self.run([PYTHON, "-c", code], policy=policy, **kw)


@pytest.fixture(scope="session")
def scratch():
    """A world-traversable scratch directory (binaries, policies)."""
    path = pathlib.Path(tempfile.mkdtemp(prefix="kennel-sec-"))
    path.chmod(0o755)
    # kennel-launch execs kennel-launch-full from its own directory
    for name, rel in (("kennel-launch", "kernel-launcher/kennel-launch"),
                      ("kennel-launch-full", "kernel-launcher/kennel-launch-full"),
                      ("no_userns", "tests/security/no_userns")):
        shutil.copy(built(rel), path / name)
        (path / name).chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session", params=["root", "nobody"])
def launcher(request, scratch):
    if os.geteuid() != 0:
        pytest.fail("tests/security runs as root (as CI does) and drops to uid 65534 itself")
    user = Launcher(request.param, scratch, str(scratch))
    userns = hostprobe.user_namespaces(user.uid)
    if not userns.ok:
        # Nothing can be confined as this user here: every sandbox test would
        # only see the refusal, which test_refused_where_the_host_forbids_user_namespaces
        # asserts. Said in the skip reason (pytest -ra lists it).
        pytest.skip(f"{userns.detail}: confinement is refused for {request.param} on this host")
    return user


@pytest.fixture(scope="session", params=["root", "nobody"])
def any_launcher(request, scratch):
    """A launcher for each user, whatever the host allows (no userns skip)."""
    return Launcher(request.param, scratch, str(scratch))


@pytest.fixture(scope="session")
def host_files(scratch):
    """A secret readable by everyone on the host, and a canary."""
    d = scratch / "host"
    d.mkdir()
    d.chmod(0o755)
    secret = d / "secret"
    secret.write_text("TOP-SECRET-kennel\n")
    secret.chmod(0o644)
    canary = d / "canary"
    canary.write_text("canary\n")
    canary.chmod(0o666)  # even world-writable on the host: the sandbox must not reach it
    return {"dir": d, "secret": secret, "canary": canary}


@pytest.fixture(autouse=True)
def canary_untouched(request):
    """After every test: the host canary is byte-for-byte and mtime the same."""
    if "host_files" not in request.fixturenames:
        yield
        return
    files = request.getfixturevalue("host_files")
    before = (files["canary"].read_bytes(), files["canary"].stat().st_mtime_ns, sorted(os.listdir(files["dir"])))
    yield
    after = (files["canary"].read_bytes(), files["canary"].stat().st_mtime_ns, sorted(os.listdir(files["dir"])))
    assert before == after, "the host canary directory changed"


@pytest.fixture
def host_workspace(launcher, scratch):
    """A host directory to bind as /workspace, owned as the launcher needs:
    an unprivileged caller maps to its own uid, so it must own it."""
    path = pathlib.Path(tempfile.mkdtemp(prefix="ws-", dir=scratch))
    if not launcher.root:
        os.chown(path, NOBODY, NOBODY)
    yield path
    shutil.rmtree(path, ignore_errors=True)


# Run inside a kernel: what /proc and the interpreter show of where things
# are on the host (F13). Prints one JSON object.
PROC_VIEW_CODE = """
import json, os, sys
def read(path):
    try:
        return open(path, "rb").read().decode(errors="replace")
    except OSError as e:
        return "unreadable: %s" % e.strerror
view = {p: read(p) for p in ["/proc/1/cmdline", "/proc/self/cmdline", "/proc/self/environ", "/proc/1/environ"]}
view["sys"] = repr((sys.argv, getattr(sys, "orig_argv", None), sys.executable))
view["mountinfo"] = read("/proc/self/mountinfo")
print(json.dumps(view))
"""


def host_paths_seen(view, host_paths):
    """{place: [host paths it shows]} for every place but mountinfo (a
    bind's path within its host filesystem is shown there by the kernel
    itself: confine/README, Limits)."""
    seen = {}
    for place, text in view.items():
        found = [p for p in host_paths if place != "mountinfo" and p in text]
        if found:
            seen[place] = found
    return seen
