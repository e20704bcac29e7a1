"""The host module's client_context with a gateway serving `--transport
tcp` (every socket a CurveZMQ server), called as README.md does:
`BlockingKernelClient(context=kennel.client_context(conn))` with Debian's
jupyter_client 7.4.9, whose context trait takes only a zmq.asyncio.Context;
and plain pyzmq sockets from an explicit zmq.Context base."""
import zmq
from jupyter_client import BlockingKernelClient

import kennel
from kennel_testlib import Control


def test_a_blocking_kernel_client_on_client_context_runs_over_curve(make_gateway):
    gw = make_gateway(transport="tcp")
    assert "curve_serverkey" in gw.control.info
    reply = gw.control.open("tcp-readme")
    assert reply["status"] == "ok", reply
    conn = reply["connection"]
    assert conn["transport"] == "tcp" and "curve_secretkey" in conn
    kc = BlockingKernelClient(context=kennel.client_context(conn))
    kc.load_connection_info(conn)
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=30)
        out = []
        reply = kc.execute_interactive("print(6 * 7)", timeout=30,
                                       output_hook=lambda m: out.append(m["content"].get("text", "")))
        assert reply["content"]["status"] == "ok", reply
        assert "".join(out) == "42\n"
    finally:
        kc.stop_channels()


def test_plain_sockets_from_a_blocking_base(make_gateway):
    """kennel.client_context(info, zmq.Context.instance()): a plain
    (blocking) DEALER on the control socket, CURVE keys set."""
    gw = make_gateway(transport="tcp")
    info = Control(gw.conn_file).info
    sock = kennel.client_context(info, zmq.Context.instance()).socket(zmq.DEALER)
    assert not isinstance(sock, zmq.asyncio.Socket)
    sock.close(0)
    conv = kennel.Gateway.from_connection_file(gw.conn_file).open("tcp-module")
    try:
        assert conv.run("print(7 * 6)").stdout == "42\n"
    finally:
        conv.close()
