#!/usr/bin/env bash
# On a GPU machine, from a bundle made by ../shared/tools/device-bundle
# (bin/unit_tests, bin/stripeline, lib/): every GPU test, the sanitizers,
# the benchmark and a kernel profile. Logs go to $OUT (default /tmp/gpu-check).
#   bundle/gpu-check.sh [quick]
set -uo pipefail
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export STRIPELINE_BINARY=$PWD/bin/stripeline
export STRIPELINE_SOURCE_DIR=${STRIPELINE_SOURCE_DIR:-$PWD/src}
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
step() { echo "== $*"; }

step "device"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$OUT/device.txt"
step "unit tests (all, GPU ones included)"
[[ "${SKIP_UNIT:-}" == 1 ]] || ./bin/unit_tests --gtest_brief=1 > "$OUT/unit_tests.txt" 2>&1; echo "unit_tests exit $?"; tail -5 "$OUT/unit_tests.txt"
step "compute-sanitizer memcheck (GPU tests)"
# Some tests provoke CUDA API errors on purpose (bad handles, out of memory):
# those are not memory errors, so API error reports are off.
[[ "${SKIP_MEMCHECK:-}" == 1 ]] || compute-sanitizer --tool memcheck --report-api-errors no --leak-check full --error-exitcode 9 ./bin/unit_tests --gtest_brief=1 --gtest_filter='Cuda*' > "$OUT/memcheck.txt" 2>&1
echo "memcheck exit $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.txt" | tail -3
step "compute-sanitizer racecheck (GPU tests)"
# The kernels that share memory between threads: fused chain and blur. Racecheck
# is slow (every shared access is tracked), so the geometry tests, not the 300-frame ones.
timeout "${RACECHECK_TIMEOUT:-300}" compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 9 ./bin/unit_tests --gtest_brief=1 \
  --gtest_filter="${RACECHECK_FILTER:-CudaFused.MatchesCpuOnEveryGeometry:CudaFused.TallFramesFallBackToPerStageKernels:CudaBlur.MatchesCpuOnOddSizesEveryBlurSize}" > "$OUT/racecheck.txt" 2>&1
echo "racecheck exit $?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED" "$OUT/racecheck.txt" | tail -3
if [[ "${1:-}" == quick ]]; then exit 0; fi
step "benchmark"
./bin/stripeline bench --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1; echo "bench exit $?"; cat "$OUT/bench.txt"
step "ncu: fused kernel"
ncu --kernel-name regex:fused --launch-skip 3 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
    ./bin/stripeline bench --quick > "$OUT/ncu.txt" 2>&1; echo "ncu exit $?"; grep -E "Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers" "$OUT/ncu.txt" | head -12
