"""Every Debian package a test needs is one ./quickstart installs.

A test that passes here because a package was installed by hand fails on a
fresh machine (CI on a new one included). This check finds what the tests
need from the machine, in their own source: every Python module they
import, in their code and in the code they send to kernels (string
constants that parse as Python, or lines of them that read as imports);
every program they run (subprocess's calls and shutil.which with a
literal name); every existing absolute path they name under /usr, /bin,
/sbin, /lib or /etc. Each is resolved to its Debian package with dpkg
(`dpkg-query -S`), and that package must be one the quickstart command
that runs the test installs: named in its lists (`./quickstart packages
CMD` prints them), or pulled in by their Depends/Pre-Depends as
`apt-get install --no-install-recommends` would, or on every Debian system
(Essential: yes, Priority: required). Nothing else is assumed of the
machine: the base image's own list is not in the repository, so a package
it happens to have must still be named (install_packages skips what is
there). A module that no Debian package holds (pip's, /usr/local's) or
that is not installed at all fails too, unless the table below says why a
test names it.

Sound for what the tests name literally; not seen: a path or program
built at run time from pieces (a glob over /usr/share/doc), and a path
that does not exist on the machine running the check (it exists wherever
the package was installed by hand, which is the case this is for)."""
import ast
import functools
import importlib.machinery
import os
import re
import shutil
import subprocess
import sys

import pytest

from kennel_testlib import SRCDIR

QUICKSTART = SRCDIR / "quickstart"

# Modules the tests name that no package provides, on purpose.
NOT_INSTALLED = {
    "_kennel": "made by the kernel itself (kernel-launcher/pykernel/kernel/kernel.py): tests check it is out of reach",
    "cffi": "tests/kernel/test_builtins.py: a denied import, refused by the import policy whether installed or not",
    "kennel_helper_mod": "tests/kernel/test_c_channels.py writes it beside the kernel first",
    "kennel_wheel_probe": "tests/kernel/test_ipython.py builds its wheel in the kernel first",
    "policy": "the words 'import policy' of an error the tests look for",
    "o": "a completion prefix (tests/kernel/test_profiles.py), never imported",
    "ctyp": "a completion prefix (tests/kernel/test_builtins.py), never imported",
    "jso": "a completion prefix (tests/kernel/test_introspection.py), never imported",
    "keywo": "a completion prefix (tests/kernel/test_conformance.py), never imported",
    "kennel_pip_only": "this file's own check of the check",
}
# Programs the tests name that no package provides, on purpose.
NOT_PROGRAMS = {}
# Programs quickstart installs from Debian unless one is on PATH already
# (another vendor's node or kubectl conflicts with Debian's package): any
# package's will do. Each is checked against quickstart's `command -v`.
ANY_VENDOR = {"node": "install_node", "npm": "install_node", "kubectl": "install_kubectl"}
# Files under tests/ that no check runs.
BY_HAND = {
    "tests/gateway/hot_path.py": "a profiling tool run by hand (its docstring), not a test",
}
# What each quickstart command tests: `check` runs tests/local.mk's
# PYTEST_DIRS, the bench smoke run (tests/bench) and the shared helpers at
# the top of tests/; `check-deploy` the rest (tests/k8s, tests/container).
# The product's own Python (the host module, the kernel, the demo) needs
# only what `demo` installs.
PRODUCT = ["gateway/python", "kernel-launcher/pykernel", "examples"]
FS_PREFIXES = ("/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/etc/")
IMPORT_LINE = re.compile(r"^\s*(?:import\s+([A-Za-z_][\w.]*(?:\s+as\s+\w+)?(?:\s*,\s*[A-Za-z_][\w.]*(?:\s+as\s+\w+)?)*)"
                         r"\s*(?:#.*)?$|from\s+([A-Za-z_][\w.]*)\s+import\s)", re.M)
RUNNERS = {"run", "Popen", "check_output", "check_call", "call"}


