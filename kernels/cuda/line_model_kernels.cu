// CUDA kernel of the line model. See line_model_kernels.h.
#include <atomic>

#include <cuda_runtime.h>

#include "core/cuda/check.h"
#include "kernels/cuda/line_model_kernels.h"
#include "kernels/line_model_lanes.h"

namespace stripeline::kernels::cuda {

namespace {

namespace lm = line_model;

constexpr int kWarp = kLineKernelLanes;
constexpr unsigned kFullMask = 0xFFFFFFFFu;
// Shared memory a block may take: the opt-in set by configure_line_model,
// up to what a 2048-column frame with 8 candidates needs (~50 KiB), which
// leaves an SM four frames at once. (Caching the first two candidates of
// every column there too, 118 KiB, left one frame per SM: 1.27 ms per
// production batch instead of 0.92 on an H100.)
constexpr std::size_t kDefaultShared = 48 * 1024, kMostShared = 56 * 1024;
std::atomic<std::size_t> g_shared_limit{kDefaultShared};

// One frame per block of one warp: the phases of line_model_frame_lanes()
// with the lanes side by side (__syncwarp between phases).
__global__ void line_model_kernel(LineModelView v, LineModelParams p, unsigned char* global_columns, bool columns_shared) {
  extern __shared__ __align__(8) unsigned char shared[];
  const int f = static_cast<int>(blockIdx.x), lane = static_cast<int>(threadIdx.x);
  const LineLaneLayout size = line_lane_layout(p.candidates, v.width, kWarp, nullptr, nullptr);
  unsigned char* columns = columns_shared ? shared + size.fixed_bytes : global_columns + static_cast<std::size_t>(f) * size.column_bytes;
  const LineModelLaneScratch s = line_lane_layout(p.candidates, v.width, kWarp, shared, columns).scratch;
  const int used = lm::lanes_used(v.width, kWarp);
  for (int pass = 0; pass < kLinePasses; ++pass) {
    lm::lane_transfer(v, p, f, pass, kWarp, lane, s);
    __syncwarp();
    for (int l = 0; l < used; ++l) {
      if (lane < kLineStates) lm::lanes_entering(lane, l, s);
      __syncwarp();
    }
    lm::lane_back_pointers(v, p, f, kWarp, lane, s);
    __syncwarp();
    lm::lane_first_states(v, p, kWarp, lane, s);
    __syncwarp();
    if (lane == 0) lm::lanes_last_states(v, p, kWarp, s);
    __syncwarp();
    lm::lane_path(v, p, kWarp, lane, s);
    __syncwarp();
    if (lane == 0) lm::lanes_runs(v, kWarp, s);
    __syncwarp();
    lm::lane_drop_short(v, p, kWarp, lane, s);
    const bool dropped = __any_sync(kFullMask, s.dropped[lane] != 0);
    __syncwarp();
    if (!dropped) break;
  }
  lm::lane_write(v, p, f, kWarp, lane, s);
}

}  // namespace

void configure_line_model(std::size_t max_bytes) {
  const std::size_t bytes = max_bytes < kMostShared ? max_bytes : kMostShared;
  STRIPELINE_CUDA_CHECK(cudaFuncSetAttribute(line_model_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  g_shared_limit.store(bytes < kDefaultShared ? kDefaultShared : bytes);
}

void launch_line_model(const LineModelView& view, const LineModelParams& params, cudaStream_t stream) {
  if (view.frames <= 0 || view.width <= 0 || params.candidates <= 0) return;
  const LineLaneLayout size = line_lane_layout(params.candidates, view.width, kWarp, nullptr, nullptr);
  const bool columns_shared = size.fixed_bytes + size.column_bytes <= g_shared_limit.load();
  const std::size_t shared = size.fixed_bytes + (columns_shared ? size.column_bytes : 0);
  line_model_kernel<<<static_cast<unsigned>(view.frames), kWarp, shared, stream>>>(view, params, view.back, columns_shared);
  STRIPELINE_CUDA_CHECK_LAUNCH("line_model_kernel");
}

}  // namespace stripeline::kernels::cuda
