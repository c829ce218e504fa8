// Tests of replay at engine speed (issue 13): the parallel TIFF reader
// against libtiff's own sequential decoding, byte for byte, for every layout
// (8/16-bit, strips, tiles, one or many strips, pages, predictors, codecs,
// byte orders, odd sizes, any read size); multi-page recordings and their
// errors; the PNG fast path against libpng; large PGM/raw reads; the
// recorded frame height; recordings written by synth.
#include <gtest/gtest.h>
#include <png.h>
#include <tiffio.h>

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include "acquisition/file_source.h"
#include "core/errors.h"
#include "core/metadata.h"
#include "io/image_reader.h"
#include "io/image_writer.h"
#include "io/recording.h"
#include "test_helpers.h"

namespace stripeline::io {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// Deterministic pixels: smooth ramps (so predictors and deflate have
// something to work on) plus noise, both bytes of 16-bit samples differing.
std::vector<std::uint8_t> make_pixels(std::uint32_t width, std::uint32_t height, int bits, unsigned seed) {
  const std::size_t bpp = static_cast<std::size_t>(bits / 8);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(width) * height * bpp);
  std::uint32_t state = 2654435761u * (seed + 1);
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      state = state * 1664525u + 1013904223u;
      const std::size_t i = static_cast<std::size_t>(y) * width + x;
      if (bits == 8) {
        out[i] = static_cast<std::uint8_t>(x * 3 + y + ((state >> 28) & 7));
      } else {
        const auto v = static_cast<std::uint16_t>(x * 611 + y * 37 + ((state >> 20) & 0x3ff));
        std::memcpy(&out[2 * i], &v, 2);
      }
    }
  }
  return out;
}

struct Layout {
  std::uint32_t width = 37, height = 29;
  int bits = 8;
  std::uint16_t compression = COMPRESSION_NONE;
  std::uint16_t predictor = 0;
  std::uint32_t rows_per_strip = 4;  // strips
  std::uint32_t tile_w = 0, tile_h = 0;  // tiles when set
  const char* mode = "w";
  std::string description;
};

void PrintTo(const Layout& l, std::ostream* os) {
  *os << l.width << "x" << l.height << " " << l.bits << "-bit compression " << l.compression << " predictor " << l.predictor;
}

// Appends one page (directory) to an open TIFF. `data`: native-endian samples.
void write_page(TIFF* t, const Layout& s, const std::vector<std::uint8_t>& data) {
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, s.width);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, s.height);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<std::uint16_t>(s.bits));
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, static_cast<std::uint16_t>(1));
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, static_cast<std::uint16_t>(PHOTOMETRIC_MINISBLACK));
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, static_cast<std::uint16_t>(PLANARCONFIG_CONTIG));
  TIFFSetField(t, TIFFTAG_COMPRESSION, s.compression);
  if (s.predictor != 0) TIFFSetField(t, TIFFTAG_PREDICTOR, s.predictor);
  if (!s.description.empty()) TIFFSetField(t, TIFFTAG_IMAGEDESCRIPTION, s.description.c_str());
  const std::size_t bpp = static_cast<std::size_t>(s.bits / 8);
  const std::size_t rb = s.width * bpp;
  if (s.tile_w == 0) {
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, s.rows_per_strip);
    std::vector<std::uint8_t> row(rb);
    for (std::uint32_t y = 0; y < s.height; ++y) {
      std::memcpy(row.data(), data.data() + y * rb, rb);
      ASSERT_GE(TIFFWriteScanline(t, row.data(), y, 0), 0);
    }
  } else {
    TIFFSetField(t, TIFFTAG_TILEWIDTH, s.tile_w);
    TIFFSetField(t, TIFFTAG_TILELENGTH, s.tile_h);
    std::vector<std::uint8_t> tile(static_cast<std::size_t>(TIFFTileSize(t)));
    for (std::uint32_t ty = 0; ty < s.height; ty += s.tile_h) {
      for (std::uint32_t tx = 0; tx < s.width; tx += s.tile_w) {
        std::fill(tile.begin(), tile.end(), std::uint8_t{0x5A});  // padding outside the image
        for (std::uint32_t r = 0; r < s.tile_h && ty + r < s.height; ++r) {
          const std::uint32_t cols = std::min(s.tile_w, s.width - tx);
          std::memcpy(tile.data() + r * s.tile_w * bpp, data.data() + (ty + r) * rb + tx * bpp, cols * bpp);
        }
        ASSERT_GE(TIFFWriteTile(t, tile.data(), tx, ty, 0, 0), 0);
      }
    }
  }
  ASSERT_EQ(TIFFWriteDirectory(t), 1);
}

// Writes `pages` (each its layout and pixels) as one TIFF.
void write_tiff(const fs::path& path, const std::vector<Layout>& layouts, const std::vector<std::vector<std::uint8_t>>& pixels) {
  TIFF* t = TIFFOpen(path.c_str(), layouts.front().mode);
  ASSERT_NE(t, nullptr) << path;
  for (std::size_t i = 0; i < layouts.size(); ++i) write_page(t, layouts[i], pixels[i]);
  TIFFClose(t);
}

