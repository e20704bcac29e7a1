# rules for wire/ (see wire/README.md)

noinst_LTLIBRARIES += wire/libwire.la
wire_libwire_la_SOURCES = \
	wire/wire.h wire/wire_private.h \
	wire/wire_error.c wire/wire_key.c wire/wire_replay.c wire/wire_json.c \
	wire/wire_header.c wire/wire_frames.c wire/wire_msg.c wire/wire_connection.c \
	wire/wire_selftest.c
# Everything that links libwire needs these too.
WIRE_LIBS = wire/libwire.la $(CZMQ_LIBS) $(ZMQ_LIBS) $(JANSSON_LIBS) $(SODIUM_LIBS)
wire_libwire_la_LIBADD = $(CZMQ_LIBS) $(ZMQ_LIBS) $(JANSSON_LIBS) $(SODIUM_LIBS)

check_PROGRAMS += tests/unit/wire_test tests/wire/wire_peer
TESTS += tests/unit/wire_test
tests_unit_wire_test_SOURCES = tests/unit/wire_test.c
tests_unit_wire_test_LDADD = $(WIRE_LIBS)
# The C side of tests/wire/test_interop.py (run by make pytest).
tests_wire_wire_peer_SOURCES = tests/wire/wire_peer.c
tests_wire_wire_peer_LDADD = $(WIRE_LIBS)
EXTRA_DIST += wire/README.md tests/wire/test_interop.py
# The fuzz target replayed on the committed seeds, in every make check.
check_PROGRAMS += tests/fuzz/wire_fuzz_corpus
TESTS += tests/fuzz/wire_fuzz_corpus
tests_fuzz_wire_fuzz_corpus_SOURCES = tests/fuzz/wire_fuzz_corpus.c tests/fuzz/wire_fuzz.c
tests_fuzz_wire_fuzz_corpus_LDADD = $(WIRE_LIBS)



# ---- fuzzing ---------------------------------------------------------------
# libFuzzer needs clang and its own instrumentation, so the target is built
# here directly from the sources rather than through libtool. `make fuzz`
# runs it for FUZZ_SECONDS on a copy of the committed seed corpus (new inputs
# never land in the source tree) and fails on any crash, leak, timeout or
# sanitizer report; what it finds is left in tests/fuzz/findings/.
FUZZ_SECONDS = 60
FUZZ_CC = clang
WIRE_FUZZ_SRC = $(srcdir)/tests/fuzz/wire_fuzz.c \
	$(srcdir)/wire/wire_error.c $(srcdir)/wire/wire_key.c $(srcdir)/wire/wire_replay.c \
	$(srcdir)/wire/wire_json.c $(srcdir)/wire/wire_header.c $(srcdir)/wire/wire_frames.c \
	$(srcdir)/wire/wire_msg.c $(srcdir)/wire/wire_connection.c
EXTRA_DIST += tests/fuzz/corpus
CLEANFILES += tests/fuzz/wire_fuzz

tests/fuzz/wire_fuzz: $(WIRE_FUZZ_SRC) $(srcdir)/wire/wire.h $(srcdir)/wire/wire_private.h
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I$(top_srcdir)/wire -D_GNU_SOURCE $(CZMQ_CFLAGS) $(ZMQ_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) \
		-o $@ $(WIRE_FUZZ_SRC) $(CZMQ_LIBS) $(ZMQ_LIBS) $(JANSSON_LIBS) $(SODIUM_LIBS)

fuzz: tests/fuzz/wire_fuzz
	rm -rf tests/fuzz/corpus-run tests/fuzz/findings
	$(MKDIR_P) tests/fuzz/corpus-run tests/fuzz/findings
	cp $(srcdir)/tests/fuzz/corpus/* tests/fuzz/corpus-run/
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	./tests/fuzz/wire_fuzz -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=1024 \
		-artifact_prefix=tests/fuzz/findings/ -print_final_stats=1 tests/fuzz/corpus-run

clean-local: clean-wire-fuzz
clean-wire-fuzz:
	rm -rf tests/fuzz/corpus-run tests/fuzz/findings

.PHONY: fuzz clean-wire-fuzz
