"""The HTTP rows of the benchmark (bench.py section "http", README row H):
the Jupyter kernels REST + WebSocket API of kennel's HTTP front against
Debian's jupyter-notebook 6.4.12 with ipykernel, driven by the same client
code: python3-requests for REST, websocket-client (one blocking socket) for
latency, tornado's websocket client (one event loop) for throughput. The
legacy JSON protocol, as the agent frameworks speak it."""
import asyncio
import json
import os
import pathlib
import subprocess
import sys
import time
import uuid

import requests
import websocket
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

import benchlib as B

# tests/httpclients: the servers (refserver) the client tests use
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "httpclients"))
import refserver  # noqa: E402

NO_HTTP = "no HTTP front yet"


def shell_request(code, msg_type="execute_request"):
    msg_id = uuid.uuid4().hex
    content = B.execute_content(code) if msg_type == "execute_request" else {}
    return msg_id, json.dumps({
        "header": {"msg_id": msg_id, "msg_type": msg_type, "session": "bench", "username": "bench",
                   "version": "5.3"},
        "parent_header": {}, "metadata": {}, "content": content, "channel": "shell", "buffers": {}})


def done_with(state, msg, msg_id):
    """Folds one message into state [replied, idle]; True when both are in
    (no order between shell and iopub is assumed, as in benchlib.roundtrip)."""
    if msg.get("parent_header", {}).get("msg_id") != msg_id:
        return False
    if msg["msg_type"] == "execute_reply":
        if msg["content"]["status"] != "ok":
            raise RuntimeError(f"execute_reply: {msg['content']}")
        state[0] = True
    elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
        state[1] = True
    return state[0] and state[1]


class Http:
    """One server's kernels API: REST calls and websockets to its kernels."""

    def __init__(self, kind, base_url, token):
        self.kind, self.base_url, self.token = kind, base_url, token
        self.ws_base = "ws" + base_url[len("http"):]
        self.headers = {"Authorization": f"token {token}"}
        self.rest = requests.Session()

    def create(self):
        r = self.rest.post(f"{self.base_url}/api/kernels", headers=self.headers, json={"name": "python3"})
        if r.status_code != 201:
            raise RuntimeError(f"{self.kind}: POST /api/kernels: {r.status_code} {r.text[:300]}")
        return r.json()["id"]

    def delete(self, kernel_id):
        self.rest.delete(f"{self.base_url}/api/kernels/{kernel_id}", headers=self.headers)

    def listed(self):
        return [k["id"] for k in self.rest.get(f"{self.base_url}/api/kernels", headers=self.headers).json()]

    def ws_url(self, kernel_id):
        return f"{self.ws_base}/api/kernels/{kernel_id}/channels"

    def connect(self, kernel_id, timeout=120):
        ws = websocket.create_connection(self.ws_url(kernel_id), header=self.headers, timeout=timeout)
        ws.settimeout(timeout)
        return ws

    @staticmethod
    def receive(ws):
        """The next message; a close from the server is an error naming its
        code and reason."""
        opcode, frame = ws.recv_data_frame()
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            code = int.from_bytes(frame.data[:2], "big") if len(frame.data) >= 2 else None
            raise ConnectionError(f"the server closed the websocket: {code} {frame.data[2:]!r}")
        return json.loads(frame.data)

    @staticmethod
    def roundtrip(ws, code="x = 1"):
        """Seconds from sending code to having its execute_reply and idle."""
        start = time.perf_counter()
        msg_id, text = shell_request(code)
        ws.send(text)
        state = [False, False]
        while not done_with(state, Http.receive(ws), msg_id):
            pass
        return time.perf_counter() - start


# ---- the two servers ----------------------------------------------------------

