#!/usr/bin/env bash
# Release-build soak: the daemon (endless synthetic scanner, per-scan files,
# ZeroMQ publisher on loopback) and a subscriber that receives series after
# series, for MINUTES minutes. Every INTERVAL seconds it samples the daemon's
# RSS, open file descriptors and threads (/proc) and its counters (/metrics);
# at the end it stops the daemon with SIGTERM and reports
#   - the RSS slope after warm-up, in MB/h (target < 1 MB/h): least squares
#     over every sample after WARMUP seconds, with its standard error (the
#     daemon's per-scan buffers make RSS a sawtooth, up and down once per
#     scan: sample often, soak long), and the mean RSS of the first and the
#     last third after warm-up,
#   - fds and threads: first/last/max after warm-up (a leak grows them),
#   - conservation: profiles emitted = published + dropped (hwm,
#     no_subscriber, error), from the daemon's final log line (exact) and
#     from the last /metrics sample (in flight at that moment: may differ by
#     a batch),
#   - temporaries left in the output directory after the stop (expected 0).
#   bench/soak.sh MINUTES [STRIPELINE] [OUT_FILE]
#   bench/soak.sh --analyse SAMPLES_TSV [WARMUP]   (the report again, from a run's samples)
# Environment (defaults in brackets): INTERVAL seconds between samples [5],
# WARMUP seconds [min(180, a fifth of the run)], RATE frames/s [500],
# WIDTH x HEIGHT synthetic frame [512 x 32], SCAN_ROWS rows per scan [5000],
# KEEP scans kept on disk (older ones deleted, the disk stays bounded) [6],
# PORT_HTTP [20000 + 2 * (PID mod 20000)], PORT_ZMQ [PORT_HTTP + 1].
# Exit: 0 when the slope is below 1 MB/h, conservation is exact and no
# temporary is left; 1 otherwise; 2 on bad usage.
set -euo pipefail

# report SAMPLES WARMUP DURATION [final emitted published dropped rc temps series]
report() {
  awk -v w="$2" -v dur="$3" -v fe="${4:-}" -v fp="${5:-}" -v fd="${6:-}" -v rc="${7:-}" \
      -v temps="${8:-}" -v series="${9:-}" -v rate="${RATE:-?}" -v width="${WIDTH:-?}" -v height="${HEIGHT:-?}" -F'\t' '
  NR == 1 { next }
  { n_all++; last_t = $1; if (n_all == 1) { rss0 = $2; fds0 = $3; thr0 = $4 } last_rss = $2; last_fds = $3; last_thr = $4
    if ($5 > 0) { le = $5; lp = $6; ld = $7 } }
  $1 >= w { n++; xs[n] = $1 / 3600.0; ys[n] = $2 / 1024.0
            if (n == 1) { wr = $2; wf = $3; wt = $4 } if ($2 > mr) mr = $2; if ($3 > mf) mf = $3; if ($4 > mt) mt = $4 }
  END {
    # least squares over every sample after warm-up, with its standard error
    for (i = 1; i <= n; i++) { mx += xs[i] / n; my += ys[i] / n }
    for (i = 1; i <= n; i++) { sxx += (xs[i] - mx) ^ 2; sxy += (xs[i] - mx) * (ys[i] - my) }
    slope = (n > 2 && sxx > 0) ? sxy / sxx : 0
    for (i = 1; i <= n; i++) { r = ys[i] - my - slope * (xs[i] - mx); sse += r * r }
    se = (n > 2 && sxx > 0) ? sqrt(sse / (n - 2) / sxx) : 0
    # mean RSS of the first and the last third after warm-up
    t3 = int(n / 3); for (i = 1; i <= t3; i++) { a += ys[i] / t3; b += ys[n - t3 + i] / t3 }
    if (dur == "") dur = last_t
    printf "soak: %.1f min, daemon (synthetic %sx%s at %s frames/s, cpu backend, per-scan PLY + PNG + JSON, publisher) + subscriber on loopback\n", dur / 60, width, height, rate
    printf "samples: %d (%d after the %d s warm-up)\n", n_all, n, w
    printf "RSS: start %.1f MB, after warm-up %.1f MB, max %.1f MB, end %.1f MB; mean of the first third after warm-up %.2f MB, of the last third %.2f MB\n", rss0 / 1024, wr / 1024, mr / 1024, last_rss / 1024, a, b
    printf "RSS slope after warm-up: %.2f +- %.2f MB/h (least squares over every sample, standard error; target < 1 MB/h)\n", slope, se
    printf "open fds: start %d, after warm-up %d, max %d, end %d\n", fds0, wf, mf, last_fds
    printf "threads: start %d, after warm-up %d, max %d, end %d\n", thr0, wt, mt, last_thr
    printf "last /metrics sample: emitted %d, published %d, dropped %d (difference %d: batches in flight)\n", le, lp, ld, le - lp - ld
    if (fe == "") { print "final: (not in this analysis)"; exit }
    cons = (fe != "" && fe == fp + fd) ? "exact" : "NOT exact"
    printf "final (daemon log): emitted %s = published %s + dropped %s: %s\n", fe, fp, fd, cons
    printf "subscriber: %d series received to their end; daemon exit code %d; temporaries left %d\n", series, rc, temps
    ok = slope < 1.0 && cons == "exact" && temps == 0 && rc == 0 && mf == wf && mt == wt
    printf "result: %s\n", ok ? "PASS" : "FAIL"
  }' "$1"
}

