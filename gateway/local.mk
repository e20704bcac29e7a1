# rules for gateway/ (see gateway/README.md)

# The gateway's headers: one per class or family (gateway/README.md).
GW_HEADER_FILES = \
	gateway/gw_capacity.h gateway/gw_config.h gateway/gw_control.h gateway/gw_conv.h gateway/gw_error.h \
	gateway/gw_curve.h gateway/gw_io.h gateway/gw_launch.h gateway/gw_log.h gateway/gw_meta.h \
	gateway/gw_peek.h gateway/gw_pool.h gateway/gw_proc.h gateway/gw_quota.h gateway/gw_reach.h gateway/gw_relay.h \
	gateway/gw_remove.h gateway/gw_schema.h gateway/gw_selftest.h gateway/gw_server.h gateway/gw_server_access.h \
	gateway/gw_slots.h gateway/gw_timer.h gateway/gw_tools.h gateway/gw_util.h gateway/gw_zmtp.h \
	gateway/gw_zygote.h gateway/gw_markup.h gateway/gw_sanitize.h gateway/gw_request.h

bin_PROGRAMS += gateway/kennel
gateway_kennel_SOURCES = \
	$(GW_HEADER_FILES) \
	gateway/main.c gateway/gw_log.c gateway/gw_config.c gateway/gw_error.c \
	gateway/gw_launch.c gateway/gw_relay.c gateway/gw_relay_private.h gateway/gw_relay_owner.h \
	gateway/gw_relay_msg.h gateway/gw_relay_msg.c gateway/gw_exec.h gateway/gw_exec.c gateway/gw_output.h \
	gateway/gw_output.c gateway/gw_reply.h gateway/gw_reply.c gateway/gw_calls.h gateway/gw_calls.c \
	gateway/gw_kernel_link.h gateway/gw_kernel_link.c gateway/gw_conv.c \
	gateway/gw_kernel.h gateway/gw_kernel.c gateway/gw_slots.c gateway/gw_server_private.h gateway/gw_server_access.c \
	gateway/gw_server.c gateway/gw_control.c gateway/gw_request.c gateway/gw_selftest.c \
	gateway/gw_fs.c gateway/gw_tools.c gateway/gw_schema.c gateway/gw_pool.c gateway/gw_capacity.c \
	gateway/gw_zygote.c gateway/gw_io.c gateway/gw_proc.c gateway/gw_peek.c gateway/gw_meta.c \
	gateway/gw_clock.c gateway/gw_text.c gateway/gw_curve.c gateway/gw_timer.c \
	gateway/gw_front.h gateway/gw_peers.h gateway/gw_peers.c gateway/gw_core.h gateway/gw_core.c \
	gateway/gw_zmq_front.h gateway/gw_zmq_front.c gateway/gw_quota.c \
	gateway/gw_answer.h gateway/gw_answer.c gateway/gw_linger.h gateway/gw_linger.c \
	gateway/gw_zmtp.c gateway/gw_zmtp_guard.c gateway/gw_remove.c gateway/gw_id.c \
	gateway/gw_files.h gateway/gw_files.c gateway/gw_base64.c gateway/gw_control_files.c \
	gateway/gw_ops.h gateway/gw_signal.c gateway/gw_drain.c gateway/gw_reload.c \
	gateway/gw_metrics.h gateway/gw_metrics.c gateway/gw_metrics_private.h gateway/gw_metrics_visit.c \
	gateway/gw_notebook.h gateway/gw_notebook.c gateway/gw_process.h gateway/gw_process.c gateway/gw_reaper.h gateway/gw_reaper.c gateway/gw_reach.c \
	gateway/gw_markup.c gateway/gw_sanitize.c
gateway_kennel_CPPFLAGS = $(AM_CPPFLAGS) -DPREFIX_DIR='"$(prefix)"' -DKENNEL_DATA_DIR='"$(pkgdatadir)"' $(XML2_CFLAGS)
gateway_kennel_LDADD = confine/libconfine.la $(WIRE_LIBS) $(XML2_LIBS) -lm

