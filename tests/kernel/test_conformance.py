"""jupyter_kernel_test (Debian's 0.4.5) against kennel's Python kernel, with
every test of the suite configured."""
import jupyter_kernel_test as jkt  # not `from ... import KernelTests`: pytest would collect it too

from kernelclient import KERNEL_NAME


class KennelKernelTests(jkt.KernelTests):
    kernel_name = KERNEL_NAME
    language_name = "python"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"

    completion_samples = [
        {"text": "zi", "matches": {"zip"}},
        {"text": "import sys; sys.getrecursionl", "matches": {"sys.getrecursionlimit"}},
        {"text": "import keywo", "matches": {"keyword"}},
        {"text": "import xml.dom.minid", "matches": {"xml.dom.minidom"}},
        {"text": "from os import geten", "matches": {"getenv", "getenvb"}},
        {"text": "whil", "matches": {"while"}},
    ]

    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n",
                             "import os", "x?"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x += 1", "for i in range(3):",
                               "x = [1,"]
    invalid_code_samples = ["import = 7q", "x = = 1", ")"]

    code_page_something = "print?"

    code_generate_error = "raise ValueError('kennel test error')"

    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n*n for n in range(4)]", "result": "[0, 1, 4, 9]"},
        {"code": "'a' + 'b'", "result": "'ab'"},
        {"code": "from IPython.display import HTML; HTML('<b>kennel</b>')",
         "mime": "text/html", "result": "<b>kennel</b>"},
    ]

    code_display_data = [
        {"code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))",
         "mime": "text/html"},
        {"code": "display({'application/json': {'a': 1}, 'text/plain': '{a: 1}'}, raw=True)",
         "mime": "application/json"},
        {"code": "import base64; from IPython.display import Image; display(Image(data=base64."
                 "b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhf"
                 "DwAChwGA60e6kgAAAABJRU5ErkJggg==')))",
         "mime": "image/png"},
        {"code": "import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.show()",
         "mime": "image/png"},
    ]

    supported_history_operations = ("tail", "range", "search")
    code_history_pattern = "1?2*"

    code_inspect_sample = "zip"

    code_clear_output = "from IPython.display import clear_output; clear_output()"