// The oracle: libtiff's own sequential decoding (scanlines, or whole tiles),
// every page one after the other.
std::vector<std::uint8_t> libtiff_sequential(const fs::path& path) {
  std::vector<std::uint8_t> out;
  TIFF* t = TIFFOpen(path.c_str(), "r");
  EXPECT_NE(t, nullptr);
  if (t == nullptr) return out;
  do {
    std::uint32_t w = 0, h = 0;
    std::uint16_t bits = 8;
    TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bits);
    const std::size_t bpp = bits / 8u, rb = w * bpp, at = out.size();
    out.resize(at + rb * h);
    if (TIFFIsTiled(t) == 0) {
      for (std::uint32_t y = 0; y < h; ++y) EXPECT_GE(TIFFReadScanline(t, out.data() + at + y * rb, y, 0), 0);
    } else {
      std::uint32_t tw = 0, th = 0;
      TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
      TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
      std::vector<std::uint8_t> tile(static_cast<std::size_t>(TIFFTileSize(t)));
      for (std::uint32_t ty = 0; ty < h; ty += th) {
        for (std::uint32_t tx = 0; tx < w; tx += tw) {
          EXPECT_GE(TIFFReadTile(t, tile.data(), tx, ty, 0, 0), 0);
          for (std::uint32_t r = 0; r < th && ty + r < h; ++r)
            std::memcpy(out.data() + at + (ty + r) * rb + tx * bpp, tile.data() + r * tw * bpp, std::min(tw, w - tx) * bpp);
        }
      }
    }
  } while (TIFFReadDirectory(t) == 1);
  TIFFClose(t);
  return out;
}

// Reads every row through open_image in chunks of `chunk` rows, on an arena
// of `threads` threads, into a poisoned buffer.
std::vector<std::uint8_t> read_with(const fs::path& path, int threads, std::int64_t chunk, bool native = true) {
  std::vector<std::uint8_t> out;
  tbb::task_arena arena(threads);
  arena.execute([&] {
    ImageReadOptions o;
    o.native_tiff_codecs = native;
    auto reader = open_image(path, ImageFileFormat::Auto, std::nullopt, o);
    const std::size_t rb = static_cast<std::size_t>(reader->info().width) * bytes_per_pixel(reader->info().format);
    out.assign(rb * static_cast<std::size_t>(reader->info().height), 0xA5);
    std::int64_t y = 0;
    while (reader->rows_left() > 0) {
      const std::int64_t n = std::min(chunk, reader->rows_left());
      reader->read_rows(reinterpret_cast<std::byte*>(out.data() + static_cast<std::size_t>(y) * rb), n);
      y += n;
    }
  });
  return out;
}

std::string first_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return "first difference at byte " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
  return "";
}

// Every way of reading equals libtiff's sequential decoding, byte for byte.
void expect_all_paths_equal(const fs::path& path, std::int64_t frame_rows) {
  const std::vector<std::uint8_t> oracle = libtiff_sequential(path);
  ASSERT_FALSE(oracle.empty());
  for (const std::int64_t chunk : {std::int64_t{1}, std::int64_t{5}, frame_rows, 3 * frame_rows + 1, std::int64_t{1} << 30}) {
    for (const int threads : {1, 4}) {
      for (const bool native : {true, false}) {
        SCOPED_TRACE("chunk " + std::to_string(chunk) + ", " + std::to_string(threads) + " threads, " + (native ? "stripeline" : "libtiff") + " codecs");
        EXPECT_EQ(first_difference(read_with(path, threads, chunk, native), oracle), "");
      }
    }
  }
}

class ParallelTiff : public ::testing::TestWithParam<std::tuple<std::string, Layout>> {};

TEST_P(ParallelTiff, EqualsLibtiffSequentialByteForByte) {
  const Layout& l = std::get<1>(GetParam());
  TempDir dir;
  const fs::path path = dir / "x.tif";
  write_tiff(path, {l}, {make_pixels(l.width, l.height, l.bits, l.width)});
  expect_all_paths_equal(path, 7);
}

