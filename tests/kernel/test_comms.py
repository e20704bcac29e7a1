"""Comms (Jupyter messaging spec, "Custom messages"): ipywidgets from Debian
(6.0: the model's state is the comm_open data, front-end changes come as
method "backbone" with sync_data) opens its model comm, a front end's update reaches the widget's value, a
kernel-side change goes out, comm_info lists the comms, and a target
registered through get_ipython().kernel.comm_manager answers a front end's
comm_open (issue 16)."""
import pytest


def send_shell(kernel, msg_type, content):
    """A message with no reply (comm_*): returns its iopub messages."""
    msg = kernel.kc.session.msg(msg_type, content)
    kernel.kc.shell_channel.send(msg)
    return kernel.iopub_until_idle(msg["header"]["msg_id"])


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
