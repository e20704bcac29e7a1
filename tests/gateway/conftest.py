"""Fixtures for the gateway's tests; the helpers are in gwtest.py."""
import pytest

from gwtest import Gateway, remove_state


@pytest.fixture
def gateway(tmp_path):
    gw = Gateway(tmp_path)
    yield gw
    if gw.proc.poll() is None:
        assert gw.stop() == 0
    else:
        remove_state(gw.state)


@pytest.fixture
def make_gateway(tmp_path):
    made = []

    def make(name="gw", **kw):
        d = tmp_path / name
        d.mkdir()
        gw = Gateway(d, **kw)
        made.append(gw)
        return gw

    yield make
    for gw in made:
        if gw.proc.poll() is None:
            gw.stop()
        else:
            remove_state(gw.state)
