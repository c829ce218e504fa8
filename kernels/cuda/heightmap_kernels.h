#pragma once
// CUDA kernels of the height-map filters (stages/heightmap_filters.h).
//
// Every function here is ASYNCHRONOUS on the stream it is given: it enqueues
// its kernel(s) and returns. None allocates, none synchronises, none reads
// configuration. Launch errors are checked and thrown as CudaError; errors
// during execution surface at the caller's next synchronisation.
//
// Maps are device pointers to width x height uint16 codes (or uint8 for the
// 8-bit outputs), rows tightly packed (pitch = width). The scalar arithmetic
// is kernels/heightmap_ops.h's, shared with the CPU backend: bit-identical.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace stripeline::kernels::cuda {

// Median size x size (odd, 3..15) over valid (non-zero) codes; out16 or, when
// out8 is not null, to8(median, lo, hi) into out8.
void launch_heightmap_median(const std::uint16_t* in, int width, int height, int size, std::uint16_t* out16, std::uint8_t* out8,
                             std::uint16_t lo, std::uint16_t hi, cudaStream_t stream);

void launch_heightmap_to8(const std::uint16_t* in, int width, int height, std::uint16_t lo, std::uint16_t hi, std::uint8_t* out,
                          cudaStream_t stream);

// Scratch elements (uint16) each of g and h need for a 1-D morphology of length L.
std::size_t heightmap_morph_scratch(int width, int height, int length, bool vertical);

// Dilation (erode = false) or erosion along rows (vertical = false, 1 x L) or
// columns (L x 1), window [x - L/2, x + (L-1)/2] clipped; van Herk/Gil-Werman
// through g and h (device, heightmap_morph_scratch elements each). Two kernels.
void launch_heightmap_morph(const std::uint16_t* in, int width, int height, int length, bool vertical, bool erode, std::uint16_t* g,
                            std::uint16_t* h, std::uint16_t* out, cudaStream_t stream);

}  // namespace stripeline::kernels::cuda
