#!/usr/bin/python3
"""The call graph between the C files of each folder, and its loops; and
which header declares what file defines.

    tests/call_graph.py [--report] [--report-in DIR]... [--edges] [DIR...]

The calls are read from the objects the build made (KENNEL_BUILDDIR, as
`make check` sets it), with nm: a file's global functions (T, W) are what it
defines, its undefined symbols (U) what it calls. An object is named after
its source by automake, with the program's or library's name in front when
that target has flags of its own (gateway/kennel-gw_conv.o,
confine/libconfine_la-pid.o, wire/wire_msg.o); a file compiled into several
programs is one node, with what all its objects define and call (an object
older than its source, left from an earlier build, is not read). Unlike the
#include graph (tests/include_graph.py, whose graph code this shares), this
one sees a file that calls back into the file that calls it through a header
they share, or through a header that declares what it does not define.

The checks, on every folder under each DIR (subfolders too):

- no loop of calls between the files of one folder: A.c calls a function
  defined in B.c and B.c one defined in A.c (or A -> B -> C -> A), each
  printed as a path A -> B -> A and then with the functions that make each
  edge; every file of a tangle starts one path. Likewise a loop through
  files of several folders (a front calling back into what starts it).
- no function declared in one module's header and defined in another
  module's file: X.h declares f, and f is defined in Y.c that is not of
  module X. Modules are include_graph.py --modules' (X.c with X.h, a private
  header such as confine/private.h with the class whose file includes it
  and that it includes). A file with no header of its own (and no main) is
  a part of the one module whose headers declare what it defines, as
  confine/cgroup.c of confine (private.h) or gw_exec.c of gw_relay: one
  declared in the headers of two modules is misplaced too. A header that
  is no class's (no X.c of its module: http.h, wire_private.h, gw_front.h)
  is its folder's shared interface and is not checked.

Prints per folder its files and edges (--edges: each edge with its
functions), then each loop and each misplaced declaration; any of them fails
(exit 1) unless --report, or unless it lies in a folder given with
--report-in (printed, marked "report only", not failing). A folder's .c file
without an object (a part this configuration does not build), or with only
older ones, is named, not checked. With no argument at all it takes them
from $CALL_GRAPH_ARGS: `make check` runs it so (tests/local.mk); `make
call-graph` reports every folder with its edges."""
import argparse
import collections
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import include_graph  # noqa: E402  (beside this file; shares its graph code)

TOP = include_graph.TOP
DEFINED = {"T", "W"}


def rel(path):
    return os.path.relpath(path, TOP)


def objects_by_source(build, files):
    """Source file -> its objects in the build (automake's names)."""
    found = collections.defaultdict(list)
    for folder in {os.path.dirname(f) for f in files}:
        obj_dir = os.path.join(build, os.path.relpath(folder, TOP))
        for sub in (obj_dir, os.path.join(obj_dir, ".libs")):
            if not os.path.isdir(sub):
                continue
            for name in os.listdir(sub):
                if not name.endswith(".o"):
                    continue
                stem = name[:-2]
                for candidate in (stem, stem.split("-", 1)[-1]):
                    source = os.path.join(folder, candidate + ".c")
                    obj = os.path.join(sub, name)
                    if source in files:
                        # Older than its source: left from a build of a
                        # program this run of make did not rebuild.
                        if os.path.getmtime(obj) >= os.path.getmtime(source):
                            found[source].append(obj)
                        break
    return found


