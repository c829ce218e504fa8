#pragma once
// --calibration FILE, --y-step MM, --roi-offset X,Y: the same flags on run,
// replay, daemon and subscribe, over the config's [calibration] section.
#include <cmath>
#include <string>

#include <CLI/CLI.hpp>

#include "app/calibration_setup.h"
#include "app/config.h"
#include "core/errors.h"

namespace stripeline::tools {

inline void add_calibration_flags(CLI::App* sub, std::string& calibration, double& y_step, std::string& roi_offset) {
  sub->add_option("--calibration", calibration, "Sheet-of-light calibration file (stripeline calibrate): points in mm (docs/calibration.md)");
  sub->add_option("--y-step", y_step, "With a calibration: mm per frame along the motion (overrides the file's y_step_mm)");
  sub->add_option("--roi-offset", roi_offset, "With a calibration: X,Y offset of these frames on the sensor, pixels (default 0,0; cameras: read back)");
}

// The calibration flags over the config's [calibration] section.
inline void apply_calibration_flags(Config& c, const std::string& calibration, double y_step, const std::string& roi_offset) {
  if (!calibration.empty()) {
    c.calibration.file = calibration;
    c.pipeline.calibration.enabled = false;  // the file replaces the linear keys
  }
  if (y_step != 0.0) {
    if (!(y_step > 0) || !std::isfinite(y_step))
      throw InputError("--y-step " + std::to_string(y_step) + " is out of range (expected a step > 0 in mm)");
    c.calibration.y_step_mm = y_step;
  }
  if (!roi_offset.empty()) parse_roi_offset(roi_offset, "--roi-offset", c.calibration);
}

}  // namespace stripeline::tools
