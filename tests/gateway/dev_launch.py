#!/usr/bin/python3
"""An UNCONFINED stand-in for `kennel-launch --spec-fd N`, for the gateway's
tests while the confined launcher is elsewhere in the tree.

It speaks the launch-spec protocol of kernel-launcher/README.md exactly as
the gateway sees it (spec on fd N, one status line on status_fd, the kernel's
ipc sockets k-<port> in run_dir), but confines nothing: it reports no layers
as active, rewrites the connection file's ip from /run/kennel/k to the host
path of run_dir, and execs the kernel. The builtin "python" kernel is
ipykernel here (KENNEL_TEST_KERNEL=pykernel uses `kennel-launch --unconfined
--python` when that is built). Never use it outside tests.
"""
import json
import os
import sys


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "--spec-fd":
        print("dev_launch: usage: dev_launch.py --spec-fd N", file=sys.stderr)
        return 2
    with os.fdopen(int(sys.argv[2]), "r") as f:
        spec = json.load(f)
    run_dir = spec["run_dir"]
    with open(os.path.join(run_dir, "kernel.json")) as f:
        conn = json.load(f)
    conn["ip"] = os.path.join(run_dir, "k")
    dev_conn = os.path.join(run_dir, "kernel-dev.json")
    with open(dev_conn, "w") as f:
        json.dump(conn, f)
    os.chdir(spec["workspace"])
    env = {"PATH": "/usr/bin:/bin", "HOME": spec["workspace"], "LANG": "C.UTF-8", "TERM": "dumb",
           "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}
    env.update(spec.get("env", {}))
    kernel = spec["kernel"]
    if "argv" in kernel:
        argv = [a.replace("{connection_file}", dev_conn) for a in kernel["argv"]]
    elif os.environ.get("KENNEL_TEST_KERNEL") == "pykernel":
        argv = [os.environ["KENNEL_TEST_LAUNCH"], "--unconfined", "--python", "-f", dev_conn]
    else:
        argv = ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", dev_conn]
    status = {"status": "confined", "pid": os.getpid(),
              "layers": {"dev": {"state": "unsupported", "reason": "tests/gateway/dev_launch.py confines nothing"}}}
    fd = spec["status_fd"]
    os.write(fd, (json.dumps(status) + "\n").encode())
    os.close(fd)
    os.execve(argv[0], argv, env)


if __name__ == "__main__":
    sys.exit(main())
