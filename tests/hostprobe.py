"""What this host can do, probed unconfined before a test relies on it.

A sandbox test must neither fail nor pass because of the kind of host it
runs on, and must not skip a property the host does support. So each
host-dependent test first asks here what the host itself does, with no
sandbox at all, and then asserts what the sandbox must do on such a host.
Every probe returns its outcome with a one-line `detail` saying what was
run and what came back; tests put it in their ids and messages.

The probes: foreign syscall ABIs (i386 `int 0x80`, x32), the Landlock ABI,
cgroup limits for a given uid (v1 or v2, delegation), unprivileged user
namespaces, the host's own interface addresses. Results are cached per
process: the host does not change during a run.

At the top of tests/ (beside conftest.py, which puts this folder on
sys.path), so that every folder's tests use the same probes."""
import ctypes
import dataclasses
import errno
import functools
import json
import os
import signal
import subprocess
import tempfile

PYTHON = "/usr/bin/python3"
NOBODY = 65534
SETPRIV = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
# confine's default host_uid/host_gid: a root launcher's sandbox user on the host
SANDBOX_HOST_ID = 2000000000

# Machine code that makes one system call through a foreign ABI and
# returns its result (rax) to the caller.
FOREIGN_ABIS = {
    "i386": bytes.fromhex("b814000000cd80c3"),    # mov eax, 20 (getpid); int 0x80; ret
    "x32": bytes.fromhex("b8270000400f05c3"),     # mov eax, 0x40000027 (x32 getpid); syscall; ret
}

# Runs the code given as hex in argv[1]; prints "calling" before and
# "returned N" after the call (the second line only if the call returned).
SHELLCODE = """
import ctypes, mmap, sys
buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
buf.write(bytes.fromhex(sys.argv[1]))
addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
print("calling", flush=True)
print("returned", ctypes.CFUNCTYPE(ctypes.c_long)(addr)(), flush=True)
"""


@dataclasses.dataclass(frozen=True)
class Probe:
    ok: bool        # the host has the feature (for a foreign ABI: runs the call)
    detail: str     # what was run and what came back, for ids and messages


def describe_exit(returncode):
    if returncode < 0:
        return f"killed by {signal.Signals(-returncode).name}"
    return f"exit status {returncode}"


def classify_foreign_abi(abi, returncode, stdout):
    """The host runs the ABI when the call returned a result other than
    -ENOSYS. A host without it either kills the caller (no IA32 emulation:
    `int 0x80` raises SIGSEGV) or answers -ENOSYS (a kernel without x32)."""
    words = stdout.split()
    if "returned" in words:
        value = int(words[words.index("returned") + 1])
        if value == -errno.ENOSYS:
            return Probe(False, f"host-lacks-{abi}: unconfined, the call returned -ENOSYS")
        return Probe(True, f"host-runs-{abi}: unconfined, the call returned {value}")
    if "calling" not in words:
        raise RuntimeError(f"the {abi} probe did not reach the call ({describe_exit(returncode)})")
    return Probe(False, f"host-lacks-{abi}: unconfined, the call did not return ({describe_exit(returncode)})")


def foreign_abi_verdict(abi, probe, returncode, stdout):
    """What the sandboxed call must do on this host: never return; and if
    the host runs the ABI, die by SIGSYS (the seccomp filter kills every
    non-x86-64 call). Returns None when that holds, else what went wrong."""
    words = stdout.split()
    if "calling" not in words:
        return f"the sandboxed probe never reached the {abi} call ({describe_exit(returncode)})"
    if "returned" in words:
        return f"the {abi} call returned inside the sandbox ({probe.detail}): {stdout!r}"
    if probe.ok and returncode != -signal.SIGSYS:
        return f"{probe.detail}, so the sandbox must kill it by SIGSYS; it ended: {describe_exit(returncode)}"
    return None


@functools.lru_cache(maxsize=None)
def foreign_abi(abi):
    proc = subprocess.run([PYTHON, "-c", SHELLCODE, FOREIGN_ABIS[abi].hex()], capture_output=True, text=True,
                          timeout=30)
    return classify_foreign_abi(abi, proc.returncode, proc.stdout)


@functools.lru_cache(maxsize=None)
def landlock_abi():
    """The Landlock ABI version (0 if the kernel has none) and the detail."""
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))   # landlock_create_ruleset VERSION
    if abi < 0:
        return 0, f"landlock_create_ruleset(VERSION): {os.strerror(ctypes.get_errno())}"
    return abi, f"Landlock ABI {abi}"


def cgroup_version():
    """2 when /sys/fs/cgroup is a cgroup2 mount, else 1."""
    return 2 if _fstype("/sys/fs/cgroup") == "cgroup2" else 1


def _fstype(path):
    best = ("", "")
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            mountpoint, fstype = fields[4], fields[fields.index("-") + 1]
            if (path + "/").startswith(mountpoint.rstrip("/") + "/") and len(mountpoint) >= len(best[0]):
                best = (mountpoint, fstype)
    return best[1]


