"""Building blocks of the side-by-side benchmark (bench.py): a kennel daemon
and its control socket, stock ipykernels started by jupyter_client, the one
client code both are driven with, and /proc readings (PSS, free memory).

Both kernels are driven by the same code: jupyter_client's BlockingKernelClient
(AsyncKernelClient for throughput) on one shared zmq.asyncio context."""
import asyncio
import json
import os
import pathlib
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from queue import Empty

import zmq
import zmq.asyncio
from jupyter_client import AsyncKernelClient, BlockingKernelClient, KernelManager
from jupyter_client.session import Session

# tests/ (kennel_testlib: the host module, /proc readings, starting kennel serve)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from kennel_testlib import children_map, connect, cpu_seconds, descendants, kennel, serve, traversable_dir  # noqa: E402,F401

# One event loop and one context for every client of the run: a context per
# client (jupyter_client's default) would start an I/O thread per client and
# the default 1,023-socket cap would end the scale ramp, not the kernels.
LOOP = asyncio.new_event_loop()
asyncio.set_event_loop(LOOP)
CTX = zmq.asyncio.Context()
CTX.set(zmq.MAX_SOCKETS, 65536)


def raise_fd_limit():
    """The driver holds two sockets per client: lift the soft fd limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ---- statistics ------------------------------------------------------------

def percentile(samples, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), int(-(-p * len(ordered) // 100))))
    return ordered[rank - 1]


def summary(samples, scale=1000.0):
    """median, p99, min, max and n of samples in seconds, scaled (ms by default)."""
    if not samples:
        return None
    return {"median": percentile(samples, 50) * scale, "p99": percentile(samples, 99) * scale,
            "min": min(samples) * scale, "max": max(samples) * scale, "n": len(samples)}


# ---- /proc -------------------------------------------------------------------

def pss_kb(pid):
    """Proportional set size of one process in kB (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def mem_available_mb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return 0


# ---- clients (the same code for both kernels) ----------------------------------

def client(connection, stdin=False, ready=None):
    """A BlockingKernelClient on connection info (shell + iopub, stdin on
    request). No heartbeat thread: it measures nothing and would cost one
    thread per conversation in the scale ramp. ready: seconds to wait until
    its iopub subscription is live (see wait_ready); None: no wait."""
    kc = BlockingKernelClient(context=kennel.client_context(connection, CTX))
    kc.load_connection_info(connection)
    kc.start_channels(shell=True, iopub=True, stdin=stdin, hb=False, control=False)
    if ready is not None:
        try:
            wait_ready(kc, ready)
        except BaseException:
            kc.stop_channels()
            raise
    return kc


async def _ready(kc, timeout):
    """kernel_info_request until one is answered on shell AND its status
    arrives on iopub: a SUB that has just connected misses what is published
    before its subscription reaches the publisher, so a first execute could
    lose its idle (jupyter_client's wait_for_ready nudges the same way)."""
    deadline = time.perf_counter() + timeout
    while True:
        msg_id = kc.kernel_info()
        try:
            while True:
                reply = await kc.shell_channel.get_msg(timeout=min(1.0, _left(deadline)))
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
            while True:
                msg = await kc.iopub_channel.get_msg(timeout=min(0.2, _left(deadline)))
                if msg["parent_header"].get("msg_id") == msg_id:
                    return
        except Empty:
            pass


def wait_ready(kc, timeout):
    LOOP.run_until_complete(_ready(kc, timeout))


def _left(deadline):
    left = deadline - time.perf_counter()
    if left <= 0:
        raise TimeoutError("no answer in time")
    return left


def _check_ok(reply):
    content = reply["content"]
    if content.get("status") != "ok":
        raise RuntimeError(f"execute_reply {content.get('status')}: {content.get('ename')}: {content.get('evalue')}")
    return reply


def execute_content(code):
    """An execute_request's content as front ends send it."""
    return {"code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True}


def is_idle_of(msg, msg_id):
    """Whether msg is the iopub `idle` status that ends request msg_id."""
    return (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
            and msg["content"]["execution_state"] == "idle")


def execute_reply(kc, code, timeout):
    """Sends code and returns its execute_reply (other shell messages skipped)."""
    deadline = time.perf_counter() + timeout
    msg_id = kc.execute(code)
    while True:
        reply = kc.get_shell_msg(timeout=_left(deadline))
        if reply["parent_header"].get("msg_id") == msg_id:
            return _check_ok(reply)


def roundtrip(kc, code, timeout):
    """One execute round trip in seconds: request sent -> execute_reply AND
    iopub status idle of that request received (there is no order between
    the two sockets, so both are waited for)."""
    start = time.perf_counter()
    deadline = start + timeout
    msg_id = kc.execute(code)
    replied = idle = False
    while not replied:
        reply = kc.get_shell_msg(timeout=_left(deadline))
        if reply["parent_header"].get("msg_id") == msg_id:
            _check_ok(reply)
            replied = True
    while not idle:
        idle = is_idle_of(kc.get_iopub_msg(timeout=_left(deadline)), msg_id)
    return time.perf_counter() - start


def stop_client(kc):
    kc.stop_channels()


class SessionClient:
    """The leanest way to drive a kernel with jupyter_client: its Session
    (HMAC signing, JSON, date handling) on plain blocking zmq sockets, no
    asyncio loop per call. BlockingKernelClient runs an asyncio loop (with
    nest_asyncio) for every get_*_msg; this client shows what the same
    library costs without that. Same code for both kernels."""

    def __init__(self, connection, ready=30):
        info = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in connection.items()}
        self.session = Session(key=info["key"].encode(), signature_scheme=info["signature_scheme"])
        zmq.Context.instance().set(zmq.MAX_SOCKETS, 65536)
        self.ctx = kennel.client_context(info, zmq.Context.instance())
        self.shell = self.ctx.socket(zmq.DEALER)
        self.shell.connect(kennel.endpoint(info, "shell_port"))
        self.iopub = self.ctx.socket(zmq.SUB)
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        self.iopub.connect(kennel.endpoint(info, "iopub_port"))
        try:
            self._ready(ready)
        except BaseException:
            self.close()
            raise

    def _recv(self, sock, deadline):
        if not sock.poll(int(_left(deadline) * 1000) + 1):
            raise TimeoutError("no answer in time")
        return self.session.recv(sock, mode=zmq.NOBLOCK)[1]

    def _recv_until(self, sock, deadline, wanted):
        """Receives on sock, skipping what wanted(msg) refuses."""
        while True:
            msg = self._recv(sock, deadline)
            if wanted(msg):
                return msg

    def _ready(self, timeout):
        """kernel_info until its reply AND its iopub status are in (see _ready)."""
        deadline = time.perf_counter() + timeout
        while True:
            msg_id = self.session.send(self.shell, "kernel_info_request", {})["header"]["msg_id"]
            answers = lambda msg: msg["parent_header"].get("msg_id") == msg_id  # noqa: E731
            self._recv_until(self.shell, deadline, answers)
            try:
                self._recv_until(self.iopub, min(deadline, time.perf_counter() + 0.2), answers)
                return
            except TimeoutError:
                _left(deadline)

    def roundtrip(self, code, timeout):
        """As roundtrip(): request sent -> execute_reply and iopub idle."""
        start = time.perf_counter()
        deadline = start + timeout
        msg_id = self.session.send(self.shell, "execute_request", execute_content(code))["header"]["msg_id"]
        _check_ok(self._recv_until(self.shell, deadline, lambda m: m["parent_header"].get("msg_id") == msg_id))
        self._recv_until(self.iopub, deadline, lambda m: is_idle_of(m, msg_id))
        return time.perf_counter() - start

    def close(self):
        self.shell.close(linger=0)
        self.iopub.close(linger=0)


def session_cpu_per_roundtrip(n=2000):
    """jupyter_client's own CPU for one execute round trip, with no kernel and
    no I/O: sign one execute_request and unpack the four messages a round
    trip brings back (execute_reply, status busy, execute_input, status
    idle), signed with a 64-character key as a kernel would. The floor any
    kernel's round trip via jupyter_client stands on (seconds, per sample)."""
    session = Session(key=b"k" * 64)
    request = session.msg("execute_request", execute_content("x = x + 1"))

    def signed(msg):
        frames = session.serialize(msg)
        return frames[frames.index(b"<IDS|MSG>") + 1:]

    back = [signed(session.msg(t, c, parent=request)) for t, c in (
        ("execute_reply", {"status": "ok", "execution_count": 1, "user_expressions": {}, "payload": []}),
        ("status", {"execution_state": "busy"}),
        ("execute_input", {"code": "x = x + 1", "execution_count": 1}),
        ("status", {"execution_state": "idle"}))]
    samples = []
    for _ in range(n):
        session.digest_history.clear()  # the same frames again: not replays here
        start = time.perf_counter()
        signed(session.msg("execute_request", request["content"]))
        for frames in back:
            session.deserialize(frames)
        samples.append(time.perf_counter() - start)
    return samples


def client_floor(connection, n, timeout=30):
    """What a fresh BlockingKernelClient costs by itself at the start of a
    conversation: connect to an already-running, already-used kernel and get
    the first execute_reply of `x = 1`, n times (seconds)."""
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        kc = client(connection)
        execute_reply(kc, "x = 1", timeout)
        samples.append(time.perf_counter() - start)
        stop_client(kc)
    return samples


async def _busy_loop(kc, code, stop_at, done):
    """Closed loop on one conversation: next request as soon as the last one
    has its reply and its idle. done collects completion times (the first
    request, `x = 0`, is not counted: code may build on x)."""
    await _ready(kc, 60)
    first = True
    while time.perf_counter() < stop_at:
        msg_id = kc.execute("x = 0" if first else code)
        replied = idle = False
        while not (replied and idle):
            if not replied:
                msg = await kc.get_shell_msg(timeout=10)
                replied = msg["parent_header"].get("msg_id") == msg_id
                if replied:
                    _check_ok(msg)
            else:
                msg = await kc.get_iopub_msg(timeout=10)
                idle = is_idle_of(msg, msg_id)
        if not first:
            done.append(time.perf_counter())
        first = False


def _cpu_of(groups):
    """{name: CPU seconds so far} for {name: [pids]}, plus this driver."""
    out = {name: sum(cpu_seconds(p) for p in pids if os.path.exists(f"/proc/{p}")) for name, pids in groups.items()}
    t = os.times()
    out["driver"] = t.user + t.system
    return out


def throughput(connections, code, warmup, duration, groups=None):
    """Executes per second across all connections, each kept busy by its own
    closed loop (AsyncKernelClient); completions during warmup not counted.
    groups ({name: [pids]}): whose CPU use to report, in cores, with the
    driver's own (a Python client saturates before a fast server does)."""
    clients = []
    for info in connections:
        kc = AsyncKernelClient(context=CTX)
        kc.load_connection_info(info)
        kc.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=False)
        clients.append(kc)
    done = []
    start = time.perf_counter()
    stop_at = start + warmup + duration

    async def run_all():
        await asyncio.gather(*(_busy_loop(kc, code, stop_at, done) for kc in clients))
    cpu_before = _cpu_of(groups or {})
    try:
        LOOP.run_until_complete(run_all())
    finally:
        for kc in clients:
            kc.stop_channels()
    elapsed = time.perf_counter() - start
    cpu_after = _cpu_of(groups or {})
    counted = [t for t in done if t >= start + warmup]
    window = max(counted) - (start + warmup) if counted else duration
    return {"executes_per_s": len(counted) / max(window, 1e-9), "executes": len(counted),
            "seconds": window, "conversations": len(clients),
            "cpu_cores": {k: round((cpu_after[k] - cpu_before[k]) / elapsed, 2) for k in cpu_after}}


