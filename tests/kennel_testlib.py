"""What every test folder needs, in one place: where the built programs
are, the host module, waiting with a deadline, running as another uid,
starting `kennel serve`, its signed control client, jupyter_client clients
on a conversation and collecting what an execute produced, and /proc.

At the top of tests/ beside hostprobe.py and imported the same way (the
top conftest.py puts this folder on sys.path; tests/bench/benchlib.py adds
it itself). A module of its own name, not conftest.py: each folder runs in
its own pytest process with its own conftest.py, and those must not see
each other's. What only one folder needs stays in that folder's module
(gateway/gwtest.py, security/sandboxlib.py, kernel/kernelclient.py,
tools/toolhost.py, bench/benchlib.py)."""
import atexit
import json
import os
import pathlib
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import zmq
import zmq.asyncio
from jupyter_client import BlockingKernelClient
from jupyter_client.session import Session

from hostprobe import NOBODY  # the unprivileged uid tests run programs as

SRCDIR = pathlib.Path(os.environ.get("KENNEL_SRCDIR", pathlib.Path(__file__).resolve().parent.parent))
BUILDDIR = pathlib.Path(os.environ.get("KENNEL_BUILDDIR", SRCDIR / "build" / "check"))


# ---- what another uid runs ---------------------------------------------------------

def reaches(uid, path):
    """Whether uid (its own group, no others: setpriv/become) can traverse
    every directory from / down to path, by the mode bits (no ACLs here)."""
    path = pathlib.Path(path).resolve()
    for d in [*reversed(path.parents), path]:
        st = os.stat(d)
        if not stat.S_ISDIR(st.st_mode):
            continue
        bit = stat.S_IXUSR if st.st_uid == uid else stat.S_IXGRP if st.st_gid == uid else stat.S_IXOTH
        if not st.st_mode & bit:
            return False
    return True


def _stage_dir():
    """The 0755 directory under /tmp that holds copies of what another uid
    runs, for a clone that stands where other users cannot enter (root's
    0700 home, where a newcomer clones first): made at first need, removed
    at exit. The binaries find each other from /proc/self/exe, so a copy
    with the build tree's layout runs as the build does."""
    global _STAGE
    if _STAGE is None:
        _STAGE = pathlib.Path(tempfile.mkdtemp(prefix="kennel-programs-"))
        os.chmod(_STAGE, 0o755)
        os.environ["KENNEL_PROGRAMS"] = str(_STAGE)  # kept visible by tests/deploy/service_exec.py
        atexit.register(shutil.rmtree, _STAGE, True)
    return _STAGE


_STAGE = None
TREES_REACHABLE = reaches(NOBODY, BUILDDIR) and reaches(NOBODY, SRCDIR)


def _staged(source, relpath):
    """source as NOBODY reaches it: itself, or its copy at
    STAGE/relpath (copied once per process, mode and times kept)."""
    if TREES_REACHABLE:
        return source
    target = _stage_dir() / relpath
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(target.parent, 0o755)
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)
    return target


# programs that find each other beside themselves (kennel its launcher,
# kennel-launch kennel-launch-full): staged together
SIBLINGS = ("gateway/kennel", "kernel-launcher/kennel-launch", "kernel-launcher/kennel-launch-full")
LSAN_SUPPRESSIONS = _staged(SRCDIR / "tests" / "lsan.supp", "tests/lsan.supp")

# the host module from the source tree (what `make install` installs): how
# a client reaches a connection info's sockets (ipc, or tcp with CURVE keys).
# HOST_MODULE_DIR is the copy another uid can import, where the tree is
# out of its reach.
sys.path.insert(0, str(SRCDIR / "gateway" / "python"))
import kennel  # noqa: E402
HOST_MODULE_DIR = _staged(SRCDIR / "gateway" / "python", "python")


