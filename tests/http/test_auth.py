"""Who may use the HTTP front: the token on every endpoint and on the
websocket upgrade (token and Bearer headers, ?token=), where it comes from
(KENNEL_AUTH_TOKEN, KG_AUTH_TOKEN, config, generated into the connection
file and never logged), anonymous only when the operator says so, and
foreign Origins."""
import os
import stat

import pytest
import requests
import websocket

from httptest import api, start_kernel, ws_url

ENDPOINTS = [("GET", "api"), ("GET", "api/kernelspecs"), ("GET", "api/kernelspecs/python3"),
             ("GET", "api/kernels"), ("POST", "api/kernels"), ("GET", "api/sessions"), ("GET", "api/nope")]


def upgrade_status(gw, kid, header=(), query=""):
    try:
        ws = websocket.create_connection(ws_url(gw, kid, query), header=list(header), timeout=30)
    except websocket.WebSocketBadStatusException as e:
        return e.status_code
    ws.close()
    return 101


def test_every_endpoint_and_the_upgrade_need_the_token(http_gateway):
    gw = http_gateway
    kid = start_kernel(gw)["id"]
    endpoints = ENDPOINTS + [("GET", f"api/kernels/{kid}"), ("POST", f"api/kernels/{kid}/interrupt"),
                             ("POST", f"api/kernels/{kid}/restart")]
    for method, path in endpoints:
        for bad in (False, "token wrong", "Bearer wrong", "Basic abc", f"token {gw.token}x"):
            r = api(gw, method, path, token=bad)
            assert r.status_code == 401, (method, path, bad, r.status_code)
            assert set(r.json()) == {"reason", "message"} and r.json()["reason"] == "Unauthorized"
        for good in (f"token {gw.token}", f"Bearer {gw.token}", f"TOKEN {gw.token}", f"bearer {gw.token}"):
            assert api(gw, method, path, token=good).status_code != 401, (method, path, good)
        r = requests.request(method, gw.url + path + f"?token={gw.token}", timeout=60)
        assert r.status_code != 401, (method, path, "query")
    assert upgrade_status(gw, kid) == 401
    assert upgrade_status(gw, kid, ["Authorization: token nope"]) == 401
    assert upgrade_status(gw, kid, query="?token=nope") == 401
    assert upgrade_status(gw, kid, [f"Authorization: token {gw.token}"]) == 101
    assert upgrade_status(gw, kid, [f"Authorization: Bearer {gw.token}"]) == 101
    assert upgrade_status(gw, kid, query=f"?session_id=abc&token={gw.token}") == 101
    refusals = gw.events("http_error")
    assert refusals and all(gw.token not in str(e) for e in refusals)
    assert any(e["status"] == 401 for e in refusals)


def test_generated_token_is_in_the_connection_file_only(http_gateway):
    gw = http_gateway
    assert len(gw.info["http_token"]) >= 32
    assert stat.S_IMODE(os.stat(gw.conn_file).st_mode) == 0o600
    log = gw.log_file.read_text()
    assert gw.token not in log
    listen = gw.events("http_listen")[0]
    assert listen["token"] == "generated" and listen["url"] == gw.url


@pytest.mark.parametrize("source", ["KENNEL_AUTH_TOKEN", "KG_AUTH_TOKEN", "config"])
def test_token_sources(make_http_gateway, source):
    token = f"tok-{source}-1234567890"
    if source == "config":
        gw = make_http_gateway(http={"token": token})
    else:
        gw = make_http_gateway(env={source: token})
    assert "http_token" not in gw.info  # chosen by the operator: not written out
    assert gw.events("http_listen")[0]["token"] == source
    assert api(gw, "GET", "api", token=f"token {token}").status_code == 200
    assert api(gw, "GET", "api", token="token other").status_code == 401
    assert token not in gw.log_file.read_text()


def test_anonymous_only_when_named(make_http_gateway):
    gw = make_http_gateway(http={"anonymous": True})
    assert gw.token is None and "http_token" not in gw.info
    assert api(gw, "GET", "api/kernels", token=False).status_code == 200
    kid = start_kernel(gw)["id"]
    assert upgrade_status(gw, kid) == 101


def test_foreign_origin(make_http_gateway):
    gw = make_http_gateway()
    assert api(gw, "GET", "api", headers={"Origin": "http://evil.example"}).status_code == 403
    host = gw.url.split("/")[2]
    assert api(gw, "GET", "api", headers={"Origin": f"http://{host}"}).status_code == 200  # same origin
    r = requests.options(gw.url + "api", headers={"Origin": "http://evil.example"}, timeout=30)
    assert r.status_code == 403 and "Access-Control-Allow-Origin" not in r.headers
    kid = start_kernel(gw)["id"]
    assert upgrade_status(gw, kid, [f"Authorization: token {gw.token}", "Origin: http://evil.example"]) == 403
    gw2 = make_http_gateway("gw2", http={"allow_origin": "http://app.example"})
    r = api(gw2, "GET", "api", headers={"Origin": "http://app.example"})
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "http://app.example"
    r = requests.options(gw2.url + "api", headers={"Origin": "http://app.example"}, timeout=30)
    assert r.status_code == 204 and "Authorization" in r.headers["Access-Control-Allow-Headers"]
    assert api(gw2, "GET", "api", headers={"Origin": "http://evil.example"}).status_code == 403


