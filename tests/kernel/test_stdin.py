"""input() and getpass() through the Jupyter stdin channel."""
import time

from kernelclient import TIMEOUT


def answer_stdin(kernel, code, answers):
    """Runs code with allow_stdin, answers each input_request in turn; returns
    (reply content, the input_request contents)."""
    msg_id = kernel.kc.execute(code, allow_stdin=True)
    requests = []
    for value in answers:
        request = kernel.kc.get_stdin_msg(timeout=TIMEOUT)
        assert request["msg_type"] == "input_request"
        assert request["parent_header"]["msg_id"] == msg_id
        requests.append(request["content"])
        kernel.kc.input(value)
    reply = kernel.shell_reply(msg_id)
    kernel.iopub_until_idle(msg_id)
    return reply["content"], requests


def test_input_round_trip(kernel):
    reply, requests = answer_stdin(kernel, "name = input('Your name? ')\nagain = input()",
                                   ["Ada", "Lovelace"])
    assert reply["status"] == "ok"
    assert requests == [{"prompt": "Your name? ", "password": False},
                        {"prompt": "", "password": False}]
    assert kernel.value("(name, again)") == "('Ada', 'Lovelace')"


def test_getpass_asks_for_a_password(kernel):
    reply, requests = answer_stdin(kernel, "import getpass\nsecret = getpass.getpass('Key: ')",
                                   ["s3cret"])
    assert reply["status"] == "ok"
    assert requests == [{"prompt": "Key: ", "password": True}]
    assert kernel.value("secret") == "'s3cret'"


def test_sys_stdin_readline_asks_too(kernel):
    reply, requests = answer_stdin(kernel, "import sys\nline = sys.stdin.readline()", ["typed"])
    assert reply["status"] == "ok"
    assert kernel.value("line") == "'typed\\n'"


def test_input_without_allow_stdin_is_a_clear_error(kernel):
    reply, outputs = kernel.execute("input('never answered')", allow_stdin=False)
    assert reply["status"] == "error"
    assert reply["ename"] == "StdinNotImplementedError"
    assert "allow_stdin" in reply["evalue"]
    assert [m["msg_type"] for m in outputs] == ["error"]


def test_output_before_input_arrives_first(kernel):
    msg_id = kernel.kc.execute("print('prompting'); got = input('> ')", allow_stdin=True)
    kernel.kc.get_stdin_msg(timeout=TIMEOUT)
    # the stream was flushed before the request was sent: it is already there
    seen = []
    deadline = time.monotonic() + 5
    while not any(m["msg_type"] == "stream" for m in seen) and time.monotonic() < deadline:
        seen.append(kernel.kc.get_iopub_msg(timeout=5))
    assert any(m["msg_type"] == "stream" and m["content"]["text"] == "prompting\n" for m in seen)
    kernel.kc.input("ok")
    assert kernel.shell_reply(msg_id)["content"]["status"] == "ok"
    kernel.iopub_until_idle(msg_id)


def test_ctrl_d_is_eof(kernel):
    reply, _ = answer_stdin(kernel, "try:\n    input()\nexcept EOFError:\n    got_eof = True", ["\x04"])
    assert reply["status"] == "ok"
    assert kernel.value("got_eof") == "True"


def test_input_reply_without_a_date_is_accepted(kernel):
    """The header's `date` is optional in practice: some clients leave it out
    of input_reply (issue 16); the reply must reach input(), not be dropped."""
    msg_id = kernel.kc.execute("dateless = input('? ')", allow_stdin=True)
    request = kernel.kc.get_stdin_msg(timeout=TIMEOUT)
    assert request["content"]["prompt"] == "? "
    reply = kernel.kc.session.msg("input_reply", {"value": "no date"}, parent=request)
    del reply["header"]["date"]
    kernel.kc.session.send(kernel.kc.stdin_channel.socket, reply)
    assert kernel.shell_reply(msg_id, timeout=10)["content"]["status"] == "ok"
    kernel.iopub_until_idle(msg_id)
    assert kernel.value("dateless") == "'no date'"
