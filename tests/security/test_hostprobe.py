"""The host-probe decisions themselves, with each possible probe outcome:
a host of the other kind (no IA32 emulation, no x32, no Landlock...)
cannot be had here, so these show that both branches of every decision
are reachable and say the right thing."""
import errno
import signal

import pytest

import hostprobe

SEGV, SYS = -signal.SIGSEGV, -signal.SIGSYS


@pytest.mark.parametrize("abi,returncode,stdout,ok,detail", [
    ("i386", 0, "calling\nreturned 4242\n", True, "host-runs-i386"),
    ("i386", SEGV, "calling\n", False, "host-lacks-i386"),       # no IA32 emulation
    ("x32", 0, f"calling\nreturned {-errno.ENOSYS}\n", False, "host-lacks-x32"),
    ("x32", 0, "calling\nreturned 77\n", True, "host-runs-x32"),
], ids=["i386-returned", "i386-sigsegv", "x32-enosys", "x32-returned"])
def test_foreign_abi_probe_classifies_each_host_kind(abi, returncode, stdout, ok, detail):
    probe = hostprobe.classify_foreign_abi(abi, returncode, stdout)
    assert probe.ok is ok and probe.detail.startswith(detail + ":"), probe


def test_a_probe_that_never_reached_the_call_is_an_error_not_a_host_kind():
    with pytest.raises(RuntimeError):
        hostprobe.classify_foreign_abi("i386", 1, "Traceback ...")


RUNS = hostprobe.Probe(True, "host-runs-i386: unconfined, the call returned 4242")
LACKS = hostprobe.Probe(False, "host-lacks-i386: unconfined, the call did not return (killed by SIGSEGV)")


@pytest.mark.parametrize("probe,returncode,stdout,passes", [
    (RUNS, SYS, "calling\n", True),                      # killed by the filter
    (RUNS, SEGV, "calling\n", False),                    # host runs it: only SIGSYS proves the filter
    (RUNS, 0, "calling\nreturned 2\n", False),           # the call ran inside
    (LACKS, SEGV, "calling\n", True),                    # did not return: all that can be asked
    (LACKS, SYS, "calling\n", True),
    (LACKS, 0, "calling\nreturned -38\n", False),        # returned, even if with ENOSYS
    (RUNS, 1, "", False),                                # never reached the call
    (LACKS, 1, "", False),
], ids=["runs-sigsys", "runs-sigsegv", "runs-returned", "lacks-sigsegv", "lacks-sigsys", "lacks-returned",
        "runs-never-called", "lacks-never-called"])
def test_foreign_abi_verdict_for_each_host_kind(probe, returncode, stdout, passes):
    verdict = hostprobe.foreign_abi_verdict("i386", probe, returncode, stdout)
    assert (verdict is None) is passes, verdict
    if verdict and probe is LACKS and "returned" in stdout:
        assert "host-lacks-i386" in verdict


def test_this_hosts_probes_answer_with_a_detail():
    # Each probe runs here for real and says what it checked.
    for abi in hostprobe.FOREIGN_ABIS:
        assert hostprobe.foreign_abi(abi).detail.startswith(("host-runs-", "host-lacks-"))
    abi, detail = hostprobe.landlock_abi()
    assert abi >= 0 and "Landlock" in detail or "landlock" in detail
    assert hostprobe.landlock_state() in ("active", "degraded", "unsupported")
    for uid in (0, hostprobe.NOBODY):
        assert hostprobe.cgroup_limits(uid).detail.startswith(f"cgroup v{hostprobe.cgroup_version()}")
        assert "uid" in hostprobe.user_namespaces(uid).detail


@pytest.mark.parametrize("cgroup,abi,userns,refusal,landlock", [
    (True, 7, True, None, "active"),              # this CI host as root
    (False, 7, True, "cgroup", "active"),         # cgroup v1, uid 65534 (this CI host)
    (True, 3, True, "landlock", "degraded"),      # Linux 6.2-6.6
    (True, 0, True, "landlock", "unsupported"),   # no Landlock at all
    (True, 7, False, "userns", "active"),         # userns forbidden (Docker, Ubuntu AppArmor)
    (False, 3, False, "cgroup", "degraded"),      # several missing: the first one set up
], ids=["all", "no-cgroup", "landlock-abi-3", "no-landlock", "no-userns", "several"])
def test_layer_decisions_for_each_host_kind(monkeypatch, cgroup, abi, userns, refusal, landlock):
    # The decisions from simulated probe results (the probes themselves run
    # for real in test_this_hosts_probes_answer_with_a_detail).
    monkeypatch.setattr(hostprobe, "cgroup_limits", lambda uid: hostprobe.Probe(cgroup, "cgroup probe"))
    monkeypatch.setattr(hostprobe, "landlock_abi", lambda: (abi, f"Landlock ABI {abi}"))
    monkeypatch.setattr(hostprobe, "user_namespaces", lambda uid: hostprobe.Probe(userns, "userns probe"))
    monkeypatch.setattr(hostprobe, "fuse_device", lambda uid: hostprobe.Probe(True, "fuse probe"))
    assert hostprobe.first_refusal(hostprobe.NOBODY)[0] == refusal
    assert hostprobe.expected_layer_state("landlock", hostprobe.NOBODY) == landlock
    assert hostprobe.expected_layer_state("cgroup", hostprobe.NOBODY) == ("active" if cgroup else "unsupported")
    assert hostprobe.expected_layer_state("seccomp", hostprobe.NOBODY) == "active"
    lacking = {"cgroup"} if not cgroup else set()
    lacking |= {"landlock"} if abi < 6 else set()
    assert set(hostprobe.allow_degraded(hostprobe.NOBODY, ["quota"])) == {"quota"} | lacking
