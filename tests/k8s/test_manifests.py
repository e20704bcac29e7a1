"""gateway/deploy/k8s: the kustomize base and its overlays (pvc, host-users,
tls) build with the kubectl on PATH (Debian's kubernetes-client 1.20 where
./quickstart check-deploy installs it), and what they say agrees with the
rest of the tree: the balancer's ConfigMap is the HAProxy config tests/fleet
runs, its servers cover the HPA's maxReplicas, the probes and
securityContext are the image's (tests/container), the gateways are a
user-namespaced pod with no host path, and NetworkPolicies admit only the
balancer to them. Without a cluster, `kubectl apply
--dry-run=client` cannot run (it asks the API server for its resource
types: "unable to recognize ... connection refused", 1.20 and 1.32 alike),
so nothing here is checked against the API's schema."""
import json
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
                         ("ConfigMap", "kennel-config"), ("ConfigMap", "kennel-haproxy"),
                         ("NetworkPolicy", "kennel-gateway"), ("NetworkPolicy", "kennel-balancer")}
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
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert {"/var/lib/kennel", "/etc/kennel", "/tmp"} <= mounts
    assert c["resources"]["requests"]["memory"] and c["resources"]["limits"]["memory"]


def pod_spec(docs):
    return docs[("StatefulSet", "kennel")]["spec"]["template"]["spec"]


def test_gateways_are_a_user_namespaced_pod_without_host_paths(base):
    """Red-team L7: root with CAP_SYS_ADMIN, the node's /sys/fs/cgroup
    read-write and an unmasked /proc made the pod node-root-equivalent if
    the daemon fell. The base runs it in a user namespace (hostUsers:
    false: root and the capabilities are the pod's), which procMount
    Unmasked requires, with no hostPath, and the sandbox's uid one the pod
    maps (tests/container runs this config so)."""
    spec = pod_spec(base)
    assert spec["hostUsers"] is False
    assert not [v for v in spec["volumes"] if "hostPath" in v], spec["volumes"]
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        assert not spec.get(key), key
    assert gateway_container(base)["securityContext"].get("privileged") is not True
    conf = json.loads(base[("ConfigMap", "kennel-config")]["data"]["kennel.conf"])
    assert 0 < conf["confine"]["host_uid"] < 65536 and 0 < conf["confine"]["host_gid"] < 65536, conf
    assert conf["confine"]["allow_degraded"] == ["cgroup"], conf


def policy_selects(policy, labels):
    return all(labels.get(k) == v for k, v in policy["podSelector"]["matchLabels"].items())


def test_network_policies_admit_only_the_balancer_to_the_gateways(base):
    """Red-team L7: no NetworkPolicy, so every pod reached each gateway's
    8888 directly, past the balancer's timeouts. The gateways' policy
    selects the StatefulSet's pods, admits the balancer's pods alone on
    8888 and lets them connect nowhere; the balancer's selects its pods
    and may reach the gateways' 8888 and DNS only."""
    gateway_labels = base[("StatefulSet", "kennel")]["spec"]["template"]["metadata"]["labels"]
    balancer_labels = base[("Deployment", "kennel-balancer")]["spec"]["template"]["metadata"]["labels"]
    gw = base[("NetworkPolicy", "kennel-gateway")]["spec"]
    assert policy_selects(gw, gateway_labels) and not policy_selects(gw, balancer_labels)
    assert sorted(gw["policyTypes"]) == ["Egress", "Ingress"] and gw["egress"] == []
    [rule] = gw["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8888}]
    [source] = rule["from"]
    assert set(source) == {"podSelector"}
    assert all(balancer_labels.get(k) == v for k, v in source["podSelector"]["matchLabels"].items())
    assert not all(gateway_labels.get(k) == v for k, v in source["podSelector"]["matchLabels"].items())
    bal = base[("NetworkPolicy", "kennel-balancer")]["spec"]
    assert policy_selects(bal, balancer_labels) and sorted(bal["policyTypes"]) == ["Egress", "Ingress"]
    to_gateways, dns = bal["egress"]
    assert to_gateways["ports"] == [{"protocol": "TCP", "port": 8888}]
    assert policy_selects(to_gateways["to"][0], gateway_labels)
    assert {p["port"] for p in dns["ports"]} == {53} and "to" not in dns


def test_host_users_overlay_is_the_old_privilege_for_clusters_without_user_namespaces():
    docs = kustomize(K8S / "host-users")
    spec = pod_spec(docs)
    assert spec["hostUsers"] is True
    assert [v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v] == ["/sys/fs/cgroup"]
    assert "/sys/fs/cgroup" in {m["mountPath"] for m in gateway_container(docs)["volumeMounts"]}
    conf = json.loads(docs[("ConfigMap", "kennel-config")]["data"]["kennel.conf"])
    assert "confine" not in conf, conf   # the sandbox's uid 2000000000, cgroups required


def test_tls_overlay_encrypts_the_balancer_to_the_gateways():
    """Red-team L7: the token crossed the pod network in clear text. The
    tls overlay gives the gateways http.certfile/keyfile from the Secret,
    the balancer KENNEL_GATEWAY_TLS=ssl and the CA (haproxy.cfg's verified
    server lines: tests/fleet/test_tls.py runs them), the probes HTTPS; its
    kennel.conf is the base's plus the http section."""
    docs = kustomize(K8S / "tls")
    conf = json.loads(docs[("ConfigMap", "kennel-config")]["data"]["kennel.conf"])
    base_conf = json.loads((K8S / "base" / "kennel.conf").read_text())
    assert {k: v for k, v in conf.items() if k != "http"} == {k: v for k, v in base_conf.items() if k != "http"}
    # the base's http settings (per-client shares) kept, the certificate added
    assert {k: v for k, v in conf["http"].items() if k not in ("certfile", "keyfile")} == base_conf.get("http", {})
    mounts = {m["name"]: m["mountPath"] for m in gateway_container(docs)["volumeMounts"]}
    assert conf["http"]["certfile"].startswith(mounts["tls"] + "/") and conf["http"]["keyfile"].startswith(
        mounts["tls"] + "/")
    assert gateway_container(docs)["livenessProbe"]["httpGet"]["scheme"] == "HTTPS"
    balancer = docs[("Deployment", "kennel-balancer")]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in balancer["env"]}
    assert env["KENNEL_GATEWAY_TLS"] == "ssl"
    ca_dir = {m["name"]: m["mountPath"] for m in balancer["volumeMounts"]}["gateway-ca"]
    assert env["KENNEL_GATEWAY_CA"] == ca_dir + "/ca.crt"
    cfg = (K8S / "base" / "haproxy.cfg").read_text()
    assert re.search(r'^\s+default-server "\$\{KENNEL_GATEWAY_TLS-no-ssl\}" verify required ca-file '
                     r'"\$\{KENNEL_GATEWAY_CA-@system-ca\}" verifyhost kennel-gateway$', cfg, re.M), cfg


def test_pvc_overlay_puts_the_state_on_a_claim():
    docs = kustomize(K8S / "pvc")
    sts = docs[("StatefulSet", "kennel")]["spec"]
    assert [t["metadata"]["name"] for t in sts["volumeClaimTemplates"]] == ["state"]
    assert "state" not in {v["name"] for v in sts["template"]["spec"]["volumes"]}
    assert any(m["name"] == "state" for m in gateway_container(docs)["volumeMounts"])
