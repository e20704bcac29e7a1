"""Every code block of README.md runs as written, against this build
installed as `make install` installs it (readme.py reads the blocks from
the file itself).

One session, as a reader who pastes them in order into one terminal:
the shell blocks run verbatim in one bash (variables and background
daemons carry over; `set -e -o pipefail`, so a failing command fails its
block), each Python block is a script run by Debian's /usr/bin/python3,
and each mcpServers config block is used by an MCP client (this file's
MCP_CLIENT: the stdio command started, or the HTTP url posted to) after
the shell and Python blocks ran, against what they started. A config's
placeholder YOUR-TOKEN is the http_token of the gateway whose http_url
its url names. A block marked `<!-- readme-test skip: REASON -->` is
reported skipped with its reason; any other block without a known use
fails.

Where it runs: a mount and a network namespace of its own (as root),
with the build's `make install DESTDIR=` laid over /usr/local (kennel on
PATH as installed, the host module in Python's dist-packages there), a
fresh tmpfs on /tmp (the blocks' state dirs and files) and a network with
only its own loopback (the blocks' fixed port 8888 is theirs alone). Not
a pid namespace: a launcher names its cgroup after its pid, and pids of
a namespace's own would meet those of another run's on the host's one
cgroup tree. At the end the daemons the blocks started get SIGTERM (they
stop cleanly, their cgroups removed); at the test's timeout its whole
process group does."""
import os
import shlex
import signal
import subprocess

import pytest

import hostprobe
import readme
from kennel_testlib import BUILDDIR, SRCDIR

BLOCKS = readme.blocks((SRCDIR / "README.md").read_text())
SKIPPED = [b for b in BLOCKS if b.skip]
RUN = [b for b in BLOCKS if not b.skip and b.use()]
EOF_WORD = "KENNEL_README_BLOCK_END"

# An MCP client for an mcpServers config: initialize, then python_exec of
# print(6 * 7) on each server, which must answer 42.
MCP_CLIENT = r'''
import glob, json, os, subprocess, sys, urllib.parse, urllib.request

def token_for(url):
    origin = "{0.scheme}://{0.netloc}/".format(urllib.parse.urlsplit(url))
    for path in glob.glob("/tmp/*/gateway.json"):
        info = json.load(open(path))
        if info.get("http_url") == origin and info.get("http_token"):
            return info["http_token"]
    sys.exit(f"no gateway serving {origin} wrote an http_token in /tmp/*/gateway.json")

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "readme-test", "version": "1"}}}
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "python_exec", "arguments": {"code": "print(6 * 7)"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}

def over_stdio(server):
    proc = subprocess.Popen([server["command"], *server.get("args", [])], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ, **server.get("env", {})))
    answers = {}
    for msg in (INIT, INITIALIZED, CALL):
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()
        while "id" in msg and msg["id"] not in answers:
            line = json.loads(proc.stdout.readline())
            answers[line.get("id")] = line
    proc.stdin.close()
    proc.wait(30)
    return answers[2]

def over_http(server):
    headers = {k: v.replace("YOUR-TOKEN", token_for(server["url"])) for k, v in server.get("headers", {}).items()}
    headers.update({"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    def post(msg, session=None):
        h = dict(headers, **({"Mcp-Session-Id": session} if session else {}))
        req = urllib.request.Request(server["url"], json.dumps(msg).encode(), h, method="POST")
        with urllib.request.urlopen(req, timeout=60) as r:
            body = r.read().decode()
            if body.startswith("event:") or body.startswith("data:"):
                body = [l[5:] for l in body.splitlines() if l.startswith("data:")][-1]
            return r.headers.get("Mcp-Session-Id"), (json.loads(body) if body.strip() else None)
    session, _ = post(INIT)
    post(INITIALIZED, session)
    return post(CALL, session)[1]

config = json.load(open(sys.argv[1]))
for name, server in config["mcpServers"].items():
    answer = over_http(server) if server.get("type") == "http" else over_stdio(server)
    text = "".join(c.get("text", "") for c in answer["result"]["content"])
    assert text.strip() == "42" and not answer["result"].get("isError"), (name, answer)
    print(name, "answered", text.strip())
'''


