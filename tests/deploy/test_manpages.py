"""The man pages kennel(1), kennel-launch(1) and kennel.conf(5): no warning
from man, every option of --help and every config key in them, and the
defaults and maxima kennel.conf(5) states are the ones a daemon started
without a config reports."""
import os
import re
import subprocess

import pytest

from kennel_testlib import BUILDDIR, SRCDIR, built
from servicelib import ServiceGateway

PAGES = {"kennel.1": SRCDIR / "gateway" / "kennel.1",
         "kennel.conf.5": SRCDIR / "gateway" / "kennel.conf.5",
         "kennel-launch.1": SRCDIR / "kernel-launcher" / "kennel-launch.1"}


def rendered(page):
    """The page as man shows it, in plain text on one long line per paragraph."""
    done = subprocess.run(["man", "-E", "UTF-8", "-l", str(PAGES[page])], capture_output=True, text=True,
                          env=dict(os.environ, MANWIDTH="250", MAN_KEEP_FORMATTING="", MANPAGER="cat",
                                   PAGER="cat"))
    assert done.returncode == 0, done.stderr
    # hyphenation and the non-breaking hyphen groff writes for \-
    return done.stdout.replace("\u2010", "-").replace("\u2011", "-")


@pytest.mark.parametrize("page", sorted(PAGES))
def test_man_warns_nothing(page):
    done = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", str(PAGES[page])],
                          capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stderr == "", done.stderr


def help_text(program):
    done = subprocess.run([str(built(program)), "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def options(text):
    """Long and short options in a usage text."""
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][A-Za-z-]*)", text)) - {"--"}


@pytest.mark.parametrize("program,page", [("gateway/kennel", "kennel.1"),
                                          ("kernel-launcher/kennel-launch", "kennel-launch.1")])
def test_every_help_option_is_in_the_man_page(program, page):
    usage = help_text(program)
    found = options(usage) | {"--help"}
    text = rendered(page)
    missing = sorted(o for o in found if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text))
    assert not missing, f"{program} --help has {missing}, {page} does not"
    if program.endswith("kennel"):
        commands = set(re.findall(r"kennel ([a-z][a-z-]+)", usage))
        assert commands >= {"serve", "kernel", "info", "selftest", "install-kernelspec"}, commands
        missing = sorted(c for c in commands if not re.search(rf"^ {{7}}{re.escape(c)}\b", text, re.M))
        assert not missing, f"commands without a paragraph in kennel(1): {missing}"


def config_keys():
    """The top-level keys gw_config.c accepts, and the policy fields."""
    source = (SRCDIR / "gateway" / "gw_config.c").read_text()
    known = re.search(r"static const char \*known\[\] = \{(.*?)\};", source, re.S).group(1)
    keys = set(re.findall(r'"([a-z_]+)"', known))
    fields = set(re.findall(r'\{"([a-z_]+)", F_(?:SECONDS|COUNT)', source))
    return keys, fields | {"network", "builtins", "imports", "env"}


def entries(page_text):
    """{key: its paragraph} of the .TP/.B entries of a roff source."""
    out = {}
    for block in re.split(r"^\.TP\n", page_text, flags=re.M)[1:]:
        head = re.match(r"\.B ([a-z_]+)\n", block)
        if head:
            out[head.group(1)] = block.split("\n.SH", 1)[0]
    return out


def test_every_config_key_is_in_kennel_conf_5():
    keys, fields = config_keys()
    assert "max_conversations" in keys and "memory_bytes" in fields
    documented = entries(PAGES["kennel.conf.5"].read_text())
    missing = sorted((keys | fields) - set(documented))
    assert not missing, f"kennel.conf(5) lacks {missing}"


def stated(entry, word):
    """The number after "Default"/"maximum" in an entry (None: not said)."""
    found = re.search(rf"{word} \"?([0-9][0-9.e+]*|\w+)\"?", entry.replace("\n", " "))
    if not found:
        return None
    value = found.group(1)
    try:
        return float(value)
    except ValueError:
        return value


def test_defaults_and_maxima_are_the_daemons(tmp_path):
    """A daemon with an empty config reports its limits in gateway_info: each
    default and maximum kennel.conf(5) states is that number."""
    documented = entries(PAGES["kennel.conf.5"].read_text())
    gw = ServiceGateway({}, config={})
    try:
        info = gw.control.request("gateway_info_request")["content"]
    finally:
        rc, _ = gw.stop()
    assert rc == 0
    limits = info["limits"]
    checked = 0
    for key, entry in documented.items():
        for word, table in (("Default", "defaults"), ("maximum", "maxima")):
            value = stated(entry, word)
            if value is None or key not in limits[table]:
                continue
            actual = limits[table][key]
            assert value == (actual if isinstance(value, str) else float(actual)), (key, word, value, actual)
            checked += 1
        if key in ("max_conversations", "queue_limit", "max_message_bytes", "max_tool_calls"):
            assert stated(entry, "Default") == float(limits[key]), (key, limits[key])
            checked += 1
    assert stated(documented["warm_pool"], "Default") == float(info["warm_pool"]["size"])
    assert checked >= 20, checked


# ---- an installed page stands on its own ------------------------------------------

# a relative file path a page names (docs/PROTOCOL.md); one starting with a
# placeholder in capitals (STATE/gateway.json) names no file of kennel's
NAMED_FILE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.(?:md|cfg|lua|c|h|py|json|in|mk|txt|conf))(?![\w/-])")


@pytest.fixture(scope="module")
def installed_docs(tmp_path_factory):
    """The documentation directory of `make install DESTDIR=`."""
    destdir = tmp_path_factory.mktemp("man-docs")
    done = subprocess.run(["make", "-C", str(BUILDDIR), "install", f"DESTDIR={destdir}"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    docdir = subprocess.run(["make", "-s", "-C", str(BUILDDIR), "--no-print-directory", "-f", "Makefile", "-f", "-",
                             "print-docdir"], input="print-docdir:\n\t@echo $(docdir)\n", capture_output=True,
                            text=True).stdout.strip()
    assert docdir.endswith("/share/doc/kennel"), docdir
    return destdir / docdir.lstrip("/")


@pytest.mark.parametrize("page", sorted(PAGES))
def test_a_page_names_only_files_make_install_installs(page, installed_docs):
    """A man page on a machine without the source tree: each file it sends
    the reader to is in the installed documentation, and it says where."""
    text = rendered(page)
    assert not re.search(r"\b(in|of) the source tree\b", text), f"{page} sends readers to the source tree"
    named = {p for p in NAMED_FILE.findall(text) if not re.match(r"[A-Z]+/", p)}
    missing = sorted(p for p in named if not (installed_docs / p).is_file())
    assert not missing, f"{page} names {missing}, which make install does not put in {installed_docs}"
    if named:
        assert "PREFIX/share/doc/kennel/" in text, f"{page} names {sorted(named)} without saying where they are"


def test_kennel_conf_5_says_sighup_reads_it_again():
    """kennel serve reads its config again at SIGHUP (kennel(1), SIGNALS):
    the page says so where it says when the file is read."""
    text = rendered("kennel.conf.5")
    description = text.split("DESCRIPTION", 1)[1].split("\nPOLICY", 1)[0]
    assert "SIGHUP" in description and "reload_needs_restart" in description, description[:600]
    assert not re.search(r"read (only )?once", text), "kennel.conf(5) says the file is read once"
