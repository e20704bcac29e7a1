"""Tool calls served with plain jupyter_client (no kennel module): the
conversation is opened with a bare control request, and the host answers each
tool_request from execute_interactive's stdin_hook with a tool_reply on the
stdin channel, as docs/PROTOCOL.md section 8 describes."""
import itertools
import time

import pytest

import toolhost

_ids = itertools.count()


@pytest.fixture
def client(daemon):
    """client(tools=..., policy=...) -> a started BlockingKernelClient on a
    fresh conversation (closed after the test)."""
    opened = []

    def make(tools=toolhost.TOOLS, **content):
        conversation_id = f"plain-{next(_ids)}"
        reply = daemon.open(conversation_id, tools=tools, **content)
        kc = daemon.client(reply["connection"])
        opened.append((conversation_id, kc))
        return kc

    yield make
    for conversation_id, kc in opened:
        kc.stop_channels()
        daemon.control.request("conversation_close_request", {"conversation_id": conversation_id})


class Host:
    """Serves tool_request messages with toolhost.handlers(); records them."""

    def __init__(self, kc, with_parent=True):
        self.kc = kc
        self.handlers = toolhost.handlers()
        self.with_parent = with_parent
        self.requests = []

    def __call__(self, msg):
        assert msg["msg_type"] == "tool_request", msg
        request = msg["content"]
        self.requests.append(request)
        reply = {"call_id": request["call_id"]}
        try:
            reply.update(status="ok", result=self.handlers[request["name"]](**request["arguments"]))
        except Exception as exc:
            reply.update(status="error", ename=type(exc).__name__, evalue=str(exc))
        parent = msg["header"] if self.with_parent else None
        self.kc.stdin_channel.send(self.kc.session.msg("tool_reply", reply, parent=parent))


def execute(kc, code, stdin_hook, timeout=60, **kw):
    """(reply content, stdout text, error content or None)."""
    reply, stdout, error = toolhost.interactive(kc, code, stdin_hook, timeout, **kw)
    return reply["content"], stdout, error


@pytest.mark.parametrize("with_parent", [True, False], ids=["parent", "no-parent"])
def test_round_trips_of_every_json_kind_and_an_error(client, with_parent):
    kc = client()
    host = Host(kc, with_parent)
    reply, stdout, error = execute(kc, "\n".join([
        "print(echo('s'), echo(7), echo([1, 2]), echo({'k': {'n': [None, 1.5]}}))",
        "print(get_weather(city='Oslo', unit='F'))",
        "try:",
        "    fail('refused')",
        "except ToolError as e:",
        "    print(e.ename, e.evalue)",
    ]), host)
    assert reply["status"] == "ok", error
    assert stdout.splitlines() == [
        "s 7 [1, 2] {'k': {'n': [None, 1.5]}}",
        "{'city': 'Oslo', 'temp': -3.5, 'unit': 'F'}",
        "HostFailure refused"]
    assert [r["name"] for r in host.requests] == ["echo"] * 4 + ["get_weather", "fail"]
    assert host.requests[4]["arguments"] == {"city": "Oslo", "unit": "F"}
    assert len({r["call_id"] for r in host.requests}) == len(host.requests)


def test_thousand_calls(client):
    kc = client()
    host = Host(kc)
    reply, stdout, error = execute(kc, "print(sum(add(a=i, b=1) for i in range(1000)))", host,
                                   timeout=120)
    assert reply["status"] == "ok", error
    assert stdout == f"{sum(range(1, 1001))}\n"
    assert len(host.requests) == 1000


def test_allow_stdin_false(client):
    kc = client()
    reply, _, error = execute(kc, "echo(1)", None, allow_stdin=False)
    assert reply["status"] == "error"
    assert error["ename"] == "ToolError" and "no client is serving stdin" in error["evalue"]
    reply, stdout, error = execute(kc, "print(echo('ok'))", Host(kc))
    assert reply["status"] == "ok" and stdout == "ok\n", error


def test_interrupt_while_the_host_never_answers(client):
    kc = client()
    seen = []

    def interrupt_instead_of_answering(msg):
        seen.append(msg["content"]["name"])
        kc.control_channel.send(kc.session.msg("interrupt_request", {}))

    started = time.monotonic()
    reply, _, error = execute(kc, "x = echo('never')", interrupt_instead_of_answering)
    assert time.monotonic() - started < 10
    assert seen == ["echo"]
    assert reply["status"] == "error" and error["ename"] == "KeyboardInterrupt"
    reply, stdout, error = execute(kc, "print('x' in globals(), echo('next'))", Host(kc))
    assert reply["status"] == "ok", error
    assert stdout == "False next\n"


def test_a_host_that_never_answers_gets_a_tool_error_not_a_hang(client):
    # nothing answers within tool_timeout: the call ends with ToolError (the
    # kernel's backstop fires a few seconds after the tool timeout)
    kc = client(policy={"tool_timeout": 0.5})
    seen = []
    started = time.monotonic()
    reply, stdout, error = execute(
        kc, "try:\n    wait()\nexcept ToolError as e:\n    print(e.ename)", seen.append)
    assert time.monotonic() - started < 15
    assert reply["status"] == "ok", error
    assert len(seen) == 1 and "Timeout" in stdout
    reply, stdout, error = execute(kc, "print(echo('still here'))", Host(kc))
    assert reply["status"] == "ok" and stdout == "still here\n", error


def test_execution_timeout_ends_a_call_the_host_never_answers(client):
    # the wall-clock execution timeout still applies while a tool call waits:
    # the gateway interrupts the kernel, the variables are kept
    kc = client(policy={"execution_timeout": 1, "tool_timeout": 30})
    execute(kc, "before = 1", None)
    seen = []
    started = time.monotonic()
    reply, _, error = execute(kc, "after = echo('never answered')", seen.append)
    assert time.monotonic() - started < 10
    assert seen and reply["status"] == "error"
    assert error["ename"] == "ExecutionTimeout", error
    reply, stdout, error = execute(kc, "print(before, 'after' in globals(), echo(2))", Host(kc))
    assert reply["status"] == "ok" and stdout == "1 False 2\n", error