# Run as the probed user: can it make a cgroup with memory, pids and cpu
# limits beside its own, as the launcher does? (v2: enable the controllers
# for children of its own cgroup, mkdir, check, rmdir.)
CGROUP_V2_PROBE = """
import os, sys
own = next(l.split(":", 2)[2].strip() for l in open("/proc/self/cgroup") if l.startswith("0::"))
parent = "/sys/fs/cgroup" + ("" if own == "/" else own)
try:
    with open(parent + "/cgroup.subtree_control", "w") as f:
        f.write("+memory +pids +cpu")
    probe = parent + "/kennel-probe-%d" % os.getpid()
    os.mkdir(probe)
    try:
        ctl = open(probe + "/cgroup.controllers").read().split()
    finally:
        os.rmdir(probe)
    missing = sorted({"memory", "pids", "cpu"} - set(ctl))
    print("missing " + " ".join(missing) if missing else "ok")
except OSError as e:
    print("denied %s: %s" % (parent, e.strerror))
"""


@functools.lru_cache(maxsize=None)
def cgroup_limits(uid):
    """Can a launcher started as uid get cgroup limits on this host?"""
    if cgroup_version() == 1:
        if uid != 0:
            return Probe(False, "cgroup v1: limits need root (v1 cannot be delegated to uid %d)" % uid)
        missing = [c for c in ("memory", "pids", "cpu") if not os.path.isdir(f"/sys/fs/cgroup/{c}")]
        if missing:
            return Probe(False, f"cgroup v1 without the {', '.join(missing)} controller(s)")
        return Probe(True, "cgroup v1, as root, memory/pids/cpu mounted")
    prefix = [] if uid == 0 else [f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    cmd = (["setpriv", *prefix] if prefix else []) + [PYTHON, "-c", CGROUP_V2_PROBE]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    return Probe(out == "ok", f"cgroup v2 as uid {uid}: {out or 'probe failed'}")


@functools.lru_cache(maxsize=None)
def user_namespaces(uid):
    """Can uid make a user namespace (unshare --user), unconfined?"""
    prefix = [] if uid == 0 else ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    proc = subprocess.run(prefix + ["unshare", "--user", "true"], capture_output=True, text=True, timeout=30,
                          cwd=tempfile.gettempdir())
    if proc.returncode == 0:
        return Probe(True, f"unshare --user as uid {uid}: ok")
    return Probe(False, f"host-forbids-userns: unshare --user as uid {uid}: {proc.stderr.strip() or proc.returncode}")


@functools.lru_cache(maxsize=None)
def fuse_device(uid):
    """Can uid open /dev/fuse (the guard of a notebook directory, confine/
    guard.c)? Where no udev rule made it 0666 only root can."""
    prefix = [] if uid == 0 else ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    proc = subprocess.run(prefix + [PYTHON, "-c", "import os; os.close(os.open('/dev/fuse', os.O_RDWR))"],
                          capture_output=True, text=True, timeout=30)
    if proc.returncode == 0:
        return Probe(True, f"/dev/fuse opens for uid {uid}")
    return Probe(False, f"/dev/fuse does not open for uid {uid}: {proc.stderr.strip().splitlines()[-1:]}")


def landlock_state():
    """The state the launcher must report for Landlock on this host."""
    abi, _ = landlock_abi()
    return "active" if abi >= 6 else "degraded" if abi > 0 else "unsupported"


def interface_addresses():
    """This host's own non-loopback IPv4 addresses (`ip -j -4 addr show
    scope global`): a sandbox must have no route to them."""
    out = subprocess.run(["ip", "-j", "-4", "addr", "show", "scope", "global"], capture_output=True, text=True,
                         timeout=30).stdout
    return [a["local"] for link in json.loads(out or "[]") for a in link.get("addr_info", [])]


def lacking_layers(uid=None):
    """The degradable layers this host cannot give a launcher run as uid
    (default: this process's), each with the probe's detail: tests allow
    exactly these (and then assert their report says so), never more."""
    uid = os.geteuid() if uid is None else uid
    lacking = {}
    cgroup = cgroup_limits(uid)
    if not cgroup.ok:
        lacking["cgroup"] = cgroup.detail
    abi, detail = landlock_abi()
    if abi < 6:
        lacking["landlock"] = detail + " (< 6: no TCP rules or scoping)"
    fuse = fuse_device(uid)
    if not fuse.ok:
        lacking["guard"] = fuse.detail
    return lacking


def allow_degraded(uid=None, also=()):
    """A policy's allow_degraded for this host: `also` (what the test itself
    accepts, e.g. "quota" for a host workspace) plus what the host lacks."""
    return sorted(set(also) | set(lacking_layers(uid)))



def expected_layer_state(name, uid=None):
    """The state the launcher's report must give a layer on this host."""
    uid = os.geteuid() if uid is None else uid
    if name == "landlock":
        return landlock_state()
    if name == "cgroup" and not cgroup_limits(uid).ok:
        return "unsupported"
    return "active"


# The order in which the launcher sets the probed layers up: the first one
# a host lacks is the one a strict launch is refused for.
SETUP_ORDER = ("cgroup", "userns", "landlock")


def first_refusal(uid):
    """The layer a launch that allows no degradation is refused for on this
    host (None: the host has every layer), with the probe's detail."""
    lacking = dict(lacking_layers(uid))
    userns = user_namespaces(uid)
    if not userns.ok:
        lacking["userns"] = userns.detail
    for name in SETUP_ORDER:
        if name in lacking:
            return name, lacking[name]
    return None, "host-has-every-layer"


def gateway_config(config):
    """A test gateway's config: where this host lacks a layer for this
    user, "confine" allows exactly that layer, unless the test sets
    "confine" itself. On a host with every layer the config is left as it
    is, so the gateway's default (nothing degraded) runs."""
    lacking = lacking_layers()
    if not lacking or "confine" in config:
        return config
    return dict(config, confine={"allow_degraded": allow_degraded()})
