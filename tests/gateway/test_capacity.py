"""The gateway refuses conversation_open with CapacityError, naming the
limit, when another conversation would not fit in its file descriptors
(RLIMIT_NOFILE), instead of czmq aborting in zsock_new; it keeps serving.

The limit is lowered on the running daemon (prlimit): lowered before the
start, the hard limit would also stop the sandbox from giving each kernel
its own RLIMIT_NOFILE of 1024 (confinement's rlimits step refuses)."""
import os
import resource

from gwtest import execute, stdout_of


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def capacity(gw):
    return gw.control.request("gateway_info_request")["content"]["capacity"]


def test_low_rlimit_nofile_refuses_cleanly_and_keeps_serving(make_gateway):
    gw = make_gateway(config={"warm_pool": 1})
    pid = gw.proc.pid
    start = capacity(gw)
    assert start["conversations"] == 64 and start["rlimit_nofile"] >= 1024, start
    clients = {cid: gw.open_client(cid)[1] for cid in ("a", "b")}
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    tiny = open_fds(pid) + 30
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (tiny, hard))
    assert capacity(gw)["rlimit_nofile"] == tiny
    for attempt in range(3):
        refused = gw.control.open(f"c{attempt}")
        assert refused["status"] == "error" and refused["ename"] == "CapacityError", refused
        assert f"RLIMIT_NOFILE {tiny}" in refused["evalue"], refused
    assert not any(e["conversation"].startswith("c") for e in gw.events("open") if "conversation" in e)
    # still serving: the open conversations execute
    for cid, kc in clients.items():
        reply, outputs = execute(kc, f"print('{cid}', flush=True)")
        assert stdout_of(outputs) == f"{cid}\n"
    # room again: the next open succeeds
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
    _, kc = gw.open_client("again")
    assert execute(kc, "1 + 1")[0]["content"]["status"] == "ok"
    assert gw.proc.poll() is None
    assert gw.stop() == 0


def test_a_start_without_the_fds_it_needs_names_rlimit_nofile(tmp_path):
    """Started under a hard RLIMIT_NOFILE below what the gateway needs for
    itself: one line naming the limit and how to raise it, exit 2. Before,
    by the limit: 4 "cannot open the log file", 5 "cannot create the event
    loop's epoll set", 10 libzmq's abort "Too many open files
    (src/epoll.cpp:65)", 16 "cannot set up the HTTP front's event loop
    (libuv)"."""
    import subprocess
    from gwtest import built
    for n in (4, 5, 10, 16, 100):
        out = subprocess.run(["prlimit", f"--nofile={n}", str(built("gateway/kennel")), "serve", "--state-dir",
                              str(tmp_path / f"state{n}"), "--log-file", str(tmp_path / f"log{n}"),
                              "--http", "127.0.0.1:0"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and out.stderr.splitlines() == [
            f"kennel: RLIMIT_NOFILE is {n} (hard limit {n}): the gateway needs at least 192 open files for itself "
            "(ZeroMQ's threads, its sockets and pipes, launches, /proc reads) before any conversation; raise the "
            "hard limit (ulimit -Hn, or LimitNOFILE= in its systemd unit)"], (n, out.stderr[-2000:])
