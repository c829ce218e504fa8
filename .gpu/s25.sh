#!/bin/bash
# GPU call 2 of session 8 (nvidia-h100-x1): the merged tree (two heads facing each other, the row measurer shared by the sink, range maps and the merged scan). GPU tests: the measuring sink's CUDA volumes after the refactor, the two-heads CUDA test, the heads daemon on the GPU, the CUDA unit tests; memcheck of the measure GPU tests.
set -uo pipefail
G=/tmp/g25; SRC=$(cd "$(dirname "$0")/.." && pwd); [ -x $G/bin/stripeline ] || { mkdir -p $G && for t in "$(dirname "$0")"/lib.tar.xz "$(dirname "$0")"/s25.tar.xz; do xz -dc "$t" | tar -C $G -xf -; done; }
export LD_LIBRARY_PATH=$G/lib STRIPELINE_BINARY=$G/bin/stripeline STRIPELINE_SOURCE_DIR=$SRC
O=${OUT:-/tmp/out}; mkdir -p $O; cd $SRC; T=$O/tests.txt
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader; echo "cores $(nproc)"; } | tee $O/device.txt
{
t0=$SECONDS; timeout 120 $G/bin/measure_tests --gtest_brief=1 --gtest_filter='MeasureCuda.*:MeasureSyntheticCuda.*' 2>&1; echo "measure GPU tests exit $? in $((SECONDS-t0)) s"
t0=$SECONDS; timeout 200 $G/bin/measure_two_heads_tests --gtest_filter='TwoHeadsCuda.*' 2>&1 | grep -E '^\[ measure|^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED'; echo "two heads CUDA exit ${PIPESTATUS[0]} in $((SECONDS-t0)) s"
t0=$SECONDS; timeout 90 $G/bin/service_tests --gtest_brief=1 --gtest_filter='HeadsDaemonGpu.*' 2>&1; echo "HeadsDaemonGpu exit $? in $((SECONDS-t0)) s"
t0=$SECONDS; timeout 200 $G/bin/unit_tests --gtest_brief=1 --gtest_filter='*Cuda*:*Gpu*:LineModel*:-CudaBench.*' 2>&1; echo "GPU unit tests exit $? in $((SECONDS-t0)) s"
t0=$SECONDS; timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $G/bin/measure_tests --gtest_brief=1 --gtest_filter='MeasureCuda.*:MeasureSyntheticCuda.*' 2>&1 | tail -4; echo "memcheck measure exit ${PIPESTATUS[0]} in $((SECONDS-t0)) s"
} > $T 2>&1; grep -E "^\[ measure|^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [A-Z]|exit|ERROR SUMMARY" $T | head -30
