# rules for confine/ (see confine/README.md)
noinst_LTLIBRARIES += confine/libconfine.la
confine_libconfine_la_SOURCES = \
	confine/confine.h confine/confine_paths.h confine/private.h \
	confine/alloc.c confine/confine.c confine/msg.c confine/policy.c confine/report.c confine/userns.c \
	confine/mounts.c confine/pid.c confine/net.c confine/uts.c confine/ipc.c \
	confine/cgroup.c confine/rlimits.c confine/caps.c confine/seccomp.c \
	confine/landlock.c confine/env.c confine/fds.c confine/guard.c confine/selftest.c
confine_libconfine_la_CFLAGS = $(AM_CFLAGS) $(SECCOMP_CFLAGS) $(FUSE_CFLAGS)
confine_libconfine_la_LIBADD = $(SECCOMP_LIBS) $(FUSE_LIBS) $(JANSSON_LIBS) -lm

check_PROGRAMS += tests/unit/confine_test
TESTS += tests/unit/confine_test
tests_unit_confine_test_SOURCES = tests/unit/confine_test.c tests/unit/oom_check.h
tests_unit_confine_test_LDADD = confine/libconfine.la
EXTRA_DIST += confine/README.md
