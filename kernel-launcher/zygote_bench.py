"""Measures the zygote against a direct launch (run by hand as root, not a
test): start → first execute_reply (median of N) and PSS per idle kernel at
N kernels, bare and with numpy and pandas imported (preloaded in the
zygote). Kernels are launched as the gateway does, `kennel-launch --spec-fd`.

    KENNEL_BUILDDIR=/work/build ASAN_OPTIONS=detect_leaks=0 \\
        /usr/bin/python3 kernel-launcher/zygote_bench.py [--n 10] [--json FILE]

Use a build without sanitizers for numbers that mean anything."""
import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "security"))
from jupyter_client import BlockingKernelClient  # noqa: E402
from test_zygote import Kernel, Zygote, connection  # noqa: E402


def pss_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def children(pid):
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            out += [int(c) for c in open(f"/proc/{pid}/task/{task}/children").read().split()]
        except FileNotFoundError:
            pass
    return out


def kernel_processes(k, zygote_pid):
    """The proxy (or launcher), the waiter, init, the kernel and its children."""
    pids = {k.proc.pid}
    pid = k.status["pid"]
    while pid not in (k.proc.pid, zygote_pid, 1):
        pids.add(pid)
        pid = parent(pid)
    todo = [k.status["pid"]]
    while todo:
        pid = todo.pop()
        pids.add(pid)
        todo += children(pid)
    return pids


def start_to_reply(scratch, zygote_path):
    """Launch → the execute_reply of `x = 1`. The client connects once the
    kernel's ipc sockets exist (jupyter_client's wait_for_ready and ZeroMQ's
    100 ms ipc reconnect interval would otherwise dominate)."""
    t0 = time.perf_counter()
    k = Kernel(scratch, zygote_path)
    while not all((k.run_dir / f"k-{port}").exists() for port in range(1, 6)):
        time.sleep(0.001)
    kc = k.kc = BlockingKernelClient()
    kc.load_connection_info(connection(str(k.run_dir / "k")))
    kc.start_channels()
    msg_id = kc.execute("x = 1")
    reply = kc.get_shell_msg(timeout=30)
    elapsed = time.perf_counter() - t0
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "ok"
    k.close()
    return elapsed * 1000


def pss_per_kernel(scratch, zygote, n, code):
    ks = [Kernel(scratch, zygote.path if zygote else None) for _ in range(n)]
    try:
        for k in ks:
            assert k.run(code)[0] == "ok"
        time.sleep(1)  # idle
        zpid = zygote.proc.pid if zygote else None
        kernels = sum(pss_kb(p) for k in ks for p in kernel_processes(k, zpid))
        zyg = pss_kb(zpid) if zygote else 0
        return {"per_kernel_mb": kernels / n / 1024, "zygote_mb": zyg / 1024,
                "per_kernel_with_zygote_share_mb": (kernels + zyg) / n / 1024}
    finally:
        for k in ks:
            k.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--json")
    args = ap.parse_args()
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="kennel-zbench-"))
    os.chmod(scratch, 0o755)
    results = {}
    for label, preload, code in (("bare", None, "x = 1"),
                                 ("numpy+pandas", "numpy,pandas", "import numpy, pandas\nx = 1")):
        z = Zygote(scratch, preload=preload)
        try:
            direct = [start_to_reply(scratch, None) for _ in range(args.n)]
            forked = [start_to_reply(scratch, z.path) for _ in range(args.n)]
            results[label] = {
                "start_ms_direct": statistics.median(direct),
                "start_ms_zygote": statistics.median(forked),
                "pss_direct": pss_per_kernel(scratch, None, args.n, code),
                "pss_zygote": pss_per_kernel(scratch, z, args.n, code),
            }
        finally:
            z.stop()
        r = results[label]
        print(f"{label:13} start→reply median of {args.n}: direct {r['start_ms_direct']:.1f} ms, "
              f"zygote {r['start_ms_zygote']:.1f} ms")
        print(f"{'':13} PSS per idle kernel at {args.n}: direct {r['pss_direct']['per_kernel_mb']:.1f} MB, "
              f"zygote {r['pss_zygote']['per_kernel_mb']:.1f} MB "
              f"({r['pss_zygote']['per_kernel_with_zygote_share_mb']:.1f} MB with a 1/{args.n} share of the "
              f"zygote's {r['pss_zygote']['zygote_mb']:.1f} MB)")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    os.system(f"rm -rf {scratch}")


if __name__ == "__main__":
    main()
