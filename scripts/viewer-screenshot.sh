#!/usr/bin/env bash
# Rewrites docs/images/viewer.png and docs/images/viewer-heads.png, the
# README's pictures of the live viewer: the screenshots the browser tests of
# the synthetic step take (a daemon on loopback, headless chromium;
# tests/browser/test_viewer.py: one head, and a daemon of two heads), after
# they passed.
# Usage: scripts/viewer-screenshot.sh [BINARY]   (default build/stripeline)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/images
py="${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}"  # Debian's python3 has python3-websocket
"$py" tests/browser/test_viewer.py "${1:-build/stripeline}" screenshot docs/images/viewer.png
echo "wrote docs/images/viewer.png"
"$py" tests/browser/test_viewer.py "${1:-build/stripeline}" screenshot-heads docs/images/viewer-heads.png
echo "wrote docs/images/viewer-heads.png"
