#!/usr/bin/python3
"""The gateway's hot path, measured (gateway/README.md, "Hot path"); a tool
run by hand on a build without sanitizers, not a test.

    /usr/bin/python3 tests/gateway/hot_path.py --builddir B [--idle N]
        [-n 2000] [--runs 3] [--strace] [--direct] [--perf FILE]
        [--serve-args "--transport tcp"]

Starts `kennel serve` (tests/bench/benchlib.py), opens one conversation
and, with --idle N, N more that stay idle, then runs the C client
tests/bench/bench_rtt on the first one --runs times and prints one JSON line
per run: p50/p99 round trip (us), the daemon's CPU per round trip (us,
utime+stime from /proc), and with --strace the daemon's system calls per
round trip (strace -c -f over the run). --direct also runs bench_rtt
straight to an unconfined kernel (`bench_rtt --launch`), the baseline that
"gateway-added" subtracts."""
import argparse
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "bench"))
import benchlib as B  # noqa: E402


def bench_rtt(builddir, target, n, warmup):
    cmd = [str(builddir / "tests/bench/bench_rtt"), "-n", str(n), "-w", str(warmup)]
    cmd += ["--launch", str(builddir / "kernel-launcher/kennel-launch")] if target is None else [str(target)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def strace_summary(path):
    """{syscall: calls} from strace -c output."""
    calls = {}
    for line in pathlib.Path(path).read_text().splitlines():
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$", line)
        if m and m.group(2) != "total":
            calls[m.group(2)] = int(m.group(1))
    return calls


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--builddir", required=True)
    p.add_argument("--idle", type=int, default=0, help="idle conversations held open besides the measured one")
    p.add_argument("-n", type=int, default=2000)
    p.add_argument("-w", type=int, default=200)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--strace", action="store_true")
    p.add_argument("--direct", action="store_true")
    p.add_argument("--perf", help="perf record -g the daemon over the runs into this file")
    p.add_argument("--config", default="{}", help="JSON merged into the daemon's config")
    p.add_argument("--kennel", help="another kennel binary (e.g. a copy of the one before a change)")
    p.add_argument("--serve-args", default="", help='more `kennel serve` arguments, e.g. "--transport tcp"')
    a = p.parse_args()
    builddir = pathlib.Path(a.builddir).resolve()
    B.raise_fd_limit()
    work = pathlib.Path(tempfile.mkdtemp(prefix="kennel-hot-"))
    config = {"warm_pool": 0}
    config.update(json.loads(a.config))
    if a.kennel:
        # benchlib runs BUILDDIR/gateway/kennel: a private tree of links
        config.setdefault("launcher", str(builddir / "kernel-launcher/kennel-launch"))
        fake = work / "tree"
        (fake / "gateway").mkdir(parents=True)
        (fake / "gateway" / "kennel").symlink_to(pathlib.Path(a.kennel).resolve())
        (fake / "kernel-launcher").symlink_to(builddir / "kernel-launcher")
        gw = B.KennelGateway(fake, work, extra_config=config, transport_args=a.serve_args.split())
    else:
        gw = B.KennelGateway(builddir, work, extra_config=config, transport_args=a.serve_args.split())
    try:
        reply = gw.open(["hot"])[0]
        assert reply.get("status") == "ok", reply
        conn = work / "hot.json"
        conn.write_text(json.dumps(reply["connection"]))
        t0 = time.time()
        for start in range(0, a.idle, 50):
            ids = [f"idle-{i}" for i in range(start, min(a.idle, start + 50))]
            bad = [r for r in gw.open(ids, in_flight=8, timeout=300) if r.get("status") != "ok"]
            if bad:
                raise RuntimeError(f"open failed: {bad[0]}")
        if a.idle:
            print(json.dumps({"idle_opened": a.idle, "seconds": round(time.time() - t0, 1)}), flush=True)
        profiler = None
        if a.perf:
            profiler = subprocess.Popen(["perf", "record", "--call-graph", "dwarf,16384", "-F", "2000", "-o", a.perf, "-p", str(gw.proc.pid)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        for run in range(a.runs):
            tracer = None
            if a.strace:
                trace_out = work / f"strace-{run}.txt"
                tracer = subprocess.Popen(["strace", "-c", "-f", "-o", str(trace_out), "-p", str(gw.proc.pid)],
                                          stderr=subprocess.DEVNULL)
                time.sleep(0.5)
            cpu0 = B.cpu_seconds(gw.proc.pid)
            res = bench_rtt(builddir, conn, a.n, a.w)
            cpu = B.cpu_seconds(gw.proc.pid) - cpu0
            out = {"idle": a.idle, "p50_us": res["p50_us"], "p99_us": res["p99_us"],
                   "daemon_cpu_us_per_rtt": round(cpu * 1e6 / (a.n + a.w + 1), 1)}
            if tracer:
                tracer.send_signal(signal.SIGINT)
                tracer.wait()
                calls = strace_summary(trace_out)
                per = a.n + a.w + 1
                out["syscalls_per_rtt"] = round(sum(calls.values()) / per, 1)
                out["top"] = {k: round(v / per, 1) for k, v in sorted(calls.items(), key=lambda kv: -kv[1])[:8]}
            print(json.dumps(out), flush=True)
            if a.direct:
                d = bench_rtt(builddir, None, a.n, a.w)
                print(json.dumps({"direct_p50_us": d["p50_us"], "direct_p99_us": d["p99_us"],
                                  "gateway_added_us": round(res["p50_us"] - d["p50_us"], 1)}), flush=True)
        if profiler:
            profiler.send_signal(signal.SIGINT)
            profiler.wait()
    finally:
        gw.stop()


if __name__ == "__main__":
    main()
