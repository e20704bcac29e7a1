#!/usr/bin/python3
"""The error table (gateway/gw_error.c) against docs/PROTOCOL.md, both ways.

    tests/error_table.py [--table FILE] [--doc FILE]

Checks that
- every row of the table is in the doc's "Error names" list (§13) with
  the same HTTP status, and every name of that list is a row;
- every name in an `ename` table of the doc (the first column of a table
  whose header's first cell is `ename`) is in the list: a section that
  documents an error the table does not define fails;
- no C file of gateway/ but gw_error.c spells a name of the table as a
  string literal ("NoSuchConversation"): the names are defined once.

Exit 0 when all hold, else 1 with one line per problem. `make check` runs
it (tests/local.mk)."""
import argparse
import os
import re
import sys

TOP = os.path.realpath(os.environ.get("KENNEL_SRCDIR") or os.path.join(os.path.dirname(__file__), ".."))
ROW = re.compile(r'^\s*\[GW_E_\w+\]\s*=\s*\{"(\w+)",\s*(\d+),', re.M)
NAME = re.compile(r"`([A-Z][A-Za-z]+)`")


def table_rows(path):
    with open(path, encoding="utf-8") as f:
        rows = ROW.findall(f.read())
    if not rows:
        sys.exit(f"error_table: no row found in {path}")
    return [(name, int(status)) for name, status in rows]


def doc_tables(path):
    """Each markdown table of the doc: (its section heading, header cells, rows of cells)."""
    tables, heading, current = [], None, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                heading = line.lstrip("#").strip()
            if line.startswith("|"):
                cells = [c.strip() for c in line.strip("|").split("|")]
                if current is None:
                    current = (heading, cells, [])
                    tables.append(current)
                elif not all(set(c) <= set("-: ") for c in cells):
                    current[2].append(cells)
            else:
                current = None
    return tables


def check(table_path, doc_path):
    problems = []
    rows = table_rows(table_path)
    names = [n for n, _ in rows]
    for n in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"{table_path}: {n} is defined more than once")
    table = dict(rows)

    tables = doc_tables(doc_path)
    index = [t for t in tables if t[0].endswith("Error names")]
    if len(index) != 1:
        return problems + [f'{doc_path}: no single table under a heading "Error names"']
    listed = {}
    for cells in index[0][2]:
        found = NAME.findall(cells[0])
        if len(found) != 1:
            problems.append(f"{doc_path}: Error names: a row without one ename: {cells}")
            continue
        status = cells[1]
        listed[found[0]] = int(status) if status.isdigit() else 0

    for n, status in table.items():
        if n not in listed:
            problems.append(f"{n}: in gateway/gw_error.c, not in {doc_path}'s Error names")
        elif listed[n] != status:
            problems.append(f"{n}: HTTP {status or '—'} in gateway/gw_error.c, {listed[n] or '—'} in {doc_path}")
    for n in listed:
        if n not in table:
            problems.append(f"{n}: in {doc_path}'s Error names, not in gateway/gw_error.c")

    for heading, header, body in tables:
        if header[0] != "ename":
            continue
        for cells in body:
            for n in NAME.findall(cells[0]):
                if n not in listed:
                    problems.append(f"{n}: in {doc_path}'s ename table under \"{heading}\", not in its Error names")

    literal = re.compile(r'(?<![\w\\])"(' + "|".join(sorted(table)) + r')"')
    gateway = os.path.join(TOP, "gateway")
    for base, _, files in os.walk(gateway):
        for f in sorted(files):
            path = os.path.join(base, f)
            if not f.endswith((".c", ".h")) or path == os.path.join(gateway, "gw_error.c") \
                    or os.path.samefile(path, table_path):
                continue
            with open(path, encoding="utf-8", errors="replace") as src:
                for number, line in enumerate(src, 1):
                    for n in literal.findall(line.split("//")[0]):
                        if not line.lstrip().startswith(("/*", "*")):
                            problems.append(f"{os.path.relpath(path, TOP)}:{number}: the literal \"{n}\": "
                                            f"use gw_error_name (gw_error.h)")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", default=os.path.join(TOP, "gateway", "gw_error.c"))
    parser.add_argument("--doc", default=os.path.join(TOP, "docs", "PROTOCOL.md"))
    args = parser.parse_args()
    problems = check(args.table, args.doc)
    for p in problems:
        print("error_table:", p)
    print(f"error_table: {len(table_rows(args.table))} names, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
