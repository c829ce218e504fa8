// Per-stage CUDA kernels: blur, threshold, extraction. The fused chain is in
// fused_chain.cu; these serve the stand-alone stages and the processor's
// fallback for frames too tall for the fused kernel's shared memory.
#include <cstdint>
#include <string>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/stripe_kernels.h"
#include "core/cuda/check.h"

namespace stripeline::kernels::cuda {

BlurTaps to_blur_taps(const GaussianTaps& taps) {
  BlurTaps t;
  t.size = taps.size;
  t.across = taps.across;
  for (int k = 0; k < kMaxBlurSize; ++k) t.w[k] = k < taps.size ? taps.w[k] : 0u;
  return t;
}

namespace {

constexpr int kMaxRadius = kMaxBlurSize / 2;
constexpr int kBlurTileW = 32;  // output columns per block
constexpr int kBlurTileH = 32;  // output rows per block
constexpr int kBlurThreadsY = 8;
// Frames beyond gridDim's 65535 limit are looped over inside the kernels.
constexpr int kMaxGridFrames = 65535;

// Tiled separable blur of one (frame, 32x32 tile) per block, any frame height.
// The horizontal pass runs on the tile's rows plus the vertical halo (rows of
// the same frame only), the vertical pass reads those from shared memory.
// Calls kernels::blur_h / blur_v themselves: same clamps, same arithmetic.
template <class T>
__global__ void __launch_bounds__(kBlurTileW* kBlurThreadsY)
    blur_kernel(const T* __restrict__ in, T* __restrict__ out, int width, int height, int frames, BlurTaps taps) {
  __shared__ std::uint32_t s_in[kBlurTileH + 2 * kMaxRadius][kBlurTileW + 2 * kMaxRadius];
  __shared__ std::uint32_t s_mid[kBlurTileH + 2 * kMaxRadius][kBlurTileW];
  __shared__ std::uint32_t s_w[kMaxBlurSize];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * kBlurTileW + tx;
  const int threads = kBlurTileW * kBlurThreadsY;
  if (tid < kMaxBlurSize) s_w[tid] = taps.w[tid];
  const int size = taps.size;
  const int r = size / 2;
  const int x0 = blockIdx.x * kBlurTileW;
  const int y0 = blockIdx.y * kBlurTileH;
  const int in_w = kBlurTileW + 2 * r, in_h = kBlurTileH + 2 * r;

  for (int f = blockIdx.z; f < frames; f += gridDim.z) {
    const std::size_t frame_offset = static_cast<std::size_t>(f) * height * width;
    const T* src = in + frame_offset;
    T* dst = out + frame_offset;
    for (int i = tid; i < in_w * in_h; i += threads) {
      const int ly = i / in_w, lx = i - ly * in_w;
      const int gy = y0 - r + ly, gx = x0 - r + lx;
      if (gy >= 0 && gy < height && gx >= 0 && gx < width) s_in[ly][lx] = src[static_cast<std::size_t>(gy) * width + gx];
    }
    __syncthreads();
    for (int ly = ty; ly < in_h; ly += kBlurThreadsY) {
      const int gy = y0 - r + ly, x = x0 + tx;
      if (gy < 0 || gy >= height || x >= width) continue;
      const std::uint32_t* row_s = s_in[ly];
      auto row = [row_s, x0, r](int gx) -> std::uint32_t { return row_s[gx - x0 + r]; };
      s_mid[ly][tx] = taps.across ? kernels::blur_h(row, x, width, s_w, size) : kernels::blur_h_none(row(x));
    }
    __syncthreads();
    for (int ly = ty; ly < kBlurTileH; ly += kBlurThreadsY) {
      const int y = y0 + ly, x = x0 + tx;
      if (y >= height || x >= width) continue;
      const std::uint32_t(*mid_s)[kBlurTileW] = s_mid;
      auto mid = [mid_s, tx, y0, r](int gy) -> std::uint32_t { return mid_s[gy - y0 + r][tx]; };
      dst[static_cast<std::size_t>(y) * width + x] = static_cast<T>(kernels::blur_v(mid, y, height, s_w, size));
    }
    __syncthreads();
  }
}

template <class T>
__global__ void threshold_kernel(const T* in, T* out, std::size_t n, std::uint32_t threshold) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = static_cast<T>(kernels::apply_threshold(in[i], threshold));
}

constexpr int kExtractThreads = 128;

template <class T>
__global__ void __launch_bounds__(kExtractThreads)
    extract_kernel(const T* __restrict__ in, const T* __restrict__ raw_in, int width, int height, int frames, std::uint32_t zero_below,
                   ColumnParams params, ProfileView out) {
  const int x = blockIdx.x * kExtractThreads + threadIdx.x;
  if (x >= width) return;
  for (int f = blockIdx.y; f < frames; f += gridDim.y) {
    const T* col = in + static_cast<std::size_t>(f) * height * width + x;
    auto column = [col, width, zero_below](int y) -> std::uint32_t {
      return kernels::apply_threshold(col[static_cast<std::size_t>(y) * width], zero_below);
    };
    const T* raw_col = raw_in + static_cast<std::size_t>(f) * height * width + x;
    auto raw = [raw_col, width](int y) -> std::uint32_t { return raw_col[static_cast<std::size_t>(y) * width]; };
    detail::extract_and_store(column, raw, height, params, out, f, x);
  }
}

template <class T>
const char* type_name() {
  return sizeof(T) == 1 ? "uint8" : "uint16";
}

}  // namespace

