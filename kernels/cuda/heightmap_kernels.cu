// CUDA kernels of the height-map filters. See heightmap_kernels.h.
#include <cuda_runtime.h>

#include "kernels/cuda/heightmap_kernels.h"
#include "kernels/heightmap_ops.h"
#include "core/cuda/check.h"

namespace stripeline::kernels::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ std::uint16_t umax16(std::uint16_t a, std::uint16_t b) { return a < b ? b : a; }

// One thread per pixel: gathers the valid codes of its window in registers /
// local memory and selects the lower median (rank (n-1)/2).
template <int K>
__global__ void median_kernel(const std::uint16_t* __restrict__ in, int width, int height, std::uint16_t* __restrict__ out16,
                              std::uint8_t* __restrict__ out8, std::uint16_t lo, std::uint16_t hi) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  constexpr int r = K / 2;
  std::uint16_t v[K * K];
  int n = 0;
  const int y0 = max(0, y - r), y1 = min(height - 1, y + r);
  const int x0 = max(0, x - r), x1 = min(width - 1, x + r);
  for (int yy = y0; yy <= y1; ++yy) {
    const std::uint16_t* row = in + static_cast<std::size_t>(yy) * width;
    for (int xx = x0; xx <= x1; ++xx) {
      const std::uint16_t c = __ldg(row + xx);
      if (c != 0) v[n++] = c;
    }
  }
  const std::uint16_t m = n == 0 ? std::uint16_t{0} : select_kth(v, n, (n - 1) / 2);
  const std::size_t at = static_cast<std::size_t>(y) * width + x;
  if (out8)
    out8[at] = to8(m, lo, hi);
  else
    out16[at] = m;
}

__global__ void to8_kernel(const std::uint16_t* __restrict__ in, std::size_t n, std::uint16_t lo, std::uint16_t hi,
                           std::uint8_t* __restrict__ out) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = to8(in[i], lo, hi);
}

// Van Herk / Gil-Werman, pass 1: one thread per (line, block of L padded
// positions) writes the in-block prefix max g and suffix max h. Scratch
// layout [padded position][line]: consecutive threads (lines) write
// consecutive addresses. Work per line is O(n) whatever L.
__global__ void morph_blocks_kernel(const std::uint16_t* __restrict__ in, int lines, int n, std::size_t line_stride,
                                    std::size_t elem_stride, int L, bool neg, int blocks, std::uint16_t* __restrict__ g,
                                    std::uint16_t* __restrict__ h) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<std::size_t>(lines) * blocks) return;
  const int line = static_cast<int>(idx % lines);
  const int k = static_cast<int>(idx / lines);
  const int a = L / 2;
  const int padded = n + L - 1;
  const int s = k * L;
  const int e = min(s + L, padded);
  const std::uint16_t* base = in + static_cast<std::size_t>(line) * line_stride;
  auto load = [&](int p) -> std::uint16_t {
    const int i = p - a;
    if (i < 0 || i >= n) return 0;
    const std::uint16_t c = __ldg(base + static_cast<std::size_t>(i) * elem_stride);
    return neg ? morph_neg(c) : c;
  };
  auto at = [&](int p) { return static_cast<std::size_t>(p) * lines + line; };
  std::uint16_t acc = load(s);
  g[at(s)] = acc;
  for (int p = s + 1; p < e; ++p) {
    acc = umax16(acc, load(p));
    g[at(p)] = acc;
  }
  acc = load(e - 1);
  h[at(e - 1)] = acc;
  for (int p = e - 2; p >= s; --p) {
    acc = umax16(acc, load(p));
    h[at(p)] = acc;
  }
}

// Pass 2: out[x] = max(h[x], g[x + L - 1]) in padded coordinates.
__global__ void morph_combine_kernel(const std::uint16_t* __restrict__ g, const std::uint16_t* __restrict__ h, int lines, int n,
                                     std::size_t line_stride, std::size_t elem_stride, int L, bool neg,
                                     std::uint16_t* __restrict__ out) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<std::size_t>(lines) * n) return;
  const int line = static_cast<int>(idx % lines);
  const int x = static_cast<int>(idx / lines);
  const std::uint16_t r = umax16(h[static_cast<std::size_t>(x) * lines + line], g[static_cast<std::size_t>(x + L - 1) * lines + line]);
  out[static_cast<std::size_t>(line) * line_stride + static_cast<std::size_t>(x) * elem_stride] = neg ? morph_neg(r) : r;
}

// Small windows (K <= 5): the whole window in registers, no-detection and
// outside pixels as 0, sorted by a fully unrolled odd-even transposition
// network; the z zeros sort first, so the lower median of the n = K*K - z
// valid codes sits at index z + (n-1)/2. Same value as select_kth.
template <int K>
__global__ void median_small_kernel(const std::uint16_t* __restrict__ in, int width, int height, std::uint16_t* __restrict__ out16,
                                    std::uint8_t* __restrict__ out8, std::uint16_t lo, std::uint16_t hi) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  constexpr int r = K / 2;
  constexpr int N = K * K;
  std::uint16_t v[N];
  int zeros = 0;
