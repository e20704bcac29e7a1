# rules for gateway/mcp/ (see gateway/mcp/README.md): `kennel mcp`, built
# into the kennel binary as a subcommand.
gateway_kennel_SOURCES += gateway/mcp/mcp.h gateway/mcp/mcp_line.c gateway/mcp/mcp_rpc.c \
	gateway/mcp/mcp_server.c gateway/mcp/mcp_tools.c gateway/mcp/mcp_gateway.c gateway/mcp/mcp_conv.c \
	gateway/mcp/mcp_hosttools.c gateway/mcp/mcp_upstream.c gateway/mcp/mcp_proc.c gateway/mcp/mcp_main.c

EXTRA_DIST += gateway/mcp/README.md
