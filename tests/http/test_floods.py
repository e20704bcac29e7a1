"""Floods of the HTTP front from clients without the token and with it:
slowloris (connections that never finish their request head, plain and
TLS) next to the liveness probe, REST and websocket upgrades of other
clients; one client's or one kernel's share of max_connections; /files
transfers counted in it.

A client is its address: the floods come from 127.0.0.2 and up (all of
127.0.0.0/8 is this host's loopback, so a socket bound to 127.0.1.7 reaches
the gateway on 127.0.0.1 as its own client), the others from 127.0.0.1."""
import base64
import http.client
import os
import socket
import ssl
import subprocess
import threading
import time

import pytest

from httptest import start_kernel

FLOOD = 150
HEAD = b"GET /api HTTP/1.1\r\nHost: x\r\n"


def address(gw):
    host, port = gw.url.split("/")[2].rsplit(":", 1)
    return host, int(port)


class Loris:
    """count connections from sources (one address each, round robin), each
    sending `first` then one byte a second, reconnected when the gateway
    drops them, in a pool of threads until stop()."""

    def __init__(self, gw, count, sources, first=HEAD, tls=False):
        self.target, self.first, self.tls = address(gw), first, tls
        self.stopping = threading.Event()
        self.connects = 0
        self.threads = [threading.Thread(target=self.run, args=(sources[i % len(sources)],), daemon=True)
                        for i in range(count)]
        for t in self.threads:
            t.start()

    def run(self, source):
        while not self.stopping.is_set():
            try:
                with socket.socket() as s:
                    s.bind((source, 0))
                    s.settimeout(5)
                    s.connect(self.target)
                    self.connects += 1
                    s.sendall(self.first)
                    while not self.stopping.wait(1):
                        s.sendall(b"X" if not self.tls else b"\x00")
            except OSError:
                self.stopping.wait(0.05)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(10)


def sources(n, first="127.0.1."):
    return [f"{first}{2 + i}" for i in range(n)]


