// CUDA kernel of the calibrated points. See calibrated_points_kernels.h.
#include <cuda_runtime.h>

#include "core/cuda/check.h"
#include "kernels/cuda/calibrated_points_kernels.h"

namespace stripeline::kernels::cuda {

namespace {

constexpr int kThreads = 256;

// The model travels by value as a kernel parameter (about 200 bytes): no
// device allocation, no copy on the stream.
__global__ void calibrated_points_kernel(SheetOfLightMap<double> m, CalibratedPointsView v) {
  const std::size_t n = static_cast<std::size_t>(v.frames) * v.slots * v.width;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int x = static_cast<int>(i % v.width);
    const std::size_t fs = i / v.width;
    calibrated_point_at(m, v, static_cast<int>(fs / v.slots), static_cast<int>(fs % v.slots), x);
  }
}

}  // namespace

void launch_calibrated_points(const SheetOfLightMap<double>& model, const CalibratedPointsView& view, cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(view.frames) * view.slots * view.width;
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 65535u * 8));
  calibrated_points_kernel<<<blocks, kThreads, 0, stream>>>(model, view);
  STRIPELINE_CUDA_CHECK_LAUNCH("calibrated_points_kernel");
}

}  // namespace stripeline::kernels::cuda
