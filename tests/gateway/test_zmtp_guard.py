"""A kernel's endless multipart message (issue 12, the residual of F3).

ZMQ_MAXMSGSIZE bounds each frame and the high-water marks count complete
messages, so ZeroMQ alone buffers a message whose frames all carry MORE
for as long as the kernel writes. The gateway checks the kernel side's
ZMTP framing before ZeroMQ reads it (gateway/gw_zmtp_guard.c) and cuts the
connection of a kernel whose message passes 2 x max_message_bytes (2 MiB
here) or GW_ZMTP_FRAMES_MAX frames.

Each attack runs inside a real confined kernel, in plain Python, on the
gateway's accepted iopub connection (/proc/self/fd, as test_sockets.py):
- big: frames of 512 KiB with MORE set, up to 400 MiB;
- empty: frames of 0 bytes with MORE set, up to 4 million (8 MB on the
  wire; ZeroMQ keeps a 64-byte message for each, 256 MB).
Bounds: the gateway's VmHWM grows by less than 64 MiB (the message limit
and the guard's buffers are a few MiB; ASan's quarantine adds its own);
the attacker gets KernelDied naming the limit that was passed; a second
conversation answers during and after the attack; the attacker's
conversation works again with a fresh kernel."""
import queue
import statistics
import textwrap
import time

import pytest

from gwtest import execute
from test_daemon_under_attack import latency, reply_of
from test_sockets import KERNEL_PRELUDE, MIB, vm_hwm_kb

ATTACKS = {
    "big": ("bytes(512 << 10)", 800, "byte limit"),
    "empty": ("b''", 4_000_000, "frame limit"),
}

ATTACK = textwrap.dedent("""
    time.sleep(0.5)  # our busy and execute_input are out: the connection is between messages
    [fd] = accepted("/run/kennel/k-2")
    body = {body}
    header = (bytes([0x03]) + len(body).to_bytes(8, "big")) if len(body) > 255 else bytes([0x01, len(body)])
    batch = (header + body) * max(1, (1 << 20) // (len(header) + len(body)))
    per_batch = batch.count(header) if body else len(batch) // len(header)
    sent = 0
    try:
        while sent < {frames}:
            write_all(fd, batch)
            sent += per_batch
    except OSError as e:
        print("cut after", sent, "frames:", e)
    time.sleep(3)
""")


@pytest.mark.parametrize("kind", sorted(ATTACKS))
def test_kernel_endless_multipart_is_cut(gateway, kind):
    body, frames, limit_word = ATTACKS[kind]
    _, kc = gateway.open_client(f"endless-{kind}")
    _, victim = gateway.open_client(f"victim-{kind}")
    execute(kc, "x = 1")
    execute(victim, "y = 2")
    baseline = statistics.median(latency(victim) for _ in range(5))
    before = vm_hwm_kb(gateway.proc.pid)
    msg_id = kc.execute(KERNEL_PRELUDE + ATTACK.format(body=body, frames=frames))
    started = time.monotonic()
    samples = []
    while time.monotonic() - started < 3:
        samples.append(latency(victim))
        time.sleep(0.05)
    try:
        reply = reply_of(kc, msg_id, 30)
    except queue.Empty:  # the kernel's stream is stuck inside the endless message
        reply = None
    after = vm_hwm_kb(gateway.proc.pid)
    print(f"victim {baseline * 1000:.1f} ms before, {statistics.median(samples) * 1000:.1f} ms during "
          f"(max {max(samples) * 1000:.1f}); VmHWM {before} -> {after} kB")
    assert max(samples) < 5.0 and statistics.median(samples) < 10 * baseline + 0.1, (baseline, samples)
    assert (after - before) * 1024 < 64 * MIB, (before, after)
    assert reply, "no reply to the attacking execution"
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "KernelDied", c
    assert "cut the kernel's iopub connection" in c["evalue"] and limit_word in c["evalue"], c
    cuts = gateway.events("kernel_stream_cut")
    assert any(e["conversation"] == f"endless-{kind}" and e["channel"] == "iopub" for e in cuts), cuts
    reply, _ = execute(kc, "print(2)")
    assert reply["content"]["status"] == "ok"
