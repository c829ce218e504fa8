#!/usr/bin/env bash
# Redraws docs/images/report.png, the README's picture of a report: the
# browser test's own run (tests/report/check_report_browser.py: a small
# synthetic scan, its report opened in headless chromium from disk, checked,
# and its screenshot kept). Needs build/stripeline and chromium
# (scripts/setup-debian.sh --tests).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 tests/report/check_report_browser.py "${1:-build/stripeline}" --screenshot docs/images/report.png
