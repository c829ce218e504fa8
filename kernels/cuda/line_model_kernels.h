#pragma once
// CUDA kernels of the line model (kernels/line_model.h): a warp or a block
// per frame runs the lane decomposition of kernels/line_model_lanes.h (each
// lane a chunk of the frame's columns; the block kernel's forward pass
// speculative, with (max, +) transfer matrices scanned over the lanes as its
// fallback and the warp kernel's pass), the same phases the CPU test runs
// lane after lane against the oracle, so both give the same bits. Why: a frame's walk over its columns
// is sequential by nature; on one thread (the first design) or with the
// warp's lanes over the states (the second) one frame took ~1.3 ms on an
// H100, far beyond a live path's budget.
//
// ASYNCHRONOUS on `stream`: enqueues and returns; no allocation, no sync.
// The view's pointers are device pointers: the processor's candidate
// profiles, its output profiles, and `back` = its scratch of
// line_model_device_scratch_bytes(K, width, frames) bytes (back_stride is
// not used). The frame's column arrays live in shared memory when they fit
// the limit given to configure_line_model, else in that scratch.
#include <cstddef>

#include <cuda_runtime_api.h>

#include "kernels/line_model_lanes.h"  // line_model_device_scratch_bytes

namespace stripeline::kernels::cuda {

// Lets the kernel use up to `max_bytes` of dynamic shared memory per block
// (cudaFuncSetAttribute; needed beyond 48 KiB). Call once at set-up with the
// device's opt-in maximum; without it the kernel keeps to 48 KiB.
void configure_line_model(std::size_t max_bytes);

// The two designs: a warp per frame (32 chunks of columns; 20 KiB of shared
// memory for 8 candidates, so any GPU) and a block of kLineBlockLanes per
// frame (256 chunks, scans in log depth; ~190 KiB for 8 candidates). Auto:
// the block when its shared memory fits what configure_line_model allowed.
enum class LineKernel { Auto, Warp, Block };
LineKernel line_kernel_for(const LineModelParams& params, int width);

// `ahead`: pass 0's staging done ahead (LineStageAhead, made for these
// parameters and width; the block kernel's, the warp kernel ignores it).
void launch_line_model(const LineModelView& view, const LineModelParams& params, cudaStream_t stream, LineKernel kernel = LineKernel::Auto,
                       const LineStageAhead* ahead = nullptr);

// The staging ahead of the view's frames (four threads a column, on every
// SM), between the extraction and the model's block kernel given `ahead`.
void launch_line_stage_ahead(const LineModelView& view, const LineStageAhead& ahead, cudaStream_t stream);

// For the bench's profile of the block kernel (bench/line_model_kernel_bench):
// one launch of a variant whose thread 0 reads clock64() at each phase
// boundary; [pass][phase] = cycles summed over the view's frames (phases:
// staging (with the link table), speculative walk, rounds of walks again, the exact fallback,
// first states, last states, path, runs, drop short), [kLinePasses][0] = the
// output's write, [kLinePasses][1] = the passes run, [kLinePasses][2] = the
// rounds in which a lane walked again, [kLinePasses][3] = the fallbacks.
// Synchronises the stream.
inline constexpr int kLinePhaseCount = 9;
using LinePhaseCycles = unsigned long long[kLinePasses + 1][kLinePhaseCount];
struct LinePhaseProfile {
  LinePhaseCycles cycles;
};
LinePhaseProfile line_model_block_phase_cycles(const LineModelView& view, const LineModelParams& params, cudaStream_t stream,
                                               const LineStageAhead* ahead = nullptr);

// For the bench: the columns each lane of the block kernel walks before its
// chunk (kernels/line_model_lanes.h, kLineWarmup by default; any value gives
// the same bits, only the rounds needed change). Device-wide, synchronous.
void set_line_model_warmup(int columns);
// For the bench: the speculative walks in 32 bits where the parameters allow
// (the default) or always in 64 (the same bits). Device-wide, synchronous.
void set_line_model_narrow_walks(bool on);
// For the bench: the 32-bit walks' steps from the link table where it fits
// (the default) or from the staged candidates (the same bits). Device-wide,
// synchronous.
void set_line_model_link_table(bool on);

}  // namespace stripeline::kernels::cuda