def built(relpath):
    """Path of a program built by make, where every uid a test runs as
    can execute it (the build tree, or its staged copy): a missing one is a
    build bug, never a reason to skip or pass."""
    path = BUILDDIR / relpath
    if not path.exists():
        raise FileNotFoundError(f"{path} not built: run make in {BUILDDIR}")
    if relpath in SIBLINGS:
        for sibling in SIBLINGS:
            if (BUILDDIR / sibling).exists():
                _staged(BUILDDIR / sibling, sibling)
    return _staged(path, relpath)


# ---- waiting -------------------------------------------------------------------

def wait_until(predicate, timeout, what="the condition", interval=0.05):
    """predicate()'s first true value, polled every interval seconds; raises
    TimeoutError naming `what` (a string, or a callable giving one at the
    deadline) when timeout seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout} s: {what() if callable(what) else what}")
        time.sleep(interval)


def alive(pid):
    """Whether pid exists (as a process or an unreaped zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def gone(pid, timeout=5.0):
    """True once pid no longer exists (killed and reaped) within timeout."""
    try:
        return wait_until(lambda: not alive(pid), timeout, interval=0.02)
    except TimeoutError:
        return False


# ---- other uids ----------------------------------------------------------------

def setpriv(uid):
    """argv prefix that runs a command as uid (its own group, no others)."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


def become(uid):
    """In a child before exec (preexec_fn): drop to uid, group uid, no others."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def private_etc(workdir, files):
    """A command prefix (root only) that runs the rest of its argv in a mount
    namespace of its own where /etc is an overlay on the host's /etc, with
    files ({name in /etc: text, or None to hide it}) in its upper layer. The
    host's /etc is never written: the upper layer is a tmpfs mounted on
    workdir (an empty directory) in that namespace alone."""
    w = shlex.quote(str(workdir))
    # the merged /etc takes its mode from the upper directory: 0755 as /etc
    lines = ["umask 022", f"mount -t tmpfs -o mode=0700 kennel-etc {w}", f"mkdir {w}/upper {w}/work",
             f"mount -t overlay -o lowerdir=/etc,upperdir={w}/upper,workdir={w}/work kennel-etc /etc"]
    for name, text in files.items():
        path = shlex.quote(f"/etc/{name}")
        lines.append(f"rm -f {path}" if text is None else f"printf %s {shlex.quote(text)} > {path}")
    return ["unshare", "--mount", "--propagation", "private", "sh", "-ec", "\n".join(lines) + '\nexec "$@"', "sh"]


def traversable_dir(prefix, mode=0o711):
    """A fresh directory under /tmp, not pytest's 0700 tmp dirs: a confined
    kernel's host uid must traverse a state dir to its workspace."""
    path = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(path, mode)
    return path


# ---- the kernel's side of a race ---------------------------------------------------

def kernel_swap(name, target):
    """Kernel code: a thread swapping /workspace/<name> for a symlink to
    target and back, until /workspace/stop exists: the check-then-use race
    the file tests run the gateway's requests against."""
    w = f"/workspace/{name}"
    return f"""
import os, threading
def swap():
    while not os.path.exists('/workspace/stop'):
        try:
            os.rename({w!r}, '/workspace/keep'); os.symlink({str(target)!r}, {w!r})
            os.rename({w!r}, '/workspace/gone'); os.rename('/workspace/keep', {w!r})
        except OSError:
            continue  # the host's request moved or removed it first: swap again
threading.Thread(target=swap, daemon=True).start()
"""


# ---- kernelspec mode ---------------------------------------------------------------

def launcher():
    """The real, confining kennel-launch of this build by default (what the
    gateway runs in production); KENNEL_TEST_LAUNCHER=dev selects the
    unconfined dev_launch.py (ipykernel), any other value is a path."""
    chosen = os.environ.get("KENNEL_TEST_LAUNCHER")
    if chosen == "dev":
        return str(SRCDIR / "tests" / "gateway" / "dev_launch.py")
    return chosen or str(built("kernel-launcher/kennel-launch"))


def install_kernelspec(prefix, extra=(), defaults=None):
    """Installs the real kernelspec with install-kernelspec under prefix and
    points its kennel.conf at the test launcher (the only change; `defaults`
    are merged into the file's, and where this host lacks a layer it is
    allowed as gateway_config does). Returns the JUPYTER_PATH entry."""
    import hostprobe
    out = subprocess.run([str(built("gateway/kennel")), "install-kernelspec", "--prefix", str(prefix), *extra],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    spec_dir = pathlib.Path(prefix) / "share" / "jupyter" / "kernels" / "kennel"
    conf_file = spec_dir / "kennel.conf"
    conf = json.loads(conf_file.read_text())
    conf["launcher"] = launcher()
    conf["defaults"].update(defaults or {})
    conf_file.write_text(json.dumps(hostprobe.gateway_config(conf)))
    return str(pathlib.Path(prefix) / "share" / "jupyter")


def person_owns(path):
    """path made a person's, as a notebook directory is: started by root,
    kennel refuses one of root's (the sandbox never runs as host root), so
    it goes to NOBODY and the sandbox runs as that uid; otherwise it stays
    the caller's own. Returns path."""
    import hostprobe
    if os.geteuid() == 0:
        os.chown(path, hostprobe.NOBODY, hostprobe.NOBODY)
    return path


def notebook_dir(prefix):
    """A fresh directory for notebooks, a person's (person_owns)."""
    return person_owns(traversable_dir(prefix, 0o755))


# ---- kennel serve ----------------------------------------------------------------

def serve(state, config_file, log_file, conn_file=None, args=(), binary=None, prefix=(), timeout=20,
          interval=0.02, **popen):
    """Starts `kennel serve` (prefix: e.g. setpriv(uid); popen: Popen's
    keywords) and returns the process once its connection file exists
    (conn_file, or the daemon's default in state; looked for every interval
    seconds). Raises RuntimeError with the log when the daemon exits or the
    timeout passes first."""
    cmd = list(prefix) + [str(binary or built("gateway/kennel")), "serve", "--state-dir", str(state)]
    if conn_file is not None:
        cmd += ["--connection-file", str(conn_file)]
    cmd += ["--config", str(config_file), "--log-file", str(log_file), *args]
    ready = pathlib.Path(conn_file if conn_file is not None else pathlib.Path(state) / "gateway.json")
    proc = subprocess.Popen(cmd, **popen)
    try:
        wait_until(lambda: ready.exists() or proc.poll() is not None, timeout, interval=interval)
    except TimeoutError:
        pass
    if not ready.exists():
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        log = pathlib.Path(log_file)
        raise RuntimeError(f"kennel serve did not start (exit status {proc.returncode}); log: "
                           f"{log.read_text(errors='replace') if log.exists() else '(none)'}")
    return proc


def connect(info, port_field, socket_type, context=None):
    """A pyzmq socket connected to one socket of a connection info as a
    client would (ipc, or tcp with the info's CURVE keys); a blocking socket
    unless context is an asyncio one."""
    sock = kennel.client_context(info, context or zmq.Context.instance()).socket(socket_type)
    sock.linger = 0
    sock.connect(kennel.endpoint(info, port_field))
    return sock


class Control:
    """A signed client of the gateway's control socket (jupyter_client's
    Session over a pyzmq DEALER), one request at a time."""

    def __init__(self, connection_file):
        info = json.loads(pathlib.Path(connection_file).read_text())
        self.info = info
        self.session = Session(key=info["key"].encode(), signature_scheme=info["signature_scheme"])
        self.sock = connect(info, "control_port", zmq.DEALER)

    def request(self, msg_type, content=None, timeout=30, buffers=None):
        """The whole reply message to one request (buffers: raw frames
        sent after content; the reply's are in reply["buffers"])."""
        msg = self.session.send(self.sock, msg_type, content or {}, buffers=buffers)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.sock.poll(100):
                _, frames = self.session.feed_identities(self.sock.recv_multipart())
                reply = self.session.deserialize(frames)
                if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                    return reply
        raise TimeoutError(f"no reply to {msg_type} within {timeout} s")

    def open(self, conversation_id, **content):
        """conversation_open_request's reply content (status ok or error)."""
        reply = self.request("conversation_open_request", dict(conversation_id=conversation_id, **content))
        return reply["content"]

    def close(self):
        self.sock.close(0)


def kernel_client(connection):
    """A started, ready BlockingKernelClient on a conversation's connection
    info (one shared asyncio context: not a context per client)."""
    kc = BlockingKernelClient(context=kennel.client_context(connection))
    kc.load_connection_info(connection)
    kc.start_channels()
    kc.wait_for_ready(timeout=30)
    return kc


# ---- executing with jupyter_client -----------------------------------------------

def first_reply(get, msg_id, timeout=30):
    """The first message from get (a client's get_shell_msg,
    get_control_msg, ...) that answers msg_id; queue.Empty at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        msg = get(timeout=max(0.01, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def iopub_until_idle(kc, msg_id, timeout=30):
    """The iopub messages of one request from busy to idle (both excluded)."""
    deadline = time.monotonic() + timeout
    outputs = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no idle for %s; got %r" % (msg_id, outputs))
        msg = kc.get_iopub_msg(timeout=remaining)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status":
            if msg["content"]["execution_state"] == "idle":
                return outputs
            continue
        outputs.append(msg)


def execute(kc, code, timeout=30, **kw):
    """Runs code; returns (reply, outputs) where outputs are the iopub messages
    of this request between busy and idle (execute_input excluded)."""
    msg_id = kc.execute(code, **kw)
    deadline = time.monotonic() + timeout
    outputs = iopub_until_idle(kc, msg_id, timeout)
    reply = first_reply(kc.get_shell_msg, msg_id, max(1, deadline - time.monotonic()))
    return reply, [m for m in outputs if m["msg_type"] != "execute_input"]


def stream_text(outputs, name="stdout"):
    """The text of the stream messages of one stream among outputs."""
    return "".join(m["content"]["text"] for m in outputs
                   if m["msg_type"] == "stream" and m["content"]["name"] == name)


def stdout_of(outputs):
    return stream_text(outputs, "stdout")


# ---- /proc ---------------------------------------------------------------------

def pids():
    """The pids now in this pid namespace's /proc."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def cmdline(pid):
    """/proc/pid/cmdline as bytes (NUL-separated), or None once pid is gone
    or unreadable."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return None


def cpu_seconds(pid):
    """utime + stime of one process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_map():
    """ppid -> [pid] for every process now."""
    kids = {}
    for pid in pids():
        try:
            with open(f"/proc/{pid}/stat") as f:
                line = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        ppid = int(line[line.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(pid)
    return kids


def descendants(pid, kids=None):
    """pid and every process below it."""
    kids = kids if kids is not None else children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, ()))
    return out


def json_log(path):
    """The JSON lines of a daemon's log file ([] before it exists)."""
    try:
        return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return []


def mounts_below(path):
    """The mount points under path in this mount namespace, sorted."""
    prefix = str(path) + "/"
    with open("/proc/self/mountinfo") as f:
        return sorted(line.split()[4] for line in f if line.split()[4].startswith(prefix))


def in_namespace_of(pid, path):
    """path as process pid sees it: through /proc/PID/root, whose walk
    follows that process's mount namespace (nsenter -t PID -m's view; root,
    or pid's own uid). A gateway's workspaces are tmpfs mounts in its own
    namespace: at their path on the host is the empty directory below."""
    return pathlib.Path(f"/proc/{pid}/root") / str(path).lstrip("/")


def mount_namespace(pid):
    """The mount namespace process pid ("self" too) is in, as its /proc
    link reads (mnt:[N]), or None once the process is gone."""
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def processes_in(namespace):
    """The pids in a mount namespace: it, and every mount in it, ends when
    the last one has left."""
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and mount_namespace(p) == namespace]


def unmount_below(path):
    """What a daemon killed without its clean stop left mounted under its
    state dir (a root gateway's tmpfs workspaces and run dirs)."""
    for point in reversed(mounts_below(path)):
        subprocess.run(["umount", "-l", point], check=False)


def remove_state(path):
    """Removes a daemon's state dir once it has stopped, unmounting first
    what a root gateway killed without its clean stop left there: rmtree
    alone empties the tmpfs workspaces but leaves each mounted, and the
    host's mount table grows with every killed gateway."""
    unmount_below(path)
    shutil.rmtree(path, ignore_errors=True)


# ---- the HTTP front --------------------------------------------------------------

class HttpGateway:
    """`kennel serve --http 127.0.0.1:0` with the build's confining launcher:
    url (http://127.0.0.1:PORT/, https with TLS), token (None when the
    config says "anonymous"), the connection file's content as info.
    Unpacks as (url, token). stop() ends it with SIGTERM and returns the
    exit status (0 expected: a sanitizer build exits non-zero on a leak).
    user: run it as that uid (its state dir and directory made its own, the
    layers the host cannot give that uid allowed to degrade)."""

    def __init__(self, directory, config=None, http=None, env=None, listen="127.0.0.1:0", args=(), user=None):
        import hostprobe
        self.dir = pathlib.Path(directory)
        self.state = traversable_dir("kennel-http-test-")
        popen = {}
        if user is not None:
            for path in (self.state, self.dir):
                os.chown(path, user, user)
            popen["preexec_fn"] = lambda: become(user)
            config = dict(config or {}, confine={"allow_degraded": hostprobe.allow_degraded(user)})
        self.conn_file = self.dir / "gateway.json"
        self.log_file = self.dir / "gateway.log"
        cfg = {"launcher": str(built("kernel-launcher/kennel-launch")), "idle_check_interval": 0.2,
               "interrupt_grace": 1}
        cfg.update(config or {})
        if http is not None:
            cfg["http"] = http
        self.config_file = self.dir / "config.json"
        self.config_file.write_text(json.dumps(hostprobe.gateway_config(cfg)))
        base = {k: v for k, v in os.environ.items() if k not in ("KENNEL_AUTH_TOKEN", "KG_AUTH_TOKEN")}
        full_env = dict(base, ASAN_OPTIONS="detect_leaks=1:halt_on_error=1",
                        LSAN_OPTIONS=f"suppressions={LSAN_SUPPRESSIONS}")
        full_env.update(env or {})
        self.proc = serve(self.state, self.config_file, self.log_file, self.conn_file,
                          (["--http", listen] if listen else []) + list(args), env=full_env, **popen)
        self.info = json.loads(self.conn_file.read_text())
        self.url = self.info["http_url"]
        self.token = self.info.get("http_token") or (env or {}).get("KENNEL_AUTH_TOKEN") \
            or (env or {}).get("KG_AUTH_TOKEN") or (http or {}).get("token")
        self.certfile = (http or {}).get("certfile")  # TLS: the CA a client trusts

    def __iter__(self):
        return iter((self.url, self.token))

    def log(self):
        return json_log(self.log_file)

    def events(self, name):
        return [e for e in self.log() if e["event"] == name]

    def wait_ready(self, timeout=30):
        """Until GET /api/kernelspecs answers 200 (smolagents' readiness
        poll): a kernel can be started."""
        import ssl
        import urllib.request
        context = ssl.create_default_context(cafile=self.certfile) if self.certfile else None

        def ready():
            req = urllib.request.Request(self.url + "api/kernelspecs",
                                         headers={"Authorization": f"token {self.token}"} if self.token else {})
            try:
                with urllib.request.urlopen(req, timeout=5, context=context) as r:
                    return r.status == 200
            except Exception:
                return False
        return wait_until(ready, timeout, "GET /api/kernelspecs answering 200")

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout)
        remove_state(self.state)
        return rc
