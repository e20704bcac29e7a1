#!/usr/bin/python3
"""kennel vs stock ipykernel, side by side in one run (tests/bench/README.md).

    bench.py --builddir DIR [--smoke] [--allow-sanitized] [--json FILE]

Runs the daemon of DIR (`kennel serve`) and Debian's ipykernel (started by
jupyter_client's KernelManager), drives both with the same jupyter_client
code, prints a table and writes JSON. --smoke: the same code paths with tiny
counts; it asserts only that every measurement produced a number (or says
why it cannot exist yet) and that both kernels answered."""
import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib as B  # noqa: E402
import bench_http as H  # noqa: E402

FULL = dict(cold=15, floor=30, rtt=1000, rtt_warmup=100, c_rtt=2000, c_warmup=200, tool_calls=200,
            memory=[1, 10, 100], ipy_memory=[1, 10, 100], tp_conversations=50, tp_warmup=1.0, tp_seconds=5.0,
            scale_max=2000, ipy_scale_max=100, scale_budget=1800,
            http_create=15, http_rtt=1000, http_rtt_warmup=100, http_memory=100, http_tp=50)
SMOKE = dict(cold=1, floor=2, rtt=20, rtt_warmup=2, c_rtt=50, c_warmup=5, tool_calls=3,
             memory=[1, 2], ipy_memory=[1], tp_conversations=2, tp_warmup=0.1, tp_seconds=0.4,
             scale_max=3, ipy_scale_max=1, scale_budget=60,
             http_create=1, http_rtt=20, http_rtt_warmup=2, http_memory=2, http_tp=2)
SCALE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 300, 400, 500, 750, 1000, 1250, 1500, 1750, 2000]
EXECUTE_DEADLINE = 2.0  # s: "still answering" in the scale ramp
NO_POOL = "no warm pool yet"
NO_TOOLS = "no tool calls yet"


def log(*args):
    print("[bench]", *args, file=sys.stderr, flush=True)


# ---- the build and the machine ------------------------------------------------

def build_flags(builddir):
    """SANITIZER_CFLAGS and CFLAGS as configure substituted them."""
    text = (pathlib.Path(builddir) / "config.status").read_text()
    flags = {}
    for name in ("SANITIZER_CFLAGS", "CFLAGS"):
        m = re.search(r'^S\["%s"\]="(.*)"$' % name, text, re.M)
        flags[name] = m.group(1) if m else ""
    return flags


def machine():
    meminfo = pathlib.Path("/proc/meminfo").read_text()
    cpu = re.search(r"model name\s*:\s*(.*)", pathlib.Path("/proc/cpuinfo").read_text())
    import ipykernel
    import jupyter_client
    return {"nproc": os.cpu_count(), "uname_r": platform.release(), "cpu": cpu.group(1) if cpu else "",
            "mem_total_mb": int(re.search(r"MemTotal:\s*(\d+)", meminfo).group(1)) // 1024,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "loadavg_start": pathlib.Path("/proc/loadavg").read_text().split()[:3],
            "python": sys.version.split()[0], "ipykernel": ipykernel.__version__,
            "jupyter_client": jupyter_client.__version__}


