# rules for tests/fuzz/ (see tests/README.md): the gateway's fuzz targets,
# one per parser of untrusted bytes, each with its seeds in corpus-NAME/.
# make check replays every seed under the test build (gcc, sanitizers);
# make fuzz runs every target, the wire's (wire/local.mk) included, with
# libFuzzer for a bounded time.

# ---- the seeds, replayed in make check -------------------------------------
GW_FUZZ_REPLAYS = tests/fuzz/gw_peek_fuzz_corpus tests/fuzz/gw_meta_fuzz_corpus tests/fuzz/gw_control_fuzz_corpus \
	tests/fuzz/gw_policy_fuzz_corpus tests/fuzz/gw_tools_fuzz_corpus tests/fuzz/gw_zmtp_fuzz_corpus \
	tests/fuzz/gw_ws_fuzz_corpus tests/fuzz/gw_files_fuzz_corpus tests/fuzz/gw_markup_fuzz_corpus tests/fuzz/gw_http_fuzz_corpus
check_PROGRAMS += $(GW_FUZZ_REPLAYS)
TESTS += $(GW_FUZZ_REPLAYS)

tests_fuzz_gw_peek_fuzz_corpus_SOURCES = tests/fuzz/fuzz_corpus.c tests/fuzz/gw_peek_fuzz.c gateway/gw_peek.c
tests_fuzz_gw_peek_fuzz_corpus_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"corpus-peek"'
tests_fuzz_gw_peek_fuzz_corpus_LDADD = $(WIRE_LIBS)

tests_fuzz_gw_meta_fuzz_corpus_SOURCES = tests/fuzz/fuzz_corpus.c tests/fuzz/gw_meta_fuzz.c \
	gateway/gw_meta.c gateway/gw_peek.c
tests_fuzz_gw_meta_fuzz_corpus_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"corpus-meta"'
tests_fuzz_gw_meta_fuzz_corpus_LDADD = $(WIRE_LIBS)

# the gateway a front's handler runs on (fuzz_gateway.c: the conversation
# layer below the table replaced), shared by the control and HTTP targets
GW_FUZZ_GATEWAY = gateway/gw_core.c gateway/gw_server_access.c gateway/gw_config.c gateway/gw_tools.c gateway/gw_schema.c \
	gateway/gw_text.c gateway/gw_log.c gateway/gw_io.c gateway/gw_capacity.c gateway/gw_clock.c gateway/gw_peers.c \
	gateway/gw_files.c gateway/gw_base64.c gateway/gw_error.c
GW_FUZZ_GATEWAY_TESTS = tests/fuzz/fuzz_gateway.c tests/fuzz/fuzz_gateway.h tests/fuzz/fuzz_check.c tests/fuzz/fuzz_check.h \
	tests/fuzz/fuzz_tree.c tests/fuzz/fuzz_tree.h
# the control handler with the parts of the gateway it calls, the ZeroMQ
# front excepted (stubbed in the target)
GW_FUZZ_CONTROL_GW = gateway/gw_control.c gateway/gw_request.c gateway/gw_control_files.c $(GW_FUZZ_GATEWAY)
tests_fuzz_gw_control_fuzz_corpus_SOURCES = tests/fuzz/fuzz_corpus.c tests/fuzz/gw_control_fuzz.c \
	$(GW_FUZZ_GATEWAY_TESTS) $(GW_FUZZ_CONTROL_GW)
tests_fuzz_gw_control_fuzz_corpus_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"corpus-control"'
tests_fuzz_gw_control_fuzz_corpus_LDADD = $(WIRE_LIBS) -lm

tests_fuzz_gw_policy_fuzz_corpus_SOURCES = tests/fuzz/fuzz_corpus.c tests/fuzz/gw_policy_fuzz.c \
	tests/fuzz/fuzz_check.c tests/fuzz/fuzz_check.h gateway/gw_config.c gateway/gw_text.c
tests_fuzz_gw_policy_fuzz_corpus_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"corpus-policy"'
tests_fuzz_gw_policy_fuzz_corpus_LDADD = $(WIRE_LIBS) -lm

