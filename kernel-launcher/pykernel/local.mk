# rules for kernel-launcher/pykernel/ (see its README.md)
#
# libpykernel.la: the built-in Python kernel, linked into kennel-launch.
# The kernel package (kernel/*.py) is compiled into the library as byte
# arrays generated at build time (the configured Python compiles, od + sed
# make C of it; VPATH and distcheck safe: the header is written in the build
# tree).
noinst_LTLIBRARIES += kernel-launcher/pykernel/libpykernel.la
kernel_launcher_pykernel_libpykernel_la_SOURCES = \
	kernel-launcher/pykernel/pykernel.h \
	kernel-launcher/pykernel/pykernel_internal.h \
	kernel-launcher/pykernel/pykernel.c \
	kernel-launcher/pykernel/pykernel_log.c \
	kernel-launcher/pykernel/pykernel_utf8.c \
	kernel-launcher/pykernel/pykernel_iopub.c \
	kernel-launcher/pykernel/pykernel_output.c \
	kernel-launcher/pykernel/pykernel_thread.c \
	kernel-launcher/pykernel/pykernel_beat.c \
	kernel-launcher/pykernel/pykernel_control.c \
	kernel-launcher/pykernel/pykernel_python.c \
	kernel-launcher/pykernel/pykernel_shell.c
nodist_kernel_launcher_pykernel_libpykernel_la_SOURCES = kernel-launcher/pykernel/kernel_py.h
kernel_launcher_pykernel_libpykernel_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_builddir)/kernel-launcher/pykernel -I$(top_srcdir)/kernel-launcher/pykernel
kernel_launcher_pykernel_libpykernel_la_CFLAGS = $(AM_CFLAGS) $(PYTHON_CFLAGS)
kernel_launcher_pykernel_libpykernel_la_LIBADD = wire/libwire.la \
	$(PYTHON_LIBS) $(CZMQ_LIBS) $(ZMQ_LIBS) $(JANSSON_LIBS) $(SODIUM_LIBS) -lpthread
EXTRA_DIST += $(PYKERNEL_PY) kernel-launcher/pykernel/kernel/README.md kernel-launcher/pykernel/README.md
# the kernel's pytest folder (tests/local.mk runs it)
EXTRA_DIST += tests/kernel/conftest.py tests/kernel/kernelclient.py \
	tests/kernel/test_builtins.py tests/kernel/test_c_channels.py \
	tests/kernel/test_conformance.py tests/kernel/test_execute.py \
	tests/kernel/test_interrupt.py tests/kernel/test_introspection.py \
	tests/kernel/test_output.py tests/kernel/test_profiles.py tests/kernel/test_rich.py \
	tests/kernel/test_stdin.py tests/kernel/test_utf8.py tests/kernel/utf8_cell.py \
	tests/kernel/test_tool_rule.py
CLEANFILES += kernel-launcher/pykernel/kernel_py.h kernel-launcher/pykernel/kernel_py.h.pyc \
	kernel-launcher/pykernel/kernel_py.h.tmp

# The kernel package's modules, in the order they load: each imports only
# from those before it (kernel/README.md); kernel.py, the C side's entry
# points, last.
PYKERNEL_PY = \
	kernel-launcher/pykernel/kernel/base.py \
	kernel-launcher/pykernel/kernel/streams.py \
	kernel-launcher/pykernel/kernel/tools.py \
	kernel-launcher/pykernel/kernel/display.py \
	kernel-launcher/pykernel/kernel/network.py \
	kernel-launcher/pykernel/kernel/policy.py \
	kernel-launcher/pykernel/kernel/history.py \
	kernel-launcher/pykernel/kernel/tracebacks.py \
	kernel-launcher/pykernel/kernel/introspect.py \
	kernel-launcher/pykernel/kernel/execute.py \
	kernel-launcher/pykernel/kernel/escapes.py \
	kernel-launcher/pykernel/kernel/comms.py \
	kernel-launcher/pykernel/kernel/ipython.py \
	kernel-launcher/pykernel/kernel/kernel.py
# Three parts: the sources, one table naming them in that order, and the
# bytecode of all of them (a tuple of code objects) compiled by the very
# interpreter that is embedded (magic number + marshal), which saves ~50 ms
# of start-up; pykernel_python.c falls back to the sources if the magic
# number differs.
PYKERNEL_COMPILE = import importlib.util, marshal, sys; \
	codes = tuple(compile(open(p, "rb").read(), "<kennel>", "exec", dont_inherit=True) for p in sys.argv[1:]); \
	sys.stdout.buffer.write(importlib.util.MAGIC_NUMBER + marshal.dumps(codes))
PYKERNEL_C_BYTES = sed -e 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'
kernel-launcher/pykernel/kernel_py.h: $(PYKERNEL_PY)
	$(AM_V_GEN)$(MKDIR_P) kernel-launcher/pykernel && \
	$(PYTHON_BIN) -I -c '$(PYKERNEL_COMPILE)' `for f in $(PYKERNEL_PY); do echo $(top_srcdir)/$$f; done` > $@.pyc && { \
	  echo '/* generated from kernel-launcher/pykernel/kernel/ by its local.mk */'; \
	  for f in $(PYKERNEL_PY); do \
	    echo "static const unsigned char pykernel_kernel_py_`basename $$f .py`[] = {"; \
	    od -An -v -tx1 $(top_srcdir)/$$f | $(PYKERNEL_C_BYTES); \
	    echo '0x00 };'; \
	  done; \
	  echo 'static const struct { const char *name; const unsigned char *source; } pykernel_kernel_modules[] = {'; \
	  for f in $(PYKERNEL_PY); do \
	    echo "    { \"`basename $$f .py`\", pykernel_kernel_py_`basename $$f .py` },"; \
	  done; \
	  echo '};'; \
	  echo 'static const unsigned char pykernel_kernel_pyc[] = {'; \
	  od -An -v -tx1 $@.pyc | $(PYKERNEL_C_BYTES); \
	  echo '0x00 };'; } > $@.tmp && rm -f $@.pyc && mv $@.tmp $@
# BUILT_SOURCES belongs to the top Makefile.am: name the users instead
$(kernel_launcher_pykernel_libpykernel_la_OBJECTS): kernel-launcher/pykernel/kernel_py.h

# the package's imports one-way in that order, no module over 800 lines
TESTS += tests/pykernel_modules.py
EXTRA_DIST += tests/pykernel_modules.py

# the C self-tests (utf8, iopub, output, beat) under the sanitizers
check_PROGRAMS += tests/unit/pykernel_test
TESTS += tests/unit/pykernel_test
tests_unit_pykernel_test_SOURCES = tests/unit/pykernel_test.c
tests_unit_pykernel_test_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernel-launcher/pykernel
tests_unit_pykernel_test_CFLAGS = $(AM_CFLAGS) $(PYTHON_CFLAGS)
tests_unit_pykernel_test_LDADD = kernel-launcher/pykernel/libpykernel.la

# the fork-server path (pykernel_prepare + pykernel_fork), driven by
# tests/kernel/test_c_channels.py
check_PROGRAMS += tests/unit/pykernel_fork
tests_unit_pykernel_fork_SOURCES = tests/unit/pykernel_fork.c
tests_unit_pykernel_fork_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernel-launcher/pykernel
tests_unit_pykernel_fork_LDADD = kernel-launcher/pykernel/libpykernel.la
