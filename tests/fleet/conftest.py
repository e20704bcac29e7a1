"""tests/fleet: kennel gateways behind HAProxy on loopback (fleetlib.py).
The host must have haproxy (./quickstart check-deploy installs Debian's);
a missing one fails the suite, it never skips it."""
import shutil
import sys
import pathlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "httpclients"))


def pytest_sessionstart(session):
    if not shutil.which("haproxy"):
        raise RuntimeError("haproxy is not installed: ./quickstart check-deploy installs Debian's haproxy")
