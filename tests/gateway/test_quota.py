"""A conversation's workspace_bytes and workspace_files are enforced (issue
15): the gateway mounts a tmpfs of that size and inode count on the
workspace before the kernel starts, in a mount namespace of its own (an
unprivileged one in a user namespace of its own too). Writes past a limit
fail inside the kernel with ENOSPC, the kernel keeps running, and every
execute_reply's metadata.kennel says what the workspace holds. Where the
gateway cannot mount, the open is refused naming the host setting, unless
the operator lists "quota" in allow_degraded (then the layer report says why).
Real daemons, confined kernels, jupyter_client."""
import json
import os
import shutil

import pytest

import hostprobe
from gwtest import (SMALL_QUARANTINE, Control, built, become, execute, mounts_below, serve, stdout_of,
                    traversable_dir)
from kennel_testlib import mount_namespace, processes_in, wait_until

MIB = 1 << 20

FILL = """
import os
written = 0
try:
    with open("/workspace/big", "wb") as f:
        while written < %(big)d:
            f.write(b"x" * (1 << 20)); f.flush(); written += 1
except OSError as e:
    print("big", written, e.errno)
os.unlink("/workspace/big")
os.mkdir("/workspace/many")
made = 0
try:
    while made < 100000:
        open("/workspace/many/%%d" %% made, "w").close(); made += 1
except OSError as e:
    print("small", made, e.errno)
"""

WORKSPACE_BYTES, WORKSPACE_FILES = 64 * MIB, 50000
# A workspace's pages and its inodes (~1 KiB each: inode and dentry) are
# charged to the kernel's memory cgroup (gateway/README.md "Workspaces"), so
# memory_bytes holds a full workspace besides the kernel itself. Measured:
# 101 MiB at most, 85 MiB with the 50,000 files (release build); 156 MiB in a
# sanitizer build with ASan's quarantine at 16 MiB (SMALL_QUARANTINE); with
# its default 256 MiB the quarantine alone kept ~340 MiB of the kernel's
# freed buffers, 500-511 MiB in all, and a loaded host went over 512 MiB.
KERNEL_BYTES = 256 * MIB
LIMITS = {"workspace_bytes": WORKSPACE_BYTES, "workspace_files": WORKSPACE_FILES,
          "memory_bytes": KERNEL_BYTES + WORKSPACE_BYTES + WORKSPACE_FILES * 1024}


@pytest.fixture
def gateway_options():
    """The gateway fixtures' (root, uid 65534): their kernels' memory near a
    release build's (LIMITS)."""
    return {"asan_options": SMALL_QUARANTINE}


