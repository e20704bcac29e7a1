"""libwire against the reference implementation, both ways, over real ZeroMQ
sockets: jupyter_client's Session (Debian 7.4.9) on one side, the C program
tests/wire/wire_peer (built with libwire) on the other."""
import datetime
import json
import os
import select
import stat
import subprocess

import pytest
import zmq
from jupyter_client import BlockingKernelClient
from jupyter_client.connect import write_connection_file
from jupyter_client.session import Session

from kennel_testlib import LSAN_SUPPRESSIONS, built


DELIM = b"<IDS|MSG>"
TIMEOUT_MS = 5000


class Peer:
    """A running wire_peer serving one connection file."""

    def __init__(self, tmp_path, key="a0436f6c-1916-498b-8eb9-e81ab9368e84", relay_key=None,
                 transport="tcp"):
        self.key = key
        ip = str(tmp_path / "kernel") if transport == "ipc" else "127.0.0.1"
        self.connection_file, self.info = write_connection_file(
            str(tmp_path / "kernel.json"), ip=ip, key=key.encode(), transport=transport)
        argv = [str(built("tests/wire/wire_peer")), "serve", self.connection_file]
        if relay_key is not None:
            argv.append(relay_key)
        # The peer exits normally, so LeakSanitizer can check libwire's
        # frees on the paths these tests take.
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:halt_on_error=1",
                   LSAN_OPTIONS=f"suppressions={LSAN_SUPPRESSIONS}")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        ready, _, _ = select.select([self.proc.stdout], [], [], 10)
        assert ready, "wire_peer did not start"
        line = self.proc.stdout.readline().decode()
        assert line.startswith("ready "), line + self.proc.stderr.read().decode()
        self.endpoint = line.split()[1]
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.linger = 0
        self.sock.rcvtimeo = TIMEOUT_MS
        self.sock.connect(self.endpoint)
        self.session = Session(key=key.encode())

    def send_frames(self, frames):
        self.sock.send_multipart(frames)

    def recv_frames(self):
        return self.sock.recv_multipart()

    def request(self, msg_type, content=None, buffers=None, session=None):
        """Sends with jupyter_client's Session, returns the raw reply frames."""
        (session or self.session).send(self.sock, msg_type, content or {}, buffers=buffers)
        return self.recv_frames()

    def wire_error(self, frames):
        """Sends raw frames; returns the error name C reported."""
        self.send_frames(frames)
        _, reply = self.session.feed_identities(self.recv_frames())
        msg = self.session.deserialize(reply)
        assert msg["msg_type"] == "wire_error", msg
        return msg["content"]["error"]

    def close(self):
        """Asks the peer to exit and checks it exited cleanly."""
        try:
            if self.proc.poll() is None:
                self.request("peer_exit_request")
            rc = self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.sock.close()
            self.ctx.term()
        err = self.proc.stderr.read().decode()
        assert rc == 0, err
        assert "Sanitizer" not in err, err


@pytest.fixture
def peer(tmp_path):
    p = Peer(tmp_path)
    yield p
    p.close()


def signed(session, parts, sig=None):
    """[DELIM, sig, *parts] with parts given as bytes, signed by session."""
    return [DELIM, session.sign(parts) if sig is None else sig, *parts]


def good_parts(session, content=b"{}"):
    header = json.dumps(session.msg_header("echo_request"), default=str).encode()
    return [header, b"{}", b"{}", content]


# ---- Python -> C -> Python --------------------------------------------------

def test_real_client_request_verified_in_c_and_reply_accepted(tmp_path):
    """An unmodified jupyter_client KernelClient talks to the C peer: C
    verifies and parses the request; the C-built, C-signed reply passes
    Session.recv (signature, replay and date checks) in the client."""
    peer = Peer(tmp_path)
    kc = BlockingKernelClient(connection_file=peer.connection_file)
    kc.load_connection_file()
    kc.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
    try:
        code = "print('caf\u00e9 \u2713')"
        msg_id = kc.execute(code)
        reply = kc.get_shell_msg(timeout=5)
    finally:
        kc.stop_channels()
        peer.close()
    assert reply["msg_type"] == "execute_reply"
    assert reply["parent_header"]["msg_id"] == msg_id
    echo = reply["content"]
    assert echo["content"]["code"] == code  # C parsed the UTF-8 JSON
    assert echo["header"]["msg_id"] == msg_id
    assert echo["header"]["session"] == kc.session.session
    assert echo["identities"] == 1  # the DEALER's routing id
    header = reply["header"]
    assert header["version"] == "5.3"
    assert header["username"] == "kennel"
    assert isinstance(header["date"], datetime.datetime)
    assert header["date"].utcoffset() == datetime.timedelta(0)