std::vector<std::tuple<std::string, Layout>> layouts() {
  std::vector<std::tuple<std::string, Layout>> all;
  for (int bits : {8, 16}) {
    const std::string b = std::to_string(bits);
    const auto add = [&](std::string name, Layout l) {
      l.bits = bits;
      all.emplace_back(name + "_" + b, l);
    };
    add("none_rows4", Layout{37, 29, 0, COMPRESSION_NONE, 0, 4});
    add("none_one_strip", Layout{176, 113, 0, COMPRESSION_NONE, 0, 113});
    add("none_row_per_strip", Layout{13, 42, 0, COMPRESSION_NONE, 0, 1});
    add("none_bigendian", Layout{19, 11, 0, COMPRESSION_NONE, 0, 3, 0, 0, "wb"});
    add("deflate_rows7", Layout{37, 29, 0, COMPRESSION_ADOBE_DEFLATE, 0, 7});
    add("deflate_pred_rows7", Layout{37, 29, 0, COMPRESSION_ADOBE_DEFLATE, PREDICTOR_HORIZONTAL, 7});
    add("deflate_pred_bigendian", Layout{33, 20, 0, COMPRESSION_ADOBE_DEFLATE, PREDICTOR_HORIZONTAL, 6, 0, 0, "wb"});
    add("deflate_old_tag", Layout{50, 17, 0, COMPRESSION_DEFLATE, PREDICTOR_HORIZONTAL, 5});
    add("deflate_one_strip", Layout{176, 113, 0, COMPRESSION_ADOBE_DEFLATE, 0, 113});
    add("lzw_pred", Layout{45, 31, 0, COMPRESSION_LZW, PREDICTOR_HORIZONTAL, 8});
    add("packbits", Layout{45, 31, 0, COMPRESSION_PACKBITS, 0, 3});
    add("tiles_none", Layout{50, 37, 0, COMPRESSION_NONE, 0, 0, 16, 16});
    add("tiles_deflate_pred", Layout{50, 37, 0, COMPRESSION_ADOBE_DEFLATE, PREDICTOR_HORIZONTAL, 0, 32, 16});
    add("tiles_lzw", Layout{70, 45, 0, COMPRESSION_LZW, 0, 0, 16, 32});
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Replay, ParallelTiff, ::testing::ValuesIn(layouts()),
                         [](const auto& info) { return std::get<0>(info.param); });

// ---------------------------------------------------------------------------
// Multi-page recordings

// Four pages of 64 columns and 12, 36, 60 and 24 rows: deflate with a
// predictor in strips of 12 rows, uncompressed strips of 5, LZW strips of 7,
// deflate tiles of 16x16. Returns every page's pixels, one after the other.
std::vector<std::uint8_t> write_mixed_pages(const fs::path& path, int bits) {
  std::vector<Layout> pages(4);
  pages[0] = Layout{64, 3 * 12, bits, COMPRESSION_ADOBE_DEFLATE, PREDICTOR_HORIZONTAL, 12};
  pages[1] = Layout{64, 12, bits, COMPRESSION_NONE, 0, 5};
  pages[2] = Layout{64, 5 * 12, bits, COMPRESSION_LZW, 0, 7};
  pages[3] = Layout{64, 2 * 12, bits, COMPRESSION_ADOBE_DEFLATE, 0, 0, 16, 16};
  std::vector<std::vector<std::uint8_t>> pixels;
  std::vector<std::uint8_t> all;
  for (std::size_t i = 0; i < pages.size(); ++i) {
    pixels.push_back(make_pixels(pages[i].width, pages[i].height, bits, static_cast<unsigned>(i)));
    all.insert(all.end(), pixels.back().begin(), pixels.back().end());
  }
  write_tiff(path, pages, pixels);
  return all;
}

TEST(ReplayMultiPage, PagesAreReadOneAfterTheOtherAsOneRecording) {
  TempDir dir;
  for (int bits : {8, 16}) {
    // Blocks of frames of different heights (as a stack written in pieces),
    // with different layouts per page.
    const fs::path path = dir / ("pages" + std::to_string(bits) + ".tif");
    const std::vector<std::uint8_t> all = write_mixed_pages(path, bits);
    auto reader = open_image(path);
    EXPECT_EQ(reader->info().pages, 4);
    EXPECT_EQ(reader->info().height, 11 * 12);
    EXPECT_EQ(first_difference(libtiff_sequential(path), all), "");
    expect_all_paths_equal(path, 12);

    // Replayed as frames of 12 rows, batches straddling the pages, twice.
    FileSourceConfig fc;
    fc.path = path;
    fc.frame_height = 12;
    fc.loops = 2;
    FileSource src(fc);
    ASSERT_EQ(src.total_frames(), std::optional<std::uint64_t>(22));
    Batch b = test::make_poisoned_batch(src.frame_layout(), 4);
    std::vector<std::uint8_t> got;
    while (src.fill(b)) got.insert(got.end(), reinterpret_cast<std::uint8_t*>(b.pixels.data()),
                                   reinterpret_cast<std::uint8_t*>(b.pixels.data()) + b.filled_bytes());
    std::vector<std::uint8_t> twice = all;
    twice.insert(twice.end(), all.begin(), all.end());
    EXPECT_EQ(first_difference(got, twice), "");
  }
}

TEST(ReplayMultiPage, OneFramePerPageAsNumpyStacksAreWritten) {
  TempDir dir;
  std::vector<Layout> pages(30, Layout{48, 10, 8, COMPRESSION_ADOBE_DEFLATE, 0, 10});
  pages[0].description = "{\"shape\": [30, 10, 48]}";  // tifffile's shaped description
  std::vector<std::vector<std::uint8_t>> pixels;
  std::vector<std::uint8_t> all;
  for (unsigned i = 0; i < 30; ++i) {
    pixels.push_back(make_pixels(48, 10, 8, i));
    all.insert(all.end(), pixels.back().begin(), pixels.back().end());
  }
  const fs::path path = dir / "stack.tif";
  write_tiff(path, pages, pixels);
  auto reader = open_image(path);
  EXPECT_EQ(reader->info().pages, 30);
  EXPECT_EQ(reader->info().height, 300);
  EXPECT_EQ(reader->info().recorded_frame_height, 10);
  for (const int threads : {1, 4}) {
    for (const std::int64_t chunk : {std::int64_t{7}, std::int64_t{40}, std::int64_t{300}})
      EXPECT_EQ(first_difference(read_with(path, threads, chunk), all), "") << threads << " threads, chunk " << chunk;
  }
}

// The statement throws InputError naming the file and containing every fragment.
template <class F>
void expect_input_error(F&& f, const fs::path& file, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no InputError for " << file;
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file.string()), std::string::npos) << what;
    for (const auto& fragment : fragments) EXPECT_NE(what.find(fragment), std::string::npos) << "'" << fragment << "' not in: " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(ReplayMultiPage, APageOfAnotherWidthOrDepthIsNamed) {
  TempDir dir;
  const Layout good{40, 8, 8, COMPRESSION_NONE, 0, 8};
  Layout narrow = good;
  narrow.width = 39;
  Layout deep = good;
  deep.bits = 16;
  const fs::path a = dir / "narrow.tif";
  write_tiff(a, {good, good, narrow}, {make_pixels(40, 8, 8, 0), make_pixels(40, 8, 8, 1), make_pixels(39, 8, 8, 2)});
  expect_input_error([&] { open_image(a); }, a, {"page 2", "39 pixels wide", "expected 40 pixels", "like page 0"});
  const fs::path b = dir / "deep.tif";
  write_tiff(b, {good, deep}, {make_pixels(40, 8, 8, 0), make_pixels(40, 8, 16, 1)});
  expect_input_error([&] { open_image(b); }, b, {"page 1", "16-bit", "expected 40 pixels, 8-bit"});
}

