# rules for kernel-launcher/ (see kernel-launcher/README.md)
include kernel-launcher/pykernel/local.mk

# kennel-launch: the small front the gateway execs per kernel (the zygote's
# proxy, no CPython); it execs kennel-launch-full for the rest. That one is
# internal, so it installs to $(pkglibexecdir); in the build tree it sits
# next to kennel-launch (front.c finds it either way).
bin_PROGRAMS += kernel-launcher/kennel-launch
pkglibexec_PROGRAMS += kernel-launcher/kennel-launch-full
kernel_launcher_kennel_launch_SOURCES = \
	kernel-launcher/launch.h kernel-launcher/kennel_launch.h kernel-launcher/front.c kernel-launcher/spec.c kernel-launcher/status.c \
	kernel-launcher/zygote.h kernel-launcher/zygote_client.c kernel-launcher/zygote_wire.c
kernel_launcher_kennel_launch_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKENNEL_BINDIR='"$(bindir)"' -DKENNEL_PKGLIBEXECDIR='"$(pkglibexecdir)"'
kernel_launcher_kennel_launch_LDADD = confine/libconfine.la $(JANSSON_LIBS)
# useless without the full launcher: building one builds both
EXTRA_kernel_launcher_kennel_launch_DEPENDENCIES = kernel-launcher/kennel-launch-full$(EXEEXT)

kernel_launcher_kennel_launch_full_SOURCES = \
	kernel-launcher/launch.h kernel-launcher/kennel_launch.h kernel-launcher/main.c kernel-launcher/run.c \
	kernel-launcher/spec.c kernel-launcher/status.c kernel-launcher/logpump.c kernel-launcher/waiter.c \
	kernel-launcher/zygote.h kernel-launcher/zygote.c kernel-launcher/zygote_client.c \
	kernel-launcher/zygote_wire.c kernel-launcher/zygote_python.c kernel-launcher/zygote_heap.c
kernel_launcher_kennel_launch_full_CFLAGS = $(AM_CFLAGS) $(PYTHON_CFLAGS)
kernel_launcher_kennel_launch_full_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernel-launcher/pykernel \
	-DKENNEL_LAUNCH_PYKERNEL
kernel_launcher_kennel_launch_full_LDADD = confine/libconfine.la kernel-launcher/pykernel/libpykernel.la \
	$(PYTHON_LIBS) $(JANSSON_LIBS)

# tests/security: a harness that simulates a host without user namespaces
check_PROGRAMS += tests/security/no_userns
tests_security_no_userns_SOURCES = tests/security/no_userns.c
tests_security_no_userns_CFLAGS = $(AM_CFLAGS) $(SECCOMP_CFLAGS)
tests_security_no_userns_LDADD = $(SECCOMP_LIBS)
EXTRA_DIST += kernel-launcher/README.md tests/security/sandboxlib.py tests/security/test_confine.py \
	tests/security/test_attacks.py tests/security/test_python_kernel.py \
	tests/security/test_zygote.py kernel-launcher/zygote_bench.py

# gateway tests of what the launcher carries (tests/local.mk runs them)
EXTRA_DIST += tests/gateway/test_utf8.py tests/gateway/test_death_cause.py tests/gateway/test_kernel_log.py

# kennel-launch(1) (tests/deploy checks it)
dist_man_MANS += kernel-launcher/kennel-launch.1
