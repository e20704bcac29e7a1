"""kennel under the systemd unit's hardening (gateway/deploy/kennel.service.in),
and the settings the unit leaves out because they break the sandbox.

systemd is not PID 1 where these tests run (this machine's init is its VM
agent; CI runs in containers), so `systemd-run` cannot start the unit.
service_exec.py applies each setting with the kernel mechanism systemd uses
for it, read from the unit file itself: a setting added to the unit that it
cannot emulate fails test_every_unit_setting_is_emulated.

The host is probed first, unconfined: each test compares the layer report
under the settings with the report of the same launch without them, so a
host that lacks a layer (cgroup v2 without delegation, no Landlock) gives the
same states on both sides and neither fails nor passes because of it."""
import concurrent.futures
import os
import resource

import pytest

from kennel_testlib import execute, gone, kernel_client, stdout_of, traversable_dir
from servicelib import ServiceGateway, launch_under, properties, unit_service_settings

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the unit runs kennel as root; emulating it needs root")

# every layer may degrade here: the tests compare states, they do not ask for them
ANY_STATE = {"allow_degraded": ["cgroup", "cgroupns", "landlock", "quota"]}


@pytest.fixture(scope="module")
def unit_props():
    return properties(unit_service_settings())


@pytest.fixture(scope="module")
def baseline():
    """The launcher's status line with no systemd setting at all."""
    rc, status, err = launch_under({}, ANY_STATE, ["/bin/true"])
    assert rc == 0 and status.get("status") == "confined", (rc, status, err)
    return status


def states(layers):
    return {name: layer["state"] for name, layer in layers.items()}


def test_every_unit_setting_is_emulated():
    props = properties(unit_service_settings())
    assert props["NoNewPrivileges"] and props["SystemCallFilter"] and props["CapabilityBoundingSet"]


def test_launch_under_the_unit_confines_as_without_it(unit_props, baseline):
    props = dict(unit_props, ReadWritePaths=[])
    rc, status, err = launch_under(props, ANY_STATE, ["/bin/true"])
    assert rc == 0 and status.get("status") == "confined", (rc, status, err)
    assert states(status["layers"]) == states(baseline["layers"])


def test_gateway_under_the_unit(unit_props, baseline):
    """A whole conversation as a service would serve it: open, run code as
    the sandbox's user, a timeout's SIGINT to the kernel (another uid), a
    timeout whose kernel must be killed, a fresh kernel, a close that
    removes a workspace with a locked directory of the sandbox's uid,
    SIGTERM: exit 0 and nothing left."""
    gw = ServiceGateway(unit_props, config={"interrupt_grace": 0.5})
    try:
        info = gw.info()
        assert info["ready"] is True, info.get("startup_error")
        assert states(info["confinement"]) == states(baseline["layers"]) | {"quota": info["confinement"]["quota"]["state"]}
        assert info["capacity"]["rlimit_nofile"] == min(unit_props["LimitNOFILE"], resource.getrlimit(
            resource.RLIMIT_NOFILE)[1] if not can_raise_limits() else unit_props["LimitNOFILE"])

        opened = gw.control.open("svc", policy={"execution_timeout": 2})
        assert opened["status"] == "ok", opened
        kc = kernel_client(opened["connection"])
        try:
            reply, outputs = execute(kc, "import os, subprocess\n"
                                         "os.makedirs('locked/deep'); open('locked/deep/f', 'w').write('x')\n"
                                         "os.chmod('locked/deep', 0); os.chmod('locked', 0)\n"
                                         "subprocess.Popen(['sleep', '600'])\n"
                                         "print(os.getuid())")
            assert reply["content"]["status"] == "ok", reply["content"]
            assert stdout_of(outputs).strip() == "1000"
            assert reply["metadata"]["kennel"]["max_rss_bytes"] > 0

            reply, _ = execute(kc, "x = 1\nimport time\ntime.sleep(60)", timeout=30)
            assert reply["content"]["ename"] == "ExecutionTimeout", reply["content"]
            assert "interrupted and the variables are kept" in reply["content"]["evalue"]
            reply, outputs = execute(kc, "print(x)")
            assert stdout_of(outputs).strip() == "1"

            reply, _ = execute(kc, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)",
                               timeout=30)
            assert reply["content"]["ename"] == "ExecutionTimeout", reply["content"]
            assert "killed" in reply["content"]["evalue"]

            reply, outputs = execute(kc, "print('fresh')", timeout=30)
            assert stdout_of(outputs).strip() == "fresh"
            assert reply["metadata"]["kennel"]["state"] == "lost"
        finally:
            kc.stop_channels()
        workspace = opened["workspace"]
        closed = gw.control.request("conversation_close_request", {"conversation_id": "svc"})["content"]
        assert closed["status"] == "ok", closed
        assert not os.path.exists(workspace)
    finally:
        rc, leftovers = gw.stop()
    assert rc == 0
    assert leftovers == []


