"""A clone where other users cannot enter: root's home is 0700 on Debian,
and a newcomer as root clones there first. The tests that run the gateway
or a tool as uid 65534 must pass from there too (kennel_testlib stages the
programs and files that uid runs in a directory it can reach).

The 0700 clone is made without cloning or building again: in a mount
namespace of its own the source tree is bound at P/k, P a fresh 0700
directory, and a few of the unprivileged tests run there with
KENNEL_SRCDIR/KENNEL_BUILDDIR naming those paths, as `make pytest` would
from such a clone."""
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile

import pytest

from kennel_testlib import BUILDDIR, NOBODY, SRCDIR, reaches, setpriv

# One of each kind of thing uid 65534 runs or reads from the trees: the
# daemon and its launcher (exec), the host module (PYTHONPATH), a test
# program (tests/security/no_userns), the LSan suppressions of a
# leak-checked unprivileged gateway.
UNPRIVILEGED_TESTS = [
    "tests/gateway/test_local_user.py::test_unprivileged_operator_gets_a_private_sock_dir",
    "tests/gateway/test_quota.py::test_unprivileged_gateway_without_user_namespaces_refuses_naming_the_setting",
    "tests/gateway/test_files.py::test_roundtrip[unprivileged]",
]


def test_unprivileged_tests_pass_from_a_clone_other_users_cannot_enter():
    if os.geteuid() != 0:
        pytest.skip("needs root: the 0700 clone is a bind mount in a mount namespace of the test's")
    src, build = SRCDIR.resolve(), BUILDDIR.resolve()
    private = pathlib.Path(tempfile.mkdtemp(prefix="kennel-private-"))  # 0700, root's
    try:
        clone = private / "k"
        clone.mkdir()
        try:
            rel = build.relative_to(src)
            binds, clone_build = [(src, clone)], clone / rel
        except ValueError:  # an out-of-tree build elsewhere: bound beside it
            (private / "b").mkdir()
            binds, clone_build = [(src, clone), (build, private / "b")], private / "b"
        assert not reaches(NOBODY, clone), f"{private} should be 0700 and root's"
        env = dict(os.environ, KENNEL_SRCDIR=str(clone), KENNEL_BUILDDIR=str(clone_build),
                   ASAN_OPTIONS="detect_leaks=0:halt_on_error=1", UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
        env.pop("KENNEL_PROGRAMS", None)
        # what the unprivileged uid meets there before the tests run: the
        # view must really keep it out, else this test proves nothing
        probe = setpriv(NOBODY) + ["test", "-x", str(clone_build / "gateway" / "kennel")]
        pytest_argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs",
                       *[str(clone / t) for t in UNPRIVILEGED_TESTS]]
        script = "\n".join([*(f"mount --bind {shlex.quote(str(a))} {shlex.quote(str(b))}" for a, b in binds),
                            f"if {shlex.join(probe)}; then echo 'uid {NOBODY} reaches the 0700 clone'; exit 99; fi",
                            f"cd {shlex.quote(str(clone))}", 'exec "$@"'])
        out = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-ec", script, "sh",
                              *pytest_argv], env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode != 99, out.stdout
        assert out.returncode == 0, \
            f"the unprivileged tests from a 0700 clone:\n{out.stdout[-6000:]}\n{out.stderr[-2000:]}"
        assert f"{len(UNPRIVILEGED_TESTS)} passed" in out.stdout, out.stdout[-3000:]
    finally:
        for d in [private / "b", private / "k", private]:  # empty outside the namespace: never rm -r
            if d.exists():
                d.rmdir()
