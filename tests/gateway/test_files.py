"""The file API of the control socket (issue 15): file_list, file_stat,
file_get, file_put, file_delete, file_rename and file_copy on a
conversation's workspace, resolved beneath it only. The kernel plants what
an attacker would (symlinks to the host's files, hardlinks, FIFOs, device
nodes, a file swapped for a symlink in a loop) and the gateway, root or
unprivileged, never reads or writes outside the workspace and never blocks. Real daemons, confined kernels,
jupyter_client's Session on the control socket."""
import base64
import os
import shutil
import threading
import time

import pytest

import gwtest
from gwtest import execute, stdout_of
from kennel_testlib import kernel_swap, traversable_dir, wait_until

MIB = 1 << 20
CONFIG = {"warm_pool": 0, "max_message_bytes": 8 * MIB}


def files(gw, kind, buffers=None, timeout=30, **content):
    """The reply of file_<kind>_request: its content, and its raw frames
    as bytes in content["_buffers"]."""
    reply = gw.control.request(f"file_{kind}_request", content, timeout=timeout, buffers=buffers)
    out = dict(reply["content"])
    out["_buffers"] = [bytes(b) for b in reply.get("buffers", [])]
    return out


def put(gw, conv, path, data, **kw):
    return files(gw, "put", conversation_id=conv, path=path, content=base64.b64encode(data).decode(), **kw)


def get(gw, conv, path, **kw):
    r = files(gw, "get", conversation_id=conv, path=path, **kw)
    if r["status"] == "ok" and r["encoding"] == "base64":
        r["data"] = base64.b64decode(r["content"])
    elif r["status"] == "ok":
        r["data"] = r["_buffers"][0]
    return r


def run(kc, code, timeout=60):
    r, out = execute(kc, code, timeout=timeout)
    assert r["content"]["status"] == "ok", (r["content"], out)
    return stdout_of(out)


def refused(reply, ename):
    assert reply["status"] == "error" and reply["ename"] == ename, reply
    return reply


@pytest.fixture
def gateway_options():
    return {"config": CONFIG}


def roundtrip(gw):
    """Put, stat, list, get in both encodings, the kernel's view, delete."""
    _, kc = gw.open_client("files")
    data = os.urandom(300000)
    r = put(gw, "files", "in/../x", data)
    refused(r, "InvalidPath")
    r = files(gw, "put", conversation_id="files", path="in", type="directory")
    assert r["status"] == "ok" and r["type"] == "directory", r
    r = put(gw, "files", "in/data.bin", data[:100000])
    assert r["status"] == "ok" and r["size"] == 100000, r
    r = files(gw, "put", conversation_id="files", path="in/data.bin", offset=100000, buffers=[data[100000:]])
    assert r["status"] == "ok" and r["size"] == len(data), r
    refused(put(gw, "files", "in/data.bin", b"x", offset=5), "InvalidOffset")
    st = files(gw, "stat", conversation_id="files", path="in//./data.bin")
    assert st["status"] == "ok" and st["type"] == "file" and st["size"] == len(data) and st["path"] == "in/data.bin", st
    listing = files(gw, "list", conversation_id="files")
    assert [(e["name"], e["type"]) for e in listing["entries"]] == [("in", "directory")], listing
    got = get(gw, "files", "in/data.bin", length=200000)
    assert got["data"] == data[:200000] and got["eof"] is False and got["size"] == len(data), got["length"]
    got2 = get(gw, "files", "in/data.bin", offset=200000, encoding="buffer")
    assert got2["data"] == data[200000:] and got2["eof"] is True and "content" not in got2
    # the kernel reads and rewrites what the host put; the host reads what it made
    out = run(kc, "import hashlib, os\n"
                  "d = open('/workspace/in/data.bin', 'rb').read(); print(hashlib.sha256(d).hexdigest())\n"
                  "open('/workspace/in/data.bin', 'ab').write(b'kernel')\n"
                  "f = open('/workspace/made', 'w'); f.write('by the kernel'); f.close(); os.chmod('/workspace/made', 0)")
    import hashlib
    assert out.strip() == hashlib.sha256(data).hexdigest()
    assert get(gw, "files", "in/data.bin", offset=len(data))["data"] == b"kernel"
    assert get(gw, "files", "made")["data"] == b"by the kernel"
    refused(files(gw, "delete", conversation_id="files", path="in"), "DirectoryNotEmpty")
    assert files(gw, "delete", conversation_id="files", path="in/data.bin")["status"] == "ok"
    assert files(gw, "delete", conversation_id="files", path="in")["status"] == "ok"
    refused(files(gw, "stat", conversation_id="files", path="in"), "NoSuchFile")
    assert run(kc, "import os; print(sorted(os.listdir('/workspace')))").strip() == "['made']"
    return kc