tests_fuzz_gw_tools_fuzz_corpus_SOURCES = tests/fuzz/fuzz_corpus.c tests/fuzz/gw_tools_fuzz.c \
	gateway/gw_tools.c gateway/gw_schema.c gateway/gw_text.c
tests_fuzz_gw_tools_fuzz_corpus_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"corpus-tools"'
tests_fuzz_gw_tools_fuzz_corpus_LDADD = $(WIRE_LIBS) -lm

tests_fuzz_gw_zmtp_fuzz_corpus_SOURCES = tests/fuzz/fuzz_corpus.c tests/fuzz/gw_zmtp_fuzz.c gateway/gw_zmtp.c
tests_fuzz_gw_zmtp_fuzz_corpus_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"corpus-zmtp"'
tests_fuzz_gw_zmtp_fuzz_corpus_LDADD = $(WIRE_LIBS)

# the HTTP front's websocket frames (gateway/http/ws_codec.c); gw_peers.c
# for gw_channel_name
tests_fuzz_gw_ws_fuzz_corpus_SOURCES = tests/fuzz/fuzz_corpus.c tests/fuzz/gw_ws_fuzz.c \
	gateway/http/ws_codec.c gateway/gw_peers.c
tests_fuzz_gw_ws_fuzz_corpus_CPPFLAGS = $(AM_CPPFLAGS) $(LWS_CFLAGS) -DFUZZ_CORPUS='"corpus-ws"'
tests_fuzz_gw_ws_fuzz_corpus_LDADD = $(WIRE_LIBS)

# the file service on a real workspace beside canaries (fuzz_tree.c)
GW_FUZZ_FILES_GW = gateway/gw_files.c gateway/gw_text.c gateway/gw_clock.c gateway/gw_error.c
tests_fuzz_gw_files_fuzz_corpus_SOURCES = tests/fuzz/fuzz_corpus.c tests/fuzz/gw_files_fuzz.c \
	tests/fuzz/fuzz_tree.c tests/fuzz/fuzz_tree.h $(GW_FUZZ_FILES_GW)
tests_fuzz_gw_files_fuzz_corpus_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"corpus-files"'
tests_fuzz_gw_files_fuzz_corpus_LDADD = $(WIRE_LIBS)

# what a kernel may leave in a browser: gw_markup (libxml2) and gw_sanitize
GW_FUZZ_MARKUP_GW = gateway/gw_markup.c gateway/gw_sanitize.c gateway/gw_peek.c gateway/gw_text.c
tests_fuzz_gw_markup_fuzz_corpus_SOURCES = tests/fuzz/fuzz_corpus.c tests/fuzz/gw_markup_fuzz.c $(GW_FUZZ_MARKUP_GW)
tests_fuzz_gw_markup_fuzz_corpus_CPPFLAGS = $(AM_CPPFLAGS) $(XML2_CFLAGS) -DFUZZ_CORPUS='"corpus-markup"'
tests_fuzz_gw_markup_fuzz_corpus_LDADD = $(WIRE_LIBS) $(XML2_LIBS)
# the HTTP front's routes (gateway/http) on the same gateway; libwebsockets
# replaced at its API (in the target). Every automatic variable starts as
# a pattern: an error struct read unset crashes (gcc 12 and clang).
GW_FUZZ_HTTP_GW = gateway/http/http_route.c gateway/http/http_api.c gateway/http/http_clients.c gateway/http/http_contents.c \
	gateway/http/http_contents_reply.c gateway/http/http_contents_edit.c \
	gateway/http/http_checkpoints.c gateway/http/http_sessions.c gateway/http/http_kernel.c gateway/http/http_reply.c \
	gateway/http/http_ops.c gateway/gw_metrics.c gateway/gw_metrics_visit.c gateway/gw_id.c $(GW_FUZZ_GATEWAY)
