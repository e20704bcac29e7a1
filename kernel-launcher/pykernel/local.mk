# rules for kernel-launcher/pykernel/ (see its README.md)
#
# libpykernel.la: the built-in Python kernel, linked into kennel-launch.
# kernel.py is compiled into the library as a byte array generated at build
# time (od + sed: no Python needed to build, works in VPATH and distcheck).
noinst_LTLIBRARIES += kernel-launcher/pykernel/libpykernel.la
kernel_launcher_pykernel_libpykernel_la_SOURCES = \
	kernel-launcher/pykernel/pykernel.h \
	kernel-launcher/pykernel/pykernel_internal.h \
	kernel-launcher/pykernel/pykernel.c \
	kernel-launcher/pykernel/pykernel_log.c \
	kernel-launcher/pykernel/pykernel_utf8.c \
	kernel-launcher/pykernel/pykernel_iopub.c \
	kernel-launcher/pykernel/pykernel_output.c \
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
EXTRA_DIST += kernel-launcher/pykernel/kernel.py kernel-launcher/pykernel/README.md \
	tests/kernel/test_c_channels.py
CLEANFILES += kernel-launcher/pykernel/kernel_py.h

kernel-launcher/pykernel/kernel_py.h: $(top_srcdir)/kernel-launcher/pykernel/kernel.py
	$(AM_V_GEN)$(MKDIR_P) kernel-launcher/pykernel && { \
	  echo '/* generated from kernel.py by kernel-launcher/pykernel/local.mk */'; \
	  echo 'static const unsigned char pykernel_kernel_py[] = {'; \
	  od -An -v -tx1 $(top_srcdir)/kernel-launcher/pykernel/kernel.py | sed -e 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00 };'; } > $@.tmp && mv $@.tmp $@
# BUILT_SOURCES belongs to the top Makefile.am: name the users instead
$(kernel_launcher_pykernel_libpykernel_la_OBJECTS): kernel-launcher/pykernel/kernel_py.h

# the C self-tests (utf8, iopub, output) under the sanitizers
check_PROGRAMS += tests/unit/pykernel_test
TESTS += tests/unit/pykernel_test
tests_unit_pykernel_test_SOURCES = tests/unit/pykernel_test.c
tests_unit_pykernel_test_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernel-launcher/pykernel
tests_unit_pykernel_test_CFLAGS = $(AM_CFLAGS) $(PYTHON_CFLAGS)
tests_unit_pykernel_test_LDADD = kernel-launcher/pykernel/libpykernel.la
