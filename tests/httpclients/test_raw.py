"""Raw use, as an operator scripts it: curl's own requests (`curl -X
POST` sends no body and no Content-Length), and a bare websocket
(websocket-client, as websocat would be used)."""
import datetime
import json
import shutil
import subprocess
import time

import pytest
import requests
import websocket


@pytest.fixture(scope="module")
def curl():
    path = shutil.which("curl")
    assert path, "curl is not installed"
    return path


def run_curl(curl, target, method, path, *extra, token=True):
    args = [curl, "-sS", "-X", method, "-o", "-", "-w", "\n%{http_code}", *extra]
    if token:
        args += ["-H", f"Authorization: token {target.token}"]
    out = subprocess.run(args + [target.base_url + path], capture_output=True, text=True, timeout=60, check=True)
    body, _, code = out.stdout.rpartition("\n")
    return int(code), body


def check_model(model):
    assert set(model) >= {"id", "name", "last_activity", "execution_state", "connections"}, model
    assert len(model["id"].split("-")) == 5
    datetime.datetime.strptime(model["last_activity"], "%Y-%m-%dT%H:%M:%S.%fZ")
    assert isinstance(model["connections"], int)


def test_curl_kernel_lifecycle(curl, target):
    code, body = run_curl(curl, target, "GET", "/api/kernelspecs")
    assert code == 200 and "python3" in json.loads(body)["kernelspecs"]
    # -X POST with no -d: no Content-Length, no body
    code, body = run_curl(curl, target, "POST", "/api/kernels")
    assert code == 201, body
    kid = json.loads(body)["id"]
    code, body = run_curl(curl, target, "GET", f"/api/kernels/{kid}")
    assert code == 200
    check_model(json.loads(body))
    assert run_curl(curl, target, "POST", f"/api/kernels/{kid}/interrupt")[0] == 204
    code, body = run_curl(curl, target, "POST", f"/api/kernels/{kid}/restart", "-H", "Content-Type: application/json",
                          "-d", "{}")
    assert code == 200, body
    check_model(json.loads(body))
    assert run_curl(curl, target, "DELETE", f"/api/kernels/{kid}")[0] == 204
    assert run_curl(curl, target, "GET", f"/api/kernels/{kid}")[0] == 404


def test_curl_without_token_refused(curl, target):
    code, body = run_curl(curl, target, "POST", "/api/kernels", token=False)
    # Kernel Gateway and kennel answer 401; the notebook server 403
    assert code == (401 if target.kind == "kennel" else 403), body
    if target.kind == "kennel":
        assert set(json.loads(body)) >= {"reason", "message"}


def test_delete_with_a_websocket_open(target):
    """DELETE /api/kernels/{id} while a client's websocket is open on it
    (JupyterLab's and OpenHands' shutdown do this): 204 and the server goes
    on serving. kennel closes the websocket (1001); the notebook server
    leaves it open."""
    h = {"Authorization": f"token {target.token}"}
    kid = requests.post(f"{target.base_url}/api/kernels", headers=h, json={"name": "python3"}).json()["id"]
    ws = websocket.create_connection(f"{target.ws_url}/api/kernels/{kid}/channels", header=h, timeout=30)
    try:
        assert requests.delete(f"{target.base_url}/api/kernels/{kid}", headers=h).status_code == 204
        if target.kind == "kennel":
            ws.settimeout(20)
            while True:
                try:
                    frame = ws.recv_frame()
                except (websocket.WebSocketConnectionClosedException, ConnectionError):
                    break
                if frame.opcode == websocket.ABNF.OPCODE_CLOSE:
                    assert int.from_bytes(frame.data[:2], "big") == 1001
                    break
    finally:
        ws.close()
    time.sleep(0.5)
    assert target.proc.poll() is None, "the server died"
    r = requests.get(f"{target.base_url}/api/kernelspecs", headers=h, timeout=10)
    assert r.status_code == 200
