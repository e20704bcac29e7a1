"""Tool declarations in the kernel: signatures built from the schemas, and
kennel_configure_request, which replaces the tools of a running kernel (the
gateway sends it when a conversation is reopened with another tool list or a
warm kernel is claimed; some tests here send it from the client, through the
daemon, which relays it but keeps checking calls against the declarations of
conversation_open)."""
import toolhost

TOOLS = [
    {"name": "alpha", "description": "First.", "parameters": toolhost.schema(["x"], x=toolhost.STRING)},
    {"name": "beta", "description": "Second.", "parameters": toolhost.schema(["x"], x=toolhost.STRING)},
    {"type": "function", "name": "gamma", "description": "Third.",  # OpenAI's Responses form
     "parameters": {"type": "object", "additionalProperties": True,
                    "properties": {"max-results": {"type": "integer"}, "from": {"type": "string"},
                                   "q": {"type": "string"}, "n": {"type": ["integer", "null"]}},
                    "required": ["max-results", "q"]}},
]


def configure(conv, content):
    """Sends kennel_configure_request on the conversation's shell channel and
    returns the reply's content."""
    kc = conv.client
    msg = kc.session.msg("kennel_configure_request", content)
    kc.shell_channel.send(msg)
    while True:
        reply = kc.get_shell_msg(timeout=30)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            assert reply["msg_type"] == "kennel_configure_reply"
            return reply["content"]


def run_ok(conv, code):
    result = conv.run(code)
    assert result.status == "ok", (result.error, result.stderr)
    return result


def test_signatures_from_schemas(open_conv):
    seen = []

    def gamma(**arguments):
        seen.append(arguments)
        return sorted(arguments)

    conv = open_conv(tools=TOOLS, handlers={"gamma": gamma})
    result = run_ok(conv, "import inspect\nprint(inspect.signature(gamma))")
    # required first, optional ones default None; names that cannot be
    # Python parameters (not identifiers, keywords) travel through **kwargs
    assert result.stdout == "(q: str, n: int | None = None, **kwargs)\n"
    result = run_ok(conv, "gamma('kennel', **{'max-results': 3, 'from': 'x', 'extra': [1]})")
    assert seen[-1] == {"q": "kennel", "max-results": 3, "from": "x", "extra": [1]}
    result = conv.run("gamma(q='kennel')")
    assert result.error["ename"] == "TypeError" and "'max-results'" in result.error["evalue"]
    assert len(seen) == 1
    result = run_ok(conv, "help(gamma)")
    assert "**{'max-results': ...} : int" in result.stdout
    assert "n : int or None, optional" in result.stdout


def test_reconfigure_replaces_the_functions(open_conv):
    conv = open_conv(tools=TOOLS, handlers={"beta": lambda **kw: ["new beta", kw]})
    assert run_ok(conv, "sorted(tools)").value == "['alpha', 'beta', 'gamma']"
    new_beta = {"name": "beta", "description": "Second, now with a count.",
                "parameters": toolhost.schema(["x"], x=toolhost.STRING, count={"type": "integer"})}
    # through the gateway (a reopen with the new list): its declarations are
    # what calls are checked against, and it sends kennel_configure_request
    reopened = conv.gateway.open(conv.id, tools=[new_beta], handlers=conv.handlers)
    reopened.client.wait_for_ready(timeout=30)
    result = run_ok(reopened, "\n".join([
        "import inspect",
        "print(list(tools), str(inspect.signature(beta)))",
        "print(beta.__doc__.splitlines()[0])",
        "print(beta('y', count=2))",
    ]))
    assert result.stdout.splitlines() == [
        "['beta'] (x: str, count: int | None = None)", "Second, now with a count.",
        "['new beta', {'x': 'y', 'count': 2}]"]
    assert reopened.run("alpha('x')").error["ename"] == "NameError"
    assert reopened.run("tools.alpha").error["ename"] == "AttributeError"
    reopened.detach()


def test_a_function_kept_from_before_is_refused_after_replacement(open_conv):
    conv = open_conv(tools=TOOLS, handlers={"alpha": lambda x: x})
    run_ok(conv, "old_alpha = alpha")
    assert configure(conv, {"tools": TOOLS[1:]}) == {"status": "ok"}
    result = run_ok(conv, "try:\n    old_alpha('x')\nexcept ToolError as e:\n    print(e.ename)")
    assert result.stdout == "UnknownTool\n" and result.tool_calls == []


def test_invalid_declarations_are_refused_naming_the_tool(open_conv):
    conv = open_conv(tools=TOOLS)
    bad = [
        ({"tools": [TOOLS[0], {"name": "broken", "parameters": {"type": "array"}}]}, "'broken'"),
        ({"tools": [TOOLS[0], TOOLS[0]]}, "'alpha': declared twice"),
        ({"tools": [{"description": "no name"}]}, "tool 0: name"),
        ({"tools": [{"name": "p", "parameters": {"properties": {"a": 1}}}]}, "'p'"),
        ({"tools": [{"name": "r", "parameters": {"required": "a"}}]}, "'r'"),
        ({"tools": {"name": "not a list"}}, "must be a list"),
        ({"tool_timeout": 0}, "tool_timeout"),
    ]
    for content, named in bad:
        reply = configure(conv, content)
        assert reply["status"] == "error" and reply["ename"] == "InvalidTools", (content, reply)
        assert named in reply["evalue"], (named, reply["evalue"])
    # nothing was replaced by a refused request
    assert run_ok(conv, "sorted(tools)").value == "['alpha', 'beta', 'gamma']"
