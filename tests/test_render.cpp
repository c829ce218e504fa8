// Pictures of files: `stripeline render` and `stripeline report`
// (io/render.h, app/report_html.h; docs/render.md).
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>

#include "app/report_html.h"
#include "core/fixed_point.h"
#include "core/metadata.h"
#include "io/colour_map.h"
#include "io/float_tiff_writer.h"
#include "io/image_writer.h"
#include "io/metadata_reader.h"
#include "io/ply_writer.h"
#include "io/recording.h"
#include "io/render.h"
#include "test_helpers.h"

using namespace stripeline;
using test::run_cli;
using test::TempDir;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Rgb {
  int width = 0, height = 0;
  std::vector<io::Rgb8> px;
  io::Rgb8 at(int x, int y) const { return px[static_cast<std::size_t>(y) * width + x]; }
};

// A PNG read back as 8-bit RGB (libpng's simplified API).
Rgb read_rgb(const std::filesystem::path& p) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  Rgb out;
  if (!png_image_begin_read_from_file(&image, p.c_str())) return out;
  image.format = PNG_FORMAT_RGB;
  out.width = static_cast<int>(image.width), out.height = static_cast<int>(image.height);
  out.px.resize(static_cast<std::size_t>(out.width) * out.height);
  if (!png_image_finish_read(&image, nullptr, out.px.data(), 0, nullptr)) out = {};
  return out;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::uint16_t code_of_row(double row, int bits = kDefaultHeightCodeBits) { return static_cast<std::uint16_t>(std::lround((row + 0.5) * (1 << bits))); }

// A 64 x 40 height map: rows 10 on the left half, 30 on the right (a step),
// no detection in the 4 x 4 cells at the top-left corner.
std::filesystem::path step_heightmap(const TempDir& dir, const metadata::Json& calibration = {}) {
  std::vector<std::uint16_t> codes(64 * 40);
  for (int y = 0; y < 40; ++y)
    for (int x = 0; x < 64; ++x) codes[y * 64 + x] = (x < 4 && y < 4) ? 0 : code_of_row(x < 32 ? 10.0 : 30.0);
  metadata::Json d = metadata::document("heightmap");
  d["width"] = 64, d["frame_height"] = 52, d["unit"] = "px", d["height_bits"] = kDefaultHeightCodeBits, d["method"] = "adaptive";
  d["calibration"] = calibration.is_null() ? metadata::Json{{"model", "none"}, {"enabled", false}, {"unit", "px"}} : calibration;
  io::ImageWriteOptions o;
  o.description = metadata::text(d);
  const auto path = dir / "step.png";
  io::write_image(path, codes.data(), 64, 40, PixelFormat::Mono16, o);
  return path;
}

metadata::Json render_doc(const std::filesystem::path& png) { return io::read_document(png); }

io::Rgb8 entry(int i) { return io::height_colour_map()[static_cast<std::size_t>(i)]; }

// Where cell (col, row) of a rendered field lands (its centre).
std::pair<int, int> cell_pixel(const metadata::Json& d, int col, int row) {
  const auto& p = d.at("plot");
  const int zoom = p.at("zoom"), cx = p.at("cells_x"), cy = p.at("cells_y");
  return {p.at("x").get<int>() + col / cx * zoom + zoom / 2, p.at("y").get<int>() + row / cy * zoom + zoom / 2};
}

int dark_pixels(const Rgb& img, int x0, int y0, int x1, int y1) {
  int n = 0;
  for (int y = std::max(0, y0); y < std::min(img.height, y1); ++y)
    for (int x = std::max(0, x0); x < std::min(img.width, x1); ++x) n += img.at(x, y).r < 100 && img.at(x, y).g < 100 && img.at(x, y).b < 100;
  return n;
}

}  // namespace

TEST(RenderFont, HasTheCharactersOfNumbersUnitsAndWords) {
  for (const char c : std::string("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz .,:;-+=_/()[]%<>'\"#*?!|"))
    EXPECT_TRUE(io::font_has(c)) << "'" << c << "'";
  EXPECT_FALSE(io::font_has('\x7f'));
  EXPECT_EQ(io::text_width("mm", 1), 11);
  EXPECT_EQ(io::text_width("mm", 2), 22);
  io::Canvas c(40, 12);
  io::draw_text(c, 1, 1, "8", io::kBlack);
  int ink = 0;
  for (const auto& p : c.pixels) ink += p == io::kBlack;
  EXPECT_EQ(ink, 17);  // the 8's glyph: 3 + 2 + 2 + 3 + 2 + 2 + 3 font pixels
}

