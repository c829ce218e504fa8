#include "calibration/toml_text.h"
#include "calibration/calibration_file.h"
#include "calibration/toml_table.h"

#include <toml++/toml.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "core/errors.h"
#include "core/types.h"
#include "io/atomic_file.h"

namespace stripeline {

namespace {
using toml_table::exact;
using toml_table::quoted;
using toml_table::shown;
using toml_table::Table;

std::string model_values_text(const SheetOfLightModel& m) {
  std::string s = m.kind == SheetOfLightModel::Kind::Linear ? "linear" : "sheet-of-light";
  auto add = [&s](const std::string& word) {
    s += ' ';
    s += word;
  };
  add(m.unit);
  for (double v : {m.cu, m.cv, m.scale}) add(exact(v));
  for (double v : m.distortion) add(exact(v));
  for (double v : m.homography) add(exact(v));
  for (double v : {m.y_step, m.y_offset, m.skew_about_x_deg, m.skew_about_z_deg}) add(exact(v));
  s += m.y_from_encoder ? " encoder" : " frame";
  return s;
}

}  // namespace

void CalibrationFile::sync_motion() { model.y_step = model.y_from_encoder ? y_per_tick_mm : y_step_mm; }

std::string model_id(const SheetOfLightModel& m) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : model_values_text(m)) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

void check_sections(const toml::table& root, const std::string& origin) {
  for (const auto& [k, v] : root) {
    const std::string key(k.str());
    if (key != "calibration" && key != "sensor" && key != "distortion" && key != "homography" && key != "linear" && key != "motion" &&
        key != "fit")
      throw InputError(origin + ": " + key +
                       ": unknown section (expected calibration, sensor, distortion, homography, linear, motion, fit)");
    if (!v.is_table()) throw InputError(origin + ": " + key + ": expected a table ([" + key + "])");
  }
}

// [calibration]: format, version, model, unit; returns the id line ("" when none).
std::string parse_header(const toml::table& root, const std::string& origin, SheetOfLightModel& m) {
  Table cal(root["calibration"].as_table(), "calibration", origin);
  if (!cal.present()) throw InputError(origin + ": calibration: missing (expected a [calibration] table; is this a calibration file?)");
  const std::string format = cal.string("format", true);
  if (format != "stripeline-calibration") cal.fail("format", "\"" + format + "\" (expected \"stripeline-calibration\")");
  const std::int64_t version = cal.integer("version", true);
  if (version != kCalibrationFileVersion)
    cal.fail("version", std::to_string(version) + " is not supported (expected " + std::to_string(kCalibrationFileVersion) + ")");
  const std::string model = cal.string("model", true);
  if (model == "linear")
    m.kind = SheetOfLightModel::Kind::Linear;
  else if (model == "sheet-of-light")
    m.kind = SheetOfLightModel::Kind::SheetOfLight;
  else
    cal.fail("model", "\"" + model + "\" is not known (expected \"sheet-of-light\" or \"linear\")");
  m.unit = cal.string("unit", true);
  if (m.unit != "mm" && !(m.unit == "px" && m.kind == SheetOfLightModel::Kind::Linear))
    cal.fail("unit", "\"" + m.unit + "\" (expected \"mm\"; \"px\" only with model = \"linear\")");
  const std::string id = cal.string("id", false);
  cal.finish();
  return id;
}