if [[ "${1:-}" == "--analyse" ]]; then
  [[ -f "${2:-}" ]] || { echo "usage: bench/soak.sh --analyse SAMPLES_TSV [WARMUP]" >&2; exit 2; }
  report "$2" "${3:-180}" ""
  exit 0
fi

MINUTES=${1:-}
if [[ -z "$MINUTES" || ! "$MINUTES" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
  echo "usage: bench/soak.sh MINUTES [STRIPELINE] [OUT_FILE]" >&2
  exit 2
fi
SRC=$(realpath "${2:-build/stripeline}")
OUT_FILE=${3:-}
INTERVAL=${INTERVAL:-5}
DURATION=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 }')
WARMUP=${WARMUP:-$(( DURATION / 5 < 180 ? DURATION / 5 : 180 ))}
RATE=${RATE:-500}
WIDTH=${WIDTH:-512}
HEIGHT=${HEIGHT:-32}
SCAN_ROWS=${SCAN_ROWS:-5000}
KEEP=${KEEP:-6}
PORT_HTTP=${PORT_HTTP:-$((20000 + $$ % 20000 * 2))}
PORT_ZMQ=${PORT_ZMQ:-$((PORT_HTTP + 1))}

WORK=$(mktemp -d /tmp/stripeline-soak.XXXXXX)
# The binary is copied: a rebuild during the soak does not touch what runs.
cp "$SRC" "$WORK/stripeline"
BIN="$WORK/stripeline"
mkdir -p "$WORK/out"
cat > "$WORK/soak.toml" <<EOF
[source]
kind = "synthetic"
[synthetic]
width = $WIDTH
frame_height = $HEIGHT
frames = 0
[processing]
backend = "cpu"
batch_frames = 50
[output]
dir = "$WORK/out"
ply = "scan.ply"
heightmap = "heightmap.png"
preview = ""
summary = "scan.json"
[publisher]
enabled = true
endpoint = "tcp://127.0.0.1:$PORT_ZMQ"
send_hwm = 500
rows_per_message = 8
[daemon]
scan_rows = $SCAN_ROWS
rate = $RATE
stop_timeout = 30.0
log_level = "info"
[http]
enabled = true
address = "127.0.0.1"
port = $PORT_HTTP
EOF

DAEMON_PID=""
SUB_LOOP_PID=""
cleanup() {
  [[ -n "$SUB_LOOP_PID" ]] && kill "$SUB_LOOP_PID" 2>/dev/null || true
  [[ -n "$DAEMON_PID" ]] && kill -TERM "$DAEMON_PID" 2>/dev/null || true
}
trap cleanup EXIT

"$BIN" daemon --config "$WORK/soak.toml" > "$WORK/daemon.log" 2>&1 &
DAEMON_PID=$!
metrics() { curl -s --max-time 2 "http://127.0.0.1:$PORT_HTTP/metrics" 2>/dev/null || true; }
for _ in $(seq 100); do
  metrics | grep -q '^stripeline_up' && break
  kill -0 "$DAEMON_PID" 2>/dev/null || { echo "soak: the daemon exited:" >&2; cat "$WORK/daemon.log" >&2; exit 1; }
  sleep 0.1
done

# The subscriber: one `stripeline subscribe` per series, again and again.
(
  n=0
  while true; do
    "$BIN" subscribe "tcp://127.0.0.1:$PORT_ZMQ" --timeout 60 -q >> "$WORK/subscriber.log" 2>&1 || true
    n=$((n + 1))
  done
) &
SUB_LOOP_PID=$!

metric() {  # metric NAME [LABEL-FILTER] from the text in $M
  awk -v n="$1" -v f="${2:-}" '$1 == n || (index($1, n "{") == 1 && (f == "" || index($1, f) > 0)) { s += $2 } END { printf "%.0f", s }' <<< "$M"
}

SAMPLES="$WORK/samples.tsv"
printf 't_s\trss_kb\tfds\tthreads\temitted\tpublished\tdropped\n' > "$SAMPLES"
start=$(date +%s)
while true; do
  now=$(date +%s)
  t=$((now - start))
  (( t > DURATION )) && break
  kill -0 "$DAEMON_PID" 2>/dev/null || { echo "soak: the daemon died after $t s" >&2; tail -20 "$WORK/daemon.log" >&2; exit 1; }
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$DAEMON_PID/status")
  threads=$(awk '/^Threads:/ { print $2 }' "/proc/$DAEMON_PID/status")
  fds=$(ls "/proc/$DAEMON_PID/fd" | wc -l)
  M=$(metrics)
  emitted=$(metric stripeline_profiles_emitted_total)
  published=$(metric stripeline_profiles_published_total)
  dropped=$(metric stripeline_profiles_dropped_total)
  printf '%d\t%d\t%d\t%d\t%s\t%s\t%s\n' "$t" "$rss" "$fds" "$threads" "$emitted" "$published" "$dropped" >> "$SAMPLES"
  # Bounded disk: keep the newest KEEP scans.
  for ext in scan.ply heightmap.png scan.json; do
    { ls -1t "$WORK/out/"*-"$ext" 2>/dev/null || true; } | tail -n +"$((KEEP + 1))" | xargs -r rm -f
  done
  sleep "$INTERVAL"
done

kill "$SUB_LOOP_PID" 2>/dev/null || true
wait "$SUB_LOOP_PID" 2>/dev/null || true
SUB_LOOP_PID=""
kill -TERM "$DAEMON_PID"
rc=0
wait "$DAEMON_PID" || rc=$?
DAEMON_PID=""
pkill_rest=$(pgrep -f "^$BIN subscribe" || true)
for p in $pkill_rest; do kill "$p" 2>/dev/null || true; done

final=$(grep 'daemon: stopped:' "$WORK/daemon.log" | tail -1 || true)
read -r f_emitted f_published f_dropped < <(sed -E 's/.*profiles emitted ([0-9]+), published ([0-9]+), dropped ([0-9]+).*/\1 \2 \3/' <<< "$final")
temps=$(find "$WORK/out" -name '.*.tmp-*' | wc -l)
series=$(grep -c '^received' "$WORK/subscriber.log" || true)

report=$(report "$SAMPLES" "$WARMUP" "$DURATION" "${f_emitted:-}" "${f_published:-}" "${f_dropped:-}" "$rc" "$temps" "$series")
echo "$report"
if [[ -n "$OUT_FILE" ]]; then
  {
    echo "# bench/soak.sh $MINUTES ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -sr), $(nproc) cores, $("$BIN" --version | head -1))"
    echo "$report"
    echo
    echo "## daemon log (last lines)"
    tail -5 "$WORK/daemon.log"
    echo
    echo "## samples (t_s, rss_kb, fds, threads, emitted, published, dropped)"
    cat "$SAMPLES"
  } > "$OUT_FILE"
fi
if grep -q 'result: PASS' <<< "$report"; then
  rm -rf "$WORK"
else
  echo "soak: kept $WORK (daemon.log, subscriber.log, samples.tsv)" >&2
  exit 1
fi