GW_FUZZ_PATTERN_INIT = -ftrivial-auto-var-init=pattern
tests_fuzz_gw_http_fuzz_corpus_SOURCES = tests/fuzz/fuzz_corpus.c tests/fuzz/gw_http_fuzz.c \
	$(GW_FUZZ_GATEWAY_TESTS) $(GW_FUZZ_HTTP_GW)
tests_fuzz_gw_http_fuzz_corpus_CPPFLAGS = $(AM_CPPFLAGS) $(LWS_CFLAGS) -DFUZZ_CORPUS='"corpus-http"'
tests_fuzz_gw_http_fuzz_corpus_CFLAGS = $(AM_CFLAGS) $(GW_FUZZ_PATTERN_INIT)
tests_fuzz_gw_http_fuzz_corpus_LDADD = $(WIRE_LIBS) -lm

# ---- the libFuzzer builds (clang, outside libtool) -------------------------
# Gateway sources include the launcher boundary header, which names confine's
# paths header: the include path the rest of the build gets from AM_CPPFLAGS.
GW_FUZZ_CFLAGS = $(FUZZ_CFLAGS) -I$(top_srcdir)/confine
GW_FUZZ_PEEK_SRC = $(srcdir)/tests/fuzz/gw_peek_fuzz.c $(srcdir)/gateway/gw_peek.c
GW_FUZZ_META_SRC = $(srcdir)/tests/fuzz/gw_meta_fuzz.c $(srcdir)/gateway/gw_meta.c $(srcdir)/gateway/gw_peek.c
GW_FUZZ_GATEWAY_SRC = $(srcdir)/tests/fuzz/fuzz_gateway.c $(srcdir)/tests/fuzz/fuzz_check.c $(srcdir)/tests/fuzz/fuzz_tree.c \
	$(srcdir)/gateway/gw_core.c $(srcdir)/gateway/gw_server_access.c $(srcdir)/gateway/gw_config.c \
	$(srcdir)/gateway/gw_tools.c $(srcdir)/gateway/gw_schema.c $(srcdir)/gateway/gw_text.c $(srcdir)/gateway/gw_log.c \
	$(srcdir)/gateway/gw_io.c $(srcdir)/gateway/gw_capacity.c $(srcdir)/gateway/gw_clock.c $(srcdir)/gateway/gw_peers.c \
	$(srcdir)/gateway/gw_files.c $(srcdir)/gateway/gw_base64.c $(srcdir)/gateway/gw_error.c
GW_FUZZ_CONTROL_SRC = $(srcdir)/tests/fuzz/gw_control_fuzz.c $(srcdir)/gateway/gw_control.c \
	$(srcdir)/gateway/gw_request.c $(srcdir)/gateway/gw_control_files.c $(GW_FUZZ_GATEWAY_SRC)
GW_FUZZ_HTTP_SRC = $(srcdir)/tests/fuzz/gw_http_fuzz.c $(srcdir)/gateway/http/http_route.c $(srcdir)/gateway/http/http_api.c \
	$(srcdir)/gateway/http/http_clients.c $(srcdir)/gateway/http/http_contents.c \
	$(srcdir)/gateway/http/http_contents_reply.c $(srcdir)/gateway/http/http_contents_edit.c $(srcdir)/gateway/http/http_checkpoints.c \
	$(srcdir)/gateway/http/http_sessions.c $(srcdir)/gateway/http/http_kernel.c $(srcdir)/gateway/http/http_reply.c \
	$(srcdir)/gateway/http/http_ops.c $(srcdir)/gateway/gw_metrics.c $(srcdir)/gateway/gw_metrics_visit.c \
	$(srcdir)/gateway/gw_id.c $(GW_FUZZ_GATEWAY_SRC)
GW_FUZZ_POLICY_SRC = $(srcdir)/tests/fuzz/gw_policy_fuzz.c $(srcdir)/tests/fuzz/fuzz_check.c \
	$(srcdir)/gateway/gw_config.c $(srcdir)/gateway/gw_text.c
