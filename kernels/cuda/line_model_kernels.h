#pragma once
// CUDA kernel of the line model (kernels/line_model.h): one thread per frame
// runs line_model_frame(), the very function of the CPU loop, so both give
// the same bits. ASYNCHRONOUS on `stream`: enqueues and returns; no
// allocation, no sync. The view's pointers are device pointers (the
// processor's candidate profiles, its output profiles and its back-pointer
// scratch of line_model_scratch_bytes(K, width, frames) bytes, with
// back_stride = view.frames).
#include <cuda_runtime_api.h>

#include "kernels/line_model.h"

namespace stripeline::kernels::cuda {

void launch_line_model(const LineModelView& view, const LineModelParams& params, cudaStream_t stream);

}  // namespace stripeline::kernels::cuda