def quickstart_packages(command):
    out = subprocess.run([str(QUICKSTART), "packages", command], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def quickstart_function(name):
    """The body of one of quickstart's shell functions."""
    m = re.search(rf"^{name}\(\) {{\n(.*?)^}}", QUICKSTART.read_text(), re.M | re.S)
    assert m, f"quickstart has no function {name}"
    return m.group(1)


def vendor_packages():
    """{package: [program]} for the packages quickstart installs only where
    no program of that name is on PATH (ANY_VENDOR's functions)."""
    text, out = QUICKSTART.read_text(), {}
    for program, function in ANY_VENDOR.items():
        for var in re.findall(r"install_packages \$(\w+)", quickstart_function(function)):
            for package in re.search(rf'^{var}="([^"]*)"', text, re.M).group(1).split():
                out.setdefault(package, []).append(program)
    return out


def check_dirs():
    text = (SRCDIR / "tests" / "local.mk").read_text().replace("\\\n", " ")
    return re.search(r"^PYTEST_DIRS\s*=\s*(.*)$", text, re.M).group(1).split() + ["tests/bench"]


def files_of(command):
    """The Python files whose needs `command` must install, repo-relative."""
    tests = SRCDIR / "tests"
    everything = [p for p in tests.rglob("*.py") if "__pycache__" not in p.parts]
    if command == "demo":
        return sorted(p for d in PRODUCT for p in (SRCDIR / d).rglob("*.py") if "__pycache__" not in p.parts)
    checked = [SRCDIR / d for d in check_dirs()]
    in_check = [p for p in everything if p.parent == tests or any(c in p.parents for c in checked)]
    chosen = in_check if command == "check" else [p for p in everything if p not in in_check]
    return sorted(p for p in chosen if str(p.relative_to(SRCDIR)) not in BY_HAND)


def sources(command):
    """(label, Python text, line offset) of what `command` runs: its files,
    and for check README.md's Python blocks (tests/docs runs them)."""
    for f in files_of(command):
        yield str(f.relative_to(SRCDIR)), f.read_text(), 0
    if command == "check":
        sys.path.insert(0, str(SRCDIR / "tests" / "docs"))
        import readme
        for block in readme.blocks((SRCDIR / "README.md").read_text()):
            if block.use() == "python" and not block.skip:
                yield "README.md", block.text, block.line - 1


# ---- what a file needs --------------------------------------------------------

def imports_in(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno


def strings_in(tree):
    """(text, line) of every string constant, an f-string's fields read as _."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value, node.lineno
        elif isinstance(node, ast.JoinedStr):
            yield "".join(v.value if isinstance(v, ast.Constant) else "_" for v in node.values), node.lineno


def imports_in_text(text):
    """The modules a string of kernel code imports: by its syntax tree when
    it parses, else by its lines that read as import statements."""
    if "import" not in text:
        return
    try:
        yield from (name for name, _ in imports_in(ast.parse(text)))
    except (SyntaxError, ValueError):
        for m in IMPORT_LINE.finditer(text):
            if m.group(1):
                yield from (part.split()[0].split(".")[0] for part in m.group(1).split(","))
            else:
                yield m.group(2).split(".")[0]


def argv0(node):
    """The literal program name an argv expression starts with, if any:
    ["prog", ...], ("prog", ...), or a prefix a call makes + ["prog", ...]
    (setpriv(uid) + [...]); a list in a variable + [...] names no program."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return argv0(node.left) or (argv0(node.right) if isinstance(node.left, ast.Call) else None)
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        first = node.elts[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def programs_in(tree):
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)):
            continue
        owner, fn, first = node.func.value.id, node.func.attr, node.args[0]
        if owner == "subprocess" and fn in RUNNERS:
            name = argv0(first)
        elif owner == "shutil" and fn == "which" and isinstance(first, ast.Constant):
            name = first.value
        else:
            continue
        if name and re.fullmatch(r"[\w.+/-]+", name):
            yield name, node.lineno


def needs(text, name):
    """(kind, name, line) for each module, program and path a file names."""
    tree = ast.parse(text, name)
    for name, line in imports_in(tree):
        yield "module", name, line
    for text, line in strings_in(tree):
        for name in imports_in_text(text):
            yield "module", name, line
        if text.startswith(FS_PREFIXES) and re.fullmatch(r"/[\w.+/-]+", text):
            yield "path", text, line
    for name, line in programs_in(tree):
        yield "program", name, line


# ---- where it comes from ----------------------------------------------------------

@functools.lru_cache(maxsize=None)
def own_modules():
    """Module names the repository itself holds (a NAME.py or a NAME/ package)."""
    names = set()
    for p in SRCDIR.rglob("*.py"):
        if "build" in p.relative_to(SRCDIR).parts[:1]:
            continue
        names.add(p.stem)
        if p.name == "__init__.py":
            names.add(p.parent.name)
    return names


def search_path():
    """This Python's sys.path without the repository's own folders."""
    src = str(SRCDIR.resolve())
    return [p for p in sys.path if p and not os.path.realpath(p).startswith(src)]


def module_origin(name):
    """The file (or package directory) name is imported from, "interpreter"
    for a built-in or frozen module, None when not installed."""
    if name in sys.builtin_module_names or importlib.machinery.FrozenImporter.find_spec(name):
        return "interpreter"
    spec = importlib.machinery.PathFinder.find_spec(name, search_path())
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("built-in", "frozen", "namespace"):
        return spec.origin
    return list(spec.submodule_search_locations or [None])[0]


def variants(path):
    """path, its real path, and each as merged /usr lists it either way."""
    out = []
    for p in (path, os.path.realpath(path)):
        out.append(p)
        for a, b in (("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/"), ("/usr/lib/", "/lib/"),
                     ("/usr/lib64/", "/lib64/")):
            if p.startswith(a):
                out.append(b + p[len(a):])
            elif p.startswith(b):
                out.append(a + p[len(b):])
    return list(dict.fromkeys(out))


def owners(paths):
    """{path: set of packages} for each path dpkg knows, in one dpkg-query -S."""
    asked = {}
    for p in paths:
        for v in variants(p):
            asked.setdefault(v, set()).add(p)
    out = subprocess.run(["dpkg-query", "-S", *asked], capture_output=True, text=True, timeout=120)
    found = {}
    for line in out.stdout.splitlines():
        if line.startswith("diversion ") or ": " not in line:
            continue
        pkgs, path = line.split(": ", 1)
        for original in asked.get(path, ()):
            found.setdefault(original, set()).update(p.split(":")[0] for p in pkgs.split(", "))
    return found


class Installed:
    """The installed packages as dpkg knows them: what they depend on and
    provide, and which every Debian system has."""

    def __init__(self):
        fmt = "${db:Status-Abbrev}\t${Package}\t${Essential}\t${Priority}\t${Provides}\t${Pre-Depends}\t${Depends}\n"
        out = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True, timeout=60, check=True)
        self.depends, self.providers, self.base = {}, {}, set()
        for line in out.stdout.splitlines():
            status, name, essential, priority, provides, pre, deps = (line.split("\t") + [""] * 7)[:7]
            if not status.startswith("ii"):
                continue
            self.depends[name] = [g for g in (pre + "," + deps).split(",") if g.strip()]
            for virtual in provides.split(","):
                if virtual.strip():
                    self.providers.setdefault(self.bare(virtual), set()).add(name)
            if essential == "yes" or priority == "required":
                self.base.add(name)

    @staticmethod
    def bare(dep):
        return dep.strip().split()[0].split(":")[0]

    def satisfy(self, group):
        """The installed packages apt would have used for one dependency
        (a | b: the first alternative installed, a virtual one by its
        installed providers)."""
        for alt in group.split("|"):
            name = self.bare(alt)
            if name in self.depends:
                return {name}
            if self.providers.get(name):
                return self.providers[name]
        return set()

    def closure(self, seeds):
        seen, todo = set(), [s for s in seeds if s in self.depends]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for group in self.depends[name]:
                todo.extend(self.satisfy(group) - seen)
        return seen


