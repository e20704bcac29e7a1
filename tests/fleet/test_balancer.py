"""Three `kennel serve --http` gateways behind HAProxy with the shipped
config (gateway/deploy/k8s/base/haproxy.cfg): ids carry their gateway's
shard, the agent frameworks' clients run through the balancer, 300
conversations each stay on their gateway, a killed gateway's conversations
answer 404 at once while the others never notice, a fourth gateway moves
nothing, a drained one gets no new conversation. The numbers (conversations
per gateway, the balancer's added latency) go to BUILDDIR/fleet-numbers.json
for README's "Many machines"."""
import asyncio
import concurrent.futures as cf
import json
import os
import secrets
import signal
import time
import types

import pytest
import requests
import websocket

from agentclients import AG2, Autogen, Smolagents
from fleetlib import (Balancer, Gateway, auth, create_kernel, elapsed, execute, percentile, receive_reply,
                      round_trip, send_execute, upgrade_status)
from kennel_testlib import BUILDDIR, wait_until

TOKEN = secrets.token_hex(16)
CONVERSATIONS = 300
NUMBERS = BUILDDIR / "fleet-numbers.json"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    f = types.SimpleNamespace(root=root, gateways=[], balancer=None)
    try:
        for i in range(3):
            f.gateways.append(Gateway(root, i, TOKEN))
        f.balancer = Balancer(root, f.gateways, TOKEN)
        yield f
    finally:
        if f.balancer:
            f.balancer.stop()
        for g in f.gateways:
            g.gw.stop()  # the killed one too: its state directory goes


def record(**numbers):
    old = json.loads(NUMBERS.read_text()) if NUMBERS.exists() else {}
    NUMBERS.write_text(json.dumps(dict(old, **numbers), indent=1))


def holder(fleet, kernel_id):
    """The gateway whose shard the id names."""
    shard = kernel_id.split("-")[0]
    return next(g for g in fleet.gateways if g.shard == shard)


def in_parallel(fn, items, workers=6):
    with cf.ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def test_ids_name_their_gateway(fleet):
    bal = fleet.balancer.target
    ids = [create_kernel(bal) for _ in range(6)]
    assert {holder(fleet, k).index for k in ids} == {0, 1, 2}, ids
    for k in ids:
        for g in fleet.gateways:
            assert (k in g.kernel_ids()) == (g is holder(fleet, k))
        # round robin would send every other request elsewhere: all 200
        for _ in range(4):
            assert requests.get(f"{bal.base_url}/api/kernels/{k}", headers=auth(TOKEN)).status_code == 200
    for k in ids:
        assert requests.delete(f"{bal.base_url}/api/kernels/{k}", headers=auth(TOKEN)).status_code == 204


def test_sessions_follow_their_kernel(fleet):
    bal = fleet.balancer.target
    made = requests.post(f"{bal.base_url}/api/sessions", headers=auth(TOKEN),
                         json={"path": "a.ipynb", "type": "notebook", "name": "", "kernel": {"name": "python3"}})
    assert made.status_code == 201, made.text
    session = made.json()
    assert session["id"].split("-")[0] == session["kernel"]["id"].split("-")[0]
    for _ in range(4):
        r = requests.get(f"{bal.base_url}/api/sessions/{session['id']}", headers=auth(TOKEN))
        assert r.status_code == 200 and r.json()["kernel"]["id"] == session["kernel"]["id"]
    assert execute(bal, session["kernel"]["id"], "1 + 1")[0] == "2"
    # a session made for an existing kernel (its id in the body) is made
    # on that kernel's gateway, whichever the balancer's turn
    kernels = [create_kernel(bal) for _ in range(3)]
    for k in kernels:
        r = requests.post(f"{bal.base_url}/api/sessions", headers=auth(TOKEN),
                          json={"path": f"{k}.ipynb", "type": "notebook", "kernel": {"id": k}})
        assert r.status_code == 201 and r.json()["kernel"]["id"] == k, r.text
        assert r.json()["id"].split("-")[0] == k.split("-")[0]
    assert requests.delete(f"{bal.base_url}/api/sessions/{session['id']}", headers=auth(TOKEN)).status_code == 204
    for k in kernels:
        assert requests.delete(f"{bal.base_url}/api/kernels/{k}", headers=auth(TOKEN)).status_code == 204


