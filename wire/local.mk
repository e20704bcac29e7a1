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


