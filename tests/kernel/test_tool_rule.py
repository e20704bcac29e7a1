"""The kernel's side of the one rule for tool declarations: every case of
tests/fixtures/tool_declarations.json sent to a real kernel as
kennel_configure_request (the gateway's side runs the same file:
tests/gateway/gw_tools_test.c). A good case is accepted and `tools` then
names exactly its tools, in order; a bad one is refused with InvalidTools and
an evalue holding the case's substring, and the tools stay as they were."""
import json
import os

import pytest

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "fixtures", "tool_declarations.json")
with open(FIXTURE, encoding="utf-8") as f:
    CASES = json.load(f)["cases"]
KEEP = [{"name": "kept"}]


def configure(kernel, content):
    """The content of the kennel_configure_reply to one request."""
    msg = kernel.kc.session.msg("kennel_configure_request", content)
    kernel.kc.shell_channel.send(msg)
    reply = kernel.shell_reply(msg["header"]["msg_id"])
    assert reply["msg_type"] == "kennel_configure_reply"
    return reply["content"]


def declared_names(kernel):
    reply, outputs = kernel.execute("import json as _j; print(_j.dumps(list(tools)))")
    assert reply["status"] == "ok", reply
    text = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
    return json.loads(text)


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_fixture_case(kernel, case):
    assert configure(kernel, {"tools": KEEP}) == {"status": "ok"}
    reply = configure(kernel, {"tools": case["tools"]})
    if "error" in case:
        assert reply["status"] == "error" and reply["ename"] == "InvalidTools", reply
        assert case["error"] in reply["evalue"]
        assert declared_names(kernel) == ["kept"]
    else:
        assert reply == {"status": "ok"}
        assert declared_names(kernel) == case["names"]

