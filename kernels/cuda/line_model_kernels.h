#pragma once
// CUDA kernel of the line model (kernels/line_model.h). One warp per frame:
// the lanes load 32 columns' candidates at a time (coalesced) into shared
// memory, then walk those columns in order with one lane per state, each
// calling the very functions of the CPU loop (enter_none, enter_candidate,
// final_state), so both give the same bits; the trace back walks the
// back-pointers 32 columns at a time from shared memory. A frame's walk is
// sequential by nature; spreading it over a warp keeps its memory traffic
// coalesced and off the critical path (one thread per frame, the first
// design, waited on global memory at every column: 3.8 ms per production
// batch on an H100).
//
// ASYNCHRONOUS on `stream`: enqueues and returns; no allocation, no sync.
// The view's pointers are device pointers: the processor's candidate
// profiles, its output profiles, and `back` = its scratch of
// line_model_device_scratch_bytes(K, width, frames) bytes (back_stride is
// not used: the kernel lays its scratch out itself).
#include <cstddef>

#include <cuda_runtime_api.h>

#include "kernels/line_model.h"

namespace stripeline::kernels::cuda {

// Per frame and column: K + 1 back-pointers, the exclusion mask and the
// chosen state.
inline std::size_t line_model_device_scratch_bytes(int candidates, int width, int frames) {
  return static_cast<std::size_t>(candidates + 3) * static_cast<std::size_t>(width) * static_cast<std::size_t>(frames);
}

void launch_line_model(const LineModelView& view, const LineModelParams& params, cudaStream_t stream);

}  // namespace stripeline::kernels::cuda
