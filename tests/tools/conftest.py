"""One daemon for the whole folder (conversations are cheap; each test opens
its own), and a host-module Gateway on it."""
import itertools

import pytest

import toolhost

_ids = itertools.count()


@pytest.fixture(scope="session")
def daemon(tmp_path_factory):
    d = toolhost.Daemon(tmp_path_factory.mktemp("gateway"))
    yield d
    assert d.stop() == 0, d.log()


@pytest.fixture(scope="session")
def gateway(daemon):
    import kennel
    gw = kennel.Gateway.from_connection_file(str(daemon.conn_file))
    yield gw
    gw.shutdown()


@pytest.fixture
def open_conv(gateway):
    """open_conv(tools=..., handlers=..., policy=...) -> kennel.Conversation,
    closed after the test."""
    opened = []

    def make(tools=toolhost.TOOLS, handlers=None, **kw):
        conv = gateway.open(f"tools-{next(_ids)}", tools=tools,
                            handlers=toolhost.handlers() if handlers is None else handlers, **kw)
        conv.client.wait_for_ready(timeout=30)
        opened.append(conv)
        return conv

    yield make
    for conv in opened:
        conv.close()
