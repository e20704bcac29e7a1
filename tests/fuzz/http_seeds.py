"""The seeds of gw_http_fuzz.c (corpus-http/), written by name: each seed
is a flags byte and steps ("M PATH[?QUERY]" and a body, "\\n==\\n" between),
in the target's input format. Run:
    /usr/bin/python3 tests/fuzz/http_seeds.py tests/fuzz/corpus-http"""
import base64, json, os, sys

QUOTA, OPEN_A, START_FAILS, NEW_FAILS, RAW = 1, 2, 4, 8, 16


def step(line, body=b""):
    return (line if isinstance(line, bytes) else line.encode()) + b"\n" + (body if isinstance(body, bytes) else json.dumps(body).encode())


def seed(name, flags, *steps):
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(bytes([flags]) + b"\n==\n".join(steps))


A = OPEN_A
C = "/api/contents/a"
nb = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
# what a person's front end and an agent ask
seed("api-and-specs", 0, step("G /api"), step("G /api/kernelspecs"), step("G /api/kernelspecs/python3"),
     step("G /api/kernelspecs/nope"), step("P /api"), step("G /nope"))
seed("kernels", 0, step("P /api/kernels", {"name": "python3"}), step("G /api/kernels"),
     step("P /api/kernels", {"kennel": {"conversation_id": "b", "policy": {"pids": 10}}}), step("G /api/kernels/b"),
     step("P /api/kernels/b/interrupt"), step("P /api/kernels/b/restart"), step("D /api/kernels/b"),
     step("G /api/kernels/b"))
seed("kernels-bad-bodies", 0, step("P /api/kernels", b"[1]"), step("P /api/kernels", {"name": 5}),
     step("P /api/kernels", {"env": {"KERNEL_X": 1}}), step("P /api/kernels", {"kennel": {"policy": {"pids": 1e9}}}),
     step("P /api/kernels", {"kennel": {"conversation_id": "../x"}}), step("P /api/kernels", {"path": 5}))
seed("kernels-start-fails", START_FAILS, step("P /api/kernels"), step("P /api/sessions", {"path": "a", "type": "notebook"}))
seed("kernels-new-fails", NEW_FAILS, step("P /api/kernels"), step("G /api/kernels"))
seed("sessions", A, step("P /api/sessions", {"path": "x.ipynb", "type": "notebook", "name": "x", "kernel": {"id": "a"}}),
     step("G /api/sessions"), step("P /api/sessions", {"path": "y", "type": "console", "kernel": {"name": "python3"}}),
     step("G /api/sessions"), step("C a"), step("G /api/sessions"))
seed("sessions-bad-bodies", A, step("P /api/sessions", {"path": 5, "kernel": {"id": "a"}}),
     step("P /api/sessions", {"path": "p" * 5000, "type": "notebook", "kernel": {"id": "a"}}),
     step("P /api/sessions", {"type": "notebook", "kernel": {"id": "a"}}),
     step("P /api/sessions", {"path": "p", "type": ["notebook"], "kernel": {"id": "a"}}),
     step("P /api/sessions", {"path": "p", "type": "notebook", "kernel": "a"}),
     step("P /api/sessions", {"notebook": {"path": "old.ipynb"}, "kernel": {"id": "a"}}), step("G /api/sessions"))
# the Contents API on a workspace a hostile kernel filled
seed("contents-get", A, step(f"G {C}"), step(f"G {C}/a"), step(f"G {C}/a/f"), step(f"G {C}/c.txt?format=base64"),
     step(f"G {C}/c.txt?content=0"), step(f"G {C}/c.txt?type=directory"), step(f"G {C}/a?type=file"),
     step(f"G {C}/c.txt?type=notebook"), step(f"G {C}/c.txt?format=text&type=file"), step(f"G {C}/missing"))
seed("contents-get-planted", A, step(f"G {C}/ln_dir"), step(f"G {C}/ln_file"), step(f"G {C}/ln_rel"),
     step(f"G {C}/ln_sec"), step(f"G {C}/ln_in/f"), step(f"G {C}/hl"), step(f"G {C}/fifo"), step(f"G {C}/sock"),
     step(f"G {C}/locked/f"), step(f"G {C}/ln_dir/canary"))
seed("contents-paths", A, step(f"G {C}/../outside"), step(f"G {C}/a/../../x"), step(f"G {C}//a//f"),
     step(f"G {C}/%2e%2e/outside"), step(f"G {C}/a%00b"), step(f"G /api/contents/"), step(f"G /api/contents"),
     step("G /api/contents/nope/x"), step(f"G {C}/" + "d/" * 16 + "f"))
seed("contents-not-utf8", A, step(f"G {C}/%FF"), step(f"G {C}/a/%C3"), step(f"U {C}/%FE", {"type": "file", "content": "x"}),
     step(f"A {C}/c.txt", {"path": "x"}), step(f"G /api/kernels/%FF"), step("G /api/sessions/%FF"))
seed("files-not-utf8", A, step("U /files/a/%FD", b"zz"), step("G /files/a/%FF"), step("U /files/a/ok%ED%A0%80", b"z"))
seed("contents-put", A, step(f"U {C}/n.txt", {"type": "file", "format": "text", "content": "hello"}),
     step(f"U {C}/b.bin", {"type": "file", "format": "base64", "content": base64.b64encode(bytes(range(256))).decode()}),
     step(f"U {C}/d", {"type": "directory"}), step(f"U {C}/d/x.ipynb", {"type": "notebook", "content": nb}),
     step(f"G {C}/d/x.ipynb"), step(f"G {C}/b.bin"), step(f"G {C}/d"))