class NotebookServer:
    def __init__(self, workdir):
        self.server = refserver.start_notebook(pathlib.Path(workdir), name="bench-notebook")
        self.http = Http("notebook", self.server.base_url, self.server.token)
        self.pid = self.server.proc.pid

    def connection(self, kernel_id):
        """The kernel's own connection file, written by the server."""
        return json.loads((self.server.root / "runtime" / f"kernel-{kernel_id}.json").read_text())

    def kernel_pss_kb(self):
        """[PSS kB of each kernel]: the server's descendants are its kernels."""
        return [B.pss_kb(p) for p in B.descendants(self.server.proc.pid)]

    def server_pss_kb(self):
        return B.pss_kb(self.server.proc.pid)

    def stop(self):
        return self.server.stop()


class KennelHttpServer:
    """`kennel serve --http 127.0.0.1:0` through benchlib's KennelGateway, so
    the same daemon's ZeroMQ control socket opens conversations too. Without
    a warm pool (cold starts, as the notebook's), or with pool=True its
    default one (kennel as shipped)."""

    def __init__(self, run, workdir, pool=False):
        token = uuid.uuid4().hex
        env = dict(run.gateway_env or os.environ, KENNEL_AUTH_TOKEN=token)
        config = {"warm_pool": 0} if run.pool_configurable and not pool else {}
        self.gw = B.KennelGateway(run.args.builddir, workdir, config, env=env,
                                  transport_args=["--http", "127.0.0.1:0"])
        url = json.loads(self.gw.conn_file.read_text())["http_url"].rstrip("/")
        self.pool = pool and run.pool_configurable and B.pool_state(self.gw.info()) is not None
        self.http = Http("kennel_pool" if pool else "kennel", url, token)
        self.pid = self.gw.proc.pid
        refserver.wait_ready(url, token, self.gw.proc, self.gw.log_file)

    def kernel_pss_kb(self):
        return self.gw.pss()[1]

    def server_pss_kb(self):
        return self.gw.pss()[0]

    def stop(self):
        return self.gw.stop()


# ---- the measures -----------------------------------------------------------------

def create_to_first_reply(http):
    """POST /api/kernels -> websocket -> first execute_reply (and idle) of
    `x = 1`, in seconds; the kernel is deleted afterwards, untimed.
    [total, POST answered, websocket open] in seconds."""
    start = time.perf_counter()
    kernel_id = http.create()
    created = time.perf_counter()
    ws = http.connect(kernel_id)
    connected = time.perf_counter()
    try:
        Http.roundtrip(ws)
        return [time.perf_counter() - start, created - start, connected - created]
    finally:
        ws.close()
        http.delete(kernel_id)


def rtt_one_websocket(http, warmup, n):
    kernel_id = http.create()
    ws = http.connect(kernel_id)
    try:
        Http.roundtrip(ws)
        for _ in range(warmup):
            Http.roundtrip(ws, "x = x + 1")
        return [Http.roundtrip(ws, "x = x + 1") for _ in range(n)]
    finally:
        ws.close()
        http.delete(kernel_id)


def rtt_direct(server, warmup, n):
    """The same client pattern straight to a server's kernel over ZeroMQ
    (benchlib.SessionClient on its connection file): what the kernel costs
    without the server's websocket relay."""
    kernel_id = server.http.create()
    client = B.SessionClient(server.connection(kernel_id), ready=120)
    try:
        for _ in range(warmup):
            client.roundtrip("x = 1", 30)
        return [client.roundtrip("x = 1", 30) for _ in range(n)]
    finally:
        client.close()
        server.http.delete(kernel_id)


def grow(http, ids, n, batch=4):
    """Kernels up to n, each having answered `x = 1` over a websocket; a
    few at a time (ipykernels starting at once on 2 cores take minutes)."""
    while len(ids) < n:
        new = [http.create() for _ in range(min(batch, n - len(ids)))]
        for kernel_id in new:
            ws = http.connect(kernel_id)
            try:
                Http.roundtrip(ws)
            finally:
                ws.close()
            ids.append(kernel_id)
    return ids


