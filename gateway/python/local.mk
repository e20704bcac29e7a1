# rules for gateway/python/ (see its README.md): the host module `kennel`,
# installed where the configured Python looks for a prefix's modules
# (Debian: PREFIX/lib/pythonX.Y/dist-packages, on sys.path for /usr and
# /usr/local).
kennelpydir = $(prefix)/lib/python$(PYTHON_VERSION)/dist-packages/kennel
dist_kennelpy_DATA = gateway/python/kennel/__init__.py gateway/python/kennel/loopsafe.py

# tests/tools: host tools end to end (the kernel side and this module)
EXTRA_DIST += gateway/python/README.md \
	tests/tools/conftest.py tests/tools/toolhost.py tests/tools/test_host_module.py \
	tests/tools/test_jupyter_client.py tests/tools/test_configure.py
# client_context against `kennel serve --transport tcp`
EXTRA_DIST += tests/gateway/test_host_module_tcp.py