GW_FUZZ_TOOLS_SRC = $(srcdir)/tests/fuzz/gw_tools_fuzz.c $(srcdir)/gateway/gw_tools.c \
	$(srcdir)/gateway/gw_schema.c $(srcdir)/gateway/gw_text.c
GW_FUZZ_ZMTP_SRC = $(srcdir)/tests/fuzz/gw_zmtp_fuzz.c $(srcdir)/gateway/gw_zmtp.c
GW_FUZZ_WS_SRC = $(srcdir)/tests/fuzz/gw_ws_fuzz.c $(srcdir)/gateway/http/ws_codec.c $(srcdir)/gateway/gw_peers.c
GW_FUZZ_FILES_SRC = $(srcdir)/tests/fuzz/gw_files_fuzz.c $(srcdir)/tests/fuzz/fuzz_tree.c \
	$(srcdir)/gateway/gw_files.c $(srcdir)/gateway/gw_text.c $(srcdir)/gateway/gw_clock.c $(srcdir)/gateway/gw_error.c
GW_FUZZ_MARKUP_SRC = $(srcdir)/tests/fuzz/gw_markup_fuzz.c $(srcdir)/gateway/gw_markup.c $(srcdir)/gateway/gw_sanitize.c \
	$(srcdir)/gateway/gw_peek.c $(srcdir)/gateway/gw_text.c
GW_FUZZ_BINS = tests/fuzz/gw_peek_fuzz tests/fuzz/gw_meta_fuzz tests/fuzz/gw_control_fuzz tests/fuzz/gw_policy_fuzz tests/fuzz/gw_tools_fuzz \
	tests/fuzz/gw_zmtp_fuzz tests/fuzz/gw_ws_fuzz tests/fuzz/gw_files_fuzz tests/fuzz/gw_markup_fuzz tests/fuzz/gw_http_fuzz
GW_FUZZ_DEPS = $(WIRE_FUZZ_LIB_SRC) $(WIRE_FUZZ_INCLUDES) $(GW_HEADER_FILES) $(srcdir)/gateway/gw_server_private.h $(srcdir)/tests/fuzz/fuzz_check.h \
	$(srcdir)/tests/fuzz/fuzz_tree.h $(srcdir)/tests/fuzz/fuzz_gateway.h $(srcdir)/gateway/http/http.h
CLEANFILES += $(GW_FUZZ_BINS)
EXTRA_DIST += tests/fuzz/corpus-peek tests/fuzz/corpus-meta tests/fuzz/corpus-control tests/fuzz/corpus-policy tests/fuzz/corpus-tools tests/fuzz/corpus-zmtp \
	tests/fuzz/corpus-ws tests/fuzz/corpus-files tests/fuzz/files_seeds.py tests/fuzz/corpus-markup tests/fuzz/corpus-http