@functools.lru_cache(maxsize=None)
def installed():
    return Installed()


def problems(command):
    """One line per thing a file of `command` needs that `./quickstart
    command` would not install on a fresh machine."""
    listed = quickstart_packages(command)
    db = installed()
    # a listed package not installed here (nodejs where another vendor's
    # node is) brings nothing: what a test needs of it is reported below
    guaranteed = db.closure(listed | db.base)
    wanted = []  # (where, kind, name, path or None)
    for label, text, offset in sources(command):
        where = lambda line, label=label, offset=offset: f"{label}:{line + offset}"  # noqa: E731
        for kind, name, line in needs(text, label):
            if kind == "module":
                if name in own_modules() and module_origin(name) in (None, "interpreter"):
                    continue
                origin = module_origin(name)
                if origin == "interpreter" or (origin is None and name in NOT_INSTALLED):
                    continue
                wanted.append((where(line), kind, name, origin))
            elif kind == "program":
                if name in NOT_PROGRAMS or (name in ANY_VENDOR and shutil.which(name)):
                    continue
                wanted.append((where(line), kind, name, shutil.which(name)))
            elif os.path.exists(name):
                wanted.append((where(line), kind, name, name))
    paths = owners({p for *_, p in wanted if p})
    out = []
    for where, kind, name, path in wanted:
        what = f"{where}: {kind} {name}"
        if path is None:
            out.append(f"{what} is not installed here, and no Debian package of ./quickstart {command} "
                       f"brings it (install it from Debian and add the package to quickstart's lists)")
        elif path not in paths:
            if os.path.isdir(path) or (kind == "path" and path.startswith("/etc/")):
                continue  # a directory, or a file the system made (/etc/passwd): no package's
            out.append(f"{what} is {path}, which no Debian package installed (pip's, /usr/local's?): "
                       "tests use Debian's packages")
        elif not paths[path] & guaranteed:
            out.append(f"{what} is {path}, of {' or '.join(sorted(paths[path]))}, which ./quickstart {command} "
                       "does not install: add it to quickstart's lists")
    return sorted(set(out))


