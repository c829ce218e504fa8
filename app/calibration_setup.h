#pragma once
// Applying a sheet-of-light calibration file to a scan (docs/calibration.md):
// [calibration] file / y_step_mm / roi_offset, or --calibration, --y-step,
// --roi-offset on run, replay, daemon and subscribe.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "core/applied_calibration.h"

namespace stripeline {

struct CameraSettings;

// The [calibration] keys that name a calibration file. (The linear keys,
// enabled/x_scale/..., stay in PipelineOptions::calibration.)
struct CalibrationFileSettings {
  std::filesystem::path file;         // "" = no sheet-of-light calibration
  double y_step_mm = 0.0;             // > 0 overrides the file's motion step (mm per frame, or per encoder count)
  std::optional<int> roi_x, roi_y;    // ROI offsets of the frames (recordings); default 0,0; cameras: the read-back

  // ConfigError naming the key: y_step_mm >= 0 and finite, offsets >= 0.
  void validate() const;
};

// "X,Y" -> offsets. InputError naming the flag when it is not two integers >= 0.
void parse_roi_offset(const std::string& text, const std::string& flag, CalibrationFileSettings& out);

// Load and check the file (InputError, one line naming it). `camera`: a live
// camera's read-back, whose ROI offsets are used unless the settings give them.
// Throws InputError when the frames (width x frame_height at the offsets) fall
// outside the sensor the calibration was made for.
std::shared_ptr<const AppliedCalibration> load_applied_calibration(const CalibrationFileSettings& settings, int frame_width,
                                                                   int frame_height, const CameraSettings* camera = nullptr);

}  // namespace stripeline
