"""`kennel mcp` as root runs its gateway in-process: that gateway's
workspace and run dir tmpfs are mounted in a mount namespace of the
process's own, so a SIGKILL (which leaves it no chance to unmount) leaves
no mount in the host's namespace. A real `kennel mcp`, a real confined
kernel running a python_exec when the kill comes."""
import os
import pathlib
import shutil

import pytest

from kennel_testlib import in_namespace_of, mount_namespace, mounts_below, processes_in, unmount_below, wait_until
from mcplib import Mcp


def test_a_killed_kennel_mcp_leaves_no_mount_in_the_hosts_namespace(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("an unprivileged kennel mcp's mounts are in its own user namespace anyway; "
                    "this test runs as uid %d" % os.geteuid())
    m = Mcp(tmp_path)
    m.initialize()
    opened = m.call("conversation_open")["structuredContent"]
    workspace = pathlib.Path(opened["workspace"])
    state = pathlib.Path(str(workspace).split("/conv/")[0])
    try:
        m.start("tools/call", {"name": "python_exec", "arguments": {
            "code": "open('/workspace/started', 'w').close()\nimport time\ntime.sleep(120)",
            "conversation": opened["conversation"]}})
        wait_until((in_namespace_of(m.proc.pid, workspace) / "started").exists, 30, "the execution to start")
        assert mounts_below(state) == []
        namespace = mount_namespace(m.proc.pid)
        assert namespace != mount_namespace("self")
        m.proc.kill()
        m.proc.wait(20)
        wait_until(lambda: not processes_in(namespace), 30,
                   lambda: f"the processes left in {namespace}: {processes_in(namespace)}")
        assert mounts_below(state) == []
    finally:
        if m.proc.poll() is None:
            m.proc.kill()
            m.proc.wait(20)
        # what a killed kennel mcp cannot remove (and, before its mount
        # namespace, left mounted in this one)
        unmount_below(state)
        shutil.rmtree(state, ignore_errors=True)
