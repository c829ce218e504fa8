// CUDA kernel of the line model. See line_model_kernels.h.
#include <cuda_runtime.h>

#include "core/cuda/check.h"
#include "kernels/cuda/line_model_kernels.h"

namespace stripeline::kernels::cuda {

namespace {

// Frames per block: the frames of a batch are few (hundreds), so small
// blocks spread them over the multiprocessors.
constexpr int kThreads = 32;

__global__ void line_model_kernel(LineModelView v, LineModelParams p) {
  const int f = static_cast<int>(blockIdx.x) * blockDim.x + static_cast<int>(threadIdx.x);
  if (f < v.frames) line_model_frame(v, p, f);
}

}  // namespace

void launch_line_model(const LineModelView& view, const LineModelParams& params, cudaStream_t stream) {
  if (view.frames <= 0 || view.width <= 0 || params.candidates <= 0) return;
  const unsigned blocks = static_cast<unsigned>((view.frames + kThreads - 1) / kThreads);
  line_model_kernel<<<blocks, kThreads, 0, stream>>>(view, params);
  STRIPELINE_CUDA_CHECK_LAUNCH("line_model_kernel");
}

}  // namespace stripeline::kernels::cuda
