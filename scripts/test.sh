#!/usr/bin/env bash
# The whole test suite, from a bare Debian 12: install, build, run ctest.
# GPU tests skip visibly (with the reason) on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh --tests
scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)"