def source_revision(srcdir):
    try:
        rev = subprocess.run(["git", "-C", str(srcdir), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(srcdir), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev + ("+uncommitted" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# ---- the run -----------------------------------------------------------------

class Run:
    """One benchmark run: the counts, the daemon, the ipykernels, the results."""

    def __init__(self, args, counts, workdir):
        self.args = args
        self.c = counts
        self.workdir = workdir
        self.results = {}
        self.gateway = None
        self.gateway_exit = 0  # the daemon's exit status once stopped
        self.fleet = []       # kennel conversation ids opened so far (idle, ran `x = 1`)
        self.ipy_fleet = []   # running Ipykernel objects
        self.ipy_start_failures = 0
        self.pool_configurable = False
        self.gateway_env = None
        self.ipy_log = open(workdir / "ipykernel.log", "ab")
        env = dict(os.environ)
        if args.sanitized:
            env["ASAN_OPTIONS"] = "detect_leaks=0"
        self.env = env

    def builddir(self, rel):
        return str(pathlib.Path(self.args.builddir) / rel)

    def put(self, key, value):
        self.results[key] = value
        log(key, json.dumps(value, default=str)[:300])

    # -- kennel conversations --

    def kennel_open(self, ids, **content):
        replies = self.gateway.open(ids, **content)
        for cid, reply in zip(ids, replies):
            if reply.get("status") != "ok":
                raise RuntimeError(f"conversation_open {cid}: {reply.get('ename')}: {reply.get('evalue')}")
        return replies

    def kennel_grow(self, n):
        """Opens fleet conversations up to n, each answering `x = 1` once."""
        ids = [f"bench-{i}" for i in range(len(self.fleet), n)]
        for start in range(0, len(ids), 50):
            batch = ids[start:start + 50]
            for cid, reply in zip(batch, self.kennel_open(batch)):
                kc = B.client(reply["connection"], ready=60)
                try:
                    B.roundtrip(kc, "x = 1", 60)
                finally:
                    B.stop_client(kc)
                self.fleet.append((cid, reply["connection"]))

    def ipy_grow(self, n, batch=4):
        """Starts fleet ipykernels up to n, a few at a time (90 at once on 2
        cores take minutes each), each waited for with one `x = 1`."""
        while len(self.ipy_fleet) < n:
            new = [B.Ipykernel(self.ipy_log).start() for _ in range(min(batch, n - len(self.ipy_fleet)))]
            for k in new:
                self.ipy_fleet.append(self.ipy_ready(k))

    def ipy_ready(self, kernel, tries=3):
        """kernel once it answered `x = 1`. jupyter_client picks free ports
        and the kernel binds them later: when another process took one in
        between, the kernel dies (EADDRINUSE) and a new one is started."""
        for attempt in range(tries):
            try:
                if not kernel.wait_bound(120):
                    raise RuntimeError("the ipykernel died before binding its ports")
                kc = B.client(kernel.connection, ready=120)
                try:
                    B.roundtrip(kc, "x = 1", 120)
                finally:
                    B.stop_client(kc)
                return kernel
            except Exception:
                if kernel.km.is_alive() or attempt == tries - 1:
                    raise
                self.ipy_start_failures += 1
                log(f"an ipykernel died while starting (see ipykernel.log); starting another")
                kernel.stop()
                kernel = B.Ipykernel(self.ipy_log).start()
        return kernel


# ---- 1. cold start -------------------------------------------------------------

def cold_kennel(run, i, gateway=None):
    """open -> client -> first execute_reply of `x = 1`, then closed.
    Returns (total, time until the open reply) in seconds."""
    gateway = gateway or run.gateway
    cid = f"bench-cold-{i}"
    start = time.perf_counter()
    reply = gateway.open([cid])[0]
    if reply.get("status") != "ok":
        raise RuntimeError(f"conversation_open {cid}: {reply.get('ename')}: {reply.get('evalue')}")
    opened = time.perf_counter()
    kc = B.client(reply["connection"])
    B.execute_reply(kc, "x = 1", 60)
    elapsed = time.perf_counter() - start
    B.stop_client(kc)
    gateway.close([cid])
    return elapsed, opened - start


def cold_ipykernel(run):
    """KernelManager.start_kernel -> client -> first execute_reply of `x = 1`.
    Returns (total, time spent in start_kernel, the kernel's argv)."""
    kernel = B.Ipykernel(run.ipy_log)
    start = time.perf_counter()
    kernel.start()
    started = time.perf_counter()
    if not kernel.wait_bound(120):  # lost jupyter_client's free-port race: a new sample
        kernel.stop()
        run.ipy_start_failures += 1
        return cold_ipykernel(run)
    kc = B.client(kernel.connection)
    B.execute_reply(kc, "x = 1", 120)
    elapsed = time.perf_counter() - start
    B.stop_client(kc)
    kernel.stop()
    return elapsed, started - start, kernel.argv


def section_cold(run):
    """Interleaved samples, so load from the rest of the machine falls on both."""
    kennel, kennel_open, ipy, ipy_start = [], [], [], []
    argv = None
    for i in range(run.c["cold"]):
        total, opened = cold_kennel(run, i)
        kennel.append(total)
        kennel_open.append(opened)
        total, started, argv = cold_ipykernel(run)
        ipy.append(total)
        ipy_start.append(started)
    run.put("cold_start_ms", {"kennel": B.summary(kennel), "ipykernel": B.summary(ipy),
                              "kennel_until_open_reply": B.summary(kennel_open),
                              "ipykernel_inside_start_kernel": B.summary(ipy_start),
                              "ipykernel_argv": argv})


# ---- 2. warm start -------------------------------------------------------------

def section_warm(run):
    """A second daemon with its default pool; the main one runs without
    (cold start, memory) when it knows the setting."""
    if not run.pool_configurable:
        run.put("warm_start_ms", {"kennel": None, "note": NO_POOL + " (the daemon has no warm_pool setting)"})
        return
    gateway = B.KennelGateway(run.args.builddir, run.workdir / "warm", env=run.gateway_env)
    try:
        pool = B.pool_state(gateway.info())
        if pool is None:
            run.put("warm_start_ms", {"kennel": None, "note": NO_POOL + " (gateway_info reports no pool)"})
            return
        samples = []
        for i in range(run.c["cold"]):
            B.wait_pool_ready(gateway)
            samples.append(cold_kennel(run, f"warm-{i}", gateway)[0])
        run.put("warm_start_ms", {"kennel": B.summary(samples), "pool": pool,
                                  "note": "waiting for a ready pooled kernel before each sample; ipykernel has no "
                                          "pool: compared with its cold start"})
    finally:
        gateway.stop()


# ---- 3. execute round trip ---------------------------------------------------------

def rtt_samples(kc, warmup, n, roundtrip=B.roundtrip):
    roundtrip(kc, "x = 0", 30)
    for _ in range(warmup):
        roundtrip(kc, "x = x + 1", 30)
    return [roundtrip(kc, "x = x + 1", 30) for _ in range(n)]


def client_rtts(run, connection, side):
    """The jupyter_client round trips of one kernel: BlockingKernelClient, the
    lean Session client, and the fresh-client floor of a start (row 2)."""
    kc = B.client(connection, ready=30)
    try:
        samples = rtt_samples(kc, run.c["rtt_warmup"], run.c["rtt"])
    finally:
        B.stop_client(kc)
    lean = B.SessionClient(connection)
    try:
        lean_samples = rtt_samples(lean, run.c["rtt_warmup"], run.c["rtt"],
                                   roundtrip=lambda c, code, timeout: c.roundtrip(code, timeout))
    finally:
        lean.close()
    for key, values in (("execute_rtt_ms", samples), ("execute_rtt_session_ms", lean_samples),
                        ("client_floor_ms", B.client_floor(connection, run.c["floor"]))):
        run.results.setdefault(key, {})[side] = B.summary(values)
        log(f"{key} {side}", run.results[key][side])


def c_rtt(run, target):
    """bench_rtt on a connection file, or with --launch; its JSON summary."""
    cmd = [run.builddir("tests/bench/bench_rtt"), "-n", str(run.c["c_rtt"]), "-w", str(run.c["c_warmup"])]
    cmd += ["--launch", run.builddir("kernel-launcher/kennel-launch")] if target is None else [str(target)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=run.env)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def section_rtt_kennel(run):
    run.put("jupyter_client_cpu_per_rtt_ms", {"kennel": B.summary(B.session_cpu_per_roundtrip(run.c["rtt"])),
                                              "note": "jupyter_client's Session alone, no kernel, no I/O"})
    reply = run.kennel_open(["bench-rtt"])[0]
    client_rtts(run, reply["connection"], "kennel")
    conn_file = run.workdir / "rtt-connection.json"
    conn_file.write_text(json.dumps(reply["connection"]))
    cpu_before = B.cpu_seconds(run.gateway.proc.pid)
    via = c_rtt(run, conn_file)
    # the gateway's own CPU per relayed round trip (request in and out,
    # reply, status busy/execute_input/idle on the way back)
    via["gateway_cpu_us_per_rtt"] = ((B.cpu_seconds(run.gateway.proc.pid) - cpu_before) * 1e6
                                     / (via["n"] + run.c["c_warmup"] + 1))
    run.gateway.close(["bench-rtt"])
    direct = c_rtt(run, None)
    run.put("c_client_rtt_us", {"kennel_via_gateway": via, "kennel_direct_unconfined": direct})
    run.put("gateway_added_us", {"median": via["p50_us"] - direct["p50_us"], "p99": None,
                                 "note": "p50 of the C client through the gateway minus straight to an "
                                         "unconfined kennel kernel (gateway over ipc, its default; the kernel over "
                                         "tcp loopback); p99s do not subtract"})


def section_rtt_ipykernel(run):
    run.ipy_grow(1)
    kernel = run.ipy_fleet[0]
    client_rtts(run, kernel.connection, "ipykernel")
    run.results.setdefault("c_client_rtt_us", {})["ipykernel"] = c_rtt(run, kernel.connection_file)


# ---- 4. tool calls -----------------------------------------------------------------

TOOL = {"name": "bench_echo", "description": "Returns its argument (benchmark).",
        "parameters": {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}}
PROBE = "try:\n    bench_echo\n    print('kennel-bench: tools')\nexcept NameError:\n    print('kennel-bench: no tools')\n"
CALLS = ("import json, time\n_t = []\nfor _i in range({n}):\n    _a = time.perf_counter()\n"
         "    assert bench_echo(i=_i) == _i\n    _t.append(time.perf_counter() - _a)\n"
         "print('kennel-bench:' + json.dumps(_t))\n")


def _stdout_of(kc, code, timeout):
    """Runs code serving tool_request with an echo; returns its stdout."""
    text = []

    def on_output(msg):
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            text.append(msg["content"]["text"])

    def on_stdin(msg):
        if msg["msg_type"] == "tool_request":
            answer = {"call_id": msg["content"].get("call_id"), "status": "ok",
                      "result": msg["content"].get("arguments", {}).get("i")}
            kc.stdin_channel.send(kc.session.msg("tool_reply", answer, parent=msg["header"]))

    reply = kc.execute_interactive(code, timeout=timeout, allow_stdin=True, output_hook=on_output,
                                   stdin_hook=on_stdin)
    B._check_ok(reply)
    return "".join(text)


def section_tools(run):
    """Detected at run time: a conversation opened with one tool, asked whether
    the function exists in its kernel."""
    replies = run.gateway.open(["bench-tools"], tools=[TOOL])
    if replies[0].get("status") != "ok":
        run.put("tool_call_ms", {"kennel": None, "note": f"{NO_TOOLS}: open with tools refused: "
                                                          f"{replies[0].get('ename')}: {replies[0].get('evalue')}"})
        return
    kc = B.client(replies[0]["connection"], stdin=True, ready=30)
    try:
        if "kennel-bench: tools" not in _stdout_of(kc, PROBE, 30):
            run.put("tool_call_ms", {"kennel": None, "note": NO_TOOLS + " (a declared tool is not a function "
                                                                        "in the kernel)"})
            return
        out = _stdout_of(kc, CALLS.format(n=run.c["tool_calls"]), 300)
        samples = json.loads(out.split("kennel-bench:", 1)[1])
        run.put("tool_call_ms", {"kennel": B.summary(samples), "note": "timed inside the kernel around each "
                                                                       "call; the host answers at once"})
    finally:
        B.stop_client(kc)
        run.gateway.close(["bench-tools"])


# ---- 5. memory -------------------------------------------------------------------

# ---- 8. kennel mcp over stdio ---------------------------------------------------------

class McpStdio:
    """One `kennel mcp` (its embedded gateway), driven line by line
    as an MCP client drives it."""

    def __init__(self, run):
        self.proc = subprocess.Popen([run.builddir("gateway/kennel"), "mcp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=run.ipy_log, env=run.env, bufsize=0)
        self.next_id = 0

    def send(self, method, params=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not notify:
            self.next_id += 1
            msg["id"] = self.next_id
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        return self.next_id

    def answer(self, rid):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("kennel mcp ended")
            msg = json.loads(line)
            if msg.get("id") == rid:
                return msg

    def call_y1(self):
        r = self.answer(self.send("tools/call", {"name": "python_exec", "arguments": {"code": "y = 1"}}))
        if r.get("result", {}).get("isError") is not False:
            raise RuntimeError(f"python_exec failed: {r}")

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(30)


def mcp_first_result(run):
    """Spawn -> initialize -> tools/call `y = 1` -> its result, in seconds."""
    t0 = time.perf_counter()
    m = McpStdio(run)
    try:
        m.answer(m.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "bench", "version": "1"}}))
        m.send("notifications/initialized", notify=True)
        m.call_y1()
        return time.perf_counter() - t0
    finally:
        m.stop()


def section_mcp(run):
    """`kennel mcp`: a tools/call round trip for `y = 1` over stdio (client
    line out to result line in, through front, gateway and kernel), and the
    time from spawning it to the first result (its own gateway, a fresh
    kernel). Goals (issue 17): round trip <= 2 ms, spawn -> first result <= 150 ms."""
    firsts = [mcp_first_result(run) for _ in range(run.c["cold"])]
    run.put("mcp_spawn_first_result_ms", {"kennel": B.summary(firsts), "goal_ms": 150})
    m = McpStdio(run)
    try:
        m.answer(m.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "bench", "version": "1"}}))
        for _ in range(run.c["rtt_warmup"]):
            m.call_y1()
        samples = []
        for _ in range(run.c["rtt"]):
            t = time.perf_counter()
            m.call_y1()
            samples.append(time.perf_counter() - t)
        run.put("mcp_tools_call_rtt_ms", {"kennel": B.summary(samples), "goal_ms": 2})
    finally:
        m.stop()


