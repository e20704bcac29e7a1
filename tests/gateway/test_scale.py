"""50 conversations open and execute at the same time through one daemon."""
import time

from gwtest import stdout_of

N = 50


def collect(kc, msg_id, timeout=120):
    outputs = []
    deadline = time.time() + timeout
    while True:
        msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.time()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        if msg["msg_type"] not in ("status", "execute_input"):
            outputs.append(msg)
    reply = kc.get_shell_msg(timeout=max(0.1, deadline - time.time()))
    assert reply["parent_header"]["msg_id"] == msg_id
    return reply, outputs


def test_fifty_concurrent_conversations(gateway):
    control = gateway.control
    # all opens in flight at once: the daemon answers each when its kernel is ready
    sent = {}
    for i in range(N):
        msg = control.session.send(control.sock, "conversation_open_request", {"conversation_id": f"c{i}"})
        sent[msg["header"]["msg_id"]] = f"c{i}"
    replies = {}
    deadline = time.time() + 180
    while len(replies) < N and time.time() < deadline:
        if control.sock.poll(200):
            _, frames = control.session.feed_identities(control.sock.recv_multipart())
            r = control.session.deserialize(frames)
            replies[sent[r["parent_header"]["msg_id"]]] = r["content"]
    assert len(replies) == N
    assert all(c["status"] == "ok" for c in replies.values()), [c for c in replies.values() if c["status"] != "ok"]
    clients = {cid: gateway.client(c["connection"]) for cid, c in replies.items()}

    for cid, kc in clients.items():
        kc.execute(f"v = {int(cid[1:])}")
    for cid, kc in clients.items():
        kc.get_shell_msg(timeout=60)
    pending = {cid: kc.execute("print(v * 2, flush=True)") for cid, kc in clients.items()}
    for cid, kc in clients.items():
        reply, outputs = collect(kc, pending[cid])
        assert reply["content"]["status"] == "ok", reply["content"]
        assert stdout_of(outputs) == f"{int(cid[1:]) * 2}\n", (cid, outputs)
        assert reply["metadata"]["kennel"]["state"] == "kept"
    listed = control.request("conversation_list_request")["content"]["conversations"]
    assert len(listed) == N and len({c["pid"] for c in listed}) == N
