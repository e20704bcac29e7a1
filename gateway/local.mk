# rules for gateway/ (see gateway/README.md)

bin_PROGRAMS += gateway/kennel
gateway_kennel_SOURCES = \
	gateway/gw.h gateway/main.c gateway/gw_log.c gateway/gw_config.c \
	gateway/gw_launch.c gateway/gw_relay.c gateway/gw_conv.c \
	gateway/gw_server.c gateway/gw_control.c gateway/gw_selftest.c
gateway_kennel_CPPFLAGS = $(AM_CPPFLAGS) -DPREFIX_DIR='"$(prefix)"'
gateway_kennel_LDADD = $(WIRE_LIBS) -lm
EXTRA_DIST += gateway/README.md
