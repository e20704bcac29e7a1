"""What `kennel serve --http` says when its front cannot start: the true
cause, never a guess. Debian ships libwebsockets' libuv event library as a
plugin in its own package (libwebsockets-evlib-uv), which libwebsockets
dlopens from its install libdir (LWS_INSTALL_LIBDIR in lws_config.h; it
reads no environment variable for it) when the front's context is made.
Without it the front said "cannot listen ... (in use, ...)".

The plugin is made unloadable for one run only, in a private mount
namespace of the test's: the host's file is never touched. A port in use
and an unreadable TLS certificate are refused with their cause too."""
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess

import pytest

from kennel_testlib import LSAN_SUPPRESSIONS, built, remove_state, setpriv, traversable_dir

PLUGIN_NAME = "libwebsockets-evlib_uv.so"


def lws_libdir():
    """Where libwebsockets looks for its event library plugins (the build's
    header says it)."""
    text = pathlib.Path("/usr/include/lws_config.h").read_text()
    return re.search(r'#define LWS_INSTALL_LIBDIR "([^"]+)"', text).group(1)


def probe_host():
    """Unconfined: the plugin is there and loads (else every HTTP test
    fails, and this one would prove nothing), and this process can make a
    private mount namespace (root: unshare -m)."""
    plugin = pathlib.Path(lws_libdir()) / PLUGIN_NAME
    assert plugin.is_file(), f"{plugin} missing on this host: ./quickstart installs libwebsockets-evlib-uv"
    if os.geteuid() != 0:
        pytest.skip("needs root for a private mount namespace (CI runs as root)")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    assert probe.returncode == 0, f"unshare -m refused as root: {probe.stderr}"
    return plugin


# In the namespace: "unloadable" binds /dev/null over the plugin (dlopen:
# "file too short"); "missing" binds over the libdir a directory holding a
# symlink to each of its entries but the plugin (made first: ln needs the
# libdir's libc).
HIDE = {
    "unloadable": 'mount --bind /dev/null "$PLUGIN"',
    "missing": 'mkdir "$ORIG" "$FARM" && mount --bind "$LIBDIR" "$ORIG" && '
               'for f in "$ORIG"/*; do [ "${f##*/}" = "$NAME" ] || ln -s "$f" "$FARM/" || exit 1; done && '
               'mount --bind "$FARM" "$LIBDIR" && [ ! -e "$PLUGIN" ]',
}


@pytest.mark.parametrize("how", sorted(HIDE))
def test_a_missing_event_library_plugin_is_named(tmp_path, how):
    plugin = probe_host()
    state = traversable_dir("kennel-http-startup-")
    config = tmp_path / "config.json"
    config.write_text('{"launcher": "%s"}' % built("kernel-launcher/kennel-launch"))
    script = ('mount --make-rprivate / && ' + HIDE[how] + ' && exec "$@"')
    env = dict(os.environ, PLUGIN=str(plugin), LIBDIR=lws_libdir(), NAME=PLUGIN_NAME, ORIG=str(tmp_path / "orig"),
               FARM=str(tmp_path / "farm"),
               ASAN_OPTIONS="detect_leaks=1:halt_on_error=1", LSAN_OPTIONS=f"suppressions={LSAN_SUPPRESSIONS}")
    try:
        out = subprocess.run(["unshare", "-m", "sh", "-c", script, "hide",
                              str(built("gateway/kennel")), "serve", "--state-dir", str(state),
                              "--config", str(config), "--log-file", str(tmp_path / "log.jsonl"),
                              "--connection-file", str(tmp_path / "gateway.json"), "--http", "127.0.0.1:0"],
                             capture_output=True, text=True, timeout=60, env=env)
    finally:
        remove_state(state)
    lines = out.stderr.splitlines()
    assert out.returncode == 1 and len(lines) == 1, out.stderr
    assert str(plugin) in lines[0] and "libwebsockets-evlib-uv" in lines[0], lines[0]
    assert ("file too short" if how == "unloadable" else "No such file") in lines[0], lines[0]
    assert "in use" not in lines[0], lines[0]
    assert not (tmp_path / "gateway.json").exists()
    assert plugin.is_file() and os.path.getsize(plugin) > 0  # the host's file as it was


