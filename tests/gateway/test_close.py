"""Closing a conversation while its client waits (red-team finding F14): the
running execution and the queued ones end with a ConversationClosed error
reply, an iopub error and an idle status, sent before the sockets close, so
jupyter_client's execute_interactive returns at once instead of at its own
timeout. Real daemon, confined kernel, jupyter_client."""
import os
import queue
import signal
import threading
import time

import pytest

from kennel_testlib import wait_until

SLEEP = "import time\ntime.sleep(30)"


def wait_started(gw, conversation_id, count=1, timeout=20):
    wait_until(lambda: len([e for e in gw.events("execute_start") if e["conversation"] == conversation_id]) >= count,
               timeout, "the execution did not start")


def interactive_in_thread(kc, code):
    """Runs execute_interactive in a thread: (thread, box); box gets the reply,
    the outputs and when it returned."""
    box = {"outputs": []}

    def run():
        try:
            box["reply"] = kc.execute_interactive(code, timeout=30, output_hook=box["outputs"].append)
        except Exception as exc:  # TimeoutError before the fix
            box["error"] = exc
        box["returned"] = time.monotonic()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def test_close_during_an_execution_answers_the_client(gateway):
    _, kc = gateway.open_client("closing")
    thread, box = interactive_in_thread(kc, SLEEP)
    wait_started(gateway, "closing")
    closed_at = time.monotonic()
    assert gateway.control.request("conversation_close_request",
                                   {"conversation_id": "closing"})["content"]["status"] == "ok"
    thread.join(10)
    assert "error" not in box, box["error"]
    assert box["returned"] - closed_at < 2, box["returned"] - closed_at
    content = box["reply"]["content"]
    assert content["status"] == "error" and content["ename"] == "ConversationClosed"
    assert content["evalue"] == "the conversation was closed by the host; the kernel is gone"
    assert box["reply"]["metadata"]["kennel"]["state"] == "lost"
    errors = [m["content"] for m in box["outputs"] if m["msg_type"] == "error"]
    assert [e["ename"] for e in errors] == ["ConversationClosed"]


def test_close_answers_queued_executions_too(gateway):
    _, kc = gateway.open_client("queued")
    running = kc.execute(SLEEP)
    queued = kc.execute("print('never')")
    wait_started(gateway, "queued")
    gateway.control.request("conversation_close_request", {"conversation_id": "queued"})
    replies = {}
    deadline = time.monotonic() + 3
    while len(replies) < 2:
        assert time.monotonic() < deadline, replies
        msg = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        replies[msg["parent_header"]["msg_id"]] = msg["content"]
    assert replies[running]["ename"] == replies[queued]["ename"] == "ConversationClosed"
    assert replies[queued]["evalue"] == ("not run: the conversation was closed before it (the conversation "
                                         "was closed by the host; the kernel is gone)")
    # each got its error output and its idle on iopub
    seen = {running: [], queued: []}
    deadline = time.monotonic() + 3
    while not all(states[-2:] == ["error", "idle"] for states in seen.values()):
        assert time.monotonic() < deadline, seen
        msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        parent = msg["parent_header"].get("msg_id")
        if parent in seen and msg["msg_type"] in ("error", "status"):
            seen[parent].append(msg["content"].get("execution_state", msg["msg_type"]))
    assert seen[queued] == ["busy", "error", "idle"]


def test_gateway_shutdown_during_an_execution_answers_the_client(gateway):
    """The first SIGTERM drains (the execution may run for drain_grace,
    tests/http/test_ops.py); a second stops at once, and the execution's
    client still gets its answer."""
    _, kc = gateway.open_client("stopping")
    thread, box = interactive_in_thread(kc, SLEEP)
    wait_started(gateway, "stopping")
    gateway.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: gateway.events("draining"), 10, "the drain")
    stopped_at = time.monotonic()
    gateway.proc.send_signal(signal.SIGTERM)
    thread.join(10)
    assert "error" not in box, box["error"]
    assert box["returned"] - stopped_at < 3
    assert box["reply"]["content"]["ename"] == "ConversationClosed"
    assert box["reply"]["content"]["evalue"] == "the gateway shut down; the kernel is gone"
    assert gateway.proc.wait(20) == 0


def close_with_requests_in_flight(gateway, conversation_id):
    """Stops the daemon, sends the host's close and then five execute
    requests, resumes it: (replies by msg_id within 5 s, the five ids)."""
    _, kc = gateway.open_client(conversation_id)
    kc.execute(SLEEP)
    wait_started(gateway, conversation_id)
    gateway.proc.send_signal(signal.SIGSTOP)
    try:
        closer = threading.Thread(target=gateway.control.request, daemon=True,
                                  args=("conversation_close_request", {"conversation_id": conversation_id}))
        closer.start()
        time.sleep(0.2)  # the clients' I/O threads write into the stopped daemon's sockets
        queued = [kc.execute(f"print({i})") for i in range(5)]
        time.sleep(0.2)
    finally:
        gateway.proc.send_signal(signal.SIGCONT)
    closer.join(10)
    replies = {}
    deadline = time.monotonic() + 5
    while len(replies) < 6 and time.monotonic() < deadline:
        try:
            msg = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        replies[msg["parent_header"]["msg_id"]] = msg["content"]
    return replies, queued


