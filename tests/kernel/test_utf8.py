"""The kernel's text I/O is UTF-8 (Python's UTF-8 mode), whatever the
locale: files with non-ASCII text and names, json without ensure_ascii,
subprocess text I/O. Cold starts here, unconfined and confined; the fork
server's kernels in tests/gateway/test_utf8.py."""
import json

import pytest

from kernelclient import TIMEOUT, ConfinedKernel, built, stream_text
from utf8_cell import CELL, CHECKS


def run_cell(kernel):
    reply, outputs = kernel.execute(CELL, timeout=TIMEOUT)
    assert reply["status"] == "ok", reply
    return json.loads(stream_text(outputs))


def test_text_io_is_utf8_unconfined(fresh_kernel):
    assert run_cell(fresh_kernel) == {name: "ok" for name in CHECKS}


@pytest.mark.parametrize("lang", [None, "C", "POSIX"])
def test_text_io_is_utf8_confined_whatever_lang(tmp_path, lang):
    """Confined with the sandbox's environment (LANG=C.UTF-8), and with a
    policy env that names the plain C locale: UTF-8 mode does not depend on
    it."""
    kernel = ConfinedKernel(built("kernel-launcher/kennel-launch"), {}, str(tmp_path),
                            env={"LANG": lang} if lang else None)
    try:
        kernel.start()
        assert run_cell(kernel) == {name: "ok" for name in CHECKS}
    finally:
        kernel.stop()