def serve_refused(http=None, listen="127.0.0.1:0", uid=None):
    """`kennel serve [--http LISTEN]` (as uid) that must refuse to start: its
    exit status and stderr (a front that runs without listening would leave
    the process running, and a client of that URL talking to someone
    else). Its config and log are in a directory of uid's."""
    state = traversable_dir("kennel-http-startup-")
    files = traversable_dir("kennel-http-startup-files-")
    config = files / "config.json"
    config.write_text(json.dumps({"launcher": str(built("kernel-launcher/kennel-launch")), "http": http or {}}))
    if uid is not None:
        for path in (state, files, config):
            os.chown(path, uid, uid)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:halt_on_error=1",
               LSAN_OPTIONS=f"suppressions={LSAN_SUPPRESSIONS}")
    prefix = setpriv(uid) if uid is not None else []
    proc = subprocess.Popen(prefix + [str(built("gateway/kennel")), "serve", "--state-dir", str(state),
                                      "--config", str(config), "--log-file", str(files / "log.jsonl"),
                                      "--connection-file", str(files / "gateway.json")]
                            + (["--http", listen] if listen else []),
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"still running 30 s after start; log: {(files / 'log.jsonl').read_text()[-2000:]}")
    finally:
        left = (files / "gateway.json").exists()
        remove_state(state)
        shutil.rmtree(files)
    assert not left, "the connection file was left behind"
    return proc.returncode, err.splitlines()


def test_a_port_in_use_is_refused_with_its_cause():
    """Before: libwebsockets made its context without the listener, the
    gateway logged http_listen on the port and ran, and a client of that URL
    sent its token to the port's owner."""
    with socket.socket() as owner:
        owner.bind(("127.0.0.1", 0))
        owner.listen()
        port = owner.getsockname()[1]
        rc, lines = serve_refused(listen=f"127.0.0.1:{port}")
    assert rc == 1 and lines == [f"kennel: cannot listen for HTTP on 127.0.0.1:{port}: Address already in use"], lines


def test_a_privileged_port_names_the_host_setting():
    """As uid 65534, a port below net.ipv4.ip_unprivileged_port_start.
    Before: lws kept its context without a listener (its log: "DOESN'T
    EXIST", waiting for the interface) and the gateway ran, logging
    http_listen on that port."""
    start = int(pathlib.Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").read_text())
    if start == 0:
        pytest.skip("this host lets every uid bind every port (net.ipv4.ip_unprivileged_port_start 0)")
    probe = subprocess.run(setpriv(65534) + ["/usr/bin/python3", "-c",
                           f"import socket; socket.socket().bind(('127.0.0.1', {start - 1}))"],
                           capture_output=True, text=True)
    assert "PermissionError" in probe.stderr, f"uid 65534 bound port {start - 1} unconfined: {probe.stderr}"
    rc, lines = serve_refused(listen=f"127.0.0.1:{start - 1}", uid=65534)
    assert rc == 1 and lines == [f"kennel: cannot listen for HTTP on 127.0.0.1:{start - 1}: Permission denied (a port "
                                 "below the host's net.ipv4.ip_unprivileged_port_start needs root or "
                                 "CAP_NET_BIND_SERVICE)"], lines


def test_an_unreadable_tls_certificate_is_named(tmp_path):
    cert = tmp_path / "missing-cert.pem"
    rc, lines = serve_refused(http={"certfile": str(cert), "keyfile": str(tmp_path / "missing-key.pem")})
    assert rc == 1 and len(lines) == 1, lines
    assert lines[0].startswith("kennel: cannot start the HTTP front on 127.0.0.1:0: libwebsockets: "), lines
    assert str(cert) in lines[0] and "No such file or directory" in lines[0], lines


def test_a_bad_http_section_is_refused_with_http_off():
    """Every value of the section is checked whether or not HTTP is asked
    for, as a reload checks it (before: with HTTP off only its key names
    were, and a start took max_connections 0)."""
    rc, lines = serve_refused(http={"max_connections": 0}, listen=None)
    assert rc == 2 and lines == ["kennel: config http.max_connections: must be a number from 1 to 100000"], lines
    rc, lines = serve_refused(http={"listen": "127.0.0.1:99999"})
    assert rc == 2 and lines == ['kennel: http listen "127.0.0.1:99999": must be [IP:]PORT, PORT 0-65535 (0: a free '
                                 'one)'], lines