TEST(Render, HeightMapStepTakesTheColourMapEntriesOfItsTwoHeights) {
  TempDir dir;
  const auto hm = step_heightmap(dir);
  std::string out;
  ASSERT_EQ(run_cli("render " + hm.string() + " --out " + (dir / "r.png").string(), &out), 0) << out;
  EXPECT_NE(out.find("px"), std::string::npos) << out;
  const Rgb img = read_rgb(dir / "r.png");
  ASSERT_GT(img.width, 0);
  const metadata::Json d = render_doc(dir / "r.png");
  EXPECT_EQ(d.at("stripeline"), "render");
  EXPECT_EQ(d.at("values").at("unit"), "px");
  EXPECT_EQ(d.at("plot").at("zoom"), 6);  // 400 / 64
  EXPECT_EQ(d.at("plot").at("width"), 64 * 6);
  EXPECT_EQ(d.at("plot").at("height"), 40 * 6);
  EXPECT_DOUBLE_EQ(d.at("values").at("lo").get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(d.at("values").at("hi").get<double>(), 30.0);
  // The same picture in process: same size.
  io::RenderOptions o;
  o.title = "step.png: row [px]";
  const io::Canvas c = io::render_field(io::load_scan(hm).height, o);
  EXPECT_EQ(img.width, c.width);
  EXPECT_EQ(img.height, c.height);
  // Low side: entry 0; high side: entry 255; the hole: no-data grey.
  for (int row : {5, 20, 39}) {
    auto [x, y] = cell_pixel(d, 10, row);
    EXPECT_EQ(img.at(x, y), entry(0)) << row;
    std::tie(x, y) = cell_pixel(d, 50, row);
    EXPECT_EQ(img.at(x, y), entry(255)) << row;
  }
  auto [hx, hy] = cell_pixel(d, 1, 1);
  EXPECT_EQ(img.at(hx, hy), io::kNoDataColour);
  // The step sits between columns 31 and 32.
  EXPECT_EQ(img.at(cell_pixel(d, 31, 20).first, cell_pixel(d, 31, 20).second), entry(0));
  EXPECT_EQ(img.at(cell_pixel(d, 32, 20).first, cell_pixel(d, 32, 20).second), entry(255));
  // Axes: a frame line just outside the plot, tick labels below and left, the scale bar on the right.
  const int px = d.at("plot").at("x"), py = d.at("plot").at("y"), pw = d.at("plot").at("width"), ph = d.at("plot").at("height");
  EXPECT_EQ(img.at(px + pw / 2, py + ph).r, 40);
  EXPECT_EQ(img.at(px - 1, py + ph / 2).r, 40);
  EXPECT_GT(dark_pixels(img, px - 10, py + ph + 4, px + pw + 10, py + ph + 34), 40);  // x ticks, labels, "x [px]"
  EXPECT_GT(dark_pixels(img, 0, py, px - 2, py + ph), 40);                          // y labels, "frame"
  const int bar_x = px + pw + 16;
  EXPECT_EQ(img.at(bar_x + 3, py), entry(255));        // the bar's top: the high end
  EXPECT_EQ(img.at(bar_x + 3, py + ph - 1), entry(0));  // its bottom: the low end
  EXPECT_GT(dark_pixels(img, bar_x + 14, py - 2, img.width, py + ph), 20);  // its labels
}

TEST(Render, LargeGridsAreAveragedInBlocksOfWholeCells) {
  io::Field f;
  f.width = 64, f.height = 5000;
  f.values.resize(static_cast<std::size_t>(f.width) * f.height);
  for (std::int64_t r = 0; r < f.height; ++r)
    for (int c = 0; c < f.width; ++c) f.values[r * 64 + c] = (r % 2 == 0) ? 10.0f : 30.0f;
  for (std::int64_t r = 0; r < 5; ++r) f.values[r * 64 + 3] = kNaN;              // a whole block empty: no point
  f.values[6 * 64 + 4] = kNaN, f.values[8 * 64 + 4] = kNaN;  // block rows 5..9 of column 4: only its 30s left
  f.x = {"x", "px", 0, 1}, f.y = {"frame", "frame", 0, 1};
  f.value_name = "row", f.value_unit = "px";
  io::RenderOptions o;
  o.max_height = 1000;
  io::RenderLayout l;
  const io::Canvas c = io::render_field(f, o, &l);
  EXPECT_EQ(l.cells_x, 1);
  EXPECT_EQ(l.cells_y, 5);
  EXPECT_EQ(l.zoom, 1);
  EXPECT_EQ(l.plot_width, 64);
  EXPECT_EQ(l.plot_height, 1000);
  EXPECT_DOUBLE_EQ(l.lo, 10.0);
  EXPECT_DOUBLE_EQ(l.hi, 30.0);
  // Block rows 0..4: 10, 30, 10, 30, 10 -> 18 (t = 0.4); rows 5..9: 30, 10, 30, 10, 30 -> 22 (t = 0.6).
  EXPECT_EQ(c.at(l.plot_x + 10, l.plot_y + 0), entry(102));
  EXPECT_EQ(c.at(l.plot_x + 10, l.plot_y + 1), entry(153));
  EXPECT_EQ(c.at(l.plot_x + 3, l.plot_y + 0), io::kNoDataColour);
  EXPECT_EQ(c.at(l.plot_x + 4, l.plot_y + 1), entry(255));  // holes are left out of the mean: 30
}

TEST(Render, RangeOptionMovesTheColours) {
  TempDir dir;
  const auto hm = step_heightmap(dir);
  ASSERT_EQ(run_cli("render -q " + hm.string() + " --range 0:40 --out " + (dir / "r.png").string()), 0);
  const Rgb img = read_rgb(dir / "r.png");
  const metadata::Json d = render_doc(dir / "r.png");
  EXPECT_EQ(img.at(cell_pixel(d, 10, 20).first, cell_pixel(d, 10, 20).second), entry(64));   // 10 of 0..40: 0.25 * 255
  EXPECT_EQ(img.at(cell_pixel(d, 50, 20).first, cell_pixel(d, 50, 20).second), entry(191));  // 30: 0.75 * 255
}

TEST(Render, LinearCalibrationGivesMillimetres) {
  TempDir dir;
  const metadata::Json cal = {{"model", "linear-keys"}, {"enabled", true}, {"unit", "mm"}, {"x_scale", 0.05}, {"x_offset", 2.0},
                              {"y_scale", 0.1}, {"y_offset", 0.0}, {"z_scale", 0.02}, {"z_offset", 1.0}, {"y_from_encoder", false}};
  const io::ScanFields s = io::load_scan(step_heightmap(dir, cal));
  EXPECT_EQ(s.height.value_unit, "mm");
  EXPECT_EQ(s.height.x.unit, "mm");
  EXPECT_DOUBLE_EQ(s.height.x.at(10), 2.5);
  EXPECT_EQ(s.height.y.unit, "mm");
  EXPECT_DOUBLE_EQ(s.height.y.at(20), 2.0);
  EXPECT_NEAR(s.height.at(10, 20), 1.0 + 0.02 * 10, 1e-6);
  EXPECT_NEAR(s.height.at(50, 20), 1.0 + 0.02 * 30, 1e-6);
  EXPECT_TRUE(std::isnan(s.height.at(0, 0)));
}

TEST(Render, PlyOfOurWriterIsGriddedWithItsIntensity) {
  TempDir dir;
  metadata::Json d = metadata::document("point-cloud");
  d["unit"] = "px", d["point_unit"] = "px";
  {
    io::PlyWriter w(dir / "s.ply", io::PlyEncoding::BinaryLittleEndian, {metadata::ply_comment(d)});
    for (int y = 0; y < 20; ++y)
      for (int x = 0; x < 32; ++x) {
        if (x == 7 && y == 3) continue;  // no point found there
        const io::PlyVertex v{static_cast<float>(x), static_cast<double>(y), x < 16 ? 5.0f : 15.0f, static_cast<float>(10 * y)};
        w.write(&v, 1);
        const io::PlyVertex reflection{static_cast<float>(x), static_cast<double>(y), 40.0f, 1.0f, 0.0f, 1};
        w.write(&reflection, 1);  // slot 1: not drawn
      }
    w.finish();
  }
  const io::ScanFields s = io::load_scan(dir / "s.ply");
  EXPECT_EQ(s.kind, "point-cloud");
  ASSERT_EQ(s.height.width, 32);
  ASSERT_EQ(s.height.height, 20);
  EXPECT_EQ(s.points, 2u * (32 * 20 - 1));
  EXPECT_FLOAT_EQ(s.height.at(3, 4), 5.0f);
  EXPECT_FLOAT_EQ(s.height.at(20, 4), 15.0f);
  EXPECT_TRUE(std::isnan(s.height.at(7, 3)));
  EXPECT_EQ(io::missing_cells(s.height), 1u);
  ASSERT_TRUE(s.intensity.has_value());
  EXPECT_FLOAT_EQ(s.intensity->at(9, 12), 120.0f);
  std::string out;
  ASSERT_EQ(run_cli("render " + (dir / "s.ply").string() + " --out " + (dir / "z.png").string(), &out), 0) << out;
  ASSERT_EQ(run_cli("render " + (dir / "s.ply").string() + " --intensity --out " + (dir / "i.png").string(), &out), 0) << out;
  const Rgb img = read_rgb(dir / "i.png");
  const metadata::Json r = render_doc(dir / "i.png");
  const auto [x, y] = cell_pixel(r, 9, 12);
  const double lo = r.at("values").at("lo"), hi = r.at("values").at("hi");
  EXPECT_EQ(img.at(x, y), io::Rgb8(value_colour(120.0, lo, hi, io::Palette::Grey)));
  EXPECT_EQ(img.at(x, y).r, img.at(x, y).g);  // grey
}

TEST(Render, XyzTiffAndRangeMapKeepTheirAxes) {
  TempDir dir;
  const int w = 24, h = 10;
  std::vector<float> X(w * h), Y(w * h), Z(w * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) X[y * w + x] = static_cast<float>(x), Y[y * w + x] = static_cast<float>(y), Z[y * w + x] = (x == 2 && y == 2) ? kNaN : 0.5f * x;
  metadata::Json d = metadata::document("xyz");
  d["point_unit"] = "px", d["planes"] = "X, Y, Z", d["no_point"] = "NaN";
  io::ImageWriteOptions o;
  o.description = metadata::text(d);
  const float* planes[] = {X.data(), Y.data(), Z.data()};
  io::write_float_planes_tiff(dir / "x.tif", planes, 3, w, h, o);
  const io::ScanFields s = io::load_scan(dir / "x.tif");
  ASSERT_EQ(s.height.width, w);
  ASSERT_EQ(s.height.height, h);
  EXPECT_FLOAT_EQ(s.height.at(6, 5), 3.0f);
  EXPECT_TRUE(std::isnan(s.height.at(2, 2)));

  metadata::Json r = metadata::document("range-map");
  r["values"] = "Z mm, NaN = no data";
  r["grid"] = {{"x_min_mm", 10.0}, {"dx_mm", 0.5}, {"bins", w}};
  io::write_float_tiff(dir / "r.tif", Z.data(), w, h, metadata::text(r));
  const io::ScanFields rm = io::load_scan(dir / "r.tif");
  EXPECT_EQ(rm.height.value_unit, "mm");
  EXPECT_EQ(rm.height.x.unit, "mm");
  EXPECT_DOUBLE_EQ(rm.height.x.at(4), 12.0);
  // The 16-bit code image of the same range map: Z mm = z_offset_mm + code * z_scale_mm, 0 = no data.
  std::vector<std::uint16_t> codes(w * h, 100);
  codes[0] = 0;
  r["values"] = "16-bit code, 0 = no data";
  r["code"] = {{"z_offset_mm", 1.0}, {"z_scale_mm", 0.01}};
  io::ImageWriteOptions co;
  co.description = metadata::text(r);
  io::write_image(dir / "rc.png", codes.data(), w, h, PixelFormat::Mono16, co);
  const io::ScanFields rc = io::load_scan(dir / "rc.png");
  EXPECT_NEAR(rc.height.at(5, 5), 2.0, 1e-6);
  EXPECT_TRUE(std::isnan(rc.height.at(0, 0)));
  EXPECT_DOUBLE_EQ(rc.height.x.at(2), 11.0);
  std::string out;
  ASSERT_EQ(run_cli("render " + (dir / "r.tif").string() + " --out " + (dir / "r.png").string(), &out), 0) << out;
  EXPECT_EQ(render_doc(dir / "r.png").at("x").at("unit"), "mm");
}

TEST(Render, RecordingFramesAreGreyWithTheLineInRed) {
  TempDir dir;
  const int w = 80, fh = 24, frames = 6;
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * fh * frames, 20);
  std::vector<std::uint16_t> codes(static_cast<std::size_t>(w) * frames);
  for (int f = 0; f < frames; ++f)
    for (int x = 0; x < w; ++x) {
      const int row = 5 + 2 * f;
      px[(static_cast<std::size_t>(f) * fh + row) * w + x] = 250;
      codes[static_cast<std::size_t>(f) * w + x] = code_of_row(row);
    }
  io::write_recording(dir / "rec.png", px.data(), w, fh, frames, PixelFormat::Mono8);
  metadata::Json d = metadata::document("heightmap");
  d["height_bits"] = kDefaultHeightCodeBits;
  io::ImageWriteOptions o;
  o.description = metadata::text(d);
  io::write_image(dir / "hm.png", codes.data(), w, frames, PixelFormat::Mono16, o);
  std::string out;
  ASSERT_EQ(run_cli("render " + (dir / "rec.png").string() + " --frame 3 --out " + (dir / "a.png").string(), &out), 0) << out;
  Rgb img = read_rgb(dir / "a.png");
  metadata::Json r = render_doc(dir / "a.png");
  EXPECT_EQ(r.at("kind"), "recording");
  int x0 = r.at("plot").at("x"), y0 = r.at("plot").at("y"), zoom = r.at("plot").at("zoom");
  EXPECT_EQ(zoom, 4);  // 96 / 24
  EXPECT_EQ(img.at(x0 + 10, y0 + (5 + 2 * 3) * zoom), io::Rgb8(250, 250, 250));
  EXPECT_EQ(img.at(x0 + 10, y0 + 2 * zoom), io::Rgb8(20, 20, 20));
  ASSERT_EQ(run_cli("render " + (dir / "rec.png").string() + " --frame 3 --line " + (dir / "hm.png").string() + " --out " +
                        (dir / "b.png").string(), &out), 0) << out;
  img = read_rgb(dir / "b.png");
  EXPECT_EQ(img.at(x0 + 10, y0 + (5 + 2 * 3) * zoom + zoom / 2), io::Rgb8(255, 40, 40));
  ASSERT_EQ(run_cli("render -q " + (dir / "rec.png").string() + " --frames 3 --out " + (dir / "c.png").string()), 0);
  EXPECT_EQ(render_doc(dir / "c.png").at("frames"), metadata::Json::parse("[0,2,5]"));
}

