"""Comms (Jupyter messaging spec, "Custom messages"): ipywidgets from Debian
(6.0: the model's state is the comm_open data, front-end changes come as
method "backbone" with sync_data) opens its model comm, a front end's update reaches the widget's value, a
kernel-side change goes out, comm_info lists the comms, and a target
registered through get_ipython().kernel.comm_manager answers a front end's
comm_open (issue 16). Binary buffers travel both ways as the frames after
the content: a Comm's open and send, ipywidgets' binary traits, a front
end's comm_msg buffers reaching on_msg as memoryviews."""
import pytest

# the 8-byte PNG signature and bytes that are no UTF-8
PNG = bytes.fromhex("89504e470d0a1a0a") + bytes(range(256))


def send_shell(kernel, msg_type, content, buffers=None):
    """A message with no reply (comm_*): returns its iopub messages."""
    msg = kernel.kc.session.msg(msg_type, content)
    kernel.kc.session.send(kernel.kc.shell_channel.socket, msg, buffers=buffers)
    return kernel.iopub_until_idle(msg["header"]["msg_id"])


def comm_messages(outputs, msg_type="comm_msg"):
    """(content, [buffers as bytes]) of each comm message among outputs."""
    return [(m["content"], [bytes(b) for b in m["buffers"]]) for m in outputs if m["msg_type"] == msg_type]


def comm_info(kernel, target_name=None):
    msg_id = kernel.kc.comm_info(target_name)
    return kernel.shell_reply(msg_id)["content"]


@pytest.fixture
def slider(fresh_kernel):
    reply, outputs = fresh_kernel.execute(
        "import ipywidgets as widgets\nslider = widgets.IntSlider(value=3)\ndisplay(slider)")
    assert reply["status"] == "ok", reply
    return fresh_kernel, outputs


def test_a_widget_opens_its_comm_and_displays_its_view(slider):
    kernel, outputs = slider
    opens = [m["content"] for m in outputs if m["msg_type"] == "comm_open"]
    model = [c for c in opens if c["data"].get("_model_name") == "IntSliderModel"]
    assert len(model) == 1 and model[0]["target_name"] == "jupyter.widget"
    assert model[0]["data"]["value"] == 3
    views = [m["content"]["data"] for m in outputs if m["msg_type"] == "display_data"]
    assert views[-1]["application/vnd.jupyter.widget-view+json"]["model_id"] == model[0]["comm_id"]
    comms = comm_info(kernel, "jupyter.widget")["comms"]
    assert comms[model[0]["comm_id"]] == {"target_name": "jupyter.widget"}


def test_front_end_updates_reach_the_widget_and_back(slider):
    kernel, outputs = slider
    comm_id = [m["content"]["comm_id"] for m in outputs if m["msg_type"] == "comm_open"
               and m["content"]["data"].get("_model_name") == "IntSliderModel"][0]
    send_shell(kernel, "comm_msg", {"comm_id": comm_id, "data": {
        "method": "backbone", "sync_data": {"value": 7}}})
    assert kernel.value("slider.value") == "7"
    reply, outputs = kernel.execute("slider.value = 9")
    updates = [m["content"] for m in outputs if m["msg_type"] == "comm_msg"]
    assert updates and updates[-1]["comm_id"] == comm_id
    assert updates[-1]["data"]["state"] == {"value": 9}
    send_shell(kernel, "comm_close", {"comm_id": comm_id, "data": {}})
    assert comm_id not in comm_info(kernel)["comms"]


def test_a_target_registered_in_the_kernel_answers_the_front_end(fresh_kernel):
    kernel = fresh_kernel
    kernel.execute("def opened(comm, msg):\n"
                   "    comm.send({'hello': msg['content']['data']['who']})\n"
                   "    comm.on_msg(lambda m: comm.send({'echo': m['content']['data']}))\n"
                   "get_ipython().kernel.comm_manager.register_target('echo', opened)")
    outputs = send_shell(kernel, "comm_open", {"comm_id": "c-1", "target_name": "echo",
                                               "data": {"who": "front end"}})
    assert [(m["msg_type"], m["content"]["data"]) for m in outputs] == [
        ("comm_msg", {"hello": "front end"})]
    outputs = send_shell(kernel, "comm_msg", {"comm_id": "c-1", "data": {"n": 1}})
    assert [m["content"]["data"] for m in outputs if m["msg_type"] == "comm_msg"] == [
        {"echo": {"n": 1}}]
    assert comm_info(kernel)["comms"] == {"c-1": {"target_name": "echo"}}


def test_an_unknown_target_is_closed_at_once(kernel):
    outputs = send_shell(kernel, "comm_open", {"comm_id": "c-2", "target_name": "nobody",
                                               "data": {}})
    assert [(m["msg_type"], m["content"]["comm_id"]) for m in outputs] == [("comm_close", "c-2")]


