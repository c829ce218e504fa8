#pragma once
// A sheet-of-light model with realistic values (what the fit finds on the
// simulated sensor), for tests and fuzz seeds that need a model but no fit.
#include <algorithm>

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

}  // namespace stripeline::test
