#pragma once
// The calibration file (TOML, versioned): the model, its unit, the sensor and
// ROI it was made with, the motion axis, and the fit's residuals.
// docs/calibration.md lists every key; a minimal sheet-of-light file:
//
//   [calibration]
//   format = "stripeline-calibration"
//   version = 1
//   model = "sheet-of-light"          # or "linear" (the per-axis affine model)
//   unit = "mm"
//   [sensor]
//   width = 2048
//   height = 1088
//   roi = [0, 412, 2048, 256]         # x, y, width, height it was made with
//   [distortion]
//   direction = "correction"          # distorted -> undistorted, closed form
//   centre = [1023.5, 543.5]
//   scale = 1024.0
//   k = [0.0, 0.0, 0.0]
//   p = [0.0, 0.0]
//   [homography]
//   h = [[...], [...], [...]]         # normalised undistorted -> (X, Z) mm
//   [motion]
//   y_source = "frame"                # or "encoder"
//   y_step_mm = 0.1
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/metadata.h"
#include "core/sheet_of_light.h"

namespace stripeline {

inline constexpr int kCalibrationFileVersion = 1;

// What `stripeline calibrate` found, as the file keeps it ([fit], optional).
struct CalibrationFitSummary {
  bool present = false;
  std::string target;                 // the target's name
  double residual_rms_px = 0, residual_max_px = 0;
  double residual_rms_mm = 0, residual_max_mm = 0;
  std::uint64_t frames_used = 0, frames_rejected = 0, points_used = 0;
  double coverage = 0;                // fraction of the ROI's cells holding target points
};

struct CalibrationFile {
  SheetOfLightModel model;            // model.y_step is the active motion scale
  int sensor_width = 0, sensor_height = 0;
  SensorRoi roi;                      // the ROI it was made with
  double y_step_mm = 1.0;             // mm per frame (y_source = "frame")
  double y_per_tick_mm = 0.0;         // mm per encoder count (y_source = "encoder")
  CalibrationFitSummary fit;
  std::string origin;                 // file name, for messages
  std::string id;                     // model_id(model): identity of the mapping

  // Copy y_step_mm / y_per_tick_mm into the model by model.y_from_encoder.
  void sync_motion();
};

// 16 hex digits: FNV-1a 64 of the model's values (kind, unit, every
// coefficient, motion) printed at full precision. Same values, same id.
std::string model_id(const SheetOfLightModel& model);

// Parse and validate. Errors: InputError, one line "<origin>: <key>: <problem> (expected ...)".
CalibrationFile parse_calibration(const std::string& text, const std::string& origin);
CalibrationFile load_calibration(const std::filesystem::path& path);
// The file's text (every number at full precision: it reads back bit-identical).
std::string format_calibration(const CalibrationFile& file);
// What the file records, as `stripeline describe` shows it (core/metadata.h;
// python/stripeline/describe.py reads the same facts from the TOML):
// {"stripeline": "calibration", "model", "unit", "id", "sensor_width",
//  "sensor_height", "roi", "y_source", "y_step_mm", ["y_per_tick_mm"], "y_offset_mm", ["fit": {...}]}.
metadata::Json calibration_file_document(const CalibrationFile& file);
// Written under a temporary name and renamed when complete.
void save_calibration(const std::filesystem::path& path, const CalibrationFile& file);

}  // namespace stripeline
