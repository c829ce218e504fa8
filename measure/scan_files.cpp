#include "measure/scan_files.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "io/float_tiff_reader.h"
#include "measure/part_detector.h"

namespace stripeline::measure {

std::uint64_t measure_range_map(const std::filesystem::path& file, const Job& job, const OnMeasured& on_result) {
  io::FloatPlanes map;
  try {
    map = io::read_float_tiff(file);
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + " (expected a range map of `stripeline replay --range-map`, or a recording with -H)");
  }
  const std::string what = file.string() + ": ";
  nlohmann::json d;
  try {
    d = nlohmann::json::parse(map.description);
  } catch (const nlohmann::json::exception&) {
    throw InputError(what + "no stripeline description (expected a range map of `stripeline replay --range-map`, or a recording with -H)");
  }
  if (d.value("stripeline", "") != "range-map" || map.planes.size() != 1)
    throw InputError(what + "not a range map (expected one written by `stripeline replay --range-map`, or a recording with -H)");
  if (job.units != "mm") throw InputError(job.file + ": job.units = \"" + job.units + "\" but a range map is in mm (expected units = \"mm\")");
  double x_min = 0, dx = 0, y_step = 0, y_offset = 0;
  try {
    x_min = d.at("grid").at("x_min_mm").get<double>();
    dx = d.at("grid").at("dx_mm").get<double>();
    const auto& c = d.at("calibration");
    if (c.value("y_source", "frame") != "frame")
      throw InputError(what + "its rows' Y came from an encoder, which the file does not hold (expected y_source frame)");
    y_step = c.at("y_step_mm").get<double>();
    y_offset = c.value("y_offset_mm", 0.0);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(what + "its description lacks the grid or the motion step (" + e.what() + ")");
  }
  if (!(dx > 0) || !(y_step > 0) || !std::isfinite(x_min)) throw InputError(what + "its grid or motion step is not usable");
  PartDetector* self = nullptr;
  PartDetector detector(job.detection, y_step, "mm", [&](Part&& p) {
    const PartResult r = measure_part(job, p);
    if (on_result) on_result(r, p);
    self->recycle(std::move(p));
  });
  self = &detector;
  MeasureRow row;
  const std::vector<float>& z = map.planes[0];
  for (std::int64_t r = 0; r < map.height; ++r) {
    row.clear_points();
    row.frame = static_cast<std::uint64_t>(r);
    row.y = y_offset + static_cast<double>(r) * y_step;
    for (int i = 0; i < map.width; ++i) {
      const float v = z[static_cast<std::size_t>(r) * map.width + i];
      if (!std::isfinite(v)) continue;
      row.x.push_back(static_cast<float>(x_min + i * dx));
      row.z.push_back(v);
    }
    detector.push(row);
  }
  detector.finish();
  return static_cast<std::uint64_t>(map.height);
}

}  // namespace stripeline::measure
