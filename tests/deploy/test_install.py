"""`make install` of this build into a staging directory (DESTDIR): the
programs, the man pages, the systemd unit with its sysusers.d and tmpfiles.d
entries and the config; each checked with the tool that will read it on a
machine (man, systemd-analyze, systemd-sysusers, systemd-tmpfiles)."""
import os
import pathlib
import re
import stat
import subprocess

import pytest

import hostprobe
from kennel_testlib import BUILDDIR

PREFIX = "/usr/local"  # configure's default, as this build is configured


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """The build installed into a fresh DESTDIR; uninstalled at the end."""
    destdir = tmp_path_factory.mktemp("destdir")
    done = subprocess.run(["make", "-C", str(BUILDDIR), "install", f"DESTDIR={destdir}"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    prefix = pathlib.Path(f"{destdir}{make_var('prefix')}")
    yield destdir, prefix
    subprocess.run(["make", "-C", str(BUILDDIR), "uninstall", f"DESTDIR={destdir}"], capture_output=True)


def make_var(name):
    out = subprocess.run(["make", "-s", "-C", str(BUILDDIR), "--no-print-directory", "-f", "Makefile", "-f", "-",
                          "print-var"], input=f"print-var:\n\t@echo $({name})\n", capture_output=True, text=True)
    return out.stdout.strip()


def test_install_puts_the_service_pieces_where_systemd_and_man_look(staged):
    destdir, prefix = staged
    for rel in ["bin/kennel", "bin/kennel-launch", "libexec/kennel/kennel-launch-full", "share/man/man1/kennel.1",
                "share/man/man1/kennel-launch.1", "share/man/man5/kennel.conf.5", "lib/systemd/system/kennel.service",
                "lib/sysusers.d/kennel.conf", "lib/tmpfiles.d/kennel.conf", "etc/kennel/kennel.conf"]:
        assert (prefix / rel).is_file(), rel
    drop_in = (prefix / "share/kennel/kennel-http.conf").read_text()
    assert "PrivateNetwork=no" in drop_in and f"EnvironmentFile=-{make_var('sysconfdir')}/kennel/http.env" in drop_in
    assert not re.search(r"@[a-z]+@", drop_in), "a placeholder was left in the drop-in"
    unit = (prefix / "lib/systemd/system/kennel.service").read_text()
    assert f"ExecStart={make_var('bindir')}/kennel serve --config {make_var('sysconfdir')}/kennel/kennel.conf" in unit
    assert not re.search(r"@[a-z]+@", unit), "a placeholder was left in the unit"
    man = subprocess.run(["man", "-w", "kennel.conf"], capture_output=True, text=True,
                         env=dict(os.environ, MANPATH=str(prefix / "share/man")))
    assert man.stdout.strip() == str(prefix / "share/man/man5/kennel.conf.5")


def staged_unit(prefix, directory, http=False):
    """The installed unit copied into directory with ExecStart pointing into
    the staging directory, where the binary is; http: with the installed
    drop-in beside it, as the operator puts it (kennel.service.d/)."""
    text = (prefix / "lib/systemd/system/kennel.service").read_text()
    unit = directory / "kennel.service"
    unit.write_text(text.replace(f"ExecStart={make_var('bindir')}/", f"ExecStart={prefix}/bin/"))
    if http:
        (directory / "kennel.service.d").mkdir()
        (directory / "kennel.service.d" / "http.conf").write_text((prefix / "share/kennel/kennel-http.conf").read_text())
    return unit


@pytest.mark.parametrize("http", [False, True], ids=["unit", "unit+http-drop-in"])
def test_the_installed_unit_verifies(staged, tmp_path, http):
    """systemd-analyze verify: syntax, every setting known to this systemd,
    ExecStart executable, the Documentation= man pages found; alone and
    with the HTTP drop-in."""
    destdir, prefix = staged
    unit = staged_unit(prefix, tmp_path, http)
    done = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True,
                          env=dict(os.environ, MANPATH=str(prefix / "share/man")))
    problems = [line for line in (done.stdout + done.stderr).splitlines()
                if line.strip() and "sysinit.target" not in line]
    assert done.returncode == 0 or not problems, problems
    assert not problems, problems


@pytest.mark.parametrize("http, bound", [(False, 3.6), (True, 4.1)], ids=["unit", "unit+http-drop-in"])
def test_the_unit_exposure(staged, tmp_path, http, bound):
    """systemd-analyze security --offline: the unit's exposure score (0 is
    fully locked down, 10 is none). 3.6 with the settings the sandbox allows
    (README.md, "Deploying"), 4.1 with the HTTP drop-in (the host's network:
    PrivateNetwork off); this keeps them from growing unnoticed."""
    destdir, prefix = staged
    done = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager",
                           str(staged_unit(prefix, tmp_path, http))], capture_output=True, text=True)
    found = re.search(r"Overall exposure level for kennel.service: ([0-9.]+)", done.stdout + done.stderr)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    assert float(found.group(1)) <= bound


def test_sysusers_and_tmpfiles_entries_apply(staged, tmp_path):
    """Applied to an empty root, as systemd-sysusers and systemd-tmpfiles
    apply them at boot or package install: the sandbox's uid and gid
    (confine's default host ids) are reserved, the state dir is made 0711."""
    destdir, prefix = staged
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    done = subprocess.run(["systemd-sysusers", f"--root={root}", str(prefix / "lib/sysusers.d/kennel.conf")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    passwd = (root / "etc/passwd").read_text()
    group = (root / "etc/group").read_text()
    ids = hostprobe.SANDBOX_HOST_ID
    assert re.search(rf"^kennel-sandbox:x:{ids}:{ids}:", passwd, re.M), passwd
    assert re.search(rf"^kennel-sandbox:x:{ids}:", group, re.M), group

    done = subprocess.run(["systemd-tmpfiles", f"--root={root}", "--create",
                           str(prefix / "lib/tmpfiles.d/kennel.conf")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    state = root / "var/lib/kennel"
    assert state.is_dir() and stat.S_IMODE(state.stat().st_mode) == 0o711


def test_reinstall_keeps_the_operators_config_and_uninstall_removes_ours(tmp_path):
    destdir = tmp_path / "d"
    make = ["make", "-C", str(BUILDDIR)]
    assert subprocess.run(make + ["install", f"DESTDIR={destdir}"], capture_output=True).returncode == 0
    conf = pathlib.Path(f"{destdir}{make_var('sysconfdir')}/kennel/kennel.conf")
    conf.write_text('{"max_conversations": 10}\n')
    assert subprocess.run(make + ["install", f"DESTDIR={destdir}"], capture_output=True).returncode == 0
    assert conf.read_text() == '{"max_conversations": 10}\n'
    assert subprocess.run(make + ["uninstall", f"DESTDIR={destdir}"], capture_output=True).returncode == 0
    assert conf.exists(), "uninstall removed the operator's config"
    conf.unlink()
    assert subprocess.run(make + ["install", f"DESTDIR={destdir}"], capture_output=True).returncode == 0
    assert subprocess.run(make + ["uninstall", f"DESTDIR={destdir}"], capture_output=True).returncode == 0
    left = [str(p) for p in destdir.rglob("*") if p.is_file()]
    assert left == [], left
