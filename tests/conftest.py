"""Shared fixtures: where the built programs are (kennel_testlib.py, beside
this file, holds the shared helpers). Each test folder keeps its own
conftest.py for what only it needs."""
import pytest

from kennel_testlib import BUILDDIR, SRCDIR


@pytest.fixture(scope="session")
def builddir():
    return BUILDDIR


@pytest.fixture(scope="session")
def srcdir():
    return SRCDIR
