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