def test_reply_bytes_are_signed_as_jupyter_signs_them(peer):
    frames = peer.request("kernel_info_request", {"x": [1, 2.5, None, True]})
    idents, rest = peer.session.feed_identities(frames)
    assert idents == []  # a DEALER receives no routing frames
    assert len(rest) == 5
    sig, parts = rest[0], rest[1:5]
    # The same HMAC over the same bytes, lowercase hex.
    assert sig == peer.session.sign(parts)
    assert sig == sig.lower() and len(sig) == 64
    msg = peer.session.deserialize(rest)
    assert msg["msg_type"] == "kernel_info_reply"
    # Compact UTF-8 JSON (not ASCII-escaped), as jupyter_client's packer.
    for part in parts:
        assert part == json.dumps(json.loads(part), separators=(",", ":"),
                                  ensure_ascii=False).encode()
    assert "h\u00e9llo \u2713 \U0001f436".encode() in parts[3]
    assert msg["content"]["content"] == {"x": [1, 2.5, None, True]}
    # The date has six microsecond digits and Z.
    date = json.loads(parts[0])["date"]
    assert len(date) == 27 and date.endswith("Z") and date[19] == "."


def test_c_parses_python_dates(peer):
    frames = peer.request("echo_request")
    msg = peer.session.deserialize(peer.session.feed_identities(frames)[1])
    echo = msg["content"]
    sent = datetime.datetime.fromisoformat(echo["header"]["date"].replace("Z", "+00:00"))
    assert echo["date_ok"]
    assert echo["date_sec"] == int(sent.timestamp())
    assert echo["date_usec"] == sent.microsecond


def test_buffers_round_trip(peer):
    buffers = [b"\x00\xff\x00", b"", b"x" * 1000]
    frames = peer.request("echo_request", {"n": 3}, buffers=buffers)
    msg = peer.session.deserialize(peer.session.feed_identities(frames)[1])
    assert [bytes(b) for b in msg["buffers"]] == buffers
    assert msg["content"]["buffers"] == [b.hex().upper() for b in buffers]


def test_empty_key_means_no_signing(tmp_path):
    peer = Peer(tmp_path, key="")
    try:
        assert peer.session.auth is None
        frames = peer.request("echo_request", {"a": 1})
        rest = peer.session.feed_identities(frames)[1]
        assert rest[0] == b""
        assert peer.session.deserialize(rest)["content"]["content"] == {"a": 1}
        # Without a key nothing is checked, not even replays.
        parts = good_parts(peer.session)
        for _ in range(2):
            peer.send_frames([DELIM, b"whatever", *parts])
            assert peer.session.deserialize(
                peer.session.feed_identities(peer.recv_frames())[1])["msg_type"] == "echo_reply"
    finally:
        peer.close()


def test_ipc_transport(tmp_path):
    """ipc://{ip}-{port}: the C peer binds where jupyter_client connects."""
    peer = Peer(tmp_path, transport="ipc")
    kc = BlockingKernelClient(connection_file=peer.connection_file)
    kc.load_connection_file()
    assert peer.endpoint == kc._make_url("shell")
    kc.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
    try:
        msg_id = kc.kernel_info()
        reply = kc.get_shell_msg(timeout=5)
    finally:
        kc.stop_channels()
        peer.close()
    assert reply["parent_header"]["msg_id"] == msg_id


# ---- relay -------------------------------------------------------------------

def test_relay_resigns_the_same_bytes(tmp_path):
    key2 = "second-key-\u00e9"  # any bytes: the key is not hex or ASCII
    peer = Peer(tmp_path, relay_key=key2)
    try:
        sent = peer.session.serialize(peer.session.msg("relay_request", {"code": "1+1"}))
        sent_parts = sent[2:6]
        peer.send_frames(sent)
        rest = Session(key=key2.encode()).feed_identities(peer.recv_frames())[1]
        assert rest[1:5] == sent_parts  # not re-encoded
        assert rest[0] != sent[1]
        msg = Session(key=key2.encode()).deserialize(rest)
        assert msg["content"] == {"code": "1+1"}
        with pytest.raises(ValueError, match="Invalid Signature"):
            Session(key=peer.key.encode()).deserialize(rest)
        # A relay of a bad message is refused like any other.
        bad = list(sent)
        bad[5] = b'{"code":"2+2"}'
        assert peer.wire_error(bad) == "bad_signature"
    finally:
        peer.close()


