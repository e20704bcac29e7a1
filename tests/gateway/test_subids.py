"""A root gateway whose sandboxes' host uid is a user's subordinate id
(/etc/subuid) fails its start-up probe at the userns layer, names the
range's owner and the setting, and refuses every conversation; beside
that range it is ready. The host's /etc is never changed: the daemon runs
in a mount namespace of its own whose /etc is an overlay holding the
test's files (kennel_testlib.private_etc, shown to work by
tests/security/test_subids.py)."""
import os

import pytest

import hostprobe
from gwtest import Gateway, traversable_dir
from kennel_testlib import private_etc

HOST_ID = hostprobe.SANDBOX_HOST_ID


@pytest.fixture
def root_gateway(tmp_path):
    if os.geteuid() != 0:
        pytest.fail("tests/gateway runs as root (as CI does)")
    made = []

    def make(subuid):
        etc = traversable_dir("kennel-etc-")
        made.append((etc, Gateway(tmp_path, prefix=private_etc(etc, {"subuid": subuid, "subgid": None}))))
        return made[-1][1]

    yield make
    for etc, gw in made:
        assert gw.stop() == 0
        etc.rmdir()


def test_a_host_uid_in_a_subuid_range_fails_the_probe(root_gateway):
    gw = root_gateway(f"alice:{HOST_ID - 1}:2\n")
    info = gw.control.request("gateway_info_request")["content"]
    assert info["ready"] is False and info["startup_error"]["layer"] == "userns", info
    reason = info["startup_error"]["reason"]
    for part in ("alice", "/etc/subuid", f"host uid {HOST_ID}", "confine.host_uid"):
        assert part in reason, (part, reason)
    c = gw.control.open("refused")
    assert c["status"] == "error" and c["ename"] == "ConfinementUnavailable" and "alice" in c["evalue"], c
    failed = gw.events("confinement_failed")
    assert failed and failed[0]["layer"] == "userns" and "/etc/subuid" in failed[0]["reason"]


def test_beside_a_subuid_range_the_gateway_is_ready(root_gateway):
    """Debian's first user's range (100000-165535) leaves the default alone."""
    gw = root_gateway("alice:100000:65536\n")
    info = gw.control.request("gateway_info_request")["content"]
    assert info["ready"] is True, info.get("startup_error")
    assert f"host {HOST_ID}/{HOST_ID}" in info["confinement"]["userns"]["reason"], info["confinement"]
