#!/usr/bin/env python3
"""The main job, end to end: start a kennel daemon, open a conversation, and
play a scripted CodeAct agent against it — each "action" is Python code the
model would have written. Variables persist across turns; the kernel is
confined (no network, its own filesystem); tools run here, on the host.

    ./quickstart demo          (builds, then runs this)
    KENNEL_BUILDDIR=build/demo /usr/bin/python3 examples/demo.py
"""
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
BUILDDIR = pathlib.Path(os.environ.get("KENNEL_BUILDDIR", HERE.parent / "build" / "demo"))
sys.path.insert(0, str(HERE.parent / "gateway" / "python"))
import kennel  # noqa: E402  (the host module, from the source tree)

# The host's tools: declared with a JSON Schema, served by plain functions.
TOOLS = [
    {"name": "get_weather", "description": "Current weather for a city.",
     "parameters": {"type": "object", "properties": {
         "city": {"type": "string", "description": "City name"},
         "unit": {"type": "string", "enum": ["C", "F"]}}, "required": ["city"]}},
    {"name": "send_email", "description": "Send an email (needs the host's credentials).",
     "parameters": {"type": "object", "properties": {
         "to": {"type": "string"}, "body": {"type": "string"}}, "required": ["to", "body"]}},
]
FORECAST = {"Oslo": -3.5, "Lisbon": 17.0, "Nairobi": 24.5}


def get_weather(city, unit="C"):
    if city not in FORECAST:
        raise LookupError(f"no station for {city}")
    temp = FORECAST[city] if unit == "C" else FORECAST[city] * 9 / 5 + 32
    return {"city": city, "temp": temp, "unit": unit, "sky": "clear"}


def send_email(to, body):
    raise PermissionError(f"mail to {to} refused: outside the allowed domain")


# What the "model" does, turn by turn.
ACTIONS = [
    # HOST_PORT: a listener the demo opens on the host's loopback. Reaching
    # it from inside would be an escape; nothing off this machine is tried.
    ("Look around the sandbox",
     "import os, socket, getpass\n"
     "print('user:', getpass.getuser(), '| cwd:', os.getcwd(), '| hostname:', socket.gethostname())\n"
     "print('interfaces:', [l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]])\n"
     "try:\n"
     "    socket.create_connection(('127.0.0.1', HOST_PORT), timeout=2)\n"
     "    print('network: reached the host')\n"
     "except OSError as e:\n"
     "    print('network:', e)\n"),
    ("Define data and a helper; they persist",
     "cities = ['Oslo', 'Lisbon', 'Nairobi']\n"
     "def c_to_f(c):\n"
     "    return c * 9 / 5 + 32\n"
     "len(cities)"),
    ("Call a host tool that returns structured data",
     "report = {c: get_weather(city=c)['temp'] for c in cities}\n"
     "report"),
    ("Call a host tool that fails, and handle its ToolError",
     "try:\n"
     "    send_email(to='boss@example.com', body=str(report))\n"
     "except ToolError as e:\n"
     "    print('tool refused:', e)\n"),
    ("Use what earlier turns left behind",
     "warmest = max(report, key=report.get)\n"
     "print(f'Final answer: warmest is {warmest} at {report[warmest]} C = {c_to_f(report[warmest]):.1f} F')\n"),
]


def start_daemon(state_dir):
    conn = state_dir / "gateway.json"
    log = open(state_dir / "gateway.log", "w")
    proc = subprocess.Popen([str(BUILDDIR / "gateway" / "kennel"), "serve",
                             "--state-dir", str(state_dir), "--connection-file", str(conn)],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 10
    while not conn.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"demo: the daemon did not start; see {state_dir / 'gateway.log'}")
        time.sleep(0.02)
    return proc, conn


def host_listener():
    """A TCP listener on the host's loopback, for the sandbox to fail to reach."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.setblocking(False)
    return srv


def reached(srv):
    try:
        srv.accept()[0].close()
        return True
    except BlockingIOError:
        return False


def show(result):
    for out in result.outputs:
        kind, content = out["msg_type"], out["content"]
        if kind == "stream":
            sys.stdout.write("    " + content["text"].rstrip("\n").replace("\n", "\n    ") + "\n")
        elif kind in ("execute_result", "display_data"):
            print("    Out:", content["data"].get("text/plain"))
        elif kind == "error":
            print(f"    {content['ename']}: {content['evalue']}")
    for call in result.tool_calls:
        print(f"    [host served tool call {call['name']}({call['arguments']})]")
    k = result.kennel
    print(f"    ({result.status}; {k.get('wall_seconds', 0) * 1000:.1f} ms wall, "
          f"{k.get('tool_calls', 0)} tool call(s), state {k.get('state')})")


def main():
    # The sandbox user must be able to traverse to its workspace: 0711.
    state_dir = pathlib.Path(tempfile.mkdtemp(prefix="kennel-demo-"))
    state_dir.chmod(0o711)
    daemon, conn = start_daemon(state_dir)
    try:
        gw = kennel.Gateway.from_connection_file(str(conn))
        info = gw.gateway_info()
        print(f"kennel {info['version']} (protocol {info['protocol_version']}) serving at {conn}")
        conv = gw.open("demo", tools=TOOLS,
                       handlers={"get_weather": get_weather, "send_email": send_email})
        print(f"conversation 'demo' open, workspace {conv.workspace}\n")
        failed = False
        listener = host_listener()
        port = listener.getsockname()[1]
        for turn, (intent, code) in enumerate(ACTIONS, 1):
            code = code.replace("HOST_PORT", str(port))
            print(f"--- turn {turn}: {intent}")
            for line in code.rstrip("\n").splitlines():
                print("    | " + line)
            result = conv.run(code, timeout=60)
            show(result)
            failed |= result.status != "ok"
            print()
        escaped = reached(listener)
        listener.close()
        print(f"host listener on 127.0.0.1:{port}: {'REACHED FROM INSIDE' if escaped else 'saw nothing'}")
        failed |= escaped
        layers = gw.gateway_info().get("confinement", {})
        active = sorted(k for k, v in layers.items() if isinstance(v, dict) and v.get("state") == "active")
        if active:
            print("confinement layers active:", ", ".join(active))
        conv.close()
        return 1 if failed else 0
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=15)
        shutil.rmtree(state_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