def test_listen_address_is_checked(tmp_path):
    from kennel_testlib import HttpGateway
    for bad in ("localhost:0", "127.0.0.1:99999", "eth0:80"):
        with pytest.raises(RuntimeError):
            HttpGateway(tmp_path, listen=bad)


def listening_addresses(port):
    """The local addresses of the LISTEN sockets on port, from /proc/net/tcp{,6}."""
    found = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(name) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                addr, p = local.split(":")
                if state == "0A" and int(p, 16) == port:
                    found.append((name, addr))
    return found


def test_listens_only_on_the_address_given(http_gateway):
    """--http 127.0.0.1:0 listens on 127.0.0.1 only (with IPv6 on,
    libwebsockets 4.1 bound every address for this iface: seen with ss)."""
    port = int(http_gateway.url.rsplit(":", 1)[1].strip("/"))
    assert listening_addresses(port) == [("/proc/net/tcp", "0100007F")]


def rebinding_status(gw, name, method="GET", path="api/kernels", token=True):
    """The status of a request as a page of `name` sends it once that name
    resolves to the gateway's address: Host and Origin both that name."""
    port = gw.url.rsplit(":", 1)[1].strip("/")
    host = f"{name}:{port}"
    return api(gw, method, path, token=token, headers={"Host": host, "Origin": f"http://{host}"}).status_code


def rebinding_upgrade(gw, kid, name):
    port = gw.url.rsplit(":", 1)[1].strip("/")
    headers = [f"Authorization: token {gw.token}"] if gw.token else []
    try:
        ws = websocket.create_connection(ws_url(gw, kid), header=headers, host=f"{name}:{port}",
                                         origin=f"http://{name}:{port}", timeout=30)
    except websocket.WebSocketBadStatusException as e:
        return e.status_code
    ws.close()
    return 101


def test_dns_rebinding_is_refused(make_http_gateway):
    """A page of rebind.attacker.example whose name was made to resolve to
    127.0.0.1 sends Host and Origin both rebind.attacker.example:PORT. On a
    loopback listener only the names it serves pass (IP literals,
    localhost, http.allow_hosts), with or without a token. Before: the
    anonymous gateway created a kernel (201), listed every conversation
    (200) and opened the websocket (101) for that page."""
    anon = make_http_gateway("anon", http={"anonymous": True})
    kid = start_kernel(anon)["id"]
    assert rebinding_status(anon, "rebind.attacker.example", "POST") == 403
    assert rebinding_status(anon, "rebind.attacker.example") == 403
    assert rebinding_status(anon, "rebind.attacker.example", path=f"api/contents/{kid}") == 403
    assert rebinding_upgrade(anon, kid, "rebind.attacker.example") == 403
    assert len(api(anon, "GET", "api/kernels").json()) == 1
    for served in ("127.0.0.1", "localhost", "LocalHost.", "[::1]"):
        assert rebinding_status(anon, served) == 200, served
    assert rebinding_upgrade(anon, kid, "localhost") == 101
    port = anon.url.rsplit(":", 1)[1].strip("/")
    r = api(anon, "GET", "api", headers={"Host": f"rebind.attacker.example:{port}"})
    assert r.status_code == 403 and "http.allow_hosts" in r.json()["message"], r.text
    # with a token: the same check (a token in a page's script is not the only way in: ?token= links)
    tok = make_http_gateway("tok", http={"allow_hosts": ["notebook.example.org"]})
    assert rebinding_status(tok, "rebind.attacker.example") == 403
    assert rebinding_status(tok, "notebook.example.org") == 200
    assert rebinding_status(tok, "Notebook.Example.Org") == 200
    assert rebinding_status(tok, "sub.notebook.example.org") == 403
    anyhost = make_http_gateway("any", http={"allow_hosts": ["*"]})
    assert rebinding_status(anyhost, "rebind.attacker.example") == 200


def test_anonymous_needs_a_loopback_listener(tmp_path):
    """Refused at start, naming the setting, before anything listens: the
    address is never bound (so no network but loopback is used here)."""
    from test_startup import serve_refused
    for listen in ("0.0.0.0:0", "[::]:0", "192.0.2.1:8888"):
        rc, lines = serve_refused(http={"anonymous": True}, listen=listen)
        assert rc == 2 and len(lines) == 1 and "http.anonymous" in lines[0] and "loopback" in lines[0], lines
    rc, lines = serve_refused(http={"allow_hosts": ["a:80"]})
    assert rc == 2 and "http.allow_hosts[0]" in lines[0], lines
