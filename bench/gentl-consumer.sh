#!/usr/bin/env bash
# The GenTL consumer path alone (simulated producer -> batches, no
# processing), 2048x52 Mono8 frames, batches of 300 frames:
#   direct  the grabber writes into the pool's batches (0 copies),
#   copy    buffers of 300 frames copied into batches frame by frame,
#   single  one frame per buffer, copied (the Aravis camera's path),
# each with the producer writing the pixels (a memcpy standing in for the
# grabber's DMA, on the same cores) and without (the consumer's own cost).
#   bench/gentl-consumer.sh [BUILD_DIR] [OUT_DIR]
# Environment: FRAMES per run [30000], RUNS (median of) [5].
set -euo pipefail
build=${1:-build}
out=${2:-bench/results}
frames=${FRAMES:-30000}
runs=${RUNS:-5}
bench="$build/gentl_consumer_bench"
cti="$build/gentl/stripeline-sim.cti"
[[ -x "$bench" && -f "$cti" ]] || { echo "gentl-consumer: build the targets gentl_consumer_bench and stripeline_gentl_sim first" >&2; exit 2; }
host=$(if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' A-Z' '-a-z'; else echo "debian12-$(nproc)core-cpu"; fi)
file="$out/$host-$(date -u +%F)-gentl-consumer.txt"
mkdir -p "$out"
tmp=$(mktemp)
{
  echo "# stripeline GenTL consumer path, $(date -u +%FT%RZ), 2048x52 Mono8, batches of 300 frames, $frames frames per run after 3000 of warm-up, median of $runs runs, $(nproc) cores"
  echo "# pixels: 1 = the simulated producer writes every frame into the buffer (memcpy on the same cores, standing in for the grabber's DMA); 0 = it leaves them (the consumer alone)"
  echo "# Aravis loopback on the 2-core machine: 680-735 frames/s of 2048x52 (bench/results/debian12-2core-cpu-2026-11-22-camera-loopback.txt); x = frames/s / 735"
  echo "# mode  pixels frames/buffer     frames   seconds     frames/s       MB/s   x Aravis"
  for mode in direct copy single; do
    for px in 1 0; do
      line=$(nice -n 10 "$bench" "$cti" "$mode" "$px" "$frames" "$runs")
      fps=$(awk '{print $6}' <<<"$line")
      echo "$line $(awk -v f="$fps" 'BEGIN{printf "%10.0f", f/735}')"
    done
  done
} | tee "$tmp"
mv "$tmp" "$file"
echo "wrote $file"
