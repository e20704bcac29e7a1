# rules for gateway/http/, the HTTP + WebSocket front (see gateway/http/README.md)

gateway_kennel_SOURCES += \
	gateway/http/http.h gateway/http/http_settings.c gateway/http/http_loop.c \
	gateway/http/http_server.c gateway/http/http_clients.c gateway/http/http_reply.c \
	gateway/http/http_auth.c gateway/http/http_route.c gateway/http/http_api.c gateway/http/http_kernel.c \
	gateway/http/http_sessions.c gateway/http/http_mcp.c gateway/http/ws_codec.c gateway/http/ws_conn.c gateway/http/http_ops.c \
	gateway/http/http_contents.c gateway/http/http_contents_reply.c gateway/http/http_contents_edit.c \
	gateway/http/http_checkpoints.c
gateway_kennel_CPPFLAGS += $(LWS_CFLAGS) $(UV_CFLAGS)
gateway_kennel_LDADD += $(LWS_LIBS) $(UV_LIBS)

EXTRA_DIST += gateway/http/README.md tests/http/conftest.py tests/http/httptest.py tests/http/test_rest.py tests/http/test_websocket.py \
	tests/http/test_auth.py tests/http/test_bad_input.py tests/http/test_lifecycle.py tests/http/test_ops.py \
	tests/http/test_contents.py tests/http/test_contents_edit.py tests/http/test_startup.py \
	tests/http/test_floods.py tests/http/test_sanitize.py
