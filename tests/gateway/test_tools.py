"""The gateway's side of tool calls: a kernel's tool_request on stdin reaches
the client whose execution runs only for a declared tool; anything else is
answered to the kernel at once with a ToolError. The kernel here is ipykernel,
confined by kennel-launch (a kernel whose internals user code can reach, so
the test code itself plays the part of a kernel's tool function)."""
import json

from gwtest import stdout_of

IPYKERNEL = {"argv": ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]}

CALL = '''
import json
_k = get_ipython().kernel
def call_tool(name, **arguments):
    _k.session.send(_k.stdin_socket, "tool_request",
                    {"call_id": "c-" + name, "name": name, "arguments": arguments},
                    parent=_k.get_parent("shell"), ident=_k._parent_ident["shell"])
    _, reply = _k.session.recv(_k.stdin_socket, 0)
    return reply["content"]
'''


def run(kc, code):
    outputs = []
    served = []

    def on_stdin(msg):
        if msg["msg_type"] != "tool_request":
            return
        c = msg["content"]
        served.append(c["name"])
        result = {"call_id": c["call_id"], "status": "ok", "result": c["arguments"]["a"] + c["arguments"]["b"]}
        kc.stdin_channel.send(kc.session.msg("tool_reply", result, parent=msg["header"]))

    reply = kc.execute_interactive(code, timeout=60, allow_stdin=True, stdin_hook=on_stdin,
                                   output_hook=outputs.append)
    return reply, outputs, served


def test_tool_calls_checked_and_routed(make_gateway):
    gw = make_gateway(config={"kernels": {"ipykernel": IPYKERNEL}})
    tools = [{"name": "add", "description": "a + b", "parameters": {"type": "object"}}]
    reply, kc = gw.open_client("tools", kernel="ipykernel", tools=tools, policy={"network": "loopback"})
    run(kc, CALL)
    r, out, served = run(kc, "print(json.dumps(call_tool('add', a=2, b=3)))")
    assert served == ["add"]
    assert json.loads(stdout_of(out)) == {"call_id": "c-add", "status": "ok", "result": 5}
    assert r["metadata"]["kennel"]["tool_calls"] == 1

    r, out, served = run(kc, "print(json.dumps(call_tool('rm_rf', path='/')))")
    assert served == []
    answer = json.loads(stdout_of(out))
    assert answer["status"] == "error" and answer["ename"] == "ToolError" and "rm_rf" in answer["evalue"]
    assert any(e["tool"] == "rm_rf" for e in gw.events("tool_refused"))
    assert gw.stop() == 0


def test_reopen_with_tools_reconfigures_the_running_kernel(gateway):
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    first = [{"name": "alpha", "description": "A.", "parameters": schema}]
    reply, kc = gateway.open_client("retool", tools=first)
    from gwtest import execute
    r, out = execute(kc, "print(sorted(tools))")
    assert stdout_of(out) == "['alpha']\n"
    pid = gateway.control.request("conversation_list_request")["content"]["conversations"][0]["pid"]
    again = gateway.control.open("retool", tools=first + [{"name": "beta", "description": "B.", "parameters": schema}])
    assert again["status"] == "ok" and again["created"] is False
    r, out = execute(kc, "print(sorted(tools))")
    assert stdout_of(out) == "['alpha', 'beta']\n"
    assert gateway.control.request("conversation_list_request")["content"]["conversations"][0]["pid"] == pid