def settle():
    time.sleep(1.0)  # let start-up garbage be collected and pages settle


def section_memory_kennel(run):
    out = {}
    for level in run.c["memory"]:
        run.kennel_grow(level)
        settle()
        gateway_kb, per_conv = run.gateway.pss()
        deadline = time.time() + 10
        while len(per_conv) != level and time.time() < deadline:  # closed ones still being reaped
            time.sleep(0.1)
            gateway_kb, per_conv = run.gateway.pss()
        if len(per_conv) != level:
            raise RuntimeError(f"expected {level} conversations' processes under the gateway, found {len(per_conv)}")
        out[str(level)] = {"per_conversation_mb": sum(per_conv) / level / 1024,
                           "max_mb": max(per_conv) / 1024, "gateway_mb": gateway_kb / 1024,
                           "fork_server_mb": run.gateway.fork_server_pss() / 1024,
                           "processes_per_conversation": sorted(
                               len(p) for p in run.gateway.conversation_processes().values())[0]}
        log(f"kennel PSS at {level}: {out[str(level)]}")
    run.put("pss_per_idle_conversation", {"kennel": out})


def section_memory_ipykernel(run):
    out = {}
    for level in run.c["ipy_memory"]:
        run.ipy_grow(level)
        settle()
        per = [k.pss() for k in run.ipy_fleet[:level]]
        out[str(level)] = {"per_conversation_mb": sum(per) / level / 1024, "max_mb": max(per) / 1024,
                           "processes_per_conversation": 1}
        log(f"ipykernel PSS at {level}: {out[str(level)]}")
    mem = run.results.setdefault("pss_per_idle_conversation", {})
    mem["ipykernel"] = out
    skipped = [lv for lv in run.c["memory"] if lv not in run.c["ipy_memory"]]
    if skipped:
        mem["ipykernel_note"] = (
            f"ipykernel not measured at {skipped}: about 60 MB and 1 s of CPU each on a shared 2-core machine")


