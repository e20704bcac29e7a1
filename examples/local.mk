# rules for examples/ (see examples/README.md)
EXTRA_DIST += examples/demo.py examples/README.md
