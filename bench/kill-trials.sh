#!/usr/bin/env bash
# Kill trials, the long run: `stripeline run`, `replay --loops 0` and `daemon`
# (tiny synthetic frames) killed at random points with SIGINT, SIGTERM or
# SIGKILL, TRIALS times in all (a third each). After every trial each
# final-named file must parse (PLY header and size, PNG/TIFF decode, JSON),
# no temporary of a SIGINT/SIGTERM-ed process may survive, and at the end the
# next complete run of each kind must have swept every SIGKILL leftover.
# It is the ctest FaultTrials.RunReplayDaemonKilledAtRandomPoints (100 trials)
# with more trials and another seed.
#   bench/kill-trials.sh [TRIALS] [BUILD_DIR] [OUT_FILE]
# Environment: SEED (default: the time). Prints the figures line; exit 0 when
# every check held.
set -euo pipefail
TRIALS=${1:-600}
BUILD=$(realpath "${2:-build}")
OUT_FILE=${3:-}
SEED=${SEED:-$(date +%s)}
TEST="$BUILD/tests/fault_tests"
if [[ ! -x "$TEST" ]]; then
  echo "kill-trials: $TEST not found (build it: cmake --build $BUILD --target fault_tests)" >&2
  exit 2
fi
start=$(date +%s)
rc=0
log=$(STRIPELINE_KILL_TRIALS="$TRIALS" STRIPELINE_KILL_SEED="$SEED" "$TEST" --gtest_filter='FaultTrials.*' 2>&1) || rc=$?
secs=$(( $(date +%s) - start ))
figures=$(grep '^kill trials:' <<< "$log" || echo "kill trials: no figures (the test did not finish)")
echo "$figures"
echo "result: $([[ $rc == 0 ]] && echo PASS || echo FAIL) in ${secs} s"
[[ $rc == 0 ]] || grep -E 'Failure|trial [0-9]+' <<< "$log" | head -40 >&2
if [[ -n "$OUT_FILE" ]]; then
  {
    echo "# bench/kill-trials.sh $TRIALS ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -sr), $(nproc) cores, seed $SEED)"
    echo "$figures"
    echo "result: $([[ $rc == 0 ]] && echo PASS || echo FAIL) in ${secs} s"
  } > "$OUT_FILE"
fi
exit $rc