seed("contents-put-planted", A, step(f"U {C}/ln_file", {"type": "file", "content": "x"}),
     step(f"U {C}/ln_dir/x", {"type": "file", "content": "x"}), step(f"U {C}/hl", {"type": "file", "content": "x"}),
     step(f"U {C}/fifo", {"type": "file", "content": "x"}), step(f"U {C}/ln_dir", {"type": "directory"}),
     step(f"U {C}/locked/x", {"type": "file", "content": "x"}))
seed("contents-put-bad", A, step(f"U {C}/x", b"{"), step(f"U {C}/x", {"type": "link"}),
     step(f"U {C}/x", {"type": "file", "format": "base64", "content": "!!"}), step(f"U {C}/x", {"type": "file"}),
     step(f"U {C}/x", {"type": "file", "content": "a", "chunk": "1"}), step(f"U {C}/a", {"type": "file", "content": "x"}),
     step(f"U {C}/x.ipynb", {"type": "notebook", "content": "not an object"}))
seed("contents-chunks", A, step(f"U {C}/ch", {"type": "file", "format": "text", "chunk": 1, "content": "ab"}),
     step(f"U {C}/ch", {"type": "file", "format": "text", "chunk": 2, "content": "cd"}),
     step(f"U {C}/ch", {"type": "file", "format": "text", "chunk": -1, "content": "ef"}), step(f"G {C}/ch"),
     step(f"U {C}/new", {"type": "file", "format": "text", "chunk": 2, "content": "x"}))
seed("contents-delete", A, step(f"D {C}/c.txt"), step(f"D {C}/a"), step(f"D {C}/ln_dir"), step(f"D {C}/fifo"),
     step(f"D {C}"), step(f"D {C}/ln_in/f"), step(f"G {C}"))
seed("contents-rename", A, step(f"A {C}/c.txt", {"path": "a/c.txt"}), step(f"A {C}/a", {"path": "a/b"}),
     step(f"A {C}/ln_file", {"path": "x"}), step(f"A {C}/a", {"path": "ln_dir/a"}), step(f"A {C}/a", {"path": 5}),
     step(f"A {C}/a", {"path": "../x"}), step(f"A {C}/a/c.txt", {"path": "c.txt"}), step(f"G {C}"))
seed("contents-post", A, step(f"P {C}"), step(f"P {C}", {"type": "notebook"}), step(f"P {C}", {"type": "directory"}),
     step(f"P {C}/a", {"type": "file", "ext": ".py"}), step(f"P {C}", {"copy_from": "c.txt"}),
     step(f"P {C}", {"copy_from": "c.txt"}), step(f"P {C}", {"copy_from": "ln_file"}), step(f"P {C}", {"copy_from": "a"}),
     step(f"P {C}/c.txt"), step(f"P {C}/missing"), step(f"P {C}/ln_dir", {"type": "file"}), step(f"G {C}"))
seed("checkpoints", A, step(f"P {C}/c.txt/checkpoints"), step(f"G {C}/c.txt/checkpoints"),
     step(f"U {C}/c.txt", {"type": "file", "content": "changed"}), step(f"P {C}/c.txt/checkpoints/checkpoint"),
     step(f"G {C}/c.txt"), step(f"D {C}/c.txt/checkpoints/checkpoint"), step(f"P {C}/c.txt/checkpoints/checkpoint"),
     step(f"D {C}/c.txt/checkpoints/nope"), step(f"G {C}/a/checkpoints"), step(f"A {C}/c.txt/checkpoints"))
seed("checkpoints-planted", A, step("K0 .ipynb_checkpoints"), step(f"P {C}/c.txt/checkpoints"),
     step(f"G {C}/c.txt/checkpoints"), step("C a"), step("N a"), step("K1 a/.ipynb_checkpoints"),
     step(f"P {C}/a/f/checkpoints"))
seed("files-get", A, step("G /files/a/c.txt"), step("G /files/a/a/f"), step("G /files/a/ln_file"),
     step("G /files/a/fifo"), step("G /files/a/hl"), step("G /files/a/a"), step("G /files/a"), step("G /files"),
     step("D /files/a/c.txt"))
seed("files-put", A, step("U /files/a/up", b"0123456789" * 50), step("G /files/a/up"), step("U /files/a/up", b""),
     step("U /files/a/ln_file", b"x"), step("U /files/a/ln_dir/x", b"x"), step("U /files/a/hl", b"x"),
     step("U /files/a/a", b"x"), step("U /files/nope/x", b"x"))
seed("files-put-quota", QUOTA | A, step("U /files/a/big", b"z" * 70000), step("G /files/a/big"),
     step(f"U {C}/big2", {"type": "file", "format": "base64", "content": base64.b64encode(b"y" * 70000).decode()}))
seed("files-put-closed-midway", A, step("U! /files/a/up", b"0123456789" * 100), step("N a"),
     step("G /files/a/up"), step("U! /api/contents/a/x", {"type": "file", "content": "x"}))
seed("plant-then-read", A, step("K0 n"), step(f"G {C}/n"), step("K5 c.txt"), step(f"G {C}/c.txt"),
     step("G /files/a/c.txt"), step("K3 p"), step("G /files/a/p"), step("K2 h"), step("G /files/a/h"))
seed("raw-bytes", A | RAW, step(f"G {C}/%FF"), step(f"G {C}/".encode() + b"\xff"), step(b"U /files/a/\xfe"),
     step("G /api/contents/a?type=%ZZ"))
seed("methods", A, step(f"H {C}/c.txt"), step(f"X {C}/c.txt"), step("X /api/kernels"), step("H /api"),
     step("A /api/sessions"), step("D /api/kernelspecs"))
