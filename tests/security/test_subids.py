"""The sandbox's host ids never inside a user's subordinate ids: a root
launcher refuses a host_uid in an /etc/subuid range or a host_gid in an
/etc/subgid range (that user's rootless containers would run as the
sandbox's user), at the userns stage, before it gives any directory away.
The default host ids lie outside shadow's and systemd's ranges.

The host's /etc is never changed: each case runs kennel-launch in a mount
namespace of its own whose /etc is an overlay holding the case's files
(kennel_testlib.private_etc); the first test shows that the overlay shows
them, and hides the host's files where a case asks."""
import os
import subprocess
import tempfile

import pytest

import hostprobe
from kennel_testlib import private_etc
from sandboxlib import Launcher, scratch  # noqa: F401

HOST_ID = hostprobe.SANDBOX_HOST_ID


@pytest.fixture
def root(scratch):  # noqa: F811
    if os.geteuid() != 0:
        pytest.fail("tests/security runs as root (as CI does)")
    if not hostprobe.user_namespaces(0).ok:
        pytest.skip(hostprobe.user_namespaces(0).detail)
    return Launcher("root", scratch, str(scratch))


def etc(scratch, **files):  # noqa: F811
    """private_etc for subuid/subgid (None: hidden) on a fresh work dir."""
    return private_etc(tempfile.mkdtemp(dir=scratch), files)


def test_the_private_etc_shows_the_test_files_and_hides_the_others(scratch):  # noqa: F811
    before = [os.path.exists(p) and open(p).read() for p in ("/etc/subuid", "/etc/subgid")]
    out = subprocess.run(etc(scratch, subuid="alice:1:2\n", subgid=None)
                         + ["sh", "-c", "cat /etc/subuid; test -e /etc/subgid || echo hidden"],
                         capture_output=True, text=True, timeout=30)
    assert (out.returncode, out.stdout) == (0, "alice:1:2\nhidden\n"), out.stderr
    assert [os.path.exists(p) and open(p).read() for p in ("/etc/subuid", "/etc/subgid")] == before


def refused(res):
    assert res.returncode == 125 and "RAN" not in res.stdout, (res.returncode, res.stdout, res.stderr)
    assert res.status["status"] == "error" and res.status["stage"] == "userns", res.status
    assert "confinement refused: userns:" in res.stderr, res.stderr
    return res.status["message"]


def test_a_host_uid_in_a_subuid_range_is_refused(root, scratch):  # noqa: F811
    """alice's range covers the default host uid: refused, naming her, the
    range, the file and the setting; the workspace is not given away."""
    ws = tempfile.mkdtemp(dir=scratch)
    subuid = f"# comment\nbob:100000:65536\nalice:{HOST_ID - 10}:65536\n"
    res = root.run(["/bin/sh", "-c", "echo RAN"], policy={"workspace": ws, "allow_degraded": ["quota"]},
                   wrapper=etc(scratch, subuid=subuid, subgid=None))
    message = refused(res)
    for part in ("alice", f"{HOST_ID - 10}-{HOST_ID + 65525}", "/etc/subuid", f"host uid {HOST_ID}",
                 "confine.host_uid"):
        assert part in message, (part, message)
    assert os.stat(ws).st_uid == 0


def test_a_host_gid_in_a_subgid_range_is_refused(root, scratch):  # noqa: F811
    res = root.run(["/bin/sh", "-c", "echo RAN"], policy={"host_gid": 3000000},
                   wrapper=etc(scratch, subuid=None, subgid="4242:2999999:2\n"))
    message = refused(res)
    for part in ("4242", "2999999-3000000", "/etc/subgid", "host gid 3000000", "confine.host_gid"):
        assert part in message, (part, message)


@pytest.mark.parametrize("files", [
    # ranges that end just below and start just above the host ids, a
    # range of 0 ids, lines shadow would not parse either
    {"subuid": f"alice:{HOST_ID - 65536}:65536\nbob:{HOST_ID + 1}:65536\ncarol:{HOST_ID}:0\n"
               f"dave:{HOST_ID}\neve:x{HOST_ID}:5\n",
     "subgid": f"alice:{HOST_ID - 65536}:65536\nbob:{HOST_ID + 1}:65536\n"},
    {"subuid": None, "subgid": None},
    {"subuid": "", "subgid": ""},
], ids=["ranges-beside", "no-files", "empty-files"])
def test_ranges_that_do_not_cover_the_host_ids_start(root, scratch, files):  # noqa: F811
    res = root.run(["/bin/sh", "-c", "echo RAN; id -u"], wrapper=etc(scratch, **files))
    assert (res.returncode, res.stdout) == (0, "RAN\n1000\n"), res.stderr
    assert f"host {HOST_ID}/{HOST_ID}" in res.status["layers"]["userns"]["reason"], res.status


def test_the_default_host_ids_are_outside_shadows_and_systemds_ranges(root, scratch):  # noqa: F811
    """Debian's first user gets 100000-165535: the defaults start beside it.
    Outside shadow's SUB_UID_MIN..SUB_UID_MAX (+ a last count) default,
    systemd's system, regular, homed, dynamic, nspawn container (524288..
    1879048191) and foreign ranges, and below 2^31."""
    res = root.run(["/bin/sh", "-c", "echo RAN"], wrapper=etc(scratch, subuid="alice:100000:65536\n",
                                                               subgid="alice:100000:65536\n"))
    assert res.returncode == 0, res.stderr
    reason = res.status["layers"]["userns"]["reason"]
    assert f"host {HOST_ID}/{HOST_ID}" in reason, reason
    assert 1879048191 < HOST_ID < 2147352576


def test_an_unprivileged_launcher_is_not_affected(root, scratch):  # noqa: F811
    """Started by uid 65534, the sandbox is that uid: a subordinate range
    covering it is the operator's business, not a reason to refuse (the
    launcher maps only its own ids)."""
    if not hostprobe.user_namespaces(hostprobe.NOBODY).ok:
        pytest.skip(hostprobe.user_namespaces(hostprobe.NOBODY).detail)
    policy = {"allow_degraded": hostprobe.allow_degraded(hostprobe.NOBODY)}
    covering = f"alice:{hostprobe.NOBODY - 1}:2\n"
    res = root.run(["/bin/sh", "-c", "echo RAN"], policy=policy, strict=True,
                   wrapper=etc(scratch, subuid=covering, subgid=covering) + hostprobe.SETPRIV)
    assert (res.returncode, res.stdout) == (0, "RAN\n"), res.stderr
    assert f"host {hostprobe.NOBODY}/{hostprobe.NOBODY}" in res.status["layers"]["userns"]["reason"]


def test_an_unreadable_subuid_file_is_refused(root, scratch):  # noqa: F811
    """Fail closed: a file that cannot be read (here a directory in its
    place) cannot say the host uid is free."""
    dir_in_place = ["sh", "-ec", 'rm -f /etc/subuid; mkdir /etc/subuid; exec "$@"', "sh"]
    res = root.run(["/bin/sh", "-c", "echo RAN"], wrapper=etc(scratch, subgid=None) + dir_in_place)
    message = refused(res)
    assert "read /etc/subuid: Is a directory" in message and f"host uid {HOST_ID}" in message, message
