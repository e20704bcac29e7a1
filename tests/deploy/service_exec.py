#!/usr/bin/python3
"""Runs a command as systemd would run a service with some of its sandboxing
properties, on a host where systemd is not PID 1 (this one: `systemd-run`
needs a running manager).

    service_exec.py 'PROPERTIES (JSON)' -- PROGRAM [ARGS...]

Each property is emulated with the kernel mechanism systemd uses for it
(systemd.exec(5); systemd 252's src/core/namespace.c and
src/shared/seccomp-util.c), in systemd's order: the mount namespace, the
user namespace, rlimits, the bounding set, no_new_privs, seccomp last. What
is emulated (PROPERTIES keys; values as in a unit file):

  ProtectSystem "strict"      every mount read-only but /dev, /proc, /sys
  ReadWritePaths [paths]      bound read-write again on top of that
  ProtectHome true            /home, /root, /run/user inaccessible
  PrivateTmp true             fresh tmpfs on /tmp and /var/tmp
  PrivateDevices true         /dev a tmpfs with null zero full random urandom tty, shm, pts
  ProtectKernelTunables true  /proc/sys, /proc/sysrq-trigger, ... and /sys (but /sys/fs/cgroup) read-only
  ProtectKernelModules true   /usr/lib/modules inaccessible
  ProtectKernelLogs true      /proc/kmsg and /dev/kmsg inaccessible
  ProtectControlGroups true   /sys/fs/cgroup read-only
  ProtectProc "invisible"     /proc a new instance with hidepid=invisible
  ProcSubset "pid"            /proc a new instance with subset=pid
  PrivateUsers true           a user namespace mapping only the caller's uid and gid
  PrivateNetwork true         a network namespace with only lo, up
  LimitNOFILE n
  UMask "0077"
  CapabilityBoundingSet [CAP_X, ...]
  NoNewPrivileges true
  SystemCallFilter [names or @groups]     allow-list (a leading "~": deny-list);
                                          groups from `systemd-analyze syscall-filter`
  SystemCallErrorNumber "EPERM"           the filter's action (default: kill, SIGSYS)
  RestrictNamespaces true     clone/unshare with CLONE_NEW* and setns: EPERM; clone3: ENOSYS
  ProtectHostname true        a UTS namespace; sethostname, setdomainname: EPERM
  ProtectClock true           @clock: EPERM
  RestrictAddressFamilies [AF_X, ...]     socket() of any other family: EAFNOSUPPORT
  RestrictRealtime true       sched_setscheduler to SCHED_FIFO/RR: EPERM
  RestrictSUIDSGID true       chmod/fchmod/fchmodat with S_ISUID/S_ISGID: EPERM
  SystemCallArchitectures "native"        other ABIs killed (every filter here does)

Run as root (it makes mounts and namespaces)."""
import ctypes
import ctypes.util
import errno
import json
import os
import resource
import socket
import subprocess
import sys

LIBC = ctypes.CDLL(None, use_errno=True)
MS_BIND = 0x1000
MS_REC = 0x4000
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x04000000, 0x10000000, 0x40000000
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
NAMESPACE_FLAGS = [0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080]
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24
CAP_LAST = 40
CAPS = ["chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid", "setpcap",
        "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw", "ipc_lock", "ipc_owner",
        "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct", "sys_admin", "sys_boot", "sys_nice",
        "sys_resource", "sys_time", "sys_tty_config", "mknod", "lease", "audit_write", "audit_control", "setfcap",
        "mac_override", "mac_admin", "syslog", "wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf",
        "checkpoint_restore"]


def check(rc, what):
    if rc != 0:
        err = ctypes.get_errno()
        sys.exit(f"service_exec: {what}: {os.strerror(err)}")


def mount(*args):
    subprocess.run(["mount", *args], check=True)


def mounts():
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f]


def under(path, roots):
    return any(path == r or path.startswith(r + "/") for r in roots)


def inaccessible(path):
    if os.path.isdir(path):
        mount("-t", "tmpfs", "-o", "mode=000,size=4k", "tmpfs", path)
    elif os.path.exists(path):
        mount("--bind", "/dev/null", path)
        mount("-o", "remount,bind,ro", path)


def read_only(path, keep=()):
    """path and every mount below it read-only, but those under keep (as
    systemd's READWRITE_IMPLICIT entries: left as they are)."""
    if os.path.exists(path):
        mount("--rbind", path, path)
        for mp in mounts():
            if under(mp, [path]) and not under(mp, keep):
                subprocess.run(["mount", "-o", "remount,bind,ro", mp], check=False)


