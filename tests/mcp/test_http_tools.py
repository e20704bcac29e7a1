"""Host tools on the daemon's /mcp: the operator config's "mcp" section
({"tools": FILE, "tools_from_mcp": CMD}) makes the daemon serve them as
`kennel mcp --tools FILE --tools-from-mcp CMD` does (the same objects:
gateway/mcp/mcp_hosttools.c, mcp_upstream.c). The official SDK's streamable
HTTP client (tests/mcp/node/calls.mjs) calls them from kernel code; the
tools file is checked at start and at SIGHUP, and a slow or flooding tool
command never stops the daemon's loop."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest
import requests

import hostprobe
from kennel_testlib import HttpGateway, built, traversable_dir, wait_until
from mcplib import exec_call, node_dir, sdk_calls

PY = "/usr/bin/python3"


def tools(marker_dir):
    return [
        {"name": "add", "description": "Adds a and b",
         "input_schema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                          "required": ["a", "b"]},
         "command": [PY, "-c", "import json, sys; a = json.load(sys.stdin); print(json.dumps(a['a'] + a['b']))"]},
        {"name": "host_pid", "description": "The command's pid and whether it sees the host's file",
         "command": ["/bin/sh", "-c", f"cat >/dev/null; test -e {marker_dir}/host-only && echo $$"]},
        {"name": "fail", "command": ["/bin/sh", "-c", "echo 'database is down' >&2; exit 3"]},
        {"name": "env_token", "description": "Whether the daemon's token reached the command",
         "command": ["/bin/sh", "-c", "cat >/dev/null; echo \"\\\"${KENNEL_AUTH_TOKEN:-none}\\\"\""]},
        {"name": "slow", "description": "Sleeps 5 s", "command": ["/bin/sh", "-c", "sleep 5; echo 1"]},
        {"name": "hang", "timeout": 1, "command": ["/bin/sleep", "60"]},
        # 64 MiB at once on stdout: over the 8 MiB cap, never all held
        {"name": "flood", "command": [PY, "-c", "import sys; sys.stdout.write('x' * (64 << 20))"]},
        # stdout without end, from a child that outlives the command too
        {"name": "flood_forever", "timeout": 60, "command": ["/bin/sh", "-c", "yes kennel-flood & yes kennel-flood"]},
    ]


def write_tools(path, content):
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.fixture(scope="module")
def gw(tmp_path_factory):
    d = tmp_path_factory.mktemp("mcp-http-tools")
    (d / "host-only").write_text("")
    tools_file = write_tools(d / "tools.json", tools(d))
    weather = f"{shutil.which('node')} {node_dir() / 'weather_server.mjs'}"
    # the token in the daemon's environment, as a systemd Environment= gives it
    g = HttpGateway(d, config={"mcp": {"tools": str(tools_file), "tools_from_mcp": weather}},
                    env={"KENNEL_AUTH_TOKEN": "token-of-the-http-api-" + os.urandom(8).hex()})
    g.wait_ready()
    g.tools_file = tools_file
    g.dir = d
    yield g
    if g.proc.poll() is None:
        assert g.stop() == 0, g.log_file.read_text()[-3000:]


def open_conversation(gw, tool_names=None):
    args = {} if tool_names is None else {"tools": tool_names}
    r = requests.post(gw.url + "mcp", headers={"Authorization": f"Bearer {gw.token}",
                                              "Accept": "application/json, text/event-stream"},
                      json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "conversation_open", "arguments": args}}, timeout=120)
    result = r.json()["result"]
    assert result["isError"] is False, result
    return result["structuredContent"]["conversation"]


def tool_error(name, args=""):
    return f"try:\n    {name}({args})\nexcept ToolError as e:\n    print(e.ename, '|', e.evalue)"


def test_a_kernel_calls_a_host_command_through_mcp(gw):
    [[r1, r2]] = sdk_calls(gw, [exec_call("add(a=2, b=40)"),
                                exec_call("import os\nprint(int(host_pid()) != os.getpid(), os.path.exists('"
                                          + str(gw.dir / "host-only") + "'))")])
    assert (r1["isError"], r1["text"]) == (False, "42"), r1
    assert r1["structured"]["kennel"]["tool_calls"] == 1
    # the command ran on the host (it saw the file the sandbox does not)
    assert r2["text"] == "True False\n", r2
    calls = gw.events("mcp_tool_call")
    assert {"via": "command", "tool": "add", "status": "ok"}.items() <= calls[0].items(), calls


def test_a_tool_command_does_not_get_the_daemons_token(gw):
    """The command works on what kernel code sends it: it gets the daemon's
    environment but KENNEL_AUTH_TOKEN and KG_AUTH_TOKEN."""
    assert gw.token.startswith("token-of-the-http-api-")
    [[r]] = sdk_calls(gw, [exec_call("env_token()")])
    assert r["text"] == "'none'", r


def test_command_failures_are_the_same_tool_errors_as_in_kennel_mcp(gw):
    [[fail, hang, flood]] = sdk_calls(gw, [exec_call(tool_error("fail")), exec_call(tool_error("hang")),
                                           exec_call(tool_error("flood"))])
    assert fail["text"].startswith("ToolFailed | ") and "exited with status 3: database is down" in fail["text"]
    assert hang["text"].startswith("ToolTimeout | ") and "did not finish within its timeout" in hang["text"]
    assert flood["text"].startswith("BadToolResult | ") and "wrote over 8388608 bytes" in flood["text"]
    statuses = {e["tool"]: e["status"] for e in gw.events("mcp_tool_call")}
    assert statuses.items() >= {"fail": "ToolFailed", "hang": "ToolTimeout", "flood": "BadToolResult"}.items()


def test_a_command_that_floods_stdout_without_end_is_stopped_at_the_cap(gw):
    """`yes` and a child of it write without end: the front stops the
    command once stdout passed its cap (not at the 60 s timeout), and the
    loop serves another conversation meanwhile."""
    other = open_conversation(gw)
    flood, quick = sdk_calls(gw, [exec_call(tool_error("flood_forever"))],
                             [exec_call("import time\ntime.sleep(0.5)", conversation=other)]
                             + [exec_call(f"{i} * 2", conversation=other) for i in range(3)])
    assert flood[0]["text"].startswith("BadToolResult | ") and "wrote over" in flood[0]["text"], flood
    assert flood[0]["ms"] < 30000, flood
    assert [q["text"] for q in quick[1:]] == ["0", "2", "4"], quick
    # the whole group was killed (the two are gone once init reaped them)
    wait_until(lambda: subprocess.run(["pgrep", "-f", "^yes kennel-flood"]).returncode == 1, 10,
               "no `yes kennel-flood` left running")


def test_a_forwarded_tool_of_a_second_mcp_server_through_mcp(gw):
    [[r]] = sdk_calls(gw, [exec_call("w = weather(city='Oslo')\nprint(w['city'], w['temp'])\nshout(text='hi')")])
    assert (r["isError"], r["text"]) == (False, "Oslo 21\n'HI'"), r
    assert any(e["via"] == "mcp" and e["tool"] == "weather" and e["status"] == "ok"
               for e in gw.events("mcp_tool_call"))


def test_a_client_cannot_name_a_command(gw):
    """conversation_open picks the operator's tools by name: a declaration
    with a command is refused, nothing runs."""
    r = requests.post(gw.url + "mcp", headers={"Authorization": f"Bearer {gw.token}"},
                      json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "conversation_open",
                                       "arguments": {"tools": [{"name": "x", "command": ["/bin/touch",
                                                                                       str(gw.dir / "pwned")]}]}}},
                      timeout=60).json()
    assert r.get("error") or r["result"]["isError"] is True, r
    assert not (gw.dir / "pwned").exists()


def test_a_slow_tool_does_not_block_other_conversations(gw):
    """The daemon is one loop: while a tool command sleeps 5 s for one
    conversation, another conversation's executions are answered."""
    other = open_conversation(gw)
    warm = sdk_calls(gw, [exec_call("1", conversation=other)])
    assert warm[0][0]["text"] == "1"
    slow_lane = [exec_call("slow()")]
    quick_lane = [exec_call("import time\ntime.sleep(0.5)", conversation=other)] + \
        [exec_call(f"{i} + 1", conversation=other) for i in range(5)]
    slow, quick = sdk_calls(gw, slow_lane, quick_lane)
    assert slow[0]["text"] == "1", slow
    assert [q["text"] for q in quick[1:]] == [str(i + 1) for i in range(5)], quick
    # every quick answer came while the tool still ran (it ends at >= 5 s)
    assert quick[-1]["ms"] < slow[0]["ms"] - 1000, (quick, slow)


