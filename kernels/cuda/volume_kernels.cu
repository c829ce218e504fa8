// The CUDA kernel of the volume tool's sums. See volume_kernels.h. Built with
// -fmad=false (CMakeLists.txt): no FMA contraction, the CPU's bits.
#include <cuda_runtime.h>

#include "core/cuda/check.h"
#include "kernels/cuda/volume_kernels.h"
#include "kernels/volume_ops.h"

namespace stripeline::kernels::cuda {

namespace {

constexpr int kThreads = 128;

// The first k in [b, e) with x[k] >= v (lower) or x[k] > v (upper), as
// std::lower_bound / std::upper_bound over float X against a double.
__device__ long bound(const float* x, long b, long e, double v, bool upper) {
  while (b < e) {
    const long m = b + (e - b) / 2;
    const double xm = static_cast<double>(x[m]);
    if (upper ? !(v < xm) : xm < v) b = m + 1;
    else e = m;
  }
  return b;
}

__device__ __forceinline__ long long warp_sum(long long v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

__global__ void volume_kernel(DeviceRows rows, VolumeQuery q, VolumeSums* out) {
  const int r = blockIdx.x;
  const double y = rows.row_y[r];
  if (!(y >= q.y0 && y <= q.y1)) return;
  __shared__ long span[2];
  if (threadIdx.x == 0) {
    const long b = bound(rows.x, rows.row_begin[r], rows.row_begin[r + 1], q.x0, false);
    span[0] = b;
    span[1] = bound(rows.x, b, rows.row_begin[r + 1], q.x1, true);
  }
  __syncthreads();
  const long s = span[0], e = span[1];
  Joining j;
  j.spacing = mean_spacing(rows.x, s, e);
  j.max_spacing = q.max_spacing;
  const RowHeights h{rows.x, rows.z, q.ref_a, q.ref_b, q.sign};
  std::int64_t volume = 0, area = 0;
  for (long i = s + threadIdx.x; i + 1 < e; i += blockDim.x) volume_segment(rows.x, h, s, e, i, j, q.level, volume, area);
  volume = warp_sum(volume);
  area = warp_sum(area);
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&out->volume, static_cast<unsigned long long>(volume));
    atomicAdd(&out->area, static_cast<unsigned long long>(area));
  }
  if (threadIdx.x == 0) atomicAdd(&out->points, static_cast<unsigned long long>(e - s));
}

}  // namespace

void launch_volume_sums(const DeviceRows& rows, const VolumeQuery& q, VolumeSums* out, cudaStream_t stream) {
  STRIPELINE_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(VolumeSums), stream));
  if (rows.rows <= 0 || !q.valid()) return;  // no region: the sums stay 0 (the CPU tool's NaN)
  volume_kernel<<<rows.rows, kThreads, 0, stream>>>(rows, q, out);
  STRIPELINE_CUDA_CHECK_LAUNCH("volume_kernel (" + std::to_string(rows.rows) + " rows)");
}

}  // namespace stripeline::kernels::cuda
