"""Host tools inside the kernel from `kennel mcp --tools FILE`: a command per
tool, run on the host, arguments as JSON on stdin, result as JSON on
stdout; every failure a ToolError with its ename, logged once."""
import json
import os
import shutil

import pytest

import hostprobe
from mcplib import Mcp, unprivileged_home

PY = "/usr/bin/python3"


def tools_file(tmp_path):
    marker = tmp_path / "host-side-effect"
    tools = [
        {"name": "add", "description": "Adds a and b",
         "input_schema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                          "required": ["a", "b"]},
         "command": [PY, "-c", "import json, sys; a = json.load(sys.stdin); "
                               "print(json.dumps({'sum': a['a'] + a['b'], 'pid': __import__('os').getpid()}))"]},
        {"name": "touch", "description": "Proves the command runs on the host",
         "command": ["/bin/sh", "-c", f"cat >/dev/null; touch {marker}; echo '\"done\"'"]},
        {"name": "fail", "command": ["/bin/sh", "-c", "echo 'database is down' >&2; exit 3"]},
        {"name": "slow", "timeout": 1, "command": ["/bin/sleep", "30"]},
        {"name": "garbage", "command": ["/bin/echo", "not json"]},
        {"name": "big", "command": [PY, "-c", "import sys; sys.stdout.write('\"' + 'x' * 300000 + '\"')"]},
    ]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools))
    return path, marker


@pytest.fixture
def mcp(tmp_path):
    path, marker = tools_file(tmp_path)
    m = Mcp(tmp_path, args=["--tools", path])
    m.initialize()
    m.marker = marker
    yield m
    assert m.close() == 0, m.log_text()


def run(mcp, code, **kw):
    return mcp.call("python_exec", {"code": code, **kw}, timeout=90)


def test_a_host_command_serves_a_tool_called_from_kernel_code(mcp):
    r = run(mcp, "r = add(a=2, b=40)\nprint(r['sum'])\nr['pid'] != __import__('os').getpid()")
    assert r["isError"] is False, r
    assert mcp.text(r) == "42\nTrue", r
    assert r["structuredContent"]["kennel"]["tool_calls"] == 1
    assert not mcp.marker.exists()
    assert mcp.text(run(mcp, "touch()")) == "'done'"
    assert mcp.marker.exists()      # the host's file system, not the sandbox's
    # many calls from one cell ("code mode")
    r = run(mcp, "sum(add(a=i, b=i)['sum'] for i in range(20))")
    assert mcp.text(r) == "380", r


@pytest.mark.parametrize("tool,ename,needle", [
    ("fail", "ToolFailed", "exited with status 3: database is down"),
    ("slow", "ToolTimeout", "did not finish within its timeout"),
    ("garbage", "BadToolResult", "did not write one JSON value"),
])
def test_command_failures_are_tool_errors(mcp, tool, ename, needle):
    r = run(mcp, f"try:\n    {tool}()\nexcept ToolError as e:\n    print(e.ename, '|', e.evalue)")
    assert r["isError"] is False, r
    got = mcp.text(r)
    assert got.startswith(ename + " | ") and needle in got, got
    assert f'"tool":"{tool}","status":"{ename}"' in mcp.log_text()


def test_arguments_are_checked_before_the_command_runs(mcp):
    r = run(mcp, "try:\n    add(a='x', b=1)\nexcept ToolError as e:\n    print(e.ename)")
    assert mcp.text(r) == "InvalidToolArguments\n", r


def test_large_results_arrive_whole(mcp):
    assert mcp.text(run(mcp, "len(big())")) == "300000"


def test_conversation_open_picks_tools(mcp):
    h = mcp.call("conversation_open", {"tools": ["add"]})["structuredContent"]["conversation"]
    r = run(mcp, "print(tools.get('add') is not None, tools.get('fail') is not None)", conversation=h)
    assert mcp.text(r) == "True False\n", r


@pytest.mark.parametrize("content,needle", [
    ("not json", "tools file"),
    ('[{"name": "x"}]', "command must be a non-empty list"),
    ('[{"name": "x", "command": ["a", 1]}]', "command[1] must be a string"),
    ('[{"name": "x", "command": ["a"], "timeout": 0}]', "timeout must be"),
    ('[{"name": "x", "command": ["a"]}, {"name": "x", "command": ["b"]}]', "declared twice"),
    ('[{"name": "x", "command": ["a"], "input_schema": {"type": "object", "properties": {"p": {"pattern": "a"}}}}]',
     "pattern"),
])
def test_a_bad_tools_file_is_refused_at_start(tmp_path, content, needle):
    path = tmp_path / "tools.json"
    path.write_text(content)
    m = Mcp(tmp_path, args=["--tools", path])
    assert m.close() == 2
    assert needle in m.log_text(), m.log_text()


@pytest.mark.parametrize("mode,owner,needle", [
    (0o666, None, "writable by its group or others (mode 0666)"),
    (0o620, None, "writable by its group or others (mode 0620)"),
    (0o644, hostprobe.NOBODY, f"owned by uid {hostprobe.NOBODY}: only uid 0"),
])
def test_a_tools_file_others_can_change_is_refused(tmp_path, mode, owner, needle):
    """Who can change the tools file can run commands as the front's user:
    a file another user owns, or one its group or others may write, is
    refused (this test runs as root, the front too)."""
    path, _ = tools_file(tmp_path)
    path.chmod(mode)
    if owner is not None:
        os.chown(path, owner, owner)
    m = Mcp(tmp_path, args=["--tools", path])
    assert m.close() == 2
    assert f"tools file {path}: {needle}" in m.log_text(), m.log_text()


def test_unprivileged_front_runs_code_and_its_tools_as_its_own_uid():
    """`kennel mcp` run as uid 65534: its own gateway confines as that uid
    (where the host lets it make user namespaces), and a host tool's
    command runs as that uid, not as root."""
    uid = hostprobe.NOBODY
    home = unprivileged_home(uid, "kennel-mcp-nobody-")
    tools = home / "tools.json"
    tools.write_text(json.dumps([{"name": "host_uid", "command": ["/bin/sh", "-c", "cat >/dev/null; id -u"]}]))
    m = Mcp(home, args=["--tools", tools], uid=uid)
    try:
        m.initialize()
        r = m.call("python_exec", {"code": "import os\nprint(os.getuid() != 0)\nhost_uid()"}, timeout=90)
        assert r["isError"] is False, (r, m.log_text())
        assert m.text(r) == f"True\n{uid}", r
    finally:
        assert m.close() == 0, m.log_text()
        shutil.rmtree(home, ignore_errors=True)


def test_the_config_mcp_section_gives_kennel_mcp_its_tools(tmp_path):
    """`kennel mcp --config F` reads F's "mcp" section as the daemon's /mcp
    does; --tools on the command line wins over it."""
    path, _ = tools_file(tmp_path)
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"name": "other", "command": ["/bin/sh", "-c", "cat >/dev/null; echo 7"]}]))
    for args, code, want in [([], "add(a=1, b=2)['sum']", "3"),
                             (["--tools", other], "print(other(), tools.get('add'))", "7 None\n")]:
        m = Mcp(tmp_path, args=args, config={"mcp": {"tools": str(path)}}, log_name=f"mcp{len(args)}.log")
        try:
            m.initialize()
            assert m.text(run(m, code)) == want, m.log_text()
        finally:
            assert m.close() == 0, m.log_text()