def test_requests_that_reach_a_closing_conversation_are_answered(gateway):
    """Execute requests already in the shell socket's queue when the loop
    dispatches the host's close (the client cannot know the host is closing)
    are answered ConversationClosed with the rest, never left waiting. The
    daemon is stopped while the close and then the requests are sent, so
    that they arrive in the same turn, the close first; one that libzmq's
    I/O thread had not yet queued when the loop handled the close is
    answered by the lingering socket, in the same words."""
    replies, queued = close_with_requests_in_flight(gateway, "racing")
    assert len(replies) == 6, replies
    assert {r["ename"] for r in replies.values()} == {"ConversationClosed"}, replies
    assert all(replies[q]["evalue"].startswith("not run: ") for q in queued), replies


LATE = ("not run: the conversation was closed before it "
        "(the conversation was closed by the host; the kernel is gone)")


def test_requests_sent_after_the_close_are_answered(gateway):
    """The close's reply came back, then the client (which has not heard of
    it) sends requests 10 to 200 ms later: the conversation's sockets linger
    after the close and answer each with ConversationClosed (before: no
    socket, no reply, the client waits for its own timeout), on shell and
    on control, with iopub's busy, error and idle, so execute_interactive
    returns at once. A new open of the same id meanwhile gets new sockets
    and works beside them."""
    _, kc = gateway.open_client("late")
    assert kc.execute_interactive("1 + 1", timeout=30)["content"]["status"] == "ok"
    closed = gateway.control.request("conversation_close_request", {"conversation_id": "late"})
    assert closed["content"]["status"] == "ok"
    sent = []
    for delay in (0.01, 0.05, 0.1, 0.2):
        time.sleep(delay)
        sent.append(kc.execute(f"print({delay})"))
    replies = {}
    deadline = time.monotonic() + 5
    while len(replies) < len(sent) and time.monotonic() < deadline:
        try:
            msg = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        replies[msg["parent_header"]["msg_id"]] = msg
    assert sorted(replies) == sorted(sent), f"{len(replies)} of {len(sent)} answered"
    for msg in replies.values():
        assert msg["content"]["ename"] == "ConversationClosed" and msg["content"]["evalue"] == LATE
        assert msg["metadata"]["kennel"]["state"] == "lost"

    # reopened meanwhile: fresh sockets, its own kernel; the old ones still answer
    _, fresh = gateway.open_client("late")
    assert fresh.execute_interactive("6 * 7", timeout=30)["content"]["status"] == "ok"
    outputs = []
    started = time.monotonic()
    reply = kc.execute_interactive("print('never')", timeout=10, output_hook=outputs.append)
    assert time.monotonic() - started < 2
    assert reply["content"]["ename"] == "ConversationClosed", reply["content"]
    assert [m["content"]["ename"] for m in outputs if m["msg_type"] == "error"] == ["ConversationClosed"]

    info = kc.kernel_info(reply=False)
    answer = kc.get_shell_msg(timeout=5)
    assert answer["parent_header"]["msg_id"] == info and answer["msg_type"] == "kernel_info_reply"
    assert answer["content"]["status"] == "error" and answer["content"]["evalue"] == LATE
    kc.shutdown()
    answer = kc.get_control_msg(timeout=5)
    assert answer["msg_type"] == "shutdown_reply" and answer["content"]["ename"] == "ConversationClosed"
    # the reopened conversation was not touched by any of it
    assert fresh.execute_interactive("6 * 7", timeout=30)["content"]["status"] == "ok"


def test_a_closed_conversations_sockets_close_after_the_linger(gateway):
    """The linger is bounded: a few seconds after the close its socket
    files are gone and nothing answers any more."""
    info, kc = gateway.open_client("brief")
    assert kc.execute_interactive("1 + 1", timeout=30)["content"]["status"] == "ok"
    prefix = info["connection"]["ip"]
    gateway.control.request("conversation_close_request", {"conversation_id": "brief"})
    assert os.path.exists(f"{prefix}-1") and not os.path.exists(f"{prefix}-5")  # shell lingers, hb not
    wait_until(lambda: not os.path.exists(f"{prefix}-1"), 10, "the end of the linger")
    msg_id = kc.execute("1 + 1")
    with pytest.raises(queue.Empty):
        kc.get_shell_msg(timeout=1)
    assert msg_id
