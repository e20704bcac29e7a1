"""Fixtures for the gateway's tests; the helpers are in gwtest.py.

gateway, unprivileged_gateway and either_gateway start their daemons with
gateway_options (Gateway's keyword arguments), {} unless a test module
overrides that fixture, e.g. to give every one of them its config."""
import pytest

import gwtest
from gwtest import Gateway, remove_state


@pytest.fixture
def gateway_options():
    return {}


@pytest.fixture
def gateway(tmp_path, gateway_options):
    gw = Gateway(tmp_path, **gateway_options)
    yield gw
    if gw.proc.poll() is None:
        assert gw.stop() == 0
    else:
        remove_state(gw.state)


@pytest.fixture
def unprivileged_gateway(gateway_options):
    """The gateway as uid 65534 (gwtest.unprivileged_gateway: skipped with
    the probe's detail where that uid cannot make a user namespace)."""
    yield from gwtest.unprivileged_gateway("kennel-unpriv-", **gateway_options)


@pytest.fixture(params=["root", "unprivileged"])
def either_gateway(request):
    """The gateway as root, then as uid 65534."""
    return request.getfixturevalue("gateway" if request.param == "root" else "unprivileged_gateway")


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
