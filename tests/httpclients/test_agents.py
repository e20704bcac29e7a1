"""The agent frameworks' call sequences (agentclients.py) against each
target: what each framework reads back must be what it expects."""
import asyncio
import base64
import json

import pytest
import requests

from agentclients import AG2, AgentError, Autogen, ExecutionError, Ipybox, OpenHands, Smolagents

PNG = b"\x89PNG\r\n\x1a\n"
PLOT = ("import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n"
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\n")


def auth(target):
    return {"Authorization": f"token {target.token}"} if target.token else {}


def kernel_ids(target):
    r = requests.get(f"{target.base_url}/api/kernels", headers=auth(target))
    assert r.status_code == 200, r.text
    return {k["id"] for k in r.json()}


def stops_at_reply(target, got, pieces, join, nothing):
    """ipybox and OpenHands stop reading at execute_reply. The reference
    relays shell and iopub from two sockets, so a cell's trailing iopub
    (stream, execute_result) may come after its reply there and is lost to
    these clients (measured: 57 of 200 OpenHands executions, 86 of 196
    ipybox ones). On the reference any prefix of the outputs is accepted;
    kennel must deliver a request's iopub before its reply."""
    full = join(pieces)
    if target.kind == "kennel":
        assert got == full
        return
    prefixes = [join(pieces[:n]) if n else nothing for n in range(len(pieces) + 1)]
    assert got in prefixes, (got, prefixes)


def openhands_out(target, got, *pieces):
    stops_at_reply(target, got, list(pieces), "".join, "[Code executed successfully with no output]")


def ipybox_out(target, got, *pieces):
    stops_at_reply(target, got[0], list(pieces), lambda p: "".join(p).strip(), None)


def ipython_magics(target):
    """Whether the target's kernel runs IPython magics (R8): ipybox and
    OpenHands start with `%colors nocolor`, and fail without it."""
    client = Smolagents(target)
    client.create_kernel()
    try:
        client.run_code("%colors nocolor")
        return True
    except AgentError as e:
        if "SyntaxError" not in str(e):
            raise
        return False
    finally:
        delete_kernel(target, client.kernel_id)


def needs_magics(target):
    if not ipython_magics(target):
        pytest.xfail(f"{target.kind}'s kernel does not run IPython magics: `%colors nocolor` is a SyntaxError "
                     "(R8, issue 16)")


def delete_kernel(target, kernel_id):
    requests.delete(f"{target.base_url}/api/kernels/{kernel_id}", headers=auth(target))


def test_smolagents_docker_executor(target):
    client = Smolagents(target)
    assert client.wait_for_server()
    kernel_id = client.create_kernel()
    try:
        assert kernel_id in kernel_ids(target)
        # one websocket per execution, opened and closed each time, the
        # execute_request sent the moment the socket is up
        assert client.run_code("x = 40") == (None, "", False)
        assert client.run_code("print('hi'); x + 2") == ("42", "hi\n", False)
        for i in range(5):
            assert client.run_code(f"x += 1; print(x, end='')") == (None, str(41 + i), False)
        assert client.run_code("x")[0] == "45"
        # errors last: ipykernel answers "aborted" to a request that comes
        # right after an error (stop_on_error), whatever the client
        answer = {"answer": "é" * 3, "n": [1, 2]}
        assert client.run_code(Smolagents.final_answer_code(answer)) == (answer, "", True)
        with pytest.raises(AgentError, match="ZeroDivisionError"):
            client.run_code("1/0")
    finally:
        delete_kernel(target, kernel_id)


def test_smolagents_evalue_not_truncated(target):
    """R10: the final answer rides in error.evalue; 64 KiB must come back whole."""
    client = Smolagents(target)
    client.create_kernel()
    try:
        big = "v" * 65536
        assert client.run_code(Smolagents.final_answer_code(big)) == (big, "", True)
    finally:
        delete_kernel(target, client.kernel_id)


def check_autogen_results(results):
    text, plot, err = results
    # AutoGen joins every output message with "\n": when the kernel's
    # stream flush falls between print's "hello" and its "\n" (seen on a
    # loaded machine), the same output gains a blank line
    assert text.is_ok and text.output in ("hello\n\n3", "hello\n\n\n3"), text.output
    assert plot.is_ok
    mimes = [m for m, _ in plot.data_items]
    assert mimes == ["image/png"], mimes
    assert base64.b64decode(plot.data_items[0][1]).startswith(PNG)
    assert not err.is_ok and err.output.startswith("ERROR: ZeroDivisionError: division by zero\n[")


def test_ag2_jupyter_code_executor(target):
    client = AG2(target)
    client.start()
    try:
        check_autogen_results(client.execute_code_blocks(["print('hello')\n1 + 2", PLOT, "1/0"]))
        assert client.execute_code_blocks(["y = 5"])[0].is_ok
        client.restart()
        after = client.execute_code_blocks(["y"])[0]
        assert not after.is_ok and "NameError" in after.output, after.output
    finally:
        client.stop()
    assert client.kernel_id not in kernel_ids(target)


def test_ag2_unknown_kernel_name_refused_before_any_post(target):
    before = kernel_ids(target)
    with pytest.raises(ValueError, match="not installed"):
        AG2(target, kernel_name="no-such-kernel").start()
    assert kernel_ids(target) == before


def test_autogen_docker_jupyter_executor(target):
    async def run():
        client = Autogen(target)
        await client.start()
        try:
            check_autogen_results(await client.execute_code_blocks(["print('hello')\n1 + 2", PLOT, "1/0"]))
            await client.restart()
            assert (await client.execute_code_blocks(["print('again')"]))[0].output == "again\n"
        finally:
            await client.stop()
        return client.kernel_id
    kernel_id = asyncio.run(asyncio.wait_for(run(), 180))
    assert kernel_id not in kernel_ids(target)


def test_ipybox_kernel_client(anonymous_target, tmp_path):
    needs_magics(anonymous_target)
    async def run():
        client = Ipybox(anonymous_target)
        await client.connect()
        try:
            ipybox_out(anonymous_target, await client.execute("print('a'); 6 * 7"), "a\n", "42")
            text, images = await client.execute(PLOT + "1")
            if anonymous_target.kind == "kennel" or images:
                assert len(images) == 1 and base64.b64decode(images[0]).startswith(PNG)
            # a timeout interrupts the kernel over REST; the next execution works
            with pytest.raises(asyncio.TimeoutError):
                await client.execute("import time; time.sleep(60)", timeout=1.5)
            await client.drain(timeout=2)
            ipybox_out(anonymous_target, await client.execute("print('after')", timeout=20), "after\n")
            with pytest.raises(ExecutionError, match="ZeroDivisionError: division by zero"):
                await client.execute("1/0")
        finally:
            assert await client.disconnect() == 204
    asyncio.run(asyncio.wait_for(run(), 180))


def test_openhands_jupyter_plugin(anonymous_target):
    needs_magics(anonymous_target)
    client = OpenHands(anonymous_target, heartbeat_interval=0.5)
    client.initialize()
    try:
        openhands_out(anonymous_target, client.execute("print('a')\n'b'"), "a\n", "'b'")
        out = client.execute(PLOT)
        if anonymous_target.kind == "kennel" or "Figure" in out:
            assert "![image](data:image/png;base64," in out
        # the plugin checks its limit when a message arrives: a cell that
        # prints keeps them coming
        ticking = "import time\nfor i in range(600):\n    print(i, flush=True)\n    time.sleep(0.1)\n"
        assert client.execute(ticking, timeout=1.5) == "[Execution timed out (1.5 seconds).]"
        # the interrupted execution's own messages are still in flight: the
        # plugin ignores them by parent msg_id. A request queued behind the
        # cell that failed may be answered "aborted" (ipykernel's
        # stop_on_error), which the plugin reports as no output.
        assert client.execute("print('after')", timeout=20) in ("after\n", "[Code executed successfully with no output]")
        openhands_out(anonymous_target, client.execute("print('after')", timeout=20), "after\n")
        assert client.execute("z = 1") == "[Code executed successfully with no output]"
        # the plugin also stops at the error message itself, which the
        # reference may relay after the reply (see stops_at_reply)
        err = client.execute("1/0")
        if anonymous_target.kind == "kennel" or err != "[Code executed successfully with no output]":
            assert "ZeroDivisionError" in err
        assert client.pings >= 1, "the heartbeat thread's pings were answered"
    finally:
        assert client.shutdown() == 204