cudaError_t probe_kernel_image() {
  cudaFuncAttributes attr{};
  return cudaFuncGetAttributes(&attr, threshold_kernel<std::uint8_t>);
}

template <class T>
void blur(FramesView<const T> in, FramesView<T> out, const BlurTaps& taps, cudaStream_t stream) {
  if (in.frames <= 0 || in.width <= 0 || in.frame_height <= 0) return;
  const std::size_t bytes = static_cast<std::size_t>(in.frames) * in.frame_height * in.width * sizeof(T);
  if (taps.size == 0) {
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out.data, in.data, bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const dim3 block(kBlurTileW, kBlurThreadsY);
  const dim3 grid((in.width + kBlurTileW - 1) / kBlurTileW, (in.frame_height + kBlurTileH - 1) / kBlurTileH,
                  in.frames < kMaxGridFrames ? in.frames : kMaxGridFrames);
  blur_kernel<T><<<grid, block, 0, stream>>>(in.data, out.data, in.width, in.frame_height, in.frames, taps);
  STRIPELINE_CUDA_CHECK_LAUNCH(std::string("blur_kernel<") + type_name<T>() + ">");
}

template <class T>
void threshold(FramesView<const T> in, FramesView<T> out, std::uint32_t t, cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(in.frames > 0 ? in.frames : 0) * in.frame_height * in.width;
  if (n == 0) return;
  constexpr int kThreads = 256;
  const std::size_t wanted = (n + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(wanted < (1u << 20) ? wanted : (1u << 20));
  threshold_kernel<T><<<blocks, kThreads, 0, stream>>>(in.data, out.data, n, t);
  STRIPELINE_CUDA_CHECK_LAUNCH(std::string("threshold_kernel<") + type_name<T>() + ">");
}

template <class T>
void extract(FramesView<const T> in, const T* raw, std::uint32_t zero_below, const ColumnParams& params, ProfileView out, cudaStream_t stream) {
  if (in.frames <= 0 || in.width <= 0 || in.frame_height <= 0) return;
  const dim3 grid((in.width + kExtractThreads - 1) / kExtractThreads, in.frames < kMaxGridFrames ? in.frames : kMaxGridFrames);
  extract_kernel<T><<<grid, kExtractThreads, 0, stream>>>(in.data, raw != nullptr ? raw : in.data, in.width, in.frame_height, in.frames, zero_below,
                                                          params, out);
  STRIPELINE_CUDA_CHECK_LAUNCH(std::string("extract_kernel<") + type_name<T>() + ">");
}

template void blur<std::uint8_t>(FramesView<const std::uint8_t>, FramesView<std::uint8_t>, const BlurTaps&, cudaStream_t);
template void blur<std::uint16_t>(FramesView<const std::uint16_t>, FramesView<std::uint16_t>, const BlurTaps&, cudaStream_t);
template void threshold<std::uint8_t>(FramesView<const std::uint8_t>, FramesView<std::uint8_t>, std::uint32_t, cudaStream_t);
template void threshold<std::uint16_t>(FramesView<const std::uint16_t>, FramesView<std::uint16_t>, std::uint32_t, cudaStream_t);
template void extract<std::uint8_t>(FramesView<const std::uint8_t>, const std::uint8_t*, std::uint32_t, const ColumnParams&, ProfileView, cudaStream_t);
template void extract<std::uint16_t>(FramesView<const std::uint16_t>, const std::uint16_t*, std::uint32_t, const ColumnParams&, ProfileView,
                                     cudaStream_t);

}  // namespace stripeline::kernels::cuda
