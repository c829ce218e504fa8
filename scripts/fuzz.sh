#!/usr/bin/env bash
# Fuzzing (docs/fuzzing.md): builds the 'fuzz' preset (clang, libFuzzer,
# ASan + UBSan, CPU only) and runs every target for SECONDS each over its
# seed corpus (tests/fuzz/corpus/<target>/, read-only here) plus a working
# corpus (build-fuzz/fuzz-runs/<target>/corpus/). Fails on any finding: a
# crash, a sanitizer report, a leak, a timeout (> 10 s per input) or an
# allocation above 1 GiB; the input is saved under build-fuzz/fuzz-runs/<target>/
# (an earlier run's findings are moved to <target>/earlier/ first).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   SECONDS per target (default 60); targets: image config wire calibration target
#   scripts/fuzz.sh --seeds                 regenerate the seed corpora with the project's writers
#
# FUZZ_JOBS=N runs N targets at a time (default 1). Exit: 0 clean, 1 a finding, 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."
ALL=(image config wire calibration target)
BIN=build-fuzz/tests/fuzz
OUT=${FUZZ_OUT:-build-fuzz/fuzz-runs}

build() {
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j"$(nproc)"
}

if [[ "${1:-}" == "--seeds" ]]; then
  build
  # Regression inputs (regression-*: what a run once found, fixed since) stay.
  find tests/fuzz/corpus -type f ! -name 'regression-*' -delete 2>/dev/null || true
  "$BIN/fuzz_make_seeds" tests/fuzz/corpus
  mkdir -p tests/fuzz/corpus/config tests/fuzz/corpus/target
  cp configs/*.toml tests/fuzz/corpus/config/
  cp configs/targets/*.toml tests/fuzz/corpus/target/
  echo "seeds written under tests/fuzz/corpus/"
  exit 0
fi

SECONDS_PER_TARGET=${1:-60}
[[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]] || { echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...] | --seeds" >&2; exit 2; }
shift || true
TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=("${ALL[@]}")

build
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:quarantine_size_mb=64}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local t=$1 dir="$OUT/$1"
  mkdir -p "$dir/corpus"
  # Findings of an earlier run (reported then) move aside: only this run's count.
  if compgen -G "$dir/crash-*" >/dev/null || compgen -G "$dir/leak-*" >/dev/null || compgen -G "$dir/timeout-*" >/dev/null ||
     compgen -G "$dir/oom-*" >/dev/null || compgen -G "$dir/slow-unit-*" >/dev/null; then
    mkdir -p "$dir/earlier"
    mv "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* "$dir"/slow-unit-* "$dir/earlier/" 2>/dev/null || true
  fi
  local dict=()
  case $t in
    wire) dict=(-dict=tests/fuzz/dict/wire.dict) ;;
    config | calibration | target) dict=(-dict=tests/fuzz/dict/toml.dict) ;;
  esac
  local rc=0
  "$BIN/fuzz_$t" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -print_final_stats=1 -artifact_prefix="$dir/" "${dict[@]}" "$dir/corpus" "tests/fuzz/corpus/$t" >"$dir/log" 2>&1 || rc=$?
  local found
  found=$(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'slow-unit-*' \) | wc -l)
  local execs cov
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/log" | grep -o '[0-9]*$' || echo '?')
  cov=$(grep -oE '(cov|ft): [0-9]+' "$dir/log" | tail -2 | tr '\n' ' ' || true)
  if [[ $rc -ne 0 || $found -ne 0 ]]; then
    echo "fuzz_$t: FINDING (exit $rc, $found artifact(s) in $dir/); log: $dir/log"
    grep -m3 -E 'ERROR|runtime error|SUMMARY' "$dir/log" || true
    return 1
  fi
  echo "fuzz_$t: ok, $execs executions in ${SECONDS_PER_TARGET} s, $cov, 0 findings"
}

JOBS=${FUZZ_JOBS:-1}
status=0
pids=()
for t in "${TARGETS[@]}"; do
  [[ " ${ALL[*]} " == *" $t "* ]] || { echo "unknown target '$t' (expected one of: ${ALL[*]})" >&2; exit 2; }
  run_one "$t" &
  pids+=($!)
  if [[ ${#pids[@]} -ge $JOBS ]]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
