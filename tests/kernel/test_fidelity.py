"""kennel's notebook profile side by side with Debian's ipykernel (issue 24):
the same cells in both, and what a front end or nbclient acts on (the
reply's status, error and payloads, each output's kind: kernelclient.shape)
must agree: here exit and quit."""
import shutil

import pytest

from kernelclient import ConfinedKernel, built, shape, start_ipykernel, stop_kernel
from kennel_testlib import notebook_dir


@pytest.fixture(scope="module")
def kennel(tmp_path_factory):
    """What a person's front end gets (the notebook profile), confined."""
    kernel = ConfinedKernel(built("kernel-launcher/kennel-launch"), {"builtins": "notebook"},
                            str(tmp_path_factory.mktemp("kennel")))
    yield kernel.start()
    kernel.stop()


def test_exit_asks_the_front_end_to_close(kennel, tmp_path):
    """exit, exit() and quit(keep_kernel=True) answer with an ask_exit
    payload (jupyter console then quits). ipykernel also stops its own loop
    0.1 s after an exit without keep_kernel, so each cell gets an ipykernel
    of its own; kennel's kernel goes on until its front end stops it."""
    cwd = notebook_dir("kennel-fidelity-exit-")
    try:
        for index, code in enumerate(("exit", "exit()", "quit(keep_kernel=True)", "x = quit\nx()")):
            reference = start_ipykernel(cwd, tmp_path / str(index))
            try:
                assert shape(*kennel.execute(code)) == shape(*reference.execute(code)), code
            finally:
                stop_kernel(reference)
        assert kennel.value("'still here'") == "'still here'"
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
