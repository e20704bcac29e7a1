"""Rich output: the _repr_*_ protocol, display ids, IPython.display objects,
pandas DataFrames and matplotlib figures."""
import base64

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def of_type(outputs, msg_type):
    return [m["content"] for m in outputs if m["msg_type"] == msg_type]


def test_repr_methods_build_the_bundle(kernel):
    code = ("class Rich:\n"
            "    def _repr_html_(self): return '<b>rich</b>'\n"
            "    def _repr_markdown_(self): return '**rich**'\n"
            "    def _repr_svg_(self): return '<svg></svg>'\n"
            "    def _repr_png_(self): return b'\\x89PNG fake'\n"
            "    def _repr_jpeg_(self): return b'\\xff\\xd8 fake'\n"
            "    def _repr_latex_(self): return r'$\\alpha$'\n"
            "    def _repr_json_(self): return {'rich': [1, 2]}\n"
            "    def __repr__(self): return 'Rich()'\n"
            "Rich()")
    reply, outputs = kernel.execute(code)
    (result,) = of_type(outputs, "execute_result")
    data = result["data"]
    assert data["text/plain"] == "Rich()"
    assert data["text/html"] == "<b>rich</b>"
    assert data["text/markdown"] == "**rich**"
    assert data["image/svg+xml"] == "<svg></svg>"
    assert base64.b64decode(data["image/png"]) == b"\x89PNG fake"
    assert base64.b64decode(data["image/jpeg"]) == b"\xff\xd8 fake"
    assert data["text/latex"] == "$\\alpha$"
    assert data["application/json"] == {"rich": [1, 2]}  # unpacked, not a string


def test_repr_mimebundle_and_metadata(kernel):
    code = ("class Bundle:\n"
            "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
            "        return {'text/html': '<p>b</p>', 'application/vnd.kennel+json': {'k': 1}}, \\\n"
            "               {'text/html': {'isolated': True}}\n"
            "display(Bundle())")
    reply, outputs = kernel.execute(code)
    (shown,) = of_type(outputs, "display_data")
    assert shown["data"]["text/html"] == "<p>b</p>"
    assert shown["data"]["application/vnd.kennel+json"] == {"k": 1}
    assert "text/plain" in shown["data"]
    assert shown["metadata"] == {"text/html": {"isolated": True}}


def test_a_failing_repr_method_is_left_out(kernel):
    code = ("class Broken:\n"
            "    def _repr_html_(self): raise ValueError('no html today')\n"
            "    def __repr__(self): return 'Broken()'\n"
            "Broken()")
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok"
    (result,) = of_type(outputs, "execute_result")
    assert result["data"] == {"text/plain": "Broken()"}
    assert "no html today" in "".join(s["text"] for s in of_type(outputs, "stream"))


def test_display_id_and_update(kernel):
    reply, outputs = kernel.execute("handle = display('v1', display_id='kennel-progress')\n"
                                    "handle.update('v2')\n"
                                    "from IPython.display import update_display\n"
                                    "update_display('v3', display_id='kennel-progress')")
    shown = of_type(outputs, "display_data")
    updates = of_type(outputs, "update_display_data")
    assert [d["transient"]["display_id"] for d in shown] == ["kennel-progress"]
    assert [u["data"]["text/plain"] for u in updates] == ["'v2'", "'v3'"]
    assert all(u["transient"]["display_id"] == "kennel-progress" for u in updates)
    reply, outputs = kernel.execute("h = display('x', display_id=True); h.display_id")
    generated = of_type(outputs, "display_data")[0]["transient"]["display_id"]
    assert of_type(outputs, "execute_result")[0]["data"]["text/plain"] == repr(generated)


def test_clear_output(kernel):
    reply, outputs = kernel.execute("from IPython.display import clear_output\n"
                                    "print('gone'); clear_output(wait=True); print('stays')")
    assert [m["msg_type"] for m in outputs] == ["stream", "clear_output", "stream"]
    assert of_type(outputs, "clear_output") == [{"wait": True}]


def test_ipython_display_objects(kernel):
    code = ("import base64\n"
            "from IPython.display import display, HTML, Markdown, Image, JSON, Latex\n"
            "display(HTML('<i>h</i>'))\n"
            "display(Markdown('# m'))\n"
            "display(Image(data=base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ'\n"
            "    'AAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==')))\n"
            "display(JSON({'j': 1}))\n"
            "display(Latex('$x$'))\n")
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok"
    shown = of_type(outputs, "display_data")
    assert [sorted(k for k in d["data"] if k != "text/plain") for d in shown] == [
        ["text/html"], ["text/markdown"], ["image/png"], ["application/json"], ["text/latex"]]
    assert base64.b64decode(shown[2]["data"]["image/png"]).startswith(PNG_MAGIC)
    assert shown[3]["data"]["application/json"] == {"j": 1}