def step(block):
    """The bash text that runs one block, announced by its place."""
    head = f"KENNEL_README_AT={block.where}\necho '== {block.where} ({block.lang})'\n"
    if block.use() == "sh":
        return head + block.text
    name = f"block-{block.line}.{'py' if block.use() == 'python' else 'json'}"
    write = f"cat > {name} <<'{EOF_WORD}'\n{block.text}{EOF_WORD}\n"
    if block.use() == "python":
        return head + write + f"timeout 180 /usr/bin/python3 {name} < /dev/null\n"
    return head + write + f"timeout 180 /usr/bin/python3 mcp-client.py {name} < /dev/null\n"


def session_script():
    lines = ["set -eE -o pipefail",
             "trap 'echo \"$KENNEL_README_AT failed (exit $?): the command above\" >&2' ERR",
             # the daemons the blocks started: SIGTERM, then wait for them
             "trap 'kill $(jobs -p) 2> /dev/null || true; wait' EXIT",
             "cd /tmp/readme",
             f"cat > mcp-client.py <<'{EOF_WORD}'\n{MCP_CLIENT}\n{EOF_WORD}"]
    lines += [step(b) for b in RUN if b.use() != "mcp"]
    lines += [step(b) for b in RUN if b.use() == "mcp"]
    lines.append("echo '== every README block ran'")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """`make install DESTDIR=` of this build: its usr/local."""
    dest = tmp_path_factory.mktemp("readme-install")
    out = subprocess.run(["make", "-C", str(BUILDDIR), "install", f"DESTDIR={dest}"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return dest / "usr" / "local"


def test_every_block_runs_or_says_why_not():
    unknown = [f"{b.where} ({b.lang or 'no language'})" for b in BLOCKS if not b.skip and not b.use()]
    assert not unknown, ("README blocks the test has no use for: mark each `<!-- readme-test skip: REASON -->` "
                         f"or give it a use in tests/docs: {unknown}")
    assert RUN, "README.md has no block to run"


@pytest.mark.parametrize("block", SKIPPED, ids=[b.where for b in SKIPPED])
def test_a_marked_block_is_reported(block):
    pytest.skip(f"{block.where} ({block.lang}) not run: {block.skip}")


def test_readme_blocks_run_as_written(installed, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root: the blocks run in namespaces of the test's own (mount, network)")
    lacking = hostprobe.lacking_layers(0)
    if lacking:
        pytest.skip(f"this host lacks confinement layers {sorted(lacking)}: README's `kennel serve` "
                    "(no config) refuses to confine here, as it should")
    script = tmp_path / "readme.sh"
    script.write_text(session_script())
    setup = "\n".join([
        "set -e",
        "ip link set lo up",
        f"mount -t overlay kennel-readme -o lowerdir={shlex.quote(str(installed))}:/usr/local /usr/local",
        "mount -t tmpfs -o mode=1777 kennel-readme /tmp",
        "mkdir /tmp/readme /tmp/home",
        'exec bash "/dev/fd/$KENNEL_README_FD"'])
    env = dict(os.environ, HOME="/tmp/home", ASAN_OPTIONS="detect_leaks=0",
               PATH="/usr/local/bin:" + os.environ.get("PATH", "/usr/bin:/bin"))
    for name in ("KENNEL_AUTH_TOKEN", "KG_AUTH_TOKEN", "KENNEL_STATE_DIR", "PYTHONPATH"):
        env.pop(name, None)
    with open(script) as fd:  # read through the fd: the tmpfs on /tmp hides the file's path
        env["KENNEL_README_FD"] = str(fd.fileno())
        proc = subprocess.Popen(["unshare", "--mount", "--net", "--propagation", "private", "bash", "-c", setup],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=env, pass_fds=(fd.fileno(),), start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)  # the daemons drain and stop their kernels
            try:
                output, _ = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                output, _ = proc.communicate()
            pytest.fail(f"README's blocks did not end within 900 s:\n{output[-8000:]}")
    print(output[-20000:])
    assert proc.returncode == 0 and "== every README block ran" in output, output[-8000:]
    for b in RUN:
        assert f"== {b.where} ({b.lang})" in output, f"{b.where} never ran"
