#pragma once
// The warp chain's limits (warp_chain.cu, stripe_kernels.h), without the
// CUDA headers: the memory budget (stages/chain.cpp) sizes what the
// processor allocates for its batches in CPU-only builds too.
namespace stripeline::kernels::cuda {

inline constexpr int kWarpChainColumns = 4;      // columns per block (a warp each)
inline constexpr int kWarpChainMaxHeight = 128;  // frame rows at most (4 a lane)
inline constexpr int kWarpChainMaxFrames = 2;    // the processor's choice: batches of at most this many frames (faster up to 2 on an H100, docs/cuda.md)

}  // namespace stripeline::kernels::cuda
