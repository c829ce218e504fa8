#pragma once
// A sheet-of-light calibration as a scan applies it (docs/calibration.md):
// the model from the calibration file, with the motion step resolved
// (--y-step / [calibration] y_step_mm override the file's), plus the ROI
// offsets of the frames being mapped: u = roi_x + column, v = roi_y + row.
// Shared read-only by every sink of a scan (std::shared_ptr<const ...>).
#include <string>

#include "core/sheet_of_light.h"

namespace stripeline {

struct AppliedCalibration {
  SheetOfLightModel model;  // model.y_step / y_offset / y_from_encoder are the ones in use
  int roi_x = 0, roi_y = 0; // full-sensor offsets of column 0 / row 0 of these frames
  std::string id;           // the model's identity (calibration file id, FNV-1a of its values)
  std::string file;         // where it came from (messages, headers)
  std::string file_sha;     // hex FNV-1a 64 of the file's bytes ("" when not read from a file)
};

}  // namespace stripeline
