#!/usr/bin/env bash
# The main job, from a bare Debian 12: install, build, and process the
# built-in synthetic scan into out/ (PLY, 16-bit height map, 8-bit preview,
# summary.json), then write out/report.html: a page to look at the scan,
# self-contained, opened from disk with no network (docs/render.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
scripts/build.sh
build/stripeline run "$@"
if [[ -f out/scan.ply && -f out/heightmap.png ]]; then
  build/stripeline report out/scan.ply out/heightmap.png --out out/report.html -q >/dev/null
  echo "report: $(pwd)/out/report.html (open it: xdg-open out/report.html, or chromium out/report.html)"
fi
