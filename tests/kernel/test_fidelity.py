"""kennel's notebook profile side by side with Debian's ipykernel (issue 24):
the same cells in both, and what a front end or nbclient acts on (the
reply's status, error and payloads, each output's kind: kernelclient.shape)
must agree. Found by running real notebooks under both kernels
(tests/gateway/test_corpus.py): UsageError on stderr, the shell's
parent_header, the in-memory history, %connect_info, exit, and when
matplotlib figures are shown."""
import json
import shutil

import pytest

from kernelclient import ConfinedKernel, built, shape, start_ipykernel, stop_kernel, stream_text
from kennel_testlib import notebook_dir


@pytest.fixture(scope="module")
def ipykernel(tmp_path_factory):
    cwd = notebook_dir("kennel-fidelity-")
    kernel = start_ipykernel(cwd, tmp_path_factory.mktemp("ipython"))
    yield kernel
    stop_kernel(kernel)
    shutil.rmtree(cwd, ignore_errors=True)


@pytest.fixture(scope="module")
def kennel(tmp_path_factory):
    """What a person's front end gets (the notebook profile), confined."""
    kernel = ConfinedKernel(built("kernel-launcher/kennel-launch"), {"builtins": "notebook"},
                            str(tmp_path_factory.mktemp("kennel")))
    yield kernel.start()
    kernel.stop()


def both(ipykernel, kennel, code, **kwargs):
    """(ipykernel's shape, kennel's shape) of one cell."""
    return tuple(shape(*kernel.execute(code, **kwargs)) for kernel in (ipykernel, kennel))


def same(ipykernel, kennel, *cells):
    for code in cells:
        reference, ours = both(ipykernel, kennel, code)
        assert ours == reference, code


def test_a_usage_error_is_one_line_on_stderr_and_no_error_output(ipykernel, kennel):
    """An unknown magic, a magic's bad option: IPython shows "UsageError:
    ..." on stderr and no traceback; the reply is an error. An `error`
    output instead is what nbclient and front ends treat as a failed cell
    with a traceback (kennel sent one before)."""
    for code in ("%no_such_magic_anywhere", "%timeit -z 1", "%%no_such_cell_magic\nx = 1"):
        reference, ours = both(ipykernel, kennel, code)
        assert reference["outputs"][0][:2] == ("stream", "stderr"), reference
        assert reference["error"]["ename"] == "UsageError" and reference["error"]["traceback"] == []
        assert ours == reference, code


def test_the_shells_parent_header_is_the_request(ipykernel, kennel):
    """get_ipython().parent_header: the whole parent message (code routing
    output or updating displays by id reads its header)."""
    code = "p = get_ipython().parent_header\nprint(sorted(p), p['msg_type'], p['header']['msg_id'])"
    for kernel in (ipykernel, kennel):
        msg_id = kernel.kc.execute(code)
        assert kernel.shell_reply(msg_id)["content"]["status"] == "ok"
        printed = stream_text(kernel.iopub_until_idle(msg_id)).split()
        assert printed[-2:] == ["execute_request", msg_id], printed
    reference, ours = both(ipykernel, kennel, "print(sorted(get_ipython().parent_header))")
    assert ours == reference
    same(ipykernel, kennel, "print(get_ipython().get_parent()['header']['msg_type'])")


def test_the_in_memory_history(ipykernel, kennel):
    """In, Out, %history with outputs, the history database's tail and
    search within the session, %rerun's result and %recall's next input."""
    for kernel in (ipykernel, kennel):  # both at the same execution count
        kernel.execute("%reset -f")
    count = [json.loads(k.value("get_ipython().execution_count")) for k in (ipykernel, kennel)]
    start = max(count)
    for kernel, now in zip((ipykernel, kennel), count):
        for _ in range(start - now):
            kernel.execute("pass")
    n = start + 1
    same(ipykernel, kennel,
         "hist_a = 1",
         "hist_a + 1",
         f"%history -o -n {n}-{n + 2}",
         "h = get_ipython().history_manager",
         "print([entry[1:] for entry in h.get_tail(3, include_latest=True)])",
         "print([entry[1:] for entry in h.search('hist_a*')])",
         f"print([entry[1:] for entry in h.get_range(0, {n}, {n + 2}, output=True)])",
         f"print(Out[{n + 1}], In[{n}], _i{n + 1}, _oh[{n + 1}])",
         f"%rerun {n + 1}",
         f"%recall {n}")


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


def test_connect_info_prints_and_shows_no_key(ipykernel, kennel):
    """%connect_info runs (it was an unknown magic): kennel says how to reach
    this kernel through its gateway and never shows a key, its kernel's or
    another."""
    reference, ours = both(ipykernel, kennel, "%connect_info")
    assert ours["status"] == reference["status"] == "ok"
    assert [kind[:2] for kind in ours["outputs"]] == [("stream", "stdout")]
    text = ours["outputs"][0][2]
    assert "kennel" in text and "jupyter console --existing" in text
    with open(kennel.log_path.replace("stderr.log", "run/kernel.json")) as f:
        assert json.load(f)["key"] not in text
    assert "key" not in text.lower().replace("(sockets, key)", "")


def test_matplotlib_figures_are_shown_as_ipykernel_decides(ipykernel, kennel):
    """Shown under the inline backend (the default): at the end of a cell
    that made a figure in interactive mode, and by plt.show(); after
    matplotlib.use("Agg") nothing, as in ipykernel (kennel says why on
    stderr when plt.show() finds figures it cannot show); %matplotlib inline
    brings them back; plt.ioff() leaves them to plt.show()."""
    def figures(kernel, code):
        reply, outputs = kernel.execute(code, timeout=120)
        assert reply["status"] == "ok", reply
        return [m["msg_type"] for m in outputs
                if m["msg_type"] in ("display_data", "execute_result") and "image/png" in m["content"]["data"]]

    cells = [("import matplotlib, matplotlib.pyplot as plt\nplt.plot([1, 2]);", 1),
             ("matplotlib.use('Agg')\nplt.plot([1, 3]);", 0),
             ("plt.plot([2, 3])\nplt.show()", 0),
             ("%matplotlib inline", 0),
             ("plt.plot([3, 1]);", 1),
             ("plt.ioff()\nplt.plot([3, 3]);", 0),
             ("plt.show()", 1)]
    for code, shown in cells:
        assert figures(ipykernel, code) == figures(kennel, code) == ["display_data"] * shown, code
    # plt.show() with figures it cannot show
    kennel.execute("matplotlib.use('Agg')")
    _, outputs = kennel.execute("plt.plot([1, 1])\nplt.show()")
    hint = stream_text(outputs, "stderr")
    assert "backend is 'agg'" in hint and "module://kennel_inline" in hint, outputs
