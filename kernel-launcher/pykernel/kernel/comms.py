"""Comms, the channel widgets (ipywidgets) keep with the front end, and the
stand-ins for ipykernel's kernel object (get_ipython().kernel, its session
and iopub socket) that such libraries use."""

import os

from .base import _POST_IMPORT, _ipython, _lazy, _state
from .streams import _publish
from .display import _new_display_id


# ---- ipykernel's kernel object, stood in for ------------------------------------

class _IopubStandIn:
    """get_ipython().kernel.iopub_socket: names the iopub channel for
    session.send(); it holds no socket."""

    def __repr__(self):
        return "<kennel iopub channel: publish with get_ipython().kernel.session.send(...)>"


class _SessionStandIn:
    """get_ipython().kernel.session: sends on iopub as the current request's
    child; signing and keys stay in the C side."""

    def __init__(self):
        self.session = os.urandom(16).hex()
        self.username = "kernel"

    def msg(self, msg_type, content=None, parent=None, header=None, metadata=None):
        header = dict(header or {}, msg_type=msg_type, session=self.session,
                      msg_id=os.urandom(16).hex(), username=self.username, version="5.3")
        return {"header": header, "msg_id": header["msg_id"], "msg_type": msg_type,
                "parent_header": dict((parent or {}).get("header", parent or {})),
                "content": content or {}, "metadata": metadata or {}}

    def send(self, stream, msg_or_type, content=None, parent=None, ident=None, buffers=None,
             track=False, header=None, metadata=None):
        if stream is not _iopub_stand_in:
            raise ValueError("kennel's session sends on iopub only "
                             "(get_ipython().kernel.iopub_socket)")
        if isinstance(msg_or_type, dict):
            msg = msg_or_type
        else:
            msg = self.msg(msg_or_type, content, parent, header, metadata)
        _publish(msg["msg_type"], msg.get("content", {}), msg.get("metadata") or None, buffers)
        return msg


class _KernelStandIn:
    """get_ipython().kernel: what libraries look for on ipykernel's kernel
    (iopub_socket, session, parent_header, get_parent), without sockets or
    keys."""

    iopub_socket = _IopubStandIn()
    implementation = "kennel"

    def __init__(self):
        self.session = _SessionStandIn()

    def __repr__(self):
        return "<kennel kernel: sockets and keys stay outside Python>"

    @property
    def shell(self):
        return _ipython()

    @property
    def comm_manager(self):
        return _comm_manager

    def get_parent(self, channel="shell"):
        """The shell request being handled, or the last one (as ipykernel
        keeps it) for a thread that runs on after its cell; {} before any."""
        request = _state.request or _state.parent
        if request is None:
            return {}
        header = dict(request.header)
        return {"header": header, "msg_id": header.get("msg_id", ""),
                "msg_type": request.msg_type, "content": dict(request.content),
                "parent_header": {}, "metadata": {}, "buffers": []}

    parent_header = property(get_parent)


_iopub_stand_in = _KernelStandIn.iopub_socket
_kernel_stand_in = _KernelStandIn()


# ---- comms: front-end widgets (ipywidgets) ---------------------------------------

class Comm:
    """One comm (messaging spec "Custom messages"): what ipykernel.comm.Comm
    offers libraries (ipywidgets imports it; _patch_ipykernel_comm puts this
    class in its place). Binary buffers (bytes, memoryview, bytearray) travel as the
    message's frames after the content, as ipykernel sends them."""

    def __init__(self, target_name="", data=None, metadata=None, buffers=None, comm_id=None,
                 primary=True, target_module=None, **kwargs):
        self.comm_id = comm_id or _new_display_id()
        self.target_name = target_name
        self.target_module = target_module
        self.primary = primary
        self.kernel = _kernel_stand_in
        self._msg_callback = None
        self._close_callback = None
        self._closed = True
        if primary:
            self.open(data, metadata, buffers)
        else:
            self._closed = False

    def _publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        content = dict(keys, data={} if data is None else data, comm_id=self.comm_id)
        _publish(msg_type, content, metadata or None, buffers)

    def open(self, data=None, metadata=None, buffers=None):
        _comm_manager.register_comm(self)
        self._closed = False
        self._publish_msg("comm_open", data, metadata, buffers, target_name=self.target_name,
                          target_module=self.target_module)

    def close(self, data=None, metadata=None, buffers=None, deleting=False):
        if self._closed:
            return
        self._closed = True
        if not deleting:
            self._publish_msg("comm_close", data, metadata, buffers)
        _comm_manager.unregister_comm(self)

    def send(self, data=None, metadata=None, buffers=None):
        self._publish_msg("comm_msg", data, metadata, buffers)

    def on_close(self, callback):
        self._close_callback = callback

    def on_msg(self, callback):
        self._msg_callback = callback

    def handle_close(self, msg):
        if self._close_callback is not None:
            self._close_callback(msg)

    def handle_msg(self, msg):
        if self._msg_callback is not None:
            self._msg_callback(msg)


Comm.__module__ = "ipykernel.comm"


class CommManager:
    """get_ipython().kernel.comm_manager: comm targets and the open comms;
    handles the front end's comm_open, comm_msg and comm_close."""

    def __init__(self):
        self.comms = {}
        self.targets = {}

    def register_target(self, target_name, f):
        if isinstance(f, str):
            f = _lazy("traitlets.utils.importstring").import_item(f)
        self.targets[target_name] = f

    def unregister_target(self, target_name, f=None):
        return self.targets.pop(target_name, None)

    def register_comm(self, comm):
        self.comms[comm.comm_id] = comm
        return comm.comm_id

    def unregister_comm(self, comm):
        self.comms.pop(comm.comm_id, None)

    def get_comm(self, comm_id):
        return self.comms.get(comm_id)

    def info(self, target_name=None):
        return {comm_id: {"target_name": comm.target_name}
                for comm_id, comm in self.comms.items()
                if target_name is None or comm.target_name == target_name}

    def handle(self, msg_type, content, header, buffers=()):
        """A front end's comm message, its binary buffers as memoryviews (as
        ipykernel gives them); a callback's error goes to stderr."""
        msg = {"header": header, "msg_id": header.get("msg_id", ""), "msg_type": msg_type,
               "content": content, "metadata": {}, "buffers": list(buffers), "parent_header": {}}
        comm_id = content.get("comm_id", "")
        _state.running_user_code = True
        try:
            if msg_type == "comm_open":
                self._open(comm_id, content, msg)
            elif comm_id in self.comms:
                comm = self.comms[comm_id]
                if msg_type == "comm_msg":
                    comm.handle_msg(msg)
                else:
                    comm._closed = True
                    self.unregister_comm(comm)
                    comm.handle_close(msg)
        except Exception:
            _state.running_user_code = False
            _lazy("traceback").print_exc()
        finally:
            _state.running_user_code = False

    def _open(self, comm_id, content, msg):
        target = self.targets.get(content.get("target_name", ""))
        if target is None:
            # no such target: close it at once so the front end does not wait
            _publish("comm_close", {"comm_id": comm_id, "data": {}})
            return
        comm = Comm(comm_id=comm_id, primary=False, target_name=content.get("target_name", ""))
        self.register_comm(comm)
        try:
            target(comm, msg)
        except Exception:
            comm.close()
            raise


_comm_manager = CommManager()


def _patch_ipykernel_comm(module):
    """ipywidgets (and others) take Comm from ipykernel.comm: kennel's."""
    module.Comm = Comm
    module.CommManager = CommManager


_POST_IMPORT["ipykernel.comm"] = _patch_ipykernel_comm