def private_devices():
    nodes = ["null", "zero", "full", "random", "urandom", "tty"]
    os.makedirs("/run/service_exec_dev", exist_ok=True)
    mount("-t", "tmpfs", "-o", "mode=755,nosuid", "tmpfs", "/run/service_exec_dev")
    for n in nodes:
        open(f"/run/service_exec_dev/{n}", "w").close()
        mount("--bind", f"/dev/{n}", f"/run/service_exec_dev/{n}")
    for d in ["shm", "pts"]:
        os.mkdir(f"/run/service_exec_dev/{d}")
    mount("-t", "tmpfs", "-o", "mode=1777,nosuid,nodev", "tmpfs", "/run/service_exec_dev/shm")
    for name, target in [("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2"), ("ptmx", "pts/ptmx")]:
        os.symlink(target, f"/run/service_exec_dev/{name}")
    mount("--move", "/run/service_exec_dev", "/dev")


def tree_under_test():
    """The source and build trees the test runs from, and the copy of the
    build's programs made where other users cannot enter the trees
    (kennel_testlib's KENNEL_PROGRAMS): a service's binaries are installed
    under /usr, these may stand under /tmp (a clone there)."""
    return [os.path.realpath(os.environ[v]) for v in ("KENNEL_BUILDDIR", "KENNEL_SRCDIR", "KENNEL_PROGRAMS")
            if v in os.environ]


def private_tmp(keep):
    """A fresh /tmp and /var/tmp as PrivateTmp gives, with the trees in keep
    that stood under them bound back at their paths (held by an O_PATH fd
    across the tmpfs mount, then bound from /proc/self/fd by mount(2):
    mount(8) would resolve the fd's link to the path, now the new /tmp's)."""
    held = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path in keep if under(path, ["/tmp", "/var/tmp"])]
    for d in ["/tmp", "/var/tmp"]:
        mount("-t", "tmpfs", "-o", "mode=1777,nosuid,nodev", "tmpfs", d)
    for path, fd in held:
        os.makedirs(path, exist_ok=True)
        check(LIBC.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND | MS_REC, None),
              f"bind {path} back over the private /tmp")
        os.close(fd)


def apply_mounts(p):
    check(LIBC.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    mount("--make-rprivate", "/")
    if p.get("PrivateTmp"):
        private_tmp(tree_under_test())
    if p.get("PrivateDevices"):
        private_devices()
    if p.get("ProtectSystem") == "strict":
        # PrivateTmp's /tmp and /var/tmp stay writable, as under systemd
        writable = ["/dev", "/proc", "/sys"] + (["/tmp", "/var/tmp"] if p.get("PrivateTmp") else [])
        for mp in sorted(set(mounts())):
            if not under(mp, writable):
                # mounts of other processes' (removed) directories fail: no matter
                subprocess.run(["mount", "-o", "remount,bind,ro", mp], check=False, stderr=subprocess.DEVNULL)
    if p.get("ProtectHome"):
        for d in ["/home", "/root", "/run/user"]:
            inaccessible(d)
    # systemd sorts its mount entries by path: a new /proc comes before the
    # entries below it, which are skipped when their path does not exist
    proc_options = []
    if p.get("ProtectProc") == "invisible":
        proc_options.append("hidepid=invisible")
    if p.get("ProcSubset") == "pid":
        proc_options.append("subset=pid")
    if proc_options:
        mount("-t", "proc", "-o", ",".join(proc_options), "proc", "/proc")
    if p.get("ProtectKernelTunables"):
        for path in ["/proc/acpi", "/proc/apm", "/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq",
                     "/proc/latency_stats", "/proc/mtrr", "/proc/scsi", "/proc/sys", "/proc/sysrq-trigger",
                     "/proc/timer_list", "/sys"]:
            read_only(path, keep=["/sys/fs/cgroup", "/sys/fs/selinux"])
        for path in ["/proc/kallsyms", "/proc/kcore"]:
            inaccessible(path)
    if p.get("ProtectKernelModules"):
        for d in ["/usr/lib/modules", "/lib/modules"]:
            if os.path.isdir(d) and not os.path.islink(d):
                inaccessible(d)
    if p.get("ProtectKernelLogs"):
        inaccessible("/proc/kmsg")
        inaccessible("/dev/kmsg")
    if p.get("ProtectControlGroups"):
        read_only("/sys/fs/cgroup")
    for path in p.get("ReadWritePaths", []):
        mount("--bind", path, path)
        mount("-o", "remount,bind,rw", path)


def apply_user_namespace():
    uid, gid = os.getuid(), os.getgid()
    check(LIBC.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1\n")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1\n")


def set_nofile(n):
    """As systemd sets it; raising the hard limit needs CAP_SYS_RESOURCE,
    which some hosts (this VM's agent, containers) do not give even to
    root: then the hard limit it has, said on stderr."""
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    except ValueError:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        print(f"service_exec: LimitNOFILE={n} needs CAP_SYS_RESOURCE to raise the hard limit; using {hard}",
              file=sys.stderr)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), min(n, hard)))


def drop_bounding_set(keep):
    keep = {c.lower().removeprefix("cap_") for c in keep}
    for number, name in enumerate(CAPS[:CAP_LAST + 1]):
        if name not in keep:
            LIBC.prctl(PR_CAPBSET_DROP, number, 0, 0, 0)


# ---- seccomp through libseccomp ------------------------------------------------

class ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