void parse_sensor(const toml::table& root, const std::string& origin, CalibrationFile& f) {
  Table sensor(root["sensor"].as_table(), "sensor", origin);
  f.sensor_width = static_cast<int>(sensor.integer("width", false, 0));
  f.sensor_height = static_cast<int>(sensor.integer("height", false, 0));
  if (f.sensor_width < 0 || f.sensor_width > kMaxWidth)
    sensor.fail("width", std::to_string(f.sensor_width) + " (expected 1.." + std::to_string(kMaxWidth) + " pixels, or 0 = unknown)");
  if (f.sensor_height < 0 || f.sensor_height > (1 << 16))
    sensor.fail("height", std::to_string(f.sensor_height) + " (expected 1..65536 pixels, or 0 = unknown)");
  if (sensor.has("roi")) {
    const auto r = sensor.numbers("roi", true, 4);
    for (double v : r)
      if (v != std::floor(v) || v < 0 || v > (1 << 16)) sensor.fail("roi", "expected [x, y, width, height], whole pixels >= 0");
    f.roi = {static_cast<int>(r[0]), static_cast<int>(r[1]), static_cast<int>(r[2]), static_cast<int>(r[3])};
    if (f.roi.width < 1 || f.roi.height < 1) sensor.fail("roi", "width and height must be at least 1 (expected [x, y, width, height])");
    if ((f.sensor_width > 0 && f.roi.x + f.roi.width > f.sensor_width) || (f.sensor_height > 0 && f.roi.y + f.roi.height > f.sensor_height))
      sensor.fail("roi", std::string("[") + std::to_string(f.roi.x) + ", " + std::to_string(f.roi.y) + ", " + std::to_string(f.roi.width) + ", " +
                             std::to_string(f.roi.height) + "] reaches outside the " + std::to_string(f.sensor_width) + "x" +
                             std::to_string(f.sensor_height) + " sensor (expected a ROI inside it)");
  }
  sensor.finish();
}

// [distortion] + [homography] (sheet-of-light) or [linear].
void parse_model_tables(const toml::table& root, const std::string& origin, SheetOfLightModel& m) {
  Table dist(root["distortion"].as_table(), "distortion", origin);
  Table hom(root["homography"].as_table(), "homography", origin);
  Table lin(root["linear"].as_table(), "linear", origin);
  if (m.kind == SheetOfLightModel::Kind::SheetOfLight) {
    if (!dist.present()) throw InputError(origin + ": distortion: missing (expected a [distortion] table with model = \"sheet-of-light\")");
    if (!hom.present()) throw InputError(origin + ": homography: missing (expected a [homography] table with model = \"sheet-of-light\")");
    if (lin.present()) throw InputError(origin + ": linear: not allowed with model = \"sheet-of-light\" (expected [distortion] and [homography])");
    const std::string direction = dist.string("direction", true);
    if (direction != "correction")
      dist.fail("direction", "\"" + direction + "\" is not supported (expected \"correction\": the polynomial maps distorted to undistorted)");
    const auto c = dist.numbers("centre", true, 2);
    m.cu = c[0];
    m.cv = c[1];
    m.scale = dist.number("scale", true);
    if (!(m.scale > 0.0)) dist.fail("scale", shown(m.scale) + " (expected pixels per normalised unit, > 0)");
    const auto k = dist.numbers("k", true, 3);
    const auto p = dist.numbers("p", true, 2);
    m.distortion[sol::kK1] = k[0];
    m.distortion[sol::kK2] = k[1];
    m.distortion[sol::kK3] = k[2];
    m.distortion[sol::kP1] = p[0];
    m.distortion[sol::kP2] = p[1];
    dist.finish();
    const toml::node* hn = hom.node("h", true);
    const toml::array* rows = hn->as_array();
    if (!rows || rows->size() != 3) hom.fail("h", "expected 3 rows of 3 numbers");
    for (int r = 0; r < 3; ++r) {
      const toml::array* row = (*rows)[static_cast<std::size_t>(r)].as_array();
      if (!row || row->size() != 3) hom.fail("h", "expected 3 rows of 3 numbers");
      for (int col = 0; col < 3; ++col) {
        auto v = (*row)[static_cast<std::size_t>(col)].value<double>();
        if (!v || !std::isfinite(*v)) hom.fail("h", "expected 3 rows of 3 finite numbers");
        m.homography[r * 3 + col] = *v;
      }
    }
    hom.finish();
  } else {
    if (dist.present() || hom.present())
      throw InputError(origin + ": " + std::string(dist.present() ? "distortion" : "homography") +
                       ": not allowed with model = \"linear\" (expected a [linear] table)");
    if (!lin.present()) throw InputError(origin + ": linear: missing (expected a [linear] table with model = \"linear\")");
    const double xs = lin.number("x_scale", true), xo = lin.number("x_offset", false, 0.0);
    const double zs = lin.number("z_scale", true), zo = lin.number("z_offset", false, 0.0);
    if (xs == 0.0) lin.fail("x_scale", "0 (expected a non-zero scale)");
    if (zs == 0.0) lin.fail("z_scale", "0 (expected a non-zero scale)");
    lin.finish();
    const double h[9] = {xs, 0.0, xo, 0.0, zs, zo, 0.0, 0.0, 1.0};
    for (int i = 0; i < 9; ++i) m.homography[i] = h[i];
  }
}

