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
died" dialog. Screenshots are kept in BUILDDIR/test-artifacts/notebook-ui/.

And what a confined kernel may leave in the page (issue 25, H1): a cell
that emits script in every form a front end runs (application/javascript,
<script> and event handlers in text/html, SVG and Markdown, CSS that
places an output over the page, MathJax's \\style, the pager, widgets'
HTML) changes nothing outside the page's output areas, while a pandas
table, a PNG and an SVG plot and widgets still render."""
import json
import os
import pathlib
import time

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


def open_notebook(browser, server, name, sources):
    """A notebook of code cells, the person's, beside the server's others,
    opened in the browser on kennel's kernel, once it is connected."""
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}
             for src in sources]
    write_person_file(server.notebook_dir / name, json.dumps({
        "cells": cells, "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "kennel", "display_name": "Python 3 (kennel)", "language": "python"}}}),
        server.notebook_dir)
    browser.get(f"{server.base_url}/notebooks/{name}?token={server.token}")
    wait_for(browser, "return window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel"
                      " && Jupyter.notebook.kernel.is_connected()", 90, "kernel connected")


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
    open_notebook(browser, server, "analysis.ipynb", CELLS)
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


# ---- what a kernel may leave in the page ------------------------------------

# A script that ran sets its name in window.kennel_h1 (no quotes: it goes
# into HTML attributes, Markdown and Python strings alike).
def ran(tag, win="window"):
    return f"({win}.kennel_h1 = {win}.kennel_h1 || {{}}).{tag} = 1"


RENDER_CELLS = [
    "import pandas as pd\npd.DataFrame({'city': ['Lisbon', 'Porto', 'Faro'], 'temp': [17.5, 15.0, 21.25]})",
    "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([3, 1, 4, 1, 5])\nplt.show()",
    "import io\nfrom IPython.display import SVG, display\nfig = plt.figure(figsize=(4, 3))\nplt.plot([2, 7, 1, 8])\n"
    "svg = io.StringIO()\nfig.savefig(svg, format='svg')\nplt.close(fig)\ndisplay(SVG(svg.getvalue()))",
    "import ipywidgets as widgets\ndisplay(widgets.IntSlider(value=3, min=0, max=9, description='k'))\n"
    "widgets.HTML(value='<b>bold widget</b>')",
]
# Every way an output became script in notebook 6.4.12 (outputarea.js,
# pager.js, jupyter-js-widgets), with a harmless part that must still show.
ATTACK_CELL = f"""
from IPython.display import display, Javascript, HTML, SVG, Markdown, Latex
import ipywidgets as widgets
display(Javascript("{ran('javascript')}; Jupyter.notebook.kernel_selector.set_kernel('python3');"))
display({{'text/javascript': "{ran('text_javascript')}", 'text/plain': 'tjs'}}, raw=True)
display(HTML('<p class="h1-visible">visible html</p><script>{ran('script')}</script>'
             '<img src="x" onerror="{ran('onerror')}">'
             '<style>#header {{ display: none !important }} body {{ background: red !important }}</style>'
             '<div style="position: fixed; top: 0; left: 0; width: 100%; height: 100%; z-index: 9999; '
             'background: red">overlay</div>'
             '<div class="modal in" style="display: block">bootstrap modal</div>'
             '<a href="javascript:{ran('href')}">link</a>'
             '<iframe srcdoc="<script>{ran('iframe', 'parent')}</script>"></iframe>'
             '<form action="/api/shutdown" method="post"><button>x</button></form>'))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" width="60" height="60" onload="{ran('svg_onload')}">'
            '<script>{ran('svg_script')}</script>'
            '<foreignObject width="10" height="10"><body xmlns="http://www.w3.org/1999/xhtml">'
            '<img src="x" onerror="{ran('foreignObject')}"/></body></foreignObject>'
            '<style>#header {{ display: none !important }}</style>'
            '<set attributeName="onmouseover" to="{ran('set')}"/>'
            '<rect class="h1-rect" width="60" height="60" fill="green"/></svg>'))
display(Markdown('**visible markdown** <img src="x" onerror="{ran('markdown')}">'))
display(Latex(r'$\\style{{position: fixed; top: 0; left: 0; width: 100%; height: 100%; background: red}}{{x}}$'))
display(widgets.HTML(value='widget html<img src="x" onerror="{ran('widget_html')}">'))
display(widgets.IntSlider(description='<img src="x" onerror="{ran('widget_description')}">d'))
print('attack done')
"""
PAGER_CELL = f"""
import IPython.core.page as page
page.page({{'text/html': '<b>pager-visible</b><img src="x" onerror="{ran('pager')}">', 'text/plain': 'pager'}})
"""
CONFINED_CELL = "import os\nprint('confined', os.path.isdir('/workspace'), os.getcwd())"

# Whether any element of an output area lies outside that area, by its box
# in the page (an overlay, a fixed or absolutely placed element). MathJax's
# own spans are placed absolutely, a little past their box: of those, only
# a fixed one counts.
OUTSIDE_OUTPUTS = """
const out = [];
for (const area of document.querySelectorAll('.output_area')) {
  const a = area.getBoundingClientRect();
  for (const el of area.querySelectorAll('*')) {
    if (el.closest('.MathJax, .MathJax_Display, .MathJax_Preview')) {
      if (getComputedStyle(el).position === 'fixed') out.push('MathJax ' + el.outerHTML.slice(0, 120));
      continue;
    }
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.left < a.left - 1 || r.top < a.top - 1 || r.right > a.right + 1 || r.bottom > a.bottom + 1)
      out.push(el.outerHTML.slice(0, 120));
  }
}
return out;"""
# The page outside the outputs: what a stylesheet or an overlay would change
# (the page's own sheets may grow: MathJax adds its own at its first use).
PAGE_STATE = """
const header = document.getElementById('header');
const hs = getComputedStyle(header), r = header.getBoundingClientRect();
const hit = document.elementFromPoint(r.left + r.width / 2, r.top + Math.min(r.height - 2, 20));
return {body: getComputedStyle(document.body).backgroundColor, header: hs.display + ' ' + hs.visibility,
        header_height: Math.round(r.height),
        sheets_in_notebook: [...document.styleSheets].filter(s => s.ownerNode
                                && document.getElementById('notebook').contains(s.ownerNode)).length,
        header_on_top: !!hit && header.contains(hit)};"""


def test_kernel_script_changes_nothing_outside_the_output_area(kennel_notebook, browser):
    from selenium.webdriver.common.by import By
    open_notebook(browser, kennel_notebook, "outputs.ipynb", RENDER_CELLS)
    browser.find_element(By.ID, "celllink").click()
    browser.find_element(By.ID, "run_all_cells").click()
    # what must still render: a pandas table (its <style scoped> goes), plots, widgets
    rows = wait_for(browser, "return [...document.querySelectorAll('.output_html table.dataframe tbody tr')]"
                             ".map(r => r.innerText.replace(/\\s+/g, ' ').trim())", 120, "the pandas table")
    assert rows == ["0 Lisbon 17.50", "1 Porto 15.00", "2 Faro 21.25"], rows
    wait_for(browser, "const i = document.querySelector('.output_png img');"
                      "return i && i.complete && i.naturalWidth > 100", 90, "the PNG plot")
    svg = wait_for(browser, "const s = document.querySelector('.output_svg svg');"
                            "return s && s.querySelectorAll('path').length > 5 && s.getBoundingClientRect().width > 100"
                            " && s.querySelectorAll('path').length", 90, "the SVG plot")
    assert svg > 5
    assert wait_for(browser, "const r = document.querySelector('.widget-readout');"
                             "return r ? r.innerText : ''", 60, "the slider").strip() == "3"
    assert wait_for(browser, "const b = document.querySelector('.widget-html-content b');"
                             "return b ? b.innerText : ''", 60, "the HTML widget") == "bold widget"
    before = browser.execute_script(PAGE_STATE)
    assert before["header_on_top"] and before["header"] == "block visible", before

    browser.execute_script("const c = Jupyter.notebook.insert_cell_at_bottom('code');"
                           "c.set_text(arguments[0]); c.execute();", ATTACK_CELL)
    # its end, or (before kennel cleaned outputs) a script that ran, whichever first
    wait_for(browser, "return window.kennel_h1 || [...document.querySelectorAll('.output_subarea.output_stream')]"
                      ".some(e => e.innerText.includes('attack done'))", 90, "the attack cell's end")
    assert browser.execute_script("return window.kennel_h1 || null") is None, \
        f"the kernel's script ran in the page: {browser.execute_script('return window.kennel_h1')}"
    wait_for(browser, "return document.querySelectorAll('.widget-slider').length >= 2", 60, "the second slider")
    browser.execute_script("const c = Jupyter.notebook.insert_cell_at_bottom('code');"
                           "c.set_text(arguments[0]); c.execute();", PAGER_CELL)
    pager = wait_for(browser, "const p = document.querySelector('#pager .container');"
                              "return p ? p.innerText : ''", 60, "the pager")
    assert "pager-visible" in pager
    time.sleep(5)  # a kernel switch (set_kernel) would have happened by now; it takes about 1 s here
    assert browser.execute_script("return window.kennel_h1 || null") is None, \
        f"the kernel's script ran in the page: {browser.execute_script('return window.kennel_h1')}"
    assert browser.execute_script("return Jupyter.notebook.kernel.name") == "kennel"
    browser.execute_script("const c = Jupyter.notebook.insert_cell_at_bottom('code');"
                           "c.set_text(arguments[0]); c.execute();", CONFINED_CELL)
    confined = wait_for(browser, "const o = [...document.querySelectorAll('.output_subarea.output_stream')]"
                                 ".map(e => e.innerText).filter(t => t.startsWith('confined'));"
                                 "return o.length ? o[0] : ''", 60, "the confinement check")
    assert confined.strip() == "confined True /workspace"
    after = browser.execute_script(PAGE_STATE)
    assert after == before, (before, after)
    outside = browser.execute_script(OUTSIDE_OUTPUTS)
    assert not outside, f"output elements outside their output area: {outside}"
    # (MathJax 2 keeps each formula's TeX in a <script type="math/tex"> of its own)
    active = browser.execute_script("return [...document.querySelectorAll('.output_area script, .output_area style,"
                                    " .output_area iframe, .output_area form, #pager script, #pager style')]"
                                    ".filter(e => !(e.type || '').startsWith('math/')).map(e => e.outerHTML)")
    assert not active, active
    # the harmless parts of each attack still show
    assert browser.execute_script("return document.querySelector('.output_html p.h1-visible') === null"
                                  " && [...document.querySelectorAll('.output_html p')]"
                                  ".some(p => p.innerText === 'visible html')")
    assert browser.execute_script("const r = document.querySelector('.output_svg rect[fill=\"green\"]');"
                                  "return !!r && r.getBoundingClientRect().width > 50")
    assert browser.execute_script("return [...document.querySelectorAll('.output_subarea')]"
                                  ".some(e => e.innerText.includes('**visible markdown**'))")
    assert browser.execute_script("return [...document.querySelectorAll('.widget-html-content')]"
                                  ".some(e => e.innerText.includes('widget html'))")
    browser.execute_script("document.querySelector('.output_svg rect[fill=\"green\"]')"
                           ".scrollIntoView({block: 'center'})")
    shot(browser, "active-content.png")
