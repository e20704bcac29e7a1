"""The seeds of gw_files_fuzz.c (corpus-files/), written by name: each
seed is a program of file calls and plants in the target's input format.
Run: /usr/bin/python3 tests/fuzz/files_seeds.py tests/fuzz/corpus-files"""
import os, sys
T = dict(a=0,b=1,c=2,f=3,dot=4,dd=5,empty=6,slash=7,nul=8,l255=9,l256=10,ln_dir=11,ln_file=12,ln_rel=13,ln_sec=14,ln_in=15,hl=16,fifo=17,sock=18,locked=19,deep=20,huge=21,canary=22,key=23)
OPS = dict(stat=0,list=1,get=2,put=3,mkdir=4,create=5,rename=6,copy=7,delete=8,plant=9,hold=10)
def P(*toks, raw=False):
    return bytes([(len(toks)-1) | (4 if raw else 0)] + [T[t] for t in toks])
def op(name, p, q=None, variant=0, offset=0, length=255):
    b = bytes([OPS[name] | (variant << 4)]) + p
    if q is not None: b += q
    return b + bytes([offset, length])
def seed(name, quota, *ops):
    open(os.path.join(sys.argv[1], name), 'wb').write(bytes([1 if quota else 0]) + b''.join(ops))
S = seed
S('stat-ln-dir', 0, op('stat', P('ln_dir')))
S('stat-through-ln-dir', 0, op('stat', P('ln_dir','ln_file')), op('stat', P('ln_dir','c')))
S('list-ln-dir', 0, op('list', P('ln_dir')), op('list', P('ln_sec')), op('list', P('empty')), op('list', P('a')))
S('list-ln-in', 0, op('list', P('ln_in')), op('stat', P('ln_in','f')))
S('get-ln-file', 0, op('get', P('ln_file')), op('get', P('ln_rel')), op('get', P('ln_dir','c')))
S('get-hardlink', 0, op('get', P('hl')), op('get', P('hl'), offset=4, length=7))
S('get-fifo-sock', 0, op('get', P('fifo')), op('get', P('sock')), op('stat', P('fifo')))
S('get-file', 0, op('get', P('c')), op('get', P('a','f'), offset=3, length=2), op('get', P('c'), variant=1, offset=1))
S('put-ln-file', 0, op('put', P('ln_file')), op('put', P('ln_rel')), op('put', P('ln_dir','b')))
S('put-through-ln-dir', 0, op('put', P('ln_dir','c')), op('put', P('ln_sec','key')), op('mkdir', P('ln_dir','b')))
S('put-hardlink', 0, op('put', P('hl')), op('put', P('hl'), variant=1))
S('put-fifo', 0, op('put', P('fifo')), op('put', P('sock')))
S('put-chunks', 0, op('put', P('b'), length=9), op('put', P('b'), variant=1, length=20), op('put', P('b'), variant=2, offset=3), op('get', P('b')))
S('put-locked', 0, op('put', P('locked','f')), op('list', P('locked')), op('put', P('locked','b')))
S('put-deep', 0, op('put', P('deep','f')), op('get', P('deep','f')), op('put', P('deep','l255')), op('put', P('deep','l256')))
S('path-dotdot', 0, op('stat', P('dd','ln_dir')), op('put', P('a','dd','dd')), op('stat', P('dot','a','dot','f')))
S('path-nul', 0, op('stat', P('c','nul')), op('put', P('a','nul','f')))
S('path-huge', 0, op('stat', P('huge','f')), op('put', P('huge','huge')))
S('path-slashes', 0, op('stat', P('slash','c')), op('get', P('a','slash','empty','f')), op('stat', P('a','empty','empty','f')))
S('raw-dotdot', 0, op('stat', P('dd','ln_dir', raw=True)), op('put', P('dd','a', raw=True)), op('get', P('a','dd','c', raw=True)), op('delete', P('a','dd', raw=True)))
S('raw-absolute', 0, op('stat', P('empty','a', raw=True)), op('put', P('slash','b', raw=True)), op('mkdir', P('empty','dd', raw=True)))
S('create', 0, op('create', P('b')), op('create', P('b')), op('create', P('a','b'), variant=1), op('create', P('ln_dir')), op('create', P('ln_dir','b')), op('create', P('fifo')))
S('rename', 0, op('rename', P('c'), P('b')), op('rename', P('b'), P('a','b')), op('rename', P('a'), P('a','f')), op('rename', P('a'), P('ln_dir')), op('rename', P('ln_file'), P('b')))
S('rename-escape', 0, op('rename', P('c'), P('ln_dir','c')), op('rename', P('ln_dir','canary'), P('b')), op('rename', P('hl'), P('b')), op('rename', P('a'), P('ln_sec','a')))
S('copy', 0, op('copy', P('c'), P('b')), op('copy', P('c'), P('b')), op('copy', P('c'), P('b'), variant=1), op('get', P('b')))
S('copy-escape', 0, op('copy', P('ln_file'), P('b')), op('copy', P('hl'), P('b')), op('copy', P('c'), P('ln_file'), variant=1), op('copy', P('c'), P('ln_dir','c')), op('copy', P('c'), P('hl'), variant=1))
S('delete', 0, op('delete', P('ln_dir')), op('delete', P('hl')), op('delete', P('fifo')), op('delete', P('a')), op('delete', P('empty')), op('delete', P('ln_sec','key')))
S('plant-swap', 0, op('put', P('b'), length=30), op('plant', P('b'), variant=5), op('get', P('b')), op('put', P('b')), op('delete', P('b')))
S('plant-dir-swap', 0, op('plant', P('a'), variant=5), op('get', P('a','f')), op('put', P('a','b')), op('list', P('a')))
S('plant-kinds', 0, *[op('plant', P('b') if k != 4 else P('a','b'), variant=k) for k in range(7)], op('get', P('b')), op('put', P('b')))
S('plant-inside-link', 0, op('plant', P('b'), variant=6), op('put', P('b','b')), op('get', P('b','f')), op('list', P('b')))
S('hold-swap', 0, op('hold', P('c')), op('get', P('c')), op('hold', P('a','f')))
S('quota-fill', 1, op('put', P('b'), variant=4, length=99), op('put', P('f'), variant=4, length=255), op('get', P('b')))
S('quota-chunks', 1, op('put', P('b'), variant=4, length=40), op('put', P('b'), variant=5, length=40), op('put', P('b'), variant=5, length=40))
S('quota-copy', 1, op('put', P('b'), variant=4, length=39), op('copy', P('b'), P('c')), op('copy', P('b'), P('f'), variant=1))
NAMES = ['a','b','c','f','canary','key','l255','fifo','sock','hl','ln_dir','ln_file','ln_rel','ln_sec','ln_in']
S('quota-inodes', 1, op('mkdir', P('b')), *[op('create', P(d, n), variant=i % 2) for d in ('a', 'b', 'locked') for i, n in enumerate(NAMES)])
S('quota-hardlink', 1, op('plant', P('b'), variant=2), op('get', P('b')), op('put', P('ln_rel')))
S('get-ln-sec-key', 0, op('get', P('ln_sec','key')), op('get', P('ln_dir','canary')), op('stat', P('ln_sec','key')))
# a finding: the same path was a success before any check, through a symlink too
S('rename-same-through-link', 0, op('rename', P('ln_dir','canary'), P('ln_dir','canary')), op('rename', P('ln_file'), P('ln_file')), op('rename', P('b'), P('b')), op('rename', P('c'), P('c')))
# a raw absolute path, made to start at the tree's base: refused as absolute
S('raw-leading-slash', 0, op('create', P('empty','b', raw=True)), op('mkdir', P('empty','l255', raw=True)), op('delete', P('empty','c', raw=True)), op('rename', P('empty','b', raw=True), P('empty','key', raw=True)))