# ---- 6. scale --------------------------------------------------------------------

def check_all(connections):
    """Each conversation, with a fresh client (ready within EXECUTE_DEADLINE),
    answers `x = 1` within EXECUTE_DEADLINE; returns the latencies, raises on
    the first one that does not."""
    latencies = []
    for name, conn in connections:
        try:
            kc = B.client(conn, ready=EXECUTE_DEADLINE)
        except Exception as exc:
            raise RuntimeError(f"{name}: no kernel_info answer within {EXECUTE_DEADLINE} s: {exc!r}") from exc
        try:
            latencies.append(B.roundtrip(kc, "x = 1", EXECUTE_DEADLINE))
        except Exception as exc:
            raise RuntimeError(f"{name} did not answer within {EXECUTE_DEADLINE} s: {exc!r}") from exc
        finally:
            B.stop_client(kc)
    return latencies


def ramp(grow, connections, cap, budget, min_free_mb):
    """Bounded ramp: grow to each step, check every conversation; stop at cap,
    on the first failure, when free memory is low or the time budget is spent."""
    held, steps, reason = 0, [], f"reached the cap of {cap}"
    start = time.time()
    for level in [s for s in SCALE_STEPS if s < cap] + [cap]:
        if level <= held:
            continue
        if B.mem_available_mb() < min_free_mb:
            reason = f"free memory below {min_free_mb} MB ({B.mem_available_mb()} MB available)"
            break
        if time.time() - start > budget:
            reason = f"time budget of {budget} s spent"
            break
        t0 = time.time()
        try:
            grow(level)
            latencies = check_all(connections()[:level])
        except Exception as exc:
            reason = f"failed at {level}: {exc}"
            break
        held = level
        steps.append({"conversations": level, "grow_s": round(time.time() - t0, 1),
                      "execute_median_ms": B.percentile(latencies, 50) * 1000,
                      "execute_max_ms": max(latencies) * 1000, "mem_available_mb": B.mem_available_mb()})
        log(f"scale: {steps[-1]}")
    return {"held": held, "stopped": reason, "steps": steps}


