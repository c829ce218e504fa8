#pragma once
// A sheet-of-light model with realistic values (what the fit finds on the
// simulated sensor), and a calibration file around it, for tests and fuzz
// seeds that need a model but no fit.
#include <algorithm>

#include "calibration/calibration_file.h"
#include "core/sheet_of_light.h"

namespace stripeline::test {

inline SheetOfLightModel realistic_model() {
  SheetOfLightModel m;
  m.kind = SheetOfLightModel::Kind::SheetOfLight;
  m.unit = "mm";
  m.cu = 1023.5;
  m.cv = 543.5;
  m.scale = 1024.0;
  const double d[5] = {0.00477011998, -0.000238325787, -7.67195961e-05, -5.5963605e-05, -3.82381185e-06};
  const double h[9] = {49.9465071, -0.429775491, 0.052875433, 0.229961264, -104.21397, 12.8207813, 0.00171466275, -0.346002323, 1.0};
  std::copy(d, d + 5, m.distortion);
  std::copy(h, h + 9, m.homography);
  m.y_step = 0.1;
  return m;
}

// realistic_model() as a fitted file: sensor 2048 x 1088, ROI rows 428..683,
// 0.1 mm per frame, fit on the sawtooth target (residual 0.0323 px, 40 frames).
inline CalibrationFile realistic_calibration_file() {
  CalibrationFile f;
  f.model = realistic_model();
  f.model.y_offset = -0.1;
  f.sensor_width = 2048;
  f.sensor_height = 1088;
  f.roi = {0, 428, 2048, 256};
  f.y_step_mm = 0.1;
  f.sync_motion();
  f.fit.present = true;
  f.fit.target = "sawtooth";
  f.fit.residual_rms_px = 0.0323;
  f.fit.frames_used = 40;
  return f;
}

}  // namespace stripeline::test