# ---- the kennel daemon -------------------------------------------------------

class Control:
    """A signed client of the gateway's control socket that can keep several
    requests in flight (opens are answered when the kernel is confined)."""

    def __init__(self, connection_file, process=None):
        self.process = process  # the daemon: a dead one is reported at once, not after a timeout
        info = json.loads(pathlib.Path(connection_file).read_text())
        self.session = Session(key=info["key"].encode(), signature_scheme=info["signature_scheme"])
        self.sock = connect(info, "control_port", zmq.DEALER)

    def requests(self, items, in_flight=1, timeout=60):
        """items: [(msg_type, content)]. Returns their reply contents in order
        (an error reply is returned as it is: status "error")."""
        results = [None] * len(items)
        pending = {}
        nxt = 0
        while nxt < len(items) or pending:
            while nxt < len(items) and len(pending) < in_flight:
                sent = self.session.send(self.sock, items[nxt][0], items[nxt][1])
                pending[sent["header"]["msg_id"]] = (nxt, time.perf_counter() + timeout)
                nxt += 1
            first_deadline = min(d for _, d in pending.values())
            if not self.sock.poll(max(1, min(500, int((first_deadline - time.perf_counter()) * 1000)))):
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError(f"kennel serve died (exit status {self.process.returncode})")
                if first_deadline < time.perf_counter():
                    raise TimeoutError(f"no control reply within {timeout} s")
                continue
            _, reply = self.session.recv(self.sock, mode=0)
            slot = pending.pop(reply["parent_header"].get("msg_id"), None)
            if slot is not None:
                results[slot[0]] = reply["content"]
        return results

    def request(self, msg_type, content=None, timeout=60):
        return self.requests([(msg_type, content or {})], timeout=timeout)[0]

    def close(self):
        self.sock.close(0)