void check_horizon(const std::string& origin, const CalibrationFile& f) {
  const SheetOfLightModel& m = f.model;
  // The ROI centre (or the distortion centre) must map to a point: W > 0 there.
  const double u = f.roi.width > 0 ? f.roi.x + 0.5 * (f.roi.width - 1) : m.cu;
  const double v = f.roi.height > 0 ? f.roi.y + 0.5 * (f.roi.height - 1) : m.cv;
  double X, Z;
  if (!m.image_to_plane(u, v, X, Z) || !std::isfinite(X) || !std::isfinite(Z))
    throw InputError(origin + ": homography.h: maps the image point (" + shown(u) + ", " + shown(v) +
                     ") beyond the laser plane's horizon (expected a finite point with W > 0 there)");
}

void parse_motion(const toml::table& root, const std::string& origin, CalibrationFile& f) {
  SheetOfLightModel& m = f.model;
  Table motion(root["motion"].as_table(), "motion", origin);
  const std::string source = motion.string("y_source", false, "frame");
  if (source == "frame")
    m.y_from_encoder = false;
  else if (source == "encoder")
    m.y_from_encoder = true;
  else
    motion.fail("y_source", "\"" + source + "\" is not known (expected \"frame\" or \"encoder\")");
  f.y_step_mm = motion.number("y_step_mm", false, 1.0);
  f.y_per_tick_mm = motion.number("y_per_tick_mm", false, 0.0);
  m.y_offset = motion.number("y_offset_mm", false, 0.0);
  if (m.y_from_encoder && f.y_per_tick_mm == 0.0) motion.fail("y_per_tick_mm", "missing or 0 (expected mm per encoder count with y_source = \"encoder\")");
  if (!m.y_from_encoder && f.y_step_mm == 0.0) motion.fail("y_step_mm", "0 (expected mm per frame, non-zero)");
  m.skew_about_x_deg = motion.number("skew_about_x_deg", false, 0.0);
  m.skew_about_z_deg = motion.number("skew_about_z_deg", false, 0.0);
  if (std::abs(m.skew_about_x_deg) > 45.0) motion.fail("skew_about_x_deg", shown(m.skew_about_x_deg) + " (expected -45..45 degrees)");
  if (std::abs(m.skew_about_z_deg) > 45.0) motion.fail("skew_about_z_deg", shown(m.skew_about_z_deg) + " (expected -45..45 degrees)");
  motion.finish();
  f.sync_motion();
}

void parse_fit(const toml::table& root, const std::string& origin, CalibrationFile& f) {
  Table fit(root["fit"].as_table(), "fit", origin);
  if (fit.present()) {
    f.fit.present = true;
    f.fit.target = fit.string("target", false);
    f.fit.residual_rms_px = fit.number("residual_rms_px", false);
    f.fit.residual_max_px = fit.number("residual_max_px", false);
    f.fit.residual_rms_mm = fit.number("residual_rms_mm", false);
    f.fit.residual_max_mm = fit.number("residual_max_mm", false);
    f.fit.frames_used = static_cast<std::uint64_t>(fit.integer("frames_used", false));
    f.fit.frames_rejected = static_cast<std::uint64_t>(fit.integer("frames_rejected", false));
    f.fit.points_used = static_cast<std::uint64_t>(fit.integer("points_used", false));
    f.fit.coverage = fit.number("coverage", false);
    fit.finish();
  }
}

}  // namespace