def test_a_failing_callback_is_reported_and_the_kernel_goes_on(fresh_kernel):
    kernel = fresh_kernel
    kernel.execute("get_ipython().kernel.comm_manager.register_target("
                   "'bad', lambda comm, msg: 1/0)")
    outputs = send_shell(kernel, "comm_open", {"comm_id": "c-3", "target_name": "bad",
                                               "data": {}})
    text = "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")
    assert "ZeroDivisionError" in text
    assert kernel.value("1 + 1") == "2"


def test_a_comm_publishes_its_buffers(fresh_kernel):
    kernel = fresh_kernel
    kernel.execute(f"PNG = {PNG!r}")
    reply, outputs = kernel.execute(
        "from ipykernel.comm import Comm\n"
        "c = Comm(target_name='blobs', data={'n': 1}, buffers=[b'\\x00open'])\n"
        "c.send({'n': 2}, buffers=[PNG, memoryview(b'view'), bytearray(b'array'), b''])\n"
        "c.send({'n': 3})")
    assert reply["status"] == "ok", reply
    [(opened, open_buffers)] = comm_messages(outputs, "comm_open")
    assert opened["data"] == {"n": 1} and open_buffers == [b"\x00open"]
    assert comm_messages(outputs) == [({"comm_id": opened["comm_id"], "data": {"n": 2}},
                                       [PNG, b"view", b"array", b""]),
                                      ({"comm_id": opened["comm_id"], "data": {"n": 3}}, [])]


def test_a_widgets_binary_trait_travels_as_a_buffer(fresh_kernel):
    """ipywidgets' own path: bytes state is taken out of the JSON
    (buffer_keys) and given to comm.send as buffers."""
    kernel = fresh_kernel
    reply, outputs = kernel.execute(
        f"import ipywidgets as widgets, traitlets\n"
        f"class Blob(widgets.DOMWidget):\n"
        f"    value = traitlets.Bytes().tag(sync=True)\n"
        f"blob = Blob(value={PNG!r})")
    assert reply["status"] == "ok", reply
    [(opened, _)] = [m for m in comm_messages(outputs, "comm_open")
                     if m[0]["data"]["_model_name"] == "DOMWidgetModel"]
    assert "value" not in opened["data"]
    [(update, buffers)] = [m for m in comm_messages(outputs) if m[0]["comm_id"] == opened["comm_id"]]
    assert update["data"]["method"] == "update" and update["data"]["buffers"] == ["value"]
    assert buffers == [PNG]
    reply, outputs = kernel.execute("blob.value = b'\\xff\\x00new'")
    assert [(c["comm_id"], b) for c, b in comm_messages(outputs)] == [(opened["comm_id"], [b"\xff\x00new"])]


def test_a_front_ends_buffers_reach_on_msg_as_memoryviews(fresh_kernel):
    kernel = fresh_kernel
    kernel.execute("def opened(comm, msg):\n"
                   "    comm.on_msg(lambda m: comm.send(\n"
                   "        {'types': [type(b).__name__ for b in m['buffers']]},\n"
                   "        buffers=[bytes(b)[::-1] for b in m['buffers']]))\n"
                   "get_ipython().kernel.comm_manager.register_target('mirror', opened)")
    send_shell(kernel, "comm_open", {"comm_id": "c-4", "target_name": "mirror", "data": {}})
    outputs = send_shell(kernel, "comm_msg", {"comm_id": "c-4", "data": {}}, buffers=[PNG, b"", b"\x00\x01"])
    assert comm_messages(outputs) == [({"comm_id": "c-4", "data": {"types": ["memoryview"] * 3}},
                                       [PNG[::-1], b"", b"\x01\x00"])]


def test_too_many_buffers_is_the_callers_error(fresh_kernel):
    """At most 1,000 buffers a message (the gateway's guard cuts a kernel's
    connection at 4,096 frames): more raise in the kernel, which goes on."""
    kernel = fresh_kernel
    reply, outputs = kernel.execute("from ipykernel.comm import Comm\n"
                                    "c = Comm(target_name='many')\n"
                                    "c.send({}, buffers=[b'x'] * 1001)")
    assert reply["status"] == "error" and reply["ename"] == "ValueError", reply
    assert "1001 binary buffers: at most 1000" in reply["evalue"]
    assert comm_messages(outputs) == []
    reply, outputs = kernel.execute("c.send({}, buffers=['text'])")
    assert reply["status"] == "error" and reply["ename"] == "TypeError", reply
    assert "buffer 0 is not a contiguous bytes-like object" in reply["evalue"]
    reply, outputs = kernel.execute("c.send({'n': 1000}, buffers=[b'%d' % i for i in range(1000)])")
    assert reply["status"] == "ok", reply
    [(content, buffers)] = comm_messages(outputs)
    assert content["data"] == {"n": 1000} and buffers == [b"%d" % i for i in range(1000)]
