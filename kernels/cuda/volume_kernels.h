#pragma once
// The CUDA kernel of the `volume` tool's sums (docs/measure.md, "Where the
// tools run"): a part's rows on the device, one block per row, each segment
// by kernels/volume_ops.h (the CPU tool's own arithmetic) and summed in
// fixed point with integer atomics: the CPU oracle's bits in any order.
//
// ASYNCHRONOUS on the stream given: enqueues a memset and one kernel and
// returns; no allocation, no synchronisation. Launch errors throw CudaError.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/volume_ops.h"  // VolumeQuery, VolumeSums

namespace stripeline::kernels::cuda {

// A part's rows on the device, packed: row r's points are
// [row_begin[r], row_begin[r + 1]) of x and z (X increasing), its Y row_y[r].
struct DeviceRows {
  const float* x = nullptr;
  const float* z = nullptr;
  const std::int64_t* row_begin = nullptr;  // rows + 1 entries
  const double* row_y = nullptr;
  int rows = 0;
};

// Zeroes *out (device) and adds the query's sums into it.
void launch_volume_sums(const DeviceRows& rows, const VolumeQuery& q, VolumeSums* out, cudaStream_t stream);

}  // namespace stripeline::kernels::cuda
