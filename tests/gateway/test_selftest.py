"""`kennel selftest`: a real confined kernel checks the sandbox from inside."""
import ipaddress
import json
import re
import shutil
import subprocess

import hostprobe
from gwtest import built, launcher


def run_selftest(tmp_path, config, wrapper=()):
    cfg = tmp_path / "selftest.json"
    cfg.write_text(json.dumps(hostprobe.gateway_config(config)))
    return subprocess.run([*wrapper, str(built("gateway/kennel")), "selftest", "--config", str(cfg)],
                          capture_output=True, text=True, timeout=120)


def test_selftest_passes_confined(tmp_path):
    out = run_selftest(tmp_path, {"launcher": launcher()})
    assert out.returncode == 0, out.stdout + out.stderr
    for check in ["confined kernel start", "not root inside", "no network", "no host secrets",
                  "no host environment", "/workspace writable"]:
        assert any(line.startswith("ok") and check in line for line in out.stdout.splitlines()), check
    assert "seccomp" in out.stdout and "userns" in out.stdout  # the layer report
    assert out.stdout.strip().endswith("selftest: passed")


def test_selftest_fails_when_confinement_is_refused(tmp_path):
    bad = tmp_path / "refuse.sh"
    bad.write_text('#!/bin/sh\necho \'{"status":"error","stage":"seccomp","errno":22,"message":"no filter"}\' >&4\n'
                   'exit 125\n')
    bad.chmod(0o755)
    out = run_selftest(tmp_path, {"launcher": str(bad)})
    assert out.returncode == 1
    assert "FAIL" in out.stdout and "seccomp" in out.stdout


def test_selftest_proves_no_network_without_aiming_off_this_machine(tmp_path):
    # "No network" is shown with the selftest's own listeners on the host's
    # loopback (nothing may arrive), lo only and no route inside. Under
    # strace, every connect/sendto of the selftest and its kernel is to a
    # loopback address (or a unix socket): nothing aims off this machine.
    trace = tmp_path / "trace"
    strace = shutil.which("strace")
    wrapper = [strace, "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-e", "signal=none", "-o", str(trace)]
    if not strace:
        print("strace is not installed: the syscall trace part is not checked")
    out = run_selftest(tmp_path, {"launcher": launcher()}, wrapper if strace else ())
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(l for l in out.stdout.splitlines() if "no network" in l)
    assert line.startswith("ok") and "host listeners on 127.0.0.1" in line and "saw nothing" in line, line
    assert '"interfaces":["lo"]' in line and '"routes":0' in line, line
    if strace:
        text = trace.read_text()
        addresses = re.findall(r'inet_addr\("([^"]+)"\)', text) + re.findall(r'inet_pton\(AF_INET6, "([^"]+)"', text)
        print("addresses in connect/sendto:", sorted(set(addresses)))
        assert all(ipaddress.ip_address(a).is_loopback for a in addresses), sorted(set(addresses))



def failed_start_line(out):
    return next(l for l in out.stdout.splitlines() if "confined kernel start" in l)


def test_selftest_names_why_the_launcher_ended(tmp_path):
    """A launcher that dies before its status line: the selftest shows its
    exit status and its last lines of stderr (before: "the launcher ended
    without a status line (closed its status pipe)" and nothing else), the
    lines cut to a bound, the earliest dropped."""
    bad = tmp_path / "crash.sh"
    noise = "x" * 5000
    bad.write_text("#!/bin/sh\n"
                   f"echo 'early line that is dropped {noise}' >&2\n"
                   "for i in 1 2 3 4 5 6 7 8; do echo \"launcher line $i\" >&2; done\n"
                   "echo 'kennel-launch: error while loading shared libraries: libpython3.11.so.1.0' >&2\n"
                   "exit 127\n")
    bad.chmod(0o755)
    out = run_selftest(tmp_path, {"launcher": str(bad)})
    assert out.returncode == 1, out.stdout + out.stderr
    line = failed_start_line(out)
    assert line.startswith("FAIL") and "the launcher ended without a status line (exit status 127)" in line, line
    assert "kennel-launch: error while loading shared libraries: libpython3.11.so.1.0" in line, line
    assert "launcher line 8" in line and "early line" not in line and len(line) < 1200, line


def test_selftest_names_the_signal_that_ended_the_launcher(tmp_path):
    bad = tmp_path / "segv.sh"
    bad.write_text("#!/bin/sh\necho 'about to crash' >&2\nkill -SEGV $$\n")
    bad.chmod(0o755)
    out = run_selftest(tmp_path, {"launcher": str(bad)})
    assert out.returncode == 1, out.stdout + out.stderr
    line = failed_start_line(out)
    assert "the launcher ended without a status line (killed by signal 11 (SIGSEGV))" in line, line
    assert "about to crash" in line, line
