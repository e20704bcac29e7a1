"""Servers that speak the Jupyter kernels REST + WebSocket API, for the
clients in this folder: Debian's jupyter-notebook 6.4.12 with ipykernel (the
reference every client is first proven against), and, when this build's
kennel has an HTTP front, `kennel serve --http`. Each runs in its own
directories under the test's tmp dir, bound to 127.0.0.1."""
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time

import requests

PY = "/usr/bin/python3"   # Debian's CPython: the notebook package is Debian's


def free_port():
    """A port free on 127.0.0.1 now (the server binds it a moment later,
    with --port-retries=0 so a race shows as a start failure, not as a
    server on another port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ready_or_stopped(server):
    """server once it answers GET /api/kernelspecs; stopped when it never does."""
    try:
        wait_ready(server.base_url, server.token, server.proc, server.log)
    except Exception:
        server.stop()
        raise
    return server


def wait_ready(base_url, token, proc, log, timeout=60):
    """Polls GET /api/kernelspecs as smolagents does until it answers 200."""
    deadline = time.monotonic() + timeout
    params = {"token": token} if token else {}
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if requests.get(f"{base_url}/api/kernelspecs", params=params, timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server not ready after {timeout} s: {log.read_text()[-2000:]}")


class Server:
    """A running server: base_url, ws_url, token ('' when anonymous)."""

    def __init__(self, kind, base_url, token, proc, log):
        self.kind = kind
        self.base_url = base_url
        self.ws_url = "ws" + base_url[len("http"):]
        self.token = token
        self.proc = proc
        self.log = log
        host_port = base_url.split("://", 1)[1]
        self.host, port = host_port.rsplit(":", 1)
        self.port = int(port)

    def stop(self, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "state", None):
            from kennel_testlib import remove_state
            remove_state(self.state)
        return self.proc.returncode


def jupyter_env(root):
    """An environment whose Jupyter and IPython directories are the test's
    own: no user config, no runtime files shared with other runs."""
    env = dict(os.environ)
    for name, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                      ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython"),
                      ("MPLCONFIGDIR", "mpl")):
        env[name] = str(root / sub)
        (root / sub).mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(root)
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    return env


def notebook_command(port, token, notebook_dir, extra=()):
    # An empty token is the reference's anonymous mode (ipybox and
    # OpenHands talk to their gateway without one).
    return [PY, "-m", "notebook", "--no-browser", "--allow-root", "--ip=127.0.0.1",
            f"--port={port}", "--port-retries=0", f"--NotebookApp.token={token}",
            "--NotebookApp.password=", f"--notebook-dir={notebook_dir}",
            # Kernel Gateway checks no XSRF cookie; the notebook server skips
            # the check for token-authenticated requests only.
            f"--NotebookApp.disable_check_xsrf={'False' if token else 'True'}", *extra]


def start_notebook(root, token=None, extra=(), name="notebook"):
    """Debian's jupyter-notebook on a free loopback port, ready to start
    kernels. token None: a random one; '': anonymous."""
    token = secrets.token_urlsafe(16) if token is None else token
    root = root / name
    root.mkdir(parents=True, exist_ok=True)
    nbdir = root / "notebooks"
    nbdir.mkdir(exist_ok=True)
    port = free_port()
    log = root / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(notebook_command(port, token, nbdir, extra), env=jupyter_env(root),
                                stdout=out, stderr=subprocess.STDOUT, cwd=root)
    server = Server("notebook", f"http://127.0.0.1:{port}", token, proc, log)
    server.root = root
    server.notebook_dir = nbdir
    return ready_or_stopped(server)


def start_gateway_client(root, gateway):
    """A second jupyter-notebook whose kernels live on `gateway` (its
    GatewayClient: --gateway-url and the gateway's token). The browser and
    jupyter_client talk to this one; it proxies kernels to the gateway."""
    extra = [f"--gateway-url={gateway.base_url}", f"--GatewayClient.auth_token={gateway.token}",
             "--GatewayClient.request_timeout=60"]
    return start_notebook(root, extra=extra, name=f"gatewayclient-{gateway.kind}")


def kennel_has_http(kennel_binary):
    """Whether this build's kennel serves HTTP: its usage names --http."""
    out = subprocess.run([kennel_binary, "serve", "--help"], capture_output=True, text=True, timeout=10)
    return "--http" in (out.stdout + out.stderr)


def start_kennel(root, token=None, name="kennel"):
    """`kennel serve --http 127.0.0.1:0` with this build's confining
    launcher and its own state dir; the URL is the connection file's
    http_url. token None: a random one (KENNEL_AUTH_TOKEN); '': the
    operator's explicit anonymous mode (config http.anonymous)."""
    import hostprobe
    from kennel_testlib import built, serve, traversable_dir
    token = secrets.token_urlsafe(16) if token is None else token
    root = root / name
    root.mkdir(parents=True, exist_ok=True)
    conn_file, log, cfg = root / "gateway.json", root / "gateway.log", root / "config.json"
    config = {"launcher": str(built("kernel-launcher/kennel-launch"))}
    if not token:
        config["http"] = {"anonymous": True}
    cfg.write_text(json.dumps(hostprobe.gateway_config(config)))
    env = {k: v for k, v in os.environ.items() if k not in ("KENNEL_AUTH_TOKEN", "KG_AUTH_TOKEN")}
    if token:
        env["KENNEL_AUTH_TOKEN"] = token
    state = traversable_dir("kennel-httpclients-")
    proc = serve(state, cfg, log, conn_file, ["--http", "127.0.0.1:0"], env=env, stdin=subprocess.DEVNULL)
    server = Server("kennel", json.loads(conn_file.read_text())["http_url"].rstrip("/"), token, proc, log)
    server.root, server.state = root, state
    return ready_or_stopped(server)


if __name__ == "__main__":
    import pathlib
    import tempfile
    s = start_notebook(pathlib.Path(tempfile.mkdtemp()))
    print(s.base_url, s.token)
    sys.stdout.flush()
    try:
        s.proc.wait()
    except KeyboardInterrupt:
        s.stop()
