# rules for wire/ (see wire/README.md)

noinst_LTLIBRARIES += wire/libwire.la
wire_libwire_la_SOURCES = \
	wire/wire.h wire/wire_private.h \
	wire/wire_alloc.c wire/wire_error.c wire/wire_key.c wire/wire_replay.c wire/wire_json.c \
	wire/wire_header.c wire/wire_frames.c wire/wire_msg.c wire/wire_connection.c \
	wire/wire_selftest.c
# Everything that links libwire needs these too.
WIRE_LIBS = wire/libwire.la $(CZMQ_LIBS) $(ZMQ_LIBS) $(JANSSON_LIBS) $(SODIUM_LIBS)
wire_libwire_la_LIBADD = $(CZMQ_LIBS) $(ZMQ_LIBS) $(JANSSON_LIBS) $(SODIUM_LIBS)

check_PROGRAMS += tests/unit/wire_test tests/wire/wire_peer
TESTS += tests/unit/wire_test
tests_unit_wire_test_SOURCES = tests/unit/wire_test.c tests/unit/oom_check.h
tests_unit_wire_test_LDADD = $(WIRE_LIBS)
# The C side of tests/wire/test_interop.py (run by make pytest).
tests_wire_wire_peer_SOURCES = tests/wire/wire_peer.c
tests_wire_wire_peer_LDADD = $(WIRE_LIBS)
EXTRA_DIST += wire/README.md tests/wire/test_interop.py
# The fuzz target replayed on the committed seeds, in every make check.
check_PROGRAMS += tests/fuzz/wire_fuzz_corpus
TESTS += tests/fuzz/wire_fuzz_corpus
tests_fuzz_wire_fuzz_corpus_SOURCES = tests/fuzz/fuzz_corpus.c tests/fuzz/wire_fuzz.c
tests_fuzz_wire_fuzz_corpus_LDADD = $(WIRE_LIBS)



# ---- fuzzing ---------------------------------------------------------------
# libFuzzer needs clang and its own instrumentation, so the target is built
# here directly from the sources rather than through libtool; `make fuzz`
# (tests/fuzz/local.mk) runs it with the gateway's targets.
FUZZ_CC = clang
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I$(top_srcdir) -I$(top_srcdir)/wire -I$(top_builddir) -D_GNU_SOURCE \
	$(CZMQ_CFLAGS) $(ZMQ_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS)
FUZZ_LIBS = $(CZMQ_LIBS) $(ZMQ_LIBS) $(JANSSON_LIBS) $(SODIUM_LIBS) -lm
WIRE_FUZZ_LIB_SRC = \
	$(srcdir)/wire/wire_alloc.c $(srcdir)/wire/wire_error.c $(srcdir)/wire/wire_key.c $(srcdir)/wire/wire_replay.c \
	$(srcdir)/wire/wire_json.c $(srcdir)/wire/wire_header.c $(srcdir)/wire/wire_frames.c \
	$(srcdir)/wire/wire_msg.c $(srcdir)/wire/wire_connection.c
WIRE_FUZZ_INCLUDES = $(srcdir)/wire/wire.h $(srcdir)/wire/wire_private.h
EXTRA_DIST += tests/fuzz/corpus
CLEANFILES += tests/fuzz/wire_fuzz

tests/fuzz/wire_fuzz: $(srcdir)/tests/fuzz/wire_fuzz.c $(WIRE_FUZZ_LIB_SRC) $(WIRE_FUZZ_INCLUDES)
	@$(MKDIR_P) tests/fuzz
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(srcdir)/tests/fuzz/wire_fuzz.c $(WIRE_FUZZ_LIB_SRC) $(FUZZ_LIBS)
