#!/bin/sh
# Regenerate configure and Makefile.in from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
mkdir -p autotools/m4 autotools/build-aux
autoreconf --install --force --warnings=all
