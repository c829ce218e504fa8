#include "measure/scan_files.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "io/float_tiff_reader.h"
#include "io/metadata_reader.h"
#include "io/ply_writer.h"
#include "measure/row_measurer.h"

namespace stripeline::measure {

void grid_row(const float* z, int cells, double x_min, double dx, MeasureRow& row) {
  row.clear_points();
  for (int i = 0; i < cells; ++i) {
    if (!std::isfinite(z[i])) continue;
    row.x.push_back(static_cast<float>(x_min + i * dx));
    row.z.push_back(z[i]);
  }
}

namespace {
// The job, not owned (it outlives the measuring): every part measured on the reading thread.
std::shared_ptr<const Job> borrowed(const Job& job) { return std::shared_ptr<const Job>(std::shared_ptr<const Job>(), &job); }
}  // namespace

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
  RowMeasurer measurer(borrowed(job), on_result, 0);
  measurer.begin("mm", y_step, nullptr);
  MeasureRow row;
  const std::vector<float>& z = map.planes[0];
  for (std::int64_t r = 0; r < map.height; ++r) {
    row.frame = static_cast<std::uint64_t>(r);
    row.y = y_offset + static_cast<double>(r) * y_step;
    grid_row(z.data() + static_cast<std::size_t>(r) * map.width, static_cast<int>(map.width), x_min, dx, row);
    measurer.push(row);
  }
  measurer.finish();
  return static_cast<std::uint64_t>(map.height);
}

std::uint64_t measure_ply(const std::filesystem::path& file, const Job& job, const OnMeasured& on_result) {
  const std::string what = file.string() + ": ";
  double y_step = 0;
  try {
    y_step = io::read_metadata(file).at("calibration").at("y_step_mm").get<double>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(what + "no sheet-of-light calibration in its metadata (expected a PLY of `stripeline replay --calibration ... --ply`)");
  }
  if (!(y_step > 0)) throw InputError(what + "its y_step_mm is not usable (expected > 0)");
  if (job.units != "mm") throw InputError(job.file + ": job.units = \"" + job.units + "\" but a calibrated PLY is in mm (expected units = \"mm\")");
  const std::vector<io::PlyVertex> v = io::read_ply(file);
  RowMeasurer measurer(borrowed(job), on_result, 0);
  measurer.begin("mm", y_step, nullptr);
  MeasureRow row;
  std::uint64_t rows = 0;
  std::vector<std::uint32_t> order;
  std::vector<float> scratch;
  auto flush = [&] {
    row.sort_by_x(order, scratch);
    measurer.push(row);
    row.clear_points();
    ++rows;
  };
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i].x) || !std::isfinite(v[i].z) || !std::isfinite(v[i].y)) continue;
    if (!row.x.empty() && std::abs(v[i].y - row.y) >= 0.5 * y_step) flush();
    if (row.x.empty()) row.frame = rows, row.y = v[i].y;
    row.x.push_back(v[i].x);
    row.z.push_back(v[i].z);
  }
  if (!row.x.empty()) flush();
  measurer.finish();
  return rows;
}

}  // namespace stripeline::measure