def pool_state(info):
    """The warm pool as gateway_info reports it (`warm_pool`: size, ready,
    starting, claimed), or None when there is none or its size is 0."""
    pool = info.get("warm_pool", info.get("pool"))
    return pool if isinstance(pool, dict) and pool.get("size", 1) else None


def pool_ready(pool):
    for key in ("ready", "idle", "available"):
        if isinstance(pool.get(key), int):
            return pool[key] > 0
    return True


def wait_pool_ready(gateway, timeout=60):
    """Until the gateway's warm pool has a kernel ready (or timeout s)."""
    deadline = time.time() + timeout
    while not pool_ready(pool_state(gateway.info()) or {}) and time.time() < deadline:
        time.sleep(0.02)


class KennelGateway:
    """`kennel serve` of a build dir, with its own state dir under /tmp (the
    sandbox uid must traverse to the workspaces: 0711)."""

    def __init__(self, builddir, workdir, extra_config=None, env=None, transport_args=()):
        self.builddir = pathlib.Path(builddir)
        pathlib.Path(workdir).mkdir(parents=True, exist_ok=True)
        self.state = traversable_dir("kennel-bench-")
        self.conn_file = pathlib.Path(workdir) / "gateway.json"
        self.log_file = pathlib.Path(workdir) / "gateway.log"
        config = {"max_conversations": 4096, "idle_check_interval": 60, "queue_limit": 64}
        config.update(extra_config or {})
        config_file = pathlib.Path(workdir) / "gateway-config.json"
        config_file.write_text(json.dumps(config))
        if self.conn_file.exists():
            self.conn_file.unlink()
        try:
            self.proc = serve(self.state, config_file, self.log_file, self.conn_file, transport_args,
                              binary=self.builddir / "gateway" / "kennel", timeout=30, env=env,
                              stdin=subprocess.DEVNULL)
        except RuntimeError:
            shutil.rmtree(self.state, ignore_errors=True)
            raise
        self.control = Control(self.conn_file, self.proc)

    def info(self):
        return self.control.request("gateway_info_request")

    def open(self, ids, in_flight=4, timeout=60, **content):
        """Opens conversations; returns their open replies (status ok or error)."""
        return self.control.requests(
            [("conversation_open_request", dict(conversation_id=i, **content)) for i in ids],
            in_flight=in_flight, timeout=timeout)

    def close(self, ids, in_flight=8):
        return self.control.requests([("conversation_close_request", {"conversation_id": i}) for i in ids],
                                     in_flight=in_flight)

    def fork_server_pid(self, kids=None):
        """The daemon's zygote (`kennel-launch --zygote`), or None."""
        kids = kids if kids is not None else children_map()
        for pid in kids.get(self.proc.pid, ()):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"--zygote" in f.read().split(b"\0"):
                        return pid
            except OSError:
                continue
        return None

    def conversation_processes(self):
        """{launcher pid: [its processes]}: each conversation's kernel-launch
        (the waiter, or with the fork server the proxy), the sandbox's init
        and the kernel. With the fork server the waiter, init and kernel are
        the zygote's descendants, not the proxy's: each proxy is paired with
        one of the zygote's children (the pairing is arbitrary, the sums are
        not), and the zygote itself is left out like the daemon."""
        kids = children_map()
        zygote = self.fork_server_pid(kids)
        launchers = [pid for pid in kids.get(self.proc.pid, ()) if pid != zygote]
        forked = kids.get(zygote, []) if zygote else []
        out = {pid: descendants(pid, kids) for pid in launchers}
        proxies = [pid for pid in launchers if len(out[pid]) == 1]  # no sandbox below: a zygote's proxy
        for proxy, child in zip(proxies, forked):
            out[proxy] += descendants(child, kids)
        return out

    def pss(self):
        """(gateway PSS kB, [PSS kB summed over each conversation's processes])."""
        per_conv = [sum(pss_kb(p) for p in procs) for procs in self.conversation_processes().values()]
        return pss_kb(self.proc.pid), per_conv

    def fork_server_pss(self):
        """The zygote's own PSS in kB (0 without one): shared by all kernels."""
        zygote = self.fork_server_pid()
        return pss_kb(zygote) if zygote else 0

    def stop(self):
        self.control.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.state, ignore_errors=True)
        return self.proc.returncode


