"""Every refusal of the kernel names a fix that can really be applied
(issue 24): through a real gateway (`kennel serve`, confined kernels), each
refused cell's error text is read, the conversation policy it names (the
JSON after "the conversation's policy") is sent as a new conversation's
policy, and the same cell then works. A fix the gateway rejects (an unknown
policy field: the shell escapes' text once named one) fails here, as does a
fix that does not lift the refusal. Refusals whose fix is what the client
sends (allow_stdin, closing the conversation) are followed the same way."""
import itertools
import json
import re
import shutil

import pytest

import hostprobe
from kernelclient import WHEEL_CELL
from kennel_testlib import (Control, execute, kernel_client, launcher, remove_state, serve, stream_text,
                            traversable_dir)

_ids = itertools.count()
FIX = "the conversation's policy "
ECHO = {"name": "echo", "description": "Returns its value.",
        "parameters": {"type": "object", "properties": {"value": {}}, "required": ["value"]}}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    """A daemon of this build with the confining launcher."""
    logs = tmp_path_factory.mktemp("gateway")
    state = traversable_dir("kennel-refusals-")
    config = logs / "config.json"
    config.write_text(json.dumps(hostprobe.gateway_config({"launcher": launcher(), "warm_pool": 0})))
    proc = serve(state, config, logs / "gateway.log", state / "gateway.json")
    control = Control(state / "gateway.json")
    yield control
    control.close()
    proc.terminate()
    assert proc.wait(30) == 0, (logs / "gateway.log").read_text()
    remove_state(state)
    shutil.rmtree(logs, ignore_errors=True)


@pytest.fixture
def gateway(daemon):
    """gateway(policy, **content): a client on a new conversation of the
    daemon; the test's conversations are closed at its end."""
    opened = []

    def open_conversation(policy=None, **content):
        conversation_id = f"refusal-{next(_ids)}"
        reply = daemon.open(conversation_id, policy=policy or {}, **content)
        assert reply["status"] == "ok", (policy, reply)
        kc = kernel_client(reply["connection"])
        kc.conversation_id = conversation_id
        opened.append(kc)
        return kc

    open_conversation.control = daemon
    yield open_conversation
    for kc in opened:
        kc.stop_channels()
        daemon.request("conversation_close_request", {"conversation_id": kc.conversation_id})


def named_fixes(text):
    """The policies a refusal names, each the JSON object after "the
    conversation's policy " (or after "(or " next to it)."""
    decoder = json.JSONDecoder()
    fixes = []
    for match in re.finditer(re.escape(FIX) + r"|\(or (?=\{)", text):
        fixes.append(decoder.raw_decode(text, match.end())[0])
    assert fixes, f"the refusal names no policy: {text}"
    return fixes


def refused(kc, code):
    """The refusal's text: the error's, or stderr's when the cell ran."""
    reply, outputs = execute(kc, code, allow_stdin=False)
    content = reply["content"]
    if content["status"] == "error":
        return content["evalue"]
    return stream_text(outputs, "stderr")


def works(kc, code, expected, **kw):
    reply, outputs = execute(kc, code, timeout=120, **kw)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert expected in stream_text(outputs), outputs


# (the policy that refuses, the cell, what it prints once allowed)
POLICY_REFUSALS = [
    ({}, "!echo escaped", "escaped"),
    ({}, "x = !echo escaped\nprint(x[0])", "escaped"),
    ({}, "import ctypes\nprint('ffi', ctypes.sizeof(ctypes.c_int))", "ffi 4"),
    ({"imports": {"deny": ["json", "csv"]}}, "import json\nprint(json.dumps([1]))", "[1]"),
    ({"imports": {"allow": ["math"]}}, "import json\nprint(json.dumps([2]))", "[2]"),
    ({"imports": {"deny": ["autoreload"]}}, "%load_ext autoreload\nprint('loaded')", "loaded"),
    ({}, "import socket\nserver = socket.socket()\nserver.bind(('127.0.0.1', 0))\nserver.listen()\n"
         "c = socket.create_connection(server.getsockname())\nprint('connected')", "connected"),
]