tests/fuzz/gw_peek_fuzz: $(GW_FUZZ_PEEK_SRC) $(GW_FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(GW_FUZZ_CFLAGS) -o $@ $(GW_FUZZ_PEEK_SRC) $(WIRE_FUZZ_LIB_SRC) $(FUZZ_LIBS)
tests/fuzz/gw_meta_fuzz: $(GW_FUZZ_META_SRC) $(GW_FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(GW_FUZZ_CFLAGS) -o $@ $(GW_FUZZ_META_SRC) $(WIRE_FUZZ_LIB_SRC) $(FUZZ_LIBS)
tests/fuzz/gw_control_fuzz: $(GW_FUZZ_CONTROL_SRC) $(GW_FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(GW_FUZZ_CFLAGS) -o $@ $(GW_FUZZ_CONTROL_SRC) $(WIRE_FUZZ_LIB_SRC) $(FUZZ_LIBS)
tests/fuzz/gw_policy_fuzz: $(GW_FUZZ_POLICY_SRC) $(GW_FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(GW_FUZZ_CFLAGS) -o $@ $(GW_FUZZ_POLICY_SRC) $(WIRE_FUZZ_LIB_SRC) $(FUZZ_LIBS)
tests/fuzz/gw_tools_fuzz: $(GW_FUZZ_TOOLS_SRC) $(GW_FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(GW_FUZZ_CFLAGS) -o $@ $(GW_FUZZ_TOOLS_SRC) $(WIRE_FUZZ_LIB_SRC) $(FUZZ_LIBS)
tests/fuzz/gw_zmtp_fuzz: $(GW_FUZZ_ZMTP_SRC) $(GW_FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(GW_FUZZ_CFLAGS) -o $@ $(GW_FUZZ_ZMTP_SRC) $(WIRE_FUZZ_LIB_SRC) $(FUZZ_LIBS)
tests/fuzz/gw_ws_fuzz: $(GW_FUZZ_WS_SRC) $(GW_FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(GW_FUZZ_CFLAGS) $(LWS_CFLAGS) -o $@ $(GW_FUZZ_WS_SRC) $(WIRE_FUZZ_LIB_SRC) $(FUZZ_LIBS)
tests/fuzz/gw_files_fuzz: $(GW_FUZZ_FILES_SRC) $(GW_FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(GW_FUZZ_CFLAGS) -o $@ $(GW_FUZZ_FILES_SRC) $(WIRE_FUZZ_LIB_SRC) $(FUZZ_LIBS)
tests/fuzz/gw_markup_fuzz: $(GW_FUZZ_MARKUP_SRC) $(GW_FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(GW_FUZZ_CFLAGS) $(XML2_CFLAGS) -o $@ $(GW_FUZZ_MARKUP_SRC) $(WIRE_FUZZ_LIB_SRC) $(FUZZ_LIBS) $(XML2_LIBS)
tests/fuzz/gw_http_fuzz: $(GW_FUZZ_HTTP_SRC) $(GW_FUZZ_DEPS)
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(GW_FUZZ_CFLAGS) $(GW_FUZZ_PATTERN_INIT) $(LWS_CFLAGS) -o $@ $(GW_FUZZ_HTTP_SRC) $(WIRE_FUZZ_LIB_SRC) $(FUZZ_LIBS)

# ---- make fuzz --------------------------------------------------------------
# Each target runs for its seconds on a copy of its committed seeds (new
# inputs never land in the source tree) and fails on any crash, trap, leak,
# timeout or sanitizer report; what it finds is left in
# tests/fuzz/findings/NAME-*. The total stays under three minutes on two cores
# (./quickstart check runs it): the wire's target is the oldest and has the
# largest grammar, so it gets the longest turn.
FUZZ_SECONDS = 30
GW_FUZZ_SECONDS = 15
GW_FUZZ_NAMES = peek meta control policy tools zmtp ws files markup http

fuzz: tests/fuzz/wire_fuzz $(GW_FUZZ_BINS)
	rm -rf tests/fuzz/corpus-run tests/fuzz/findings
	$(MKDIR_P) tests/fuzz/findings
	@status=0; \
	for name in wire $(GW_FUZZ_NAMES); do \
	  if test $$name = wire; then bin=wire_fuzz seeds=corpus secs=$(FUZZ_SECONDS); \
	  else bin=gw_$${name}_fuzz seeds=corpus-$$name secs=$(GW_FUZZ_SECONDS); fi; \
	  echo "== fuzz $$name ($$secs s)"; \
	  $(MKDIR_P) tests/fuzz/corpus-run/$$name; \
	  cp $(srcdir)/tests/fuzz/$$seeds/* tests/fuzz/corpus-run/$$name/; \
	  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ./tests/fuzz/$$bin -max_total_time=$$secs -timeout=10 -rss_limit_mb=1024 \
	    -artifact_prefix=tests/fuzz/findings/$$name- -print_final_stats=1 tests/fuzz/corpus-run/$$name \
	    || { status=1; echo "== fuzz $$name FAILED: see tests/fuzz/findings/"; }; \
	done; exit $$status

clean-local: clean-fuzz
clean-fuzz:
	rm -rf tests/fuzz/corpus-run tests/fuzz/findings

.PHONY: fuzz clean-fuzz
