"""gateway/deploy/k8s: the kustomize base and its pvc overlay build with the
kubectl on PATH (Debian's kubernetes-client 1.20 where ./quickstart
check-deploy installs it), and what they say agrees with the rest of the
tree: the balancer's ConfigMap is the HAProxy config tests/fleet runs, its
servers cover the HPA's maxReplicas, the probes and securityContext are the
image's (tests/container). Without a cluster, `kubectl apply
--dry-run=client` cannot run (it asks the API server for its resource
types: "unable to recognize ... connection refused", 1.20 and 1.32 alike),
so nothing here is checked against the API's schema."""
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

from kennel_testlib import SRCDIR

K8S = pathlib.Path(SRCDIR) / "gateway" / "deploy" / "k8s"
sys.path.insert(0, str(pathlib.Path(SRCDIR) / "tests" / "container"))


def kustomize(path):
    done = subprocess.run(["kubectl", "kustomize", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return {(d["kind"], d["metadata"]["name"].rsplit("-", 1)[0] if d["kind"] == "ConfigMap" else d["metadata"]["name"]): d
            for d in yaml.safe_load_all(done.stdout) if d}


@pytest.fixture(scope="module")
def base():
    return kustomize(K8S / "base")


def gateway_container(docs):
    return docs[("StatefulSet", "kennel")]["spec"]["template"]["spec"]["containers"][0]


def test_kubectl_version_is_reported():
    done = subprocess.run(["kubectl", "version", "--client"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    print(done.stdout)


def test_base_has_every_piece(base):
    assert set(base) == {("Service", "kennel"), ("StatefulSet", "kennel"), ("PodDisruptionBudget", "kennel"),
                         ("Deployment", "kennel-balancer"), ("Service", "kennel-balancer"),
                         ("PodDisruptionBudget", "kennel-balancer"), ("HorizontalPodAutoscaler", "kennel"),
                         ("ConfigMap", "kennel-config"), ("ConfigMap", "kennel-haproxy")}
    headless = base[("Service", "kennel")]["spec"]
    assert headless["clusterIP"] == "None"
    assert base[("StatefulSet", "kennel")]["spec"]["serviceName"] == "kennel"


def test_balancer_config_is_the_tested_one_and_covers_the_hpa(base):
    cfg = (K8S / "base" / "haproxy.cfg").read_text()
    data = base[("ConfigMap", "kennel-haproxy")]["data"]
    assert data["haproxy.cfg"] == cfg
    assert data["kennel-list.lua"] == (K8S / "base" / "kennel-list.lua").read_text()
    env = {e["name"]: e.get("value") for e in
           base[("Deployment", "kennel-balancer")]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["KENNEL_HAPROXY_DIR"] == "/etc/haproxy-kennel"
    servers = re.findall(r'^\s+server kennel-([0-9a-f]{8}) "kennel-(\d+)\.\$\{KENNEL_GATEWAYS\}:8888"', cfg, re.M)
    assert [int(shard, 16) for shard, _ in servers] == [int(n) for _, n in servers] == list(range(len(servers)))
    hpa = base[("HorizontalPodAutoscaler", "kennel")]["spec"]
    assert hpa["scaleTargetRef"]["kind"] == "StatefulSet" and hpa["maxReplicas"] == len(servers)
    assert hpa["metrics"][0]["pods"]["metric"]["name"] == "kennel_conversations"


def test_gateways_use_the_images_entry_and_privilege(base):
    from imagelib import CAPS
    c = gateway_container(base)
    env = {e["name"]: e for e in c["env"]}
    assert env["KENNEL_SHARD_FROM_HOSTNAME"]["value"] == "1"
    assert env["KENNEL_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "kennel-token"
    assert c["readinessProbe"]["exec"]["command"] == ["/usr/libexec/kennel/probe", "ready"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    containerfile = (pathlib.Path(SRCDIR) / "gateway" / "deploy" / "container" / "Containerfile").read_text()
    assert "/usr/libexec/kennel/probe" in containerfile
    sc = c["securityContext"]
    assert sc["capabilities"] == {"drop": ["ALL"], "add": CAPS}
    assert sc["procMount"] == "Unmasked" and sc["seccompProfile"]["type"] == "RuntimeDefault"
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert {"/sys/fs/cgroup", "/var/lib/kennel", "/etc/kennel", "/tmp"} <= mounts
    assert c["resources"]["requests"]["memory"] and c["resources"]["limits"]["memory"]


def test_pvc_overlay_puts_the_state_on_a_claim():
    docs = kustomize(K8S / "pvc")
    sts = docs[("StatefulSet", "kennel")]["spec"]
    assert [t["metadata"]["name"] for t in sts["volumeClaimTemplates"]] == ["state"]
    assert "state" not in {v["name"] for v in sts["template"]["spec"]["volumes"]}
    assert any(m["name"] == "state" for m in gateway_container(docs)["volumeMounts"])