TEST(ReplayMultiPage, ACorruptStripNamesItsRowAndPage) {
  TempDir dir;
  const Layout l{64, 10, 8, COMPRESSION_ADOBE_DEFLATE, 0, 5};
  const fs::path path = dir / "bad.tif";
  write_tiff(path, {l, l, l}, {make_pixels(64, 10, 8, 0), make_pixels(64, 10, 8, 1), make_pixels(64, 10, 8, 2)});
  // Overwrite page 1's second strip (rows 15..19 of the recording).
  TIFF* t = TIFFOpen(path.c_str(), "r");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(TIFFSetDirectory(t, 1), 1);
  const std::uint64_t offset = TIFFGetStrileOffset(t, 1);
  const std::uint64_t bytes = TIFFGetStrileByteCount(t, 1);
  TIFFClose(t);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    const std::string junk(static_cast<std::size_t>(bytes), '\xff');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  for (const bool native : {true, false}) {
    for (const int threads : {1, 4}) {
      expect_input_error([&] { read_with(path, threads, 30, native); }, path, {"at row 15 (page 1)"});
    }
  }
}

// Two bad strips in one parallel read: the first one in row order is reported,
// whichever thread failed first.
TEST(ReplayParallel, TheFirstBadStripInRowOrderIsReported) {
  TempDir dir;
  const Layout l{128, 200, 8, COMPRESSION_ADOBE_DEFLATE, PREDICTOR_HORIZONTAL, 4};
  const fs::path path = dir / "two_bad.tif";
  write_tiff(path, {l}, {make_pixels(128, 200, 8, 3)});
  TIFF* t = TIFFOpen(path.c_str(), "r");
  ASSERT_NE(t, nullptr);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> bad = {{TIFFGetStrileOffset(t, 10), TIFFGetStrileByteCount(t, 10)},
                                                              {TIFFGetStrileOffset(t, 40), TIFFGetStrileByteCount(t, 40)}};
  TIFFClose(t);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    for (const auto& [offset, bytes] : bad) {
      f.seekp(static_cast<std::streamoff>(offset));
      const std::string junk(static_cast<std::size_t>(bytes), '\x13');
      f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
  }
  for (int i = 0; i < 5; ++i) expect_input_error([&] { read_with(path, 4, 200); }, path, {"at row 40:"});
  // Rows before the bad strip still read.
  std::vector<std::byte> rows(128 * 40);
  auto reader = open_image(path);
  reader->read_rows(rows.data(), 40);
  EXPECT_THROW(reader->read_rows(rows.data(), 4), InputError);
  reader->rewind();
  reader->read_rows(rows.data(), 40);
}