def pss_per_idle_kernel(server, ids, level):
    grow(server.http, ids, level)
    time.sleep(1.0)  # start-up garbage collected, pages settled
    per = server.kernel_pss_kb()
    return {"per_kernel_mb": sum(per) / level / 1024, "processes": len(per), "kernels": level,
            "server_mb": server.server_pss_kb() / 1024}


async def _busy(ws, stop_at, done):
    while time.perf_counter() < stop_at:
        msg_id, text = shell_request("x = x + 1")
        await ws.write_message(text)
        state = [False, False]
        while True:
            raw = await ws.read_message()
            if raw is None:
                raise RuntimeError("websocket closed during the throughput run")
            if done_with(state, json.loads(raw), msg_id):
                break
        done.append(time.perf_counter())


def executes_per_s(http, ids, warmup, duration, pids):
    """Closed loops, one websocket per kernel, all on one tornado loop."""
    async def run_all():
        socks = [await websocket_connect(HTTPRequest(http.ws_url(k), headers=http.headers)) for k in ids]
        start = time.perf_counter()
        done = []
        cpu_before = B._cpu_of(pids)
        await asyncio.gather(*(_busy(ws, start + warmup + duration, done) for ws in socks))
        elapsed = time.perf_counter() - start
        cpu_after = B._cpu_of(pids)
        for ws in socks:
            ws.close()
        counted = [t for t in done if t >= start + warmup]
        window = max(counted) - (start + warmup) if counted else duration
        return {"executes_per_s": len(counted) / max(window, 1e-9), "executes": len(counted),
                "websockets": len(socks), "seconds": window,
                "cpu_cores": {k: round((cpu_after[k] - cpu_before[k]) / elapsed, 2) for k in cpu_after}}
    return asyncio.new_event_loop().run_until_complete(run_all())


def zmq_conversation(server, name):
    """A conversation opened over ZeroMQ: its open reply and its kernel id,
    found in GET /api/kernels."""
    before = set(server.http.listed())
    reply = server.gw.open([name])[0]
    if reply.get("status") != "ok":
        raise RuntimeError(f"conversation_open: {reply}")
    new = [k for k in server.http.listed() if k not in before]
    if len(new) != 1:
        raise RuntimeError(f"the ZeroMQ conversation is not listed once in GET /api/kernels: {new}")
    return reply, new[0]


def added_latency(server, warmup, n):
    """The HTTP front's added latency on one kernel: a conversation opened
    over ZeroMQ, driven alternately by jupyter_client's Session on plain
    sockets (benchlib.SessionClient) and by the websocket client, in blocks
    of 50, so load changes fall on both paths."""
    reply, kernel_id = zmq_conversation(server, "bench-http-zmq")
    zmq_client = B.SessionClient(reply["connection"])
    ws = server.http.connect(kernel_id)
    try:
        zmq_client.roundtrip("x = 1", 30)
        Http.roundtrip(ws, "x = 1")
        for _ in range(warmup):
            zmq_client.roundtrip("x = x + 1", 30)
            Http.roundtrip(ws, "x = x + 1")
        via_zmq, via_ws = [], []
        while len(via_ws) < n:
            via_zmq += [zmq_client.roundtrip("x = x + 1", 30) for _ in range(50)]
            via_ws += [Http.roundtrip(ws, "x = x + 1") for _ in range(50)]
    finally:
        ws.close()
        zmq_client.close()
        server.gw.close(["bench-http-zmq"])
    zmq_s, ws_s = B.summary(via_zmq, 1e6), B.summary(via_ws, 1e6)
    return {"zmq_session_us": zmq_s, "websocket_us": ws_s, "median": ws_s["median"] - zmq_s["median"],
            "p99": ws_s["p99"] - zmq_s["p99"]}