EXTRA_DIST += gateway/README.md \
	tests/gateway/conftest.py tests/gateway/gwtest.py tests/gateway/dev_launch.py \
	tests/gateway/test_control.py tests/gateway/test_conversation.py \
	tests/gateway/test_limits.py tests/gateway/test_stop_on_error.py tests/gateway/test_kernelspec.py tests/gateway/test_notebook.py tests/gateway/test_corpus.py \
	tests/gateway/test_scale.py tests/gateway/test_selftest.py tests/gateway/test_tools.py \
	tests/gateway/test_pool.py tests/gateway/test_capacity.py tests/gateway/test_fork_server.py \
	tests/gateway/test_relay_load.py tests/gateway/test_local_user.py tests/gateway/hot_path.py \
	tests/tools/test_gateway_checks.py tests/tools/test_arguments.py tests/gateway/test_close.py \
	tests/gateway/test_workspace_removal.py tests/gateway/test_quota.py \
	tests/gateway/test_client_threads.py tests/gateway/test_signals.py tests/gateway/test_files.py

# `make install` installs the kernelspec "kennel" (kernel.json and its
# kennel.conf) next to the binaries, written by the kennel just built with
# --bin naming the installed path, so staging with DESTDIR stays right.
kennel_kernelspecdir = $(datadir)/jupyter/kernels/kennel
install-data-local: install-kennel-kernelspec
uninstall-local: uninstall-kennel-kernelspec
install-kennel-kernelspec: gateway/kennel$(EXEEXT)
	gateway/kennel$(EXEEXT) install-kernelspec --prefix '$(DESTDIR)$(prefix)' --bin '$(bindir)/kennel' >/dev/null
uninstall-kennel-kernelspec:
	rm -f '$(DESTDIR)$(kennel_kernelspecdir)/kernel.json' '$(DESTDIR)$(kennel_kernelspecdir)/kennel.conf'
	-rmdir '$(DESTDIR)$(kennel_kernelspecdir)'
.PHONY: install-kennel-kernelspec uninstall-kennel-kernelspec

# The hot path's classes (gw_io, gw_peek, gw_proc, gw_timer, gw_linger, gw_zmtp_guard) tested on their own,
# with real ZeroMQ sockets: tests/gateway/gw_unit.c.
check_PROGRAMS += tests/gateway/gw_unit
TESTS += tests/gateway/gw_unit
tests_gateway_gw_unit_SOURCES = tests/gateway/gw_unit.c tests/gateway/gw_check.h gateway/gw_io.h gateway/gw_peek.h gateway/gw_proc.h gateway/gw_timer.h gateway/gw_util.h gateway/gw_zmtp.h gateway/gw_io.c gateway/gw_peek.c \
	gateway/gw_proc.c gateway/gw_clock.c gateway/gw_timer.c gateway/gw_zmtp.c gateway/gw_zmtp_guard.c gateway/gw_log.c gateway/gw_text.c \
	gateway/gw_linger.h gateway/gw_linger.c
tests_gateway_gw_unit_LDADD = $(WIRE_LIBS) -lm

# The error table (gw_error.c) on its own: tests/gateway/gw_error_test.c;
# tests/error_table.py checks it against docs/PROTOCOL.md.
check_PROGRAMS += tests/gateway/gw_error_test
TESTS += tests/gateway/gw_error_test
tests_gateway_gw_error_test_SOURCES = tests/gateway/gw_error_test.c tests/gateway/gw_check.h gateway/gw_error.h \
	gateway/gw_error.c

# The core's peers (gw_peers.c: the contract of gw_front.h) on their own:
# tests/gateway/gw_front_test.c.
check_PROGRAMS += tests/gateway/gw_front_test
TESTS += tests/gateway/gw_front_test
tests_gateway_gw_front_test_SOURCES = tests/gateway/gw_front_test.c tests/gateway/gw_check.h gateway/gw_front.h \
	gateway/gw_peers.h gateway/gw_peers.c
tests_gateway_gw_front_test_LDADD = $(WIRE_LIBS)

# The tool argument check (gw_schema) and the declarations' check at open
# (gw_tools) on their own: tests/gateway/gw_schema_test.c.
check_PROGRAMS += tests/gateway/gw_schema_test
TESTS += tests/gateway/gw_schema_test
tests_gateway_gw_schema_test_SOURCES = tests/gateway/gw_schema_test.c tests/gateway/gw_check.h gateway/gw_schema.h gateway/gw_tools.h gateway/gw_schema.c \
	gateway/gw_tools.c gateway/gw_text.c
tests_gateway_gw_schema_test_LDADD = $(WIRE_LIBS) -lm