SCMP_ACT_ALLOW, SCMP_ACT_KILL_PROCESS = 0x7FFF0000, 0x80000000
CMP_EQ, CMP_MASKED_EQ = 4, 7


def act_errno(e):
    return 0x00050000 | (e & 0xFFFF)


class Filter:
    def __init__(self, default):
        self.lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2")
        self.lib.seccomp_init.restype = ctypes.c_void_p
        self.lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        self.lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                                    ctypes.POINTER(ArgCmp)]
        self.lib.seccomp_load.argtypes = [ctypes.c_void_p]
        self.ctx = self.lib.seccomp_init(default)
        self.default = default

    def rule(self, action, name, *cmps):
        nr = self.lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0 or action == self.default:
            return  # not on this architecture, or nothing to say
        array = (ArgCmp * max(1, len(cmps)))(*[ArgCmp(*c) for c in cmps])
        rc = self.lib.seccomp_rule_add_array(self.ctx, action, nr, len(cmps), array)
        if rc < 0:
            sys.exit(f"service_exec: seccomp rule for {name}: {os.strerror(-rc)}")

    def load(self):
        rc = self.lib.seccomp_load(self.ctx)
        if rc < 0:
            sys.exit(f"service_exec: seccomp_load: {os.strerror(-rc)}")


def syscall_groups():
    """{"@group": [names and @groups]} as this host's systemd defines them."""
    out = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True, check=True).stdout
    groups, current = {}, None
    for line in out.splitlines():
        text = line.strip()
        if line.startswith("@"):
            current = groups.setdefault(text, [])
        elif text and not text.startswith("#") and current is not None:
            current.append(text)
    return groups


def expand(names, groups):
    out = set()
    for name in names:
        out |= expand(groups.get(name, []), groups) if name.startswith("@") else {name}
    return out


def apply_seccomp(p):
    # the filters that block most go in last: an earlier one could block
    # seccomp() itself
    filters = []
    listed = p.get("SystemCallFilter")
    if listed:
        groups = syscall_groups()
        fail = act_errno(getattr(errno, p["SystemCallErrorNumber"])) if "SystemCallErrorNumber" in p \
            else SCMP_ACT_KILL_PROCESS
        if listed[0].startswith("~"):
            f = Filter(SCMP_ACT_ALLOW)
            for name in expand([listed[0][1:]] + listed[1:], groups):
                f.rule(fail, name)
        else:
            f = Filter(fail)
            for name in expand(listed, groups):
                f.rule(SCMP_ACT_ALLOW, name)
        filters.append(f)
    f = Filter(SCMP_ACT_ALLOW)
    if p.get("RestrictNamespaces"):
        for name in ["clone", "unshare"]:
            for flag in NAMESPACE_FLAGS:
                f.rule(act_errno(errno.EPERM), name, (0, CMP_MASKED_EQ, flag, flag))
        f.rule(act_errno(errno.EPERM), "setns")
        f.rule(act_errno(errno.ENOSYS), "clone3")
    if p.get("ProtectHostname"):
        f.rule(act_errno(errno.EPERM), "sethostname")
        f.rule(act_errno(errno.EPERM), "setdomainname")
    if p.get("ProtectClock"):
        for name in expand(["@clock"], syscall_groups()):
            f.rule(act_errno(errno.EPERM), name)
    if p.get("RestrictAddressFamilies"):
        allowed = {getattr(socket, fam) for fam in p["RestrictAddressFamilies"]}
        for fam in range(1, 46):
            if fam not in allowed:
                f.rule(act_errno(errno.EAFNOSUPPORT), "socket", (0, CMP_EQ, fam, 0))
    if p.get("RestrictRealtime"):
        for policy in [1, 2, 6]:  # SCHED_FIFO, SCHED_RR, SCHED_DEADLINE
            f.rule(act_errno(errno.EPERM), "sched_setscheduler", (1, CMP_EQ, policy, 0))
    if p.get("RestrictSUIDSGID"):
        for name, arg in [("chmod", 1), ("fchmod", 1), ("fchmodat", 2)]:
            for bit in [0o4000, 0o2000]:
                f.rule(act_errno(errno.EPERM), name, (arg, CMP_MASKED_EQ, bit, bit))
    filters.append(f)
    for one in reversed(filters):
        one.load()


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    p = json.loads(sys.argv[1])
    argv = sys.argv[3:]
    apply_mounts(p)
    if p.get("ProtectHostname"):
        check(LIBC.unshare(CLONE_NEWUTS), "unshare(CLONE_NEWUTS)")
    if p.get("PrivateNetwork"):
        check(LIBC.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    if p.get("PrivateUsers"):
        apply_user_namespace()
    if "LimitNOFILE" in p:
        set_nofile(p["LimitNOFILE"])
    if "UMask" in p:
        os.umask(int(p["UMask"], 8))
    if "CapabilityBoundingSet" in p:
        drop_bounding_set(p["CapabilityBoundingSet"])
    if p.get("NoNewPrivileges"):
        check(LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    apply_seccomp(p)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
