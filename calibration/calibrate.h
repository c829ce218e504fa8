#pragma once
// `stripeline calibrate` as a library function: a recording of a known target
// in, a calibration file and its report out (docs/calibration.md).
#include <nlohmann/json.hpp>

#include <string>

#include "calibration/calibration_file.h"
#include "calibration/fit.h"
#include "calibration/target.h"
#include "stages/chain.h"

namespace stripeline {

class FrameSource;

struct CalibrateOptions {
  ChainConfig chain;            // the stripe extraction (default: the default chain)
  int roi_x = 0, roi_y = 0;     // the recording's ROI offsets on the sensor
  FitOptions fit;               // fit.origin names the recording in messages
  // The motion axis, written into the file (not fitted: a 2D target cannot see it).
  double y_step_mm = 1.0;
  double y_per_tick_mm = 0.0;
  bool y_from_encoder = false;
  double y_offset_mm = 0.0;
  double skew_about_x_deg = 0.0, skew_about_z_deg = 0.0;
};

struct CalibrationRun {
  CalibrationFit fit;
  CalibrationFile file;
  nlohmann::json report;
};

// Extracts the stripe with the CPU chain, fits, and builds the file and the
// report. Throws InputError (exit 2) when the target cannot be fitted.
CalibrationRun calibrate(FrameSource& source, const CalibrationTarget& target, const CalibrateOptions& options);

// The file a fit makes (model, sensor, ROI, motion, [fit] residuals).
CalibrationFile calibration_file_from_fit(const CalibrationFit& fit, const CalibrationTarget& target, const CalibrateOptions& options);

// The JSON report; its keys are listed in docs/calibration.md.
nlohmann::json calibration_report(const CalibrationFit& fit, const CalibrationTarget& target, const CalibrationFile& file,
                                  const std::string& recording);

}  // namespace stripeline
