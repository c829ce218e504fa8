#!/usr/bin/env bash
# Live acquisition from a simulated GigE Vision camera over loopback: the
# frame rate stripeline sustains, and what it counts under injected packet
# loss. Everything runs inside a private network namespace with loopback only
# (GigE Vision discovery broadcasts). Needs root or unprivileged user
# namespaces.
#   bench/camera-loopback.sh [STRIPELINE] [OUT_DIR]
# Environment (defaults in brackets):
#   RATES   frame rates asked of the camera, frames/s   ["200 500 1000 2000"]
#   LOSSES  packet losses injected at 200 frames/s, per thousand ["1 10"]
#   FRAMES  frames per run [2000]; WIDTH x HEIGHT [2048 x 52]
#   PACKET  GigE Vision packet size, bytes, 0 = negotiated (1400 with the
#           simulated cameras: larger packets lose most frames on loopback
#           with Aravis 0.8.26, arv-camera-test-0.8 -i 8000 too) [0]
#   SOCKBUF receive socket buffer, bytes, 0 = OS default (capped at net.core.rmem_max) [4194304]
#   BACKEND auto|cpu|cuda [auto]
#   CAMERA  aravis (arv-fake-gv-camera-0.8, a ramp) or stripeline
#           (`stripeline simulate-camera --cache 64`: 64 synthetic stripe
#           frames rendered once, cycled) [aravis if installed]
# Prints one table row per run and writes OUT_DIR/camera-loopback.txt.
set -euo pipefail
if [[ "${STRIPELINE_IN_NETNS:-}" != 1 ]]; then
  for flags in -n -rn; do
    if unshare $flags true 2>/dev/null; then
      exec unshare $flags env STRIPELINE_IN_NETNS=1 bash "$0" "$@"
    fi
  done
  echo "camera-loopback: cannot create a private network namespace (unshare -n / -rn); not running: discovery would broadcast" >&2
  exit 2
fi
# Loopback up: iproute2 where installed, else the same ioctls from perl (essential on Debian and Ubuntu).
ip link set lo up 2>/dev/null || perl -MSocket -e 'socket(my $s, AF_INET, SOCK_DGRAM, 0) or die "socket: $!\n"; my $r = pack("a16 s x22", "lo", 0); ioctl($s, 0x8913, $r) or die "SIOCGIFFLAGS: $!\n"; my $f = unpack("x16 s", $r); ioctl($s, 0x8914, pack("a16 s x22", "lo", $f | 1)) or die "SIOCSIFFLAGS: $!\n"' || { echo "camera-loopback: cannot bring loopback up" >&2; exit 2; }

BIN=$(realpath "${1:-build/stripeline}")
OUT=${2:-bench/results}
mkdir -p "$OUT"
RATES=${RATES-"200 500 1000 2000"}
LOSSES=${LOSSES-"1 10"}
FRAMES=${FRAMES:-2000}
WIDTH=${WIDTH:-2048}
HEIGHT=${HEIGHT:-52}
PACKET=${PACKET:-0}
SOCKBUF=${SOCKBUF:-4194304}
BACKEND=${BACKEND:-auto}
CAMERA=${CAMERA:-$(command -v arv-fake-gv-camera-0.8 >/dev/null && echo aravis || echo stripeline)}
WORK=$(mktemp -d)
trap 'kill $CAM_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
CAM_PID=

start_camera() {  # $1 = lost packets per thousand
  if [[ $CAMERA == aravis ]]; then
    arv-fake-gv-camera-0.8 -i 127.0.0.1 -s BENCH -r "$1" >/dev/null 2>&1 &
  else
    "$BIN" simulate-camera -i 127.0.0.1 -s BENCH -r "$1" --cache 64 >/dev/null 2>&1 &
  fi
  CAM_PID=$!
  for _ in $(seq 50); do "$BIN" cameras 2>/dev/null | grep -q BENCH && return 0; sleep 0.1; done
  echo "camera-loopback: the simulated camera did not appear" >&2
  exit 1
}
stop_camera() { kill "$CAM_PID" 2>/dev/null || true; wait "$CAM_PID" 2>/dev/null || true; CAM_PID=; }

run_one() {  # $1 = rate, $2 = loss per thousand
  cat > "$WORK/cam.toml" <<TOML
[source]
kind = "camera"
[camera]
id = "BENCH"
width = $WIDTH
height = $HEIGHT
frame_rate = $1
packet_size = $PACKET
packet_socket = false
frames = $FRAMES
stream_buffers = 256
socket_buffer = $SOCKBUF
[processing]
backend = "$BACKEND"
batch_frames = 100
[output]
dir = "$WORK/out"
ply = ""
heightmap = ""
preview = ""
summary = "summary.json"
TOML
  start_camera "$2"
  "$BIN" run -q -c "$WORK/cam.toml" > "$WORK/run.txt" 2>&1 || { cat "$WORK/run.txt" >&2; stop_camera; return 1; }
  stop_camera
  local s="$WORK/out/summary.json"
  field() { sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$s" | head -1; }
  local frames seconds whole lost backend causes
  frames=$(field frames)
  seconds=$(field seconds)
  backend=$(field backend)
  whole=$(field frames_complete)
  lost=$(field lost_total)
  causes="$(field lost_gap)/$(field lost_incomplete)/$(field lost_timeout)/$(field lost_failed)"
  awk -v r="$1" -v l="$2" -v f="$frames" -v s="$seconds" -v w="$whole" -v x="$lost" -v b="$backend" -v c="$causes" \
    'BEGIN { printf "%9s %8s %7d %8.2f %10.1f %10.1f %7d %7.2f%%  %-16s %s\n", r, l, f, s, f / s, w / s, x, 100 * x / f, c, b }'
}

{
  echo "# stripeline $("$BIN" --version) camera-loopback, $(date -u +%Y-%m-%dT%H:%MZ), camera $CAMERA, ${WIDTH}x${HEIGHT} Mono8, packet size ${PACKET} (0 = negotiated), socket buffer ${SOCKBUF} (0 = OS default; rmem_max $(cat /proc/sys/net/core/rmem_max 2>/dev/null)), $FRAMES frames per run, $(nproc) cores"
  echo "# rows = frames in the stream (whole + missing); rows/s is the rate the camera delivered, whole/s what reached the pipeline intact"
  echo "# rate_asked loss/1000 rows seconds rows/s whole/s lost lost% gap/incomplete/timeout/failed backend"
  for r in $RATES; do run_one "$r" 0; done
  for l in $LOSSES; do run_one 200 "$l"; done
} | tee "$OUT/camera-loopback.txt"