def mountinfo_entry(pid, path):
    """The mountinfo line of process pid's namespace whose mount point is
    path, or None."""
    with open(f"/proc/{pid}/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == str(path):
                return line
    return None


def fill_and_survive(gw, conversation_id):
    """One big file then 100,000 small ones: each stops with ENOSPC at its
    limit, the same kernel answers afterwards and the metadata tracks it."""
    _, kc = gw.open_client(conversation_id, policy=LIMITS)
    r, out = execute(kc, "import os; print(os.getpid())")
    pid = stdout_of(out).strip()
    r, out = execute(kc, FILL % {"big": 2 * LIMITS["workspace_bytes"] // MIB}, timeout=300)
    assert r["content"]["status"] == "ok", r["content"]
    lines = [line.split() for line in stdout_of(out).splitlines()]
    assert lines[0][0] == "big" and lines[0][2] == "28" and int(lines[0][1]) <= 64, lines   # ENOSPC
    assert lines[1][0] == "small" and lines[1][2] == "28", lines
    assert 49000 < int(lines[1][1]) < 50000, lines   # the root and many/ take two inodes
    cost = r["metadata"]["kennel"]
    assert cost["workspace_files"] == LIMITS["workspace_files"], cost
    r, out = execute(kc, "import os, shutil; shutil.rmtree('/workspace/many'); print(os.getpid())", timeout=120)
    assert stdout_of(out).strip() == pid   # the same kernel
    assert r["metadata"]["kennel"]["workspace_files"] == 1 and r["metadata"]["kennel"]["workspace_bytes"] == 0
    return kc


def test_quota_is_active_by_default_as_root(gateway):
    """The default config names no degradation: the start-up probe and a
    conversation (claimed from the warm pool, whose directory was renamed
    with its mount) both have the quota."""
    if os.geteuid() != 0:
        pytest.skip("the root gateway's default; this test runs as uid %d" % os.geteuid())
    info = gateway.control.request("gateway_info_request")["content"]
    assert info["ready"] is True, info
    quota = info["confinement"]["quota"]
    assert quota["state"] == "active" and "filesystem of its own: 536870912 bytes, 65536 files" in quota["reason"]
    assert info["limits"]["defaults"]["workspace_files"] == 65536
    wait_until(lambda: gateway.control.request("gateway_info_request")["content"]["warm_pool"]["ready"] >= 1, 30)
    reply, kc = gateway.open_client("pooled")
    assert gateway.events("kernel_claimed"), "the default conversation was not a pooled kernel"
    entry = mountinfo_entry(gateway.proc.pid, reply["workspace"])
    assert entry and " - tmpfs " in entry and "size=524288k" in entry and "nr_inodes=65536" in entry, entry
    r, out = execute(kc, "open('/workspace/seen', 'w').write('x' * 5000)")
    assert (gateway.inside(reply["workspace"]) / "seen").stat().st_size == 5000
    assert r["metadata"]["kennel"]["workspace_bytes"] == 8192


def test_root_gateway_fills_stop_at_the_limits(gateway):
    fill_and_survive(gateway, "fill")
    listed = gateway.control.request("conversation_list_request")["content"]["conversations"]
    assert listed[0]["workspace_bytes"] == 0


def test_unprivileged_gateway_fills_stop_at_the_limits(unprivileged_gateway):
    """Probed first: uid 65534 can make a user namespace (the fixture); the
    gateway's own namespace then holds the mount."""
    gw = unprivileged_gateway
    quota = gw.control.request("gateway_info_request")["content"]["confinement"]["quota"]
    assert quota["state"] == "active", quota
    fill_and_survive(gw, "fill")


def test_unprivileged_gateway_without_user_namespaces_refuses_naming_the_setting(tmp_path):
    """A host that forbids user namespaces (simulated by seccomp, no_userns):
    the unprivileged gateway cannot mount, and says so at start naming the
    quota layer and the host setting, instead of running unlimited."""
    no_userns = built("tests/security/no_userns")
    home = traversable_dir("kennel-quota-nouserns-", 0o755)
    os.chown(home, hostprobe.NOBODY, hostprobe.NOBODY)
    config = home / "config.json"
    config.write_text(json.dumps({"launcher": str(built("kernel-launcher/kennel-launch")), "warm_pool": 0,
                                  "confine": {"allow_degraded": hostprobe.allow_degraded(hostprobe.NOBODY)}}))
    conn = home / "gateway.json"
    proc = serve(home / "state", config, home / "gateway.log", conn, prefix=[str(no_userns)],
                 preexec_fn=lambda: become(hostprobe.NOBODY))
    control = Control(conn)
    try:
        info = control.request("gateway_info_request")["content"]
        assert info["ready"] is False and info["startup_error"]["layer"] == "quota", info
        assert "unprivileged_userns_clone" in info["startup_error"]["reason"], info
        c = control.open("q")
        assert c["ename"] == "ConfinementUnavailable" and "quota" in c["evalue"], c
    finally:
        control.close()
        proc.terminate()
        proc.wait(20)
        shutil.rmtree(home, ignore_errors=True)


KEPT = "a file kept by a gateway without quota"


def plant_plain_workspace(gw, conversation_id):
    """A workspace left as a plain directory with a file in it, as a gateway
    that ran without the layer keeps one."""
    ws = gw.state / "conv" / conversation_id / "workspace"
    ws.mkdir(parents=True)
    (ws / "kept").write_text(KEPT)
    os.chmod(ws.parent, 0o711)
    return ws


def test_a_mount_that_cannot_be_made_refuses_the_open(make_gateway):
    gw = make_gateway(config={"warm_pool": 0})
    ws = plant_plain_workspace(gw, "old")
    c = gw.control.open("old")
    assert c["status"] == "error" and c["evalue"].startswith("quota: "), c
    assert "allow_degraded" in c["evalue"] and "kept workspace without a limit" in c["evalue"], c
    assert (ws / "kept").read_text() == KEPT
    shutil.rmtree(ws.parent)


def test_allow_degraded_quota_runs_without_and_the_report_says_why(make_gateway):
    degraded = hostprobe.allow_degraded(also=["quota"])
    gw = make_gateway(config={"warm_pool": 0, "confine": {"allow_degraded": degraded}})
    plant_plain_workspace(gw, "old")
    _, kc = gw.open_client("old")
    r, out = execute(kc, "print(open('/workspace/kept').read())")
    assert stdout_of(out).strip() == KEPT
    assert "workspace_bytes" not in r["metadata"]["kennel"]   # nothing measured it on the loop
    event = gw.events("quota_degraded")
    assert event and "kept workspace without a limit" in event[0]["reason"], gw.log()
    quota = gw.control.request("gateway_info_request")["content"]["confinement"]["quota"]
    assert quota["state"] == "unsupported" and "on a filesystem of" in quota["reason"], quota
    assert "allow_degraded" in quota["reason"]


def needs_memory_cgroup():
    """Skips, with the probe's detail, where the gateway's user has no
    memory cgroup: then nothing charges the workspace."""
    probe = hostprobe.cgroup_limits(os.geteuid())
    if not probe.ok:
        pytest.skip("no memory cgroup for this user, nothing charges the workspace: " + probe.detail)


def assert_out_of_memory(reply):
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KernelDied", reply["content"]
    assert "out of memory" in reply["content"]["evalue"], reply["content"]


def test_workspace_pages_count_against_memory_bytes(make_gateway):
    """tmpfs pages are charged to the memory cgroup of the process that
    writes them: a workspace larger than memory_bytes fills memory first,
    and the kernel is killed as out of memory, not told ENOSPC. Probed
    first: the gateway's user has a memory cgroup."""
    needs_memory_cgroup()
    gw = make_gateway(config={"warm_pool": 0})
    _, kc = gw.open_client("mem", policy={"memory_bytes": 128 * MIB, "workspace_bytes": 512 * MIB})
    r, out = execute(kc, FILL % {"big": 512}, timeout=120)
    assert_out_of_memory(r)



def test_the_defaults_fill_the_workspace_to_enospc_not_an_oom_kill(make_gateway):
    """With the default policy a kernel that fills its workspace (one big
    file, then empty files up to workspace_files) is told ENOSPC and goes on:
    the default workspace_bytes and its inodes fit in the default
    memory_bytes beside the kernel (both at 1 GiB it was killed as out of
    memory at ~900 MiB). Probed first: the gateway's user has a memory cgroup."""
    needs_memory_cgroup()
    gw = make_gateway(config={"warm_pool": 0}, asan_options=SMALL_QUARANTINE)
    _, kc = gw.open_client("defaults")
    defaults = gw.control.request("gateway_info_request")["content"]["limits"]["defaults"]
    r, out = execute(kc, FILL % {"big": 2 * defaults["workspace_bytes"] // MIB}, timeout=300)
    assert r["content"]["status"] == "ok", r["content"]
    lines = [line.split() for line in stdout_of(out).splitlines()]
    assert lines[0][0] == "big" and lines[0][2] == "28", lines   # ENOSPC
    assert lines[1][0] == "small" and lines[1][2] == "28", lines
    assert int(lines[1][1]) > defaults["workspace_files"] - 10, lines


MANY = """
made = 0
while made < %(files)d:
    open("/workspace/%%d" %% made, "w").close(); made += 1
    if made %% 10000 == 0:
        print(made, flush=True)
"""


def test_workspace_files_count_against_memory_bytes(make_gateway):
    """Each file's inode and dentry (~1 KiB of kernel memory) are charged
    like the pages: empty files, which take no bytes of the workspace, fill
    memory_bytes (256 MiB) long before workspace_files (1,000,000), and the
    kernel is killed as out of memory after at least 50,000 of them (the
    kernel itself takes 40-130 MiB: without the charge all would fit).
    Probed first: the gateway's user has a memory cgroup."""
    needs_memory_cgroup()
    gw = make_gateway(config={"warm_pool": 0}, asan_options=SMALL_QUARANTINE)
    _, kc = gw.open_client("inodes", policy={"memory_bytes": 256 * MIB, "workspace_files": 1000000})
    r, out = execute(kc, MANY % {"files": 1000000}, timeout=300)
    assert_out_of_memory(r)
    made = [int(n) for n in stdout_of(out).split()]
    assert made and made[-1] >= 50000, made


def test_the_run_dir_is_bounded_too(gateway):
    """/run/kennel is writable for the kernel's sockets: without a limit of
    its own it would take what the workspace's quota refuses."""
    _, kc = gateway.open_client("run", policy={"workspace_bytes": 8 * MIB})
    r, out = execute(kc, """
import os
written = 0
try:
    with open("/run/kennel/fill", "wb") as f:
        while written < 64:
            f.write(b"x" * (1 << 20)); f.flush(); written += 1
except OSError as e:
    print("run", written, e.errno)
os.unlink("/run/kennel/fill")
made = 0
try:
    while made < 1000:
        os.mkdir("/run/kennel/d%d" % made); made += 1
except OSError as e:
    print("inodes", made, e.errno)
""", timeout=60)
    words = stdout_of(out).split()
    assert words[0] == "run" and int(words[1]) <= 1 and words[2] == "28", words   # 1 MiB, ENOSPC
    assert words[3] == "inodes" and words[5] == "28", words
    assert int(words[4]) == 64 - 1 - 1 - 5, words   # the root, kernel.json, the five sockets


def test_a_killed_root_gateway_leaves_no_mount_in_the_hosts_namespace(make_gateway):
    """A root gateway mounts its probe's, pooled kernels', run dirs' and
    conversations' tmpfs in a mount namespace of its own: the host's mount
    table never has them (a local user's mountinfo lists no workspace), and
    a SIGKILL that stops the daemon from unmounting leaves none behind:
    once its last process (the kernels follow the daemon) has left the
    namespace, the mounts are gone with it."""
    if os.geteuid() != 0:
        pytest.skip("an unprivileged gateway's mounts are in its own user namespace anyway; "
                    "this test runs as uid %d" % os.geteuid())
    gw = make_gateway("killed")
    wait_until(lambda: gw.control.request("gateway_info_request")["content"]["warm_pool"]["ready"] >= 2, 30)
    reply, kc = gw.open_client("c", policy={"workspace_bytes": 8 * MIB})
    execute(kc, "open('/workspace/f', 'w').write('x')")
    state = str(gw.state)
    with open(f"/proc/{gw.proc.pid}/mountinfo") as f:
        own = [line.split()[4] for line in f if line.split()[4].startswith(state + "/")]
    assert state + "/probe" in own and state + "/conv/c/workspace" in own, own
    assert any("/run/" in p for p in own) and any("/pool/" in p for p in own), own
    assert mounts_below(gw.state) == []
    namespace = mount_namespace(gw.proc.pid)
    assert namespace != mount_namespace("self")
    gw.proc.kill()
    gw.proc.wait(20)
    wait_until(lambda: not processes_in(namespace), 30, lambda: f"the processes left in {namespace}: "
               f"{processes_in(namespace)}")
    assert mounts_below(gw.state) == []
