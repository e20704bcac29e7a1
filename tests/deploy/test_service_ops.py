"""The unit's reload and stop as systemd performs them, under the unit's
hardening (emulated, servicelib.py): ExecReload's command (kill -HUP
$MAINPID) re-reads the config, and SIGTERM drains. Both rely on the
daemon reading its signals from a signalfd, which the unit's system call
filter must allow (signalfd4 is in @system-service)."""
import json
import re
import signal
import subprocess
import time

from kennel_testlib import json_log, kernel_client, wait_until
from servicelib import ServiceGateway, properties, unit_service_settings


def exec_reload():
    """The unit's ExecReload= argv, $MAINPID still to fill in."""
    lines = [value for key, value in unit_service_settings() if key == "ExecReload"]
    assert len(lines) == 1, lines
    return lines[0].split()


def events(gw, name):
    return [e for e in json_log(gw.log_file) if e["event"] == name]


def test_exec_reload_and_sigterm_under_the_unit():
    props = properties(unit_service_settings())
    gw = ServiceGateway(props, config={"max_conversations": 1, "drain_grace": 30})
    try:
        assert gw.info()["ready"] is True
        opened = gw.control.open("first")
        assert opened["status"] == "ok", opened
        refused = gw.control.open("second")
        assert refused["status"] == "error" and refused["ename"] == "TooManyConversations", refused

        gw.config_file.write_text(json.dumps({"max_conversations": 2, "drain_grace": 30}))
        argv = [re.sub(r"\$MAINPID", str(gw.proc.pid), a) for a in exec_reload()]
        subprocess.run(argv, check=True, timeout=10)
        wait_until(lambda: events(gw, "reload"), 10, "the reload")
        assert gw.info()["limits"]["max_conversations"] == 2
        second = gw.control.open("second")
        assert second["status"] == "ok", second

        kc = kernel_client(opened["connection"])
        try:
            msg_id = kc.execute("import time; time.sleep(2); print('done')")
            wait_until(lambda: events(gw, "execute_start"), 20, "the execution's start")
            stopped_at = time.monotonic()
            gw.proc.send_signal(signal.SIGTERM)
            reply = kc.get_shell_msg(timeout=30)
            assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "ok", reply
        finally:
            kc.stop_channels()
        assert gw.proc.wait(30) == 0
        assert time.monotonic() - stopped_at < 20
        assert events(gw, "drained")[0]["reason"] == "no execution left"
    finally:
        rc, leftovers = gw.stop()
    assert rc == 0 and leftovers == []