def test_roundtrip(either_gateway):
    roundtrip(either_gateway)


def test_bad_requests_get_clear_errors(gateway):
    gw = gateway
    gw.open_client("bad")
    refused(files(gw, "stat", conversation_id="nope", path="x"), "NoSuchConversation")
    refused(files(gw, "stat", conversation_id="../x", path="x"), "InvalidConversationId")
    refused(files(gw, "stat", conversation_id="bad", path="/etc/passwd"), "InvalidPath")
    refused(files(gw, "stat", conversation_id="bad", path="a/../../etc"), "InvalidPath")
    refused(files(gw, "stat", conversation_id="bad", path="x\u0000y"), "InvalidPath")
    refused(files(gw, "stat", conversation_id="bad", path=5), "InvalidPath")
    refused(files(gw, "get", conversation_id="bad", path="x", length=0), "InvalidRequest")
    refused(files(gw, "get", conversation_id="bad", path="x", length=5 * MIB), "InvalidRequest")
    refused(files(gw, "get", conversation_id="bad", path="x", encoding="hex"), "InvalidRequest")
    refused(files(gw, "put", conversation_id="bad", path="x", content="not base64!"), "InvalidRequest")
    refused(files(gw, "put", conversation_id="bad", path="x", content="AA==", buffers=[b"x"]), "InvalidRequest")
    refused(files(gw, "put", conversation_id="bad", path="", content="AA=="), "IsADirectory")
    refused(files(gw, "delete", conversation_id="bad", path=""), "InvalidPath")
    assert gw.events("control_error")


PLANT = r"""
import os, stat
os.symlink(%(secret)r, '/workspace/link')
os.symlink('/workspace', '/workspace/dirlink')
os.mkdir('/workspace/d'); os.symlink(%(secretdir)r, '/workspace/d/up')
open('/workspace/own', 'w').write('mine')
os.link('/workspace/own', '/workspace/hard')
os.mkfifo('/workspace/fifo')
try:
    os.mknod('/workspace/null', 0o666 | stat.S_IFCHR, os.makedev(1, 3)); print('mknod ok')
except OSError as e:
    print('mknod', e.errno)
"""


