"""The relay under back-to-back load on every channel of several conversations
at once: the daemon's loop waits on one epoll set (gateway/gw_io.c), where a
lost wake-up (a socket whose ZMQ_FD signal a send took) would show as a
conversation that stops answering. tests/gateway/gw_unit.c makes that case
happen on purpose; this drives the whole relay."""
import time

from gwtest import stdout_of

CONVERSATIONS = 4
EXECUTES = 40


def drain(kc, msg_ids, timeout=90):
    """Replies (shell) and outputs (iopub) of msg_ids: {msg_id: (reply, outputs)}."""
    want = set(msg_ids)
    replies, outputs, idle = {}, {m: [] for m in msg_ids}, set()
    deadline = time.time() + timeout
    while len(replies) < len(want):
        msg = kc.get_shell_msg(timeout=max(0.1, deadline - time.time()))
        if msg["parent_header"].get("msg_id") in want:
            replies[msg["parent_header"]["msg_id"]] = msg
    while idle != want:
        msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.time()))
        parent = msg["parent_header"].get("msg_id")
        if parent not in want:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            idle.add(parent)
        elif msg["msg_type"] not in ("status", "execute_input"):
            outputs[parent].append(msg)
    return {m: (replies[m], outputs[m]) for m in msg_ids}


def flood(kc, n):
    """n executions sent back to back (none awaited), kernel_info among them."""
    ids = []
    for i in range(n):
        # small and larger outputs
        code = f"print({i}, flush=True)" if i % 4 else f"for j in range(20): print('{i}-' + str(j), flush=True)"
        ids.append(kc.execute(code))
        if i % 10 == 0:
            kc.kernel_info()  # shell requests that are not executions, interleaved
    return ids


def check_flood(kc, ids):
    results = drain(kc, ids)
    for i, msg_id in enumerate(ids):
        reply, outputs = results[msg_id]
        assert reply["content"]["status"] == "ok", reply["content"]
        assert "kennel" in reply["metadata"]
        want = f"{i}\n" if i % 4 else "".join(f"{i}-{j}\n" for j in range(20))
        assert stdout_of(outputs) == want, (i, outputs)


def check_stdin(kc):
    """stdin both ways right after the flood: input_request out, input_reply in."""
    msg_id = kc.execute("answer = input('q? ')", allow_stdin=True)
    req = kc.get_stdin_msg(timeout=30)
    assert req["msg_type"] == "input_request"
    kc.input("forty-two")
    reply, _ = drain(kc, [msg_id])[msg_id]
    assert reply["content"]["status"] == "ok"
    msg_id = kc.execute("print(answer, flush=True)")
    reply, outputs = drain(kc, [msg_id])[msg_id]
    assert stdout_of(outputs) == "forty-two\n"


def test_back_to_back_on_concurrent_conversations(make_gateway):
    gw = make_gateway(config={"queue_limit": 128, "warm_pool": 0})
    clients = [gw.open_client(f"load{i}")[1] for i in range(CONVERSATIONS)]
    t0 = time.time()
    # every conversation flooded before any reply is read: the daemon relays
    # for all of them at once, on shell, iopub and (next) stdin
    floods = [flood(kc, EXECUTES) for kc in clients]
    for kc, ids in zip(clients, floods):
        check_flood(kc, ids)
    for kc in clients:
        check_stdin(kc)
    for kc in clients:
        assert kc.is_alive()  # heartbeats echoed
    print(f"{CONVERSATIONS} x {EXECUTES} back-to-back executions in {time.time() - t0:.1f} s")
    assert not gw.events("dropped")
    assert gw.stop() == 0  # leak-free in a sanitizer build
