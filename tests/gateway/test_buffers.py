"""Binary buffers of comm messages through the gateway's ZeroMQ front, with
jupyter_client: a kernel's buffers reach the client unchanged, a client's
reach the kernel's on_msg, and they count in the execution's output_bytes
(over the limit the comm message is dropped, the truncation marker says
so, as for any other output)."""
from gwtest import execute
from kennel_testlib import iopub_until_idle

# bytes that are no UTF-8, and an empty buffer
BUFFERS = [bytes.fromhex("89504e470d0a1a0a") + bytes(range(256)), b"", b"\x00\x01"]

MIRROR = ("from ipykernel.comm import Comm\n"
          "def opened(comm, msg):\n"
          "    comm.on_msg(lambda m: comm.send({'types': [type(b).__name__ for b in m['buffers']]},\n"
          "                                    buffers=[bytes(b)[::-1] for b in m['buffers']]))\n"
          "get_ipython().kernel.comm_manager.register_target('mirror', opened)")


def comm_messages(outputs):
    return [(m["content"]["data"], [bytes(b) for b in m["buffers"]]) for m in outputs if m["msg_type"] == "comm_msg"]


def send_comm(kc, msg_type, content, buffers=None):
    """A comm message with buffers; the iopub messages it caused."""
    msg = kc.session.msg(msg_type, content)
    kc.session.send(kc.shell_channel.socket, msg, buffers=buffers)
    return iopub_until_idle(kc, msg["header"]["msg_id"], 30)


def test_buffers_cross_the_gateway_both_ways(gateway):
    _, kc = gateway.open_client("buffers")
    r, out = execute(kc, MIRROR + f"\nc = Comm(target_name='blobs')\nc.send({{'n': 2}}, buffers={BUFFERS!r})")
    assert r["content"]["status"] == "ok", r["content"]
    assert comm_messages(out) == [({"n": 2}, BUFFERS)]
    send_comm(kc, "comm_open", {"comm_id": "m-1", "target_name": "mirror", "data": {}})
    out = send_comm(kc, "comm_msg", {"comm_id": "m-1", "data": {}}, BUFFERS)
    assert comm_messages(out) == [({"types": ["memoryview"] * 3}, [b[::-1] for b in BUFFERS])]


def test_buffers_count_in_output_bytes(gateway):
    _, kc = gateway.open_client("buffers-limit", policy={"output_bytes": 10000})
    r, out = execute(kc, "from ipykernel.comm import Comm\n"
                         "c = Comm(target_name='blobs')\n"
                         "c.send({'n': 1}, buffers=[b'x' * 4000])\n"
                         "c.send({'n': 2}, buffers=[b'y' * 4000, b'z' * 4000])\n"
                         "print('after')")
    assert r["content"]["status"] == "ok", r["content"]
    assert comm_messages(out) == [({"n": 1}, [b"x" * 4000])]
    text = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")
    assert "output truncated" in text
    k = r["metadata"]["kennel"]
    assert k["output_truncated"] is True and k["output_bytes"] > 12000


def test_buffers_over_max_message_bytes_are_dropped_both_ways(gateway):
    """max_message_bytes (1 MiB here) covers every frame: a 1.5 MiB buffer
    is dropped and logged as oversize from the kernel and from the client;
    the kernel and the comm go on."""
    _, kc = gateway.open_client("buffers-big")
    r, out = execute(kc, MIRROR + "\nc = Comm(target_name='blobs')\n"
                                  "c.send({'n': 1}, buffers=[b'x' * (3 << 19)])\n"
                                  "c.send({'n': 2}, buffers=[b'small'])")
    assert r["content"]["status"] == "ok", r["content"]
    assert comm_messages(out) == [({"n": 2}, [b"small"])]
    send_comm(kc, "comm_open", {"comm_id": "m-2", "target_name": "mirror", "data": {}})
    # dropped before the kernel: no busy/idle to wait for; the next one answers alone
    kc.session.send(kc.shell_channel.socket, kc.session.msg("comm_msg", {"comm_id": "m-2", "data": {}}),
                    buffers=[b"y" * (3 << 19)])
    out = send_comm(kc, "comm_msg", {"comm_id": "m-2", "data": {}}, [b"ab"])
    assert comm_messages(out) == [({"types": ["memoryview"]}, [b"ba"])]
    sources = {(e["from"], e["channel"]) for e in gateway.events("bad_message")
               if e.get("conversation") == "buffers-big" and e["reason"] == "oversize"}
    assert len(sources) == 2, gateway.events("bad_message")
