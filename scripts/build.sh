#!/usr/bin/env bash
# Configure and build stripeline into build/ (Release). The CUDA backend is
# built when nvcc is found (/usr/local/cuda), for Turing, Ampere and Hopper.
# Extra arguments go to cmake, e.g. -DSTRIPELINE_CUDA=OFF; so do the words of
# $STRIPELINE_CMAKE_ARGS (unset for users; .ci/run sets it: docs/ci.md).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${CUDACXX:-}" && -x /usr/local/cuda/bin/nvcc ]]; then export CUDACXX=/usr/local/cuda/bin/nvcc; fi
read -r -a extra <<<"${STRIPELINE_CMAKE_ARGS:-}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${extra[@]}" "$@"
cmake --build build -j"$(nproc)"
