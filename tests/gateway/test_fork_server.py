"""The gateway's fork server: `kennel serve` starts one zygote
(kennel-launch --zygote), python kernels are forked from it once it is
ready, a zygote killed with SIGKILL is logged and restarted while kernels
start directly, and SIGTERM of the daemon leaves neither zygote nor socket."""
import os
import pathlib
import signal
import subprocess
import threading
import time

import pytest

from gwtest import built, execute, gone, stdout_of
from kennel_testlib import wait_until


def info(gw):
    return gw.control.request("gateway_info_request")["content"]["fork_server"]


def wait_ready(gw, timeout=20, not_pid=None):
    def ready():
        fs = info(gw)
        return fs if fs["ready"] and fs["pid"] != not_pid else None

    return wait_until(ready, timeout, lambda: f"the fork server is not ready: {info(gw)} "
                      f"{gw.events('fork_server_exited')}")


def ancestors(pid):
    """pid's parent chain up to init, from /proc/PID/status PPid."""
    chain = []
    while pid > 1:
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
        pid = int(next(line for line in status.splitlines() if line.startswith("PPid:")).split()[1])
        chain.append(pid)
    return chain


def kernel_pid(gw, conversation_id):
    listed = gw.control.request("conversation_list_request")["content"]["conversations"]
    return next(c["pid"] for c in listed if c["conversation_id"] == conversation_id)


def test_kernels_are_forked_from_the_zygote_and_isolated(make_gateway):
    gw = make_gateway(config={"warm_pool": 0})
    fs = wait_ready(gw)
    assert fs["enabled"] and fs["preload"] == [] and fs["pid"] > 0
    assert (gw.state / "zygote.sock").exists()
    _, a = gw.open_client("a")
    _, b = gw.open_client("b")
    assert execute(a, "secret = 41")[0]["content"]["status"] == "ok"
    reply, outputs = execute(b, "print('secret' in globals(), flush=True)")
    assert reply["content"]["status"] == "ok" and stdout_of(outputs) == "False\n"
    reply, outputs = execute(a, "print(secret + 1, flush=True)")
    assert stdout_of(outputs) == "42\n"
    pa, pb = kernel_pid(gw, "a"), kernel_pid(gw, "b")
    assert pa != pb
    assert fs["pid"] in ancestors(pa) and fs["pid"] in ancestors(pb)
    assert gw.stop() == 0


def test_preload_reaches_the_kernels(make_gateway):
    gw = make_gateway(config={"warm_pool": 0, "fork_server": {"preload": ["fractions"]}})
    fs = wait_ready(gw)
    assert fs["preload"] == ["fractions"]
    _, kc = gw.open_client("p")
    reply, outputs = execute(kc, "import sys; print('fractions' in sys.modules, flush=True)")
    assert stdout_of(outputs) == "True\n"
    assert any("preloaded: fractions" in e["line"] for e in gw.events("fork_server_output"))
    assert gw.stop() == 0


IPYTHON_LOADED = "import sys; print('IPython' in sys.modules, flush=True)"


def test_forked_kernels_share_the_zygotes_ipython_shell(make_gateway):
    """The fork server builds IPython's shell before it forks: its kernels
    have it before any cell asks (pykernel/README.md, "IPython")."""
    gw = make_gateway(config={"warm_pool": 0})
    wait_ready(gw)
    _, kc = gw.open_client("forked")
    assert stdout_of(execute(kc, IPYTHON_LOADED)[1]) == "True\n"
    assert gw.stop() == 0


def test_a_direct_kernel_builds_the_shell_when_a_cell_needs_it(make_gateway):
    """Without the fork server the kernel answers plain Python before
    IPython is imported (issue 17) and builds the shell for a magic."""
    gw = make_gateway(config={"warm_pool": 0, "fork_server": {"enabled": False}})
    _, kc = gw.open_client("direct")
    assert stdout_of(execute(kc, IPYTHON_LOADED)[1]) == "False\n"
    reply, outputs = execute(kc, "%time y = 1")
    assert reply["content"]["status"] == "ok" and "Wall time" in stdout_of(outputs), outputs
    assert stdout_of(execute(kc, "print(In[1], y, flush=True)")[1]) == IPYTHON_LOADED + " 1\n"
    assert gw.stop() == 0


