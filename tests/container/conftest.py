"""tests/container: kennel's container image, built and run with podman
(imagelib.py). Run by `./quickstart check-deploy`, which installs podman,
runc and mmdebstrap; as root (podman's rootful mode, as the image's least
privilege is stated for it)."""
import os
import pathlib
import shutil
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "httpclients"))


def pytest_sessionstart(session):
    missing = [p for p in ("podman", "mmdebstrap") if not shutil.which(p)]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} not installed: ./quickstart check-deploy installs them")
    if os.geteuid() != 0:
        raise RuntimeError("tests/container runs podman as root (the least privilege it states is rootful)")


@pytest.fixture(scope="session")
def podman():
    from imagelib import Podman
    p = Podman()
    p.build()
    return p
