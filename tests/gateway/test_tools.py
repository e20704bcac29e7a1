"""The gateway's side of tool calls: a kernel's tool_request on stdin reaches
the client whose execution runs only for a declared tool; anything else is
answered to the kernel at once with a ToolError. The kernel here is ipykernel,
confined by kennel-launch (a kernel whose internals user code can reach, so
the test code itself plays the part of a kernel's tool function)."""
import json
import time

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


def run(kc, code, allow_stdin=True, call_id=None):
    """Runs code, serving tool calls with a + b (under call_id if given,
    else the request's own)."""
    outputs = []
    served = []

    def on_stdin(msg):
        if msg["msg_type"] != "tool_request":
            return
        c = msg["content"]
        served.append(c["name"])
        result = {"call_id": call_id or c["call_id"], "status": "ok",
                  "result": c["arguments"]["a"] + c["arguments"]["b"]}
        kc.stdin_channel.send(kc.session.msg("tool_reply", result, parent=msg["header"]))

    reply = kc.execute_interactive(code, timeout=60, allow_stdin=allow_stdin, stdin_hook=on_stdin,
                                   output_hook=outputs.append)
    return reply, outputs, served


def test_tool_calls_checked_and_routed(make_gateway):
    gw = make_gateway(config={"kernels": {"ipykernel": IPYKERNEL}})
    tools = [{"name": "add", "description": "a + b", "parameters": {
        "type": "object", "required": ["a", "b"],
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}]
    reply, kc = gw.open_client("tools", kernel="ipykernel", tools=tools, policy={"network": "loopback"})
    run(kc, CALL)
    r, out, served = run(kc, "print(json.dumps(call_tool('add', a=2, b=3)))")
    assert served == ["add"]
    assert json.loads(stdout_of(out)) == {"call_id": "c-add", "status": "ok", "result": 5}
    assert r["metadata"]["kennel"]["tool_calls"] == 1

    # the arguments meet the declared schema, or the call never leaves the gateway
    for arguments, problem in [("a=2, b='3'", "arguments.b must be of type integer, not string"),
                               ("a=2", "arguments.b is required and missing"),
                               ("a=2, b=3, sudo=True", "arguments.sudo is not a declared property")]:
        r, out, served = run(kc, "print(json.dumps(call_tool('add', %s)))" % arguments)
        answer = json.loads(stdout_of(out))
        assert served == [] and answer["ename"] == "InvalidToolArguments", answer
        assert answer["evalue"].startswith("tool 'add': " + problem), answer
    assert any(e.get("ename") == "InvalidToolArguments" for e in gw.events("tool_call"))

    r, out, served = run(kc, "print(json.dumps(call_tool('rm_rf', path='/')))")
    assert served == []
    answer = json.loads(stdout_of(out))
    assert answer["status"] == "error" and answer["ename"] == "UnknownTool" and "rm_rf" in answer["evalue"]
    assert any(e["tool"] == "rm_rf" and e["status"] == "refused" for e in gw.events("tool_call"))
    assert gw.stop() == 0


def test_gateway_checks_a_kernel_that_does_not(make_gateway):
    # ipykernel checks nothing: every refusal here is the gateway's own
    gw = make_gateway(config={"kernels": {"ipykernel": IPYKERNEL}, "max_tool_calls": 3,
                              "log_tool_arguments": True, "max_message_bytes": 4 << 20})
    tools = [{"type": "function", "function": {"name": "add", "description": "a + b", "parameters": {
        "type": "object", "additionalProperties": True}}}]
    reply, kc = gw.open_client("checks", kernel="ipykernel", tools=tools,
                               policy={"network": "loopback", "tool_timeout": 1})
    run(kc, CALL)

    def answer(code, **kw):
        r, out, served = run(kc, "print(json.dumps(%s))" % code, **kw)
        return json.loads(stdout_of(out)), served

    # the OpenAI form was unwrapped; the call is logged with its arguments
    # because this config asks for them
    got, served = answer("call_tool('add', a=1, b=2)")
    assert got["result"] == 3 and served == ["add"]
    ok = [e for e in gw.events("tool_call") if e["status"] == "ok"]
    assert ok and ok[-1]["arguments"] == {"a": 1, "b": 2} and ok[-1]["tool"] == "add"
    assert ok[-1]["msg_id"] and ok[-1]["bytes"] > 0 and ok[-1]["duration"] >= 0

    got, served = answer("call_tool('add', a=1, b=2)", allow_stdin=False)
    assert got["ename"] == "ToolUnavailable" and served == []

    got, served = answer("call_tool('add', a='x' * (1 << 20), b='')")
    assert got["ename"] == "ToolArgumentsTooLarge" and served == []

    got, served = answer("[call_tool('add', a=i, b=0) for i in range(4)]")
    assert [g["status"] for g in got] == ["ok"] * 3 + ["error"] and got[3]["ename"] == "ToolLimit"
    assert len(served) == 3

    # a reply naming another call_id never reaches the kernel (ipykernel
    # would take it); the gateway's tool timeout answers instead
    started = time.monotonic()
    got, served = answer("call_tool('add', a=1, b=1)", call_id="forged")
    assert got["ename"] == "ToolTimeout" and served == ["add"]
    assert time.monotonic() - started < 5
    assert any(e["call_id"] == "forged" for e in gw.events("tool_reply_dropped"))
    assert any(e["status"] == "timeout" for e in gw.events("tool_call"))
    # still usable
    got, served = answer("call_tool('add', a=2, b=2)")
    assert got["result"] == 4
    assert gw.stop() == 0


def test_invalid_tool_lists_are_refused_at_open(gateway):
    bad = [
        ([{"name": "x", "parameters": {"type": "array"}}], "tool 'x': parameters must be"),
        ([{"name": "x"}, {"name": "x"}], "tool 'x': declared twice"),
        ([{"description": "no name"}], "tool 0: name"),
        ([{"name": "x", "description": 3}], "tool 'x': description"),
        ([{"name": "x", "inputSchema": {"required": "a"}}], "tool 'x': parameters.required"),
        ([{"name": "x", "input_schema": {"properties": {"a": 1}}}], "tool 'x': parameters.properties"),
        ([1], "tool 0: a tool must be"),
        ({"name": "x"}, "tools must be a list"),
    ]
    for tools, named in bad:
        reply = gateway.control.open("bad-tools", tools=tools)
        assert reply["status"] == "error" and reply["ename"] == "InvalidTools", (tools, reply)
        assert reply["evalue"].startswith(named), (named, reply["evalue"])
    assert gateway.control.request("conversation_list_request")["content"]["conversations"] == []
    assert gateway.events("kernel_launch") == []


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


def test_non_ascii_names_in_errors_and_at_open(gateway):
    """Names count in characters, and an error naming a non-ASCII tool or
    property arrives whole or cut between characters: a message cut inside
    a character cannot be encoded as JSON, and such a reply was never sent."""
    name = "A" + "é" * 120  # 241 bytes: the error's name was cut at byte 200
    reply = gateway.control.open("utf8-tools", tools=[{"name": name}, {"name": name}])
    assert reply.get("ename") == "InvalidTools" and reply.get("evalue") == f"tool '{name}': declared twice", reply
    key = "A" + "é" * 60  # cut at 100 bytes: 49 characters after the A
    reply = gateway.control.open("utf8-tools", tools=[
        {"name": "t", "parameters": {"properties": {key: {"pattern": "x"}}}}])
    assert reply["evalue"].startswith("tool 't': parameters.properties.A" + "é" * 49 + ": keyword 'pattern'"), reply
    # 256 characters of two bytes each: a valid name, for the kernel too
    _, kc = gateway.open_client("utf8-tools", tools=[{"name": "é" * 256}])
    reply, outputs, _ = run(kc, "print(list(tools) == ['é' * 256])")
    assert reply["content"]["status"] == "ok" and stdout_of(outputs) == "True\n", (reply, outputs)


def test_tool_call_errors_name_non_ascii_tools_whole_characters(make_gateway):
    """The kernel's answer to a refused call names the tool, a path and an
    enum cut at a byte count: always between characters (a reply cut inside
    one could not be encoded and reached the kernel as an empty {})."""
    gw = make_gateway(config={"kernels": {"ipykernel": IPYKERNEL}})
    name, key = "A" + "é" * 120, "k" * 95
    parameters = {"type": "object", "properties": {
        "e": {"enum": ["A" + "é" * 80]},
        key: {"type": "object", "properties": {key: {"type": "object", "required": ["é" * 50]}}}}}
    reply, kc = gw.open_client("utf8-calls", kernel="ipykernel", tools=[{"name": name, "parameters": parameters}],
                               policy={"network": "loopback"})
    run(kc, CALL)

    def answer(code):
        r, out, served = run(kc, "print(json.dumps(%s))" % code)
        assert served == []
        return json.loads(stdout_of(out))

    # 200 bytes of the unknown name: B and 99 characters of two bytes
    got = answer("call_tool(%r)" % ("B" + "é" * 120))
    assert got.get("ename") == "UnknownTool", got
    assert got["evalue"] == "this conversation declared no tool named 'B%s'" % ("é" * 99), got
    # the tool's name cut at 100 bytes, the enum's text at 120
    label = "tool 'A%s': " % ("é" * 49)
    got = answer("call_tool(%r, e='x')" % name)
    assert got.get("ename") == "InvalidToolArguments", got
    assert got["evalue"] == label + 'arguments.e must be one of ["A%s...' % ("é" * 58), got
    # the whole message cut to the gateway's buffer: 48 of the 50 characters
    got = answer("call_tool(%r, **{%r: {%r: {}}})" % (name, key, key))
    assert got.get("ename") == "InvalidToolArguments", got
    assert got["evalue"] == label + "arguments.%s.%s.%s" % (key, key, "é" * 48), got
    assert gw.stop() == 0