def can_raise_limits():
    """CAP_SYS_RESOURCE: this VM's agent, like many containers, does not
    give it even to root, and then no hard limit can be raised."""
    with open("/proc/self/status") as f:
        eff = int([line.split()[1] for line in f if line.startswith("CapEff:")][0], 16)
    return bool(eff >> 24 & 1)


def test_limit_nofile_covers_the_socket_cap(unit_props):
    """The unit's LimitNOFILE is gw_capacity.c's formula at ZeroMQ's socket
    cap: the fd limit must never be the one that binds. The formula is read
    back from a running daemon at the fd limit this host allows (capacity
    in gateway_info), then applied to the unit's number."""
    gw = ServiceGateway({}, config={"warm_pool": 2, "max_parallel_launches": 4})
    try:
        capacity = gw.info()["capacity"]
    finally:
        rc, leftovers = gw.stop()
    assert rc == 0 and leftovers == []

    def by_fds(nofile):
        # reserve: the daemon's own 64 + 2 x 64, the lingering closed
        # conversations' 32 x 12 (gw_linger.h), 4 per parallel launch, 3 per
        # host tool command (mcp.max_commands 64) and 3 for one being started
        return (nofile - 64 - 2 * 64 - 32 * 12 - 4 * 4 - 3 * 64 - 3) // 35 - 2
    assert capacity["by_fds"] == by_fds(capacity["rlimit_nofile"]), \
        f"gw_capacity.c's formula changed: recompute the unit's LimitNOFILE ({capacity})"
    assert by_fds(unit_props["LimitNOFILE"]) >= capacity["by_sockets"], capacity


# The settings the unit leaves out: each breaks a layer, with this error
# (README.md "Deploying" and gateway/deploy/README.md quote them).
BREAKING = [
    ("PrivateUsers", {"PrivateUsers": True}, "userns", "setgroups(0): Operation not permitted"),
    ("RestrictNamespaces", {"RestrictNamespaces": True}, "userns", "clone(CLONE_NEWUSER|"),
    ("ProtectHostname", {"ProtectHostname": True}, "uts", 'sethostname("kennel"): Operation not permitted'),
    ("ProtectKernelTunables without ProcSubset=pid", {"ProtectKernelTunables": True}, "mount", "mount proc on"),
    ("ProtectKernelLogs without ProcSubset=pid", {"ProtectKernelLogs": True}, "mount", "mount proc on"),
    ("SystemCallFilter=@system-service", {"SystemCallFilter": ["@system-service"], "SystemCallErrorNumber": "EPERM"},
     "mount", "make mounts private /: Operation not permitted"),
    ("CapabilityBoundingSet without CAP_SETUID", {"CapabilityBoundingSet": ["CAP_CHOWN", "CAP_DAC_OVERRIDE",
                                                                          "CAP_SETGID"]},
     "userns", "uid_map: Operation not permitted"),
    ("CapabilityBoundingSet without CAP_SETGID", {"CapabilityBoundingSet": ["CAP_CHOWN", "CAP_DAC_OVERRIDE",
                                                                          "CAP_SETUID"]},
     "userns", "setgroups(0): Operation not permitted"),
]


@pytest.mark.parametrize("props,stage,message", [b[1:] for b in BREAKING], ids=[b[0] for b in BREAKING])
def test_setting_left_out_breaks_the_sandbox(props, stage, message, baseline):
    assert baseline["layers"][stage]["state"] == "active", baseline["layers"][stage]
    rc, status, err = launch_under(props, ANY_STATE, ["/bin/true"])
    assert rc == 125, (rc, status, err)
    assert status.get("status") == "error" and status.get("stage") == stage, status
    assert message in status["message"], status["message"]


