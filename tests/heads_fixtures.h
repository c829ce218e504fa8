#pragma once
// What the tests of several heads in one daemon write alike (tests/test_heads.cpp,
// tests/gentl/test_gentl_daemon.cpp): a head's calibration file and the
// heads' head-to-world transforms.
#include <filesystem>
#include <fstream>
#include <string>

#include "calibration/calibration_file.h"
#include "calibration/head_alignment.h"
#include "test_helpers.h"

namespace stripeline::test {

// A sheet-of-light calibration of the synthetic scanner's `width` x 32 frames:
// X = 20 mm * (column - width/2) / 128 (256 columns: -20..20 mm), Z from the
// row. A head reading columns [x0, x0 + 256) of a wider view is that view's
// calibration shifted by 20 mm * (x0 + 128 - width/2) / 128 along X.
inline std::filesystem::path write_calibration(const TempDir& dir, int width = 256, const std::string& name = "head") {
  CalibrationFile f;
  f.model.kind = SheetOfLightModel::Kind::SheetOfLight;
  f.model.unit = "mm";
  f.model.cu = width / 2.0, f.model.cv = 16, f.model.scale = 128;
  const double h[9] = {20, 0, 0, 0, 20, 0, 0, 0, 1};
  std::copy(h, h + 9, f.model.homography);
  f.sensor_width = width, f.sensor_height = 32;
  f.roi = {0, 0, width, 32};
  f.y_step_mm = 0.1;
  f.sync_motion();
  f.id = model_id(f.model);
  const auto path = dir / (name + ".calibration.toml");
  write_text(path, format_calibration(f));
  return path;
}

// Three heads 30 mm apart, 40 mm wide each: adjacent views overlapping by 10 mm.
inline std::filesystem::path write_transforms(const TempDir& dir) {
  HeadTransforms t;
  for (int i = 0; i < 3; ++i) t.heads.push_back(HeadTransform::in_plane(std::string(1, static_cast<char>('a' + i)), 0.0, 30.0 * (i - 1), 0.0));
  const auto path = dir / "transforms.toml";
  save_head_transforms(path, t);
  return path;
}

}  // namespace stripeline::test