#pragma unroll
  for (int dy = -r; dy <= r; ++dy)
#pragma unroll
    for (int dx = -r; dx <= r; ++dx) {
      const int yy = y + dy, xx = x + dx;
      const std::uint16_t c = (yy >= 0 && yy < height && xx >= 0 && xx < width) ? __ldg(in + static_cast<std::size_t>(yy) * width + xx)
                                                                                 : std::uint16_t{0};
      v[(dy + r) * K + dx + r] = c;
      zeros += c == 0;
    }
#pragma unroll
  for (int round = 0; round < N; ++round)
#pragma unroll
    for (int i = round & 1; i + 1 < N; i += 2) {
      const std::uint16_t a = v[i], b = v[i + 1];
      v[i] = a < b ? a : b;
      v[i + 1] = a < b ? b : a;
    }
  const int n = N - zeros;
  const int at_rank = zeros + (n - 1) / 2;
  std::uint16_t m = 0;
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (i == at_rank) m = v[i];
  if (n == 0) m = 0;
  const std::size_t at = static_cast<std::size_t>(y) * width + x;
  if (out8)
    out8[at] = to8(m, lo, hi);
  else
    out16[at] = m;
}

template <int K>
void launch_median_k(const std::uint16_t* in, int width, int height, std::uint16_t* out16, std::uint8_t* out8, std::uint16_t lo,
                     std::uint16_t hi, cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid((width + 31) / 32, (height + 7) / 8);
  if constexpr (K <= 5)
    median_small_kernel<K><<<grid, block, 0, stream>>>(in, width, height, out16, out8, lo, hi);
  else
    median_kernel<K><<<grid, block, 0, stream>>>(in, width, height, out16, out8, lo, hi);
  STRIPELINE_CUDA_CHECK_LAUNCH("heightmap median_kernel<" + std::to_string(K) + ">");
}

unsigned grid_for(std::size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

void launch_heightmap_median(const std::uint16_t* in, int width, int height, int size, std::uint16_t* out16, std::uint8_t* out8,
                             std::uint16_t lo, std::uint16_t hi, cudaStream_t stream) {
  switch (size) {
    case 3: return launch_median_k<3>(in, width, height, out16, out8, lo, hi, stream);
    case 5: return launch_median_k<5>(in, width, height, out16, out8, lo, hi, stream);
    case 7: return launch_median_k<7>(in, width, height, out16, out8, lo, hi, stream);
    case 9: return launch_median_k<9>(in, width, height, out16, out8, lo, hi, stream);
    case 11: return launch_median_k<11>(in, width, height, out16, out8, lo, hi, stream);
    case 13: return launch_median_k<13>(in, width, height, out16, out8, lo, hi, stream);
    case 15: return launch_median_k<15>(in, width, height, out16, out8, lo, hi, stream);
    default: throw RuntimeFailure("heightmap median: unsupported size " + std::to_string(size));
  }
}

void launch_heightmap_to8(const std::uint16_t* in, int width, int height, std::uint16_t lo, std::uint16_t hi, std::uint8_t* out,
                          cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(width) * height;
  to8_kernel<<<grid_for(n), kThreads, 0, stream>>>(in, n, lo, hi, out);
  STRIPELINE_CUDA_CHECK_LAUNCH("heightmap to8_kernel");
}

std::size_t heightmap_morph_scratch(int width, int height, int length, bool vertical) {
  const int lines = vertical ? width : height;
  const int n = vertical ? height : width;
  return static_cast<std::size_t>(lines) * (static_cast<std::size_t>(n) + length - 1);
}

void launch_heightmap_morph(const std::uint16_t* in, int width, int height, int length, bool vertical, bool erode, std::uint16_t* g,
                            std::uint16_t* h, std::uint16_t* out, cudaStream_t stream) {
  const int lines = vertical ? width : height;
  const int n = vertical ? height : width;
  const std::size_t line_stride = vertical ? 1 : static_cast<std::size_t>(width);
  const std::size_t elem_stride = vertical ? static_cast<std::size_t>(width) : 1;
  const int blocks = (n + length - 1 + length - 1) / length;
  morph_blocks_kernel<<<grid_for(static_cast<std::size_t>(lines) * blocks), kThreads, 0, stream>>>(
      in, lines, n, line_stride, elem_stride, length, erode, blocks, g, h);
  STRIPELINE_CUDA_CHECK_LAUNCH("heightmap morph_blocks_kernel");
  morph_combine_kernel<<<grid_for(static_cast<std::size_t>(lines) * n), kThreads, 0, stream>>>(g, h, lines, n, line_stride, elem_stride,
                                                                                               length, erode, out);
  STRIPELINE_CUDA_CHECK_LAUNCH("heightmap morph_combine_kernel");
}

}  // namespace stripeline::kernels::cuda
