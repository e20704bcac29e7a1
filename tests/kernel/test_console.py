"""jupyter console, a person's front end, on the real kernelspec (kernelspec
mode, the notebook profile) on a pty: `exit` quits the console as it does
with ipykernel (issue 24). The kernel's reply asks the front end to close
(an ask_exit payload: test_fidelity.py); the console then shuts the kernel
down."""
import os
import shutil

import pexpect
import pytest

from kennel_testlib import install_kernelspec, notebook_dir


@pytest.fixture
def console_env(tmp_path):
    cwd = notebook_dir("kennel-console-")
    env = dict(os.environ, JUPYTER_PATH=install_kernelspec(tmp_path), TERM="dumb",
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), IPYTHONDIR=str(tmp_path / "ipython"))
    yield cwd, env
    shutil.rmtree(cwd, ignore_errors=True)


@pytest.mark.parametrize("word", ["exit", "quit()"])
def test_exit_quits_jupyter_console(console_env, word):
    cwd, env = console_env
    child = pexpect.spawn("/usr/bin/jupyter-console", ["--kernel", "kennel", "--simple-prompt"], env=env,
                          cwd=str(cwd), encoding="utf-8", timeout=60)
    try:
        child.expect(r"In \[1\]: ")
        child.sendline("kept = 'here'")
        child.expect(r"In \[2\]: ")
        child.sendline(word)
        # the console's own words as it ends, then the end of its output
        child.expect("Shutting down kernel")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, (child.exitstatus, child.signalstatus)
