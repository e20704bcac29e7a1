"""The gateway's own checks on tool calls, with the real confined kernel and
plain jupyter_client: replies are matched to pending calls by call_id (a
forged, unknown or other conversation's reply is dropped before the kernel),
the tool timeout is the gateway's, a dead kernel ends its pending calls, each
call is logged once without its argument values, tool lists are checked at
open (OpenAI's wrapped form accepted)."""
import itertools
import json
import os
import signal
import time

import pytest
from jupyter_client.session import Session

import toolhost
from kennel_testlib import wait_until
from toolhost import interactive

_ids = itertools.count()


@pytest.fixture
def open_client(daemon):
    """open_client(tools=..., **content) -> (conversation_id, client)."""
    opened = []

    def make(tools=toolhost.TOOLS, **content):
        conversation_id = f"checks-{next(_ids)}"
        reply = daemon.open(conversation_id, tools=tools, **content)
        kc = daemon.client(reply["connection"])
        opened.append((conversation_id, kc))
        return conversation_id, kc

    yield make
    for conversation_id, kc in opened:
        kc.stop_channels()
        daemon.control.request("conversation_close_request", {"conversation_id": conversation_id})


def reply_to(kc, msg, result, call_id=None, session=None):
    content = {"call_id": call_id or msg["content"]["call_id"], "status": "ok", "result": result}
    (session or kc.session).send(kc.stdin_channel.socket, "tool_reply", content, parent=msg["header"])


def events(daemon, name, **match):
    lines = [json.loads(line) for line in daemon.log().splitlines() if line.strip()]
    return [e for e in lines if e["event"] == name and all(e.get(k) == v for k, v in match.items())]


CATCH = "try:\n    print({call})\nexcept ToolError as e:\n    print(e.ename, '|', e.evalue)"


def test_forged_and_unknown_replies_never_reach_the_kernel(daemon, open_client):
    conv, kc = open_client()
    wrong_key = Session(key=b"not the conversation key", signature_scheme="hmac-sha256")

    def host(msg):
        reply_to(kc, msg, "forged", session=wrong_key)       # badly signed
        reply_to(kc, msg, "unknown", call_id="0" * 24)       # no such pending call
        reply_to(kc, msg, "genuine")

    reply, stdout, error = interactive(kc, CATCH.format(call="echo('x')"), host)
    # had either reached the kernel it would have returned "forged" or raised
    # BadToolReply (another call_id)
    assert reply["content"]["status"] == "ok" and stdout == "genuine\n", error
    wait_until(lambda: events(daemon, "tool_reply_dropped", conversation=conv, call_id="0" * 24), 5)
    assert any(e["channel"] == "stdin" and e["reason"] == "bad_signature"
               for e in events(daemon, "bad_message", conversation=conv))


def test_a_reply_sent_to_another_conversation_is_dropped(daemon, open_client):
    conv_a, a = open_client(policy={"tool_timeout": 1})
    conv_b, b = open_client()
    seen = []

    def host_answers_on_b(msg):
        seen.append(msg["content"]["call_id"])
        reply_to(b, msg, "via b")   # signed with b's key, on b's stdin

    started = time.monotonic()
    reply, stdout, error = interactive(a, CATCH.format(call="echo('x')"), host_answers_on_b)
    assert reply["content"]["status"] == "ok", error
    assert stdout.startswith("ToolTimeout | the host did not answer tool 'echo' within 1 s"), stdout
    assert time.monotonic() - started < 4  # the gateway's timeout, not the kernel's backstop (+5 s)
    wait_until(lambda: events(daemon, "tool_reply_dropped", conversation=conv_b, call_id=seen[0]), 5)
    assert events(daemon, "tool_call", conversation=conv_a, status="timeout")


def test_the_gateway_times_out_a_call_and_drops_the_late_reply(daemon, open_client):
    conv, kc = open_client(policy={"tool_timeout": 1})
    pending = []
    started = time.monotonic()
    reply, stdout, error = interactive(kc, CATCH.format(call="wait()"), pending.append)
    assert time.monotonic() - started < 4
    assert reply["content"]["status"] == "ok" and stdout.startswith("ToolTimeout | "), (stdout, error)
    reply_to(kc, pending[0], "too late")
    wait_until(lambda: events(daemon, "tool_reply_dropped", conversation=conv,
                              call_id=pending[0]["content"]["call_id"]), 5)
    reply, stdout, error = interactive(kc, "print(echo('next'))", lambda m: reply_to(kc, m, m["content"]["arguments"]["value"]))
    assert stdout == "next\n", error


def test_two_conversations_cannot_call_each_others_tools(open_client):
    schema = toolhost.schema(["x"], x=toolhost.STRING)
    _, a = open_client(tools=[{"name": "alpha", "description": "A.", "parameters": schema}])
    _, b = open_client(tools=[{"name": "beta", "description": "B.", "parameters": schema}])
    served = []

    def host(kc):
        return lambda m: (served.append(m["content"]["name"]), reply_to(kc, m, "ok"))

    code = ("print(sorted(tools), {mine}('x'))\n"
            "try:\n    {other}('x')\nexcept NameError as e:\n    print('NameError')\n"
            "print({other!r} in tools)")
    reply, stdout, error = interactive(a, code.format(mine="alpha", other="beta"), host(a))
    assert stdout == "['alpha'] ok\nNameError\nFalse\n", error
    reply, stdout, error = interactive(b, code.format(mine="beta", other="alpha"), host(b))
    assert stdout == "['beta'] ok\nNameError\nFalse\n", error
    assert served == ["alpha", "beta"]


