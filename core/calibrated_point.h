#pragma once
// One detection -> one calibrated point, the same function on the host
// (ProfileMapping::point, kernels/calibrated_points.h) and in the CUDA kernel
// (kernels/cuda/calibrated_points_kernels.cu), in double on both: the CPU is
// the oracle and the GPU agrees to rounding (tests: within 1e-4 mm).
#include <cstdint>

#include "core/fixed_point.h"
#include "core/sheet_of_light.h"

namespace stripeline {

// Detection at `column` with fixed-point `position` (row within the frame) in
// frames whose top-left sensor pixel is (roi_x, roi_y), at motion position y
// (motion_y): u = roi_x + column, v = roi_y + row. False beyond the horizon.
STRIPELINE_HD bool calibrated_point(const SheetOfLightMap<double>& m, int roi_x, int roi_y, int column, std::int32_t position, double y,
                                           double& X, double& Y, double& Z) {
  double px, pz;
  const double u = static_cast<double>(roi_x + column);
  const double v = static_cast<double>(roi_y) + static_cast<double>(position) / kPositionOne;
  if (!image_to_plane(m, u, v, px, pz)) return false;
  plane_to_world(m, px, pz, y, X, Y, Z);
  return true;
}

}  // namespace stripeline