# ---- rejections --------------------------------------------------------------

def test_tampered_message_rejected(peer):
    frames = peer.session.serialize(peer.session.msg("echo_request", {"v": 1}))
    frames[5] = b'{"v":2}'
    assert peer.wire_error(frames) == "bad_signature"
    # Tampering with the header is caught as well.
    frames = peer.session.serialize(peer.session.msg("echo_request", {"v": 1}))
    frames[2] = frames[2].replace(b"echo_request", b"evil_request")
    assert peer.wire_error(frames) == "bad_signature"


def test_replayed_message_rejected(peer):
    frames = peer.session.serialize(peer.session.msg("echo_request", {"v": 1}))
    peer.send_frames(frames)
    first = peer.session.deserialize(peer.session.feed_identities(peer.recv_frames())[1])
    assert first["msg_type"] == "echo_reply"
    assert peer.wire_error(frames) == "duplicate_signature"


def test_signature_forms_rejected(peer):
    parts = good_parts(peer.session)
    good = peer.session.sign(parts)
    assert peer.wire_error(signed(peer.session, parts, b"")) == "unsigned"
    assert peer.wire_error(signed(peer.session, parts, good[:-1])) == "bad_signature"
    assert peer.wire_error(signed(peer.session, parts, good + b"0")) == "bad_signature"
    assert peer.wire_error(signed(peer.session, parts, good.upper())) == "bad_signature"
    other = Session(key=b"another key")
    assert peer.wire_error(signed(other, parts)) == "bad_signature"


def test_bad_input_table(peer):
    """One case per error a remote peer can cause, each signed correctly so
    that only the named defect is wrong."""
    s = peer.session
    header = good_parts(s)[0]
    no_type = json.dumps({k: v for k, v in json.loads(header).items() if k != "msg_type"}).encode()
    cases = {
        "no_delimiter": [b"<IDS|MSX>", b"", header, b"{}", b"{}", b"{}"],
        "too_few_frames": [DELIM, b"", header, b"{}", b"{}"],
        "invalid_json": signed(s, [header, b"{}", b"{}", b'{"a":']),
        "not_utf8": signed(s, [header, b"{}", b"{}", b'{"a":"\xff"}']),
        "not_object": signed(s, [header, b"[]", b"{}", b"{}"]),
        "missing_header_field": signed(s, [no_type, b"{}", b"{}", b"{}"]),
        "oversize": signed(s, [header, b"{}", b"{}", b'{"a":"' + b"x" * (65 << 20) + b'"}']),
    }
    for name, frames in cases.items():
        assert peer.wire_error(frames) == name, name
    # The peer is still healthy after all of them.
    assert peer.session.deserialize(
        peer.session.feed_identities(peer.request("echo_request"))[1])["msg_type"] == "echo_reply"


# ---- connection files ----------------------------------------------------------

PORTS = dict(shell_port=57503, iopub_port=40885, stdin_port=52597, control_port=50160, hb_port=42540)