# ---- stock ipykernel ---------------------------------------------------------

class Ipykernel:
    """Debian's ipykernel, started by jupyter_client's KernelManager from the
    installed python3 kernelspec (argv checked: /usr/bin/python3)."""

    def __init__(self, log):
        self.km = KernelManager(kernel_name="python3")
        self.log = log

    def start(self):
        self.km.start_kernel(stdout=self.log, stderr=self.log)
        return self

    @property
    def argv(self):
        return self.km.kernel_spec.argv

    @property
    def connection(self):
        return self.km.get_connection_info()

    @property
    def connection_file(self):
        return self.km.connection_file

    @property
    def pid(self):
        return self.km.provisioner.process.pid

    def pss(self):
        return sum(pss_kb(p) for p in descendants(self.pid))

    def wait_bound(self, timeout):
        """True once all five ports accept a connection (the kernel is past
        binding), False when the kernel died first (jupyter_client's
        free-port race lost: EADDRINUSE). A client must never talk to a
        kernel that died before binding: its DEALER send can block for good."""
        info = self.connection
        ports = [info[k] for k in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")]
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if not self.km.is_alive():
                return False
            try:
                for port in ports:
                    socket.create_connection((info["ip"], port), timeout=0.5).close()
                return True
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"ipykernel {self.pid} did not bind its ports within {timeout} s")

    def stop(self):
        self.km.shutdown_kernel(now=True)
