#pragma once
// The warp chain's limits (warp_chain.cu, stripe_kernels.h), without the
// CUDA headers: the memory budget (stages/chain.cpp) sizes what the
// processor allocates for its batches in CPU-only builds too.
namespace stripeline::kernels::cuda {

inline constexpr int kWarpChainColumns = 4;      // columns per block (a warp each)
inline constexpr int kWarpChainMaxHeight = 128;  // frame rows at most (4 a lane)
inline constexpr int kWarpChainMaxFrames = 2;    // the processor's choice: batches of at most this many frames (faster up to 2 on an H100, docs/cuda.md)
// A column with at most this many candidates has them evaluated one after the
// other by the whole warp (warp_loops.cuh); more, a lane each. One candidate
// (the stripe) is the common case; a noisy column's many are cheap to reject
// a lane each.
inline constexpr int kWarpEvaluatedCandidates = 4;

}  // namespace stripeline::kernels::cuda
