"""file_put, file_get and file_list of `kennel mcp`: the gateway's file
requests (docs/PROTOCOL.md section 3, "Files") as MCP tools, against the
workspace the kernel sees as /workspace. Over stdio here; over /mcp in
tests/mcp/test_http.py."""
import base64

import pytest

from mcplib import Mcp


@pytest.fixture
def mcp(tmp_path):
    m = Mcp(tmp_path)
    m.initialize()
    yield m
    assert m.close() == 0, m.log_text()


def test_a_text_put_is_read_by_code_and_code_s_file_comes_back(mcp):
    mcp.call("python_exec", {"code": "import os; os.mkdir('/workspace/data')"})
    r = mcp.call("file_put", {"path": "data/in.txt", "content": "héllo\n"})
    assert r["isError"] is False, r
    assert r["structuredContent"]["size"] == len("héllo\n".encode())
    r = mcp.call("python_exec", {"code": "open('/workspace/out.txt', 'w').write(open('/workspace/data/in.txt').read().upper())"})
    assert r["isError"] is False, r
    r = mcp.call("file_get", {"path": "out.txt"})
    assert r["isError"] is False and r["content"] == [{"type": "text", "text": "HÉLLO\n"}], r
    assert r["structuredContent"]["eof"] is True
    listing = mcp.call("file_list", {})["structuredContent"]["entries"]
    assert {(e["name"], e["type"]) for e in listing} >= {("data", "directory"), ("out.txt", "file")}


def test_bytes_round_trip_as_base64_and_a_png_comes_back_as_an_image(mcp):
    data = bytes(range(256)) * 4
    r = mcp.call("file_put", {"path": "b.bin", "content_base64": base64.b64encode(data).decode()})
    assert r["isError"] is False, r
    r = mcp.call("python_exec", {"code": "d = open('/workspace/b.bin', 'rb').read(); (len(d), d[:3])"})
    assert mcp.text(r) == "(1024, b'\\x00\\x01\\x02')"
    r = mcp.call("file_get", {"path": "b.bin"})
    res = r["content"][0]
    assert res["type"] == "resource" and res["resource"]["mimeType"] == "application/octet-stream"
    assert base64.b64decode(res["resource"]["blob"]) == data
    mcp.call("python_exec", {"code": "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
                                     "plt.plot([1, 3, 2]); plt.savefig('/workspace/p.png')"})
    r = mcp.call("file_get", {"path": "p.png"})
    assert r["content"][0]["type"] == "image" and r["content"][0]["mimeType"] == "image/png"
    assert base64.b64decode(r["content"][0]["data"])[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_file_is_read_in_parts(mcp):
    mcp.call("file_put", {"path": "n.txt", "content": "0123456789"})
    r = mcp.call("file_get", {"path": "n.txt", "offset": 2, "length": 3})
    assert r["content"][0] == {"type": "text", "text": "234"}
    assert r["structuredContent"]["eof"] is False and "more follows" in mcp.text(r)
    r = mcp.call("file_put", {"path": "n.txt", "content": "ab", "offset": 10})
    assert r["structuredContent"]["size"] == 12
    assert mcp.call("file_get", {"path": "n.txt"})["content"][0]["text"] == "0123456789ab"


@pytest.mark.parametrize("args, ename", [
    ({"path": "../etc/passwd"}, "InvalidPath"),
    ({"path": "/etc/passwd"}, "InvalidPath"),
    ({"path": "missing.txt"}, "NoSuchFile"),
    ({"path": "link"}, "SymlinkRefused"),
])
def test_file_get_refusals_are_iserror_naming_the_gateway_s_ename(mcp, args, ename):
    mcp.call("python_exec", {"code": "import os\nos.symlink('/etc/passwd', '/workspace/link')"})
    r = mcp.call("file_get", args)
    assert r["isError"] is True and mcp.text(r).startswith(ename + ":"), r


def test_file_put_needs_exactly_one_content(mcp):
    for args in ({"path": "x"}, {"path": "x", "content": "a", "content_base64": "YQ=="},
                 {"path": "x", "content_base64": "not base64!"}):
        r = mcp.call("file_put", args)
        assert r["isError"] is True and "content" in mcp.text(r), r


def test_file_tools_take_a_conversation_handle(mcp):
    handle = mcp.call("conversation_open")["structuredContent"]["conversation"]
    mcp.call("file_put", {"path": "only-here.txt", "content": "x", "conversation": handle})
    r = mcp.call("python_exec", {"code": "import os; os.path.exists('/workspace/only-here.txt')",
                                 "conversation": handle})
    assert mcp.text(r) == "True"
    r = mcp.call("python_exec", {"code": "import os; os.path.exists('/workspace/only-here.txt')"})
    assert mcp.text(r) == "False"  # the default conversation's workspace is another
    r = mcp.call("file_list", {"conversation": "no-such-handle"})
    assert r["isError"] is True
