#!/usr/bin/env bash
# `stripeline run` on a frame grabber (the simulated GenTL producer), the
# whole product path (grabber -> batches -> extraction -> sinks), with the
# grabber writing into the pipeline's batches (camera.direct_buffers = true:
# the direct, zero-copy path) and with every frame copied into the batches
# (direct_buffers = false: the copy path). 2048x52 Mono8, batches of 300
# frames (= frames_per_buffer), the producer serving 600 cached frames as
# fast as buffers come back (SimWaitForBuffers: nothing is lost), no file
# output but summary.json (the consumer's throughput, not the disk's).
#   bench/gentl-run.sh [BUILD_DIR] [BACKEND cpu|cuda|auto] [OUT_DIR]
# Environment: FRAMES per run [30000], RUNS (median of) [5].
# Prints frames/s of each path (summary.json profiles_per_s) and the ratio
# direct / copy.
set -euo pipefail
build=${1:-build}
backend=${2:-auto}
out=${3:-bench/results}
frames=${FRAMES:-30000}
runs=${RUNS:-5}
exe="$build/stripeline"
cti="$(cd "$build" && pwd)/gentl/stripeline-sim.cti"
[[ -x "$exe" && -f "$cti" ]] || { echo "gentl-run: build the targets stripeline and stripeline_gentl_sim first" >&2; exit 2; }
host=$(if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' A-Z' '-a-z'; else echo "debian12-$(nproc)core-cpu"; fi)
tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
config() {  # $1 = true|false
  cat <<TOML
[source]
kind = "camera"
[camera]
transport = "gentl"
width = 2048
height = 52
frame_rate = 1000000
frames = $frames
direct_buffers = $1
[camera.gentl]
cti = "$cti"
frames_per_buffer = 300
grabber_features = ["SimCachedFrames=600", "SimWaitForBuffers=1"]
[processing]
backend = "$backend"
batch_frames = 300
[output]
dir = "$tmpdir/out-$1"
ply = ""
heightmap = ""
preview = ""
summary = "summary.json"
TOML
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
declare -A fps
for direct in true false; do
  config "$direct" >"$tmpdir/$direct.toml"
  for ((i = 0; i < runs; ++i)); do
    "$exe" run -q -c "$tmpdir/$direct.toml" >"$tmpdir/log" 2>&1 || { cat "$tmpdir/log" >&2; exit 1; }
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); a=s["acquisition"]; print(s["profiles_per_s"], a["path"], a["bytes_copied"], s["backend"])' \
      "$tmpdir/out-$direct/summary.json" >>"$tmpdir/runs-$direct"
  done
  fps[$direct]=$(awk '{print $1}' "$tmpdir/runs-$direct" | median)
done
file="$out/$host-$(date -u +%F)-gentl-run.txt"
mkdir -p "$out"
{
  echo "# stripeline run on the simulated GenTL grabber, $(date -u +%FT%RZ), $host, $(nproc) cores, backend $(awk 'NR==1{print $4}' "$tmpdir/runs-true")"
  echo "# 2048x52 Mono8, batches of 300 frames = frames_per_buffer, $frames frames per run, median of $runs runs"
  echo "# path   frames/s   (path and bytes copied as summary.json reports them, first run)"
  printf "direct %10.0f   %s\n" "${fps[true]}" "$(awk 'NR==1{print $2, $3}' "$tmpdir/runs-true")"
  printf "copy   %10.0f   %s\n" "${fps[false]}" "$(awk 'NR==1{print $2, $3}' "$tmpdir/runs-false")"
  awk -v d="${fps[true]}" -v c="${fps[false]}" 'BEGIN {printf "ratio direct/copy %.3f\n", d / c}'
} | tee "$file"
echo "wrote $file"