@pytest.mark.parametrize("transport,ip", [("tcp", "127.0.0.1"), ("ipc", "/tmp/kennel-test/kernel")])
def test_connection_file_written_by_c_is_jupyters(tmp_path, transport, ip):
    key = "a0436f6c-1916-498b-8eb9-e81ab9368e84"
    ours, theirs = tmp_path / "c.json", tmp_path / "py.json"
    subprocess.run([str(built("tests/wire/wire_peer")), "write-connection", str(ours), transport, ip, key,
                    "python3", *(str(PORTS[k]) for k in
                                 ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"))],
                   check=True)
    write_connection_file(str(theirs), ip=ip, key=key.encode(), transport=transport,
                          kernel_name="python3", **PORTS)
    assert ours.read_bytes() == theirs.read_bytes()
    assert stat.S_IMODE(os.stat(ours).st_mode) == 0o600
    kc = BlockingKernelClient()
    kc.load_connection_file(str(ours))
    assert kc.get_connection_info()["key"] == key.encode()
    assert kc.shell_port == PORTS["shell_port"] and kc.transport == transport


@pytest.mark.parametrize("transport", ["tcp", "ipc"])
def test_connection_file_written_by_jupyter_read_by_c(tmp_path, transport):
    ip = str(tmp_path / "k") if transport == "ipc" else "127.0.0.1"
    path, info = write_connection_file(str(tmp_path / "k.json"), ip=ip, key="k-\u00e9".encode(),
                                       transport=transport, kernel_name="python3")
    out = subprocess.run([str(built("tests/wire/wire_peer")), "read-connection", path],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    assert json.loads(out[0]) == {k: (v.decode() if isinstance(v, bytes) else v) for k, v in info.items()}
    kc = BlockingKernelClient()
    kc.load_connection_file(path)
    assert out[1:] == [kc._make_url(c) for c in ("shell", "iopub", "stdin", "control", "hb")]


def test_bad_connection_file_names_the_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"ip": "127.0.0.1", "key": "k", "shell_port": "57503"}))
    res = subprocess.run([str(built("tests/wire/wire_peer")), "read-connection", str(path)],
                         capture_output=True, text=True)
    assert res.returncode == 1
    assert res.stdout.startswith("bad_connection_file: ")
    assert "shell_port" in res.stdout and str(path) in res.stdout


# ---- dates ---------------------------------------------------------------------

DATES = [
    "2026-01-01T12:00:00.000042Z", "2026-01-01T12:00:00Z", "2026-01-01T12:00:00.5Z",
    "2026-01-01T12:00:00.42Z", "2026-01-01T12:00:00.123456+00:00", "2026-01-01T13:30:00+01:30",
    "2026-01-01T13:30:00+0130", "2026-01-01T10:00:00-0200", "2026-01-01T12:00:00Z\n",
    "2026-01-01T13:00:00+0060", "2026-01-01T12:00:00+24:00", "2026-01-01T12:00:00-99:99",
    "2026-07-01T12:00:00", "2026-01-01T12:00:00.25", "2024-02-29T00:00:00Z", "1969-12-31T23:59:59.999999Z",
    "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
    # refused by jupyter_client (no match, or dateutil raises)
    "", "2026-01-01", "2026-01-01 12:00:00Z", "2026-01-01T12:00Z", "2026-01-01T12:00:00.Z",
    "2026-01-01T12:00:00.1234567Z", "2026-01-01T12:00:00z", "2026-01-01T12:00:00+1",
    "2026-01-01T12:00:00ZZ", "2026-13-01T12:00:00Z", "2026-02-29T12:00:00Z", "2026-04-31T00:00:00Z",
    "2026-01-01T24:00:00Z", "2026-01-01T12:60:00Z", "2026-01-01T12:00:60Z",
    "0000-01-01T00:00:00Z", " 2026-01-01T12:00:00Z", "2026-01-01T12:00:00Z\n\n",
]


def test_dates_parse_as_jupyter_client_parses_them():
    """wire_date_parse accepts exactly what jupyter_client's parse_date turns
    into a datetime, at the same instant; naive dates are local time (a
    zone other than UTC here, so a UTC shortcut would show)."""
    import calendar
    import warnings

    from dateutil.tz import tzlocal
    from jupyter_client.jsonutil import parse_date

    env = dict(os.environ, TZ="EST5EDT")
    out = subprocess.run([str(built("tests/wire/wire_peer")), "parse-date", *DATES], env=env,
                         check=True, capture_output=True, text=True).stdout.splitlines()
    assert len(out) == len(DATES)
    old_tz = os.environ.get("TZ")
    os.environ["TZ"] = "EST5EDT"
    import time
    time.tzset()
    try:
        for text, got in zip(DATES, out):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    want = parse_date(text)
            except Exception:
                want = None
            if isinstance(want, datetime.datetime):
                if isinstance(want.tzinfo, tzlocal):
                    sec = int(want.timestamp() // 1)
                else:
                    # Offsets of 24 h or more parse, but datetime refuses
                    # to convert them: do the arithmetic by hand.
                    offset = want.tzinfo.utcoffset(None).total_seconds()
                    sec = calendar.timegm(want.replace(tzinfo=None).timetuple()) - int(offset)
                assert got == "ok %d %d" % (sec, want.microsecond), text
            else:
                assert got == "bad", text
    finally:
        if old_tz is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old_tz
        time.tzset()