def symbols(objects):
    """Source -> (what it defines, what it leaves undefined), from nm."""
    defines, calls = collections.defaultdict(set), collections.defaultdict(set)
    source_of = {o: s for s, objs in objects.items() for o in objs}
    if not source_of:
        return defines, calls
    out = subprocess.run(["nm", "-A", "-P"] + sorted(source_of), check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        obj, _, rest = line.partition(": ")
        fields = rest.split()
        if len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind in DEFINED:
            defines[source_of[obj]].add(name)
        elif kind == "U":
            calls[source_of[obj]].add(name)
    return defines, calls


def call_edges(defines, calls):
    """(A, B) -> the functions A calls that B defines."""
    definer = collections.defaultdict(set)
    for source, names in defines.items():
        for name in names:
            definer[name].add(source)
    edges = collections.defaultdict(set)
    for a, names in calls.items():
        for name in names:
            for b in definer.get(name, ()):
                if b != a:
                    edges[(a, b)].add(name)
    return edges


def top_level_text(path):
    """A header without its comments, strings, preprocessor lines and what
    is inside braces (inline bodies, struct and enum members): what is left
    are the declarations at file scope."""
    with open(path, encoding="utf-8", errors="replace") as src:
        text = src.read()
    text = re.sub(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", " ", text, flags=re.S)
    text = re.sub(r"^\s*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    kept, depth = [], 0
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            kept.append(ch)
    return "".join(kept)


def declarations(headers, functions):
    """Header -> the functions (of those given) it declares."""
    declared = {}
    for h in headers:
        names = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", top_level_text(h)))
        declared[h] = names & functions
    return declared


def misplaced(files, include_edges, defines):
    """(header, function, defining file, why) for each declaration in a
    class's header of a function another module defines. A file with a
    header of its own (or a program's main file) is a module; one without
    is a part of the one module whose headers declare what it defines."""
    module = include_graph.module_of(files, include_edges)
    with_header = {module[f] for f in files if f.endswith(".h")}
    classes = {module[f] for f in files if f.endswith(".c")}
    definer = {name: source for source, names in defines.items() for name in names}
    found, part_of = [], collections.defaultdict(lambda: collections.defaultdict(list))
    headers = sorted(f for f in files if f.endswith(".h") and module[f] in classes)
    for h, names in declarations(headers, set(definer)).items():
        for name in sorted(names):
            source = definer[name]
            if module[source] == module[h]:
                continue
            if module[source] in with_header:
                found.append((h, name, source, "which has a header of its own"))
            elif "main" in defines[source]:
                found.append((h, name, source, "a program's main file"))
            else:
                part_of[source][module[h]].append((h, name))
    for source, owners in sorted(part_of.items()):
        if len(owners) > 1:
            for h, name in sorted(d for decls in owners.values() for d in decls):
                found.append((h, name, source, "a file without a header of its own, declared by " + " and ".join(
                    rel(m) for m in sorted(owners))))
    return found


def loops(nodes, graph):
    """A loop through each file of each tangle (strongly connected
    component), so that every file of one shows."""
    succ = include_graph.successors(nodes, set(graph))
    found = []
    for component in include_graph.components(nodes, set(graph)):
        for start in sorted(component):
            path = include_graph.loop_in(component, succ, start)
            if set(path) not in [set(p) for p in found]:
                found.append(path)
    return found


def print_loop(path, graph, mode):
    steps = "".join(f"{rel(a)} -({', '.join(sorted(graph[(a, b)]))})-> " for a, b in zip(path, path[1:]))
    print(f"call_graph: LOOP{mode}: {' -> '.join(rel(f) for f in path)}")
    print(f"    {steps}{rel(path[-1])}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--report", action="store_true", help="print loops, do not fail")
    parser.add_argument("--report-in", action="append", default=[], metavar="DIR",
                        help="a folder whose loops and declarations are printed, not failing")
    parser.add_argument("--edges", action="store_true", help="print every edge with its functions")
    parser.add_argument("dirs", nargs="*", help="folders from the top")
    args = parser.parse_args(sys.argv[1:] or shlex.split(os.environ.get("CALL_GRAPH_ARGS", "")))
    if not args.dirs:
        parser.error("no DIR given (nor CALL_GRAPH_ARGS)")
    build = os.environ.get("KENNEL_BUILDDIR")
    if not build:
        parser.error("KENNEL_BUILDDIR is not set (make check sets it)")

    files = include_graph.sources(args.dirs)
    sources = {f for f in files if f.endswith(".c")}
    objects = objects_by_source(build, sources)
    defines, calls = symbols(objects)
    edges = call_edges(defines, calls)
    lenient = {os.path.realpath(os.path.join(TOP, d)) for d in args.report_in}

    def mode_of(folders):
        return " (report only)" if set(folders) & lenient else ""
    failed = reported = False

    for folder in sorted({os.path.dirname(f) for f in sources}):
        mine = {f for f in sources if os.path.dirname(f) == folder}
        nodes = mine & set(objects)
        graph = {e: names for e, names in edges.items() if e[0] in nodes and e[1] in nodes}
        mode = mode_of([folder])
        print(f"call_graph: {rel(folder)}: {len(nodes)} files, {len(graph)} edges{mode}")
        if mine - nodes:
            print(f"call_graph: {rel(folder)}: no object (or only older ones), not checked: "
                  + " ".join(sorted(map(rel, mine - nodes))))
        if args.edges:
            for (a, b), names in sorted(graph.items()):
                print(f"  {rel(a)} -> {rel(b)}: {' '.join(sorted(names))}")
        for path in loops(nodes, graph):
            print_loop(path, graph, mode)
            failed, reported = failed or not mode, True
    # A loop through files of several folders (a front calling back into the
    # file that starts it) is none of the above.
    for path in loops(set(objects), edges):
        folders = {os.path.dirname(f) for f in path}
        if len(folders) > 1:
            print_loop(path, edges, mode_of(folders))
            failed, reported = failed or not mode_of(folders), True
    for h, name, source, why in misplaced(files, include_graph.file_edges(files), defines):
        mode = mode_of([os.path.dirname(h)])
        print(f"call_graph: MISPLACED{mode}: {rel(h)} declares {name}, defined in {rel(source)} ({why})")
        failed, reported = failed or not mode, True
    if not reported:
        print("call_graph: no loop, no misplaced declaration")
    elif not failed:
        print("call_graph: nothing failing: all of the above lies in the report-only folders (" + " ".join(args.report_in) + ")")
    return 1 if failed and not args.report else 0


if __name__ == "__main__":
    sys.exit(main())
