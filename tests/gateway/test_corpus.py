"""Real notebooks from public repositories (issue 16), each executed by
nbclient twice in the same test: with Debian's ipykernel ("python3") and
with kennel's kernelspec, each in a fresh copy of the notebook's directory
(its data files beside it) that belongs to a person (person_owns). Every
code cell that runs clean under ipykernel must run clean under kennel,
except the documented sandbox refusals below. The per-notebook counts go
to BUILDDIR/test-artifacts/corpus/NAME.json (tests/README.md has the table).

Where the notebooks are: tests/corpus/manifest.json names each one (repo,
commit, path, licence); the notebooks themselves (outputs cleared, with the
data files they open and their licences) live in the directory
KENNEL_NOTEBOOK_CORPUS names, else tests/corpus/. A notebook the manifest
names that is not there fails its test, naming the directory; with no
notebooks at all and no KENNEL_NOTEBOOK_CORPUS the module is skipped with
that reason."""
import concurrent.futures
import json
import os
import pathlib
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from kennel_testlib import BUILDDIR, SRCDIR, install_kernelspec, person_owns, traversable_dir

MANIFEST = json.loads((SRCDIR / "tests" / "corpus" / "manifest.json").read_text())
CORPUS = pathlib.Path(os.environ.get("KENNEL_NOTEBOOK_CORPUS", SRCDIR / "tests" / "corpus"))
# the notebooks are not in this repository (tests/README.md, "Notebook
# corpus"): without them and without KENNEL_NOTEBOOK_CORPUS the module says
# so as its skip reason; with either, a missing notebook fails
pytestmark = pytest.mark.skipif(
    "KENNEL_NOTEBOOK_CORPUS" not in os.environ and not any(CORPUS.rglob("*.ipynb")),
    reason=f"no notebook corpus: {CORPUS} holds only the manifest; set KENNEL_NOTEBOOK_CORPUS to the directory "
           "holding the notebooks it names (tests/README.md, 'Notebook corpus')")
CELL_TIMEOUT = 60

# (notebook, code cell index from 0): why kennel refuses what ipykernel runs.
# Each is the sandbox doing its job, never a parity gap.
REFUSALS = {
    ("ipython/Importing Notebooks.ipynb", 15): "copies a notebook into IPython's package directory under /usr, "
                                               "read-only in the sandbox",
    ("ipython/Beyond Plain Python.ipynb", 46): "%connect_info: the connection file and its key stay outside the "
                                               "kernel (no kernel internals reachable from Python)",
    ("ipython/Beyond Plain Python.ipynb", 47): "%qtconsole starts a Qt console on that connection file: neither "
                                               "a display nor the file is in the sandbox",
}


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


def chown_tree(top, like):
    st = os.stat(like)
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            os.chown(os.path.join(root, name), st.st_uid, st.st_gid)


def run(notebook, kernel):
    """Executes a fresh copy of the notebook's directory; returns
    (code cells, [indexes of cells with an error output], what stopped the
    run or None)."""
    source = CORPUS / notebook
    assert source.is_file(), f"{source} is missing: put the corpus (tests/corpus/manifest.json) in {CORPUS}"
    workdir = person_owns(traversable_dir("kennel-corpus-", 0o755))
    try:
        shutil.copytree(source.parent, workdir, dirs_exist_ok=True)
        chown_tree(workdir, workdir)
        nb = nbformat.read(workdir / source.name, as_version=4)
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


@pytest.mark.parametrize("notebook", [m["notebook"] for m in MANIFEST])
def test_notebook_runs_under_kennel_as_under_ipykernel(notebook, jupyter_path):
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
