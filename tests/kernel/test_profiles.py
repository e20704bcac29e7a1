"""Builtins profiles and import policies other than the default, through the
path the gateway uses: `kennel-launch --spec-fd N` with kernel settings
(confined with the default policy)."""
from kernelclient import TIMEOUT, ConfinedKernel, built


def test_notebook_profile_relaxes_the_guardrails(launch):
    kernel = launch({"builtins": "notebook"})
    assert kernel.value("import ctypes; ctypes.__name__") == "'ctypes'"
    reply, outputs = kernel.execute("exit()")
    # asks the front end to close, as ipykernel (test_fidelity.py); the kernel goes on
    assert reply["status"] == "ok" and reply["payload"] == [{"source": "ask_exit", "keepkernel": False}]
    assert kernel.value("'still here'") == "'still here'"
    # breakpoint() is pdb over the stdin channel
    msg_id = kernel.kc.execute("bp_value = 41\nbreakpoint()\nbp_value += 1", allow_stdin=True)
    for answer in ("p bp_value", "c"):
        request = kernel.kc.get_stdin_msg(timeout=TIMEOUT)
        assert request["content"]["prompt"] == "(Pdb) "
        kernel.kc.input(answer)
    assert kernel.shell_reply(msg_id)["content"]["status"] == "ok"
    outputs = kernel.iopub_until_idle(msg_id)
    assert "41\n" in "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
    reply, _ = kernel.execute("import _kennel")
    assert reply["ename"] == "ImportError"


def test_none_profile_gives_plain_builtins(launch):
    kernel = launch({"builtins": "none"})
    assert kernel.value("import ctypes; ctypes.__name__") == "'ctypes'"
    reply, _ = kernel.execute("exit()")
    assert reply["ename"] == "SystemExit"  # Python's own exit(), caught by the kernel
    assert kernel.value("1 + 1") == "2"
    reply, _ = kernel.execute("import _kennel")
    assert reply["ename"] == "ImportError"
    # the hidden helpers are still there
    assert kernel.value("callable(display), 'display' in globals()") == "(True, False)"


def test_agent_profile_with_an_extra_deny_list(launch):
    kernel = launch({"builtins": "agent", "imports": {"deny": ["sqlite3", "xml.dom"]}})
    for code, module in (("import sqlite3", "sqlite3"), ("import ctypes", "ctypes"),
                         ("from xml.dom import minidom", "xml.dom"),
                         ("from xml import dom", "xml.dom")):
        reply, _ = kernel.execute(code)
        assert reply["ename"] == "ImportError", code
        assert "import policy" in reply["evalue"] and module in reply["evalue"], reply["evalue"]
    assert kernel.value("import xml.etree.ElementTree as ET; ET.__name__") == "'xml.etree.ElementTree'"


def test_allow_list_mode(launch):
    kernel = launch({"imports": {"allow": ["json", "math"]}})
    assert kernel.value("import json, math\nfrom json import decoder\njson.dumps(math.pi)") \
        == "'3.141592653589793'"
    reply, _ = kernel.execute("import os")
    assert reply["ename"] == "ImportError"
    assert "allows only: json, math" in reply["evalue"]
    msg_id = kernel.kc.complete("import o")
    assert kernel.shell_reply(msg_id)["content"]["matches"] == []


def test_an_unknown_profile_stops_the_kernel_with_a_clear_message(tmp_path):
    kernel = ConfinedKernel(built("kernel-launcher/kennel-launch"), {"builtins": "anything-goes"},
                            str(tmp_path))
    status = kernel.popen.wait(timeout=TIMEOUT)
    assert status != 0
    assert "unknown builtins profile 'anything-goes'" in kernel.stderr()
