#pragma once
// CUDA backend of the height-map filters (stages/heightmap_filters.h),
// bit-identical to the CPU one. The object owns its stream, timing/sync events
// and device buffers, all made at set-up for one width x height; run()
// uploads, runs the chain and downloads on its own stream, then waits on its
// own event. Not thread-safe: one thread per object.
#include <memory>
#include <vector>

#include "stages/heightmap_filters.h"

namespace stripeline::cuda {

class CudaHeightMapFilter : public HeightMapFilter {
 public:
  // Runs the chain again on the input the last run() uploaded, without any
  // copy; returns the kernels' time in ms (CUDA events). For benchmarks.
  virtual double compute_only_ms() = 0;
};

// steps: validated and fused (make_heightmap_filter does both). Throws
// CudaError when CUDA is unusable or the device lacks memory.
std::unique_ptr<CudaHeightMapFilter> make_heightmap_filter(int width, int height, const std::vector<FilterStep>& steps);

}  // namespace stripeline::cuda
