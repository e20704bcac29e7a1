# rules for tests/bench/ (see tests/bench/README.md): the side-by-side
# benchmark against stock ipykernel. Never part of `make check`'s timing:
# `make bench` is run by hand on a build without sanitizers, `make
# bench-smoke` (tiny counts, no timed assertion) in ./quickstart check.

# The C client for the gateway's own added latency (raw ZeroMQ + libwire).
check_PROGRAMS += tests/bench/bench_rtt
tests_bench_bench_rtt_SOURCES = tests/bench/bench_rtt.h tests/bench/bench_rtt.c \
	tests/bench/rtt_common.c tests/bench/rtt_client.c tests/bench/rtt_kernel.c
tests_bench_bench_rtt_LDADD = $(WIRE_LIBS)

# The C client for the HTTP front's own added latency (ZeroMQ and websocket
# alternately): built by `make bench` and `make bench-smoke` only.
EXTRA_PROGRAMS += tests/bench/bench_front
tests_bench_bench_front_SOURCES = tests/bench/bench_rtt.h tests/bench/bench_front.c \
	tests/bench/rtt_common.c tests/bench/rtt_client.c tests/bench/rtt_ws.c
tests_bench_bench_front_CPPFLAGS = $(AM_CPPFLAGS) $(LWS_CFLAGS)
tests_bench_bench_front_LDADD = $(WIRE_LIBS) $(LWS_LIBS)
CLEANFILES += tests/bench/bench_front$(EXEEXT)
EXTRA_DIST += tests/bench/README.md tests/bench/bench.py tests/bench/benchlib.py tests/bench/bench_http.py

# What the relay's cleaning of kernel outputs costs per message
# (gateway/gw_sanitize.c): `make bench-sanitize`.
EXTRA_PROGRAMS += tests/bench/bench_sanitize
tests_bench_bench_sanitize_SOURCES = tests/bench/bench_sanitize.c gateway/gw_markup.c gateway/gw_sanitize.c \
	gateway/gw_peek.c gateway/gw_text.c
tests_bench_bench_sanitize_CPPFLAGS = $(AM_CPPFLAGS) $(XML2_CFLAGS)
tests_bench_bench_sanitize_LDADD = $(WIRE_LIBS) $(XML2_LIBS)
CLEANFILES += tests/bench/bench_sanitize$(EXEEXT)
EXTRA_DIST += tests/fixtures/pandas_table.html

bench-sanitize: tests/bench/bench_sanitize$(EXEEXT)
	KENNEL_SRCDIR=$(abs_top_srcdir) ./tests/bench/bench_sanitize$(EXEEXT)

BENCH_ARGS ?=
BENCH_DEPS = gateway/kennel$(EXEEXT) kernel-launcher/kennel-launch$(EXEEXT) tests/bench/bench_rtt$(EXEEXT) \
	tests/bench/bench_front$(EXEEXT)

# bench.py refuses to report numbers from a --enable-sanitizers build
# (it reads config.status) unless BENCH_ARGS=--allow-sanitized.
bench: $(BENCH_DEPS)
	$(PYTHON_BIN) $(abs_top_srcdir)/tests/bench/bench.py --builddir $(abs_top_builddir) $(BENCH_ARGS)

bench-smoke: $(BENCH_DEPS)
	$(PYTHON_BIN) $(abs_top_srcdir)/tests/bench/bench.py --builddir $(abs_top_builddir) --smoke $(BENCH_ARGS)

.PHONY: bench bench-smoke bench-sanitize
