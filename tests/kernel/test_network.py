"""The sandbox's network refusals say why where Python raises them (issue
24): a confined kernel has only loopback, and a bare "[Errno 1] Operation
not permitted" or "Temporary failure in name resolution" invites retries.
The socket module's calls that urllib, requests, http.client and
socket.create_connection go through add the sandbox's reason and what can
be changed, and change nothing else: the same exception class, errno and
first argument, loopback under network "loopback" untouched, and the
refusal still the sandbox's (the C-level socket is refused too)."""
import errno

import pytest

from kernelclient import ConfinedKernel, built

# what the error's text must add, by the call that failed
NO_NETWORK = 'this sandbox has no network (policy "network": "none"'
LOOPBACK_ONLY = 'this sandbox reaches only its own loopback (policy "network": "loopback"'
NO_NAMES = "names resolve only from its /etc/hosts"
NOT_RETRY = "retrying will not help"
# TEST-NET-1 (RFC 5737) and the IPv6 documentation prefix: never routed
UNROUTED = ("192.0.2.1", "2001:db8::1")


def start(tmp_path_factory, network):
    kernel = ConfinedKernel(built("kernel-launcher/kennel-launch"), {}, str(tmp_path_factory.mktemp("net")),
                            policy={"network": network})
    kernel.network = network
    return kernel.start()


@pytest.fixture(scope="module")
def no_network(tmp_path_factory):
    kernel = start(tmp_path_factory, "none")
    yield kernel
    kernel.stop()


@pytest.fixture(scope="module")
def loopback(tmp_path_factory):
    kernel = start(tmp_path_factory, "loopback")
    yield kernel
    kernel.stop()


@pytest.fixture(params=["no_network", "loopback"])
def confined(request):
    """Each of the two policies' kernels in turn."""
    return request.getfixturevalue(request.param)


def error_of(kernel, code):
    reply, _ = kernel.execute(code, timeout=60)
    assert reply["status"] == "error", reply
    return reply["ename"], reply["evalue"]


def test_a_socket_refused_by_the_policy_says_so(no_network):
    ename, evalue = error_of(no_network, "import socket\nsocket.socket()")
    assert ename == "PermissionError" and evalue.startswith("[Errno 1] Operation not permitted; kennel: ")
    assert NO_NETWORK in evalue and NOT_RETRY in evalue and '{"network": "loopback"}' in evalue
    ename, evalue = error_of(no_network, f"socket.create_connection(('{UNROUTED[0]}', 80), timeout=5)")
    assert ename == "PermissionError" and NO_NETWORK in evalue


def test_an_unreachable_host_under_loopback_says_so(loopback):
    for address in UNROUTED:
        ename, evalue = error_of(loopback, f"import socket\nsocket.create_connection(('{address}', 80), timeout=5)")
        assert ename == "OSError" and evalue.startswith("[Errno 101] Network is unreachable; kennel: ")
        assert LOOPBACK_ONLY in evalue and NOT_RETRY in evalue


def test_a_name_that_cannot_resolve_says_so(confined):
    for code in ("import socket\nsocket.getaddrinfo('example.com', 80)",
                 "socket.gethostbyname('example.com')"):
        ename, evalue = error_of(confined, code)
        assert ename == "gaierror" and NO_NAMES in evalue and NOT_RETRY in evalue, evalue


def test_the_libraries_users_call_carry_the_reason(confined):
    """urllib's URLError, requests' ConnectionError (urllib3's
    NewConnectionError inside) and http.client quote the socket error's
    text: the reason reaches the user through them."""
    ename, evalue = error_of(confined, "import urllib.request\nurllib.request.urlopen('http://example.com', timeout=5)")
    assert ename == "URLError" and NO_NAMES in evalue
    ename, evalue = error_of(confined, "import requests\nrequests.get('http://example.com', timeout=5)")
    assert ename == "ConnectionError" and NO_NAMES in evalue
    reason = NO_NETWORK if confined.network == "none" else LOOPBACK_ONLY
    ename, evalue = error_of(confined, f"urllib.request.urlopen('http://{UNROUTED[0]}/', timeout=5)")
    assert ename == "URLError" and reason in evalue
    ename, evalue = error_of(confined, f"import http.client\nhttp.client.HTTPConnection('{UNROUTED[0]}', timeout=5)"
                                       ".request('GET', '/')")
    assert reason in evalue


def test_the_error_is_the_same_error(confined):
    """Code that tests the class, errno or args[0] sees what the call raised."""
    kind, number = ("PermissionError", errno.EPERM) if confined.network == "none" else ("OSError", errno.ENETUNREACH)
    code = (f"import socket\ntry:\n    socket.create_connection(('{UNROUTED[0]}', 80), timeout=5)\n"
            "except OSError as e:\n    caught = (type(e).__name__, e.errno, e.args[0])\ncaught")
    assert confined.value(code) == repr((kind, number, number))
    code = ("try:\n    socket.getaddrinfo('example.com', 80)\nexcept socket.gaierror as e:\n"
            "    caught = (type(e).__name__, e.errno in (socket.EAI_AGAIN, socket.EAI_NONAME), e.args[0] == e.errno)\n"
            "caught")
    assert confined.value(code) == "('gaierror', True, True)"


def test_the_sandbox_refuses_not_the_guard(no_network):
    """The C-level socket (which no Python code of kennel's wraps) is
    refused as before: the sandbox refuses, the guard only explains."""
    ename, evalue = error_of(no_network, "import _socket\n_socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)")
    assert ename == "PermissionError" and "kennel" not in evalue


def test_loopback_goes_through_untouched(loopback):
    """Under "loopback" a server and a client on 127.0.0.1 and localhost
    talk, and connect_ex still returns its errno."""
    code = ("import socket\nserver = socket.socket()\nserver.bind(('127.0.0.1', 0))\nserver.listen()\n"
            "client = socket.create_connection(('localhost', server.getsockname()[1]), timeout=5)\n"
            "peer, _ = server.accept()\nclient.sendall(b'ping')\n"
            "(peer.recv(4), socket.socket().connect_ex(('192.0.2.1', 80)))")
    assert loopback.value(code) == f"(b'ping', {errno.ENETUNREACH})"


# a lookup that fails at once, with no query sent anywhere (a name is no
# numeric address): tests reach no network off this machine
NO_QUERY = "socket.getaddrinfo('example.com', 80, flags=socket.AI_NUMERICHOST)"


def test_an_unconfined_kernel_keeps_the_plain_error(kernel, no_network):
    """The dev kernel (no sandbox) may have a network: its errors are the
    host's, without the sandbox's reason; the same call confined has it."""
    code = f"import socket\ntry:\n    {NO_QUERY}\nexcept OSError as e:\n    text = str(e)\n'kennel' in text"
    assert kernel.value(code) == "False"
    assert no_network.value(code) == "True"