def test_a_bad_tools_file_is_refused_at_start(tmp_path):
    bad = write_tools(tmp_path / "tools.json", [{"name": "x"}])
    state = traversable_dir("kennel-http-tools-")
    cfg = hostprobe.gateway_config({"launcher": str(built("kernel-launcher/kennel-launch")),
                                    "mcp": {"tools": str(bad)}})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    try:
        done = subprocess.run([str(built("gateway/kennel")), "serve", "--http", "127.0.0.1:0", "--state-dir",
                               str(state), "--config", str(tmp_path / "config.json"), "--log-file",
                               str(tmp_path / "gw.log")], capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    assert done.returncode != 0
    assert f"tools file {bad}: tool x: command must be a non-empty list of strings" in done.stderr, done.stderr


def reload(gw, event):
    before = len(gw.events(event))
    gw.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: len(gw.events(event)) > before, 30, f"a {event} log line")
    return gw.events(event)[-1]


def test_a_reload_checks_the_tools_file(gw):
    good = gw.tools_file.read_text()
    try:
        write_tools(gw.tools_file, '[{"name": "add", "command": ["a", 1]}]')
        failed = reload(gw, "reload_failed")
        assert f"tools file {gw.tools_file}: tool add: command[1] must be a string" in failed["error"], failed
        assert failed["outcome"] == "the old config is kept"
        # a good file that others may change is as bad: its commands run as the daemon's user
        write_tools(gw.tools_file, good)
        gw.tools_file.chmod(0o666)
        failed = reload(gw, "reload_failed")
        assert f"tools file {gw.tools_file}: writable by its group or others (mode 0666)" in failed["error"], failed
        gw.tools_file.chmod(0o644)
        # the old commands still serve, in a conversation opened after the refusal too
        h = open_conversation(gw)
        [[r]] = sdk_calls(gw, [exec_call("add(a=1, b=2)", conversation=h)])
        assert r["text"] == "3", r
        # a good file: conversations opened from now get its tools
        new = json.loads(good) + [{"name": "triple", "input_schema": {"type": "object", "properties": {
            "n": {"type": "number"}}}, "command": [PY, "-c", "import json, sys; print(3 * json.load(sys.stdin)['n'])"]}]
        write_tools(gw.tools_file, new)
        reload(gw, "reload")
        h = open_conversation(gw)
        [[r]] = sdk_calls(gw, [exec_call("triple(n=14)", conversation=h)])
        assert r["text"] == "42", r
    finally:
        gw.tools_file.write_text(good)
