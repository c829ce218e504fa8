// Scan files read back as fields for io/render.h: height maps, range maps,
// XYZ TIFFs and PLY point clouds, each recognised by its metadata document.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/errors.h"
#include "core/fixed_point.h"
#include "io/float_tiff_reader.h"
#include "io/image_reader.h"
#include "io/metadata_reader.h"
#include "io/ply_writer.h"
#include "io/render.h"
#include "io/render_grid.h"

namespace stripeline::io {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

[[noreturn]] void bad(const std::filesystem::path& path, const std::string& what) { throw InputError(path.string() + ": " + what); }

const char* kExpected =
    "expected a stripeline height map, range map, XYZ TIFF, PLY point cloud or recording (docs/render.md)";

// The [calibration] linear keys a document records (off: x, y, z in px as they are).
struct Linear {
  bool on = false;
  double xs = 1, xo = 0, ys = 1, yo = 0, zs = 1, zo = 0;
  bool y_from_encoder = false;  // y is the encoder count's, which a height map's rows do not hold
};
Linear linear_of(const metadata::Json& doc) {
  Linear l;
  const auto c = doc.value("calibration", metadata::Json::object());
  if (!c.is_object() || c.value("model", std::string()) != "linear-keys" || !c.value("enabled", false)) return l;
  l.on = true;
  l.xs = c.value("x_scale", 1.0), l.xo = c.value("x_offset", 0.0);
  l.ys = c.value("y_scale", 1.0), l.yo = c.value("y_offset", 0.0);
  l.zs = c.value("z_scale", 1.0), l.zo = c.value("z_offset", 0.0);
  l.y_from_encoder = c.value("y_from_encoder", false);
  return l;
}

// The whole image as 16-bit (8-bit widened) values.
std::vector<std::uint16_t> read_whole_image(const std::filesystem::path& path, ImageInfo& info) {
  auto reader = open_image(path);
  info = reader->info();
  const std::size_t n = static_cast<std::size_t>(info.width) * static_cast<std::size_t>(info.height);
  std::vector<std::uint16_t> out(n);
  if (info.format == PixelFormat::Mono16) {
    reader->read_rows(reinterpret_cast<std::byte*>(out.data()), info.height);
  } else {
    std::vector<std::uint8_t> bytes(n);
    reader->read_rows(reinterpret_cast<std::byte*>(bytes.data()), info.height);
    std::copy(bytes.begin(), bytes.end(), out.begin());
  }
  return out;
}

void heightmap_field(const std::filesystem::path& path, ScanFields& s) {
  ImageInfo info;
  const std::vector<std::uint16_t> codes = read_whole_image(path, info);
  Field& f = s.height;
  f.width = info.width, f.height = info.height;
  f.values.resize(codes.size());
  const Linear l = linear_of(s.document);
  const std::string unit = l.on ? "mm" : "px";
  if (info.format == PixelFormat::Mono8) {  // the preview: levels 1..255 of the valid codes' range
    for (std::size_t i = 0; i < codes.size(); ++i) f.values[i] = codes[i] == 0 ? kNaN : static_cast<float>(codes[i]);
    f.value_name = "level", f.value_unit = "level";
    s.unit_note = "8-bit preview: levels 1..255 of the height range (no unit; render the 16-bit height map for " + unit + ")";
  } else {
    const int bits = s.document.value("height_bits", 6);
    if (bits < 0 || bits > 8) bad(path, "height_bits " + std::to_string(bits) + " in its metadata (expected 0..8)");
    for (std::size_t i = 0; i < codes.size(); ++i) {
      const float row = decode_height(codes[i], bits);  // docs/data-model.md, the 16-bit height code; NaN for 0
      f.values[i] = l.on ? static_cast<float>(l.zs * row + l.zo) : row;
    }
    f.value_name = l.on ? "z" : "row", f.value_unit = unit;
    s.unit_note = l.on ? "mm: the [calibration] linear keys it records" : "px: rows of the frame (no calibration recorded)";
  }
  f.x = {"x", unit, l.on ? l.xo : 0.0, l.on ? l.xs : 1.0};
  f.y = l.on && !l.y_from_encoder ? Axis{"y", "mm", l.yo, l.ys} : Axis{"frame", "frame", 0.0, 1.0};
}

void range_map_field(const std::filesystem::path& path, ScanFields& s) {
  Field& f = s.height;
  const auto grid = s.document.value("grid", metadata::Json::object());
  f.x = {"X", "mm", grid.value("x_min_mm", 0.0), grid.value("dx_mm", 1.0)};
  f.y = {"frame", "frame", 0.0, 1.0};
  f.value_name = std::string("Z");  // not `= "Z"`: GCC 12 warns of an overlap there (-Wrestrict, a known false positive)
  f.value_unit = "mm";
  s.unit_note = "mm: a sheet-of-light calibration's range map";
  if (s.format == "TIFF" && !s.document.contains("code")) {
    FloatPlanes p = read_float_tiff(path);
    if (p.planes.size() != 1) bad(path, "range map of " + std::to_string(p.planes.size()) + " planes (expected 1: Z mm)");
    f.width = p.width, f.height = p.height, f.values = std::move(p.planes[0]);
    return;
  }
  ImageInfo info;
  const std::vector<std::uint16_t> codes = read_whole_image(path, info);
  const auto code = s.document.value("code", metadata::Json::object());
  const double zo = code.value("z_offset_mm", 0.0), zs = code.value("z_scale_mm", 1.0);
  f.width = info.width, f.height = info.height;
  f.values.resize(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) f.values[i] = codes[i] == 0 ? kNaN : static_cast<float>(zo + codes[i] * zs);
}

}  // namespace