// A minimal little-endian TIFF with its directory before the pixels (as
// many cameras' writers do), 8-bit, uncompressed, `rps` rows per strip.
void write_directory_first_tiff(const fs::path& path, std::uint32_t w, std::uint32_t h, std::uint32_t rps,
                                const std::vector<std::uint8_t>& pixels) {
  const std::uint32_t strips = (h + rps - 1) / rps;
  std::string b;
  const auto u16 = [&](std::uint32_t v) { b.push_back(static_cast<char>(v & 0xff)), b.push_back(static_cast<char>(v >> 8)); };
  const auto u32 = [&](std::uint32_t v) { u16(v & 0xffff), u16(v >> 16); };
  b = "II";
  u16(42);
  u32(8);
  const std::uint32_t entries = 9, arrays = 8 + 2 + entries * 12 + 4, data = arrays + 8 * strips;
  u16(entries);
  const auto entry = [&](std::uint32_t tag, std::uint32_t type, std::uint32_t count, std::uint32_t value) {
    u16(tag), u16(type), u32(count), u32(value);
  };
  entry(256, 4, 1, w);
  entry(257, 4, 1, h);
  entry(258, 3, 1, 8);
  entry(259, 3, 1, 1);
  entry(262, 3, 1, 1);
  entry(273, 4, strips, arrays);
  entry(277, 3, 1, 1);
  entry(278, 4, 1, rps);
  entry(279, 4, strips, arrays + 4 * strips);
  u32(0);
  for (std::uint32_t s = 0; s < strips; ++s) u32(data + s * rps * w);
  for (std::uint32_t s = 0; s < strips; ++s) u32(std::min(rps, h - s * rps) * w);
  b.append(reinterpret_cast<const char*>(pixels.data()), pixels.size());
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(b.data(), static_cast<std::streamsize>(b.size()));
}

TEST(ReplayParallel, TruncatedUncompressedStripsNameTheRow) {
  TempDir dir;
  const fs::path path = dir / "cut.tif";
  const auto pixels = make_pixels(256, 64, 8, 5);
  write_directory_first_tiff(path, 256, 64, 8, pixels);
  EXPECT_EQ(first_difference(read_with(path, 2, 64), pixels), "") << "the hand-made TIFF itself";
  EXPECT_EQ(first_difference(libtiff_sequential(path), pixels), "");
  // Cut 100 bytes into row 40.
  fs::resize_file(path, fs::file_size(path) - pixels.size() + 40 * 256 + 100);
  for (const bool native : {true, false}) {
    expect_input_error([&] { read_with(path, 2, 64, native); }, path, {"at row 40"});
    // The rows before the cut are read.
    expect_input_error([&] { read_with(path, 2, 20, native); }, path, {"at row 40"});
  }
}

// ---------------------------------------------------------------------------
// PNG fast path, PGM/raw large reads

