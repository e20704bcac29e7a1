"""Fixtures: the server under test as a parameter, so one client runs
against Debian's jupyter-notebook 6.4.12 + ipykernel (the reference that
proves the client right) and against kennel's HTTP front when this build
has one (`kennel serve --help` names --http)."""
import pytest
import websocket

from browserlib import start_browser
from kennel_testlib import built
import refserver

# A server that stops answering fails the test instead of hanging it: the
# frameworks' own clients block forever (no pytest-timeout in Debian 12).
websocket.setdefaulttimeout(60)


def targets():
    kinds = ["notebook"]
    if refserver.kennel_has_http(built("gateway/kennel")):
        kinds.append("kennel")
    return kinds


def start(kind, root, token=None):
    if kind == "notebook":
        return refserver.start_notebook(root, token=token, name=f"notebook{'-anon' if token == '' else ''}")
    return refserver.start_kennel(root, token=token, name=f"kennel{'-anon' if token == '' else ''}")


@pytest.fixture(scope="session", params=targets())
def target(request, tmp_path_factory):
    """A server with a random token."""
    server = start(request.param, tmp_path_factory.mktemp(request.param))
    yield server
    server.stop()


@pytest.fixture(scope="session", params=targets())
def anonymous_target(request, tmp_path_factory):
    """A server without a token: ipybox and OpenHands send none."""
    server = start(request.param, tmp_path_factory.mktemp(request.param + "-anon"), token="")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = start_browser(tmp_path_factory.mktemp("chromium"))
    yield b
    b.quit()
