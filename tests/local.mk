# Integration, conformance and security tests: pytest with the system Python
# and Debian's jupyter_client, against the programs built here.
EXTRA_DIST += tests/lsan.supp tests/conftest.py tests/README.md

PYTEST_ARGS ?=
pytest: all $(check_PROGRAMS)
	cd $(abs_top_srcdir) && \
	KENNEL_BUILDDIR=$(abs_top_builddir) KENNEL_SRCDIR=$(abs_top_srcdir) \
	ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	$(PYTHON_BIN) -m pytest -p no:cacheprovider -q -ra $(PYTEST_ARGS) tests

.PHONY: pytest
