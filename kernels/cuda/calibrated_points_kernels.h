#pragma once
// CUDA kernel of the calibrated points (kernels/calibrated_points.h): one
// thread per (frame, slot, column), the same calibrated_point_at() as the CPU.
// ASYNCHRONOUS on `stream`: enqueues and returns; no allocation, no sync.
// The view's pointers are device pointers (position, count and points in the
// device profiles: the CUDA processor runs it right after the extraction).
// Compiled with -fmad=false: the CPU's bits, not just its values to rounding.
#include <cuda_runtime_api.h>

#include "core/sheet_of_light.h"
#include "kernels/calibrated_points.h"

namespace stripeline::kernels::cuda {

void launch_calibrated_points(const SheetOfLightMap<double>& model, const CalibratedPointsView& view, cudaStream_t stream);

}  // namespace stripeline::kernels::cuda
