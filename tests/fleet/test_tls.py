"""TLS between the balancer and the gateways (red-team L7: the token
crossed the pod network in clear text, the health check every second).
Two gateways serve HTTPS (http.certfile/keyfile) with certificates a test
CA signed for the name kennel-gateway; HAProxy runs the shipped config
with KENNEL_GATEWAY_TLS=ssl and KENNEL_GATEWAY_CA: its health checks,
proxied requests, websockets and kennel-list.lua's calls are HTTPS,
verified. A gateway whose certificate another CA signed stays down."""
import secrets
import subprocess
import types

import pytest
import requests

from fleetlib import Balancer, Gateway, auth, create_kernel, execute
from kennel_testlib import wait_until

TOKEN = secrets.token_hex(16)


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_ca(d, name):
    """A CA (name.crt, name.key) and a gateway certificate it signs
    (name-gw.crt, name-gw.key) for kennel-gateway and 127.0.0.1 (the test's
    direct client checks the address)."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name} CA",
            "-keyout", f"{name}.key", "-out", f"{name}.crt", cwd=d)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=kennel-gateway",
            "-keyout", f"{name}-gw.key", "-out", f"{name}-gw.csr", cwd=d)
    (d / f"{name}.ext").write_text("subjectAltName=DNS:kennel-gateway,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", f"{name}-gw.csr", "-CA", f"{name}.crt", "-CAkey", f"{name}.key",
            "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}-gw.crt", cwd=d)
    return d / f"{name}-gw.crt", d / f"{name}-gw.key", d / f"{name}.crt"


@pytest.fixture(scope="module")
def tls_fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("tls-fleet")
    f = types.SimpleNamespace(gateways=[], balancer=None)
    fleet_tls, other_tls = make_ca(root, "fleet"), make_ca(root, "other")
    try:
        for i in range(2):
            f.gateways.append(Gateway(root, i, TOKEN, tls=fleet_tls))
        # signed by a CA the balancer does not trust: never up
        f.gateways.append(Gateway(root, 2, TOKEN, tls=other_tls))
        f.balancer = Balancer(root, f.gateways[:2], TOKEN,
                              env={"KENNEL_GATEWAY_TLS": "ssl", "KENNEL_GATEWAY_CA": str(fleet_tls[2])})
        yield f
    finally:
        if f.balancer:
            f.balancer.stop()
        for g in f.gateways:
            g.gw.stop()


def test_the_balancer_speaks_verified_tls_to_the_gateways(tls_fleet):
    """Before: the config had no TLS option; its plain HTTP health checks
    to HTTPS gateways failed and every server stayed down."""
    bal = tls_fleet.balancer.target
    assert all(g.gw.url.startswith("https://") for g in tls_fleet.gateways)
    kernels = [create_kernel(bal) for _ in range(4)]
    assert {k.split("-")[0] for k in kernels} == {g.shard for g in tls_fleet.gateways[:2]}, kernels
    for k in kernels:
        assert execute(bal, k, "6 * 7")[0] == "42"
    # kennel-list.lua over HTTPS: the fleet's list
    listed = requests.get(f"{bal.base_url}/api/kernels", headers=auth(TOKEN), timeout=30)
    assert listed.status_code == 200 and set(kernels) <= {k["id"] for k in listed.json()}, listed.text
    # and its conversation lookup
    made = [requests.post(f"{bal.base_url}/api/kernels", headers=auth(TOKEN), timeout=120,
                          json={"kennel": {"conversation_id": "tls-1"}}) for _ in range(4)]
    assert [r.status_code for r in made] == [201, 200, 200, 200] and len({r.json()["id"] for r in made}) == 1
    for k in kernels + [made[0].json()["id"]]:
        assert requests.delete(f"{bal.base_url}/api/kernels/{k}", headers=auth(TOKEN)).status_code == 204


def test_a_gateway_the_ca_did_not_sign_stays_down(tls_fleet):
    """The third gateway serves a certificate of another CA: the balancer,
    restarted with it among its servers, never marks it up."""
    tls_fleet.balancer.restart(tls_fleet.gateways, expect_down=tls_fleet.gateways[2:])
    stranger = f"kennel-{tls_fleet.gateways[2].shard}"
    wait_until(lambda: tls_fleet.balancer.states().get(stranger, "").startswith("DOWN"), 30,
               lambda: f"{stranger} down: {tls_fleet.balancer.states()}")
    states = tls_fleet.balancer.states()
    assert all(states[f"kennel-{g.shard}"] == "UP" for g in tls_fleet.gateways[:2]), states
