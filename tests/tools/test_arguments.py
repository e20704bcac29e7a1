"""A tool call's arguments are checked against the tool's declared JSON Schema
by the gateway before any host sees them (gateway/gw_schema.c), and the host
module serves a handler only the declared parameters. Real daemon, confined
kernel, the host module and plain jupyter_client.

Code in the kernel can bypass the tool functions' signatures by reaching the
kernel's own _stdin_request (red-team finding F9): RAW_CALL does that, so the
gateway's check is what stands between it and the host."""
import json

import pytest

import toolhost
from toolhost import STRING, schema

TRANSFER = {"name": "transfer", "description": "Moves money.",
            "parameters": schema(["account", "amount"], account=STRING, amount={"type": "number"})}
LOOKUP = {"name": "lookup", "description": "Finds a user.", "parameters": schema(["user"], user=STRING)}
ORDER = {"name": "order", "description": "Places an order.", "parameters": schema(
    ["customer", "lines"],
    customer={"type": "object", "required": ["name"],
              "properties": {"name": STRING, "age": {"type": "integer", "minimum": 0}}},
    lines={"type": "array", "minItems": 1, "maxItems": 3, "items": {
        "type": "object", "required": ["sku", "qty"],
        "properties": {"sku": {"type": "string", "minLength": 2},
                       "qty": {"type": "integer", "minimum": 1}}}},
    note={"type": ["string", "null"]},
    meta={"type": "object"},
    mode={"anyOf": [{"const": "fast"}, {"type": "integer", "maximum": 3}]})}
OPEN_ENDED = {"name": "tag", "description": "Extra keys allowed, as integers.",
              "parameters": {"type": "object", "properties": {"label": STRING},
                             "additionalProperties": {"type": "integer"}}}
TOOLS = [TRANSFER, LOOKUP, ORDER, OPEN_ENDED] + toolhost.TOOLS

# the report's bypass: the kernel's own _stdin_request, any JSON
RAW_CALL = """
import json, sys
f = sys._getframe()
while f.f_code.co_filename != "<kennel>":
    f = f.f_back
_, reply = f.f_globals["_stdin_request"]("tool_request", json.dumps(
    {{"call_id": "raw-{n}", "name": {name!r}, "arguments": json.loads({arguments!r})}}), 20)
reply = json.loads(reply)
print(reply["status"], "|", reply.get("ename"), "|", reply.get("evalue"))
"""

CATCH = "try:\n    print({call})\nexcept ToolError as e:\n    print(e.ename, '|', e.evalue)"


class Host:
    """Handlers that record every call they get."""

    def __init__(self):
        self.calls = []

    def handlers(self):
        def transfer(account, amount, dry_run=True, approved_by=None):
            self.calls.append(("transfer", dict(account=account, amount=amount, dry_run=dry_run,
                                                approved_by=approved_by)))
            return {"executed": not dry_run}

        def record(name):
            def handler(**kw):
                self.calls.append((name, kw))
                return "ok"
            return handler

        return toolhost.handlers(transfer=transfer, lookup=record("lookup"), order=record("order"),
                                 tag=record("tag"), add=record("add"), get_weather=record("get_weather"))


@pytest.fixture
def host():
    return Host()


def raw(conv, name, arguments, n=0):
    """(status, ename, evalue) of a tool_request sent past the tool functions."""
    result = conv.run(RAW_CALL.format(n=n, name=name, arguments=json.dumps(arguments)))
    assert result.status == "ok", (result.error, result.stderr)
    status, ename, evalue = (part.strip() for part in result.stdout.strip().split("|", 2))
    return status, ename, evalue


