#pragma once
// CUDA kernels of the chain: blur, threshold, extraction, and the fused
// blur -> threshold -> extraction kernel that the CUDA BatchProcessor runs.
//
// Every function here is ASYNCHRONOUS on the stream it is given: it enqueues
// one kernel and returns. None allocates, none synchronises, none reads
// configuration. Launch errors are checked (cudaGetLastError) and thrown as
// CudaError; errors during execution surface at the caller's next
// synchronisation.
//
// Views are device pointers. A batch on the device is `frames` frames of
// width x frame_height pixels, back to back, row stride = width (exactly the
// host Batch layout). Profiles on the device use the ProfileBatch layout
// (core/profile.h): position/intensity/stripe_width [frame][slot][column],
// count [frame][column].
//
// The integer arithmetic is kernels/gaussian.h's and kernels/column_extract.h's,
// shared with the CPU backend, so results are bit-identical to it.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/column_extract.h"
#include "kernels/cuda/warp_chain_limits.h"
#include "kernels/gaussian.h"

namespace stripeline::kernels::cuda {

template <class T>
struct FramesView {
  T* data = nullptr;  // device
  int width = 0;
  int frame_height = 0;
  int frames = 0;     // frames to process
};

struct ProfileView {
  std::int32_t* position = nullptr;      // device, [frame][slot][column]
  std::uint16_t* intensity = nullptr;    // device, [frame][slot][column]
  std::uint16_t* stripe_width = nullptr; // device, [frame][slot][column]
  std::uint16_t* quality = nullptr;      // device, [frame][slot][column]
  std::uint8_t* count = nullptr;         // device, [frame][column]
  int width = 0;
  int slots = 1;
};

// Gaussian taps as plain data, passed by value in the kernel parameters.
struct BlurTaps {
  int size = 0;  // 0 = off, else odd 3..15
  std::uint32_t w[kMaxBlurSize] = {};
  bool across = true;  // false: along the columns only (GaussianTaps::across)
  bool operator==(const BlurTaps&) const = default;
};
BlurTaps to_blur_taps(const GaussianTaps& taps);

// What the fused kernel does to every frame.
struct ChainParams {
  BlurTaps taps;               // blur (size 0: none)
  std::uint32_t zero_below = 0;  // threshold stage: pixels < zero_below become 0 (0: stage off)
  ColumnParams column;         // extraction (column.slots = profile slots)
  bool operator==(const ChainParams&) const = default;
};

// 0 when this build has a kernel image the current device can run, else the error.
cudaError_t probe_kernel_image();

// Blur each frame on its own (borders replicate at each frame's edges).
// size 0 copies. in and out must not overlap. Any frame height.
template <class T>
void blur(FramesView<const T> in, FramesView<T> out, const BlurTaps& taps, cudaStream_t stream);

// out = in >= threshold ? in : 0, over in.frames frames. in and out may be the same buffer.
template <class T>
void threshold(FramesView<const T> in, FramesView<T> out, std::uint32_t threshold, cudaStream_t stream);

// One thread per (frame, column): kernels::extract_column over global memory,
// pixels read as apply_threshold(pixel, zero_below) (0: as they are); `raw`
// (device, the same layout) holds the unblurred pixels, nullptr: `in` is
// unblurred. Writes every slot of every filled (frame, column) and its count
// (saturated at 255).
template <class T>
void extract(FramesView<const T> in, const T* raw, std::uint32_t zero_below, const ColumnParams& params, ProfileView out, cudaStream_t stream);

// ---------------------------------------------------------------------------
// The fused kernel: blur -> threshold -> extraction, one launch for all frames.
// A block takes one frame x kFusedColumns columns; the frame's strip (plus the
// blur halo) is read once from global memory into shared memory, the blurred
// and thresholded strip stays in shared memory, each thread extracts one
// column from it and writes only the profiles.

inline constexpr int kFusedColumns = 64;  // columns per block = threads per block

// Dynamic shared memory one block of the fused kernel needs for this geometry.
std::size_t fused_shared_bytes(int bytes_per_pixel, int frame_height, int blur_size);

// Lets every fused kernel use up to `max_bytes` of dynamic shared memory
// (cudaFuncSetAttribute; needed beyond 48 KiB). Call once at set-up, always
// with the same value (the device's opt-in maximum).
void configure_fused(std::size_t max_bytes);

// Runs the fused chain on in.frames frames. fused_shared_bytes(...) must fit
// the limit given to configure_fused (the caller falls back to the per-stage
// kernels otherwise).
template <class T>
void fused_chain(FramesView<const T> in, const ChainParams& params, ProfileView out, cudaStream_t stream);

// ---------------------------------------------------------------------------
// The chain for a few frames (warp_chain.cu): the same blur -> threshold ->
// adaptive extraction, a warp per column (the rows split over its lanes, a
// column's few candidates evaluated by the whole warp), for batches too small
// to fill the device with a thread per column (the live path's batch of 1).
// The same bits as fused_chain.
// Its limits: kernels/cuda/warp_chain_limits.h.

// Whether warp_chain runs this chain (method adaptive, frames of 1..kWarpChainMaxHeight rows).
bool warp_chain_supports(const ChainParams& params, int frame_height);
// Dynamic shared memory of one block (at most 48 KiB for any supported geometry).
std::size_t warp_chain_shared_bytes(int bytes_per_pixel, int frame_height, int blur_size);
// `by_warp`: a column's few candidates evaluated by the whole warp
// (kWarpEvaluatedCandidates); false: a lane each, always (the bench compares).
template <class T>
void warp_chain(FramesView<const T> in, const ChainParams& params, ProfileView out, cudaStream_t stream, bool by_warp = true);

}  // namespace stripeline::kernels::cuda
