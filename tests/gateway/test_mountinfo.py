"""F13's residual (issue 12): /proc/self/mountinfo inside the sandbox showed,
as each bind's root, the host path of the bound directory: the state dir,
the conversation id (<state>/conv/<id>/workspace) and the run dir's name
(<state>/run/<name>). With the quota layer (gateway/gw_quota.c, on by
default) both are tmpfs mounts of the gateway's own, so the root shown is
"/" of that tmpfs.

Read from inside a confined kernel, for a root gateway and one running as
uid 65534 (its mounts live in its own user and mount namespace): no line
names the state dir, the conversation id or the run dir; /workspace and
/run/kennel are mount roots ("/"). The host side is checked first: the
conversation's workspace and run dir exist under the state dir, so the
strings searched for are the ones a leak would show."""

import json
import os
import stat
import subprocess

import hostprobe
from gwtest import execute, stdout_of
from kennel_testlib import in_namespace_of

CONVERSATION = "secret-conversation-7f3a"


def test_mountinfo_shows_no_host_path(either_gateway):
    gw = either_gateway
    reply, kc = gw.open_client(CONVERSATION)
    # the daemon's side: where the leak would point
    runs = [p for p in (gw.state / "run").iterdir() if p.is_dir()]
    assert os.path.ismount(gw.inside(reply["workspace"])) and runs, (gw.state, runs)
    _, outputs = execute(kc, "print(open('/proc/self/mountinfo').read(), end='')")
    mountinfo = stdout_of(outputs)
    lines = mountinfo.splitlines()
    assert any(line.split()[4] == "/workspace" for line in lines), mountinfo
    for secret in [str(gw.state), CONVERSATION] + [run.name for run in runs]:
        assert secret not in mountinfo, (secret, mountinfo)
    roots = {line.split()[4]: line.split()[3] for line in lines}
    assert roots["/workspace"] == "/" and roots["/run/kennel"] == "/", roots


# What a local user tries on a root gateway's workspace that the kernel
# opened to everyone (red-team L4): read what the kernel left, drop a file
# for the kernel to read, and find every workspace in its own mountinfo.
LOCAL_USER = r"""
import json, sys
ws = sys.argv[1]
out = {}
try:
    out["read"] = open(ws + "/out.txt").read()
except OSError as e:
    out["read"] = type(e).__name__
try:
    open(ws + "/drop/in.txt", "w").write("orders")
    out["drop"] = "written"
except OSError as e:
    out["drop"] = type(e).__name__
out["mountinfo"] = [line for line in open("/proc/self/mountinfo") if sys.argv[2] in line]
print(json.dumps(out))
"""


def test_a_workspace_the_kernel_opens_to_all_is_no_channel_to_local_users(gateway):
    """The kernel may chmod its workspace root 0777 (it owns it), but the
    tmpfs lives in the daemon's own mount namespace: a local user (uid
    65534) at the workspace's host path finds the plain directory under
    it, neither the kernel's file nor a way to drop one for it, and its
    mountinfo names no workspace. Checked from the daemon's namespace first
    (nsenter's view, /proc/PID/root): the file is there, 0777 is set."""
    reply, kc = gateway.open_client(CONVERSATION)
    r, _ = execute(kc, "import os\nos.chmod('/workspace', 0o777)\nopen('/workspace/out.txt', 'w').write('data')\n"
                       "os.chmod('/workspace/out.txt', 0o666)\nos.mkdir('/workspace/drop')\n"
                       "os.chmod('/workspace/drop', 0o777)")
    assert r["content"]["status"] == "ok", r["content"]
    inside = in_namespace_of(gateway.proc.pid, reply["workspace"])
    assert (inside / "out.txt").read_text() == "data"
    assert stat.S_IMODE(os.stat(inside).st_mode) == 0o777
    done = subprocess.run(hostprobe.SETPRIV + ["/usr/bin/python3", "-c", LOCAL_USER, reply["workspace"],
                                               str(gateway.state)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["read"] in ("PermissionError", "FileNotFoundError"), seen
    assert seen["drop"] in ("PermissionError", "FileNotFoundError"), seen
    assert seen["mountinfo"] == [], seen
    _, out = execute(kc, "import os; print(os.listdir('/workspace/drop'))")
    assert stdout_of(out).strip() == "[]"
