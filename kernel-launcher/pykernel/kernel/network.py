"""The sandbox's network: socket's errors explained where Python raises
(socket patched when it loads), and whether the sandbox has any network."""

from .base import _POST_IMPORT, _lazy


# Confined, the kernel has only loopback (network "none": seccomp refuses
# sockets but AF_UNIX; "loopback": 127.0.0.1 and ::1 only), and the errors
# that gives (EPERM, ENETUNREACH, a name that does not resolve) read like a
# passing fault worth retrying. The socket module's calls users reach
# (socket(), connect, getaddrinfo, gethostbyname: urllib, http.client,
# requests/urllib3, asyncio, socket.create_connection all come through them)
# add to such an error's text why, and what can be changed. They only
# rewrite the text of the error the real call raised (same class, errno and
# args[0]), after it failed: nothing else is called, nothing is retried, and
# a loopback socket under "loopback" goes through untouched. Unconfined, or
# with an interface besides loopback, errors are left as they are.

_NETWORK_ROUTE = ("retrying will not help: no policy routes a sandbox to other hosts. Data comes "
                  "in through the workspace (the gateway's file calls) or a host tool, packages "
                  "from the image or the operator's package source")
_NETWORK_NOTES = {
    "socket": ("kennel: this sandbox has no network (policy \"network\": \"none\": AF_UNIX "
               "sockets only); the conversation's policy {\"network\": \"loopback\"} allows "
               "sockets to the sandbox's own 127.0.0.1 and ::1; " + _NETWORK_ROUTE),
    "connect": ("kennel: this sandbox reaches only its own loopback (policy \"network\": "
                "\"loopback\": 127.0.0.1 and ::1); " + _NETWORK_ROUTE),
    "name": ("kennel: this sandbox has no network, so names resolve only from its /etc/hosts "
             "(localhost); " + _NETWORK_ROUTE),
}
_sandbox_network_cut = None     # see _network_is_cut()


def _network_is_cut():
    """Whether this kernel is confined (a seccomp filter) in a network
    namespace with only loopback: then a refused or unreachable network is
    the sandbox's policy. Read once: neither changes while a kernel runs."""
    global _sandbox_network_cut
    if _sandbox_network_cut is None:
        try:
            with open("/proc/self/status") as f:
                confined = any(line.split() == ["Seccomp:", "2"] for line in f)
        except OSError:
            confined = False
        _sandbox_network_cut = confined and not _network_reachable()
    return _sandbox_network_cut


def _explain_network_error(exc, kind):
    """Adds _NETWORK_NOTES[kind] to the text of an error the sandbox caused
    (once); exc's class, errno and args[0] stay what the call raised, so
    code that tests them sees no difference."""
    if not isinstance(exc.strerror, str) or "kennel: this sandbox" in exc.strerror \
            or not _network_is_cut():
        return
    text = "%s; %s" % (exc.strerror, _NETWORK_NOTES[kind])
    exc.strerror = text
    if len(exc.args) >= 2:
        exc.args = (exc.args[0], text) + tuple(exc.args[2:])


def _patch_socket(module):
    errno = _lazy("errno")
    refused = (errno.EPERM, errno.EACCES)
    unreachable = (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EACCES, errno.EPERM)
    unresolved = tuple(getattr(module, name) for name in
                       ("EAI_AGAIN", "EAI_FAIL", "EAI_NONAME", "EAI_NODATA", "EAI_SYSTEM")
                       if hasattr(module, name))
    inet = (-1, module.AF_INET, module.AF_INET6)
    cls = module.socket
    real_init, real_connect = cls.__init__, cls.connect

    def __init__(self, *args, **kwargs):
        try:
            real_init(self, *args, **kwargs)
        except OSError as exc:
            family = args[0] if args else kwargs.get("family", -1)
            if exc.errno in refused and family in inet:
                _explain_network_error(exc, "socket")
            raise

    def connect(self, address):
        try:
            return real_connect(self, address)
        except OSError as exc:
            if exc.errno in unreachable and self.family in inet:
                _explain_network_error(exc, "connect")
            raise

    def resolving(real):
        def call(*args, **kwargs):
            try:
                return real(*args, **kwargs)
            except module.gaierror as exc:
                if exc.errno in unresolved:
                    _explain_network_error(exc, "name")
                raise

        call.__name__, call.__qualname__, call.__doc__ = real.__name__, real.__qualname__, real.__doc__
        call.__wrapped__ = real
        return call

    __init__.__doc__, connect.__doc__ = real_init.__doc__, real_connect.__doc__
    cls.__init__, cls.connect = __init__, connect
    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
        setattr(module, name, resolving(getattr(module, name)))


def _network_reachable():
    """Whether the sandbox's network namespace has any interface besides
    loopback (/proc/net/dev: netlink may be refused by the sandbox)."""
    try:
        with open("/proc/net/dev") as f:
            lines = f.read().splitlines()[2:]
    except OSError:
        return False
    return any(line.split(":")[0].strip() not in ("lo", "") for line in lines)


_POST_IMPORT["socket"] = _patch_socket
