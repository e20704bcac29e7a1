"""Raw use with curl, as an operator scripts it (README: "curl"): curl's
own requests, e.g. `curl -X POST` sends no body and no Content-Length."""
import datetime
import json
import shutil
import subprocess

import pytest


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