def test_files_follow_their_kernel(fleet):
    """/api/contents/{kernel id} and /files/{kernel id} reach the gateway
    holding the kernel, whose workspace they are."""
    bal = fleet.balancer.target
    kernels = [create_kernel(bal) for _ in range(3)]
    assert {holder(fleet, k).index for k in kernels} == {0, 1, 2}
    for k in kernels:
        for _ in range(3):
            r = requests.put(f"{bal.base_url}/api/contents/{k}/note.txt", headers=auth(TOKEN),
                             json={"type": "file", "format": "text", "content": k})
            assert r.status_code in (200, 201), r.text
            r = requests.put(f"{bal.base_url}/files/{k}/raw.bin", headers=auth(TOKEN), data=k.encode())
            assert r.status_code == 201, r.text
            assert requests.get(f"{bal.base_url}/files/{k}/note.txt", headers=auth(TOKEN)).text == k
            got = requests.get(f"{bal.base_url}/api/contents/{k}/raw.bin", headers=auth(TOKEN))
            assert got.status_code == 200 and got.json()["content"] == k, got.text
        assert execute(bal, k, "open('/workspace/note.txt').read()")[0] == repr(k)
        # a body bigger than HAProxy's buffer streams through (the body is
        # buffered only to look for a session's kernel id)
        big = os.urandom(3 << 20)
        assert requests.put(f"{bal.base_url}/files/{k}/big.bin", headers=auth(TOKEN), data=big).status_code == 201
        assert requests.get(f"{bal.base_url}/files/{k}/big.bin", headers=auth(TOKEN)).content == big
        assert requests.delete(f"{bal.base_url}/api/kernels/{k}", headers=auth(TOKEN)).status_code == 204


def test_agent_clients_through_the_balancer(fleet):
    bal = fleet.balancer.target
    smol = Smolagents(bal)
    assert smol.wait_for_server()
    smol.create_kernel()
    assert smol.run_code("x = 40") == (None, "", False)
    assert smol.run_code("print('hi'); x + 2") == ("42", "hi\n", False)
    requests.delete(f"{bal.base_url}/api/kernels/{smol.kernel_id}", headers=auth(TOKEN))

    ag2 = AG2(bal)
    ag2.start()
    try:
        assert [r.output for r in ag2.execute_code_blocks(["y = 5", "print(y + 1)"])] == ["", "6\n"]
        ag2.restart()
        after = ag2.execute_code_blocks(["y"])[0]
        assert not after.is_ok and "NameError" in after.output
    finally:
        ag2.stop()

    async def autogen():
        client = Autogen(bal)
        await client.start()
        try:
            assert (await client.execute_code_blocks(["print('hello')"]))[0].output == "hello\n"
            await client.restart()
            assert (await client.execute_code_blocks(["print('again')"]))[0].output == "again\n"
        finally:
            await client.stop()
    asyncio.run(asyncio.wait_for(autogen(), 180))


def test_lists_through_the_balancer_are_the_fleets(fleet):
    """GET /api/kernels and /api/sessions through the balancer join every
    gateway's list (kennel-list.lua), asked with the client's token."""
    bal = fleet.balancer.target
    ids = [create_kernel(bal) for _ in range(3)]
    sessions = [requests.post(f"{bal.base_url}/api/sessions", headers=auth(TOKEN),
                              json={"path": f"{k}.ipynb", "type": "notebook", "kernel": {"id": k}}).json()["id"]
                for k in ids]
    everyone = set().union(*(g.kernel_ids() for g in fleet.gateways))
    assert set(ids) <= everyone and len({holder(fleet, k).index for k in ids}) == 3
    for _ in range(3):
        r = requests.get(f"{bal.base_url}/api/kernels", headers=auth(TOKEN))
        assert r.status_code == 200 and {k["id"] for k in r.json()} == everyone, r.text
        r = requests.get(f"{bal.base_url}/api/sessions?token={TOKEN}")
        assert r.status_code == 200 and set(sessions) <= {s["id"] for s in r.json()}, r.text
    wrong = requests.get(f"{bal.base_url}/api/kernels", headers=auth("wrong"))
    assert wrong.status_code == 401 and "message" in wrong.json()
    for k in ids:
        requests.delete(f"{bal.base_url}/api/kernels/{k}", headers=auth(TOKEN))


def open_conversation(t, conversation_id):
    """POST /api/kernels naming a conversation id (kennel's create or
    reattach): (status, kernel id)."""
    r = requests.post(f"{t.base_url}/api/kernels", headers=auth(TOKEN),
                      json={"kennel": {"conversation_id": conversation_id}}, timeout=120)
    assert r.status_code in (200, 201), (r.status_code, r.text)
    return r.status_code, r.json()["id"]


