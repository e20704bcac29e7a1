"""The notebook UI with kennel's kernelspec (issue 16), as a person uses it:
Debian's jupyter-notebook 6.4.12 with `kennel install-kernelspec` on its
JUPYTER_PATH, headless chromium (python3-selenium, chromium-driver) opening
a notebook that sits beside a data file. The page runs all cells: one
reads the file, one plots, one shows an ipywidgets slider (Debian's
python3-ipywidgets; the widget extension is Debian's
python3-widgetsnbextension, enabled by its /etc/jupyter/nbconfig file,
checked first), one an ipywidgets Image of a PNG made in the kernel (6.0
sends its value as base64 text in the comm's JSON, not as a binary
buffer: the view's <img> shows the image). The slider is moved with the keyboard and the kernel sees
the new value; then `os._exit(1)` in a cell brings the notebook's "kernel
died" dialog. Screenshots are kept in BUILDDIR/test-artifacts/notebook-ui/."""
import json
import os
import pathlib

import pytest
import requests

from browserlib import wait_for
from kennel_testlib import BUILDDIR, install_kernelspec, person_owns
import refserver

CELLS = [
    "import csv\nrows = list(csv.DictReader(open('measurements.csv')))\n"
    "print('rows', len(rows), 'total', sum(int(r['value']) for r in rows))",
    "%matplotlib inline\nimport matplotlib.pyplot as plt\n"
    "plt.plot([int(r['value']) for r in rows])\nplt.show()",
    "import ipywidgets as widgets\nslider = widgets.IntSlider(value=7, min=0, max=10, description='n')\nslider",
    "import io\npng = io.BytesIO()\nplt.figure(figsize=(2, 1))\nplt.plot([1, 2])\nplt.savefig(png, format='png')\n"
    "plt.close()\nwidgets.Image(value=png.getvalue(), format='png')",
]
WIDGETS_NBCONFIG = pathlib.Path("/etc/jupyter/nbconfig/notebook.d")
ARTIFACTS = BUILDDIR / "test-artifacts" / "notebook-ui"


def widgets_extension_enabled():
    """Whether Debian's packaging enables the notebook's widget extension
    (jupyter-js-widgets/extension in a notebook.d config, its file there)."""
    for conf in WIDGETS_NBCONFIG.glob("*.json"):
        if json.loads(conf.read_text()).get("load_extensions", {}).get("jupyter-js-widgets/extension"):
            return pathlib.Path("/usr/share/jupyter/nbextensions/jupyter-js-widgets/extension.js").is_file()
    return False


@pytest.fixture(scope="module")
def kennel_notebook(tmp_path_factory):
    """Debian's notebook server whose kernelspec "kennel" is this build's,
    serving a directory that belongs to a person (person_owns)."""
    root = tmp_path_factory.mktemp("notebook-ui")
    old = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = install_kernelspec(root / "prefix")
    try:
        server = refserver.start_notebook(root, name="server")
    finally:
        if old is None:
            os.environ.pop("JUPYTER_PATH")
        else:
            os.environ["JUPYTER_PATH"] = old
    person_owns(server.notebook_dir)
    yield server
    server.stop()


def write_person_file(path, text, owner_dir):
    path.write_text(text)
    st = os.stat(owner_dir)
    os.chown(path, st.st_uid, st.st_gid)


def shot(browser, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    browser.save_screenshot(str(path))
    assert path.stat().st_size > 10000
    return path


def test_notebook_ui_reads_plots_shows_a_slider_and_the_dead_kernel_dialog(kennel_notebook, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    assert widgets_extension_enabled(), (
        f"python3-widgetsnbextension's notebook.d config in {WIDGETS_NBCONFIG} does not enable "
        "jupyter-js-widgets/extension (or its extension.js is missing): a packaging fault, sliders cannot render")
    server, nbdir = kennel_notebook, kennel_notebook.notebook_dir
    h = {"Authorization": f"token {server.token}"}
    assert "kennel" in requests.get(f"{server.base_url}/api/kernelspecs", headers=h).json()["kernelspecs"]
    write_person_file(nbdir / "measurements.csv", "value\n3\n1\n4\n1\n5\n", nbdir)
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}
             for src in CELLS]
    write_person_file(nbdir / "analysis.ipynb", json.dumps({
        "cells": cells, "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "kennel", "display_name": "Python 3 (kennel)", "language": "python"}}}),
        nbdir)
    browser.get(f"{server.base_url}/notebooks/analysis.ipynb?token={server.token}")
    wait_for(browser, "return window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel"
                      " && Jupyter.notebook.kernel.is_connected()", 90, "kernel connected")
    assert browser.execute_script("return Jupyter.notebook.kernel.name") == "kennel"
    # Cell > Run All, as a person does it
    browser.find_element(By.ID, "celllink").click()
    browser.find_element(By.ID, "run_all_cells").click()
    text = wait_for(browser, "const o = document.querySelectorAll('.output_subarea.output_stream');"
                             "return o.length ? o[0].innerText : ''", 90, "the data file's summary")
    assert text.strip() == "rows 5 total 14"
    wait_for(browser, "const i = document.querySelector('.output_png img');"
                      "return i && i.complete && i.naturalWidth > 100", 90, "the plot")
    handle = wait_for(browser, "return document.querySelector('.widget-slider .ui-slider-handle')", 90,
                      "the slider (ipywidgets through comms)")
    assert wait_for(browser, "const r = document.querySelector('.widget-readout');"
                             "return r ? r.innerText : ''", 30, "the slider's readout").strip() == "7"
    assert wait_for(browser, "const i = document.querySelector('img.widget-image');"
                             "return i && i.complete && i.naturalWidth > 100 && i.src.startsWith('data:image/png;base64,')"
                             " && i.src.length", 90, "the Image widget's PNG") > 1000
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", handle)
    shot(browser, "reads-plots-slider.png")
    # the keyboard moves it; the new value reaches the kernel's widget
    handle.click()
    handle.send_keys(Keys.ARROW_RIGHT)
    wait_for(browser, "const r = document.querySelector('.widget-readout');"
                      "return r && r.innerText.trim() === '8'", 30, "the readout after the key")
    browser.execute_script("const c = Jupyter.notebook.insert_cell_at_bottom('code');"
                           "c.set_text('print(\"slider at\", slider.value)'); c.execute();")
    seen = wait_for(browser, "const o = [...document.querySelectorAll('.output_subarea.output_stream')]"
                             ".map(e => e.innerText).filter(t => t.startsWith('slider at'));"
                             "return o.length ? o[0] : ''", 60, "the kernel's slider value")
    assert seen.strip() == "slider at 8"
    # the kernel dies: the notebook says so (its restart dialog)
    browser.execute_script("const c = Jupyter.notebook.insert_cell_at_bottom('code');"
                           "c.set_text('import os; os._exit(1)'); c.execute();")
    dialog = wait_for(browser, "const m = document.querySelector('.modal.in .modal-body');"
                               "return m ? m.innerText : ''", 60, "the kernel died dialog")
    assert "kernel appears to have died" in dialog, dialog
    shot(browser, "kernel-died-dialog.png")
