# rules for gateway/mcp/ (see gateway/mcp/README.md): `kennel mcp`, built
# into the kennel binary as a subcommand.
gateway_kennel_SOURCES += gateway/mcp/mcp.h gateway/mcp/mcp_line.c gateway/mcp/mcp_rpc.c \
	gateway/mcp/mcp_server.c gateway/mcp/mcp_stdio.c gateway/mcp/mcp_core.c gateway/mcp/mcp_tools.c gateway/mcp/mcp_files.c gateway/mcp/mcp_gateway.c gateway/mcp/mcp_conv.c \
	gateway/mcp/mcp_hosttools.c gateway/mcp/mcp_upstream.c gateway/mcp/mcp_proc.c gateway/mcp/mcp_sessions.c gateway/mcp/mcp_main.c

EXTRA_DIST += gateway/mcp/README.md

# The session table (mcp_sessions) on its own: tests/mcp/mcp_sessions_test.c.
check_PROGRAMS += tests/mcp/mcp_sessions_test
TESTS += tests/mcp/mcp_sessions_test
tests_mcp_mcp_sessions_test_SOURCES = tests/mcp/mcp_sessions_test.c tests/gateway/gw_check.h gateway/mcp/mcp.h \
	gateway/mcp/mcp_sessions.c
tests_mcp_mcp_sessions_test_LDADD = $(WIRE_LIBS)

# The official MCP TypeScript SDK for tests/mcp, pinned by its lock file and
# installed into the build dir (never the source tree): `make mcp-node`
# (./quickstart check runs it).
MCP_NODE_DIR = $(abs_top_builddir)/mcp-node
mcp-node: $(MCP_NODE_DIR)/node_modules/.package-lock.json
$(MCP_NODE_DIR)/node_modules/.package-lock.json: $(top_srcdir)/tests/mcp/node/package.json $(top_srcdir)/tests/mcp/node/package-lock.json
	$(MKDIR_P) $(MCP_NODE_DIR)
	cp $(top_srcdir)/tests/mcp/node/package.json $(top_srcdir)/tests/mcp/node/package-lock.json $(MCP_NODE_DIR)/
	cd $(MCP_NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
.PHONY: mcp-node

EXTRA_DIST += tests/mcp/mcplib.py tests/mcp/test_framing.py tests/mcp/test_exec.py tests/mcp/test_hosttools.py \
	tests/mcp/test_sdk.py tests/mcp/test_http.py tests/mcp/test_http_tools.py tests/mcp/test_host_bounds.py tests/mcp/test_files.py tests/mcp/test_exit.py tests/mcp/node/package.json tests/mcp/node/package-lock.json tests/mcp/node/client.mjs \
	tests/mcp/node/weather_server.mjs tests/mcp/node/calls.mjs tests/mcp/node/auth.mjs tests/mcp/test_mounts.py
