"""Fixtures for the HTTP front's tests: a real `kennel serve --http
127.0.0.1:0` (kennel_testlib.HttpGateway), ready to start kernels.

http_gateway unpacks as (base_url, token); other folders (the real-client
tests) use kennel_testlib.HttpGateway the same way."""
import pytest

from httptest import Conv
from kennel_testlib import HttpGateway, remove_state


@pytest.fixture
def http_gateway(tmp_path):
    gw = HttpGateway(tmp_path)
    gw.wait_ready()
    yield gw
    if gw.proc.poll() is None:
        assert gw.stop() == 0, gw.log_file.read_text()[-3000:]
    else:
        remove_state(gw.state)


@pytest.fixture
def make_http_gateway(tmp_path):
    made = []

    def make(name="gw", wait=True, **kw):
        d = tmp_path / name
        d.mkdir()
        gw = HttpGateway(d, **kw)
        made.append(gw)
        if wait:
            gw.wait_ready()
        return gw

    yield make
    for gw in made:
        if gw.proc.poll() is None:
            gw.stop()
        else:
            remove_state(gw.state)


@pytest.fixture
def conversations():
    """make(gw, id, **content): a conversation on gw (httptest.Conv), closed
    at the end."""
    opened = []

    def make(gw, conversation_id, **content):
        c = Conv(gw, conversation_id, **content)
        opened.append(c)
        return c

    yield make
    for c in opened:
        c.close()


@pytest.fixture
def conv(http_gateway, conversations):
    """make(id, **content): a conversation on http_gateway."""
    return lambda conversation_id, **content: conversations(http_gateway, conversation_id, **content)