std::vector<float> heightmap_rows(const std::filesystem::path& path, int width, std::int64_t first, std::int64_t count) {
  const metadata::Json doc = read_document(path);
  if (doc.value("stripeline", std::string()) != "heightmap") bad(path, "is not a height map (expected the 16-bit height map of this recording)");
  auto reader = open_image(path);
  const ImageInfo& info = reader->info();
  if (info.format != PixelFormat::Mono16) bad(path, "is 8-bit (expected the 16-bit height map, not the preview)");
  if (info.width != width) bad(path, std::to_string(info.width) + " columns (expected the recording's " + std::to_string(width) + ")");
  if (first + count > info.height)
    bad(path, std::to_string(info.height) + " profiles (expected at least " + std::to_string(first + count) + ": one a frame of the recording)");
  std::vector<std::uint16_t> codes(static_cast<std::size_t>(width) * static_cast<std::size_t>(count));
  reader->seek_row(first);
  reader->read_rows(reinterpret_cast<std::byte*>(codes.data()), count);
  const int bits = std::clamp(doc.value("height_bits", kDefaultHeightCodeBits), 0, 8);
  std::vector<float> rows(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) rows[i] = decode_height(codes[i], bits);
  return rows;
}

std::string file_kind(const std::filesystem::path& path) {
  try {
    return read_document(path).value("stripeline", std::string());
  } catch (const InputError&) {
    if (!std::filesystem::is_regular_file(path)) throw;
    return "";
  }
}

ScanFields load_scan(const std::filesystem::path& path) {
  ScanFields s;
  try {
    s.document = read_document(path, &s.format);
  } catch (const InputError& e) {
    if (!std::filesystem::exists(path)) bad(path, "no such file");
    bad(path, std::string("no stripeline metadata (") + e.what() + "); " + kExpected);
  }
  s.kind = s.document.value("stripeline", std::string());
  if (s.kind == "heightmap" && s.format != "JSON") {
    heightmap_field(path, s);
  } else if (s.kind == "range-map") {
    range_map_field(path, s);
  } else if (s.kind == "xyz") {
    FloatPlanes p = read_float_tiff(path);
    if (p.planes.size() != 3) bad(path, "XYZ TIFF of " + std::to_string(p.planes.size()) + " planes (expected 3: X, Y, Z)");
    std::vector<PlyVertex> points;
    for (std::size_t i = 0; i < p.planes[0].size(); ++i)
      if (std::isfinite(p.planes[2][i]))
        points.push_back(PlyVertex{p.planes[0][i], static_cast<double>(p.planes[1][i]), p.planes[2][i]});
    grid_points(points, false, s.document.value("point_unit", std::string("px")) == "px", s);
  } else if (s.kind == "point-cloud") {
    const std::vector<PlyVertex> points = read_ply(path);
    grid_points(points, true, s.document.value("point_unit", std::string("px")) == "px", s);
  } else if (s.kind == "recording") {
    bad(path, "a recording: `stripeline render` draws its frames; `stripeline report` expected a scan (height map, range map, XYZ TIFF or PLY)");
  } else {
    bad(path, "its metadata says \"" + s.kind + "\" (" + std::string(kExpected) + ")");
  }
  if (s.height.width <= 0 || s.height.height <= 0) bad(path, "holds no points to draw (expected at least one)");
  return s;
}

}  // namespace stripeline::io
