"""The operator's kernelspecs (the config's "kernelspecs"): each is a
kernel and the policy its conversations start from, listed by GET
/api/kernelspecs with that policy and started by name. A person's front end
through --gateway-url picks "Python 3 (kennel, notebook)" (what kernelspec
mode gives, within the operator's maxima); an agent keeps python3's
defaults; no client goes past the maxima. tests/httpclients
test_gateway_client.py runs the person's kernelspec through jupyter's own
GatewayClient."""
import json
import subprocess

from httptest import api, connect, run, stdout
from kennel_testlib import built

MIB = 1 << 20


def policies(gw):
    specs = api(gw, "GET", "api/kernelspecs").json()
    return specs["default"], {n: s["spec"]["metadata"]["kennel_policy"] for n, s in specs["kernelspecs"].items()}


def test_builtin_kernelspecs_agent_and_person(http_gateway):
    """Without a "kernelspecs" key: python3 (the default) has the defaults,
    python3-notebook the notebook profile and each limit kernelspec mode
    lifts at the maxima; the kernel model names the kernelspec it came
    from; a person's kernel runs what a notebook needs and prints more than
    the agent's 1 MiB."""
    gw = http_gateway
    default, p = policies(gw)
    assert default == "python3" and set(p) == {"python3", "python3-notebook"}
    assert p["python3"]["builtins"] == "agent" and p["python3"]["output_bytes"] == MIB
    nb = p["python3-notebook"]
    assert (nb["builtins"], nb["execution_timeout"], nb["output_bytes"], nb["memory_bytes"], nb["pids"],
            nb["idle_ttl"]) == ("notebook", 3600, 16 * MIB, 4 << 30, 1024, 86400), nb
    k = api(gw, "POST", "api/kernels", json={"name": "python3-notebook"}).json()
    assert k["name"] == "python3-notebook" and api(gw, "GET", f"api/kernels/{k['id']}").json()["name"] == k["name"]
    ws = connect(gw, k["id"])
    reply, out = run(ws, "!echo person\nimport ctypes\nprint('y' * (3 << 20))")
    assert reply["content"]["status"] == "ok" and stdout(out) == "person\n" + "y" * (3 << 20) + "\n"
    ws.close()
    agent = api(gw, "POST", "api/kernels", json={}).json()
    assert agent["name"] == "python3"
    ws = connect(gw, agent["id"])
    reply, _ = run(ws, "!echo agent")
    assert reply["content"]["ename"] == "PermissionError"
    ws.close()


def test_operator_kernelspecs_within_the_maxima(make_http_gateway):
    """The operator's own: "maximum" is the maxima's value, "unlimited"
    where the maximum is; a client's kennel.policy may change a field
    within the maxima, never past them."""
    config = {"maxima": {"output_bytes": 2 * MIB, "execution_timeout": "unlimited"},
              "kernelspecs": {"python3": {"display_name": "Agents"},
                              "people": {"display_name": "People", "policy": {
                                  "builtins": "notebook", "output_bytes": "maximum",
                                  "execution_timeout": "unlimited"}}}}
    gw = make_http_gateway(config=config)
    _, p = policies(gw)
    assert set(p) == {"python3", "people"}
    assert (p["people"]["output_bytes"], p["people"]["execution_timeout"], p["people"]["builtins"]) == \
        (2 * MIB, "unlimited", "notebook")
    assert api(gw, "GET", "api/kernelspecs/people").json()["spec"]["display_name"] == "People"
    r = api(gw, "POST", "api/kernels", json={"name": "people", "kennel": {"policy": {"output_bytes": 4 * MIB}}})
    assert r.status_code == 400 and "PolicyError: policy.output_bytes" in r.json()["message"], r.text
    r = api(gw, "POST", "api/kernels", json={"name": "people", "kennel": {"policy": {"execution_timeout": "unlimited"}}})
    assert r.status_code == 400 and "operator's config only" in r.json()["message"], r.text
    k = api(gw, "POST", "api/kernels", json={"name": "people", "kennel": {"policy": {"output_bytes": 1024}}}).json()
    ws = connect(gw, k["id"])
    _, out = run(ws, "print('z' * 5000)")
    assert len(stdout(out)) < 5000  # lowered to 1 KiB, truncated
    ws.close()
    r = api(gw, "POST", "api/kernels", json={"name": "python3-notebook"})
    assert r.status_code == 400 and "no kernelspec has this name" in r.json()["message"]


def refusal(tmp_path, config):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config))
    out = subprocess.run([str(built("gateway/kennel")), "serve", "--state-dir", str(tmp_path / "state"), "--config",
                          str(path), "--log-file", str(tmp_path / "log")], capture_output=True, text=True, timeout=60)
    return out.returncode, out.stderr


def test_bad_kernelspecs_refused_at_start(tmp_path):
    """A kernelspec the operator wrote wrong stops the start (exit 2), one
    line naming it and the field."""
    for specs, message in [
            ({"people": {}}, 'kernelspecs must be an object naming "python3"'),
            ({"python3": {"policy": {"output_bytes": 32 * MIB}}}, "kernelspecs.python3.output_bytes is above "
                                                                  "maxima.output_bytes"),
            ({"python3": {}, "x": {"kernel": "nope"}}, 'kernelspecs.x.kernel: "python" or a name of the config'),
            ({"python3": {}, "x": {"policy": {"builtins": "maximum"}}}, 'kernelspecs.x.builtins: "maximum" is for'),
            ({"python3": {}, "x": {"policy": {"pids": 0}}}, "kernelspecs.x.pids: must be a whole number"),
            ({"python3": {}, "x": {"colour": "red"}}, "kernelspecs.x.colour: unknown key"),
            ({"python3": {}, "a b": {}}, "a kernelspec's name is 1 to 64 of"),
            ({"python3": {}, "x": {"policy": {"execution_timeout": "unlimited"}}},
             "kernelspecs.x.execution_timeout is above maxima.execution_timeout")]:
        rc, err = refusal(tmp_path, {"kernelspecs": specs})
        assert rc == 2 and message in err and len(err.strip().splitlines()) == 1, (specs, rc, err)