def added_latency_c(run, server):
    """The same with one C client for both paths (bench_front: czmq + libwire
    signing over ZeroMQ, libwebsockets with the v1 subprotocol over the
    websocket), alternated blocks of 50 on one conversation opened over
    ZeroMQ: the front's own added latency, without Python's costs."""
    reply, kernel_id = zmq_conversation(server, "bench-http-c")
    conn_file = run.workdir / "http-front-connection.json"
    conn_file.write_text(json.dumps(reply["connection"]))
    cmd = [run.builddir("tests/bench/bench_front"), "-n", str(run.c["c_rtt"]), "-w", str(run.c["c_warmup"]),
           "--http", server.http.base_url, "--token", server.http.token, "--kernel", kernel_id, str(conn_file)]
    try:
        cpu_before = B.cpu_seconds(server.pid)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=run.env)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr[-2000:]}")
        res = json.loads(out.stdout.strip().splitlines()[-1])
        trips = 2 * (res["zmq"]["n"] + run.c["c_warmup"] + 1)
        res["gateway_cpu_us_per_rtt_both_paths"] = (B.cpu_seconds(server.pid) - cpu_before) * 1e6 / trips
        return res
    finally:
        server.gw.close(["bench-http-c"])


# ---- the section ---------------------------------------------------------------------

def measure(server, c, ids):
    http = server.http
    out = {"rtt_ms": B.summary(rtt_one_websocket(http, c["http_rtt_warmup"], c["http_rtt"]))}
    if hasattr(server, "connection"):
        out["rtt_direct_zmq_ms"] = B.summary(rtt_direct(server, c["http_rtt_warmup"], c["http_rtt"]))
    out["pss"] = pss_per_idle_kernel(server, ids, c["http_memory"])
    grow(http, ids, c["http_tp"])
    pids = {"server": [server.pid], "kernels": B.descendants(server.pid)}
    out["throughput"] = executes_per_s(http, ids[:c["http_tp"]], c["tp_warmup"], c["tp_seconds"], pids)
    for kernel_id in ids:
        http.delete(kernel_id)
    return out


def section_http(run):
    """Create -> first reply interleaved (kennel, notebook, kennel, ...);
    then each server alone: round trip, PSS, throughput; kennel's added
    latency over its own ZeroMQ path. The kennel daemon of the other
    sections is stopped by then (bench.py runs this section last)."""
    c = run.c
    work = run.workdir / "http"
    notebook = NotebookServer(work)
    kennel = pooled = None
    try:
        if refserver.kennel_has_http(run.builddir("gateway/kennel")):
            kennel = KennelHttpServer(run, work / "kennel")
            pooled = KennelHttpServer(run, work / "kennel-pool", pool=True)
            if not pooled.pool:
                pooled.stop()
                pooled = None
        create = {"notebook": [], "kennel": [], "kennel_pool": []}
        for _ in range(c["http_create"]):
            for server in (kennel, pooled, notebook):
                if server is pooled and server is not None:
                    B.wait_pool_ready(server.gw)  # as row 2: a pooled kernel ready before each sample
                if server is not None:
                    create[server.http.kind].append(create_to_first_reply(server.http))
        if pooled is not None:
            pooled.stop()
            pooled = None
        res = {"create_first_reply_ms": {k: dict(B.summary([s[0] for s in v]),
                                                 post_ms=B.summary([s[1] for s in v]),
                                                 connect_ms=B.summary([s[2] for s in v]))
                                         for k, v in create.items() if v}}
        for server in (kennel, notebook):
            if server is not None:
                res[server.http.kind] = measure(server, c, [])
        if kennel is not None:
            res["added_latency_us"] = added_latency(kennel, c["http_rtt_warmup"], c["http_rtt"])
            res["added_latency_c_us"] = added_latency_c(run, kennel)
        else:
            res["note"] = NO_HTTP
        run.put("http", res)
    finally:
        for server in (kennel, pooled, notebook):
            if server is not None:
                server.stop()


# ---- the rows ---------------------------------------------------------------------------

