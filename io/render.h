#pragma once
// Pictures of stripeline's files (`stripeline render`, `stripeline report`;
// docs/render.md): a scan file read back as a field of values on a grid, and
// that field drawn as an RGB picture with the colour map (io/colour_map.h),
// axes in the file's unit and a colour scale bar in the values' unit.
//
// Files read: height maps (16-bit PNG/TIFF of row codes, docs/data-model.md;
// the 8-bit preview as its levels), range maps (float TIFF of Z mm, or the
// 16-bit code image), XYZ TIFFs (the X, Y, Z planes), PLY point clouds of our
// own writer (points gridded on x, y), and recordings (grey frames,
// render_recording()). Each is recognised by its metadata document
// (io/metadata_reader.h); anything else is an InputError naming the file and
// what was expected.
// Thread-safety: pure functions (no state shared between calls).
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/metadata.h"
#include "io/render_canvas.h"

namespace stripeline::io {

// Index i (a column or a row of the grid) holds the value origin + i * step.
struct Axis {
  std::string name;  // "x", "column", "frame", ...
  std::string unit;  // "mm", "px", "frame"
  double origin = 0.0;
  double step = 1.0;
  double at(double i) const { return origin + i * step; }
};

// Values on a width x height grid, row-major; NaN where no point was found.
struct Field {
  int width = 0;
  std::int64_t height = 0;
  std::vector<float> values;
  Axis x, y;
  std::string value_name;  // "height", "Z", "intensity"
  std::string value_unit;  // "mm", "px", "level"
  float at(int col, std::int64_t row) const { return values[static_cast<std::size_t>(row) * static_cast<std::size_t>(width) + static_cast<std::size_t>(col)]; }
};

struct ScanFields {
  std::string kind;            // the document's kind: "heightmap", "range-map", "xyz", "point-cloud"
  std::string format;          // "PNG", "TIFF", "PLY"
  metadata::Json document;     // every setting the file records
  Field height;
  std::optional<Field> intensity;  // PLY only (the other files hold none)
  std::string unit_note;       // how the unit was decided, e.g. "px: no calibration recorded"
  std::uint64_t points = 0;    // PLY/XYZ: points read (all slots)
};

// InputError naming the file when it is none of the kinds above (a
// recording: use render_recording()), or is corrupt.
ScanFields load_scan(const std::filesystem::path& path);
// The document's kind ("recording", "heightmap", ...), "" for a file with
// none. InputError when the file cannot be read.
std::string file_kind(const std::filesystem::path& path);

enum class Palette { Height, Grey, Mask };

struct RenderOptions {
  std::string title;
  Palette palette = Palette::Height;
  // Values mapped to the colour map's ends; NaN: the 0.5th and 99.5th
  // percentiles of the field's values (a few spikes do not wash the map out).
  double lo = std::numeric_limits<double>::quiet_NaN();
  double hi = std::numeric_limits<double>::quiet_NaN();
  // Largest plot in picture pixels: larger grids are averaged in blocks of
  // whole cells (each axis on its own); small ones are enlarged by a whole factor.
  int max_width = 2048;
  int max_height = 2048;
};

// Where the field landed in the picture, for tests and the report: cell
// (col, row) is drawn at plot_x + (col / cells_x) * zoom, same for y.
struct RenderLayout {
  int plot_x = 0, plot_y = 0, plot_width = 0, plot_height = 0;
  int cells_x = 1, cells_y = 1;  // grid cells averaged into one plot pixel
  int zoom = 1;                  // plot pixels a cell (when cells_* = 1)
  double lo = 0.0, hi = 0.0;     // the values at the colour map's ends
  int bar_x = -1, bar_y = 0, bar_height = 0;  // the colour scale bar (none: bar_x < 0)
};

Canvas render_field(const Field& field, const RenderOptions& options, RenderLayout* layout = nullptr);
// The colour of a value in [lo, hi] (NaN: kNoDataColour), as render_field draws it.
Rgb8 value_colour(double value, double lo, double hi, Palette palette);
// lo/hi as RenderOptions' NaN asks: the 0.5th and 99.5th percentiles of the
// finite values (both NaN when there are none).
void value_range(const Field& field, double& lo, double& hi);
// The one-line JSON written into a rendered PNG's Description: what it shows and where.
std::string render_description(const std::filesystem::path& source, const std::string& kind, const Field& field,
                               const RenderLayout& layout);

// A recording: frames of the file as the head saw them, grey, stacked top to
// bottom with their index. frame >= 0: that frame alone; else `count` frames
// spread evenly. line: a height map of this recording (same width; row m =
// frame m) whose row codes are drawn over each frame in red.
struct RecordingRenderOptions {
  std::int64_t frame = -1;
  int count = 4;
  std::filesystem::path line;
  int max_width = 2048;
};
Canvas render_recording(const std::filesystem::path& path, const RecordingRenderOptions& options, std::string* description = nullptr);

// Axis ticks at multiples of a nice step (1, 2 or 5 x 10^k) between a and b
// (either order), about `count` of them, labelled with the decimals the step needs.
struct Tick {
  double value;
  std::string label;
};
std::vector<Tick> axis_ticks(double a, double b, double count);

// The histogram of the field's finite values over [lo, hi] (values outside
// go to the end bins), `bins` counts.
std::vector<std::uint64_t> histogram(const Field& field, double lo, double hi, int bins);
// Cells with no point (NaN).
std::uint64_t missing_cells(const Field& field);

}  // namespace stripeline::io
