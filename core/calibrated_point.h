#pragma once
// One detection -> one calibrated point, the same function on the host
// (ProfileMapping::point, kernels/calibrated_points.h) and in the CUDA kernel
// (kernels/cuda/calibrated_points_kernels.cu). Evaluated in double with
// +, -, *, / only; the kernel is compiled without FMA contraction, so the
// GPU gives the CPU's bits (the CPU is the oracle; tests compare exactly).
//
// A point is stored as three floats: X, dY, Z in mm, where dY is Y minus the
// frame's motion position (motion_y, one double per frame). Y itself is
// motion_y + dY, added in double by whoever reads the point, so Y keeps its
// precision after millions of frames while a batch's points stay 12 bytes.
#include <cstdint>

#include "core/fixed_point.h"
#include "core/sheet_of_light.h"

namespace stripeline {

// Detection at `column` with fixed-point `position` (row within the frame) in
// frames whose top-left sensor pixel is (roi_x, roi_y): u = roi_x + column,
// v = roi_y + row. False beyond the horizon (X, dY, Z untouched).
STRIPELINE_HD bool calibrated_point(const SheetOfLightMap<double>& m, int roi_x, int roi_y, int column, std::int32_t position, float& X,
                                    float& dY, float& Z) {
  double px, pz;
  const double u = static_cast<double>(roi_x + column);
  const double v = static_cast<double>(roi_y) + static_cast<double>(position) / kPositionOne;
  if (!image_to_plane(m, u, v, px, pz)) return false;
  double wx, wy, wz;
  plane_to_world(m, px, pz, 0.0, wx, wy, wz);
  X = static_cast<float>(wx);
  dY = static_cast<float>(wy);
  Z = static_cast<float>(wz);
  return true;
}

}  // namespace stripeline
