#!/bin/bash
# Three synthetic heads in one daemon (docs/scale-out.md "Merging inside the daemon"):
# rows/s per head and merged, from two /metrics scrapes SECONDS apart.
#   bench/heads/measure.sh BINARY RATE MERGE SECONDS [BATCH] [WINDOW_MS]
#   e.g. bench/heads/measure.sh build/stripeline 10000 1 10 16 1000
# RATE: frames/s per head (0 = unpaced); MERGE: 1 = [merge] enabled; BACKEND=cuda in the
# environment for the CUDA backend (every head on device 0 unless DEVICES says). Frames
# 256 x 32 Mono8, the sheet-of-light calibration and the
# transforms beside this script (written by tests/test_heads.cpp's fixture:
# X across the view -20..20 mm, heads 30 mm apart). Scratch in a temporary folder.
# Other settings through the environment (the GPU host's run, docs/scale-out.md
# "Several GPUs on one host"): HEADS="a b" (names, in transforms.toml),
# DEVICES="0 1" (one CUDA ordinal per head), BACKEND=cuda, WIDTH=2048 HEIGHT=52,
# CALIBRATION=FILE (a sheet-of-light calibration of WIDTH x HEIGHT frames; beside this
# script: head-128x16.calibration.toml, the same -20..20 mm view over 128 x 16 frames),
# CACHED=N ([synthetic] cached_frames: each head renders N frames once and repeats
# them, so the host pays for the heads' processing, not for rendering; 0 = render all),
# RT=N ([merge] realtime_priority: the merge's threads SCHED_FIFO at N; needs the right to).
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 BINARY RATE MERGE SECONDS [BATCH] [WINDOW_MS]" >&2; exit 2; }
BIN=$(readlink -f "$1"); RATE=$2; MERGE=$3; SECS=$4; BATCH=${5:-16}; WINDOW=${6:-1000}
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=$(mktemp -d /tmp/stripeline-heads.XXXXXX)
trap '[ -n "${KEEP_LOG:-}" ] && cp "$DIR/run.log" "$KEEP_LOG"; rm -rf "$DIR"' EXIT
PORT=$((20000 + RANDOM % 20000))
HEADS=${HEADS:-a b c}; read -r -a NAMES <<< "$HEADS"; read -r -a DEVS <<< "${DEVICES:-}"
WIDTH=${WIDTH:-256}; HEIGHT=${HEIGHT:-32}; CACHED=${CACHED:-0}; RT=${RT:-0}; BACKEND=${BACKEND:-cpu}; CALIBRATION=${CALIBRATION:-$HERE/head.calibration.toml}
{
  printf '[synthetic]\nwidth = %s\nframe_height = %s\nframes = 0\ncached_frames = %s\n[processing]\nbackend = "%s"\nbatch_frames = %s\n' "$WIDTH" "$HEIGHT" "$CACHED" "$BACKEND" "$BATCH"
  printf '[calibration]\nfile = "%s"\n' "$(readlink -f "$CALIBRATION")"
  printf '[output]\ndir = "%s/scans"\nply = ""\nheightmap = ""\npreview = ""\nsummary = ""\n' "$DIR"
  printf '[publisher]\nenabled = true\nrows_per_message = 8\nstats_interval = 0\nsend_hwm = 100000\n'
  printf '[daemon]\nscan_rows = 10000000\nrate = %s\npause = 0.0\nidle_close = 0.0\n[http]\nport = %s\n' "$RATE" "$PORT"
  # Rows waiting: the window's worth at the pace (at least the merge's default 4096).
  PENDING=$(( RATE * WINDOW / 1000 > 4096 ? RATE * WINDOW / 1000 : 4096 ))
  printf '[merge]\nenabled = %s\ntransforms = "%s/transforms.toml"\ngrid = "-55:55:0.5"\nwindow_ms = %s\nmax_pending_rows = %s\npublish = "ipc://%s/merged.sock"\nrealtime_priority = %s\n' \
    "$([ "$MERGE" = 1 ] && echo true || echo false)" "$HERE" "$WINDOW" "$PENDING" "$DIR" "$RT"
  for i in "${!NAMES[@]}"; do
    h=${NAMES[$i]}
    printf '[[head]]\nname = "%s"\n' "$h"
    if [ -n "${DEVS[$i]:-}" ]; then printf 'device = %s\n' "${DEVS[$i]}"; fi
    printf '[head.publisher]\nendpoint = "ipc://%s/%s.sock"\n[head.synthetic]\nseed = %d\n' "$DIR" "$h" "$((i + 1))"
  done
} > "$DIR/d.toml"
"$BIN" daemon --config "$DIR/d.toml" > "$DIR/run.log" 2>&1 &
PID=$!
scrape() { curl -s "localhost:$PORT/metrics" | grep -E '^stripeline_(frames_acquired_total|merge_rows_total|merge_head_rows_total\{head="[a-z0-9]+",kind="(merged|late|lost)"\})' || true; }
sleep 4
scrape > "$DIR/m1"; T1=$(date +%s.%N); sleep "$SECS"; scrape > "$DIR/m2"; T2=$(date +%s.%N)
kill -TERM "$PID"; wait "$PID" || true
echo "${#NAMES[@]} heads (${HEADS}${DEVICES:+ on devices $DEVICES}), ${WIDTH}x${HEIGHT} Mono8, $BACKEND, rate $RATE/head, batch $BATCH, merge $MERGE (window $WINDOW ms, realtime priority $RT); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$DIR/m1" "$DIR/m2" "$T1" "$T2" <<'PY'
import sys
rd = lambda f: {l.split()[0]: float(l.split()[1]) for l in open(f)}
a, b, t = rd(sys.argv[1]), rd(sys.argv[2]), float(sys.argv[4]) - float(sys.argv[3])
for k in sorted(b): print(f"  {k}: {(b[k] - a.get(k, 0)) / t:,.0f} /s")
PY
grep -E "merge: series complete" "$DIR/run.log" | sed 's/.*merge:/  merge:/' | cut -c1-400 || true
