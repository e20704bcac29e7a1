"""The notebooks Debian ships in its documentation packages (issue 16),
each executed by nbclient twice in the same test: with Debian's ipykernel
("python3") and with kennel's kernelspec, each in a fresh copy of the
notebook's directory (its data files and sibling notebooks beside it) that
belongs to a person (person_owns). Every code cell that runs clean under
ipykernel must run clean under kennel, except the documented sandbox
refusals below. The per-notebook counts go to
BUILDDIR/test-artifacts/corpus/NAME.json (tests/README.md has the table).

Where the notebooks are: ./quickstart installs the packages of PACKAGES
(TEST_PACKAGES); each notebook under the directory named there, gzipped
(.ipynb.gz, as Debian compresses larger doc files) or not, is one test. A
package that is not installed fails its test, naming ./quickstart."""
import concurrent.futures
import gzip
import json
import os
import pathlib
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from kennel_testlib import BUILDDIR, install_kernelspec, person_owns, traversable_dir

DOC = pathlib.Path("/usr/share/doc")
# package: the directory under DOC/package whose notebooks are run (the
# HTML trees also hold each notebook's Sphinx source as .ipynb.txt: not run)
PACKAGES = {
    "python-sympy-doc": "examples",
    "python-notebook-doc": "html/examples/Notebook",
    "python-nbconvert-doc": "html",
    "python-pandas-doc": "html/user_guide",
}
# sympy's fresnel_integrals has cells of ~10 s on a quiet machine: at load 8-10
# on 2 cores both kernels passed 60 s (at different cells), a verdict of the
# load; a cell that really hangs still ends the run, three minutes later
CELL_TIMEOUT = 180

# notebooks not run, with why
EXCLUDED = {
    "python-nbconvert-doc/html/nbconvert_library.ipynb": "its first cell downloads a notebook from a public site "
        "(jakevdp.github.io): tests reach no address off this machine, and the 12 other cells need it",
    "python-sympy-doc/examples/intermediate/limit_examples_advanced.ipynb": "one cell runs past 60 s "
        "under both kernels: a minute of the corpus's time, and a verdict that depends on the machine's load",
}

# (notebook, code cell index from 0): why kennel refuses what ipykernel runs.
# Each is the sandbox doing its job, never a parity gap.
IMPORTING = "python-notebook-doc/html/examples/Notebook/Importing Notebooks.ipynb"
REFUSALS = {
    (IMPORTING, 16): "copies a notebook into IPython's package directory under /usr, read-only in the sandbox",
    (IMPORTING, 17): "imports the notebook that cell 16 could not copy (it passed only when an ipykernel run "
                     "had left the copy on the host)",
}


def notebook_name(path):
    return path.name[:-len(".gz")] if path.name.endswith(".gz") else path.name


def collect():
    """One parameter per notebook, "package/path"; a package not installed
    is one parameter that fails."""
    found = []
    for package, sub in PACKAGES.items():
        top = DOC / package / sub
        if not top.is_dir():
            found.append(pytest.param(package, id=package))
            continue
        for path in sorted([*top.rglob("*.ipynb"), *top.rglob("*.ipynb.gz")]):
            name = f"{package}/{path.relative_to(DOC / package).parent / notebook_name(path)}"
            if name not in EXCLUDED:
                found.append(pytest.param(name, id=name))
    return found


@pytest.fixture(scope="module")
def jupyter_path(tmp_path_factory):
    path = install_kernelspec(tmp_path_factory.mktemp("kennel-spec"))
    old = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = path
    yield path
    if old is None:
        os.environ.pop("JUPYTER_PATH")
    else:
        os.environ["JUPYTER_PATH"] = old


# Importing Notebooks copies a notebook into IPython's package directory:
# under ipykernel, run as root, that write reaches the host's /usr.
IPYTHON_PACKAGE = pathlib.Path(__import__("IPython").__file__).parent


@pytest.fixture
def host_unchanged():
    """Removes the notebooks a run under ipykernel wrote into IPython's
    package directory, so that the check leaves the host's /usr as it was."""
    before = set(IPYTHON_PACKAGE.rglob("*.ipynb"))
    yield
    for left in set(IPYTHON_PACKAGE.rglob("*.ipynb")) - before:
        left.unlink()


def chown_tree(top, like):
    st = os.stat(like)
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            os.chown(os.path.join(root, name), st.st_uid, st.st_gid)


def gunzip_notebooks(top):
    """Debian's gzipped notebooks unpacked in place, so that a notebook
    importing its siblings (Importing Notebooks) finds them too."""
    for path in top.rglob("*.ipynb.gz"):
        with gzip.open(path) as packed:
            path.with_name(notebook_name(path)).write_bytes(packed.read())
        path.unlink()


def source_of(notebook):
    """The installed notebook's path (gzipped or not), or a failure naming
    ./quickstart."""
    package = notebook.split("/")[0]
    top = DOC / package / PACKAGES[package]
    assert top.is_dir(), (f"{top} is missing: ./quickstart installs {' '.join(PACKAGES)} (TEST_PACKAGES); "
                          "installed, a dpkg path-exclude of /usr/share/doc (/etc/dpkg/dpkg.cfg.d/) drops it")
    source = DOC / notebook
    return source if source.is_file() else source.with_name(source.name + ".gz")


def run(notebook, kernel):
    """Executes a fresh copy of the notebook's directory; returns
    (code cells, [indexes of cells with an error output], what stopped the
    run or None)."""
    source = source_of(notebook)
    workdir = person_owns(traversable_dir("kennel-corpus-", 0o755))
    try:
        shutil.copytree(source.parent, workdir, dirs_exist_ok=True)
        gunzip_notebooks(workdir)
        chown_tree(workdir, workdir)
        nb = nbformat.read(workdir / notebook_name(source), as_version=4)
        client = NotebookClient(nb, kernel_name=kernel, timeout=CELL_TIMEOUT, startup_timeout=60, allow_errors=True,
                                resources={"metadata": {"path": str(workdir)}})
        stopped = None
        try:
            client.execute()
        except Exception as e:  # a timeout or a dead kernel ends the run: it is counted, not raised
            stopped = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        code = [c for c in nb.cells if c.cell_type == "code"]
        errors = [i for i, c in enumerate(code) if any(o.output_type == "error" for o in c.get("outputs", []))]
        return len(code), errors, stopped
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.parametrize("notebook", collect())
def test_notebook_runs_under_kennel_as_under_ipykernel(notebook, jupyter_path, host_unchanged):
    source_of(notebook)
    # both at once: the test's time is the slower run's
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        ipy, ken = pool.submit(run, notebook, "python3"), pool.submit(run, notebook, "kennel")
        (cells, ipy_errors, ipy_stopped), (_, kennel_errors, kennel_stopped) = ipy.result(), ken.result()
    result = {"notebook": notebook, "cells": cells, "ipykernel_errors": ipy_errors, "ipykernel_stopped": ipy_stopped,
              "kennel_errors": kennel_errors, "kennel_stopped": kennel_stopped}
    artifacts = BUILDDIR / "test-artifacts" / "corpus"
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / (notebook.replace("/", "__") + ".json")).write_text(json.dumps(result, indent=1))
    assert kennel_stopped == ipy_stopped, result
    new = [i for i in kennel_errors if i not in ipy_errors and (notebook, i) not in REFUSALS]
    assert not new, result