TEST(Render, BadInputsSayOneLineAndWriteNothing) {
  TempDir dir;
  const auto hm = step_heightmap(dir);
  std::ofstream(dir / "notes.txt") << "not a scan\n";
  std::vector<std::uint8_t> grey(16 * 16, 7);
  io::write_image(dir / "plain.png", grey.data(), 16, 16, PixelFormat::Mono8);
  io::write_recording(dir / "rec.png", grey.data(), 16, 8, 2, PixelFormat::Mono8);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"render " + (dir / "notes.txt").string() + " --out " + (dir / "o.png").string(), "notes.txt"},
      {"render " + (dir / "plain.png").string() + " --out " + (dir / "o.png").string(), "plain.png"},
      {"render " + (dir / "missing.png").string() + " --out " + (dir / "o.png").string(), "missing.png"},
      {"render " + hm.string() + " --out " + (dir / "o.jpg").string(), "o.jpg"},
      {"render " + hm.string() + " --range 5:1 --out " + (dir / "o.png").string(), "--range"},
      {"render " + hm.string() + " --intensity --out " + (dir / "o.png").string(), "intensity"},
      {"render " + (dir / "rec.png").string() + " --frame 9 --out " + (dir / "o.png").string(), "frame 9"},
      {"render " + (dir / "rec.png").string() + " --line " + hm.string() + " --out " + (dir / "o.png").string(), "columns"},
      {"report " + hm.string() + " " + (dir / "notes.txt").string() + " --out " + (dir / "o.html").string(), "notes.txt"},
      {"report " + (dir / "rec.png").string() + " --out " + (dir / "o.html").string(), "recording"},
      {"report " + hm.string() + " --out " + (dir / "o.htm").string(), "o.htm"},
  };
  const auto before = dir.entries();
  for (const auto& [args, names] : cases) {
    std::string out;
    EXPECT_EQ(run_cli(args, &out), 2) << args << "\n" << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_NE(out.find(names), std::string::npos) << out;
  }
  EXPECT_EQ(dir.entries(), before);  // nothing written, no temporary left
}

