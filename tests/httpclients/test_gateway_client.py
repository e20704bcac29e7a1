"""jupyter_server's GatewayClient for real: Debian's jupyter-notebook
6.4.12 started with --gateway-url pointing at the target (for the
reference target: a second plain notebook server acting as the gateway),
first over REST, then with headless chromium (chromium-driver,
python3-selenium) opening a notebook, running a cell that prints and a cell
that plots, and finding both outputs in the page. The screenshot is kept
in BUILDDIR/test-artifacts/httpclients/."""
import json
import time

import pytest
import requests
import websocket

import agentclients
from browserlib import wait_for
from kennel_testlib import BUILDDIR
import refserver

PRINT_CELL = "print('kennel says ' + str(6 * 7))"
PLOT_CELL = "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([0, 1, 4, 9])\nplt.show()"


@pytest.fixture(scope="module")
def front(target, tmp_path_factory):
    server = refserver.start_gateway_client(tmp_path_factory.mktemp("front"), target)
    yield server
    server.stop()


def listed(server):
    r = requests.get(f"{server.base_url}/api/kernels", headers={"Authorization": f"token {server.token}"})
    assert r.status_code == 200, r.text
    return {k["id"]: k for k in r.json()}


def test_gateway_client_rest(front, target):
    """Kernel calls on the front reach the gateway: same ids both sides."""
    h = {"Authorization": f"token {front.token}"}
    specs = requests.get(f"{front.base_url}/api/kernelspecs", headers=h).json()
    assert "python3" in specs["kernelspecs"]
    r = requests.post(f"{front.base_url}/api/kernels", headers=h, json={"name": "python3"})
    assert r.status_code == 201, r.text
    kid = r.json()["id"]
    try:
        assert kid in listed(target)
        assert requests.post(f"{front.base_url}/api/kernels/{kid}/interrupt", headers=h).status_code == 204
        assert requests.post(f"{front.base_url}/api/kernels/{kid}/restart", headers=h).status_code == 200
    finally:
        assert requests.delete(f"{front.base_url}/api/kernels/{kid}", headers=h).status_code == 204
    assert kid not in listed(target)


# what a person runs at a notebook and an agent's profile refuses: a shell
# escape, IPython's %sx, ctypes (tests/kernel has the profiles in full)
PERSON_CELLS = [("!echo person", "person\n"), ("x = %sx echo sx\nprint(list(x))", "['sx']\n"),
                ("import ctypes; print(ctypes.sizeof(ctypes.c_int))", "4\n")]


def person_kernelspec(target):
    """The kernelspec a person picks: kennel's notebook one; the reference's
    only one (ipykernel), which shows what it must match."""
    return "python3-notebook" if target.kind == "kennel" else "python3"


def test_a_person_gets_a_notebook_kernel(front, target):
    """jupyter_server's GatewayClient lists the gateway's kernelspecs and
    starts one by name, as JupyterLab and Notebook do through --gateway-url:
    kennel lists "Python 3 (kennel, notebook)", whose kernels run a shell
    escape, %sx and ctypes as ipykernel's do, with no setting of the
    person's (issue 24: they got the agent profile, which refuses all
    three); its metadata shows the policy it starts from, and kennel's
    default python3 stays the agent's."""
    h = {"Authorization": f"token {front.token}"}
    specs = requests.get(f"{front.base_url}/api/kernelspecs", headers=h).json()["kernelspecs"]
    name = person_kernelspec(target)
    assert name in specs, sorted(specs)
    if target.kind == "kennel":
        policy = specs[name]["spec"]["metadata"]["kennel_policy"]
        assert specs[name]["spec"]["display_name"] == "Python 3 (kennel, notebook)"
        assert policy["builtins"] == "notebook" and policy["execution_timeout"] == 3600, policy
        assert specs["python3"]["spec"]["metadata"]["kennel_policy"]["builtins"] == "agent"
    r = requests.post(f"{front.base_url}/api/kernels", headers=h, json={"name": name})
    assert r.status_code == 201, r.text
    kid = r.json()["id"]
    try:
        assert r.json()["name"] == name and listed(target)[kid]["name"] == name
        client = agentclients.Smolagents(front)
        ws = websocket.create_connection(f"ws{front.base_url[4:]}/api/kernels/{kid}/channels?token={front.token}")
        try:
            for code, printed in PERSON_CELLS:
                # ipykernel runs a shell escape on a pty: its lines end "\r\n"
                assert client._run_on(ws, code)[1].replace("\r\n", "\n") == printed, code
        finally:
            ws.close()
    finally:
        assert requests.delete(f"{front.base_url}/api/kernels/{kid}", headers=h).status_code == 204


def write_notebook(path):
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}
             for src in (PRINT_CELL, PLOT_CELL)]
    path.write_text(json.dumps({
        "cells": cells, "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}}))


def test_browser_runs_print_and_plot_cells(front, target, browser):
    from selenium.webdriver.common.by import By
    write_notebook(front.notebook_dir / "gateway.ipynb")
    browser.get(f"{front.base_url}/notebooks/gateway.ipynb?token={front.token}")
    wait_for(browser, "return window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel"
                      " && Jupyter.notebook.kernel.is_connected()", 60, "kernel connected")
    kid = browser.execute_script("return Jupyter.notebook.kernel.id")
    assert kid in listed(target), "the page's kernel lives on the gateway"
    # Cell > Run All, as a person does it
    browser.find_element(By.ID, "celllink").click()
    browser.find_element(By.ID, "run_all_cells").click()
    text = wait_for(browser, "const o = document.querySelectorAll('.output_subarea.output_stream');"
                             "return o.length ? o[0].innerText : ''", 60, "the print cell's output")
    assert text.strip() == "kennel says 42"
    img = wait_for(browser, "const i = document.querySelector('.output_png img');"
                            "return i && i.complete && i.naturalWidth > 100 ? i.src : ''", 60, "the plot")
    assert img.startswith("data:image/png;base64,")
    artifacts = BUILDDIR / "test-artifacts" / "httpclients"
    artifacts.mkdir(parents=True, exist_ok=True)
    shot = artifacts / f"gateway-notebook-{target.kind}.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10000
    browser.execute_script("Jupyter.notebook.session.delete()")
    deadline = time.monotonic() + 20
    while kid in listed(target) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert kid not in listed(target), "closing the session shut the gateway's kernel down"