def section_scale_kennel(run):
    result = ramp(run.kennel_grow, lambda: run.fleet, run.c["scale_max"], run.c["scale_budget"],
                  run.args.min_free_mb)
    result["gateway_pss_mb"] = B.pss_kb(run.gateway.proc.pid) / 1024
    run.put("scale", {"kennel": result})


def section_scale_ipykernel(run):
    result = ramp(run.ipy_grow, lambda: [(f"ipykernel-{i}", k.connection) for i, k in enumerate(run.ipy_fleet)],
                  run.c["ipy_scale_max"], run.c["scale_budget"], run.args.min_free_mb)
    result["note"] = f"small ramp only (cap {run.c['ipy_scale_max']}): about 60 MB and 1 s of CPU per kernel"
    run.results.setdefault("scale", {})["ipykernel"] = result


# ---- 7. throughput ------------------------------------------------------------------

def section_throughput_kennel(run):
    n = run.c["tp_conversations"]
    run.kennel_grow(n)
    kernels = [p for procs in run.gateway.conversation_processes().values() for p in procs]
    res = B.throughput([conn for _, conn in run.fleet[:n]], "x = x + 1", run.c["tp_warmup"], run.c["tp_seconds"],
                       {"gateway": [run.gateway.proc.pid], "kernels": kernels})
    run.put("throughput", {"kennel": res})


def section_throughput_ipykernel(run):
    n = run.c["tp_conversations"]
    run.ipy_grow(n)
    res = B.throughput([k.connection for k in run.ipy_fleet[:n]], "x = x + 1", run.c["tp_warmup"],
                       run.c["tp_seconds"], {"kernels": [k.pid for k in run.ipy_fleet]})
    run.results.setdefault("throughput", {})["ipykernel"] = res


# ---- the table ------------------------------------------------------------------------

def _num(v, unit=""):
    if v is None:
        return "-"
    return f"{v:,.0f}{unit}" if abs(v) >= 100 else f"{v:.2f}{unit}" if abs(v) < 10 else f"{v:.1f}{unit}"


def _ratio(k, i, higher_better=False):
    if k is None or i is None or not i or not k:
        return "-"
    r = k / i
    better = r if higher_better else 1 / r
    return f"{r:.3g} ({better:.3g}x {'better' if better >= 1 else 'worse'})"