def stale_entries():
    """Table entries no file names any more (each must stay justified)."""
    named = {(kind, name) for c in ("check", "check-deploy") for label, text, _ in sources(c)
             for kind, name, _ in needs(text, label)}
    return sorted([f"NOT_INSTALLED[{m!r}]" for m in NOT_INSTALLED if ("module", m) not in named]
                  + [f"NOT_PROGRAMS[{p!r}]" for p in NOT_PROGRAMS if ("program", p) not in named]
                  + [f"BY_HAND[{f!r}]" for f in BY_HAND if not (SRCDIR / f).exists()])


def test_check_installs_every_package_its_tests_need():
    found = problems("check")
    assert not found, "a fresh machine would fail these tests:\n" + "\n".join(found)


def test_demo_installs_every_package_the_product_needs():
    found = problems("demo")
    assert not found, "./quickstart demo on a fresh machine would miss:\n" + "\n".join(found)


def test_check_deploy_installs_every_package_its_tests_need():
    deploy = quickstart_packages("check-deploy") - quickstart_packages("check")
    vendor = vendor_packages()  # not installed where another vendor's program is there
    absent = sorted(p for p in deploy
                    if p not in installed().depends and not any(map(shutil.which, vendor.get(p, ()))))
    if absent:
        pytest.skip(f"./quickstart check-deploy has not run here ({', '.join(absent)} not installed): "
                    "it runs this test itself")
    found = problems("check-deploy")
    assert not found, "a fresh machine would fail these tests:\n" + "\n".join(found)


def test_the_tables_name_only_what_the_tests_still_name():
    assert stale_entries() == []
    for program, function in ANY_VENDOR.items():
        assert f"command -v {program} " in quickstart_function(function), \
            f"quickstart's {function} no longer takes any {program}"
    assert {x for programs in vendor_packages().values() for x in programs} == set(ANY_VENDOR), vendor_packages()


# ---- the check itself fails when it should ------------------------------------------

def test_a_package_left_out_of_the_lists_is_named(monkeypatch):
    """python3-ipywidgets left out of quickstart's lists (installed here by
    ./quickstart check): the tests that import ipywidgets are named."""
    listed = quickstart_packages("check")
    assert "python3-ipywidgets" in listed
    monkeypatch.setattr(sys.modules[__name__], "quickstart_packages", lambda c: listed - {"python3-ipywidgets"})
    found = problems("check")
    assert any(line.startswith("tests/kernel/test_comms.py:") and "module ipywidgets" in line
               and "of python3-ipywidgets, which ./quickstart check does not install" in line for line in found), found


def test_a_module_not_installed_or_not_debians_is_named(monkeypatch, tmp_path):
    """A test importing a module that is not installed, and one that only
    pip's kind of directory holds (on sys.path, no package's)."""
    site, repo = tmp_path / "site", tmp_path / "repo"
    site.mkdir(), repo.mkdir()
    (site / "kennel_pip_only.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    test = repo / "test_probe.py"
    test.write_text("import kennel_pip_only\nCODE = 'import kennel_nowhere_at_all\\nprint(1)'\n")
    monkeypatch.setattr(sys.modules[__name__], "sources", lambda c: [("test_probe.py", test.read_text(), 0)])
    monkeypatch.setattr(sys.modules[__name__], "SRCDIR", repo)
    found = problems("check")
    assert any("module kennel_nowhere_at_all is not installed here" in line for line in found), found
    assert any("module kennel_pip_only is " in line and "which no Debian package installed" in line
               for line in found), found
