"""A jupyter_client client used from a worker thread, then closed, does not
take the iopub of the next conversation's client with it. jupyter_client 7
runs a blocking client's calls on the calling thread's asyncio loop; pyzmq
removed a closed socket's fd only from the last loop it was used in, so the
main thread's loop kept the fd registered, and a new socket given the same
fd number (here the next client's iopub) was never watched there: its
messages came only when a poll timed out (the shell replies, on another fd,
arrived). kennel.client_context makes the sockets loopsafe. Real daemon,
kernels and jupyter_client."""
import asyncio
import threading

from gwtest import execute, stdout_of


def main_loop_fds():
    return set(asyncio.get_event_loop_policy().get_event_loop()._selector.get_map())


def test_a_client_used_from_a_thread_leaves_no_fd_behind(make_gateway):
    gw = make_gateway(config={"warm_pool": 0})
    _, first = gw.open_client("first")
    fds = {first.shell_channel.socket.FD, first.iopub_channel.socket.FD}
    assert fds <= main_loop_fds()   # wait_for_ready polled them here
    worker = threading.Thread(target=execute, args=(first, "1"))
    worker.start()
    worker.join(60)
    first.stop_channels()
    gw.clients.remove(first)
    assert not fds & main_loop_fds()
    _, second = gw.open_client("second")
    r, out = execute(second, "print(6 * 7)", timeout=10)
    assert r["content"]["status"] == "ok"
    assert stdout_of(out).strip() == "42"
