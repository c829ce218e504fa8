#pragma once
// Calibrated points of a batch of profiles, as a dense array: for each frame,
// slot and column, (X, dY, Z) in mm as three floats (dY: Y minus the frame's
// motion position, core/calibrated_point.h), NaN where the slot holds no
// detection or the model has no point there. The CPU loop below and the CUDA
// kernel (kernels/cuda/calibrated_points_kernels.h) evaluate the same
// calibrated_point() and give the same bits.
//
// Arrays follow ProfileLayout (core/profile_layout.h): position
// [frame][slot][column], count [frame][column], points [frame][slot][column][3].
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/calibrated_point.h"

namespace stripeline::kernels {

struct CalibratedPointsView {
  const std::int32_t* position = nullptr;  // [frame][slot][column]
  const std::uint8_t* count = nullptr;     // [frame][column]
  float* points = nullptr;                 // [frame][slot][column][3]
  int frames = 0, slots = 1, width = 0;
  int roi_x = 0, roi_y = 0;
};

// One element (frame f, slot s, column x) of the output: shared by both backends.
STRIPELINE_HD void calibrated_point_at(const SheetOfLightMap<double>& m, const CalibratedPointsView& v, int f, int s, int x) {
  const std::size_t i = (static_cast<std::size_t>(f) * v.slots + s) * v.width + x;
  float* o = v.points + 3 * i;
  if (s < v.count[static_cast<std::size_t>(f) * v.width + x] && calibrated_point(m, v.roi_x, v.roi_y, x, v.position[i], o[0], o[1], o[2]))
    return;
  const std::uint32_t quiet_nan = 0x7fc00000u;  // memcpy: the same NaN on host and device, no relaxed constexpr
  float none;
  std::memcpy(&none, &quiet_nan, sizeof none);
  o[0] = o[1] = o[2] = none;
}

// Frames [first, last) on the CPU (the backend and the oracle).
inline void calibrated_points_cpu(const SheetOfLightMap<double>& m, const CalibratedPointsView& v, int first, int last) {
  for (int f = first; f < last; ++f)
    for (int s = 0; s < v.slots; ++s)
      for (int x = 0; x < v.width; ++x) calibrated_point_at(m, v, f, s, x);
}
inline void calibrated_points_cpu(const SheetOfLightMap<double>& m, const CalibratedPointsView& v) {
  calibrated_points_cpu(m, v, 0, v.frames);
}

}  // namespace stripeline::kernels