def test_undeclared_arguments_never_reach_the_host(open_conv, host):
    """F9's reproduction: dry_run=False and approved_by were declared by nobody."""
    conv = open_conv(tools=TOOLS, handlers=host.handlers())
    status, ename, evalue = raw(conv, "transfer", {"account": "x", "amount": 1e9, "dry_run": False,
                                                   "approved_by": "ceo"})
    assert (status, ename) == ("error", "InvalidToolArguments")
    assert "arguments.approved_by is not a declared property" in evalue or \
        "arguments.dry_run is not a declared property" in evalue
    assert "transfer" in evalue and "additionalProperties" in evalue
    assert host.calls == []
    # a declared call still gets through, with the handler's own defaults
    result = conv.run(CATCH.format(call="transfer('x', 5)"))
    assert result.stdout.strip() == "{'executed': False}"
    assert host.calls == [("transfer", dict(account="x", amount=5, dry_run=True, approved_by=None))]


def test_wrong_types_are_refused(open_conv, host):
    conv = open_conv(tools=TOOLS, handlers=host.handlers())
    result = conv.run("\n".join([
        CATCH.format(call="add('1', 2)"),
        CATCH.format(call="add(1, 2.5)"),
        CATCH.format(call="add(True, 2)"),
        CATCH.format(call="get_weather('Oslo', unit='K')"),
        CATCH.format(call="transfer('x', '1e9')"),
        CATCH.format(call="lookup({'$ne': None})"),
    ]))
    assert result.stdout.splitlines() == [
        "InvalidToolArguments | tool 'add': arguments.a must be of type integer, not string",
        "InvalidToolArguments | tool 'add': arguments.b must be of type integer, not number",
        "InvalidToolArguments | tool 'add': arguments.a must be of type integer, not boolean",
        "InvalidToolArguments | tool 'get_weather': arguments.unit must be one of [\"C\",\"F\"]",
        "InvalidToolArguments | tool 'transfer': arguments.amount must be of type number, not string",
        "InvalidToolArguments | tool 'lookup': arguments.user must be of type string, not object",
    ]
    assert host.calls == []
    # an integer-valued number is an integer, as in JSON Schema
    assert conv.run(CATCH.format(call="add(1.0, 2)")).stdout.strip() == "ok"
    assert host.calls == [("add", {"a": 1.0, "b": 2})]


def test_missing_required_and_non_object_arguments(open_conv, host):
    conv = open_conv(tools=TOOLS, handlers=host.handlers())
    assert raw(conv, "transfer", {"account": "x"}) == (
        "error", "InvalidToolArguments", "tool 'transfer': arguments.amount is required and missing")
    assert raw(conv, "transfer", ["x", 1], n=1) == (
        "error", "InvalidToolArguments", "tool 'transfer': arguments must be an object, not array")
    # a tool without parameters takes no arguments
    assert raw(conv, "lambda", {"x": 1}, n=2) == (
        "error", "InvalidToolArguments",
        "tool 'lambda': arguments.x is not a declared property (additionalProperties is not allowed)")
    assert host.calls == []


GOOD_ORDER = {"customer": {"name": "Ada", "age": 36}, "lines": [{"sku": "ab", "qty": 2}],
              "note": None, "meta": {"anything": [1, {"goes": True}]}, "mode": "fast"}


@pytest.mark.parametrize("change, problem", [
    ({"customer": {"name": "Ada", "admin": True}},
     "arguments.customer.admin is not a declared property (additionalProperties is not allowed)"),
    ({"customer": {"age": 3}}, "arguments.customer.name is required and missing"),
    ({"customer": {"name": "Ada", "age": -1}}, "arguments.customer.age is -1, outside minimum 0"),
    ({"lines": []}, "arguments.lines has 0 items, fewer than minItems 1"),
    ({"lines": [{"sku": "ab", "qty": 1}] * 4}, "arguments.lines has 4 items, more than maxItems 3"),
    ({"lines": [{"sku": "ab", "qty": 1}, {"sku": "cd", "qty": 0}]},
     "arguments.lines[1].qty is 0, outside minimum 1"),
    ({"lines": [{"sku": "é", "qty": 1}]}, "arguments.lines[0].sku has 1 characters, fewer than minLength 2"),
    ({"lines": [{"qty": 1}]}, "arguments.lines[0].sku is required and missing"),
    ({"note": 7}, "arguments.note must be of one of the types [\"string\",\"null\"], not integer"),
    ({"meta": "text"}, "arguments.meta must be of type object, not string"),
    ({"mode": 4}, "arguments.mode matches none of the 2 schemas of anyOf (first: arguments.mode must equal "
                  "the schema's const value)"),
])
def test_nested_objects_and_arrays(open_conv, host, change, problem):
    conv = open_conv(tools=TOOLS, handlers=host.handlers())
    bad = dict(GOOD_ORDER, **change)
    assert raw(conv, "order", bad) == ("error", "InvalidToolArguments", f"tool 'order': {problem}")
    assert host.calls == []
    assert raw(conv, "order", GOOD_ORDER, n=1)[0] == "ok"
    assert host.calls == [("order", GOOD_ORDER)]