def test_the_sandboxs_error_survives_its_exit(baseline):
    """The sandbox's first process sends its error and exits; when it exits
    with a message of the launcher's unread, the kernel reports ECONNRESET
    to the launcher before that error. Twelve refused launches at once (the
    race needs load: 8 of 24 lost the error before, as "the sandbox ended
    during setup (exit status 1)"): every one names its layer."""
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda _: launch_under({"ProtectHostname": True}, ANY_STATE, ["/bin/true"]),
                                range(12)))
    for rc, status, err in results:
        assert rc == 125 and status.get("stage") == "uts", (rc, status, err)


def test_a_kill_by_a_foreign_seccomp_filter_is_named(baseline):
    """SystemCallFilter= without SystemCallErrorNumber= kills with SIGSYS
    the sandbox's first process at its first call outside the list (mount):
    the refusal still names the stage and says what killed it (three
    launches: the child dies at a different moment each time)."""
    for _ in range(3):
        rc, status, err = launch_under({"SystemCallFilter": ["@system-service"]}, ANY_STATE, ["/bin/true"])
        assert rc == 125, (rc, status, err)
        assert status.get("stage") == "setup", status
        assert "SIGSYS" in status["message"] and "seccomp filter" in status["message"], status["message"]


def test_protect_control_groups_breaks_the_cgroup_layer(baseline):
    """ProtectControlGroups=yes: /sys/fs/cgroup read-only. Only where this
    host gives the launcher a cgroup at all (probed: the baseline)."""
    cgroup = baseline["layers"]["cgroup"]
    if cgroup["state"] != "active":
        pytest.skip(f"this host gives no cgroup to the launcher unconfined: {cgroup['reason']}")
    rc, status, err = launch_under({"ProtectControlGroups": True}, {"allow_degraded": ["quota"]}, ["/bin/true"])
    assert rc == 125 and status.get("stage") == "cgroup", (rc, status, err)
    assert "Read-only file system" in status["message"]


def test_sys_admin_is_needed_for_the_workspace_quota(unit_props):
    """CAP_SYS_ADMIN: a root gateway makes the mount namespace of its own
    where it mounts each workspace's tmpfs (its quota); without it the
    start-up probe fails at "quota" and the gateway refuses every
    conversation, naming the capability."""
    caps = [c for c in unit_props["CapabilityBoundingSet"] if c != "CAP_SYS_ADMIN"]
    gw = ServiceGateway(dict(unit_props, CapabilityBoundingSet=caps))
    try:
        info = gw.info()
    finally:
        rc, leftovers = gw.stop()
    assert rc == 0
    assert info["ready"] is False
    assert info["startup_error"]["layer"] == "quota", info["startup_error"]
    assert "unshare(CLONE_NEWNS): Operation not permitted" in info["startup_error"]["reason"]
    assert "CAP_SYS_ADMIN" in info["startup_error"]["reason"]


def test_chown_is_needed_for_a_host_workspace(baseline):
    """CAP_CHOWN: the launcher hands a host workspace to the sandbox's uid."""
    workspace = traversable_dir("kennel-svc-ws-")
    try:
        policy = {"workspace": str(workspace), "allow_degraded": ["quota", "cgroup", "cgroupns", "landlock"]}
        rc, status, err = launch_under({}, policy, ["/bin/true"])
        assert rc == 0, (status, err)
        rc, status, err = launch_under({"CapabilityBoundingSet": ["CAP_DAC_OVERRIDE", "CAP_SETUID", "CAP_SETGID"]},
                                       policy, ["/bin/true"])
        assert rc == 125 and status.get("stage") == "mount", (rc, status, err)
        assert "to the sandbox user" in status["message"] and "Operation not permitted" in status["message"]
    finally:
        os.chmod(workspace, 0o700)
        os.rmdir(workspace)


def test_sigterm_to_the_daemon_alone_stops_its_kernels(unit_props):
    """KillMode=mixed sends SIGTERM to the daemon only: it must stop its
    kernels itself, leaving no process behind."""
    gw = ServiceGateway(unit_props)
    try:
        opened = gw.control.open("term")
        assert opened["status"] == "ok", opened
        listed = gw.control.request("conversation_list_request")["content"]["conversations"]
        kernel_pid = [c["pid"] for c in listed if c["conversation_id"] == "term"][0]
        assert kernel_pid > 0
    finally:
        rc, leftovers = gw.stop()
    assert rc == 0 and leftovers == []
    assert gone(kernel_pid), f"kernel {kernel_pid} still runs after the daemon's SIGTERM"
