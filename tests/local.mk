# Integration, conformance and security tests: pytest with the system Python
# and Debian's jupyter_client, against the programs built here.
EXTRA_DIST += tests/lsan.supp tests/conftest.py tests/README.md tests/hostprobe.py tests/kennel_testlib.py \
	tests/security/test_hardening.py tests/security/test_hostprobe.py

# One pytest process per folder: each folder's conftest.py is its own module
# "conftest", and folders must not see each other's.
PYTEST_DIRS = tests/wire tests/security tests/kernel tests/gateway tests/tools tests/http tests/httpclients tests/mcp tests/deploy tests/fleet \
	tests/fresh tests/docs
PYTEST_ARGS ?=
pytest: all $(check_PROGRAMS)
	@cd $(abs_top_srcdir) && status=0; \
	for dir in $(PYTEST_DIRS); do \
	  echo "== pytest $$dir"; \
	  KENNEL_BUILDDIR=$(abs_top_builddir) KENNEL_SRCDIR=$(abs_top_srcdir) \
	  ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(PYTHON_BIN) -m pytest -p no:cacheprovider -q -ra \
	    --junitxml=$(abs_top_builddir)/pytest-$$(basename $$dir).xml $(PYTEST_ARGS) $$dir \
	    || status=1; \
	done; exit $$status

.PHONY: pytest
include tests/bench/local.mk

# gw_config on its own: the operator's config file and a request's policy
# lowered against it, values and errors (tests/gateway/gw_config_test.c).
check_PROGRAMS += tests/gateway/gw_config_test
TESTS += tests/gateway/gw_config_test
tests_gateway_gw_config_test_SOURCES = tests/gateway/gw_config_test.c tests/gateway/gw_check.h gateway/gw_config.h \
	gateway/gw_config.c gateway/gw_text.c
tests_gateway_gw_config_test_LDADD = $(WIRE_LIBS) -lm

# No #include cycle, file by file nor class by class (a file with its
# header), in every C folder: tests/include_graph.py (gateway takes in its
# sub-folders http and mcp). `make include-graph` prints the graph with its
# edges and any cycle without failing.
INCLUDE_GRAPH_ARGS = --modules wire confine kernel-launcher gateway
TESTS += tests/include_graph.py
EXTRA_DIST += tests/include_graph.py
AM_TESTS_ENVIRONMENT += INCLUDE_GRAPH_ARGS='$(INCLUDE_GRAPH_ARGS)'; export INCLUDE_GRAPH_ARGS;
include-graph:
	$(PYTHON_BIN) $(srcdir)/tests/include_graph.py --modules --report --edges wire confine kernel-launcher gateway
.PHONY: include-graph

# No loop of calls between the files of one folder, and no function declared
# in one module's header but defined in another module's file, read from the
# built objects with nm: tests/call_graph.py, enforced on every folder (one
# named with --report-in would be printed, not failing). `make call-graph`
# prints every folder's edges with their functions, and what it finds,
# without failing.
CALL_GRAPH_ARGS = wire confine kernel-launcher gateway
TESTS += tests/call_graph.py
EXTRA_DIST += tests/call_graph.py
AM_TESTS_ENVIRONMENT += CALL_GRAPH_ARGS='$(CALL_GRAPH_ARGS)'; export CALL_GRAPH_ARGS;
call-graph: all
	KENNEL_BUILDDIR=$(abs_top_builddir) $(PYTHON_BIN) $(srcdir)/tests/call_graph.py --report --edges \
	  wire confine kernel-launcher gateway
.PHONY: call-graph

# The error table (gateway/gw_error.c) and docs/PROTOCOL.md's "Error names"
# list name the same errors with the same HTTP statuses, every ename table of
# the doc names only listed ones, and no other gateway C file spells a name
# as a literal: tests/error_table.py.
TESTS += tests/error_table.py
EXTRA_DIST += tests/error_table.py

# JupyterLab's @jupyterlab/services for tests/httpclients, from the npm
# registry at the versions package-lock.json pins, into this build's node/
# (never the source tree). ./quickstart check runs it.
JLAB_DIR = $(abs_top_srcdir)/tests/httpclients/jlab
node/node_modules/.package-lock.json: $(JLAB_DIR)/package.json $(JLAB_DIR)/package-lock.json
	$(MKDIR_P) node
	cp $(JLAB_DIR)/package.json $(JLAB_DIR)/package-lock.json node/
	cd node && npm ci --no-audit --no-fund --loglevel=error
jlab-client: node/node_modules/.package-lock.json
.PHONY: jlab-client
EXTRA_DIST += tests/httpclients/jlab/package.json tests/httpclients/jlab/package-lock.json tests/httpclients/jlab/jlab_contents.js

# tests/deploy: make install's man pages, unit, sysusers.d/tmpfiles.d entries
# and kennel under the unit's hardening (tests/README.md)
EXTRA_DIST += tests/deploy/conftest.py tests/deploy/servicelib.py tests/deploy/service_exec.py \
	tests/deploy/test_install.py tests/deploy/test_manpages.py tests/deploy/test_service.py
EXTRA_DIST += tests/deploy/test_service_ops.py tests/deploy/test_service_http.py
# readiness as soon as the connection file exists (README's raw-HTTP block)
EXTRA_DIST += tests/http/test_readiness.py
# tests/fresh: what a fresh machine and a fresh clone need (tests/README.md)
EXTRA_DIST += tests/fresh/test_packages.py tests/fresh/test_private_clone.py
# tests/docs: README.md's code blocks run as written
EXTRA_DIST += tests/docs/readme.py tests/docs/test_readme.py
# tests/fleet: gateways behind HAProxy with gateway/deploy/haproxy's config
EXTRA_DIST += tests/fleet/conftest.py tests/fleet/fleetlib.py tests/fleet/test_balancer.py tests/fleet/test_pid1.py tests/fleet/test_tls.py
# ./quickstart check-deploy: the Kubernetes manifests, the container image
EXTRA_DIST += tests/k8s/test_manifests.py tests/container/conftest.py tests/container/imagelib.py \
	tests/container/test_image.py
