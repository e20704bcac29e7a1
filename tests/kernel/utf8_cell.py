"""One cell that exercises the kernel's text I/O with non-ASCII text: each
check is run on its own and the cell prints one JSON object, check name ->
"ok" or the exception it raised. Used by tests/kernel/test_utf8.py (cold
starts) and tests/gateway/test_utf8.py (kernels forked from the zygote)."""

CELL = r'''
import json, locale, os, pathlib, shutil, subprocess, sys, tempfile
_d = pathlib.Path(tempfile.mkdtemp(prefix="u8-"))
_text = "naïve café ✓ 日本"
def _write_text():
    (_d / "u.txt").write_text(_text)
    assert (_d / "u.txt").read_text() == _text
def _open_non_ascii_name():
    with open(_d / "résumé.txt", "w") as f:
        f.write(_text)
    assert "résumé.txt" in os.listdir(_d)
    assert (_d / "résumé.txt").read_text() == _text
def _read_utf8_bytes():
    (_d / "b.txt").write_bytes(_text.encode("utf-8"))
    with open(_d / "b.txt") as f:
        assert f.read() == _text
def _json_dump():
    with open(_d / "j.json", "w") as f:
        json.dump({"k": _text}, f, ensure_ascii=False)
    with open(_d / "j.json") as f:
        assert json.load(f) == {"k": _text}
def _subprocess_text():
    r = subprocess.run(["/bin/sh", "-c", "printf '%s\\n' \"$1\"; ls \"$2\"", "sh", _text, str(_d)],
                       capture_output=True, text=True, check=True)
    assert r.stdout.splitlines()[0] == _text and "résumé.txt" in r.stdout, r.stdout
def _subprocess_python_child():
    r = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(sys.getfilesystemencoding(), sys.stdout.encoding, '" + _text + "')"],
                       capture_output=True, text=True, check=True)
    assert r.stdout.split(None, 2) == ["utf-8", "utf-8", _text + "\n"], r.stdout
def _encodings():
    assert sys.getfilesystemencoding() == "utf-8", sys.getfilesystemencoding()
    assert locale.getpreferredencoding(False).lower().replace("-", "") == "utf8", locale.getpreferredencoding(False)
    assert sys.flags.utf8_mode == 1
_result = {}
for _f in (_encodings, _write_text, _open_non_ascii_name, _read_utf8_bytes, _json_dump, _subprocess_text,
           _subprocess_python_child):
    try:
        _f()
        _result[_f.__name__[1:]] = "ok"
    except Exception as e:
        _result[_f.__name__[1:]] = f"{type(e).__name__}: {e}"
shutil.rmtree(_d)
print(json.dumps(_result))
'''

CHECKS = ["encodings", "write_text", "open_non_ascii_name", "read_utf8_bytes", "json_dump", "subprocess_text",
          "subprocess_python_child"]