def probe(gw, kid, seconds, context=None):
    """What other clients get meanwhile: /healthz (the liveness probe,
    timeoutSeconds 5 in the k8s manifests), an authenticated REST request
    and a websocket upgrade, in turn for seconds; each as (what, ok,
    seconds taken)."""
    host, port = address(gw)
    results = []
    deadline = time.monotonic() + seconds
    asks = [("healthz", "GET", "/healthz", {}),
            ("rest", "GET", f"/api/kernels/{kid}", {"Authorization": f"token {gw.token}"}),
            ("upgrade", "GET", f"/api/kernels/{kid}/channels",
             {"Authorization": f"token {gw.token}", "Upgrade": "websocket", "Connection": "Upgrade",
              "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(), "Sec-WebSocket-Version": "13"})]
    i = 0
    while time.monotonic() < deadline:
        what, method, path, headers = asks[i % len(asks)]
        i += 1
        began = time.monotonic()
        if context:
            c = http.client.HTTPSConnection(host, port, timeout=5, context=context)
        else:
            c = http.client.HTTPConnection(host, port, timeout=5)
        try:
            c.request(method, path, headers=headers)
            status = c.getresponse().status
            ok = status == (101 if what == "upgrade" else 200)
        except OSError:
            ok = False
        finally:
            c.close()
        results.append((what, ok, round(time.monotonic() - began, 2)))
        time.sleep(0.2)
    return results


def flooded(gw, loris, seconds=10, context=None):
    kid = start_kernel(gw)["id"] if not context else None
    if context:
        import requests
        kid = requests.post(gw.url + "api/kernels", headers={"Authorization": f"token {gw.token}"},
                            verify=gw.certfile, timeout=60).json()["id"]
    flood = loris()
    try:
        time.sleep(3)  # the flood holds what it can
        results = probe(gw, kid, seconds, context)
    finally:
        flood.stop()
    failed = [r for r in results if not r[1]]
    print(f"{len(results) - len(failed)} of {len(results)} answered during the flood "
          f"({flood.connects} flood connections); slowest {max(r[2] for r in results)} s; failed {failed}")
    return results, failed, flood


@pytest.mark.parametrize("spread", ["one address", "150 addresses"])
def test_slowloris_leaves_room_for_everyone_else(make_http_gateway, spread):
    """150 connections that send a request head one byte a second (and are
    reconnected when dropped), from one address or from 150: every
    /healthz, REST request and upgrade of another client is answered, each
    within the liveness probe's 5 s. Before: 0 of 6 /healthz and REST
    answered (libwebsockets' header pool of 64 was held by the flood, the
    rest waited for it and were dropped after 5 s)."""
    gw = make_http_gateway()
    spread_sources = ["127.0.0.2"] if spread == "one address" else sources(FLOOD)
    results, failed, _ = flooded(gw, lambda: Loris(gw, FLOOD, spread_sources))
    assert not failed, failed
    assert gw.proc.poll() is None


def test_a_trickled_head_does_not_extend_its_time(http_gateway):
    """A request head trickled a byte every half second is closed
    10 s after it began however many bytes keep coming (libwebsockets'
    header time, timeout_secs_ah_idle, is set when the head begins)."""
    with socket.create_connection(address(http_gateway), timeout=30) as s:
        began = time.monotonic()
        s.sendall(HEAD)
        try:
            while time.monotonic() - began < 30:
                s.sendall(b"X")
                time.sleep(0.5)
        except OSError:
            pass
        taken = time.monotonic() - began
    assert 9 < taken < 13, taken


def tls_pair(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return key, cert


def test_unfinished_tls_handshakes_leave_room(make_http_gateway, tmp_path):
    """100 connections that begin a TLS ClientHello and never finish it,
    from one address: the others' requests over TLS are all answered.
    Before: 1 of 3 failed and the others took 2-4 s (red team, t15)."""
    key, cert = tls_pair(tmp_path)
    gw = make_http_gateway(http={"certfile": str(cert), "keyfile": str(key)})
    context = ssl.create_default_context(cafile=str(cert))
    hello = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"  # a record of 512 bytes, 11 sent
    results, failed, _ = flooded(gw, lambda: Loris(gw, 100, ["127.0.0.2"], first=hello, tls=True),
                                 context=context)
    assert not failed, failed


def raw_connect(gw, source):
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(60)
    s.connect(address(gw))
    return s


def read_head(s):
    """The status code and the body's start of the answer on s."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    length = [int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    while status != 200 and length and len(rest) < length[0]:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, rest


def upgrade(gw, kid, source):
    """A websocket upgrade from source: (status, the socket, left open, or
    the answer's body)."""
    s = raw_connect(gw, source)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /api/kernels/{kid}/channels HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: token {gw.token}\r\n"
               f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    status, rest = read_head(s)
    if status != 101:
        s.close()
        return status, rest
    return status, s


def test_one_client_or_one_kernel_cannot_take_every_slot(make_http_gateway):
    """max_connections 12, 8 per client, 4 per kernel: client A's fifth
    websocket on one kernel and its ninth in all are 503 naming the share,
    while client B still gets its websockets and, once all 12 are held,
    a third client's POST /api/kernels is 503 until A lets go. Before: one
    client's websockets took every slot (L5: 256 of them in 0.1 s, then
    503 for every other client)."""
    defaults = make_http_gateway("defaults").events("http_listen")[0]
    assert (defaults["max_connections"], defaults["max_connections_per_client"], defaults["max_connections_per_kernel"],
            defaults["max_pending_connections"], defaults["max_pending_per_client"]) == (256, 192, 64, 128, 16), defaults
    from test_startup import serve_refused
    rc, lines = serve_refused(http={"max_connections": 8, "max_connections_per_kernel": 9})
    assert rc == 2 and lines == ["kennel: config http.max_connections_per_kernel: must be at most "
                                 "http.max_connections (8)"], lines
    gw = make_http_gateway(http={"max_connections": 12, "max_connections_per_client": 8,
                                 "max_connections_per_kernel": 4})
    k1, k2, k3 = (start_kernel(gw)["id"] for _ in range(3))
    held = []
    for kid in (k1, k2):
        for _ in range(4):
            status, s = upgrade(gw, kid, "127.0.0.2")
            assert status == 101, (status, s)
            held.append(s)
        status, body = upgrade(gw, kid if kid == k1 else k3, "127.0.0.2")
        share = "http.max_connections_per_kernel" if kid == k1 else "http.max_connections_per_client"
        assert status == 503 and share.encode() in body, (status, body)
    for _ in range(4):
        status, s = upgrade(gw, k3, "127.0.0.3")
        assert status == 101, (status, s)
        held.append(s)

    def create(source):
        s = raw_connect(gw, source)
        s.sendall((f"POST /api/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: token {gw.token}\r\n"
                   "Content-Length: 0\r\n\r\n").encode())
        with s:
            return read_head(s)
    status, body = create("127.0.0.4")
    assert status == 503 and b"http.max_connections)" in body, (status, body)
    for s in held[:4]:
        s.close()
    from kennel_testlib import wait_until
    wait_until(lambda: create("127.0.0.4")[0] == 201, 30, "a slot freed by A's closes")
    for s in held[4:]:
        s.close()


def test_files_transfers_hold_a_connection(make_http_gateway):
    """An upload to /files and a download from it each hold one of
    max_connections while they stream (max_connections 2 here): with both
    going, a websocket upgrade is 503; once the upload's body is in, it is
    101. Before: uploads and downloads were not counted (L3), the upgrade
    got 101 beside them."""
    gw = make_http_gateway(http={"max_connections": 2})
    kid = start_kernel(gw)["id"]
    size = 16 << 20
    s = raw_connect(gw, "127.0.0.1")
    s.sendall((f"PUT /files/{kid}/big HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: token {gw.token}\r\n"
               f"Content-Length: {size}\r\n\r\n").encode() + bytes(size))
    assert read_head(s)[0] == 201
    s.close()
    down = raw_connect(gw, "127.0.0.1")
    down.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    down.sendall(f"GET /files/{kid}/big HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: token {gw.token}\r\n\r\n"
                 .encode())
    assert read_head(down)[0] == 200  # then not read: the download waits for its client
    up = raw_connect(gw, "127.0.0.1")
    up.sendall((f"PUT /files/{kid}/up HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: token {gw.token}\r\n"
                f"Content-Length: {size}\r\n\r\n").encode() + bytes(1 << 20))
    time.sleep(0.5)
    status, body = upgrade(gw, kid, "127.0.0.2")
    assert status == 503 and b"http.max_connections)" in body, (status, body)
    up.sendall(bytes(size - (1 << 20)))
    assert read_head(up)[0] == 201
    up.close()
    from kennel_testlib import wait_until
    wait_until(lambda: upgrade(gw, kid, "127.0.0.2")[0] == 101, 30, "the upload's slot free")
    down.close()