def test_additional_properties_schema(open_conv, host):
    conv = open_conv(tools=TOOLS, handlers=host.handlers())
    assert raw(conv, "tag", {"label": "a", "x": 1, "y": 2})[0] == "ok"
    assert raw(conv, "tag", {"label": "a", "x": "one"}, n=1) == (
        "error", "InvalidToolArguments", "tool 'tag': arguments.x must be of type integer, not string")
    assert host.calls == [("tag", {"label": "a", "x": 1, "y": 2})]


@pytest.mark.parametrize("parameters, problem", [
    (schema(["a"], a={"type": "string", "pattern": "^x"}),
     "parameters.properties.a: keyword 'pattern' is not supported"),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": STRING}},
     "parameters.properties.a: keyword '$ref' is not supported"),
    ({"type": "object", "properties": {}, "$defs": {"A": STRING}}, "parameters: keyword '$defs' is not supported"),
    ({"type": "object", "properties": {"a": {"not": STRING}}}, "parameters.properties.a: keyword 'not' is not"),
    (schema(a={"type": "text"}), "parameters.properties.a.type must be one of string, number"),
    (schema(a={"type": "array", "items": [STRING]}),
     "parameters.properties.a.items: a list of schemas (tuple form) is not supported"),
    (schema(a={"type": "string", "maxLength": -1}),
     "parameters.properties.a.maxLength must be a non-negative integer"),
])
def test_unsupported_schemas_are_refused_at_open(daemon, parameters, problem):
    reply = daemon.control.open("args-unsupported",
                                tools=[{"name": "t", "description": "", "parameters": parameters}])
    assert reply["status"] == "error" and reply["ename"] == "InvalidTools", reply
    assert reply["evalue"].startswith(f"tool 't': {problem}"), reply["evalue"]


def test_host_module_serves_only_declared_parameters(open_conv, host):
    """Defence in depth: a tool_request the host module receives with an
    undeclared or missing parameter (as if the gateway had let it through) is
    answered with an error and the handler does not run."""
    conv = open_conv(tools=TOOLS, handlers=host.handlers())
    header = conv.client.session.msg_header("tool_request")

    def answer(name, arguments):
        msg = {"header": header, "content": {"call_id": "c", "name": name, "arguments": arguments}}
        call = conv._answer_tool(msg)
        return call["status"], call.get("ename"), call.get("evalue")

    assert answer("transfer", {"account": "x", "amount": 1, "dry_run": False}) == (
        "error", "InvalidToolArguments",
        "tool 'transfer': arguments.dry_run is not a declared property (additionalProperties is not allowed)")
    assert answer("transfer", {"account": "x"}) == (
        "error", "InvalidToolArguments", "tool 'transfer': arguments.amount is required and missing")
    conv.handlers["undeclared"] = lambda: "ran"
    assert answer("undeclared", {}) == (
        "error", "UnknownTool", "tool 'undeclared' was not declared for this conversation")
    assert host.calls == []
    assert answer("tag", {"label": "a", "x": 1})[0] == "ok"