def test_planted_links_fifos_and_devices_are_refused(either_gateway, tmp_path):
    """Each planted entry: the gateway refuses, does not block, and the
    secret outside the workspace is neither read nor written."""
    gw = either_gateway
    secret_dir = tmp_path / "host"
    secret_dir.mkdir()
    secret = secret_dir / "secret"
    secret.write_text("host secret")
    os.chmod(secret, 0o600)
    _, kc = gw.open_client("plant")
    out = run(kc, PLANT % {"secret": str(secret), "secretdir": str(secret_dir)})
    for path in ("link", "dirlink/own", "d/up/secret"):
        refused(get(gw, "plant", path), "SymlinkRefused")
        refused(put(gw, "plant", path, b"overwritten"), "SymlinkRefused")
        refused(files(gw, "stat", conversation_id="plant", path=path), "SymlinkRefused")
    refused(files(gw, "list", conversation_id="plant", path="d/up"), "SymlinkRefused")
    assert secret.read_text() == "host secret"
    refused(get(gw, "plant", "hard"), "HardlinkRefused")
    refused(put(gw, "plant", "hard", b"x"), "HardlinkRefused")
    start = time.monotonic()
    refused(get(gw, "plant", "fifo"), "NotARegularFile")
    refused(put(gw, "plant", "fifo", b"x"), "NotARegularFile")
    assert time.monotonic() - start < 5
    # a reader in the kernel holding the FIFO open: the put still neither blocks nor writes
    run(kc, "import os; fd = os.open('/workspace/fifo', os.O_RDONLY | os.O_NONBLOCK)")
    refused(put(gw, "plant", "fifo", b"x"), "NotARegularFile")
    assert run(kc, "print(os.read(fd, 10))").strip() == "b''"
    if "mknod ok" in out:
        refused(get(gw, "plant", "null"), "PermissionDenied")   # the tmpfs is nodev
    else:
        # probed: the sandbox cannot make a device node (EPERM in its user namespace)
        assert out.split()[-1] == "1", out
    names = {e["name"] for e in files(gw, "list", conversation_id="plant")["entries"]}
    assert names == {"d", "own", "hard"}, names   # links, FIFOs and devices are not listed
    for path in ("link", "fifo", "hard", "dirlink"):
        assert files(gw, "delete", conversation_id="plant", path=path)["status"] == "ok"
    assert secret.read_text() == "host secret"
    assert get(gw, "plant", "own")["data"] == b"mine"   # one name again


