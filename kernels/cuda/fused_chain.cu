// The fused chain: Gaussian blur -> threshold -> per-column extraction in one
// launch for every frame of a batch.
//
// Grid: one block per (frame, strip of kFusedColumns = 64 columns), one
// thread per column; 300 frames of 2048 columns = 9600 blocks of 64 threads.
// Per block:
//  1. load: the strip's frame_height rows plus the horizontal halo (blur
//     radius) from global memory into shared memory, once, coalesced: 16-byte
//     vector loads (several in flight per thread) when the rows are 16-byte
//     aligned and the strip is inside the image (all but the edge strips of a
//     2048-wide batch), else element loads with the column clamped (replicate
//     border). With blur off the threshold is applied on the way in;
//  2. blur + threshold: each thread walks down its column. The horizontal pass
//     of row y+r is computed from shared memory (8-bit pixels: 32-bit word
//     loads and __dp2a 16x8-bit dot products, exact; 16-bit: element loads and
//     multiply-adds) and pushed into a sliding window of `size` values held in
//     registers (no shared "mid" buffer, no barrier); the vertical pass over
//     that window, then the threshold, gives the pixel, stored to a shared
//     tile. Frame-edge rows replicate;
//  3. extract: kernels::extract_column over the thread's own column of the
//     tile (written by itself: no barrier), writing only the profile arrays.
//
// The blur size is a template parameter (0, 3, 5, ..., 15): the tap loops
// unroll, the taps are read from the kernel parameters (constant bank) and the
// window stays in registers. The arithmetic is kernels/gaussian.h's: the sums
// are the same uint32 sums (no overflow, see there; the order of integer
// additions does not matter), the roundings (acc + 2^(s-1)) >> s with the
// same shifts, clamping the same replicate rule, so the bits equal blur_h /
// blur_v's (and the CPU backend's). tests/test_cuda.cpp checks it exactly.
//
// Shared memory per block: frame_height * (64 * bpp + 32) bytes, plus
// frame_height * 64 * bpp with blur on (8.3 KB for 2048x52 8-bit, blurred).
// Frames too tall for the device's per-block limit run the per-stage kernels
// instead (stage_kernels.cu; the processor decides, stages/cuda/).
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/errors.h"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/stripe_kernels.h"
#include "core/cuda/check.h"

