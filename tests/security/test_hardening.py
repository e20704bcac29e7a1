"""The build's hardening, read from the built programs' ELF headers (what
checksec reports): PIE, full RELRO, a non-executable stack, the stack
protector and fortified libc calls in kennel, kennel-launch and
kennel-launch-full. configure keeps only the flags the toolchain takes
(autotools/m4/kennel_flags.m4); a flag it dropped shows here as a failure
that names the fact, with the flags configure chose."""
import re
import subprocess

import pytest

from sandboxlib import BUILDDIR, built

PROGRAMS = ["gateway/kennel", "kernel-launcher/kennel-launch", "kernel-launcher/kennel-launch-full"]


def readelf(path, *options):
    return subprocess.run(["readelf", "-W", *options, str(path)], check=True, capture_output=True,
                          text=True).stdout


def configured_flags():
    """The HARDEN_* and CFLAGS lines of the build's Makefile, for messages."""
    text = (BUILDDIR / "Makefile").read_text()
    return "; ".join(m.group(0) for m in re.finditer(r"^(HARDEN_\w+|CFLAGS) = .*$", text, re.M))


@pytest.fixture(scope="module", params=PROGRAMS, ids=[p.split("/")[-1] for p in PROGRAMS])
def elf(request):
    path = built(request.param)
    header = readelf(path, "-h")
    assert re.search(r"Class:\s+ELF64", header), f"{path} is not an ELF program (a libtool wrapper?)"
    return {"path": path, "header": header, "segments": readelf(path, "-l"),
            "dynamic": readelf(path, "-d"), "symbols": readelf(path, "--dyn-syms")}


def imported(elf, pattern):
    return sorted(set(re.findall(r"\bUND (" + pattern + r")\b", elf["symbols"])))


def test_position_independent(elf):
    # ET_DYN with the PIE flag: a shared object would be DYN too
    assert re.search(r"Type:\s+DYN", elf["header"]), f"{elf['path']}: not PIE; {configured_flags()}"
    assert re.search(r"FLAGS_1\).*\bPIE\b", elf["dynamic"]), f"{elf['path']}: no DF_1_PIE; {configured_flags()}"


def test_full_relro(elf):
    assert re.search(r"^\s+GNU_RELRO\b", elf["segments"], re.M), \
        f"{elf['path']}: no GNU_RELRO segment; {configured_flags()}"
    bind_now = re.search(r"\(BIND_NOW\)|\(FLAGS\).*\bBIND_NOW\b|\(FLAGS_1\).*\bNOW\b", elf["dynamic"])
    assert bind_now, f"{elf['path']}: lazy binding (no BIND_NOW): partial RELRO only; {configured_flags()}"


def test_stack_not_executable(elf):
    stack = re.search(r"^\s+GNU_STACK\s.*\s(R?W?E?)\s+0x\w+$", elf["segments"], re.M)
    assert stack and "E" not in stack.group(1), f"{elf['path']}: executable or unmarked stack"


def test_stack_protector(elf):
    assert imported(elf, r"__stack_chk_fail(@\S+)?"), \
        f"{elf['path']}: no __stack_chk_fail: built without a stack protector; {configured_flags()}"


def test_fortified_libc_calls(elf):
    # _FORTIFY_SOURCE=2 turns fprintf, snprintf, memcpy... into their
    # checked __*_chk forms wherever the size is known or a format is used.
    assert imported(elf, r"__\w+_chk(@\S+)?"), \
        f"{elf['path']}: no __*_chk import: built without _FORTIFY_SOURCE; {configured_flags()}"