CalibrationFile parse_calibration(const std::string& text, const std::string& origin) {
  const toml::table root = parse_toml<InputError>(text, origin);
  check_sections(root, origin);
  CalibrationFile f;
  f.origin = origin;
  SheetOfLightModel& m = f.model;
  const std::string id = parse_header(root, origin, m);
  parse_sensor(root, origin, f);
  parse_model_tables(root, origin, m);
  check_horizon(origin, f);
  parse_motion(root, origin, f);
  parse_fit(root, origin, f);
  f.id = model_id(m);
  if (!id.empty() && id != f.id)
    throw InputError(origin + ": calibration.id: \"" + id + "\" does not match the model's values (they give \"" + f.id +
                     "\"): the numbers were edited after the file was written (expected the id stripeline wrote, or no id line)");
  return f;
}

CalibrationFile load_calibration(const std::filesystem::path& path) {
  return parse_calibration(read_toml_file(path, "calibration file"), path.string());
}

std::string format_calibration(const CalibrationFile& f) {
  const SheetOfLightModel& m = f.model;
  auto check = [&](double v, const char* what) {
    if (!std::isfinite(v)) throw RuntimeFailure(std::string("calibration: ") + what + " is not finite; nothing written");
  };
  for (double v : m.homography) check(v, "the homography");
  for (double v : m.distortion) check(v, "the distortion");
  std::ostringstream s;
  s << "# stripeline calibration: image (u, v) in full-sensor pixels -> (X, Y, Z) in " << m.unit << ".\n"
    << "# Every key and convention: docs/calibration.md.\n"
    << "[calibration]\n"
    << "format = \"stripeline-calibration\"\n"
    << "version = " << kCalibrationFileVersion << "\n"
    << "model = \"" << (m.kind == SheetOfLightModel::Kind::Linear ? "linear" : "sheet-of-light") << "\"\n"
    << "unit = \"" << m.unit << "\"\n"
    << "id = \"" << model_id(m) << "\"   # FNV-1a of the values below: changes when they do\n\n";
  s << "[sensor]\n";
  if (f.sensor_width > 0) s << "width = " << f.sensor_width << "\n";
  if (f.sensor_height > 0) s << "height = " << f.sensor_height << "\n";
  if (f.roi.width > 0)
    s << "roi = [" << f.roi.x << ", " << f.roi.y << ", " << f.roi.width << ", " << f.roi.height
      << "]   # x, y, width, height of the ROI it was made with\n";
  s << "\n";
  if (m.kind == SheetOfLightModel::Kind::SheetOfLight) {
    s << "[distortion]\n"
      << "direction = \"correction\"   # distorted -> undistorted (closed form)\n"
      << "centre = [" << exact(m.cu) << ", " << exact(m.cv) << "]   # px, full sensor\n"
      << "scale = " << exact(m.scale) << "   # px per normalised unit\n"
      << "k = [" << exact(m.distortion[sol::kK1]) << ", " << exact(m.distortion[sol::kK2]) << ", " << exact(m.distortion[sol::kK3]) << "]\n"
      << "p = [" << exact(m.distortion[sol::kP1]) << ", " << exact(m.distortion[sol::kP2]) << "]\n\n"
      << "[homography]   # normalised undistorted (x, y, 1) -> (X, Z, W) mm in the laser plane\n"
      << "h = [[" << exact(m.homography[0]) << ", " << exact(m.homography[1]) << ", " << exact(m.homography[2]) << "],\n"
      << "     [" << exact(m.homography[3]) << ", " << exact(m.homography[4]) << ", " << exact(m.homography[5]) << "],\n"
      << "     [" << exact(m.homography[6]) << ", " << exact(m.homography[7]) << ", " << exact(m.homography[8]) << "]]\n\n";
  } else {
    s << "[linear]   # X = x_scale * u + x_offset, Z = z_scale * v + z_offset\n"
      << "x_scale = " << exact(m.homography[0]) << "\n"
      << "x_offset = " << exact(m.homography[2]) << "\n"
      << "z_scale = " << exact(m.homography[4]) << "\n"
      << "z_offset = " << exact(m.homography[5]) << "\n\n";
  }
  s << "[motion]\n"
    << "y_source = \"" << (m.y_from_encoder ? "encoder" : "frame") << "\"\n"
    << "y_step_mm = " << exact(f.y_step_mm) << "\n";
  if (f.y_per_tick_mm != 0.0 || m.y_from_encoder) s << "y_per_tick_mm = " << exact(f.y_per_tick_mm) << "\n";
  s << "y_offset_mm = " << exact(m.y_offset) << "\n"
    << "skew_about_x_deg = " << exact(m.skew_about_x_deg) << "\n"
    << "skew_about_z_deg = " << exact(m.skew_about_z_deg) << "\n";
  if (f.fit.present) {
    const auto& r = f.fit;
    s << "\n[fit]   # stripeline calibrate's residuals (the report has the rest)\n"
      << "target = " << quoted(r.target) << "\n"
      << "residual_rms_px = " << exact(r.residual_rms_px) << "\n"
      << "residual_max_px = " << exact(r.residual_max_px) << "\n"
      << "residual_rms_mm = " << exact(r.residual_rms_mm) << "\n"
      << "residual_max_mm = " << exact(r.residual_max_mm) << "\n"
      << "frames_used = " << r.frames_used << "\n"
      << "frames_rejected = " << r.frames_rejected << "\n"
      << "points_used = " << r.points_used << "\n"
      << "coverage = " << exact(r.coverage) << "\n";
  }
  return s.str();
}