# The one rule for tool declarations, the gateway's side: every case of
# tests/fixtures/tool_declarations.json (the kernel's side runs the same file,
# tests/kernel/test_tool_rule.py): tests/gateway/gw_tools_test.c.
check_PROGRAMS += tests/gateway/gw_tools_test
TESTS += tests/gateway/gw_tools_test
tests_gateway_gw_tools_test_SOURCES = tests/gateway/gw_tools_test.c tests/gateway/gw_check.h gateway/gw_tools.h \
	gateway/gw_tools.c gateway/gw_schema.c gateway/gw_text.c
tests_gateway_gw_tools_test_LDADD = $(WIRE_LIBS) -lm
EXTRA_DIST += tests/fixtures/tool_declarations.json

# Workspace removal and measurement (gw_fs) on their own: deep trees under a
# low fd limit, symlinks, locked directories as an unprivileged owner, the
# graveyard: tests/gateway/gw_fs_test.c.
check_PROGRAMS += tests/gateway/gw_fs_test
TESTS += tests/gateway/gw_fs_test
tests_gateway_gw_fs_test_SOURCES = tests/gateway/gw_fs_test.c tests/gateway/gw_check.h gateway/gw_util.h gateway/gw_fs.c
tests_gateway_gw_fs_test_LDADD = $(WIRE_LIBS)

# The state dir's reaper (gw_reaper) on its own: the dir goes at the end of
# its process, by exit and by SIGKILL: tests/gateway/gw_reaper_test.c.
check_PROGRAMS += tests/gateway/gw_reaper_test
TESTS += tests/gateway/gw_reaper_test
tests_gateway_gw_reaper_test_SOURCES = tests/gateway/gw_reaper_test.c tests/gateway/gw_check.h gateway/gw_reaper.h \
	gateway/gw_reaper.c gateway/gw_util.h gateway/gw_fs.c
tests_gateway_gw_reaper_test_LDADD = $(WIRE_LIBS)

# The file service (gw_files, gw_base64) on its own: paths, planted
# symlinks, FIFOs and hardlinks, chunks: tests/gateway/gw_files_test.c.
check_PROGRAMS += tests/gateway/gw_files_test
TESTS += tests/gateway/gw_files_test
tests_gateway_gw_files_test_SOURCES = tests/gateway/gw_files_test.c tests/gateway/gw_check.h gateway/gw_files.h \
	gateway/gw_files.c gateway/gw_base64.c gateway/gw_clock.c gateway/gw_text.c gateway/gw_error.c
tests_gateway_gw_files_test_LDADD = $(WIRE_LIBS)

# What kernels may leave in a browser (gw_markup, gw_sanitize) on their
# own: the allowlists on hostile HTML, SVG and Markdown, matplotlib's SVG
# and pandas' table kept, the message fields of each type cleaned, widget
# comms, idempotence: tests/gateway/gw_sanitize_test.c.
check_PROGRAMS += tests/gateway/gw_sanitize_test
TESTS += tests/gateway/gw_sanitize_test
tests_gateway_gw_sanitize_test_SOURCES = tests/gateway/gw_sanitize_test.c tests/gateway/gw_check.h gateway/gw_markup.h \
	gateway/gw_sanitize.h gateway/gw_markup.c gateway/gw_sanitize.c gateway/gw_peek.c gateway/gw_text.c
tests_gateway_gw_sanitize_test_CPPFLAGS = $(AM_CPPFLAGS) $(XML2_CFLAGS)
tests_gateway_gw_sanitize_test_LDADD = $(WIRE_LIBS) $(XML2_LIBS)
EXTRA_DIST += tests/fixtures/matplotlib.svg

# man pages: kennel(1) and kennel.conf(5) (tests/deploy checks them)
dist_man_MANS += gateway/kennel.1 gateway/kennel.conf.5
# kennel's documentation, where the man pages send their readers:
# $(docdir) (PREFIX/share/doc/kennel) laid out as the source tree is
nobase_dist_doc_DATA = README.md docs/PROTOCOL.md gateway/README.md gateway/mcp/README.md gateway/http/README.md \
	gateway/python/README.md gateway/deploy/README.md gateway/deploy/k8s/base/haproxy.cfg \
	gateway/deploy/k8s/base/kennel-list.lua confine/README.md kernel-launcher/README.md \
	kernel-launcher/pykernel/README.md examples/README.md
