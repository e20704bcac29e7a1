"""Kernels forked from the fork server (the zygote prepared CPython before
the fork, in its own environment) have UTF-8 text I/O, like cold ones
(tests/kernel/test_utf8.py), and the sandbox's LANG names a locale that
exists inside it."""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "kernel"))
from utf8_cell import CELL, CHECKS  # noqa: E402

from gwtest import execute, stdout_of  # noqa: E402
from test_fork_server import ancestors, kernel_pid, wait_ready  # noqa: E402

LOCALE_CELL = r'''
import locale, os, subprocess
print(os.environ["LANG"], locale.setlocale(locale.LC_CTYPE), locale.setlocale(locale.LC_ALL, ""))
print(subprocess.run(["/bin/sh", "-c", "locale 2>&1 >/dev/null | head -1"], capture_output=True, text=True).stdout.strip() or "no warning")
'''


def test_zygote_kernel_text_io_is_utf8(make_gateway):
    gw = make_gateway(config={"warm_pool": 0})
    zygote = wait_ready(gw)["pid"]
    _, kc = gw.open_client("utf8")
    assert zygote in ancestors(kernel_pid(gw, "utf8"))
    r, out = execute(kc, CELL, timeout=60)
    assert r["content"]["status"] == "ok", r["content"]
    assert json.loads(stdout_of(out)) == {name: "ok" for name in CHECKS}
    r, out = execute(kc, LOCALE_CELL)
    assert stdout_of(out) == "C.UTF-8 C.UTF-8 C.UTF-8\nno warning\n"
