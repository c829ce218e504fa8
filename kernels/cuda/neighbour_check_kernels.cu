// CUDA kernels of the neighbour check. See neighbour_check_kernels.h.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/cuda/check.h"
#include "kernels/cuda/neighbour_check_kernels.h"

namespace stripeline::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void mark_isolated_kernel(NeighbourCheckView v, NeighbourCheckParams p) {
  const std::size_t n = static_cast<std::size_t>(v.frames) * v.width;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    v.isolated[i] = isolated_detection(v, p, static_cast<int>(i / v.width), static_cast<int>(i % v.width));
}

__global__ void clear_isolated_kernel(NeighbourCheckView v) {
  const std::size_t n = static_cast<std::size_t>(v.frames) * v.width;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    clear_if_isolated(v, static_cast<int>(i / v.width), static_cast<int>(i % v.width));
}

}  // namespace

void launch_neighbour_check(const NeighbourCheckView& view, const NeighbourCheckParams& params, cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(view.frames) * view.width;
  if (n == 0 || params.columns <= 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 65535u * 8));
  mark_isolated_kernel<<<blocks, kThreads, 0, stream>>>(view, params);
  STRIPELINE_CUDA_CHECK_LAUNCH("mark_isolated_kernel");
  clear_isolated_kernel<<<blocks, kThreads, 0, stream>>>(view);
  STRIPELINE_CUDA_CHECK_LAUNCH("clear_isolated_kernel");
}

}  // namespace stripeline::kernels::cuda