metadata::Json calibration_file_document(const CalibrationFile& f) {
  const SheetOfLightModel& m = f.model;
  metadata::Json d = {{"stripeline", "calibration"},
                      {"model", m.kind == SheetOfLightModel::Kind::Linear ? "linear" : "sheet-of-light"},
                      {"unit", m.unit},
                      {"id", f.id}};
  if (f.sensor_width > 0) d["sensor_width"] = f.sensor_width;
  if (f.sensor_height > 0) d["sensor_height"] = f.sensor_height;
  if (f.roi.width > 0) d["roi"] = {f.roi.x, f.roi.y, f.roi.width, f.roi.height};
  d["y_source"] = m.y_from_encoder ? "encoder" : "frame";
  d["y_step_mm"] = f.y_step_mm;
  if (f.y_per_tick_mm != 0.0 || m.y_from_encoder) d["y_per_tick_mm"] = f.y_per_tick_mm;  // as format_calibration writes it
  d["y_offset_mm"] = m.y_offset;
  if (f.fit.present) {
    const CalibrationFitSummary& r = f.fit;
    d["fit"] = {{"target", r.target}, {"residual_rms_px", r.residual_rms_px}, {"residual_max_px", r.residual_max_px},
                {"residual_rms_mm", r.residual_rms_mm}, {"residual_max_mm", r.residual_max_mm}, {"frames_used", r.frames_used},
                {"frames_rejected", r.frames_rejected}, {"points_used", r.points_used}, {"coverage", r.coverage}};
  }
  return d;
}

void save_calibration(const std::filesystem::path& path, const CalibrationFile& file) {
  io::write_file_atomically(path, format_calibration(file));
}

}  // namespace stripeline
