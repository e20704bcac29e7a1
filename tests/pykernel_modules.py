#!/usr/bin/python3
"""The modules of the Python kernel's package (kernel-launcher/pykernel/kernel/):
one-way imports, and none too long.

    tests/pykernel_modules.py [FILE...]

FILEs in the order the C side loads them; with none, the PYKERNEL_PY list
of kernel-launcher/pykernel/local.mk (that order). Each module is in
sys.modules only while the package loads, and a module may import only from
those loaded before it, so it fails (exit 1), naming the file and line, when
a module

- imports a module of the package that does not come before it in that
  order (a loop, or one that would not be loaded yet),
- imports one anywhere but at its top level (inside a function the import
  would run after the modules left sys.modules), or other than as
  `from .NAME import ...`,
- has more than MAX_LINES lines.

`make check` runs it."""
import ast
import os
import re
import sys

MAX_LINES = 800
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_order():
    """PYKERNEL_PY of the package's local.mk: the files in load order."""
    with open(os.path.join(ROOT, "kernel-launcher", "pykernel", "local.mk")) as f:
        text = f.read().replace("\\\n", " ")
    match = re.search(r"^PYKERNEL_PY\s*=(.*)$", text, re.M)
    if match is None:
        sys.exit("tests/pykernel_modules.py: no PYKERNEL_PY list in kernel-launcher/pykernel/local.mk")
    return [os.path.join(ROOT, path) for path in match.group(1).split()]


def name_of(path):
    return os.path.splitext(os.path.basename(path))[0]


def problems(paths):
    before = set()
    for path in paths:
        name = name_of(path)
        with open(path, "rb") as f:
            source = f.read()
        lines = source.count(b"\n")
        if lines > MAX_LINES:
            yield "%s: %d lines (at most %d)" % (path, lines, MAX_LINES)
        tree = ast.parse(source, path)
        top = set(map(id, tree.body))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "kennel_kernel":
                        yield "%s:%d: import %s: only `from .NAME import ...` finds a module of the package" \
                            % (path, node.lineno, alias.name)
                continue
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 0:
                if (node.module or "").split(".")[0] == "kennel_kernel":
                    yield "%s:%d: from %s: only `from .NAME import ...` finds a module of the package" \
                        % (path, node.lineno, node.module)
                continue
            target = node.module
            if node.level != 1 or not target or "." in target:
                yield "%s:%d: from %s%s import: only `from .NAME import ...` finds a module of the package" \
                    % (path, node.lineno, "." * node.level, target or "")
            elif target not in before:
                yield "%s:%d: %s imports from %s, which does not load before it" % (path, node.lineno, name, target)
            if id(node) not in top:
                yield "%s:%d: an import of the package inside a block: it would run after the modules " \
                    "left sys.modules" % (path, node.lineno)
        before.add(name)


def main():
    paths = sys.argv[1:] or load_order()
    found = list(problems(paths))
    for line in found:
        print(line)
    print("%d modules, %d problems" % (len(paths), len(found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
