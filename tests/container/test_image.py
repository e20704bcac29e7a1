"""kennel's image: built from Debian 12 and Debian's packages with podman;
served with the least privilege its sandbox needs (every layer active, the
agent frameworks' clients through it, with the token in each variable they
set); refused at start, naming the layer, when any one piece of that
privilege is missing."""
import json
import secrets

import pytest
import requests

from agentclients import Smolagents
from imagelib import CAPS, IMAGE, least_privilege, run
from kennel_testlib import wait_until
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
