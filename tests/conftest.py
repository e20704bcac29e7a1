"""Shared fixtures: where the built programs are. Each test folder keeps its
own conftest.py for what only it needs."""
import os
import pathlib

import pytest

SRCDIR = pathlib.Path(os.environ.get("KENNEL_SRCDIR", pathlib.Path(__file__).resolve().parent.parent))
BUILDDIR = pathlib.Path(os.environ.get("KENNEL_BUILDDIR", SRCDIR / "build" / "check"))


def built(relpath):
    """Path of a program built by make, or skip-free failure if it is missing:
    a missing binary is a build bug, never a reason to pass."""
    path = BUILDDIR / relpath
    if not path.exists():
        raise FileNotFoundError(f"{path} not built: run make in {BUILDDIR}")
    return path


@pytest.fixture(scope="session")
def builddir():
    return BUILDDIR


@pytest.fixture(scope="session")
def srcdir():
    return SRCDIR
