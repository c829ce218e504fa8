#pragma once
// Calibrated points of a batch of profiles, as a dense array: for each frame,
// slot and column, (X, Y, Z) in mm as three floats, NaN where the slot holds
// no detection or the model has no point there. The CPU loop below and the
// CUDA kernel (kernels/cuda/calibrated_points_kernels.h) evaluate the same
// calibrated_point() in double (core/calibrated_point.h).
//
// Arrays follow ProfileLayout (core/profile_layout.h): position
// [frame][slot][column], count [frame][column]; frame_y[frame] is the motion
// position of each frame (motion_y, evaluated once per frame on the host).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/calibrated_point.h"

namespace stripeline::kernels {

struct CalibratedPointsView {
  const std::int32_t* position = nullptr;  // [frame][slot][column]
  const std::uint8_t* count = nullptr;     // [frame][column]
  const double* frame_y = nullptr;         // [frame]
  float* xyz = nullptr;                    // [frame][slot][column][3]
  int frames = 0, slots = 1, width = 0;
  int roi_x = 0, roi_y = 0;
};

// One element (frame f, slot s, column x) of the output: shared by both backends.
STRIPELINE_HD void calibrated_point_at(const SheetOfLightMap<double>& m, const CalibratedPointsView& v, int f, int s, int x) {
  const std::size_t i = (static_cast<std::size_t>(f) * v.slots + s) * v.width + x;
  float* o = v.xyz + 3 * i;
  double X, Y, Z;
  if (s < v.count[static_cast<std::size_t>(f) * v.width + x] &&
      calibrated_point(m, v.roi_x, v.roi_y, x, v.position[i], v.frame_y[f], X, Y, Z)) {
    o[0] = static_cast<float>(X);
    o[1] = static_cast<float>(Y);
    o[2] = static_cast<float>(Z);
  } else {
    const std::uint32_t quiet_nan = 0x7fc00000u;  // memcpy: the same NaN on host and device, no relaxed constexpr
    float none;
    std::memcpy(&none, &quiet_nan, sizeof none);
    o[0] = o[1] = o[2] = none;
  }
}

// The CPU backend (and the oracle).
inline void calibrated_points_cpu(const SheetOfLightMap<double>& m, const CalibratedPointsView& v) {
  for (int f = 0; f < v.frames; ++f)
    for (int s = 0; s < v.slots; ++s)
      for (int x = 0; x < v.width; ++x) calibrated_point_at(m, v, f, s, x);
}

}  // namespace stripeline::kernels