def test_a_device_node_planted_by_the_host_is_never_opened(gateway):
    """The sandbox cannot make a device node (the test above probes it), so
    the host's root plants one (/dev/zero's numbers) in the workspace: the
    tmpfs is nodev, the gateway's open fails, nothing is read from it."""
    gw = gateway
    import stat
    reply, kc = gw.open_client("dev")
    os.mknod(gw.inside(reply["workspace"]) / "zero", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    refused(get(gw, "dev", "zero"), "PermissionDenied")
    refused(put(gw, "dev", "zero", b"x"), "PermissionDenied")
    refused(files(gw, "stat", conversation_id="dev", path="zero"), "NotARegularFile")
    assert files(gw, "list", conversation_id="dev")["entries"] == []
    assert files(gw, "delete", conversation_id="dev", path="zero")["status"] == "ok"


def test_a_listing_reads_a_bounded_number_of_entries(gateway):
    """10,001 symlinks (never listed) and a file: the listing reads the
    directory's first 10,000 entries only and says it was cut."""
    gw = gateway
    _, kc = gw.open_client("many")
    run(kc, "import os\nos.mkdir('/workspace/d')\nfor i in range(10001): os.symlink('/etc/passwd', f'/workspace/d/l{i}')\n"
            "open('/workspace/d/f', 'w').close(); [open(f'/workspace/{i}', 'w').close() for i in range(3)]",
        timeout=120)
    listing = files(gw, "list", conversation_id="many", path="d")
    assert listing["truncated"] is True and len(listing["entries"]) <= 1, listing["truncated"]
    small = files(gw, "list", conversation_id="many")
    assert small["truncated"] is False and len(small["entries"]) == 4


def test_a_file_swapped_for_a_symlink_is_never_followed(either_gateway, tmp_path):
    gw = either_gateway
    secret = tmp_path / "secret"
    secret.write_text("host secret")
    os.chmod(secret, 0o600)
    _, kc = gw.open_client("swap")
    run(kc, "open('/workspace/real', 'w').write('workspace file')\n" + kernel_swap("real", secret))
    seen = set()
    for i in range(300):
        r = get(gw, "swap", "real")
        seen.add(r["data"] if r["status"] == "ok" else r["ename"])
        w = put(gw, "swap", "real", b"host upload %d" % i)
        seen.add(w["status"] if w["status"] == "ok" else w["ename"])
    run(kc, "open('/workspace/stop', 'w').close()")
    assert b"host secret" not in seen and secret.read_text() == "host secret", seen
    assert seen <= {b"workspace file", "ok", "SymlinkRefused", "NoSuchFile"} | {b"host upload %d" % i for i in
                                                                               range(300)}, seen
    assert "SymlinkRefused" in seen, seen   # the race was met


def test_uploads_count_against_the_quota(gateway):
    gw = gateway
    _, kc = gw.open_client("quota", policy={"workspace_bytes": 8 * MIB})
    chunk = os.urandom(MIB)
    offset = 0
    for i in range(12):
        r = files(gw, "put", conversation_id="quota", path="big", offset=offset, buffers=[chunk])
        if r["status"] != "ok":
            break
        offset += MIB
    refused(r, "WorkspaceFull")
    assert "workspace_bytes" in r["evalue"]
    assert 4 <= offset // MIB <= 8, offset   # what the tmpfs holds beside the root
    st = files(gw, "stat", conversation_id="quota", path="big")
    assert st["size"] == offset, st   # the refused chunk was cut back
    assert run(kc, "import os; print(os.path.getsize('/workspace/big'))").strip() == str(offset)
    assert files(gw, "delete", conversation_id="quota", path="big")["status"] == "ok"
    assert put(gw, "quota", "small", b"fits")["status"] == "ok"


MOVES = """
import os
os.symlink(%(dir)r, '/workspace/out'); os.symlink(%(secret)r, '/workspace/victim')
os.mkfifo('/workspace/fifo'); open('/workspace/h1', 'w').write('h'); os.link('/workspace/h1', '/workspace/h2')
open('/workspace/a', 'w').write('A'); os.mkdir('/workspace/d')
"""


def test_rename_and_copy(either_gateway):
    """file_rename and file_copy: within the workspace, never over an
    existing name (a symlink there included), never through a symlinked
    parent to a host directory the gateway's uid could write, never of a
    link, FIFO or hardlink; copies belong to the kernel."""
    gw = either_gateway
    host = traversable_dir("kennel-files-host-", mode=0o755)
    secret, hostdir = host / "secret", host / "dir"
    secret.write_text("host secret")
    hostdir.mkdir()
    gateway_uid = os.stat(gw.state).st_uid   # the unprivileged gateway owns its state dir
    for p in (secret, hostdir):
        os.chown(p, gateway_uid, -1)
    _, kc = gw.open_client("mv")
    run(kc, MOVES % {"dir": str(hostdir), "secret": str(secret)})
    r = files(gw, "rename", conversation_id="mv", path="a", new_path="d/b")
    assert (r["status"], r.get("path"), r.get("new_path")) == ("ok", "a", "d/b"), r
    r = files(gw, "copy", conversation_id="mv", path="d/b", new_path="c")
    assert (r["status"], r.get("new_path")) == ("ok", "c"), r
    assert get(gw, "mv", "c")["data"] == b"A"
    t0 = time.monotonic()
    for kind, path, new_path, ename in [
            ("rename", "c", "d/b", "FileExists"), ("copy", "c", "d/b", "FileExists"),
            ("rename", "c", "victim", "FileExists"), ("copy", "c", "victim", "FileExists"),
            ("rename", "c", "out/c", "SymlinkRefused"), ("copy", "c", "out/c", "SymlinkRefused"),
            ("rename", "c", "../c", "InvalidPath"), ("copy", "c", "/tmp/c", "InvalidPath"),
            ("rename", "victim", "v2", "SymlinkRefused"), ("copy", "victim", "v2", "SymlinkRefused"),
            ("rename", "fifo", "f2", "NotARegularFile"), ("copy", "fifo", "f2", "NotARegularFile"),
            ("rename", "h1", "h3", "HardlinkRefused"), ("copy", "h2", "h3", "HardlinkRefused"),
            ("rename", "d", "d/in", "InvalidPath"), ("rename", "nothing", "n", "NoSuchFile"),
            ("copy", "d", "d2", "IsADirectory")]:
        refused(files(gw, kind, conversation_id="mv", path=path, new_path=new_path), ename)
    refused(files(gw, "rename", conversation_id="mv", path="c"), "InvalidPath")   # no new_path
    assert time.monotonic() - t0 < 10   # the FIFO blocked nothing
    assert secret.read_text() == "host secret" and os.listdir(hostdir) == []
    out = run(kc, "import os; print(os.path.islink('/workspace/victim'), os.stat('/workspace/c').st_uid == os.getuid(),"
                  " sorted(os.listdir('/workspace')))")
    assert out.startswith("True True ") and "'c'" in out and "'v2'" not in out, out
    shutil.rmtree(host)


def vm(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


GIB = 1 << 30
CHUNK = 4 * MIB


def test_one_gib_up_and_down_with_bounded_rss(make_gateway):
    """1 GiB in 4 MiB raw-frame chunks, up then down, compared by a hash
    on both sides: the gateway's peak RSS grows by a few chunks, never by
    the file. In a sanitizer build ASan's quarantine (256 MiB by default)
    keeps freed chunks resident: 16 MiB here, so that the peak measures
    the gateway. Meanwhile a second conversation runs `1 + 1` in a loop:
    each chunk is one bounded step on the event loop, so its round trips
    stay short."""
    import hashlib
    gw = make_gateway(config=dict(CONFIG, maxima={"workspace_bytes": 2 * GIB, "memory_bytes": 2 * GIB}),
                      asan_options=gwtest.SMALL_QUARANTINE)
    _, kc = gw.open_client("big", policy={"workspace_bytes": GIB + 64 * MIB})
    other, _ = gw.open_client("other")
    rtts, before, done, moving = [], [], threading.Event(), threading.Event()

    def measure():
        okc = gwtest.kernel_client(other["connection"])
        try:
            while not done.is_set():
                t = time.monotonic()
                r, _ = execute(okc, "1 + 1")
                (rtts if moving.is_set() else before).append(time.monotonic() - t)
                assert r["content"]["status"] == "ok"
                time.sleep(0.02)
        finally:
            okc.stop_channels()
    prober = threading.Thread(target=measure)
    prober.start()
    wait_until(lambda: len(before) >= 20, 60)
    moving.set()
    pid = gw.proc.pid
    block = os.urandom(CHUNK)
    up = hashlib.sha256()
    base = vm(pid, "VmRSS")
    start = time.monotonic()
    for i in range(GIB // CHUNK):
        data = block[i % 4096:] + block[:i % 4096]
        up.update(data)
        r = files(gw, "put", conversation_id="big", path="big.bin", offset=i * CHUNK, buffers=[data])
        assert r["status"] == "ok", r
    t_up = time.monotonic() - start
    down = hashlib.sha256()
    offset = 0
    while True:
        r = get(gw, "big", "big.bin", offset=offset, length=CHUNK, encoding="buffer")
        down.update(r["data"])
        offset += r["length"]
        if r["eof"]:
            break
    t_down = time.monotonic() - start - t_up
    done.set()
    prober.join(60)
    peak = vm(pid, "VmHWM")
    rtts.sort()
    before.sort()
    print(f"second conversation: before the transfers median {before[len(before) // 2] * 1e3:.1f} ms, max "
          f"{before[-1] * 1e3:.1f} ms; during them {len(rtts)} round trips, median "
          f"{rtts[len(rtts) // 2] * 1e3:.1f} ms, max {rtts[-1] * 1e3:.1f} ms")
    assert len(rtts) > 20 and rtts[-1] < 2.0, rtts[-5:]
    assert offset == GIB and down.hexdigest() == up.hexdigest()
    print(f"1 GiB up {t_up:.1f} s, down {t_down:.1f} s; gateway RSS before {base >> 20} MiB, peak {peak >> 20} MiB")
    assert peak - base < 64 * MIB, (base, peak)
    assert run(kc, "import os; print(os.path.getsize('/workspace/big.bin'))").strip() == str(GIB)
