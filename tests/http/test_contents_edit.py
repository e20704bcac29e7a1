"""What JupyterLab's file browser asks of the Contents API besides reading
and saving: PATCH renames, POST copies a file or makes a new untitled file,
notebook or directory, a file's checkpoints, and a .ipynb served as type
"notebook". Names, statuses and messages as jupyter_server gives them
(tests/httpclients runs JupyterLab's own ContentsManager against notebook
6.4.12 and kennel). Then the path attacks on rename, copy and checkpoints:
the kernel plants symlinks to the host, a FIFO, a hardlink, and swaps a
directory for a symlink in a loop; the gateway runs as root and as uid
65534. A real `kennel serve --http`, confined kernels, requests."""
import json
import os
import shutil
import stat
import time

import pytest

import hostprobe
from httptest import api
from kennel_testlib import HttpGateway, kernel_swap, remove_state, traversable_dir

MIB = 1 << 20
NB = {"cells": [{"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {}, "outputs": [],
                 "source": "6 * 7"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def call(gw, method, path, body=None, **kw):
    """A Contents API call; body JSON (None: no body)."""
    return api(gw, method, "api/contents/" + path, **({"json": body} if body is not None else {}), **kw)


def expect(r, status):
    assert r.status_code == status, (r.request.method, r.request.url, r.status_code, r.text)
    return r.json() if r.content else None


def refused(r, status, ename):
    assert r.status_code == status and r.json()["message"].startswith(ename + ":"), \
        (r.request.method, r.request.url, r.status_code, r.text)


def put_text(gw, path, text):
    return expect(call(gw, "PUT", path, {"type": "file", "format": "text", "content": text}), 201)


def test_rename(http_gateway, conv):
    gw = http_gateway
    c = conv("ren")
    put_text(gw, "ren/a.txt", "A")
    expect(call(gw, "PUT", "ren/d", {"type": "directory"}), 201)
    put_text(gw, "ren/d/b.txt", "B")
    m = expect(call(gw, "PATCH", "ren/a.txt", {"path": "d/a2.txt"}), 200)
    assert (m["path"], m["name"], m["type"], m["content"], m["format"]) == ("d/a2.txt", "a2.txt", "file", None, None)
    assert expect(call(gw, "GET", "ren/d/a2.txt"), 200)["content"] == "A"
    refused(call(gw, "GET", "ren/a.txt"), 404, "NoSuchFile")
    m = expect(call(gw, "PATCH", "ren/d", {"path": "e"}), 200)
    assert (m["path"], m["type"]) == ("e", "directory")
    assert c.run("import os; print(sorted(os.listdir('/workspace/e')))").strip() == "['a2.txt', 'b.txt']"
    # the errors jupyter_server gives: 409 an existing target, 404, 400
    refused(call(gw, "PATCH", "ren/e/a2.txt", {"path": "e/b.txt"}), 409, "FileExists")
    refused(call(gw, "PATCH", "ren/e/a2.txt", {"path": "e"}), 409, "FileExists")
    assert expect(call(gw, "GET", "ren/e/b.txt"), 200)["content"] == "B"
    refused(call(gw, "PATCH", "ren/missing", {"path": "x"}), 404, "NoSuchFile")
    refused(call(gw, "PATCH", "ren/e/b.txt", {"path": "nodir/b.txt"}), 404, "NoSuchFile")
    refused(call(gw, "PATCH", "ren/e/b.txt", {}), 400, "InvalidRequest")
    refused(call(gw, "PATCH", "ren/e/b.txt", data=b"not json"), 400, "InvalidRequest")
    refused(call(gw, "PATCH", "ren/e", {"path": "e/inside"}), 400, "InvalidPath")
    refused(call(gw, "PATCH", "ren", {"path": "x"}), 400, "InvalidPath")
    assert expect(call(gw, "PATCH", "ren/e/b.txt", {"path": "e//b.txt"}), 200)["path"] == "e/b.txt"
    assert c.run("import os; print(os.stat('/workspace/e/a2.txt').st_uid == os.getuid())").strip() == "True"


def test_copy_and_new_untitled(http_gateway, conv):
    gw = http_gateway
    c = conv("cp")
    put_text(gw, "cp/a.txt", "A")
    put_text(gw, "cp/archive.tar.gz", "gz")
    expect(call(gw, "PUT", "cp/nb.ipynb", {"type": "notebook", "content": NB}), 201)
    expect(call(gw, "PUT", "cp/d", {"type": "directory"}), 201)
    made = []
    for dir_, body, status, path in [
            ("", {"copy_from": "a.txt"}, 201, "a-Copy1.txt"),
            ("", {"copy_from": "a.txt"}, 201, "a-Copy2.txt"),
            ("", {"copy_from": "a-Copy1.txt"}, 201, "a-Copy3.txt"),   # named from the original
            ("d", {"copy_from": "a.txt"}, 201, "d/a.txt"),            # the name is free there
            ("", {"copy_from": "archive.tar.gz"}, 201, "archive-Copy1.tar.gz"),
            ("", {"copy_from": "nb.ipynb"}, 201, "nb-Copy1.ipynb"),
            ("", {"type": "file", "ext": ".txt"}, 201, "untitled.txt"),
            ("", {"type": "file", "ext": ".txt"}, 201, "untitled1.txt"),
            ("", {"type": "notebook"}, 201, "Untitled.ipynb"),
            ("d", {"ext": ".ipynb"}, 201, "d/Untitled.ipynb"),
            ("", {"type": "notebook"}, 201, "Untitled1.ipynb"),
            ("", {"type": "directory"}, 201, "Untitled Folder"),
            ("", {"type": "directory"}, 201, "Untitled Folder 1"),
            ("", None, 201, "untitled")]:
        m = expect(call(gw, "POST", "cp/" + dir_, body), status)
        assert m["path"] == path and m["content"] is None, (body, m)
        made.append(m)
    types = {m["path"]: m["type"] for m in made}
    assert types["nb-Copy1.ipynb"] == types["Untitled.ipynb"] == "notebook"
    assert types["Untitled Folder"] == "directory" and types["untitled"] == "file"
    assert expect(call(gw, "GET", "cp/a-Copy3.txt"), 200)["content"] == "A"
    assert expect(call(gw, "GET", "cp/nb-Copy1.ipynb"), 200)["content"] == NB
    new = expect(call(gw, "GET", "cp/Untitled.ipynb"), 200)
    assert (new["type"], new["format"], new["content"]) == \
        ("notebook", "json", {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    assert expect(call(gw, "GET", "cp/untitled.txt"), 200)["content"] == ""
    refused(call(gw, "POST", "cp/", {"copy_from": "d"}), 400, "IsADirectory")
    refused(call(gw, "POST", "cp/", {"copy_from": "missing"}), 404, "NoSuchFile")
    refused(call(gw, "POST", "cp/", {"copy_from": 5}), 400, "InvalidRequest")
    refused(call(gw, "POST", "cp/a.txt", {"copy_from": "a.txt"}), 400, "InvalidRequest")
    refused(call(gw, "POST", "cp/nodir", {"type": "file"}), 404, "NoSuchFile")
    refused(call(gw, "POST", "cp/", {"type": "link"}), 400, "InvalidRequest")
    refused(call(gw, "POST", "cp/", {"type": "file", "ext": "/x"}), 400, "InvalidRequest")
    refused(call(gw, "POST", "cp/", data=b"[1]"), 400, "InvalidRequest")
    # what the host made belongs to the kernel: it can change it
    out = c.run("import os\nopen('/workspace/a-Copy1.txt', 'a').write('+kernel')\n"
                "print(all(os.stat('/workspace/' + p).st_uid == os.getuid() for p in "
                "['a-Copy1.txt', 'Untitled.ipynb', 'Untitled Folder', 'd/a.txt']))")
    assert out.strip() == "True"
    assert expect(call(gw, "GET", "cp/a-Copy1.txt"), 200)["content"] == "A+kernel"


def test_copies_count_against_the_quota_and_are_bounded(http_gateway, conv):
    gw = http_gateway
    c = conv("qc", policy={"workspace_bytes": 4 * MIB})
    expect(api(gw, "PUT", "files/qc/big", data=os.urandom(3 * MIB)), 201)
    refused(call(gw, "POST", "qc/", {"copy_from": "big"}), 507, "WorkspaceFull")
    names = {e["name"] for e in expect(call(gw, "GET", "qc/"), 200)["content"]}
    assert names == {"big"}, names   # the refused copy's new name is gone again
    refused(call(gw, "POST", "qc/big/checkpoints"), 507, "WorkspaceFull")
    assert c.run("import os; print(os.listdir('/workspace/.ipynb_checkpoints'))").strip() == "[]"
    gw_big = conv("bc")
    expect(api(gw, "PUT", "files/bc/five", data=os.urandom(5 * MIB)), 201)
    refused(call(gw, "POST", "bc/", {"copy_from": "five"}), 413, "TooLarge")
    assert "ok" in gw_big.run("print('ok')")


def test_notebook_model(http_gateway, conv):
    gw = http_gateway
    c = conv("nb")
    m = expect(call(gw, "PUT", "nb/nb.ipynb", {"type": "notebook", "content": NB}), 201)
    assert m["type"] == "notebook"
    m = expect(call(gw, "GET", "nb/nb.ipynb"), 200)
    assert (m["type"], m["format"], m["mimetype"], m["content"]) == ("notebook", "json", None, NB)
    m = expect(call(gw, "GET", "nb/nb.ipynb?content=0"), 200)
    assert (m["type"], m["format"], m["content"]) == ("notebook", None, None)
    m = expect(call(gw, "GET", "nb/nb.ipynb?type=file"), 200)
    assert (m["type"], m["format"]) == ("file", "text") and json.loads(m["content"]) == NB
    put_text(gw, "nb/plain.json", json.dumps(NB))
    assert expect(call(gw, "GET", "nb/plain.json?type=notebook"), 200)["content"] == NB
    entries = {e["name"]: e["type"] for e in expect(call(gw, "GET", "nb/"), 200)["content"]}
    assert entries == {"nb.ipynb": "notebook", "plain.json": "file"}, entries
    # what nbformat cannot read: 400 as jupyter_server's "Unreadable Notebook"
    c.run("open('/workspace/bad.ipynb', 'w').write('not json'); open('/workspace/v3.ipynb', 'w').write("
          "'{\"nbformat\": 3, \"worksheets\": []}'); open('/workspace/list.ipynb', 'w').write('[1]')")
    for name in ("bad.ipynb", "v3.ipynb", "list.ipynb"):
        refused(call(gw, "GET", "nb/" + name), 400, "UnreadableNotebook")
    assert expect(call(gw, "GET", "nb/bad.ipynb?type=file"), 200)["content"] == "not json"
    assert expect(call(gw, "GET", "nb/bad.ipynb?content=0"), 200)["type"] == "notebook"
    refused(call(gw, "GET", "nb/nb.ipynb?type=directory"), 400, "InvalidRequest")
    refused(call(gw, "GET", "nb/?type=notebook"), 400, "InvalidRequest")
    refused(call(gw, "GET", "nb/nb.ipynb?type=bogus"), 400, "InvalidRequest")


def test_checkpoints(http_gateway, conv):
    gw = http_gateway
    c = conv("ck")
    expect(call(gw, "PUT", "ck/nb.ipynb", {"type": "notebook", "content": NB}), 201)
    assert expect(call(gw, "GET", "ck/nb.ipynb/checkpoints"), 200) == []
    cp = expect(call(gw, "POST", "ck/nb.ipynb/checkpoints"), 201)
    assert cp["id"] == "checkpoint" and cp["last_modified"].endswith("Z"), cp
    assert expect(call(gw, "GET", "ck/nb.ipynb/checkpoints"), 200) == [cp]
    changed = dict(NB, cells=[])
    expect(call(gw, "PUT", "ck/nb.ipynb", {"type": "notebook", "content": changed}), 200)
    assert expect(call(gw, "GET", "ck/nb.ipynb"), 200)["content"] == changed
    assert expect(call(gw, "POST", "ck/nb.ipynb/checkpoints/checkpoint"), 204) is None
    assert expect(call(gw, "GET", "ck/nb.ipynb"), 200)["content"] == NB
    # kept in the workspace, where the kernel sees it; not listed
    assert c.run("import os; print(os.listdir('/workspace/.ipynb_checkpoints'))").strip() == "['nb-checkpoint.ipynb']"
    assert [e["name"] for e in expect(call(gw, "GET", "ck/"), 200)["content"]] == ["nb.ipynb"]
    refused(call(gw, "POST", "ck/nb.ipynb/checkpoints/other"), 404, "NoSuchCheckpoint")
    refused(call(gw, "DELETE", "ck/nb.ipynb/checkpoints/other"), 404, "NoSuchCheckpoint")
    refused(call(gw, "POST", "ck/missing.ipynb/checkpoints"), 404, "NoSuchFile")
    assert call(gw, "PUT", "ck/nb.ipynb/checkpoints", {"type": "file", "content": "x"}).status_code == 405
    # a rename takes the checkpoint along; a delete removes it
    expect(call(gw, "PUT", "ck/d", {"type": "directory"}), 201)
    expect(call(gw, "PATCH", "ck/nb.ipynb", {"path": "d/two.ipynb"}), 200)
    assert len(expect(call(gw, "GET", "ck/d/two.ipynb/checkpoints"), 200)) == 1
    assert expect(call(gw, "DELETE", "ck/d/two.ipynb/checkpoints/checkpoint"), 204) is None
    assert expect(call(gw, "GET", "ck/d/two.ipynb/checkpoints"), 200) == []
    refused(call(gw, "DELETE", "ck/d/two.ipynb/checkpoints/checkpoint"), 404, "NoSuchCheckpoint")
    expect(call(gw, "POST", "ck/d/two.ipynb/checkpoints"), 201)
    expect(call(gw, "DELETE", "ck/d/two.ipynb"), 204)
    assert c.run("import os; print(os.listdir('/workspace/d/.ipynb_checkpoints'))").strip() == "[]"
    expect(call(gw, "DELETE", "ck/d"), 204)   # only the checkpoints' directory was left in it
    # a directory named checkpoints stays a directory
    expect(call(gw, "PUT", "ck/runs", {"type": "directory"}), 201)
    expect(call(gw, "PUT", "ck/runs/checkpoints", {"type": "directory"}), 201)
    put_text(gw, "ck/runs/checkpoints/epoch-1", "weights")
    assert expect(call(gw, "GET", "ck/runs/checkpoints"), 200)["type"] == "directory"
    expect(call(gw, "DELETE", "ck/runs/checkpoints/epoch-1"), 204)


# ---- path attacks, the gateway as root and as uid 65534 ----------------------

@pytest.fixture(params=["root", "unprivileged"])
def either_gateway(request, tmp_path):
    """kennel serve --http as root, then as uid 65534 (skipped with the
    probe's detail where that uid cannot make a user namespace)."""
    user = None
    if request.param == "unprivileged":
        userns = hostprobe.user_namespaces(hostprobe.NOBODY)
        if not userns.ok:
            pytest.skip(userns.detail)
        user = hostprobe.NOBODY
    home = traversable_dir("kennel-contents-edit-")
    gw = HttpGateway(home, config={"warm_pool": 0}, user=user)
    gw.wait_ready()
    yield gw, user
    try:
        if gw.proc.poll() is None:
            assert gw.stop() == 0, gw.log_file.read_text()[-3000:]
        else:
            remove_state(gw.state)
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def host(either_gateway):
    """A host directory and secret the gateway's uid could write if it
    followed a link: what no request may reach."""
    _, user = either_gateway
    d = traversable_dir("kennel-host-", mode=0o755)
    secret = d / "secret"
    secret.write_text("host secret")
    target = d / "dir"
    (target / "sub").mkdir(parents=True)   # a path through the link goes on beneath it
    if user is not None:
        for p in (secret, target, target / "sub"):
            os.chown(p, user, user)
    os.chmod(secret, 0o600)
    yield secret, target
    shutil.rmtree(d, ignore_errors=True)


PLANT = """
import os
os.symlink(%(target)r, '/workspace/out')
os.symlink(%(secret)r, '/workspace/victim')
os.symlink(%(secret)r, '/workspace/slink')
os.mkfifo('/workspace/fifo')
open('/workspace/a.txt', 'w').write('workspace')
open('/workspace/h1', 'w').write('h'); os.link('/workspace/h1', '/workspace/h2')
os.mkdir('/workspace/d'); os.symlink(%(target)r, '/workspace/d/.ipynb_checkpoints')
open('/workspace/d/f.txt', 'w').write('d')
os.makedirs('/workspace/e/.ipynb_checkpoints')
os.symlink(%(secret)r, '/workspace/e/.ipynb_checkpoints/f-checkpoint.txt')
open('/workspace/e/f.txt', 'w').write('e')
"""


def test_rename_copy_and_checkpoints_refuse_planted_links(either_gateway, host, conversations):
    gw, _ = either_gateway
    secret, target = host
    c = conversations(gw, "plant")
    c.run(PLANT % {"secret": str(secret), "target": str(target)})
    t0 = time.monotonic()
    for method, path, body, status, ename in [
            # the target's parent is a symlink to a host directory
            ("PATCH", "a.txt", {"path": "out/a.txt"}, 403, "SymlinkRefused"),
            ("PATCH", "a.txt", {"path": "out/sub/a.txt"}, 403, "SymlinkRefused"),
            ("POST", "out", {"copy_from": "a.txt"}, 403, "SymlinkRefused"),
            ("POST", "out/sub", {"copy_from": "a.txt"}, 403, "SymlinkRefused"),
            ("POST", "out/sub", {"type": "file"}, 403, "SymlinkRefused"),
            # outside by name
            ("PATCH", "a.txt", {"path": "../a.txt"}, 400, "InvalidPath"),
            ("PATCH", "a.txt", {"path": str(target / "a.txt")}, 400, "InvalidPath"),
            ("POST", "", {"copy_from": "../../../../etc/passwd"}, 400, "InvalidPath"),
            ("POST", "", {"copy_from": "/etc/passwd"}, 400, "InvalidPath"),
            # over a symlink: never replaced, never followed
            ("PATCH", "a.txt", {"path": "victim"}, 409, "FileExists"),
            # what the file service never reads or moves
            ("PATCH", "slink", {"path": "moved"}, 403, "SymlinkRefused"),
            ("POST", "", {"copy_from": "slink"}, 403, "SymlinkRefused"),
            ("PATCH", "fifo", {"path": "moved"}, 403, "NotARegularFile"),
            ("POST", "", {"copy_from": "fifo"}, 403, "NotARegularFile"),
            ("PATCH", "h1", {"path": "moved"}, 403, "HardlinkRefused"),
            ("POST", "", {"copy_from": "h2"}, 403, "HardlinkRefused"),
            # a checkpoints' directory, a checkpoint planted as symlinks
            ("POST", "d/f.txt/checkpoints", None, 403, "SymlinkRefused"),
            ("GET", "e/f.txt/checkpoints", None, 403, "SymlinkRefused"),
            ("POST", "e/f.txt/checkpoints", None, 403, "SymlinkRefused"),
            ("POST", "e/f.txt/checkpoints/checkpoint", None, 403, "SymlinkRefused"),
            ("DELETE", "e/f.txt", None, 204, None)]:
        r = call(gw, method, "plant/" + path, body)
        if ename:
            refused(r, status, ename)
        else:
            expect(r, status)
    assert time.monotonic() - t0 < 20   # the FIFO blocked nothing
    assert secret.read_text() == "host secret" and os.listdir(target) == ["sub"] and os.listdir(target / "sub") == []
    out = c.run("import os; print(os.path.islink('/workspace/victim'), os.path.islink('/workspace/e/.ipynb_checkpoints/"
                "f-checkpoint.txt'), open('/workspace/d/f.txt').read(), sorted(os.listdir('/workspace')))")
    # a file's delete removed its checkpoint's name: the link, not its target
    assert out.split(" ", 3)[:3] == ["True", "False", "d"], out
    assert "moved" not in out and "a.txt" in out, out


def test_a_directory_swapped_for_a_symlink_during_renames_and_copies(either_gateway, host, conversations):
    """The kernel swaps the target directory for a symlink to a host
    directory in a loop while the client renames and copies into it: each
    request is refused or lands in the workspace, never in the host's."""
    gw, _ = either_gateway
    secret, target = host
    c = conversations(gw, "swap")
    c.run("import os; os.makedirs('/workspace/real/sub'); open('/workspace/src.txt', 'w').write('src')\n"
          + kernel_swap("real", target))
    seen = {}
    for i in range(150):
        put_text(gw, f"swap/f{i}", "moved")
        put_text(gw, f"swap/g{i}", "moved")
        for method, path, body in [("PATCH", f"f{i}", {"path": f"real/f{i}"}),
                                   ("PATCH", f"g{i}", {"path": f"real/sub/g{i}"}),
                                   ("POST", "real", {"copy_from": "src.txt"}),
                                   ("POST", "real/sub", {"copy_from": "src.txt"}),
                                   ("POST", "real", {"type": "file"})]:
            r = call(gw, method, "swap/" + path, body)
            key = (method, r.status_code, r.json()["message"].split(":")[0] if r.status_code >= 400 else "")
            seen[key] = seen.get(key, 0) + 1
    c.run("open('/workspace/stop', 'w').close()")
    assert os.listdir(target) == ["sub"] and os.listdir(target / "sub") == [], seen
    assert secret.read_text() == "host secret", seen
    # refusals: the link, a name gone meanwhile, a link swapped back for the
    # directory between openat2's refusal and the check of what it was
    assert {k[1:] for k in seen if k[1] >= 400} <= {(403, "SymlinkRefused"), (404, "NoSuchFile"),
                                                    (400, "NotADirectory")}, seen
    assert any(k[2] == "SymlinkRefused" for k in seen), seen   # the race was met
    assert any(k[1] in (200, 201) for k in seen), seen