std::vector<std::uint8_t> libpng_sequential(const fs::path& path) {
  std::vector<std::uint8_t> out;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (depth == 16) png_set_swap(png);
  png_read_update_info(png, info);
  const std::size_t rb = w * static_cast<std::size_t>(depth / 8);
  out.resize(rb * h);
  for (png_uint_32 y = 0; y < h; ++y) png_read_row(png, out.data() + y * rb, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  std::fclose(f);
  return out;
}

TEST(ReplayPng, FastPathEqualsLibpngForEveryFilter) {
  TempDir dir;
  // The reader takes the whole-stream path in an arena of 4 threads or more.
  tbb::task_arena(4).execute([] { ASSERT_GE(tbb::this_task_arena::max_concurrency(), 4); });
  for (int bits : {8, 16}) {
    for (const auto& [w, h] : {std::pair{13u, 42u}, std::pair{176u, 113u}, std::pair{2048u, 60u}, std::pair{1u, 9u}}) {
      const fs::path path = dir / ("x" + std::to_string(bits) + "_" + std::to_string(w) + ".png");
      const auto pixels = make_pixels(w, h, bits, w);
      write_image(path, pixels.data(), static_cast<int>(w), h, bits == 16 ? PixelFormat::Mono16 : PixelFormat::Mono8);
      const auto oracle = libpng_sequential(path);
      ASSERT_EQ(first_difference(oracle, pixels), "");
      // 4 threads: the whole-stream path; 1 thread: libpng row by row.
      for (const int threads : {1, 4}) {
        for (const std::int64_t chunk : {std::int64_t{1}, std::int64_t{7}, std::int64_t{h}}) {
          EXPECT_EQ(first_difference(read_with(path, threads, chunk), oracle), "") << path << " chunk " << chunk << ", " << threads << " threads";
        }
      }
      // Rewind and read again (a looping replay inflates again).
      std::vector<std::uint8_t> got(oracle.size());
      tbb::task_arena(4).execute([&] {
        auto reader = open_image(path);
        reader->read_rows(reinterpret_cast<std::byte*>(got.data()), h / 2);
        reader->rewind();
        reader->read_rows(reinterpret_cast<std::byte*>(got.data()), h);
      });
      EXPECT_EQ(first_difference(got, oracle), "");
    }
  }
}

TEST(ReplayPlain, LargeReadsInParallelChunksAreExact) {
  TempDir dir;
  // 5000 x 2000 16-bit = 20 MB: reads large enough to be cut into parallel
  // pieces (reader_common.h), from a header offset that is not aligned.
  const std::uint32_t w = 5000, h = 2000;
  const auto pixels = make_pixels(w, h, 16, 9);
  const fs::path pgm = dir / "big.pgm";
  write_image(pgm, pixels.data(), static_cast<int>(w), h, PixelFormat::Mono16);
  const fs::path raw = dir / "big.raw";
  {
    std::ofstream out(raw, std::ios::binary);
    for (std::size_t i = 0; i < pixels.size(); i += 2) {  // little-endian on disk
      std::uint16_t v;
      std::memcpy(&v, &pixels[i], 2);
      const char le[2] = {static_cast<char>(v & 0xff), static_cast<char>(v >> 8)};
      out.write(le, 2);
    }
  }
  for (const int threads : {1, 4}) {
    EXPECT_EQ(first_difference(read_with(pgm, threads, 1500), pixels), "") << threads;
    std::vector<std::uint8_t> got(pixels.size(), 0xA5);
    tbb::task_arena(threads).execute([&] {
      auto reader = open_image(raw, ImageFileFormat::Raw, RawGeometry{static_cast<int>(w), 0, PixelFormat::Mono16});
      reader->read_rows(reinterpret_cast<std::byte*>(got.data()), 1999);
      reader->read_rows(reinterpret_cast<std::byte*>(got.data()) + std::size_t{1999} * w * 2, 1);
    });
    EXPECT_EQ(first_difference(got, pixels), "") << threads;
  }
  // The file shrinks under a large read: the row where it ends.
  auto reader = open_image(raw, ImageFileFormat::Raw, RawGeometry{static_cast<int>(w), 0, PixelFormat::Mono16});
  fs::resize_file(raw, fs::file_size(raw) - 3 * w * 2);
  std::vector<std::byte> all(pixels.size());
  expect_input_error([&] { reader->read_rows(all.data(), 2000); }, raw, {"file ends at row 1997, expected 2000 rows"});
}

// ---------------------------------------------------------------------------
// Seeking (replay --frames): a read after seek_row(r) gives the rows a whole
// read gives from r, in every layout; backwards too.

void expect_seeks_like_a_whole_read(const fs::path& path, const std::vector<std::uint8_t>& all, std::size_t row_bytes) {
  auto reader = open_image(path);
  const std::int64_t h = reader->info().height;
  ASSERT_EQ(all.size(), static_cast<std::size_t>(h) * row_bytes);
  for (const std::int64_t row : {std::int64_t{1}, std::int64_t{11}, std::int64_t{12}, std::int64_t{37}, h / 2 + 3, std::int64_t{5}, h - 1, std::int64_t{0}, h}) {
    SCOPED_TRACE(path.filename().string() + " from row " + std::to_string(row));
    std::vector<std::uint8_t> got(static_cast<std::size_t>(std::min<std::int64_t>(17, h - row)) * row_bytes, 0xA5);
    reader->seek_row(row);
    EXPECT_EQ(reader->rows_left(), h - row);
    reader->read_rows(reinterpret_cast<std::byte*>(got.data()), static_cast<std::int64_t>(got.size() / row_bytes));
    const std::vector<std::uint8_t> want(all.begin() + static_cast<std::ptrdiff_t>(row * row_bytes),
                                         all.begin() + static_cast<std::ptrdiff_t>(row * row_bytes + got.size()));
    EXPECT_EQ(first_difference(got, want), "");
  }
  EXPECT_THROW(reader->seek_row(h + 1), InputError);
  EXPECT_THROW(reader->seek_row(-1), InputError);
}

TEST(ReplaySeek, EveryLayoutReadsFromTheRowAsAWholeReadDoes) {
  TempDir dir;
  for (int bits : {8, 16}) {
    // Pages of strips straddling the frames, uncompressed, LZW (libtiff) and tiles.
    const fs::path tiff = dir / ("pages" + std::to_string(bits) + ".tif");
    const std::vector<std::uint8_t> all = write_mixed_pages(tiff, bits);
    expect_seeks_like_a_whole_read(tiff, all, 64 * static_cast<std::size_t>(bits / 8));
    // PNG (one zlib stream: the rows before are decoded and dropped), PGM (by offset).
    const PixelFormat format = bits == 8 ? PixelFormat::Mono8 : PixelFormat::Mono16;
    for (const char* name : {"r.png", "r.pgm", "r.tif"}) {
      const fs::path path = dir / (std::to_string(bits) + name);
      write_recording(path, all.data(), 64, 12, 11, format, RecordingWriteOptions{true, 3});
      expect_seeks_like_a_whole_read(path, all, 64 * static_cast<std::size_t>(bits / 8));
    }
  }
}

// "Decoding only what it needs": the strips before a part are never read, so
// a corrupt one there does not stop it (the whole replay does stop there).
TEST(ReplaySeek, StripsBeforeThePartAreNotRead) {
  TempDir dir;
  const auto all = make_pixels(48, 20 * 5, 8, 4);
  const fs::path path = dir / "r.tif";
  write_recording(path, all.data(), 48, 5, 20, PixelFormat::Mono8, RecordingWriteOptions{true, 1});
  TIFF* t = TIFFOpen(path.c_str(), "r");
  ASSERT_NE(t, nullptr);
  const std::uint64_t offset = TIFFGetStrileOffset(t, 2), bytes = TIFFGetStrileByteCount(t, 2);  // frame 2's strip
  TIFFClose(t);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    const std::string junk(static_cast<std::size_t>(bytes), '\xff');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  FileSourceConfig fc;
  fc.path = path;
  fc.frame_height = 5;
  fc.frames = FrameSpan{3, 20, ""};
  FileSource part(fc);
  Batch b = test::make_poisoned_batch(part.frame_layout(), 20);
  ASSERT_TRUE(part.fill(b));
  EXPECT_EQ(b.frames, 17);
  EXPECT_EQ(first_difference(std::vector<std::uint8_t>(reinterpret_cast<std::uint8_t*>(b.pixels.data()),
                                                        reinterpret_cast<std::uint8_t*>(b.pixels.data()) + b.filled_bytes()),
                             std::vector<std::uint8_t>(all.begin() + 3 * 240, all.end())),
            "");
  fc.frames.reset();
  FileSource whole(fc);
  EXPECT_THROW(whole.fill(b), InputError);
}

TEST(ReplaySeek, APartOfARecordingKeepsItsFrameNumbersAndSeesOnlyItsFrames) {
  TempDir dir;
  const auto all = make_pixels(40, 30 * 6, 8, 3);
  const fs::path path = dir / "r.tif";
  write_recording(path, all.data(), 40, 6, 30, PixelFormat::Mono8, RecordingWriteOptions{true, 4});
  FileSourceConfig fc;
  fc.path = path;
  fc.frame_height = 6;
  fc.frames = FrameSpan{7, 19, "digest"};
  FileSource src(fc);
  EXPECT_EQ(src.total_frames(), std::optional<std::uint64_t>(12));
  ASSERT_TRUE(src.frame_range());
  EXPECT_EQ(*src.frame_range(), (FrameRange{7, 19, 30, "digest"}));
  EXPECT_NE(src.describe().find("30 frames per pass"), std::string::npos) << src.describe();  // the recording's, as the whole replay says
  Batch b = test::make_poisoned_batch(src.frame_layout(), 5);
  std::vector<std::uint8_t> got;
  std::vector<std::uint64_t> ids;
  while (src.fill(b)) {
    got.insert(got.end(), reinterpret_cast<std::uint8_t*>(b.pixels.data()), reinterpret_cast<std::uint8_t*>(b.pixels.data()) + b.filled_bytes());
    for (int i = 0; i < b.frames; ++i) ids.push_back(b.meta[i].frame_id);
  }
  EXPECT_EQ(first_difference(got, std::vector<std::uint8_t>(all.begin() + 7 * 240, all.begin() + 19 * 240)), "");
  ASSERT_EQ(ids.size(), 12u);
  for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], 7 + i);
  // Beyond the recording, empty, or looped: one line naming the file.
  for (const FrameSpan bad : {FrameSpan{20, 31, ""}, FrameSpan{5, 5, ""}, FrameSpan{30, 31, ""}}) {
    fc.frames = bad;
    try {
      FileSource s(fc);
      ADD_FAILURE() << bad.start << ":" << bad.end << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("r.tif: --frames"), std::string::npos) << e.what();
    }
  }
  fc.frames = FrameSpan{0, 10, ""};
  fc.loops = 2;
  EXPECT_THROW(FileSource{fc}, InputError);
  EXPECT_EQ(parse_frame_span("3:9").end, 9u);
  for (const char* text : {"3", "3:", ":9", "9:3", "4:4", "a:b", "-1:4", "3:9:12", " 3:9"}) EXPECT_THROW(parse_frame_span(text), InputError) << text;
}

