// Writes the fuzz targets' seed corpora with the project's own writers
// (scripts/fuzz.sh --seeds regenerates them into tests/fuzz/corpus/):
//   wire/         series as the publisher encodes them (wire::encode_*), 1.0, 1.1 and
//                 1.2 (a sheet-of-light series whose rows carry points and motion_y)
//   image/        recordings and images (io::write_recording / write_image), 4-byte selector first
//   calibration/  calibration files (format_calibration): linear and sheet-of-light
// The config and target corpora are the files in configs/ (copied by the script).
//
//   make_seeds OUTPUT_DIR
#include <cmath>
#include <cstdio>
#include <limits>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../example_models.h"
#include "calibration/calibration_file.h"
#include "core/applied_calibration.h"
#include "core/profile.h"
#include "io/image_reader.h"
#include "io/image_writer.h"
#include "io/recording.h"
#include "streaming/wire_format.h"
#include "wire_framing.h"

using namespace stripeline;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

using test::realistic_model;

// A block of `rows` rows, `slots` slots: a stripe with some gaps (NaN), one missing frame.
wire::RowBlock block(std::uint64_t series_row, int rows, int width, int slots) {
  wire::RowBlock b;
  b.clear(width, slots);
  b.series_row = series_row;
  b.index = 100 + series_row;
  b.rows = rows;
  for (int r = 0; r < rows; ++r) {
    b.frame_ids.push_back(1000 + series_row + r);
    b.timestamps_ns.push_back(5'000'000 * static_cast<std::int64_t>(series_row + r));
    b.encoder.push_back(r % 2 ? std::optional<std::int64_t>(-3 + r) : std::nullopt);
    b.missing.push_back(r == 1 ? 1 : 0);
    for (int s = 0; s < slots; ++s)
      for (int x = 0; x < width; ++x) {
        const bool hit = r != 1 && (x + s) % 3 != 0;
        b.z.push_back(hit ? 10.25f + 0.5f * x - s : std::numeric_limits<float>::quiet_NaN());
        b.intensity.push_back(hit ? 200 + x : 0);
        b.stripe_width.push_back(hit ? 3 : 0);
        b.quality.push_back(hit ? 40 : 0);
      }
  }
  return b;
}

std::vector<std::string> rows_message(wire::Topic t, const std::string& series, std::uint64_t seq, const wire::RowBlock& b,
                                      const LinearCalibration& cal, int bits) {
  nlohmann::json h = wire::base_header(t, series, seq);
  h["calibration"] = wire::calibration_json(cal);
  h["unit"] = cal.unit();
  h["height_bits"] = bits;
  return wire::encode_rows(t, h, b).strings();
}

std::string series(bool calibrated, bool sheet, int width, int slots, int rows_per_message, int messages, bool v10) {
  const std::string id = wire::new_uuid();
  LinearCalibration cal;
  if (calibrated) cal = LinearCalibration{true, 0.05, -1.0, 0.1, 0.0, 0.02, 3.0, false};
  std::vector<fuzz::Parts> out;
  std::uint64_t seq = 0;
  nlohmann::json s = wire::base_header(wire::Topic::SeriesStart, id, seq++);
  s["source"] = "synthetic";
  s["backend"] = "cpu";
  s["method"] = "cog";
  s["width"] = width;
  s["frame_height"] = 64;
  s["pixel_format"] = "Mono8";
  s["slots"] = slots;
  s["rows_per_message"] = rows_per_message;
  s["heightmap_rows"] = 0;
  s["calibration"] = wire::calibration_json(cal);
  s["unit"] = cal.unit();
  s["height_bits"] = 6;
  s["software"] = "stripeline seeds";
  s["format"] = wire::kFormatVersion;
  if (sheet) {
    AppliedCalibration a;
    a.model = realistic_model();
    a.id = model_id(a.model);
    a.file = "cal.toml";
    a.roi_x = 0;
    a.roi_y = 428;
    s["sheet_calibration"] = wire::sheet_calibration_json(a);
    s["point_unit"] = "mm";
  }
  out.push_back(wire::encode_control(wire::Topic::SeriesStart, s).strings());
  for (int m = 0; m < messages; ++m) {
    wire::RowBlock b = block(static_cast<std::uint64_t>(m) * rows_per_message, rows_per_message, width, slots);
    if (sheet) {  // carried points (format 1.2): X = column, dY = 0, Z = z where z has a detection
      for (std::size_t i = 0; i < b.z.size(); ++i) {
        const float none = std::numeric_limits<float>::quiet_NaN(), z = b.z[i];
        const bool point = !std::isnan(z);
        b.points.insert(b.points.end(), {point ? static_cast<float>(i % width) : none, point ? 0.0f : none, point ? z : none});
      }
      for (int r = 0; r < b.rows; ++r) b.motion_y.push_back(0.1 * static_cast<double>(b.index + r));
    }
    auto parts = rows_message(wire::Topic::Profile, id, seq++, b, cal, 6);
    if (v10) {  // a 1.0 sender: no quality part
      parts.pop_back();
      auto h = nlohmann::json::parse(parts[1]);
      h["htype"] = "stripeline-profile-1.0";
      h["parts"].erase(3);
      parts[1] = h.dump();
    }
    out.push_back(parts);
  }
  nlohmann::json st = wire::base_header(wire::Topic::Stats, id, seq++);
  st["series_rows_in"] = messages * rows_per_message;
  st["series_rows_published"] = messages * rows_per_message;
  st["series_rows_dropped"] = {{"hwm", 0}, {"no_subscriber", 0}, {"error", 0}};
  out.push_back(wire::encode_control(wire::Topic::Stats, st).strings());
  out.push_back(rows_message(wire::Topic::Heightmap, id, seq++, block(0, 2, width, 1), cal, 6));
  nlohmann::json e = wire::base_header(wire::Topic::SeriesEnd, id, seq);
  e["profile_rows"] = messages * rows_per_message;
  e["profile_messages"] = messages;
  e["rows_in"] = messages * rows_per_message;
  e["rows_dropped"] = {{"hwm", 0}, {"no_subscriber", 0}, {"error", 0}};
  e["messages"] = seq + 1;
  e["reason"] = "complete";
  out.push_back(wire::encode_control(wire::Topic::SeriesEnd, e).strings());
  return fuzz::join_messages(out);
}