def test_ipython_display_imported_by_a_library_publishes(kernel):
    # a module that bound IPython's display at its own import time
    code = ("import sys, types\n"
            "lib = types.ModuleType('kennel_test_lib')\n"
            "exec('from IPython.core.display_functions import display as shown\\n'\n"
            "     'def show(x): shown(x)', lib.__dict__)\n"
            "lib.show('from a library')")
    reply, outputs = kernel.execute(code)
    assert [d["data"]["text/plain"] for d in of_type(outputs, "display_data")] == \
        ["'from a library'"]


def test_pandas_dataframe_renders_like_a_notebook(kernel):
    reply, outputs = kernel.execute("import pandas as pd\n"
                                    "pd.DataFrame({'name': ['a', 'b'], 'n': [1, 2]})")
    assert reply["status"] == "ok"
    (result,) = of_type(outputs, "execute_result")
    html = result["data"]["text/html"]
    assert "<table" in html and "dataframe" in html and "<td>a</td>" in html
    plain = result["data"]["text/plain"]
    assert "name" in plain and "n" in plain and "\n" in plain


def test_matplotlib_figure_is_shown_at_the_end_of_the_cell(kernel):
    reply, outputs = kernel.execute("import matplotlib.pyplot as plt\n"
                                    "plt.plot([1, 3, 2])\n"
                                    "print('drawn');")
    assert reply["status"] == "ok"
    assert [m["msg_type"] for m in outputs] == ["stream", "display_data"]
    png = base64.b64decode(of_type(outputs, "display_data")[0]["data"]["image/png"])
    assert png.startswith(PNG_MAGIC)
    # shown once: the next cell does not show it again
    reply, outputs = kernel.execute("1;")
    assert outputs == []
    # kennel's backend in the kernel; what it starts keeps Agg
    assert kernel.value("import matplotlib; matplotlib.get_backend()") == "'module://kennel_inline'"
    assert kernel.value("import os; os.environ['MPLBACKEND']") == "'Agg'"


def test_plt_show_shows_figures_at_that_point(kernel):
    reply, outputs = kernel.execute("import matplotlib.pyplot as plt\n"
                                    "fig, ax = plt.subplots(); ax.bar([1, 2], [3, 4])\n"
                                    "plt.show()\n"
                                    "print('after show')\n"
                                    "fig2 = plt.figure(); plt.plot([0, 1])")
    types = [m["msg_type"] for m in outputs]
    assert types == ["display_data", "stream", "execute_result", "display_data"], types


def test_a_figure_as_the_last_expression_is_an_image(kernel):
    reply, outputs = kernel.execute("import matplotlib.pyplot as plt\n"
                                    "fig, ax = plt.subplots(); ax.plot([2, 1])\n"
                                    "fig")
    results = of_type(outputs, "execute_result")
    assert base64.b64decode(results[0]["data"]["image/png"]).startswith(PNG_MAGIC)
    assert of_type(outputs, "display_data") == []  # not shown twice


def test_json_that_python_allows_but_json_does_not(kernel):
    reply, outputs = kernel.execute("display({'application/json': {'v': float('nan'), 'w': [float('inf'), 1.5]}},"
                                    " raw=True)", user_expressions={"nan": "float('nan')"})
    assert reply["status"] == "ok"
    (shown,) = of_type(outputs, "display_data")
    assert shown["data"]["application/json"] == {"v": None, "w": [None, 1.5]}
    assert reply["user_expressions"]["nan"]["data"]["text/plain"] == "nan"


def test_huge_containers_are_shortened_in_text_plain(kernel):
    text = kernel.value("list(range(100000))")
    assert text.startswith("[0, 1, 2,") and text.endswith("...]")
    assert len(text) < 20000
    assert kernel.value("len(_)") == "100000"  # the value itself is whole


def test_objects_that_display_themselves(kernel):
    code = ("class Widgetish:\n"
            "    def _ipython_display_(self):\n"
            "        display({'text/html': '<input>', 'text/plain': 'widget'}, raw=True)\n"
            "    def _repr_html_(self): return 'never used'\n"
            "display(Widgetish())\n"
            "Widgetish()")
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok"
    assert [m["msg_type"] for m in outputs] == ["display_data", "display_data"]
    assert all(m["content"]["data"]["text/html"] == "<input>" for m in outputs)
