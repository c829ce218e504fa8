#!/usr/bin/env bash
# Rewrites docs/images/viewer.png, the README's picture of the live viewer:
# the screenshot the browser test of the synthetic step takes (a daemon on
# loopback, headless chromium; tests/browser/test_viewer.py), after it passed.
# Usage: scripts/viewer-screenshot.sh [BINARY]   (default build/stripeline)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/images
py="${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}"  # Debian's python3 has python3-websocket
"$py" tests/browser/test_viewer.py "${1:-build/stripeline}" screenshot docs/images/viewer.png
echo "wrote docs/images/viewer.png"
