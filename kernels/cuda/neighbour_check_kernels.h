#pragma once
// CUDA kernels of the neighbour check (kernels/neighbour_check.h): one thread
// per (frame, column) marks, a second launch empties the marked columns; the
// same functions as the CPU. ASYNCHRONOUS on `stream`: enqueues and returns;
// no allocation, no sync. The view's pointers are device pointers (the
// device profiles and the processor's mark buffer).
#include <cuda_runtime_api.h>

#include "kernels/neighbour_check.h"

namespace stripeline::kernels::cuda {

void launch_neighbour_check(const NeighbourCheckView& view, const NeighbourCheckParams& params, cudaStream_t stream);

}  // namespace stripeline::kernels::cuda