def test_killed_zygote_is_restarted_and_opens_keep_working(make_gateway):
    gw = make_gateway(config={"warm_pool": 0})
    first = wait_ready(gw)["pid"]
    _, before = gw.open_client("before")
    os.kill(first, signal.SIGKILL)
    # at once: the socket is gone or refuses, the kernel starts directly
    _, kc = gw.open_client("during")
    assert execute(kc, "x = 1")[0]["content"]["status"] == "ok"
    fs = wait_ready(gw, not_pid=first)
    assert fs["restarts"] == 1
    exited = gw.events("fork_server_exited")
    assert exited and exited[0]["pid"] == first and "SIGKILL" in exited[0]["cause"] and exited[0]["restarting"]
    _, after = gw.open_client("after")
    assert execute(after, "y = 2")[0]["content"]["status"] == "ok"
    assert fs["pid"] in ancestors(kernel_pid(gw, "after"))
    assert gw.stop() == 0


def launchers_waiting_on_the_zygote(gw):
    """The gateway's kennel-launch children blocked in recvmsg (x86_64 47):
    they have connected to the zygote and sent their request."""
    waiting = []
    for child in pathlib.Path(f"/proc/{gw.proc.pid}/task/{gw.proc.pid}/children").read_text().split():
        try:
            if pathlib.Path(f"/proc/{child}/syscall").read_text().split()[0] == "47":
                waiting.append(int(child))
        except (OSError, IndexError):
            pass
    return waiting


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86_64 syscall numbers from /proc/PID/syscall")
def test_a_request_the_dying_zygote_never_took_starts_the_kernel_directly(make_gateway):
    """The zygote dies with a launcher's request still in its listen backlog
    (stopped, then killed, so the window is held open): no child of it has
    the request, so the launcher starts the kernel itself instead of
    failing the open."""
    gw = make_gateway(config={"warm_pool": 0})
    zygote = wait_ready(gw)["pid"]
    os.kill(zygote, signal.SIGSTOP)
    replies = []
    opener = threading.Thread(target=lambda: replies.append(gw.control.open("backlog")))
    opener.start()
    deadline = time.time() + 20
    while not launchers_waiting_on_the_zygote(gw):
        assert time.time() < deadline, "no launcher connected to the stopped zygote"
        time.sleep(0.01)
    os.kill(zygote, signal.SIGKILL)
    opener.join(30)
    assert replies and replies[0]["status"] == "ok", replies
    kc = gw.client(replies[0]["connection"])
    assert execute(kc, "x = 1; print(x)")[0]["content"]["status"] == "ok"
    assert zygote not in ancestors(kernel_pid(gw, "backlog"))
    assert gw.stop() == 0


def test_sigterm_leaves_no_zygote_and_no_socket(make_gateway):
    gw = make_gateway(config={"warm_pool": 1})
    pid = wait_ready(gw)["pid"]
    _, kc = gw.open_client("c")
    assert execute(kc, "z = 3")[0]["content"]["status"] == "ok"
    socket = gw.state / "zygote.sock"
    assert gw.stop() == 0  # stop() also asserts the state dir is empty
    assert gone(pid, timeout=1) and not socket.exists()
    assert [e["pid"] for e in gw.events("fork_server_stopped")] == [pid]


def test_disabled_starts_no_zygote(make_gateway):
    gw = make_gateway(config={"warm_pool": 0, "fork_server": {"enabled": False}})
    _, kc = gw.open_client("d")
    assert execute(kc, "w = 4")[0]["content"]["status"] == "ok"
    fs = info(gw)
    assert fs == {"enabled": False, "ready": False, "preload": [], "pid": 0, "restarts": 0}
    assert not (gw.state / "zygote.sock").exists() and not gw.events("fork_server_start")
    assert gw.stop() == 0


@pytest.mark.parametrize("fork_server, message", [
    ([], "fork_server must be an object"),
    ({"enabled": "yes"}, "fork_server.enabled must be true or false"),
    ({"preload": ["numpy,pandas"]}, "fork_server.preload[0] must be a module name"),
    ({"preloads": []}, 'unknown key "fork_server.preloads"'),
])
def test_bad_fork_server_config_is_refused(tmp_path, fork_server, message):
    import json
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"fork_server": fork_server}))
    r = subprocess.run([str(built("gateway/kennel")), "serve", "--state-dir", str(tmp_path / "state"), "--config",
                        str(cfg)], capture_output=True, text=True, timeout=20,
                       env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
    assert r.returncode == 2 and message in r.stderr, r.stderr
