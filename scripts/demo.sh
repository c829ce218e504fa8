#!/usr/bin/env bash
# The main job, from a bare Debian 12: install, build, and process the
# built-in synthetic scan into out/ (PLY, 16-bit height map, 8-bit preview,
# summary.json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
scripts/build.sh
build/stripeline run "$@"
