"""A closed conversation's workspace is removed completely, whatever shape the
kernel gave it (red-team finding F7): a tree deeper than any fixed limit, and,
with an unprivileged gateway (which owns the sandbox's files), directories of
mode 000. A conversation opened again with the same id is created with an
empty workspace. Real daemons (as root and as uid 65534), confined kernels,
jupyter_client."""
import pytest

import gwtest
from gwtest import execute, stdout_of

DEEP = """
import os
os.chdir("/workspace")
for i in range(300):
    os.mkdir("d"); os.chdir("d")
open("f", "w").write("secret of the first owner")
"""

LOCKED = """
import os
os.makedirs("/workspace/locked/inner/deeper")
open("/workspace/locked/inner/deeper/f", "w").write("secret of the first owner")
os.chmod("/workspace/locked/inner/deeper", 0)
os.chmod("/workspace/locked/inner", 0)
os.chmod("/workspace/locked", 0o500)
"""

LIST = "import os\nprint(sorted(os.listdir('/workspace')))"


def leaves_nothing(gw, conversation_id, code, check):
    """Runs code in a conversation, closes it, then reopens the same id."""
    reply, kc = gw.open_client(conversation_id)
    r, out = execute(kc, code + "\n" + check, timeout=60)
    assert r["content"]["status"] == "ok", r["content"]
    assert stdout_of(out).strip() == "True"
    conv_dir = gw.state / "conv" / conversation_id
    assert conv_dir.exists()
    kc.stop_channels()
    gw.clients.remove(kc)
    closed = gw.control.request("conversation_close_request", {"conversation_id": conversation_id})
    assert closed["content"]["status"] == "ok"
    assert not conv_dir.exists(), sorted(str(p) for p in conv_dir.rglob("*"))[:5]
    assert not gw.events("remove_failed"), gw.events("remove_failed")
    reply, kc = gw.open_client(conversation_id)
    assert reply["created"] is True
    r, out = execute(kc, LIST)
    assert stdout_of(out).strip() == "[]"


def test_a_tree_300_levels_deep_is_removed(gateway):
    leaves_nothing(gateway, "deep", DEEP, "print(os.path.exists('f'))")


@pytest.fixture
def unprivileged_gateway():
    yield from gwtest.unprivileged_gateway("kennel-unpriv-")


def test_mode_000_directories_are_removed_by_an_unprivileged_gateway(unprivileged_gateway):
    gw = unprivileged_gateway
    check = "print(os.stat('/workspace/locked/inner').st_mode & 0o777 == 0)"
    leaves_nothing(gw, "locked", LOCKED, check)


def test_deep_and_locked_together_unprivileged(unprivileged_gateway):
    gw = unprivileged_gateway
    leaves_nothing(gw, "both", DEEP + LOCKED, "print(os.path.exists('f'))")