def table_rows(res):
    rows = []

    def timed(label, key, unit="ms"):
        entry = res.get(key, {})
        k, i = entry.get("kennel"), entry.get("ipykernel")
        if k is None:
            rows.append((label, entry.get("note", "n/a"), "", _num(i and i["median"]), _num(i and i["p99"]), ""))
            return
        rows.append((label, _num(k["median"]), _num(k["p99"]), _num(i and i["median"]), _num(i and i["p99"]),
                     _ratio(k["median"], i and i["median"])))

    timed("1 cold start, open -> 1st reply (ms)", "cold_start_ms")
    warm = res.get("warm_start_ms", {})
    if warm.get("kennel") is None:
        rows.append(("2 warm start, from the pool (ms)", warm.get("note", NO_POOL), "", "", "", ""))
    else:
        cold_i = res.get("cold_start_ms", {}).get("ipykernel")  # None with --only warm
        rows.append(("2 warm start, from the pool (ms)", _num(warm["kennel"]["median"]), _num(warm["kennel"]["p99"]),
                     "(cold) " + _num(cold_i and cold_i["median"]), _num(cold_i and cold_i["p99"]),
                     _ratio(warm["kennel"]["median"], cold_i and cold_i["median"])))
    timed("1-2 of which: fresh client, 1st execute, running kernel (ms)", "client_floor_ms")
    timed("3 execute round trip, jupyter_client (ms)", "execute_rtt_ms")
    timed("3 same, jupyter_client Session, sync sockets (ms)", "execute_rtt_session_ms")
    timed("3 of which jupyter_client's own CPU, no I/O (ms)", "jupyter_client_cpu_per_rtt_ms")
    c = res.get("c_client_rtt_us", {})
    via, ipy = c.get("kennel_via_gateway"), c.get("ipykernel")
    if via:
        rows.append(("3 execute round trip, C client (us)", _num(via["p50_us"]), _num(via["p99_us"]),
                     _num(ipy and ipy["p50_us"]), _num(ipy and ipy["p99_us"]),
                     _ratio(via["p50_us"], ipy and ipy["p50_us"])))
    direct, added = c.get("kennel_direct_unconfined"), res.get("gateway_added_us")
    if direct and added:
        rows.append(("3 same, kernel direct, no gateway (us)", _num(direct["p50_us"]), _num(direct["p99_us"]),
                     "", "", ""))
        rows.append(("3 gateway's added latency (us)", _num(added["median"]), _num(added["p99"]), "", "", ""))
        if via.get("gateway_cpu_us_per_rtt") is not None:
            rows.append(("3 gateway CPU per round trip (us)", _num(via["gateway_cpu_us_per_rtt"]), "", "", "", ""))
    timed("4 tool call round trip (ms)", "tool_call_ms")
    mem = res.get("pss_per_idle_conversation", {})
    for level, k in mem.get("kennel", {}).items():
        i = mem.get("ipykernel", {}).get(level)
        rows.append((f"5 PSS per idle conversation @{level} (MB)", _num(k["per_conversation_mb"]), "",
                     _num(i["per_conversation_mb"]) if i else "not measured", "",
                     _ratio(k["per_conversation_mb"], i and i["per_conversation_mb"])))
    scale = res.get("scale", {})
    if "kennel" in scale:
        i = scale.get("ipykernel")
        rows.append(("6 conversations held, each < 2 s", str(scale["kennel"]["held"]), "",
                     str(i["held"]) if i else "not measured", "", ""))
    tp = res.get("throughput", {})
    if "kennel" in tp:
        i = tp.get("ipykernel")
        rows.append((f"7 executes/s, {tp['kennel']['conversations']} busy conversations",
                     _num(tp["kennel"]["executes_per_s"]), "", _num(i and i["executes_per_s"]), "",
                     _ratio(tp["kennel"]["executes_per_s"], i and i["executes_per_s"], higher_better=True)))
    timed("8 MCP tools/call round trip, y = 1, stdio (ms; goal 2)", "mcp_tools_call_rtt_ms")
    timed("8 MCP spawn kennel mcp -> 1st result (ms; goal 150)", "mcp_spawn_first_result_ms")
    return rows + H.table_rows(res, _num, _ratio)