// ---------------------------------------------------------------------------
// Recordings: the frame height round trip, synth's layout

TEST(ReplayRecording, FrameHeightRoundTripsThroughTiffAndPng) {
  TempDir dir;
  const auto pixels = make_pixels(40, 6 * 13, 8, 1);
  for (const char* name : {"r.tif", "r.png", "r.pgm"}) {
    for (const bool compress : {true, false}) {
      const fs::path path = dir / name;
      write_recording(path, pixels.data(), 40, 13, 6, PixelFormat::Mono8, RecordingWriteOptions{compress, 2});
      auto reader = open_image(path);
      EXPECT_EQ(reader->info().recorded_frame_height, std::string(name) == "r.pgm" ? 0 : 13) << name;
      EXPECT_EQ(first_difference(read_with(path, 2, 13), pixels), "") << name;
    }
  }
  // A plain image says nothing; a description that is not ours neither.
  write_image(dir / "plain.tif", pixels.data(), 40, 78, PixelFormat::Mono8);
  EXPECT_EQ(open_image(dir / "plain.tif")->info().recorded_frame_height, 0);
  for (const char* text : {"not json", "{\"stripeline\": {\"frame_height\": -3}}", "{\"shape\": [6, 13, 41]}", "{\"shape\": [78, 40]}", "{broken"}) {
    Layout l{40, 78, 8, COMPRESSION_NONE, 0, 78};
    l.description = text;
    write_tiff(dir / "d.tif", {l}, {pixels});
    EXPECT_EQ(open_image(dir / "d.tif")->info().recorded_frame_height, 0) << text;
  }
  const metadata::Json d = metadata::parse(recording_description(52, 1200), "recording");  // core/metadata.h
  EXPECT_EQ(d["stripeline"], "recording");
  EXPECT_EQ(d["frame_height"], 52);
  EXPECT_EQ(d["frames"], 1200);
  EXPECT_EQ(d["schema"], metadata::kSchema);
}