namespace stripeline::kernels::cuda {

namespace {

constexpr int kStrip = kFusedColumns;

// Shared-memory geometry of one block for pixel type T.
//  s_in:   frame_height rows of kPitch elements. Element kLead + j of a row
//          holds global column x0 + j, j in [-r, kStrip + r), clamped to the
//          image. kLead elements = 16 bytes, so the strip's own columns start
//          16-byte aligned (vector stores) with room for the left halo.
//  s_tile: frame_height rows of kStrip elements: blurred, thresholded pixels
//          (blur on only; with blur off the threshold is applied in place).
template <class T>
struct Geometry {
  static constexpr int kLead = 16 / static_cast<int>(sizeof(T));
  static constexpr int kPitch = kStrip + 2 * kLead;
  static constexpr int kPitchBytes = kPitch * static_cast<int>(sizeof(T));
  static constexpr int kCoreChunks = kStrip * static_cast<int>(sizeof(T)) / 16;
  static_assert(kLead >= kMaxBlurSize / 2, "the 16-byte lead must hold the largest halo");
  static_assert(kStrip * sizeof(T) % 16 == 0, "the strip must be a whole number of 16-byte chunks");
};

__device__ __forceinline__ int min_int(int a, int b) { return a < b ? a : b; }

// Per 32-bit word of packed pixels: kernels::apply_threshold on each pixel
// (SIMD within the word: 4 bytes or 2 halves compared at once).
template <class T>
__device__ __forceinline__ std::uint32_t threshold_word(std::uint32_t word, std::uint32_t packed_threshold) {
  if constexpr (sizeof(T) == 1)
    return word & __vcmpgeu4(word, packed_threshold);
  else
    return word & __vcmpgeu2(word, packed_threshold);
}

// Loads the strip (see Geometry). With blur off (SIZE 0) it also applies the
// threshold (zero_below) on the way, so the pixels land in shared memory ready
// for extraction; with blur on, the threshold comes after the blur.
template <class T, int SIZE>
__device__ __forceinline__ void load_strip(const T* __restrict__ frame, int width, int height, int x0, T* s_in,
                                           std::uint32_t zero_below) {
  using G = Geometry<T>;
  constexpr int R = SIZE / 2;
  constexpr int kBatch = 4;  // loads in flight per thread before their stores
  const int tid = threadIdx.x;
  const bool aligned_rows = (static_cast<unsigned>(width) * sizeof(T)) % 16u == 0;
  const bool inside = R == 0 ? x0 + kStrip <= width : (x0 >= G::kLead && x0 + kStrip + G::kLead <= width);
  if (aligned_rows && inside) {
    // Chunks of 16 bytes per row: [left halo] core... [right halo] (halos only when blurring).
    constexpr int kChunks = G::kCoreChunks + (R > 0 ? 2 : 0);
    const unsigned char* g = reinterpret_cast<const unsigned char*>(frame + x0) - (R > 0 ? 16 : 0);
    unsigned char* s = reinterpret_cast<unsigned char*>(s_in) + (R > 0 ? 0 : 16);
    const std::size_t row_bytes = static_cast<std::size_t>(width) * sizeof(T);
    const std::uint32_t packed = sizeof(T) == 1 ? zero_below * 0x01010101u : zero_below * 0x00010001u;
    const int total = height * kChunks;
    for (int i0 = tid; i0 < total; i0 += kBatch * kStrip) {
      uint4 v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * kStrip;
        if (i < total) {
          const int y = i / kChunks, j = i - y * kChunks;
          v[u] = __ldg(reinterpret_cast<const uint4*>(g + static_cast<std::size_t>(y) * row_bytes + j * 16));
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * kStrip;
        if (i < total) {
          const int y = i / kChunks, j = i - y * kChunks;
          if constexpr (SIZE == 0) {
            v[u].x = threshold_word<T>(v[u].x, packed);
            v[u].y = threshold_word<T>(v[u].y, packed);
            v[u].z = threshold_word<T>(v[u].z, packed);
            v[u].w = threshold_word<T>(v[u].w, packed);
          }
          *reinterpret_cast<uint4*>(s + y * G::kPitchBytes + j * 16) = v[u];
        }
      }
    }
  } else {
    // Edge strips and rows that are not 16-byte aligned: one element per
    // load, the column clamped as blur_h clamps it (replicate).
    constexpr int kCols = kStrip + 2 * R;
    const int total = height * kCols;
    for (int i0 = tid; i0 < total; i0 += kBatch * kStrip) {
      T v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * kStrip;
        if (i < total) {
          const int y = i / kCols, j = i - y * kCols;
          const int gx = kernels::clamp_index(x0 - R + j, width);
          v[u] = frame[static_cast<std::size_t>(y) * width + gx];
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * kStrip;
        if (i < total) {
          const int y = i / kCols, j = i - y * kCols;
          s_in[y * G::kPitch + G::kLead - R + j] = SIZE == 0 ? static_cast<T>(kernels::apply_threshold(v[u], zero_below)) : v[u];
        }
      }
    }
  }
}

// Horizontal pass at the thread's column, element by element (any pixel
// type): sum of w[k] * pixel(x - R + k), then (sum + 128) >> 8.
template <class T, int SIZE>
struct HPassElements {
  const T* src;  // src[k] = row 0's pixel at column x - R + k
  const BlurTaps& taps;
  __device__ __forceinline__ HPassElements(const T* s_in, int c, const BlurTaps& t)
      : src(s_in + Geometry<T>::kLead - SIZE / 2 + c), taps(t) {}
  __device__ __forceinline__ std::uint32_t operator()(int y) const {
    const T* row = src + y * Geometry<T>::kPitch;
    std::uint32_t acc[2] = {1u << (kBlurMidShift - 1), 0u};  // two chains: more independent work per thread
#pragma unroll
    for (int k = 0; k < SIZE; ++k) acc[k & 1] += taps.w[k] * static_cast<std::uint32_t>(row[k]);
    return (acc[0] + acc[1]) >> kBlurMidShift;
  }
};

__device__ __forceinline__ std::uint32_t tap_or_zero(const BlurTaps& t, int k, int size) {
  return k >= 0 && k < size ? t.w[k] : 0u;
}

// The same sum for 8-bit pixels, from 32-bit shared-memory words and 2-way
// 16x8-bit dot products (__dp2a_lo/hi: exact unsigned integer arithmetic):
// kWords loads and 2*kWords dot products instead of SIZE byte loads and SIZE
// multiply-adds. The thread's window starts at byte `a` (0..3) of its first
// word; its tap pairs are laid out for that alignment once (zero outside the
// window), so every thread of a warp runs the same instructions.
template <int SIZE>
struct HPassBytes {
  static constexpr int kWords = (SIZE + 3 + 3) / 4;  // words spanned by SIZE bytes starting at byte 0..3
  static constexpr int kPitchWords = Geometry<std::uint8_t>::kPitchBytes / 4;
  const std::uint32_t* src;  // row 0's first word of the window
  std::uint32_t pair[2 * kWords];
  __device__ __forceinline__ HPassBytes(const std::uint8_t* s_in, int c, const BlurTaps& taps) {
    const int first = Geometry<std::uint8_t>::kLead - SIZE / 2 + c;  // byte of the window's first pixel in a row
    const int a = first & 3;
    src = reinterpret_cast<const std::uint32_t*>(s_in) + (first >> 2);
#pragma unroll
    for (int i = 0; i < 2 * kWords; ++i) {
      std::uint32_t half[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * i + h;  // byte position from the first word's byte 0; tap j - a
        const std::uint32_t w0 = tap_or_zero(taps, j, SIZE), w1 = tap_or_zero(taps, j - 1, SIZE);
        const std::uint32_t w2 = tap_or_zero(taps, j - 2, SIZE), w3 = tap_or_zero(taps, j - 3, SIZE);
        half[h] = a == 0 ? w0 : a == 1 ? w1 : a == 2 ? w2 : w3;
      }
      pair[i] = half[0] | (half[1] << 16);
    }
  }
  __device__ __forceinline__ std::uint32_t operator()(int y) const {
    const std::uint32_t* row = src + y * kPitchWords;
    std::uint32_t lo = 1u << (kBlurMidShift - 1), hi = 0;  // two chains: more independent work per thread
#pragma unroll
    for (int i = 0; i < kWords; ++i) {
      const std::uint32_t word = row[i];
      lo = __dp2a_lo(pair[2 * i], word, lo);
      hi = __dp2a_hi(pair[2 * i + 1], word, hi);
    }
    return (lo + hi) >> kBlurMidShift;
  }
};

// The horizontal pass of a blur along the columns only (BlurTaps::across
// false): the thread's own pixel, kernels::blur_h_none. No halo is loaded.
template <class T>
struct HPassNone {
  const T* src;  // row 0's pixel at the thread's column
  __device__ __forceinline__ HPassNone(const T* s_in, int c) : src(s_in + Geometry<T>::kLead + c) {}
  __device__ __forceinline__ std::uint32_t operator()(int y) const { return kernels::blur_h_none(src[y * Geometry<T>::kPitch]); }
};

// Builds the horizontal pass (HPassNone takes no taps).
template <class HPass, class T>
__device__ __forceinline__ HPass make_hpass(const T* s_in, int c, const BlurTaps& taps) {
  if constexpr (std::is_constructible_v<HPass, const T*, int>)
    return HPass(s_in, c);
  else
    return HPass(s_in, c, taps);
}

// At least 16 blocks (1,024 threads) per SM: at most 64 registers. Without
// the minimum, the adaptive code split for the CPU's SIMD path
// (kernels/adaptive_extract.h) took 72 registers on sm_90 and the kernel
// 11 % longer on an H100 (occupancy 45 -> 39 %).
template <class T, int SIZE, bool ACROSS>
__global__ void __launch_bounds__(kStrip, 16)
    fused_chain_kernel(const T* __restrict__ in, int width, int height, int strips, ChainParams p, ProfileView out) {
  using G = Geometry<T>;
  constexpr int R = SIZE / 2;
  extern __shared__ __align__(16) unsigned char smem[];
  T* s_in = reinterpret_cast<T*>(smem);
  const int c = threadIdx.x;
  const int f = blockIdx.x / strips;
  const int x0 = (blockIdx.x - f * strips) * kStrip;
  const T* frame = in + static_cast<std::size_t>(f) * height * width;

  // Along the columns only, no halo: the strip is loaded as with the blur off,
  // unthresholded (the threshold comes after the blur).
  load_strip<T, ACROSS ? SIZE : 0>(frame, width, height, x0, s_in, SIZE == 0 ? p.zero_below : 0u);
  __syncthreads();  // the only barrier: from here on each thread works on its own column

  const T* column_base;  // the thread's column of pixels ready for extraction
  if constexpr (SIZE == 0) {
    column_base = s_in + G::kLead + c;  // thresholded by load_strip
  } else {
    T* s_tile = reinterpret_cast<T*>(smem + static_cast<std::size_t>(height) * G::kPitchBytes);
    const std::uint32_t t = p.zero_below;
    // Horizontal pass of frame row y: kernels::blur_h's sum and rounding (the
    // clamped columns were stored by load_strip).
    using HPassAcross = std::conditional_t<sizeof(T) == 1, HPassBytes<SIZE>, HPassElements<T, SIZE>>;
    using HPass = std::conditional_t<ACROSS, HPassAcross, HPassNone<T>>;
    const HPass hpass = make_hpass<HPass>(s_in, c, p.taps);
    // Vertical pass with a sliding window in registers: win[k] = horizontal
    // pass of row y - R + k (clamped to the frame), k < 2R.
    std::uint32_t win[2 * R];
    const std::uint32_t top = hpass(0);
#pragma unroll
    for (int k = 0; k <= R; ++k) win[k] = top;
#pragma unroll
    for (int k = 1; k < R; ++k) win[R + k] = hpass(min_int(k, height - 1));
    T* dst = s_tile + c;
    auto step = [&](int y, std::uint32_t newest) {  // blur_v's sum and rounding, then the threshold
      std::uint32_t acc[2] = {p.taps.w[2 * R] * newest + (1u << (kBlurFinalShift - 1)), 0u};
#pragma unroll
      for (int k = 0; k < 2 * R; ++k) acc[k & 1] += p.taps.w[k] * win[k];
      dst[y * kStrip] = static_cast<T>(kernels::apply_threshold((acc[0] + acc[1]) >> kBlurFinalShift, t));
#pragma unroll
      for (int k = 0; k + 1 < 2 * R; ++k) win[k] = win[k + 1];
      win[2 * R - 1] = newest;
    };
    int y = 0;
    // Unrolled by the window length, the shifts above become register renames.
#pragma unroll(2 * R)
    for (; y < height - R; ++y) step(y, hpass(y + R));  // row y + R exists
    for (; y < height; ++y) step(y, win[2 * R - 1]);    // past the bottom edge: the last row again (replicate)
    column_base = dst;
  }

  const int x = x0 + c;
  if (x >= width) return;
  // The unblurred pixels stay in s_in (with the blur off: thresholded by
  // zero_below, which is 0 for the one method that reads them, adaptive).
  const T* raw_base = s_in + G::kLead + c;
  auto raw = [raw_base](int y) -> std::uint32_t { return raw_base[y * G::kPitch]; };
  if constexpr (SIZE == 0) {
    auto column = [column_base](int y) -> std::uint32_t { return column_base[y * G::kPitch]; };
    detail::extract_and_store(column, raw, height, p.column, out, f, x);
  } else {
    auto column = [column_base](int y) -> std::uint32_t { return column_base[y * kStrip]; };
    detail::extract_and_store(column, raw, height, p.column, out, f, x);
  }
}

template <class T>
const char* type_name() {
  return sizeof(T) == 1 ? "uint8" : "uint16";
}

template <class T, int SIZE, bool ACROSS>
void launch(FramesView<const T> in, const ChainParams& p, ProfileView out, cudaStream_t stream) {
  const int strips = (in.width + kStrip - 1) / kStrip;
  const unsigned blocks = static_cast<unsigned>(in.frames) * static_cast<unsigned>(strips);
  const std::size_t shared = fused_shared_bytes(static_cast<int>(sizeof(T)), in.frame_height, SIZE);
  fused_chain_kernel<T, SIZE, ACROSS><<<blocks, kStrip, shared, stream>>>(in.data, in.width, in.frame_height, strips, p, out);
  STRIPELINE_CUDA_CHECK_LAUNCH(std::string("fused_chain_kernel<") + type_name<T>() + ", blur " + std::to_string(SIZE) + (ACROSS ? " 2-D" : " along columns") + "> (" +
                               std::to_string(blocks) + " blocks, " + std::to_string(shared) + " bytes of shared memory)");
}

template <class T, int SIZE>
void set_max_shared(std::size_t max_bytes) {
  STRIPELINE_CUDA_CHECK(cudaFuncSetAttribute(fused_chain_kernel<T, SIZE, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(max_bytes)));
  if constexpr (SIZE > 0)
    STRIPELINE_CUDA_CHECK(cudaFuncSetAttribute(fused_chain_kernel<T, SIZE, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(max_bytes)));
}

template <class T>
void set_max_shared_all(std::size_t max_bytes) {
  set_max_shared<T, 0>(max_bytes);
  set_max_shared<T, 3>(max_bytes);
  set_max_shared<T, 5>(max_bytes);
  set_max_shared<T, 7>(max_bytes);
  set_max_shared<T, 9>(max_bytes);
  set_max_shared<T, 11>(max_bytes);
  set_max_shared<T, 13>(max_bytes);
  set_max_shared<T, 15>(max_bytes);
}

}  // namespace

std::size_t fused_shared_bytes(int bytes_per_pixel, int frame_height, int blur_size) {
  const std::size_t pitch_bytes = static_cast<std::size_t>(kStrip) * bytes_per_pixel + 32;
  const std::size_t tile_bytes = blur_size > 0 ? static_cast<std::size_t>(kStrip) * bytes_per_pixel : 0;
  return static_cast<std::size_t>(frame_height) * (pitch_bytes + tile_bytes);
}

void configure_fused(std::size_t max_bytes) {
  set_max_shared_all<std::uint8_t>(max_bytes);
  set_max_shared_all<std::uint16_t>(max_bytes);
}

template <class T>
void fused_chain(FramesView<const T> in, const ChainParams& p, ProfileView out, cudaStream_t stream) {
  if (in.frames <= 0 || in.width <= 0 || in.frame_height <= 0) return;
  const bool a = p.taps.across;
  switch (p.taps.size) {
    case 0: return launch<T, 0, true>(in, p, out, stream);
    case 3: return a ? launch<T, 3, true>(in, p, out, stream) : launch<T, 3, false>(in, p, out, stream);
    case 5: return a ? launch<T, 5, true>(in, p, out, stream) : launch<T, 5, false>(in, p, out, stream);
    case 7: return a ? launch<T, 7, true>(in, p, out, stream) : launch<T, 7, false>(in, p, out, stream);
    case 9: return a ? launch<T, 9, true>(in, p, out, stream) : launch<T, 9, false>(in, p, out, stream);
    case 11: return a ? launch<T, 11, true>(in, p, out, stream) : launch<T, 11, false>(in, p, out, stream);
    case 13: return a ? launch<T, 13, true>(in, p, out, stream) : launch<T, 13, false>(in, p, out, stream);
    case 15: return a ? launch<T, 15, true>(in, p, out, stream) : launch<T, 15, false>(in, p, out, stream);
    default: break;
  }
  throw ConfigError("fused chain: blur size " + std::to_string(p.taps.size) + " is not supported (expected 0 or odd 3..15)");
}

template void fused_chain<std::uint8_t>(FramesView<const std::uint8_t>, const ChainParams&, ProfileView, cudaStream_t);
template void fused_chain<std::uint16_t>(FramesView<const std::uint16_t>, const ChainParams&, ProfileView, cudaStream_t);

}  // namespace stripeline::kernels::cuda
