"""JupyterLab's TypeScript client, @jupyterlab/services (pinned in
jlab/package.json and package-lock.json; ./quickstart check installs it
with `npm ci` into BUILDDIR/node), run with node against each target."""
import json
import os
import shutil
import subprocess

import pytest

from kennel_testlib import BUILDDIR

V1 = "v1.kernel.websocket.jupyter.org"
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def node_env():
    node = shutil.which("node")
    modules = BUILDDIR / "node" / "node_modules"
    assert node, "node is not installed: ./quickstart check installs nodejs"
    assert (modules / "@jupyterlab" / "services").is_dir(), \
        f"{modules} has no @jupyterlab/services: ./quickstart check runs npm ci there"
    return dict(os.environ, NODE_PATH=str(modules))


def run_jlab(target, env):
    r = subprocess.run(["node", os.path.join(HERE, "jlab", "jlab_client.js"), target.base_url, target.token],
                       env=env, capture_output=True, text=True, timeout=240)
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 0 and "error" not in seen, (seen.get("error"), r.stderr[-3000:])
    return seen


def test_jlab_services_kernel_lifecycle(target, node_env):
    seen = run_jlab(target, node_env)
    steps = {s["step"]: s for s in seen["steps"]}
    assert seen["language"] == "python"
    assert steps["execute"]["status"] == "ok"
    assert steps["execute"]["outputs"] == [
        {"type": "stream", "text": "hello\n"},
        {"type": "execute_result", "data": ["text/plain"], "text": "42"}]
    assert (steps["interrupt"]["status"], steps["interrupt"]["ename"]) == ("error", "KeyboardInterrupt")
    assert steps["after_interrupt"]["outputs"][-1]["text"] == "43"
    # what the front end inserts: the match over [cursor_start, cursor_end)
    # (ipykernel answers "path" from 12, others may answer "os.path" from 9)
    done = steps["complete"]
    code = "import os\nos.pa"
    assert done["status"] == "ok"
    assert "import os\nos.path" in [code[:done["cursor_start"]] + m + code[done["cursor_end"]:] for m in done["matches"]]
    assert steps["after_restart"]["outputs"] == [{"type": "execute_result", "data": ["text/plain"], "text": "False"}]
    assert seen["listed_after_shutdown"] is False
    # the client offers the v1 binary subprotocol first; notebook 6.4
    # knows only the legacy one, kennel must take v1
    assert V1 in seen["offered"][0]
    if target.kind == "kennel":
        assert set(seen["protocols"]) == {V1}, seen["protocols"]
    else:
        assert set(seen["protocols"]) == {""}, seen["protocols"]


def test_jlab_contents_manager(target, node_env):
    """ContentsManager over a Drive: the reference server's own Contents API
    at api/contents, kennel's at api/contents/<kernel id> (a kernel started
    for it; its workspace is the drive). The same models on both."""
    import requests
    headers = {"Authorization": f"token {target.token}"}
    endpoint = "api/contents"
    kernel = None
    if target.kind == "kennel":
        kernel = requests.post(f"{target.base_url}/api/kernels", headers=headers, json={}, timeout=60).json()
        endpoint = f"api/contents/{kernel['id']}"
    try:
        r = subprocess.run(["node", os.path.join(HERE, "jlab", "jlab_contents.js"), target.base_url, target.token,
                            endpoint], env=node_env, capture_output=True, text=True, timeout=120)
        seen = json.loads(r.stdout.strip().splitlines()[-1])
        assert r.returncode == 0 and "error" not in seen, (seen.get("error"), r.stderr[-3000:])
    finally:
        if kernel:
            requests.delete(f"{target.base_url}/api/kernels/{kernel['id']}", headers=headers, timeout=60)
        else:
            requests.delete(f"{target.base_url}/api/contents/hello.txt", headers=headers, timeout=60)
            requests.delete(f"{target.base_url}/api/contents/sub", headers=headers, timeout=60)
    assert seen["saved_text"]["type"] == "file" and seen["saved_text"]["path"] == "hello.txt"
    assert seen["saved_dir"]["type"] == "directory"
    assert (seen["text"]["format"], seen["text"]["content"], seen["text"]["mimetype"]) == \
        ("text", "hello kennel\n", "text/plain")
    assert seen["b64_equal"] is True and seen["b64"]["format"] == "base64" and seen["b64"]["size"] == 300
    assert seen["b64"]["path"] == "sub/data.bin" and seen["b64"]["name"] == "data.bin"
    assert seen["root"]["type"] == "directory" and seen["root"]["format"] == "json"
    assert ["hello.txt", "file"] in seen["root"]["content"] and ["sub", "directory"] in seen["root"]["content"]
    assert seen["no_content"]["content"] is None and seen["no_content"]["type"] == "file"
    assert seen["after_delete"] == 404
    # the file browser's requests: the same names, types and statuses on both
    assert seen["untitled"] == [["fb/untitled.txt", "file"], ["fb/untitled1.txt", "file"],
                                ["fb/Untitled.ipynb", "notebook"], ["fb/Untitled Folder", "directory"]]
    assert seen["new_notebook"] == ["notebook", "json", 4, 0]
    assert (seen["renamed"]["path"], seen["renamed"]["name"], seen["renamed"]["content"]) == \
        ("fb/notes.txt", "notes.txt", None)
    assert seen["copied"]["path"] == "fb/notes-Copy1.txt" and seen["copy_text"] == "v1\n"
    assert seen["copied_into"]["path"] == "fb/Untitled Folder/notes.txt"
    assert seen["rename_conflict"] == 409
    assert seen["notebook"] == ["notebook", "json", None, "6 * 7"]
    assert seen["checkpoint"] == ["checkpoint", "string"] and seen["checkpoints"] == ["checkpoint"]
    assert seen["restored_cells"] == 1 and seen["checkpoints_after_delete"] == 0
    # a missing source, a deleted checkpoint: 404 from kennel; notebook 6.4
    # lets shutil's FileNotFoundError through as 500
    missing = 404 if target.kind == "kennel" else 500
    assert (seen["rename_missing"], seen["restore_deleted"]) == (missing, missing)
    assert seen["unreadable_notebook"] == 400
    assert seen["fb"]["content"] == [["Untitled Folder", "directory"], ["Untitled.ipynb", "notebook"],
                                     ["bad.ipynb", "notebook"], ["notes-Copy1.txt", "file"],
                                     ["notes.txt", "file"], ["untitled1.txt", "file"]]
    assert seen["fb_after_delete"] == 404