// An image seed: the 4-byte selector of fuzz_image.cpp, then the file.
void image_seed(const fs::path& dir, const std::string& name, int kind, int width, int depth16, const fs::path& file) {
  std::string sel(4, '\0');
  sel[0] = static_cast<char>(kind);
  sel[1] = static_cast<char>((width - 1) & 0xFF);
  sel[2] = static_cast<char>(((width - 1) >> 8) & 0xFF);
  sel[3] = static_cast<char>(depth16);
  write(dir / name, sel + slurp(file));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUTPUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  // wire
  write(out / "wire/series-px", series(false, false, 7, 1, 3, 3, false));
  write(out / "wire/series-mm-2slots", series(true, false, 5, 2, 2, 2, false));
  write(out / "wire/series-sheet", series(false, true, 6, 1, 4, 2, false));
  write(out / "wire/series-v10", series(false, false, 4, 1, 2, 2, true));
  // images: recordings (TIFF Deflate and uncompressed, several strips; PNG; PGM) and raw
  const fs::path tmp = fs::temp_directory_path() / ("stripeline-seeds-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  for (int depth16 = 0; depth16 < 2; ++depth16) {
    const int w = 13, fh = 6, frames = 3;
    std::vector<std::uint16_t> p16(static_cast<std::size_t>(w) * fh * frames);
    std::vector<std::uint8_t> p8(p16.size());
    for (std::size_t i = 0; i < p16.size(); ++i) p16[i] = static_cast<std::uint16_t>((i * 977) & 0xFFFF), p8[i] = static_cast<std::uint8_t>(i * 7);
    const void* px = depth16 ? static_cast<const void*>(p16.data()) : p8.data();
    const PixelFormat f = depth16 ? PixelFormat::Mono16 : PixelFormat::Mono8;
    const std::string d = depth16 ? "16" : "8";
    io::write_recording(tmp / "a.tif", px, w, fh, frames, f, {true, 1});
    image_seed(out / "image", "tiff-deflate-" + d, 0, w, depth16, tmp / "a.tif");
    io::write_recording(tmp / "b.tif", px, w, fh, frames, f, {false, 2});
    image_seed(out / "image", "tiff-raw-" + d, 0, w, depth16, tmp / "b.tif");
    image_seed(out / "image", "tiff-libtiff-" + d, 4, w, depth16, tmp / "a.tif");
    io::write_recording(tmp / "c.png", px, w, fh, frames, f, {true, 1});
    image_seed(out / "image", "png-" + d, 1, w, depth16, tmp / "c.png");
    io::write_recording(tmp / "d.pgm", px, w, fh, frames, f, {});
    image_seed(out / "image", "pgm-" + d, 2, w, depth16, tmp / "d.pgm");
    write(tmp / "e.raw", std::string(static_cast<const char*>(px), p16.size() * (depth16 ? 2 : 1)));
    image_seed(out / "image", "raw-" + d, 3, w, depth16, tmp / "e.raw");
  }
  fs::remove_all(tmp);
  // calibration files
  write(out / "calibration/sheet-of-light.toml", format_calibration(test::realistic_calibration_file()));
  CalibrationFile lin;
  lin.model = from_linear(LinearCalibration{true, 0.05, -1.0, 0.1, 0.0, 0.02, 3.0, true});
  lin.y_step_mm = 1.0;
  lin.y_per_tick_mm = 0.1;
  write(out / "calibration/linear-encoder.toml", format_calibration(lin));
  return 0;
}
