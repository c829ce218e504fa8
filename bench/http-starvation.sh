#!/usr/bin/env bash
# /healthz p50/p99 with 200 idle keep-alive connections and 50 slowloris
# clients open (issue 14), on loopback; bounded (see bench/http_starvation.py).
# Usage: bench/http-starvation.sh [BINARY] [extra options of http_starvation.py]
# Output: stdout, and bench/results/<host tag>-<date>-http-starvation.txt when
# RESULT=path is given.
set -euo pipefail
cd "$(dirname "$0")/.."
binary="${1:-build/stripeline}"
shift || true
if [[ -n "${RESULT:-}" ]]; then
  python3 bench/http_starvation.py --binary "$binary" "$@" | tee "$RESULT"
else
  python3 bench/http_starvation.py --binary "$binary" "$@"
fi