TEST(Report, Base64AndEscapingAreExact) {
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64("foob"), "Zm9vYg==");
  EXPECT_EQ(base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64(std::string("\xff\xfe\x00", 3)), "//4A");
  EXPECT_EQ(html_escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

TEST(Report, HoldsEverySectionAndNoExternalReference) {
  TempDir dir;
  const auto hm = step_heightmap(dir);
  metadata::Json d = metadata::document("point-cloud");
  d["point_unit"] = "px", d["method"] = "adaptive";
  {
    io::PlyWriter w(dir / "s.ply", io::PlyEncoding::BinaryLittleEndian, {metadata::ply_comment(d)});
    for (int y = 0; y < 10; ++y)
      for (int x = 0; x < 30; ++x) {
        const io::PlyVertex v{static_cast<float>(x), static_cast<double>(y), static_cast<float>(x % 7), 100.0f};
        w.write(&v, 1);
      }
    w.finish();
  }
  std::string out;
  ASSERT_EQ(run_cli("report " + hm.string() + " " + (dir / "s.ply").string() + " --out " + (dir / "r.html").string(), &out), 0) << out;
  EXPECT_NE(out.find("r.html"), std::string::npos) << out;
  const std::string html = read_text(dir / "r.html");
  for (const char* part : {"id=\"scan-0\"", "id=\"scan-1\"", "<img class=\"heightmap\"", "<img class=\"intensity\"", "class=\"no-intensity\"",
                           "<svg class=\"profiles\"", "<polyline", "<svg class=\"histogram\"", "class=\"bin\"", "<img class=\"nopoint\"",
                           "class=\"missing\"", "<table class=\"settings\"", "<th>height_bits</th>", "<th>calibration.model</th>",
                           "data:image/png;base64,iVBORw0KGgo"})
    EXPECT_NE(html.find(part), std::string::npos) << part;
  char missing[32];
  std::snprintf(missing, sizeof missing, "%.2f %%</b>", 100.0 * 16 / (64 * 40));  // 16 of 64 x 40 cells have no point
  EXPECT_NE(html.find(missing), std::string::npos) << missing;
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("src=\"/"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

TEST(Report, WorksOnTheOutputsOfARun) {
  TempDir dir;
  std::ofstream(dir / "small.toml") << "[synthetic]\nwidth = 320\nframe_height = 40\nframes = 45\n[processing]\nbatch_frames = 10\n";
  std::string out;
  ASSERT_EQ(run_cli("run -q --config " + (dir / "small.toml").string() + " --out " + (dir / "out").string(), &out), 0) << out;
  ASSERT_EQ(run_cli("report " + (dir / "out" / "scan.ply").string() + " --out " + (dir / "out" / "report.html").string(), &out), 0) << out;
  const std::string html = read_text(dir / "out" / "report.html");
  EXPECT_NE(html.find("<img class=\"intensity\""), std::string::npos);
  EXPECT_NE(html.find("<th>method</th><td>adaptive</td>"), std::string::npos);
  ASSERT_EQ(run_cli("render " + (dir / "out" / "heightmap.png").string() + " --out " + (dir / "h.png").string(), &out), 0) << out;
  const metadata::Json r = render_doc(dir / "h.png");
  EXPECT_EQ(r.at("x").at("cells"), 320);
  EXPECT_EQ(r.at("y").at("cells"), 45);
  ASSERT_EQ(run_cli("render " + (dir / "out" / "preview.png").string() + " --out " + (dir / "p.png").string(), &out), 0) << out;
  EXPECT_NE(out.find("preview"), std::string::npos) << out;
}