def table_rows(res, num, ratio):
    """Rows H1-H5 for bench.py's table (kennel | notebook 6.4.12 + ipykernel)."""
    h = res.get("http")
    if not h:
        return []
    k, nb = h.get("kennel", {}), h.get("notebook", {})
    create = h.get("create_first_reply_ms", {})
    rows = []

    def timed(label, kv, nv, higher_better=False):
        rows.append((label, num(kv and kv["median"]) if kv else h.get("note", "-"), num(kv and kv["p99"]),
                     num(nv and nv["median"]), num(nv and nv["p99"]),
                     ratio(kv and kv["median"], nv and nv["median"], higher_better)))

    timed("H1 HTTP: POST /api/kernels -> 1st reply, new websocket, no warm pool (ms)", create.get("kennel"),
          create.get("notebook"))
    if create.get("kennel_pool"):
        timed("H1 same, kennel with its default warm pool (ms)", create.get("kennel_pool"), create.get("notebook"))
    timed("H2 HTTP: execute round trip, one websocket (ms)", k.get("rtt_ms"), nb.get("rtt_ms"))
    direct = nb.get("rtt_direct_zmq_ms")
    if direct:
        rows.append(("H2 of which the notebook's kernel over ZeroMQ, no server (ms)", "", "",
                     num(direct["median"]), num(direct["p99"]), ""))
    kp, np_ = k.get("pss"), nb.get("pss")
    rows.append((f"H3 HTTP: PSS per idle kernel @{(np_ or kp or {}).get('kernels', '-')} (MB)",
                 num(kp and kp["per_kernel_mb"]) if kp else h.get("note", "-"), "",
                 num(np_ and np_["per_kernel_mb"]), "", ratio(kp and kp["per_kernel_mb"], np_ and np_["per_kernel_mb"])))
    kt, nt = k.get("throughput"), nb.get("throughput")
    rows.append((f"H4 HTTP: executes/s, {(nt or kt or {}).get('websockets', '-')} busy websockets",
                 num(kt and kt["executes_per_s"]) if kt else h.get("note", "-"), "",
                 num(nt and nt["executes_per_s"]), "",
                 ratio(kt and kt["executes_per_s"], nt and nt["executes_per_s"], True)))
    added = h.get("added_latency_us")
    rows.append(("H5 HTTP front's added latency over ZeroMQ, same kernel (us)",
                 num(added["median"]) if added else h.get("note", "-"), num(added and added["p99"]), "", "", ""))
    c_added = h.get("added_latency_c_us")
    if c_added:
        for label, key in (("ZeroMQ", "zmq"), ("websocket, v1", "websocket")):
            rows.append((f"H6 C client round trip, same conversation, over {label} (us)",
                         num(c_added[key]["p50_us"]), num(c_added[key]["p99_us"]), "", "", ""))
    rows.append(("H6 HTTP front's added latency, C client (us)",
                 num(c_added["added_p50_us"]) if c_added else h.get("note", "-"),
                 num(c_added and c_added["added_p99_us"]), "", "", ""))
    return rows


def smoke_problems(res, need):
    h = res.get("http")
    if h is None:
        return []
    problems = []
    nb = h.get("notebook", {})
    need("http.create_first_reply_ms.notebook.median", (h.get("create_first_reply_ms", {}).get("notebook") or {}).get("median"))
    need("http.notebook.rtt_ms.median", (nb.get("rtt_ms") or {}).get("median"))
    need("http.notebook.pss.per_kernel_mb", (nb.get("pss") or {}).get("per_kernel_mb"))
    if not (nb.get("throughput") or {}).get("executes"):
        problems.append("http.notebook.throughput: no executes")
    if "kennel" in h:
        need("http.kennel.rtt_ms.median", (h["kennel"].get("rtt_ms") or {}).get("median"))
        need("http.added_latency_us.median", (h.get("added_latency_us") or {}).get("median"))
        need("http.added_latency_c_us.added_p50_us", (h.get("added_latency_c_us") or {}).get("added_p50_us"))
    elif h.get("note") != NO_HTTP:
        problems.append(f"http: neither kennel numbers nor '{NO_HTTP}'")
    return problems
