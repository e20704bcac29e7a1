"""Helpers for tests/deploy: the unit file's [Service] settings as
service_exec.py's properties, and a `kennel serve` run under them."""
import json
import os
import pathlib
import shutil
import subprocess
import tempfile

from hostprobe import PYTHON
from kennel_testlib import SRCDIR, Control, built, serve

HERE = pathlib.Path(__file__).resolve().parent
SERVICE_EXEC = HERE / "service_exec.py"
UNIT = pathlib.Path(SRCDIR) / "gateway" / "deploy" / "kennel.service.in"
# the unit's drop-in for an HTTP front other machines reach
HTTP_DROP_IN = pathlib.Path(SRCDIR) / "gateway" / "deploy" / "kennel-http.conf.in"

# unit settings service_exec.py emulates, and how each value is read
BOOLEAN = {"NoNewPrivileges", "ProtectHome", "PrivateTmp", "PrivateDevices", "PrivateNetwork",
           "ProtectKernelModules", "ProtectKernelTunables", "ProtectKernelLogs", "ProtectControlGroups",
           "ProtectClock", "RestrictRealtime", "RestrictSUIDSGID", "PrivateUsers", "RestrictNamespaces",
           "ProtectHostname"}
WORD = {"ProtectSystem", "ProtectProc", "ProcSubset", "SystemCallArchitectures", "SystemCallErrorNumber", "UMask"}
LIST = {"CapabilityBoundingSet", "RestrictAddressFamilies", "SystemCallFilter", "ReadWritePaths"}
NUMBER = {"LimitNOFILE"}
# settings of the unit that are not sandboxing (nothing to emulate), that
# ServiceGateway sets up itself (StateDirectory, StateDirectoryMode: its own
# 0711 directory made writable), or that have no effect on cgroup v1 as
# root (Delegate); ExecReload is the test's to run (test_service_ops.py);
# EnvironmentFile's variables a test passes itself (ServiceGateway's env)
NOT_EMULATED = {"Type", "ExecStart", "ExecReload", "KillMode", "TimeoutStopSec", "Restart", "RestartSec", "User",
                "StateDirectory", "StateDirectoryMode", "Delegate", "EnvironmentFile"}


def unit_service_settings(path=UNIT):
    """[Service]'s key=value lines, in order (comments and blank lines out)."""
    settings, section = [], None
    for line in pathlib.Path(path).read_text().splitlines():
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if text.startswith("["):
            section = text
            continue
        if section == "[Service]":
            key, _, value = text.partition("=")
            settings.append((key, value))
    return settings


def properties(settings):
    """service_exec.py's JSON properties from unit settings; a setting it
    cannot emulate is an error, so the unit cannot gain an untested one."""
    props = {}
    for key, value in settings:
        if key in BOOLEAN:
            props[key] = value == "yes"
        elif key in WORD:
            props[key] = value
        elif key in LIST:
            props[key] = props.get(key, []) + value.split()
        elif key in NUMBER:
            props[key] = int(value)
        elif key not in NOT_EMULATED:
            raise ValueError(f"the unit's {key}= is neither emulated by service_exec.py nor known as harmless")
    return props


def prefix(props):
    return [PYTHON, str(SERVICE_EXEC), json.dumps(props), "--"]


class ServiceGateway:
    """`kennel serve` under props, its state in a directory of its own
    under /var/lib (PrivateTmp hides /tmp) made writable as the unit's
    StateDirectory= makes /var/lib/kennel."""

    def __init__(self, props, config=None, env=None):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="kennel-svc-", dir="/var/lib"))
        os.chmod(self.dir, 0o711)
        self.state = self.dir / "state"
        self.state.mkdir(mode=0o711)
        self.config_file = self.dir / "kennel.conf"
        self.config_file.write_text(json.dumps(config or {}))
        self.log_file = self.dir / "gateway.log"
        props = dict(props, ReadWritePaths=props.get("ReadWritePaths", []) + [str(self.dir)])
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:halt_on_error=1", **(env or {}))
        try:
            self.proc = serve(self.state, self.config_file, self.log_file, prefix=prefix(props), env=env)
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        self.control = Control(self.state / "gateway.json")

    def info(self):
        return self.control.request("gateway_info_request")["content"]

    def stop(self, timeout=20):
        self.control.close()
        if self.proc.poll() is None:
            self.proc.terminate()
        rc = self.proc.wait(timeout)
        leftovers = sorted(str(p) for p in self.state.rglob("*"))
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc, leftovers


def launch_under(props, policy, argv, timeout=60):
    """kennel-launch --policy FILE --report-fd 1 -- argv under props: its
    exit status and status line (the JSON line it printed first)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", dir="/var/lib") as f:  # PrivateTmp hides /tmp
        json.dump(policy, f)
        f.flush()
        done = subprocess.run(prefix(props) + [str(built("kernel-launcher/kennel-launch")), "--policy", f.name,
                                               "--report-fd", "1", "--", *argv],
                              capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
    first = done.stdout.splitlines()[0] if done.stdout else "{}"
    return done.returncode, json.loads(first), done.stderr
