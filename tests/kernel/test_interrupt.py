"""interrupt_request (interrupt_mode "message") raises KeyboardInterrupt in
running code, even in a tight loop or a sleep, and is harmless when idle."""
import time

from kernelclient import TIMEOUT


def interrupt_after(kernel, code, delay=0.5):
    kernel.execute("interrupted_state = 'kept'")
    msg_id = kernel.kc.execute(code, allow_stdin=False)
    time.sleep(delay)
    started = time.monotonic()
    kernel.km.interrupt_kernel()
    reply = kernel.shell_reply(msg_id, timeout=TIMEOUT)
    elapsed = time.monotonic() - started
    outputs = kernel.iopub_until_idle(msg_id)
    return reply["content"], outputs, elapsed


def check_interrupted(kernel, reply, outputs, elapsed):
    assert reply["status"] == "error"
    assert reply["ename"] == "KeyboardInterrupt"
    assert [m["msg_type"] for m in outputs if m["msg_type"] != "execute_input"] == ["error"]
    assert elapsed < 5
    assert kernel.value("interrupted_state") == "'kept'"


def test_interrupt_a_tight_loop(kernel):
    check_interrupted(kernel, *interrupt_after(kernel, "while True:\n    pass"))


def test_interrupt_a_sleep(kernel):
    check_interrupted(kernel, *interrupt_after(kernel, "import time\ntime.sleep(100)"))


def test_interrupt_while_waiting_for_input(kernel):
    msg_id = kernel.kc.execute("input('wait')", allow_stdin=True)
    kernel.kc.get_stdin_msg(timeout=TIMEOUT)
    kernel.km.interrupt_kernel()
    reply = kernel.shell_reply(msg_id)
    kernel.iopub_until_idle(msg_id)
    assert reply["content"]["ename"] == "KeyboardInterrupt"


def test_interrupt_when_idle_is_harmless(kernel):
    for _ in range(3):
        kernel.km.interrupt_kernel()
    time.sleep(0.3)
    reply, outputs = kernel.execute("after_idle_interrupt = 1\nimport time; time.sleep(0.2)\n'fine'")
    assert reply["status"] == "ok", reply
    assert kernel.value("after_idle_interrupt") == "1"