TEST(ReplayRecording, SynthWritesAStripPerFrameCompressedOrNot) {
  TempDir dir;
  for (const auto& [flags, compression, rps] : {std::tuple{std::string(""), COMPRESSION_ADOBE_DEFLATE, 20u},
                                                std::tuple{std::string("--compression none"), COMPRESSION_NONE, 20u},
                                                std::tuple{std::string("--frames-per-strip 4"), COMPRESSION_ADOBE_DEFLATE, 80u}}) {
    const fs::path path = dir / "s.tif";
    std::string out;
    ASSERT_EQ(test::run_cli("synth " + path.string() + " --width 96 --frame-height 20 --frames 10 " + flags, &out), 0) << out;
    TIFF* t = TIFFOpen(path.c_str(), "r");
    ASSERT_NE(t, nullptr);
    std::uint16_t c = 0, predictor = 0;
    std::uint32_t r = 0;
    TIFFGetField(t, TIFFTAG_COMPRESSION, &c);
    TIFFGetField(t, TIFFTAG_ROWSPERSTRIP, &r);
    const bool has_predictor = TIFFGetField(t, TIFFTAG_PREDICTOR, &predictor) == 1;
    TIFFClose(t);
    EXPECT_EQ(c, compression) << flags;
    EXPECT_EQ(r, rps) << flags;
    if (compression != COMPRESSION_NONE) EXPECT_TRUE(has_predictor && predictor == PREDICTOR_HORIZONTAL) << flags;
    EXPECT_EQ(open_image(path)->info().recorded_frame_height, 20) << flags;
    EXPECT_EQ(first_difference(read_with(path, 4, 33), libtiff_sequential(path)), "") << flags;
  }
  std::string out;
  EXPECT_EQ(test::run_cli("synth " + (dir / "x.tif").string() + " --compression lzma", &out), 2) << out;
  EXPECT_NE(out.find("expected deflate or none"), std::string::npos) << out;
  EXPECT_EQ(test::run_cli("synth " + (dir / "x.tif").string() + " --frames-per-strip 0", &out), 2) << out;
  EXPECT_TRUE(dir.entries() == std::vector<std::string>{"s.tif"}) << "a refused synth left a file";
}

// The replay of a synth recording in any layout gives the same profiles.
TEST(ReplayRecording, EveryLayoutReplaysToTheSamePointCloud) {
  TempDir dir;
  std::string reference;
  for (const std::string& variant : {"a.tif", "b.tif --compression none", "c.tif --frames-per-strip 3", "d.png", "e.pgm"}) {
    const std::string file = (dir / variant.substr(0, variant.find(' '))).string();
    const std::string extra = variant.find(' ') == std::string::npos ? "" : variant.substr(variant.find(' '));
    std::string out;
    ASSERT_EQ(test::run_cli("synth " + file + " --width 300 --frame-height 24 --frames 25 --seed 4" + extra, &out), 0) << out;
    ASSERT_EQ(test::run_cli("replay " + file + " -H 24 -q --backend cpu --batch-frames 7 --ply " + (dir / "p.ply").string(), &out), 0)
        << out;
    std::ifstream in(dir / "p.ply", std::ios::binary);
    std::string ply((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ply = ply.substr(ply.find("end_header"));
    if (reference.empty()) reference = ply;
    EXPECT_TRUE(ply == reference) << variant << ": the point cloud differs";
  }
}

}  // namespace
}  // namespace stripeline::io

namespace stripeline::io {
namespace {

// bench-replay runs end to end and writes every figure it prints (values are
// not asserted: they are timings).
TEST(ReplayBench, QuickRunWritesEveryFigure) {
  TempDir dir;
  std::string out;
  const fs::path json = dir / "r.json";
  ASSERT_EQ(test::run_cli("bench-replay --quick --frames 12 --width 256 --loops 1 --threads 1,2 --backend cpu --json " + json.string() +
                              " --dir " + (dir / "files").string(),
                          &out),
            0)
      << out;
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  const std::string j = text.str();
  for (const char* key : {"\"engine\"", "\"synth-deflate\"", "\"tifffile-deflate\"", "\"libtiff-deflate\"", "\"png\"", "\"tiff-none\"", "\"pgm\"",
                          "\"raw\"", "\"cold\"", "\"cpu_bound_profiles_per_s\"", "\"decode_mb_per_s\"", "\"over_uncompressed\"", "\"inflate\""})
    EXPECT_NE(j.find(key), std::string::npos) << key << " missing from " << j;
  EXPECT_TRUE(fs::exists(dir / "files" / "synth-deflate.tif")) << "--dir keeps the recordings";
  EXPECT_EQ(test::run_cli("bench-replay --threads 1,x", &out), 2) << out;
}

}  // namespace
}  // namespace stripeline::io
