#include "app/calibration_setup.h"

#include "core/metadata.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "acquisition/camera_source.h"
#include "calibration/calibration_file.h"
#include "core/errors.h"

namespace stripeline {

void CalibrationFileSettings::validate() const {
  if (!std::isfinite(y_step_mm) || y_step_mm < 0)
    throw ConfigError("calibration.y_step_mm = " + std::to_string(y_step_mm) + " is out of range (expected a step > 0 in mm, or 0 = the file's)");
  if ((roi_x && *roi_x < 0) || (roi_y && *roi_y < 0))
    throw ConfigError("calibration.roi_offset is out of range (expected two offsets >= 0 in sensor pixels)");
}

void parse_roi_offset(const std::string& text, const std::string& flag, CalibrationFileSettings& out) {
  int x = -1, y = -1;
  char comma = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%d %c %d %c", &x, &comma, &y, &extra) != 3 || comma != ',' || x < 0 || y < 0)
    throw InputError(flag + " '" + text + "' is not a ROI offset (expected X,Y: two integers >= 0, sensor pixels)");
  out.roi_x = x;
  out.roi_y = y;
}

namespace {

std::string file_fnv1a(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return metadata::fnv1a_hex(s.str());
}

}  // namespace

std::shared_ptr<const AppliedCalibration> load_applied_calibration(const CalibrationFileSettings& settings, int frame_width,
                                                                   int frame_height, const CameraSettings* camera) {
  if (settings.file.empty()) return nullptr;
  const CalibrationFile f = load_calibration(settings.file);
  auto a = std::make_shared<AppliedCalibration>();
  a->model = f.model;
  a->id = f.id;
  a->file = settings.file.string();
  a->file_sha = file_fnv1a(settings.file);
  if (settings.y_step_mm > 0) a->model.y_step = settings.y_step_mm;
  a->roi_x = settings.roi_x.value_or(camera ? camera->offset_x : 0);
  a->roi_y = settings.roi_y.value_or(camera ? camera->offset_y : 0);
  if (a->model.unit != "mm")
    throw InputError(a->file + ": calibration.unit = '" + a->model.unit + "' cannot be applied (expected \"mm\": a fitted or linear mm calibration)");
  if (f.sensor_width > 0 && f.sensor_height > 0 &&
      (a->roi_x + frame_width > f.sensor_width || a->roi_y + frame_height > f.sensor_height))
    throw InputError(a->file + ": frames of " + std::to_string(frame_width) + "x" + std::to_string(frame_height) + " at ROI offset " +
                     std::to_string(a->roi_x) + "," + std::to_string(a->roi_y) + " fall outside its sensor of " +
                     std::to_string(f.sensor_width) + "x" + std::to_string(f.sensor_height) +
                     " (expected the ROI offset of these frames: --roi-offset X,Y or [calibration] roi_offset)");
  return a;
}

}  // namespace stripeline
