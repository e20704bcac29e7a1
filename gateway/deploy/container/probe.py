#!/usr/bin/python3
"""Kubernetes' exec probe of the kennel image (a probe's httpGet cannot
carry a token from a Secret): `probe ready` exits 0 when GET
/api/kernelspecs answers 200 (kernels can start: readiness, as smolagents
polls it; 503 while draining); `probe live` exits 0 when GET /api answers
at all (the event loop runs; GET /healthz, which needs no token, serves
an httpGet liveness probe as well). The token is the one the gateway
reads from the environment; HTTPS when the config (CONFIG) names an
http.certfile, unverified: the probe asks its own pod's 127.0.0.1."""
import json
import os
import ssl
import sys
import urllib.error
import urllib.request

PATHS = {"ready": "/api/kernelspecs", "live": "/api"}
CONFIG = "/etc/kennel/kennel.conf"


def scheme():
    try:
        with open(CONFIG) as f:
            http = json.load(f).get("http") or {}
    except (OSError, ValueError):
        return "http", None
    if not http.get("certfile"):
        return "http", None
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return "https", context


def main(argv):
    if len(argv) != 2 or argv[1] not in PATHS:
        print("usage: probe ready|live", file=sys.stderr)
        return 2
    token = os.environ.get("KENNEL_AUTH_TOKEN") or os.environ.get("KG_AUTH_TOKEN") or os.environ.get("TOKEN", "")
    port = os.environ.get("KENNEL_HTTP", "0.0.0.0:8888").rsplit(":", 1)[1]
    proto, context = scheme()
    req = urllib.request.Request(f"{proto}://127.0.0.1:{port}{PATHS[argv[1]]}",
                                 headers={"Authorization": f"token {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=5, context=context) as r:
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    except OSError as e:
        print(f"probe {argv[1]}: {e}", file=sys.stderr)
        return 1
    ok = status == 200 if argv[1] == "ready" else True
    if not ok:
        print(f"probe {argv[1]}: GET {PATHS[argv[1]]} answered {status}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