@pytest.mark.parametrize("policy, code, expected", POLICY_REFUSALS,
                         ids=["shell escape", "x = !cmd", "ctypes", "imports deny", "imports allow",
                              "load_ext", "network"])
def test_each_policy_a_refusal_names_lifts_it(gateway, policy, code, expected):
    """The named policy, sent in the place of the refusing one's fields."""
    text = refused(gateway(policy), code)
    for fix in named_fixes(text):
        works(gateway(dict(policy, **fix)), code, expected)


def test_pip_without_network_names_a_package_source_that_works(gateway):
    """The pip refusal's policy sets the environment of a wheel directory in
    the workspace: with wheels there, %pip installs and the package imports."""
    policy = {"builtins": "notebook"}
    text = refused(gateway(policy), "%pip install kennel-wheel-probe")
    assert "no network" in text, text
    for fix in named_fixes(text):
        kc = gateway(dict(policy, **fix))
        works(kc, WHEEL_CELL + "print('wheel written')", "wheel written")
        works(kc, "%pip install kennel-wheel-probe", "Successfully installed kennel-wheel-probe-1.0")
        works(kc, "import kennel_wheel_probe\nprint(kennel_wheel_probe.ANSWER)", "42")


def test_breakpoint_named_fix_runs_pdb_over_stdin(gateway):
    text = refused(gateway(), "breakpoint()")
    for fix in named_fixes(text):
        kc = gateway(fix)
        prompts = []

        def answer(msg):
            prompts.append(msg["content"]["prompt"])
            kc.input("p 6 * 7" if len(prompts) == 1 else "c")

        reply = kc.execute_interactive("breakpoint()\nprint('after')", allow_stdin=True, stdin_hook=answer,
                                       timeout=60, output_hook=lambda msg: None)
        assert reply["content"]["status"] == "ok", reply["content"]
        assert prompts and "(Pdb)" in prompts[0], prompts


def test_input_without_stdin_names_allow_stdin(gateway):
    kc = gateway()
    text = refused(kc, "print(input('name? '))")
    assert "allow_stdin true" in text and "input_request" in text, text
    outputs = []
    reply = kc.execute_interactive("print('got', input('name? '))", allow_stdin=True, timeout=60,
                                   stdin_hook=lambda msg: kc.input("kennel"), output_hook=outputs.append)
    assert reply["content"]["status"] == "ok" and stream_text(outputs) == "got kennel\n"


def test_a_tool_without_stdin_names_allow_stdin(gateway):
    kc = gateway(tools=[ECHO])
    text = refused(kc, "echo(1)")
    assert "allow_stdin true" in text and "tool_request" in text, text

    def host(msg):
        request = msg["content"]
        kc.stdin_channel.send(kc.session.msg("tool_reply", {"call_id": request["call_id"], "status": "ok",
                                                            "result": request["arguments"]["value"]},
                                             parent=msg["header"]))

    outputs = []
    reply = kc.execute_interactive("print('tool says', echo(5))", allow_stdin=True, stdin_hook=host, timeout=60,
                                   output_hook=outputs.append)
    assert reply["content"]["status"] == "ok" and stream_text(outputs) == "tool says 5\n"


def test_exit_for_an_agent_names_the_close_that_works(gateway):
    kc = gateway()
    text = refused(kc, "exit()")
    assert "conversation_close_request" in text, text
    reply = gateway.control.request("conversation_close_request", {"conversation_id": kc.conversation_id})
    assert reply["content"]["status"] == "ok", reply["content"]


def test_an_internal_module_names_no_fix(gateway):
    """_kennel is refused to everyone: the text says no policy allows it
    rather than naming one."""
    text = refused(gateway({"builtins": "none"}), "import _kennel")
    assert "no policy allows it" in text and FIX not in text, text