def test_each_call_is_logged_once_without_argument_values(daemon, open_client):
    conv, kc = open_client()

    def host(msg):
        if msg["content"]["name"] == "fail":
            kc.session.send(kc.stdin_channel.socket, "tool_reply",
                            {"call_id": msg["content"]["call_id"], "status": "error",
                             "ename": "HostFailure", "evalue": "no"}, parent=msg["header"])
        else:
            reply_to(kc, msg, "done")

    reply, stdout, error = interactive(kc, "echo('sekrit-value-7')\n" + CATCH.format(call="fail('sekrit-value-8')"), host)
    assert stdout == "HostFailure | no\n", error
    msg_id = reply["parent_header"]["msg_id"]
    calls = events(daemon, "tool_call", conversation=conv)
    assert [(c["tool"], c["status"], c["msg_id"]) for c in calls] == [
        ("echo", "ok", msg_id), ("fail", "error", msg_id)]
    assert calls[1]["ename"] == "HostFailure"
    assert all(c["bytes"] > 0 and 0 <= c["duration"] < 10 and "arguments" not in c for c in calls)
    assert "sekrit" not in daemon.log()
    assert reply["metadata"]["kennel"]["tool_calls"] == 2


def test_a_dead_kernel_ends_its_pending_calls(daemon, open_client):
    conv, kc = open_client()
    pid = [c["pid"] for c in daemon.control.request("conversation_list_request")["content"]["conversations"]
           if c["conversation_id"] == conv][0]
    reply, _, error = interactive(kc, "echo('x')", lambda m: os.kill(pid, signal.SIGKILL))
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KernelDied", error
    assert events(daemon, "tool_call", conversation=conv, status="kernel_ended")
    reply, stdout, error = interactive(kc, "print(echo('again'))", lambda m: reply_to(kc, m, "again"))
    assert stdout == "again\n", error


def test_openai_wrapped_tools_are_unwrapped_and_bad_lists_refused(daemon, open_client):
    wrapped = [{"type": "function", "function": {
        "name": "lookup", "description": "Looks a key up.",
        "parameters": toolhost.schema(["key"], key=toolhost.STRING)}}]
    conv, kc = open_client(tools=wrapped)
    reply, stdout, error = interactive(kc, "print(lookup('k'), lookup.__doc__.splitlines()[0])",
                               lambda m: reply_to(kc, m, m["content"]["arguments"]))
    assert stdout == "{'key': 'k'} Looks a key up.\n", error
    # reopening with a bad list is refused and changes nothing
    again = daemon.control.open(conv, tools=wrapped + [{"name": "lookup"}])
    assert again["status"] == "error" and again["ename"] == "InvalidTools"
    assert again["evalue"] == "tool 'lookup': declared twice"
    reply, stdout, error = interactive(kc, "print(sorted(tools))", None)
    assert stdout == "['lookup']\n", error


def test_a_kernel_cannot_flood_the_daemons_log(daemon, open_client):
    """t25/t25b: kernel code sends tool_requests naming an undeclared tool
    of 4 MiB, without waiting for the refusals, then 300 small refused ones.
    Before: every refusal logged with the name whole, not rate-limited
    (+204 MiB in 6.4 s, lines of 5 MiB). Now each string of a line is cut
    (gw_log) and the refusals are rate-limited per conversation; what is
    held back is counted in log_dropped."""
    conv, kc = open_client()
    size_before = daemon.log_file.stat().st_size
    code = ("import json\n"
            "sr = ToolError.__init__.__globals__['_stdin_request']\n"
            "big = 'n' * (4 << 20)\n"
            "for i in range(20):\n"
            "    try:\n"
            "        sr('tool_request', json.dumps({'call_id': 'b%d' % i, 'name': big, 'arguments': {}}), 0.002)\n"
            "    except TimeoutError:\n"
            "        pass\n"
            "for i in range(300):\n"
            "    try:\n"
            "        sr('tool_request', json.dumps({'call_id': 's%d' % i, 'name': 'nope', 'arguments': {}}), 0.002)\n"
            "    except TimeoutError:\n"
            "        pass\n"
            "print('sent')")
    start = time.monotonic()
    reply, stdout, error = interactive(kc, code, lambda m: None, timeout=120)
    elapsed = time.monotonic() - start
    assert stdout == "sent\n", error
    # what was held back is counted with the next line logged after a second
    time.sleep(1.1)
    interactive(kc, "1", lambda m: None)
    wait_until(lambda: events(daemon, "log_dropped"), 5, "a log_dropped line")
    grown = daemon.log_file.stat().st_size - size_before
    assert grown < 256 * 1024, grown
    longest = max(len(line) for line in daemon.log().splitlines())
    assert longest < 24 * 1024, longest
    refused = events(daemon, "tool_call", conversation=conv, status="refused")
    # a burst of 10, then one a second
    assert refused and len(refused) <= 10 + elapsed + 2, (len(refused), elapsed)
    assert "...[cut: 4194304 bytes]" in refused[0]["tool"], refused[0]["tool"][-80:]
