#!/usr/bin/env bash
# The whole test suite, from a bare Debian 12: install, build, run ctest.
# GPU tests skip visibly (with the reason, printed after ctest's summary) on a
# machine without a GPU. Extra arguments go to ctest (e.g. -L install).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh --tests
scripts/build.sh
cd build
status=0
ctest --output-on-failure -j"$(nproc)" "$@" || status=$?
# ctest shows a skip as `***Skipped` only; the reasons (no GPU, no network
# namespace, a tool not installed) are in its log: print them.
python3 ../tests/skip_reasons.py .
exit "$status"