def test_a_conversation_id_is_one_kernel_in_the_fleet(fleet):
    """Red-team L6: a reattach by conversation id through the balancer
    alternated between two kernels named chat-1 on two gateways, and its
    files split between them. Now every create, reattach and file request
    naming chat-1 reaches the one gateway holding it (kennel-list.lua asks
    them), a new id goes where a hash of it says (spread over the
    gateways, the same for racing creates), and a conversation opened on a
    gateway directly, where the hash would not put it (as after gateways
    were added), is still found there."""
    bal = fleet.balancer.target
    opened = [open_conversation(bal, "chat-1") for _ in range(6)]
    assert [status for status, _ in opened] == [201] + [200] * 5, opened
    assert len({k for _, k in opened}) == 1, opened
    kernel = opened[0][1]
    home = holder(fleet, kernel)
    for n in range(4):
        r = requests.put(f"{bal.base_url}/api/contents/chat-1/a_secret_{n}.txt", headers=auth(TOKEN),
                         json={"type": "file", "format": "text", "content": f"secret {n}"})
        assert r.status_code in (200, 201), r.text
        r = requests.put(f"{bal.base_url}/files/chat-1/raw_{n}.bin?token={TOKEN}", data=b"raw")
        assert r.status_code == 201, r.text
    for g in fleet.gateways:
        listed = requests.get(f"{g.direct.base_url}/api/contents/chat-1", headers=auth(TOKEN))
        if g is home:
            names = {e["name"] for e in listed.json()["content"]}
            assert names == {f"a_secret_{n}.txt" for n in range(4)} | {f"raw_{n}.bin" for n in range(4)}, names
        else:
            assert listed.status_code == 404, (g.shard, listed.text)
    for n in range(4):
        assert requests.get(f"{bal.base_url}/files/chat-1/a_secret_{n}.txt", headers=auth(TOKEN)).text \
            == f"secret {n}"
    assert execute(bal, kernel, "len(__import__('os').listdir('/workspace'))")[0] == "8"

    # opened on each gateway directly: a reattach through the balancer finds it
    direct = {g.shard: open_conversation(g.direct, f"direct-{g.index}")[1] for g in fleet.gateways}
    took, straight = [], []
    for g in fleet.gateways:
        for _ in range(5):
            (status, k), seconds = elapsed(open_conversation, bal, f"direct-{g.index}")
            assert (status, k) == (200, direct[g.shard]), (g.shard, status, k)
            took.append(seconds)
            straight.append(elapsed(open_conversation, g.direct, f"direct-{g.index}")[1])
    # the lookup's cost: one GET per gateway up, before the request itself
    record(conversation_reattach_ms={"through_balancer": round(1000 * percentile(took, 50), 2),
                                     "direct": round(1000 * percentile(straight, 50), 2)})

    # new ids spread; racing creates of one new id make one kernel
    spread = {}
    for n in range(12):
        _, k = open_conversation(bal, f"spread-{n}")
        spread[f"spread-{n}"] = k
    landed = {g.shard: sum(holder(fleet, k) is g for k in spread.values()) for g in fleet.gateways}
    record(twelve_conversation_ids_per_gateway=landed)
    assert all(landed.values()), landed
    raced = in_parallel(lambda _: open_conversation(bal, "raced-1"), range(8), workers=8)
    assert len({k for _, k in raced}) == 1 and sorted(s for s, _ in raced) == [200] * 7 + [201], raced

    for k in [kernel, raced[0][1], *direct.values(), *spread.values()]:
        assert requests.delete(f"{bal.base_url}/api/kernels/{k}", headers=auth(TOKEN)).status_code == 204


def check_values(bal, conversations):
    """Each conversation still holds the x it was given: its requests
    reached its own kernel."""
    def check(item):
        k, i = item
        return execute(bal, k, "x")[0] == str(i)
    return all(in_parallel(check, list(conversations.items())))


