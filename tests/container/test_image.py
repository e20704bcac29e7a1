"""kennel's image: built from Debian 12 and Debian's packages with podman;
served with the least privilege its sandbox needs (every layer active, the
agent frameworks' clients through it, with the token in each variable they
set); refused at start, naming the layer, when any one piece of that
privilege is missing."""
import json
import pathlib
import secrets

import pytest
import requests

from agentclients import Smolagents
from imagelib import CAPS, IMAGE, least_privilege, run
from kennel_testlib import SRCDIR, descendants, wait_until
from refserver import free_port


def target(port, token):
    import types
    return types.SimpleNamespace(base_url=f"http://127.0.0.1:{port}", ws_url=f"ws://127.0.0.1:{port}", token=token)


def ready(t, name, podman):
    def answered():
        try:
            return requests.get(f"{t.base_url}/api/kernelspecs", params={"token": t.token}, timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def why():
        return run(podman.cmd("logs", name), check=False).stderr[-3000:]
    wait_until(answered, 90, why, interval=0.5)


def test_image_exposes_8888_and_runs_the_entrypoint(podman):
    info = json.loads(run(podman.cmd("image", "inspect", IMAGE)).stdout)[0]["Config"]
    assert "8888/tcp" in info["ExposedPorts"]
    assert info["Entrypoint"] == ["/usr/libexec/kennel/entrypoint"]


@pytest.mark.parametrize("variable", ["KG_AUTH_TOKEN", "KENNEL_AUTH_TOKEN", "TOKEN"])
def test_least_privilege_serves_smolagents(podman, variable):
    """smolagents sets KG_AUTH_TOKEN, AutoGen's DockerJupyterServer TOKEN."""
    port, token, name = free_port(), secrets.token_hex(16), f"kennel-test-{variable.lower()}"
    podman.start(name, least_privilege(), {variable: token, "KENNEL_HTTP": f"127.0.0.1:{port}", "KENNEL_SHARD": "a"})
    try:
        t = target(port, token)
        ready(t, name, podman)
        assert requests.get(f"{t.base_url}/api/kernelspecs", timeout=5).status_code == 401
        client = Smolagents(t)
        assert client.create_kernel().startswith("0000000a-")
        assert client.run_code("print('hi'); 6 * 7") == ("42", "hi\n", False)
        # every layer active: the start-up check (kennel selftest) passed,
        # and the kernel's own report says so
        layers = run(podman.cmd("exec", name, "kennel", "info", "--state-dir", "/var/lib/kennel")).stdout
        assert "degraded" not in layers and "unavailable" not in layers, layers
    finally:
        podman.stop(name)


# each piece left out, and what kennel names (its selftest's FAIL line)
MISSING = {
    "no CAP_SYS_ADMIN": (dict(caps=[c for c in CAPS if c != "SYS_ADMIN"]), "quota: unshare(CLONE_NEWNS)"),
    "no CAP_SETUID": (dict(caps=[c for c in CAPS if c != "SETUID"]), "uid_map"),
    "no CAP_SETGID": (dict(caps=[c for c in CAPS if c != "SETGID"]), "setgroups"),
    "no CAP_CHOWN": (dict(caps=[c for c in CAPS if c != "CHOWN"]), "to the sandbox user"),
    "no CAP_DAC_OVERRIDE": (dict(caps=[c for c in CAPS if c != "DAC_OVERRIDE"]), "to the sandbox user"),
    "/proc masked": (dict(unmask=False), "mount proc"),
    "cgroups read-only": (dict(cgroup=False), "cgroup"),
}


@pytest.mark.parametrize("case", list(MISSING))
def test_refuses_to_start_naming_what_is_missing(podman, case):
    given, named = MISSING[case]
    rc, err = podman.once(f"kennel-test-missing-{abs(hash(case))}", least_privilege(**given),
                          {"KENNEL_AUTH_TOKEN": "t", "KENNEL_HTTP": f"127.0.0.1:{free_port()}"})
    assert rc == 1, err
    assert "FAIL" in err and named in err and "cannot confine kernels" in err, err


# The nearest thing here to Kubernetes' hostUsers: false: the container in
# a user namespace of its own, its root the host's uid 100000 (podman's
# --userns=auto needs a "containers" range in the host's /etc/subuid, which
# this machine has not: an explicit map instead).
USERNS = ["--uidmap", "0:100000:65536", "--gidmap", "0:100000:65536"]
K8S_CONF = pathlib.Path(SRCDIR) / "gateway" / "deploy" / "k8s" / "base" / "kennel.conf"


def host_uids(pid):
    """Real, effective, saved and filesystem uid of pid as the host sees them."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(line.split()[1:] for line in f if line.startswith("Uid:"))
    except OSError:
        return None


def test_a_user_namespaced_container_serves_with_the_k8s_config(podman):
    """What the StatefulSet runs: no cgroup mount, the capabilities in the
    container's own user namespace, k8s/base/kennel.conf (the sandbox's
    uid 65000, one the container maps; cgroup allowed to degrade). Every
    layer but cgroup is active (the host's cgroup tree is not the
    container's to write: its memory is then bounded by rlimits), the
    gateway is the host's uid 100000, not root, and its kernel 165000. Before: the
    config had no host_uid, and the start-up check failed at mount (uid
    2000000000 is not mapped)."""
    port, name = free_port(), "kennel-test-userns"
    podman.start(name, least_privilege(cgroup=False) + USERNS + ["-v", f"{K8S_CONF}:/etc/kennel/kennel.conf:ro"],
                 {"KENNEL_AUTH_TOKEN": "userns", "KENNEL_HTTP": f"127.0.0.1:{port}"})
    try:
        t = target(port, "userns")
        ready(t, name, podman)
        client = Smolagents(t)
        client.create_kernel()
        assert client.run_code("import os; print(os.getuid()); 6 * 7") == ("42", "1000\n", False)
        info = json.loads(run(podman.cmd("exec", name, "kennel", "info", "--state-dir", "/var/lib/kennel")).stdout)
        states = {layer: v["state"] for layer, v in info["confinement"].items()}
        assert states.pop("cgroup") == "unsupported", info["confinement"]["cgroup"]
        assert set(states.values()) == {"active"}, states
        pid = json.loads(run(podman.cmd("inspect", name)).stdout)[0]["State"]["Pid"]
        assert host_uids(pid) == ["100000"] * 4
        # the kernel: uid 1000 inside, the sandbox's 65000 in the container
        assert any(host_uids(p) == ["165000"] * 4 for p in descendants(pid)), [host_uids(p) for p in descendants(pid)]
    finally:
        podman.stop(name)


def test_a_user_namespaced_container_with_the_default_sandbox_uid_says_to_set_it(podman):
    """The image's own config (sandbox uid 2000000000) in a user namespace
    that maps 65,536 ids: the start-up check names the setting. Before:
    "Invalid argument" alone."""
    rc, err = podman.once("kennel-test-userns-default", least_privilege(cgroup=False) + USERNS,
                          {"KENNEL_AUTH_TOKEN": "t", "KENNEL_HTTP": f"127.0.0.1:{free_port()}"})
    assert rc == 1, err
    assert "uid 2000000000" in err and "has no mapping here" in err and "confine.host_uid" in err, err
