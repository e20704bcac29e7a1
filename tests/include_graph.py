#!/usr/bin/python3
"""The #include graph of kennel's C folders, and its cycles.

    tests/include_graph.py [--modules] [--report] [--edges] [DIR...]

The edges are the quoted #include lines of the .c and .h files under each
DIR (subfolders too), resolved as the compiler does: beside the including
file, then the -I folders of Makefile.am and the local.mk files (SEARCH);
system headers and generated ones (config.h) are not nodes. Only edges
between files under the DIRs given count, so `DIR...` can be one folder or
several (then an include between folders that closes a loop shows too).

Nodes are files (the file-level graph): a cycle is headers including each
other. --modules checks that graph and then one where a file and its header
are one node, X.c with X.h (and a private header that X.c includes and that
includes X.h, such as confine/private.h or pykernel_internal.h, goes with
X; not a Y.h that has its own Y.c): there "X.c includes Y.h while Y.c includes X.h" is a cycle too, two
classes that depend on each other.

Prints the number of nodes and edges, with --edges every edge, and each
cycle found as a path A -> B -> ... -> A; a cycle fails (exit 1) unless
--report. With no argument at all it takes them from $INCLUDE_GRAPH_ARGS:
`make check` runs it so, with --modules on the folders that are acyclic
(tests/local.mk); `make include-graph` reports every folder."""
import argparse
import os
import re
import shlex
import sys

TOP = os.path.realpath(os.environ.get("KENNEL_SRCDIR") or os.path.join(os.path.dirname(__file__), ".."))
SEARCH = ["", "wire", "confine", "kernel-launcher/pykernel"]
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def sources(dirs):
    found = []
    for d in dirs:
        root = os.path.join(TOP, d)
        if not os.path.isdir(root):
            sys.exit(f"include_graph: no folder {d}")
        for base, _, names in os.walk(root):
            found += [os.path.join(base, n) for n in names if n.endswith((".c", ".h"))]
    return {os.path.realpath(f) for f in found}


def resolve(name, including):
    for base in [os.path.dirname(including)] + [os.path.join(TOP, s) for s in SEARCH]:
        path = os.path.realpath(os.path.join(base, name))
        if os.path.isfile(path):
            return path
    return None


def file_edges(files):
    edges = set()
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as src:
            for name in INCLUDE.findall(src.read()):
                target = resolve(name, f)
                if target in files and target != f:
                    edges.add((f, target))
    return edges


def module_of(files, edges):
    """X.c and X.h -> X; a header that X.c includes and that includes X.h
    is X's private header and goes with X, unless it is the header of a
    class of its own (Y.h beside a Y.c): a Y.h that includes X.h while X.c
    includes Y.h is a cycle between X and Y, not one class."""
    stem = {f: os.path.splitext(f)[0] for f in files}
    for c, h in edges:
        if c.endswith(".c") and (h, stem[c] + ".h") in edges and stem[h] + ".c" not in files:
            stem[h] = stem[c]
    return stem


def cycles(nodes, edges):
    """One path per strongly connected component with more than one node."""
    succ = successors(nodes, edges)
    return [loop_in(component, succ) for component in components(nodes, edges)]


def successors(nodes, edges):
    return {n: sorted(b for a, b in edges if a == n) for n in nodes}


def components(nodes, edges):
    """The strongly connected components with more than one node (Tarjan's
    algorithm, iterative), each a set."""
    succ = successors(nodes, edges)
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(succ[node]):
                work.append((node, i + 1))
                nxt = succ[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(set(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def loop_in(component, succ, start=None):
    """A shortest path from start (the component's first node) back to it."""
    start = start or min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for s in succ[node]:
                if s == start:
                    return paths[node] + [start]
                if s in component and s not in paths:
                    paths[s] = paths[node] + [s]
                    nxt.append(s)
        frontier = nxt
    return [start]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modules", action="store_true", help="a file and its header are one node")
    parser.add_argument("--report", action="store_true", help="print cycles, do not fail")
    parser.add_argument("--edges", action="store_true", help="print every edge")
    parser.add_argument("dirs", nargs="*", help="folders from the top")
    args = parser.parse_args(sys.argv[1:] or shlex.split(os.environ.get("INCLUDE_GRAPH_ARGS", "")))

    dirs = args.dirs
    if not dirs:
        parser.error("no DIR given (nor INCLUDE_GRAPH_ARGS)")
    files = sources(dirs)
    edges = file_edges(files)
    found = []
    for level in ["files", "modules"] if args.modules else ["files"]:
        name = {f: os.path.relpath(f, TOP) for f in files}
        if level == "modules":
            module = module_of(files, edges)
            name = {f: os.path.relpath(module[f], TOP) for f in files}
        nodes = set(name.values())
        graph = {(name[a], name[b]) for a, b in edges if name[a] != name[b]}
        print(f"include_graph: {' '.join(dirs)}: {len(nodes)} {level}, {len(graph)} edges")
        if args.edges:
            for a, b in sorted(graph):
                print(f"  {a} -> {b}")
        found += cycles(nodes, graph)
    if not found:
        print("include_graph: no cycle")
        return 0
    for path in found:
        print("include_graph: CYCLE: " + " -> ".join(path))
    return 0 if args.report else 1


if __name__ == "__main__":
    sys.exit(main())