def test_300_conversations_kill_add_drain(fleet):
    bal = fleet.balancer.target
    ids = in_parallel(lambda _: create_kernel(bal), range(CONVERSATIONS))
    conversations = {k: i for i, k in enumerate(ids)}
    in_parallel(lambda item: execute(bal, item[0], f"x = {item[1]}"), list(conversations.items()))
    per_gateway = {g.shard: g.kernel_ids() for g in fleet.gateways}
    for k in ids:
        assert [s for s, held in per_gateway.items() if k in held] == [k.split("-")[0]]
    counts = {s: len(held) for s, held in per_gateway.items()}
    record(conversations_per_gateway=counts)
    assert all(80 <= n <= 120 for n in counts.values()), counts
    assert check_values(bal, conversations)

    # kill -9 one gateway: its conversations answer 404 at once, a
    # websocket open on another's conversation carries on
    a, b, c = fleet.gateways
    on = {g.index: {k: i for k, i in conversations.items() if holder(fleet, k) is g} for g in (a, b, c)}
    survivor = next(iter(on[0]))
    ws = websocket.create_connection(f"{bal.ws_url}/api/kernels/{survivor}/channels", header=auth(TOKEN))
    b.gw.proc.kill()
    b.gw.proc.wait()
    first = next(iter(on[1]))
    status, took = elapsed(lambda: requests.get(f"{bal.base_url}/api/kernels/{first}", headers=auth(TOKEN)))
    assert status.status_code == 404 and "Kernel does not exist" in status.json()["message"], status.text
    record(killed_first_404_seconds=round(took, 4))
    assert took < 1.0, took
    gone = in_parallel(lambda k: requests.get(f"{bal.base_url}/api/kernels/{k}", headers=auth(TOKEN)).status_code,
                       list(on[1]))
    assert set(gone) == {404}
    assert {upgrade_status(bal, k) for k in list(on[1])[:10]} == {404}
    assert round_trip(ws, "x")[0] == str(conversations[survivor])
    alive = {**on[0], **on[2]}
    assert check_values(bal, alive)
    listed = {k["id"] for k in requests.get(f"{bal.base_url}/api/kernels", headers=auth(TOKEN)).json()}
    assert listed == a.kernel_ids() | c.kernel_ids()
    assert fleet.balancer.states()[f"kennel-{b.shard}"].startswith("DOWN")

    # a fourth gateway, the balancer restarted with it: nothing moves
    before = {g.shard: g.kernel_ids() for g in (a, c)}
    d = Gateway(fleet.root, 3, TOKEN)
    fleet.gateways.append(d)
    ws.close()
    fleet.balancer.restart([a, c, d])
    assert check_values(bal, alive)
    assert {g.shard: g.kernel_ids() for g in (a, c)} == before
    assert d.kernel_ids() == set()
    new = in_parallel(lambda _: create_kernel(bal), range(30))
    landed = {g.shard: sum(holder(fleet, k) is g for k in new) for g in (a, c, d)}
    record(thirty_after_the_fourth=landed)
    assert landed[d.shard] >= 5 and sum(landed.values()) == 30, landed

    # drain one (SIGTERM) while one of its kernels runs a 4 s execution:
    # creates sent at once, before the balancer's check sees the drain, get
    # the draining gateway's 503 retried on another one (retry-on 503), and
    # the running execution's reply still arrives through the balancer
    draining = next(iter(on[2]))
    ws = websocket.create_connection(f"{bal.ws_url}/api/kernels/{draining}/channels", header=auth(TOKEN))
    running = send_execute(ws, "import time; time.sleep(4); x")
    time.sleep(0.5)
    c.gw.proc.send_signal(signal.SIGTERM)
    after = in_parallel(lambda _: create_kernel(bal), range(30))
    assert {holder(fleet, k).shard for k in after} <= {a.shard, d.shard}
    assert receive_reply(ws, running)[0] == str(conversations[draining])
    ws.close()
    wait_until(lambda: not fleet.balancer.states()[f"kennel-{c.shard}"].startswith("UP"), 30,
               "the balancer marking the drained gateway down")
    assert c.gw.proc.wait(60) == 0
    assert check_values(bal, on[0])


def test_added_latency_side_by_side(fleet):
    """One kernel, one websocket straight to its gateway and one through
    the balancer, execute round trips alternated: the balancer's added
    latency is the difference (median, p99)."""
    bal = fleet.balancer.target
    k = create_kernel(bal)
    gw = holder(fleet, k)
    direct = websocket.create_connection(f"{gw.direct.ws_url}/api/kernels/{k}/channels", header=auth(TOKEN))
    through = websocket.create_connection(f"{bal.ws_url}/api/kernels/{k}/channels", header=auth(TOKEN))
    times = {"direct": [], "balancer": []}
    for n in range(340):
        for name, ws in (("direct", direct), ("balancer", through)) if n % 2 else (("balancer", through),
                                                                                   ("direct", direct)):
            _, took = elapsed(round_trip, ws, "pass")
            if n >= 40:  # warm-up
                times[name].append(took * 1000)
    direct.close()
    through.close()
    summary = {name: {"median_ms": round(percentile(t, 50), 3), "p99_ms": round(percentile(t, 99), 3), "n": len(t)}
               for name, t in times.items()}
    summary["added_median_ms"] = round(summary["balancer"]["median_ms"] - summary["direct"]["median_ms"], 3)
    summary["added_p99_ms"] = round(summary["balancer"]["p99_ms"] - summary["direct"]["p99_ms"], 3)
    record(execute_round_trip=summary)
    print(json.dumps(summary))
    assert summary["balancer"]["n"] == 300
