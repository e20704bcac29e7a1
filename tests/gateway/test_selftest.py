"""`kennel selftest`: a real confined kernel checks the sandbox from inside."""
import json
import subprocess

from gwtest import built, launcher


def run_selftest(tmp_path, config):
    cfg = tmp_path / "selftest.json"
    cfg.write_text(json.dumps(config))
    return subprocess.run([str(built("gateway/kennel")), "selftest", "--config", str(cfg)],
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
