#pragma once
// From pixels to millimetres. Without calibration a point is
//   x = column index, y = global frame index, z = row within the frame (px).
// A linear calibration maps each axis with its own scale and offset:
//   x_mm = x_scale * column + x_offset
//   y_mm = y_scale * frame  + y_offset   (frame = global frame index, or the
//                                          encoder count when y_from_encoder)
//   z_mm = z_scale * row    + z_offset
#include <string>

namespace stripeline {

struct LinearCalibration {
  bool enabled = false;
  double x_scale = 1.0, x_offset = 0.0;
  double y_scale = 1.0, y_offset = 0.0;
  double z_scale = 1.0, z_offset = 0.0;
  bool y_from_encoder = false;

  const char* unit() const { return enabled ? "mm" : "px"; }
  double x(double column) const { return enabled ? x_scale * column + x_offset : column; }
  double y(double frame) const { return enabled ? y_scale * frame + y_offset : frame; }
  double z(double row) const { return enabled ? z_scale * row + z_offset : row; }
};

}  // namespace stripeline
