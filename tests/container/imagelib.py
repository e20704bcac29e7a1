"""tests/container: kennel's image (gateway/deploy/container/Containerfile)
built and run with podman as root. The host is probed first and what was
found is printed: the OCI runtime that can run a container here, the
rlimits podman may give one, the Debian 12 base (made with mmdebstrap from
the apt mirror when no registry is reachable)."""
import pathlib
import resource
import subprocess
import sys

from kennel_testlib import SRCDIR

CONTAINERFILE = pathlib.Path(SRCDIR) / "gateway" / "deploy" / "container" / "Containerfile"
BASE = "localhost/kennel-base:bookworm"
IMAGE = "localhost/kennel:test"
MIRROR = ["deb http://deb.debian.org/debian bookworm main",
          "deb http://deb.debian.org/debian bookworm-updates main",
          "deb http://deb.debian.org/debian-security bookworm-security main"]

# What kennel's sandbox needs in a container (gateway/deploy/container/README.md):
# every other capability dropped; the runtime's default seccomp profile
# (it allows the sandbox's calls once CAP_SYS_ADMIN is given); /proc
# unmasked; the host's cgroup tree writable (cgroup v1: the container's
# cgroup path in /proc/self/cgroup is the host's).
CAPS = ["CHOWN", "DAC_OVERRIDE", "SETUID", "SETGID", "SYS_ADMIN"]
UNMASK = ["--security-opt", "unmask=/proc/*"]
CGROUP = ["-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw"]


def least_privilege(caps=CAPS, unmask=True, cgroup=True):
    opts = ["--cap-drop", "ALL"] + [f"--cap-add={c}" for c in caps]
    return opts + (UNMASK if unmask else []) + (CGROUP if cgroup else [])


def run(cmd, timeout=900, check=True):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


class Podman:
    """podman with the runtime and rlimits this host allows (probed)."""

    def __init__(self):
        self.global_opts, self.run_opts = [], []
        self.ensure_base()
        self.probe()

    def cmd(self, *args):
        return ["podman", *self.global_opts, *args]

    def ensure_base(self):
        if run(["podman", "image", "exists", BASE], check=False).returncode == 0:
            print(f"probe: base image {BASE} present", file=sys.stderr)
            return
        tar = pathlib.Path("/var/tmp/kennel-base.tar")
        print(f"probe: making {BASE} with mmdebstrap from the apt mirror", file=sys.stderr)
        run(["mmdebstrap", "--variant=minbase", "--format=tar", "bookworm", str(tar), *MIRROR])
        try:
            run(["podman", "import", str(tar), BASE])
        finally:
            tar.unlink(missing_ok=True)

    def probe(self):
        """crun refuses a cgroup v1 host whose unified hierarchy holds a
        controller ("hybrid mode"): runc then. Podman gives a root
        container rlimits above the host's hard ones, which only
        CAP_SYS_RESOURCE may set: the runner's own limits then."""
        tried = []
        for global_opts in ([], ["--runtime", "runc"]):
            for run_opts in ([], self.host_rlimits()):
                done = run(["podman", *global_opts, "run", "--rm", *run_opts, BASE, "true"], check=False)
                label = " ".join(global_opts + run_opts) or "podman's defaults"
                tried.append(f"[{label}] exit {done.returncode} {done.stderr.strip()[-200:]}")
                if done.returncode == 0:
                    self.global_opts, self.run_opts = global_opts, run_opts
                    print(f"probe: podman runs a container with {label}; tried " + " | ".join(tried),
                          file=sys.stderr)
                    return
        raise RuntimeError("podman cannot run a container here:\n" + "\n".join(tried))

    @staticmethod
    def host_rlimits():
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        # conmon's own process limit here: 32768
        nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[0], 32768)
        return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]

    def build(self):
        run(self.cmd("build", "--network=host", "--build-arg", f"BASE={BASE}", "-f", str(CONTAINERFILE),
                     "-t", IMAGE, str(SRCDIR)), timeout=1800)

    def start(self, name, opts, env, args=()):
        run(self.cmd("rm", "-f", name), check=False)
        env_opts = [f"--env={k}={v}" for k, v in env.items()]
        run(self.cmd("run", "-d", "--name", name, "--network=host", *self.run_opts, *opts, *env_opts, IMAGE, *args))

    def stop(self, name):
        run(self.cmd("rm", "-f", "-t", "10", name), check=False)

    def once(self, name, opts, env, timeout=120):
        """The image's entrypoint run to its end (a refusal): (exit, stderr)."""
        env_opts = [f"--env={k}={v}" for k, v in env.items()]
        try:
            done = run(self.cmd("run", "--rm", "--name", name, "--network=host", *self.run_opts, *opts,
                                *env_opts, IMAGE), timeout=timeout, check=False)
        finally:
            self.stop(name)
        return done.returncode, done.stderr