def render_table(res):
    head = ("measure", "kennel median", "p99", "ipykernel median", "p99", "kennel/ipykernel")
    rows = [head] + table_rows(res)
    widths = [max(len(r[c]) for r in rows) for c in range(len(head))]
    lines = [" | ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    scale = res.get("scale", {})
    for side in ("kennel", "ipykernel"):
        if side in scale:
            lines.append(f"6 {side}: held {scale[side]['held']}; stopped: {scale[side]['stopped']}")
    for key in ("warm_start_ms", "tool_call_ms"):
        if res.get(key, {}).get("note"):
            lines.append(f"{key}: {res[key]['note']}")
    for side, entry in res.get("throughput", {}).items():
        if entry.get("cpu_cores"):
            lines.append(f"7 {side}: CPU in cores during the run: "
                         + ", ".join(f"{k} {v}" for k, v in entry["cpu_cores"].items()))
    if res.get("pss_per_idle_conversation", {}).get("ipykernel_note"):
        lines.append("5 " + res["pss_per_idle_conversation"]["ipykernel_note"])
    return "\n".join(lines)


# ---- smoke assertions --------------------------------------------------------------

def smoke_problems(res):
    """Every measurement produced a number, or says why it cannot exist yet."""
    problems = []

    def need(path, value):
        if not isinstance(value, (int, float)) or value != value:
            problems.append(f"{path}: no number ({value!r})")

    for key in ("cold_start_ms", "execute_rtt_ms", "execute_rtt_session_ms", "client_floor_ms"):
        for side in ("kennel", "ipykernel"):
            need(f"{key}.{side}.median", (res.get(key, {}).get(side) or {}).get("median"))
    for key, missing in (("warm_start_ms", NO_POOL), ("tool_call_ms", NO_TOOLS)):
        entry = res.get(key, {})
        if entry.get("kennel") is None and missing not in entry.get("note", ""):
            problems.append(f"{key}: neither a number nor '{missing}'")
        elif entry.get("kennel") is not None:
            need(f"{key}.kennel.median", entry["kennel"].get("median"))
    for key in ("mcp_tools_call_rtt_ms", "mcp_spawn_first_result_ms"):
        need(f"{key}.kennel.median", (res.get(key, {}).get("kennel") or {}).get("median"))
    for side in ("kennel_via_gateway", "kennel_direct_unconfined", "ipykernel"):
        need(f"c_client_rtt_us.{side}.p50_us", (res.get("c_client_rtt_us", {}).get(side) or {}).get("p50_us"))
    need("gateway_added_us.median", res.get("gateway_added_us", {}).get("median"))
    mem = res.get("pss_per_idle_conversation", {})
    for side in ("kennel", "ipykernel"):
        if not mem.get(side):
            problems.append(f"pss_per_idle_conversation.{side}: nothing measured")
        for level, v in (mem.get(side) or {}).items():
            need(f"pss.{side}.{level}", v.get("per_conversation_mb"))
            if not v.get("per_conversation_mb"):
                problems.append(f"pss.{side}.{level}: zero")
    for side in ("kennel", "ipykernel"):
        held = res.get("scale", {}).get(side, {}).get("held")
        if not held:
            problems.append(f"scale.{side}: held {held!r} ({res.get('scale', {}).get(side, {}).get('stopped')})")
        executes = res.get("throughput", {}).get(side, {}).get("executes")
        if not executes:
            problems.append(f"throughput.{side}: {executes!r} executes")
    return problems + H.smoke_problems(res, need)


# ---- main -----------------------------------------------------------------------------

# In this order: the kennel sections reuse the conversations opened before
# them, then the ipykernel ones reuse its kernels. Each side's memory is read
# while the other side has nothing running (shared library pages count in
# PSS of whoever maps them).
SECTIONS = [("cold", section_cold), ("warm", section_warm), ("rtt", section_rtt_kennel),
            ("tools", section_tools), ("mcp", section_mcp), ("memory", section_memory_kennel), ("throughput", section_throughput_kennel),
            ("scale", section_scale_kennel), ("rtt", section_rtt_ipykernel), ("memory", section_memory_ipykernel),
            ("throughput", section_throughput_ipykernel), ("scale", section_scale_ipykernel),
            ("http", H.section_http)]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--builddir", required=True, help="the build dir whose kennel and kennel-launch run")
    p.add_argument("--smoke", action="store_true", help="tiny counts; assert that every number exists")
    p.add_argument("--allow-sanitized", action="store_true",
                   help="report numbers from a --enable-sanitizers build anyway (they are not performance figures)")
    p.add_argument("--json", help="where to write the results (default BUILDDIR/bench.json, bench-smoke.json)")
    p.add_argument("--gateway-config", default="{}", help="JSON merged into the daemon's config file")
    p.add_argument("--gateway-env", action="append", default=[], metavar="NAME=VALUE",
                   help="environment for the daemon, e.g. ZSYS_MAX_SOCKETS=65536 (repeatable)")
    p.add_argument("--time-limit", type=int, help="seconds before the run is stopped (smoke 600, full 3 h)")
    p.add_argument("--keep-logs", action="store_true", help="keep the daemon's and the ipykernels' logs")
    p.add_argument("--only", help="comma-separated sections: " + ",".join(dict(SECTIONS)))
    p.add_argument("--min-free-mb", type=int, default=4096, help="the scale ramp stops below this MemAvailable")
    p.add_argument("--scale-max", type=int, help="cap of the kennel scale ramp (default 2000; smoke 3)")
    p.add_argument("--ipykernel-scale-max", type=int, help="cap of the ipykernel ramp (default 50; smoke 1)")
    p.add_argument("--ipykernel-memory", help="ipykernel PSS levels, e.g. 1,10,100 (default 1,10; smoke 1)")
    return p.parse_args(argv)


def counts_for(args):
    counts = dict(SMOKE if args.smoke else FULL)
    if args.scale_max:
        counts["scale_max"] = args.scale_max
    if args.ipykernel_scale_max:
        counts["ipy_scale_max"] = args.ipykernel_scale_max
    if args.ipykernel_memory:
        counts["ipy_memory"] = [int(x) for x in args.ipykernel_memory.split(",")]
    return counts


def run_sections(run):
    """Every section runs; a failed one is recorded and the rest go on."""
    errors = {}
    only = set(run.args.only.split(",")) if run.args.only else None
    for name, section in SECTIONS:
        if section.__name__.endswith("_ipykernel") and run.gateway is not None:
            # kennel's side is done: its kernels must not share pages (or
            # CPU) with the ipykernels measured next
            run.gateway_exit = run.gateway.stop()
            run.gateway = None
        if only is not None and name not in only:
            continue
        log(f"== {section.__name__}")
        try:
            section(run)
        except Exception as exc:  # recorded in the JSON and the exit status
            traceback.print_exc()
            errors[section.__name__] = f"{type(exc).__name__}: {exc}"
    return errors


def cleanup(run):
    for k in run.ipy_fleet:
        try:
            k.stop()
        except Exception:  # already gone
            pass
    rc = run.gateway_exit
    if run.gateway:
        rc = run.gateway.stop()
    if rc != 0:
        log(f"kennel serve exited with {rc}; see its log")
    run.ipy_log.close()
    return rc


class Watchdog(BaseException):
    """The run took longer than it can: something hangs (never in CI)."""


def _on_alarm(signum, frame):
    signal.alarm(60)  # the cleanup gets its own minute
    raise Watchdog("the run exceeded its time limit")


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(args.time_limit or (600 if args.smoke else 3 * 3600))
    flags = build_flags(args.builddir)
    args.sanitized = bool(flags["SANITIZER_CFLAGS"].strip())
    if args.sanitized and not args.smoke and not args.allow_sanitized:
        print(f"bench: {args.builddir} was configured with --enable-sanitizers ({flags['SANITIZER_CFLAGS']}):\n"
              "its numbers say nothing about kennel's speed or memory, so none are reported.\n"
              "Run `make bench` in a build configured without sanitizers (e.g. /work/build-bench-opt),\n"
              "or pass BENCH_ARGS=--allow-sanitized to see them anyway.", file=sys.stderr)
        return 2
    B.raise_fd_limit()
    counts = counts_for(args)
    out_path = pathlib.Path(args.json or pathlib.Path(args.builddir) / ("bench-smoke.json" if args.smoke else
                                                                        "bench.json"))
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="kennel-bench-run-"))
    run = Run(args, counts, workdir)
    report = {"mode": "smoke" if args.smoke else "full", "machine": machine(),
              "build": {"builddir": str(args.builddir), "sanitized": args.sanitized, **flags,
                        "revision": source_revision(HERE.parent.parent)},
              "counts": counts, "only": args.only, "gateway_env": args.gateway_env,
              "gateway_config": json.loads(args.gateway_config), "results": run.results}
    started = time.time()
    errors = {}
    try:
        run.gateway_env = dict(run.env, **dict(kv.split("=", 1) for kv in args.gateway_env))
        config = json.loads(args.gateway_config)
        try:  # cold start and memory without pooled kernels
            run.gateway = B.KennelGateway(args.builddir, workdir, dict({"warm_pool": 0}, **config),
                                          env=run.gateway_env)
            run.pool_configurable = True
        except RuntimeError:  # a daemon that has no warm_pool setting refuses the key
            run.gateway = B.KennelGateway(args.builddir, workdir, config, env=run.gateway_env)
        errors = run_sections(run)
    finally:
        report["gateway_exit"] = cleanup(run)
    signal.alarm(0)
    report["errors"] = errors
    report["ipykernel_start_failures"] = run.ipy_start_failures
    report["machine"]["loadavg_end"] = pathlib.Path("/proc/loadavg").read_text().split()[:3]
    report["seconds"] = round(time.time() - started, 1)
    out_path.write_text(json.dumps(report, indent=1, default=str) + "\n")
    m = report["machine"]
    print(f"kennel vs ipykernel {m['ipykernel']} ({report['mode']} run, {report['seconds']} s) on "
          f"{m['nproc']} cores, {m['uname_r']}, {m['date']}; load {' '.join(m['loadavg_start'])} -> "
          f"{' '.join(m['loadavg_end'])}; build {args.builddir} "
          f"({'SANITIZED: not performance figures' if args.sanitized else flags['CFLAGS']})")
    print(render_table(run.results))
    for name, err in errors.items():
        print(f"FAILED {name}: {err}")
    problems = smoke_problems(run.results) if args.smoke else []
    for p in problems:
        print(f"SMOKE: {p}")
    failed = bool(errors or problems or report["gateway_exit"])
    if failed or args.keep_logs:
        print(f"written: {out_path}; logs (daemon, ipykernels) kept in {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
        print(f"written: {out_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
