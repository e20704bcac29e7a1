"""kennel's HTTP front under the systemd unit (emulated, servicelib.py).
The unit's PrivateNetwork=yes gives the daemon a network namespace with lo
alone: a listener on 0.0.0.0 there binds, listens and answers its own
/healthz, yet no client outside can connect. kennel serve refuses such a
listener at start, naming the drop-in (gateway/deploy/kennel-http.conf.in)
that turns PrivateNetwork off; with the drop-in a client on the host
reaches the front; a loopback listener (clients that join the namespace)
is still served under the unit alone."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import urllib.error
import urllib.request

from kennel_testlib import built, wait_until
from servicelib import HTTP_DROP_IN, ServiceGateway, prefix, properties, unit_service_settings

TOKEN = "kennel-deploy-http-test"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_http_listener_under_the_unit_is_refused_naming_the_drop_in():
    """Before: the daemon started, said ready, and the host's client got
    ECONNREFUSED at 127.0.0.1:PORT."""
    props = properties(unit_service_settings())
    assert props["PrivateNetwork"] is True
    port = free_port()
    home = tempfile.mkdtemp(prefix="kennel-svc-http-", dir="/var/lib")   # PrivateTmp hides /tmp
    try:
        os.chmod(home, 0o711)
        config = os.path.join(home, "kennel.conf")
        with open(config, "w") as f:
            json.dump({"http": {"listen": f"0.0.0.0:{port}", "token": TOKEN}}, f)
        props = dict(props, ReadWritePaths=[home])
        done = subprocess.run(prefix(props) + [str(built("gateway/kennel")), "serve", "--config", config,
                                               "--state-dir", os.path.join(home, "state")],
                              capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert f"HTTP on 0.0.0.0:{port}: this network namespace has no interface but loopback" in done.stderr
    assert "PrivateNetwork=yes" in done.stderr and "/kennel-http.conf" in done.stderr, done.stderr
    assert "kennel.service.d/http.conf" in done.stderr, done.stderr


def kernelspecs(port):
    """GET /api/kernelspecs from this (the host's) network namespace: its
    status and body; 503 while the fork server starts."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/kernelspecs",
                                 headers={"Authorization": f"token {TOKEN}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, None


def test_with_the_drop_in_a_client_on_the_host_reaches_the_front():
    """The unit's settings, then the drop-in's (as systemd applies a drop-in:
    later assignments win, lists add up), the token from the environment
    its EnvironmentFile= names: GET /api/kernelspecs from the host's
    network namespace answers (200 once kernels can start)."""
    settings = unit_service_settings() + unit_service_settings(HTTP_DROP_IN)
    props = properties(settings)
    assert props["PrivateNetwork"] is False
    port = free_port()
    gw = ServiceGateway(props, config={"http": {"listen": f"0.0.0.0:{port}"}}, env={"KENNEL_AUTH_TOKEN": TOKEN})
    try:
        assert gw.info()["ready"] is True
        status, specs = wait_until(lambda: (lambda r: r[0] == 200 and r)(kernelspecs(port)), 60,
                                   lambda: f"GET /api/kernelspecs 200: {kernelspecs(port)}")
        assert specs["default"] in specs["kernelspecs"], specs
    finally:
        rc, leftovers = gw.stop()
    assert rc == 0 and leftovers == []


def test_a_loopback_listener_under_the_unit_alone_is_served():
    """127.0.0.1 is the operator's word that the clients share the
    daemon's namespace (a unit with JoinsNamespaceOf=kennel.service): not
    refused."""
    props = properties(unit_service_settings())
    gw = ServiceGateway(props, config={"http": {"listen": "127.0.0.1:0", "token": TOKEN}})
    try:
        assert gw.info()["ready"] is True
        assert json.loads((gw.state / "gateway.json").read_text())["http_url"].startswith("http://127.0.0.1:")
    finally:
        rc, leftovers = gw.stop()
    assert rc == 0 and leftovers == []
