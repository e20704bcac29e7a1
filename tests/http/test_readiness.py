"""GET /api/kernelspecs, the readiness a client polls, as soon as the
gateway's connection file exists: kernels can be started then, the fork
server still starting or not (a kernel opened meanwhile starts without
it), so the listing answers 200, and a kernel started then runs code.
README's raw-HTTP block makes this request first."""
from httptest import api, connect, run, stdout
from kennel_testlib import Control

# pandas and matplotlib imported by the fork server before it serves: its
# start takes seconds, so the requests below run while it is starting
SLOW_FORK_SERVER = {"fork_server": {"enabled": True, "preload": ["pandas", "matplotlib.pyplot"]}, "warm_pool": 0}


def test_kernels_start_while_the_fork_server_starts(make_http_gateway):
    gw = make_http_gateway(wait=False, config=SLOW_FORK_SERVER)
    specs = api(gw, "GET", "api/kernelspecs")
    control = Control(gw.conn_file)
    try:
        fork_server = control.request("gateway_info_request")["content"]["fork_server"]
    finally:
        control.close()
    assert fork_server["enabled"] and not fork_server["ready"], f"the fork server was up already: {fork_server}"
    assert specs.status_code == 200, specs.text
    assert "python3" in specs.json()["kernelspecs"]
    created = api(gw, "POST", "api/kernels")
    assert created.status_code == 201, created.text
    ws = connect(gw, created.json()["id"])
    try:
        reply, outputs = run(ws, "print(6 * 7)")
        assert reply["content"]["status"] == "ok", reply
        assert stdout(outputs) == "42\n"
    finally:
        ws.close()
