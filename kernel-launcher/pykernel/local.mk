# rules for kernel-launcher/pykernel/ (see its README.md)
#
# libpykernel.la: the built-in Python kernel, linked into kennel-launch.
# kernel.py is compiled into the library as byte arrays generated at build
# time (the configured Python compiles, od + sed make C of it; VPATH and
# distcheck safe: the header is written in the build tree).
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
EXTRA_DIST += kernel-launcher/pykernel/kernel.py kernel-launcher/pykernel/README.md
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

# Two arrays: the source, and the bytecode compiled by the very interpreter
# that is embedded (magic number + marshal), which saves ~50 ms of start-up;
# pykernel_python.c falls back to the source if the magic number differs.
PYKERNEL_COMPILE = import importlib.util, marshal, sys; \
	code = compile(open(sys.argv[1], "rb").read(), "<kennel>", "exec", dont_inherit=True); \
	sys.stdout.buffer.write(importlib.util.MAGIC_NUMBER + marshal.dumps(code))
PYKERNEL_C_BYTES = sed -e 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'
kernel-launcher/pykernel/kernel_py.h: $(top_srcdir)/kernel-launcher/pykernel/kernel.py
	$(AM_V_GEN)$(MKDIR_P) kernel-launcher/pykernel && \
	$(PYTHON_BIN) -I -c '$(PYKERNEL_COMPILE)' $(top_srcdir)/kernel-launcher/pykernel/kernel.py > $@.pyc && { \
	  echo '/* generated from kernel.py by kernel-launcher/pykernel/local.mk */'; \
	  echo 'static const unsigned char pykernel_kernel_py[] = {'; \
	  od -An -v -tx1 $(top_srcdir)/kernel-launcher/pykernel/kernel.py | $(PYKERNEL_C_BYTES); \
	  echo '0x00 };'; \
	  echo 'static const unsigned char pykernel_kernel_pyc[] = {'; \
	  od -An -v -tx1 $@.pyc | $(PYKERNEL_C_BYTES); \
	  echo '0x00 };'; } > $@.tmp && rm -f $@.pyc && mv $@.tmp $@
# BUILT_SOURCES belongs to the top Makefile.am: name the users instead
$(kernel_launcher_pykernel_libpykernel_la_OBJECTS): kernel-launcher/pykernel/kernel_py.h

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
