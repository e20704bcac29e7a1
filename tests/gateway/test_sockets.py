"""What arrives on the gateway's sockets is bounded, validated and cannot
redirect it (red-team findings F2, F3, F6, F10, F11 and the replay note;
tests/security has no gateway of its own, so these live here).

The kernel side is attacked from inside a confined kernel with plain Python
(no ctypes): the gateway's accepted connections are visible in the kernel's
/proc/self/fd, and raw ZMTP bytes written on one of them reach the
gateway's ZeroMQ decoder as if the kernel's own socket had sent them."""
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest
import zmq
from jupyter_client.session import Session

from gwtest import execute, gone

MIB = 1 << 20

# Runs inside the kernel: the accepted (gateway) connections of its sockets.
KERNEL_PRELUDE = textwrap.dedent("""
    import os, socket, select, time
    def accepted(path):
        out = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                link = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if not link.startswith("socket:["):
                continue
            s = socket.socket(fileno=os.dup(int(fd)))
            try:
                name = s.getsockname()
                try:
                    s.getpeername(); connected = True
                except OSError:
                    connected = False
            finally:
                s.close()
            if name == path and connected:
                out.append(int(fd))
        return out
    def write_all(fd, data):
        view = memoryview(data)
        while view:
            try:
                n = os.write(fd, view)
            except BlockingIOError:
                select.select([], [fd], [], 1)
                continue
            view = view[n:]
    def zmtp_long_frame_header(size, more=False):
        return bytes([0x02 | (1 if more else 0)]) + size.to_bytes(8, "big")
""")


def vm_hwm_kb(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise KeyError("VmHWM")


def run_in_kernel(kc, code, timeout=60):
    return execute(kc, KERNEL_PRELUDE + textwrap.dedent(code), timeout=timeout)


def test_kernel_cannot_make_gateway_connect_elsewhere(gateway, tmp_path):
    """F10: the kernel replaces its socket paths with symlinks to a host unix
    socket and drops the gateway's connections. The gateway must not
    reconnect (as root, following the symlink); it kills the kernel and
    tells the client why."""
    host_dir = pathlib.Path(tempfile.mkdtemp(prefix="kennel-hostsvc-"))
    host_path = host_dir / "hostsvc.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(host_path))
    listener.listen(8)
    listener.settimeout(0.2)
    try:
        _, kc = gateway.open_client("redirect")
        execute(kc, "x = 1")
        reply, _ = run_in_kernel(kc, f"""
            for n in range(1, 5):
                path = f"/run/kennel/k-{{n}}"
                fds = accepted(path)
                os.unlink(path)
                os.symlink({str(host_path)!r}, path)
                for fd in fds:
                    s = socket.socket(fileno=os.dup(fd)); s.shutdown(socket.SHUT_RDWR); s.close()
            time.sleep(3)
        """, timeout=30)
        # the reply of this very execution could not come back on the closed
        # shell connection: the gateway answered it for the killed kernel
        c = reply["content"]
        assert c["status"] == "error" and c["ename"] == "KernelDied", c
        assert "closed its" in c["evalue"], c
        connected = []
        deadline = time.time() + 2
        while time.time() < deadline:
            try:
                conn, _ = listener.accept()
                connected.append(conn)
            except socket.timeout:
                pass
        assert not connected, "the gateway connected to the host socket the kernel's symlink named"
        assert gateway.events("kernel_channel_closed")
        # the next request gets a fresh kernel
        reply, outputs = execute(kc, "print(1 + 1)")
        assert reply["content"]["status"] == "ok"
    finally:
        listener.close()
        host_path.unlink(missing_ok=True)
        host_dir.rmdir()


def test_kernel_big_frame_is_refused_before_allocation(gateway):
    """F3: the kernel announces a 512 MiB frame on the gateway's iopub
    connection and streams it. ZeroMQ must refuse it from its header
    (ZMQ_MAXMSGSIZE: 2 x max_message_bytes, 2 MiB here): the gateway's peak
    RSS grows by far less than the frame."""
    _, kc = gateway.open_client("bigframe")
    execute(kc, "x = 1")
    before = vm_hwm_kb(gateway.proc.pid)
    reply, _ = run_in_kernel(kc, """
        time.sleep(0.5)  # our busy and execute_input are out: the connection is between messages
        [fd] = accepted("/run/kennel/k-2")
        size = 512 << 20
        chunk = bytes(1 << 20)
        sent = 0
        try:
            write_all(fd, zmtp_long_frame_header(size))
            for _ in range(size // len(chunk)):
                write_all(fd, chunk); sent += len(chunk)
        except OSError as e:
            print("refused after", sent, e)
        time.sleep(2)
    """, timeout=60)
    after = vm_hwm_kb(gateway.proc.pid)
    assert (after - before) * 1024 < 64 * MIB, (before, after)
    # the connection that sent it is gone: the kernel was killed and the
    # client told (a legitimate kernel never sends such a frame)
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KernelDied", reply["content"]
    reply, _ = execute(kc, "print(2)")
    assert reply["content"]["status"] == "ok"


KERNEL_PUBLISH = textwrap.dedent("""
    import sys
    f = sys._getframe()
    while f.f_code.co_filename != "<kennel>":
        f = f.f_back
    publish = f.f_globals["_publish_raw"]
""")


def test_kernel_frames_a_client_cannot_read_are_dropped(gateway):
    """F11: signed but unreadable kernel messages are not relayed: here a
    display_data 2,000 levels deep (jansson, in the kernel, takes it;
    Python's json, in the client, raised RecursionError). The execution ends
    normally, the drop is logged. The other malformations (bad JSON, UTF-8,
    headers without msg_id) are gw_unit's gw_peek_check cases."""
    _, kc = gateway.open_client("malformed")
    deep = "[" * 2000 + "]" * 2000
    reply, outputs = execute(kc, KERNEL_PUBLISH + textwrap.dedent(f"""
        publish("display_data", '{{"data": {{"application/json": {deep}}}, "metadata": {{}}}}')
        publish("display_data", '{{"data": {{"text/plain": "fine"}}, "metadata": {{}}}}')
    """))
    assert reply["content"]["status"] == "ok"
    shown = [m["content"]["data"] for m in outputs if m["msg_type"] == "display_data"]
    assert shown == [{"text/plain": "fine"}], shown
    bad = [e for e in gateway.events("bad_message") if e["from"] == "kernel"]
    assert any(e["reason"] == "invalid_json" for e in bad), bad
