"""kennel's Python kernel: execution semantics (see README.md in this folder).

Work in progress: this first version answers kernel_info and runs code; the
full protocol follows."""
import json
import sys

import _kennel

_publish = _kennel.publish
_stdin_request = _kennel.stdin_request
_flush_output = _kennel.flush_output
sys.modules.pop("_kennel", None)
del _kennel

_ns = {"__name__": "__main__", "__builtins__": __builtins__}
_count = 1


def configure(settings_json):
    return None


def _kernel_info():
    return {
        "status": "ok",
        "protocol_version": "5.3",
        "implementation": "kennel",
        "implementation_version": "0.1",
        "language_info": {
            "name": "python",
            "version": "%d.%d.%d" % sys.version_info[:3],
            "mimetype": "text/x-python",
            "file_extension": ".py",
            "pygments_lexer": "ipython3",
            "codemirror_mode": {"name": "ipython", "version": 3},
            "nbconvert_exporter": "python",
        },
        "banner": "kennel Python %s" % sys.version.split()[0],
        "help_links": [],
    }


def dispatch(msg_type, content_json, header_json):
    global _count
    content = json.loads(content_json)
    if msg_type == "kernel_info_request":
        return ("kernel_info_reply", json.dumps(_kernel_info()), "{}", False)
    if msg_type == "execute_request":
        count = _count
        _count += 1
        exec(compile(content.get("code", ""), "<cell>", "exec"), _ns)
        reply = {"status": "ok", "execution_count": count,
                 "payload": [], "user_expressions": {}}
        return ("execute_reply", json.dumps(reply), "{}", False)
    return None
