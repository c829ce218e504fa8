// Tests of io/: image readers and writers (PNG, TIFF, PGM, raw), AtomicFile,
// PLY writer and reader. Suites are named Io*, Image*, Atomic*, Ply*.
#include <gtest/gtest.h>
#include <png.h>
#include <sys/resource.h>
#include <tiffio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/errors.h"
#include "core/types.h"
#include "io/atomic_file.h"
#include "io/colour_map.h"
#include "io/image_reader.h"
#include "io/image_writer.h"
#include "io/ply_writer.h"
#include "test_helpers.h"

namespace stripeline::io {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Helpers

using IoTempDir = test::TempDir;

struct Image {
  int width = 0;
  std::int64_t height = 0;
  PixelFormat format = PixelFormat::Mono8;
  std::vector<std::uint8_t> bytes;  // native-endian pixels, tightly packed

  std::size_t row_bytes() const { return static_cast<std::size_t>(width) * bytes_per_pixel(format); }
  std::uint16_t at(int x, std::int64_t y) const {
    const std::size_t i = static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x);
    if (format == PixelFormat::Mono8) return bytes[i];
    std::uint16_t v;
    std::memcpy(&v, &bytes[2 * i], 2);
    return v;
  }
};

// Deterministic pixels whose two bytes differ (so a byte swap is caught),
// with the extremes 0 and max present.
Image make_image(int width, std::int64_t height, PixelFormat format, unsigned seed = 1) {
  Image img{width, height, format, {}};
  img.bytes.resize(img.row_bytes() * static_cast<std::size_t>(height));
  std::uint32_t state = 0x9e3779b9u * (seed + 1);
  for (std::int64_t y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      state = state * 1664525u + 1013904223u;
      const std::size_t i = static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x);
      if (format == PixelFormat::Mono8) {
        img.bytes[i] = static_cast<std::uint8_t>((state >> 24) ^ static_cast<std::uint32_t>(x + y));
      } else {
        const auto v = static_cast<std::uint16_t>((state >> 16) ^ static_cast<std::uint32_t>(x * 257 + y));
        std::memcpy(&img.bytes[2 * i], &v, 2);
      }
    }
  }
  const std::size_t n = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
  if (format == PixelFormat::Mono8) {
    img.bytes[0] = 0;
    img.bytes[n - 1] = 255;
  } else {
    const std::uint16_t lo = 0, hi = 0xffff;
    std::memcpy(&img.bytes[0], &lo, 2);
    std::memcpy(&img.bytes[2 * (n - 1)], &hi, 2);
  }
  return img;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Raw files are headerless, 16-bit little-endian.
void write_raw(const fs::path& path, const Image& img) {
  std::string bytes;
  bytes.reserve(img.bytes.size());
  for (std::int64_t y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      const std::uint16_t v = img.at(x, y);
      bytes.push_back(static_cast<char>(v & 0xff));
      if (img.format == PixelFormat::Mono16) bytes.push_back(static_cast<char>(v >> 8));
    }
  }
  write_bytes(path, bytes);
}

// Writes img to path: write_image for png/tif/pgm, write_raw for .raw.
void write_any(const fs::path& path, const Image& img, bool compress = true) {
  if (path.extension() == ".raw") {
    write_raw(path, img);
  } else {
    write_image(path, img.bytes.data(), img.width, img.height, img.format, ImageWriteOptions{compress});
  }
}

std::unique_ptr<ImageReader> open_any(const fs::path& path, const Image& img) {
  if (path.extension() == ".raw") return open_image(path, ImageFileFormat::Auto, RawGeometry{img.width, 0, img.format});
  return open_image(path);
}

// The raw file `path` as rows of `width` pixels of format f, `height` rows
// (0: as many as the file holds).
std::unique_ptr<ImageReader> open_raw(const fs::path& path, int width, std::int64_t height, PixelFormat f) {
  return open_image(path, ImageFileFormat::Raw, RawGeometry{width, height, f});
}

// `bytes` written as the file `path`, then opened (its format from the content).
std::unique_ptr<ImageReader> open_bytes(const fs::path& path, const std::string& bytes) {
  write_bytes(path, bytes);
  return open_image(path);
}

// The first `n` pixels of the image's first row.
template <class Pixel>
std::vector<Pixel> first_row(ImageReader& reader, std::size_t n) {
  std::vector<Pixel> px(n);
  reader.read_rows(reinterpret_cast<std::byte*>(px.data()), 1);
  return px;
}

// Streams every row in chunks of `chunk` rows into a poisoned buffer.
std::vector<std::uint8_t> read_all(ImageReader& reader, std::int64_t chunk) {
  const ImageInfo& info = reader.info();
  const std::size_t rb = static_cast<std::size_t>(info.width) * bytes_per_pixel(info.format);
  std::vector<std::uint8_t> out(rb * static_cast<std::size_t>(info.height), 0xA5);
  std::int64_t y = 0;
  while (y < info.height) {
    EXPECT_EQ(reader.rows_left(), info.height - y);
    const std::int64_t n = std::min(chunk, info.height - y);
    reader.read_rows(reinterpret_cast<std::byte*>(out.data() + static_cast<std::size_t>(y) * rb), n);
    y += n;
  }
  EXPECT_EQ(reader.rows_left(), 0);
  return out;
}

// Compares pixel by pixel; reports the first difference.
void expect_same_pixels(const Image& expected, const std::vector<std::uint8_t>& got) {
  ASSERT_EQ(got.size(), expected.bytes.size());
  if (std::memcmp(got.data(), expected.bytes.data(), got.size()) == 0) return;
  Image g = expected;
  g.bytes = got;
  for (std::int64_t y = 0; y < expected.height; ++y) {
    for (int x = 0; x < expected.width; ++x) {
      if (g.at(x, y) != expected.at(x, y)) {
        FAIL() << "first difference at x=" << x << " y=" << y << ": got " << g.at(x, y) << ", expected "
               << expected.at(x, y);
      }
    }
  }
}

// Opens the image and reads every row: what a replay does.
void open_and_read_all(const fs::path& path, const std::optional<RawGeometry>& raw = std::nullopt) {
  auto reader = open_image(path, ImageFileFormat::Auto, raw);
  std::vector<std::byte> rows(static_cast<std::size_t>(reader->info().width) * 2 * 16);
  while (reader->rows_left() > 0) reader->read_rows(rows.data(), std::min<std::int64_t>(16, reader->rows_left()));
}

// The statement must throw InputError whose what() names `file` (and
// contains `fragment` when given).
template <class F>
void expect_input_error(F&& f, const fs::path& file, const std::string& fragment) {
  try {
    f();
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file.string()), std::string::npos) << "message does not name the file: " << what;
    if (!fragment.empty()) {
      EXPECT_NE(what.find(fragment), std::string::npos) << "message: " << what;
    }
    EXPECT_EQ(what.find('\n'), std::string::npos) << "message is not one line: " << what;
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InputError, got another exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected InputError naming " << file << ", nothing was thrown";
}

#define EXPECT_INPUT_ERROR(statement, file, fragment) \
  do {                                                \
    SCOPED_TRACE(#statement);                         \
    expect_input_error([&] { statement; }, file, fragment); \
  } while (0)

// A file a reader must refuse: its name, its bytes, a fragment of the error.
struct BadFile {
  const char* name;
  std::string bytes;
  const char* fragment;
};

// Each file written under dir, then `open(path)`: an InputError naming the
// file, with the fragment.
template <class Open>
void expect_bad_files(const IoTempDir& dir, const std::vector<BadFile>& files, Open open) {
  for (const BadFile& f : files) {
    const fs::path path = dir / f.name;
    write_bytes(path, f.bytes);
    EXPECT_INPUT_ERROR(open(path), path, f.fragment);
  }
}

bool has_temp_files(const IoTempDir& dir) {
  for (const auto& name : dir.entries()) {
    if (name.find(".tmp-") != std::string::npos) return true;
  }
  return false;
}

// Writes a PNG with arbitrary header fields straight through libpng;
// `data` holds the PNG sample bytes of every row exactly as stored in the
// file (16-bit big-endian). Returns 0 on success. Plain C: no object with a
// destructor lives across the setjmp.
int write_png_custom(const char* path, png_uint_32 width, png_uint_32 height, int bit_depth, int color_type,
                     int interlace, const unsigned char* data, size_t row_bytes) {
  static png_color palette[256];
  std::FILE* f = std::fopen(path, "wb");
  if (f == nullptr) return 1;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    return 1;
  }
  png_init_io(png, f);
  png_set_user_limits(png, 0x7fffffffU, 0x7fffffffU);
  png_set_IHDR(png, info, width, height, bit_depth, color_type, interlace, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_PLTE(png, info, palette, 1 << bit_depth);
  png_write_info(png, info);
  const int passes = png_set_interlace_handling(png);
  for (int p = 0; p < passes; ++p) {
    for (png_uint_32 y = 0; y < height; ++y) png_write_row(png, data + static_cast<size_t>(y) * row_bytes);
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return std::fclose(f) == 0 ? 0 : 1;
}

struct TiffSpec {
  std::uint32_t width = 16, height = 8;
  std::uint16_t bits = 8, samples = 1;
  std::uint16_t photometric = PHOTOMETRIC_MINISBLACK;
  std::uint16_t sample_format = SAMPLEFORMAT_UINT;
  std::uint16_t compression = COMPRESSION_NONE;
  std::uint16_t predictor = 0;
  std::uint32_t rows_per_strip = 3;
  std::uint32_t tile = 0;  // tile width and height; 0: strips
  const char* mode = "w";  // "wb": big-endian file, "wl": little-endian
};

// Writes a TIFF straight through libtiff. `data`: native-endian samples,
// rows of (width * samples * bits + 7) / 8 bytes.
void write_tiff_custom(const fs::path& path, const TiffSpec& s, const std::vector<std::uint8_t>& data) {
  TIFF* t = TIFFOpen(path.c_str(), s.mode);
  ASSERT_NE(t, nullptr) << path;
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, s.width);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, s.height);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, s.bits);
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, s.samples);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, s.photometric);
  TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, s.sample_format);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(t, TIFFTAG_COMPRESSION, s.compression);
  if (s.predictor != 0) TIFFSetField(t, TIFFTAG_PREDICTOR, s.predictor);
  std::vector<std::uint16_t> colormap;
  if (s.photometric == PHOTOMETRIC_PALETTE) {
    colormap.assign(std::size_t{1} << s.bits, 0);
    TIFFSetField(t, TIFFTAG_COLORMAP, colormap.data(), colormap.data(), colormap.data());
  }
  const std::size_t row_bytes = (static_cast<std::size_t>(s.width) * s.samples * s.bits + 7) / 8;
  if (s.tile == 0) {
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, s.rows_per_strip);
    std::vector<std::uint8_t> row(row_bytes);
    for (std::uint32_t y = 0; y < s.height; ++y) {
      std::memcpy(row.data(), data.data() + y * row_bytes, row_bytes);
      ASSERT_GE(TIFFWriteScanline(t, row.data(), y, 0), 0);
    }
  } else {
    TIFFSetField(t, TIFFTAG_TILEWIDTH, s.tile);
    TIFFSetField(t, TIFFTAG_TILELENGTH, s.tile);
    const std::size_t bpp = s.bits / 8u * s.samples;
    std::vector<std::uint8_t> tile(static_cast<std::size_t>(TIFFTileSize(t)));
    for (std::uint32_t ty = 0; ty < s.height; ty += s.tile) {
      for (std::uint32_t tx = 0; tx < s.width; tx += s.tile) {
        std::fill(tile.begin(), tile.end(), std::uint8_t{0x5A});  // padding outside the image
        for (std::uint32_t r = 0; r < s.tile && ty + r < s.height; ++r) {
          const std::uint32_t cols = std::min(s.tile, s.width - tx);
          std::memcpy(tile.data() + r * s.tile * bpp, data.data() + (ty + r) * row_bytes + tx * bpp, cols * bpp);
        }
        ASSERT_GE(TIFFWriteTile(t, tile.data(), tx, ty, 0, 0), 0);
      }
    }
  }
  TIFFClose(t);
}

// ---------------------------------------------------------------------------
// Round trips: write, then stream back in chunks of rows.

struct Size {
  int width;
  std::int64_t height;
};

using RoundTripParam = std::tuple<std::string, PixelFormat, Size>;

class IoRoundTrip : public ::testing::TestWithParam<RoundTripParam> {};

TEST_P(IoRoundTrip, EveryPixelSurvivesWhenStreamedInChunks) {
  const auto& [ext, format, size] = GetParam();
  IoTempDir dir;
  const bool uncompressed = ext == "-none.tif";
  const fs::path path = dir / ("img" + (uncompressed ? std::string(".tif") : ext));
  const Image img = make_image(size.width, size.height, format, static_cast<unsigned>(size.width));
  write_any(path, img, !uncompressed);
  EXPECT_TRUE(dir.entries() == std::vector<std::string>{path.filename().string()}) << "temporary left behind";

  for (std::int64_t chunk : {std::int64_t{1}, std::int64_t{7}, size.height}) {
    auto reader = open_any(path, img);
    EXPECT_EQ(reader->info().width, img.width);
    EXPECT_EQ(reader->info().height, img.height);
    EXPECT_EQ(reader->info().format, img.format);
    expect_same_pixels(img, read_all(*reader, chunk));
  }
}

std::string round_trip_name(const ::testing::TestParamInfo<RoundTripParam>& info) {
  std::string ext = std::get<0>(info.param);
  std::string name;
  for (char c : ext) {
    if (std::isalnum(static_cast<unsigned char>(c))) name += c;
  }
  const Size s = std::get<2>(info.param);
  return name + "_" + to_string(std::get<1>(info.param)) + "_" + std::to_string(s.width) + "x" +
         std::to_string(s.height);
}

INSTANTIATE_TEST_SUITE_P(IoAll, IoRoundTrip,
                         ::testing::Combine(::testing::Values(".png", ".tif", ".tiff", "-none.tif", ".pgm", ".raw"),
                                            ::testing::Values(PixelFormat::Mono8, PixelFormat::Mono16),
                                            ::testing::Values(Size{13, 42}, Size{1, 1}, Size{176, 113},
                                                              Size{1936, 9}, Size{33, 1})),
                         round_trip_name);

// img written as `path` and opened again.
std::unique_ptr<ImageReader> write_and_open(const fs::path& path, const Image& img) {
  write_any(path, img);
  return open_any(path, img);
}

// Streaming, in each format (the parameter: its extension).
class IoStreamed : public ::testing::TestWithParam<std::string> {
 protected:
  IoTempDir dir;
};

// 64 x 100000: streamed in chunks of 4096 rows (+ a ragged end).
TEST_P(IoStreamed, TallImageStreamsInChunks) {
  const fs::path path = dir / ("tall" + GetParam());
  const Image img = make_image(64, 100000, PixelFormat::Mono8, 7);
  auto reader = write_and_open(path, img);
  ASSERT_EQ(reader->info().height, 100000);
  expect_same_pixels(img, read_all(*reader, 4096));
  // Past the end: InputError naming the row where the file ends.
  std::vector<std::byte> row(64);
  EXPECT_INPUT_ERROR(reader->read_rows(row.data(), 1), path, "file ends at row 100000, expected 100001 rows");
}

TEST_P(IoStreamed, RewindReadsTheSameRowsAgain) {
  const fs::path path = dir / ("rw" + GetParam());
  const Image img = make_image(31, 200, PixelFormat::Mono16, 3);
  auto reader = write_and_open(path, img);
  std::vector<std::byte> some(img.row_bytes() * 50);
  reader->read_rows(some.data(), 50);
  EXPECT_EQ(reader->rows_left(), 150);
  reader->rewind();
  EXPECT_EQ(reader->rows_left(), 200);
  expect_same_pixels(img, read_all(*reader, 13));
  // From the end, twice (a looping replay).
  for (int pass = 0; pass < 2; ++pass) {
    reader->rewind();
    expect_same_pixels(img, read_all(*reader, 64));
  }
  // After a failed read (past the end), rewind still recovers.
  EXPECT_THROW(reader->read_rows(some.data(), 1), InputError);
  reader->rewind();
  expect_same_pixels(img, read_all(*reader, 200));
}

INSTANTIATE_TEST_SUITE_P(IoAll, IoStreamed, ::testing::Values(".png", ".tif", ".pgm", ".raw"),
                         [](const auto& info) { return info.param.substr(1); });

TEST(IoReader, ZeroRowsIsANoOpAndReadPastEndNamesTheRows) {
  IoTempDir dir;
  const fs::path path = dir / "a.png";
  const Image img = make_image(5, 10, PixelFormat::Mono8);
  write_any(path, img);
  auto reader = open_image(path);
  reader->read_rows(nullptr, 0);
  EXPECT_EQ(reader->rows_left(), 10);
  std::vector<std::byte> buf(img.row_bytes() * 20);
  reader->read_rows(buf.data(), 4);
  EXPECT_INPUT_ERROR(reader->read_rows(buf.data(), 7), path, "file ends at row 10, expected 11 rows");
  EXPECT_EQ(reader->rows_left(), 6) << "a rejected request must not consume rows";
  reader->read_rows(buf.data(), 6);
  EXPECT_EQ(reader->rows_left(), 0);
}

// ---------------------------------------------------------------------------
// Endianness on disk, checked against hand-made files.

TEST(IoRaw, SixteenBitIsLittleEndianOnDisk) {
  IoTempDir dir;
  const fs::path path = dir / "le.raw";
  write_bytes(path, std::string("\x34\x12\xff\x00\x00\xff", 6));
  auto reader = open_raw(path, 3, 0, PixelFormat::Mono16);
  EXPECT_EQ(first_row<std::uint16_t>(*reader, 3), (std::vector<std::uint16_t>{0x1234, 0x00ff, 0xff00}));
}

TEST(IoPgm, SixteenBitIsBigEndianOnDiskBothWays) {
  IoTempDir dir;
  const fs::path path = dir / "be.pgm";
  auto reader = open_bytes(path, std::string("P5\n2 1\n65535\n\x12\x34\xff\x00", 17));
  EXPECT_EQ(reader->info().format, PixelFormat::Mono16);
  const auto px = first_row<std::uint16_t>(*reader, 2);
  EXPECT_EQ(px, (std::vector<std::uint16_t>{0x1234, 0xff00}));

  const fs::path out = dir / "out.pgm";
  write_image(out, px.data(), 2, 1, PixelFormat::Mono16);
  EXPECT_EQ(read_bytes(out), std::string("P5\n2 1\n65535\n\x12\x34\xff\x00", 17));
}

// fuzz_image found a 200-byte PNG whose tEXt chunk claims 2 GB: libpng
// allocated it in png_read_info. The reader refuses it first, naming the chunk.
TEST(IoPng, AChunkBeyondTheFileIsRefusedBeforeLibpngAllocatesIt) {
  IoTempDir dir;
  const fs::path good = dir / "good.png";
  const unsigned char row[2] = {1, 2};
  ASSERT_EQ(write_png_custom(good.c_str(), 2, 1, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, row, 2), 0);
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  // After the signature and IHDR (8 + 25 bytes): a tEXt claiming 0x7F7F7F7F bytes.
  const std::string text("\x7f\x7f\x7f\x7ftEXtDescription\0x", 20);
  const fs::path bad = dir / "bad.png";
  std::ofstream(bad, std::ios::binary) << bytes.substr(0, 33) + text + bytes.substr(33);
  try {
    open_image(bad);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bad.png"), std::string::npos) << m;
    EXPECT_NE(m.find("'tEXt'"), std::string::npos) << m;
    EXPECT_NE(m.find("beyond the end of the file"), std::string::npos) << m;
  }
  EXPECT_EQ(open_image(good)->info().width, 2);
}

TEST(IoPng, SixteenBitIsBigEndianOnDisk) {
  IoTempDir dir;
  const fs::path path = dir / "be.png";
  const unsigned char row[4] = {0x12, 0x34, 0xff, 0x00};
  ASSERT_EQ(write_png_custom(path.c_str(), 2, 1, 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, row, 4), 0);
  auto reader = open_image(path);
  EXPECT_EQ(reader->info().format, PixelFormat::Mono16);
  std::uint16_t px[2] = {};
  reader->read_rows(reinterpret_cast<std::byte*>(px), 1);
  EXPECT_EQ(px[0], 0x1234);
  EXPECT_EQ(px[1], 0xff00);
}

TEST(IoTiff, BigAndLittleEndianFilesGiveNativePixels) {
  IoTempDir dir;
  const Image img = make_image(19, 11, PixelFormat::Mono16, 5);
  for (const char* mode : {"wb", "wl"}) {
    const fs::path path = dir / (std::string(mode) + ".tif");
    TiffSpec s;
    s.width = 19;
    s.height = 11;
    s.bits = 16;
    s.mode = mode;
    write_tiff_custom(path, s, img.bytes);
    auto reader = open_image(path);
    expect_same_pixels(img, read_all(*reader, 4));
  }
}

TEST(IoTiff, TiledFilesAreStreamedOneRowOfTilesAtATime) {
  IoTempDir dir;
  for (PixelFormat f : {PixelFormat::Mono8, PixelFormat::Mono16}) {
    const Image img = make_image(50, 37, f, 9);  // not a multiple of the tile size
    for (std::uint16_t compression : {std::uint16_t{COMPRESSION_NONE}, std::uint16_t{COMPRESSION_ADOBE_DEFLATE}}) {
      const fs::path path = dir / ("tiled_" + std::string(to_string(f)) + std::to_string(compression) + ".tif");
      TiffSpec s;
      s.width = 50;
      s.height = 37;
      s.bits = f == PixelFormat::Mono16 ? 16 : 8;
      s.tile = 16;
      s.compression = compression;
      write_tiff_custom(path, s, img.bytes);
      auto reader = open_image(path);
      expect_same_pixels(img, read_all(*reader, 5));
      reader->rewind();
      expect_same_pixels(img, read_all(*reader, 37));
    }
  }
}

TEST(IoTiff, LzwWithPredictorAndOneBigStripAreRead) {
  IoTempDir dir;
  const Image img = make_image(300, 257, PixelFormat::Mono16, 11);
  TiffSpec s;
  s.width = 300;
  s.height = 257;
  s.bits = 16;
  s.compression = COMPRESSION_LZW;
  s.predictor = PREDICTOR_HORIZONTAL;
  s.rows_per_strip = 257;  // a single strip
  const fs::path path = dir / "lzw.tif";
  write_tiff_custom(path, s, img.bytes);
  auto reader = open_image(path);
  expect_same_pixels(img, read_all(*reader, 10));
}

TEST(IoPgm, CommentsInTheHeaderAreSkipped) {
  IoTempDir dir;
  const fs::path path = dir / "c.pgm";
  auto reader = open_bytes(path, std::string("P5 # magic\n# a comment line\n3# width\n 2\n#maxval next\n200\n") +
                                      std::string("\x01\x02#\x04\x05\x06", 6));
  EXPECT_EQ(reader->info().width, 3);
  EXPECT_EQ(reader->info().height, 2);
  EXPECT_EQ(reader->info().format, PixelFormat::Mono8);
  std::uint8_t px[6] = {};
  reader->read_rows(reinterpret_cast<std::byte*>(px), 2);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(px), 6), std::string("\x01\x02#\x04\x05\x06", 6));
}

TEST(IoPgm, MaxvalAbove255IsMono16) {
  IoTempDir dir;
  const fs::path path = dir / "m.pgm";
  auto reader = open_bytes(path, std::string("P5\n1 1\n1000\n\x03\xe8", 14));
  EXPECT_EQ(reader->info().format, PixelFormat::Mono16);
  EXPECT_EQ(first_row<std::uint16_t>(*reader, 1), std::vector<std::uint16_t>{1000});
}

TEST(IoRaw, GivenHeightMustMatchTheFileSize) {
  IoTempDir dir;
  const fs::path path = dir / "r.raw";
  const Image img = make_image(10, 6, PixelFormat::Mono16);
  write_raw(path, img);
  auto ok = open_raw(path, 10, 6, PixelFormat::Mono16);
  expect_same_pixels(img, read_all(*ok, 4));
  EXPECT_INPUT_ERROR(open_raw(path, 10, 7, PixelFormat::Mono16), path, "expected 140 bytes");
  EXPECT_INPUT_ERROR(open_raw(path, 10, 5, PixelFormat::Mono16), path, "expected 100 bytes");
}

// dir/r.raw holding `n` bytes.
fs::path raw_of(const IoTempDir& dir, std::size_t n) {
  const fs::path path = dir / "r.raw";
  write_bytes(path, std::string(n, 'x'));
  return path;
}

TEST(IoRaw, SizeNotAMultipleOfTheRowIsAnInputError) {
  IoTempDir dir;
  const fs::path path = raw_of(dir, 101);
  EXPECT_INPUT_ERROR(open_raw(path, 10, 0, PixelFormat::Mono8), path, "not a multiple of the row size 10 bytes");
  EXPECT_INPUT_ERROR(open_raw(path, 101, 0, PixelFormat::Mono16), path, "not a multiple");
}

TEST(IoRaw, MissingOrAbsurdGeometryIsAnInputError) {
  IoTempDir dir;
  const fs::path path = raw_of(dir, 100);
  EXPECT_INPUT_ERROR(open_image(path), path, "width");
  EXPECT_INPUT_ERROR(open_raw(path, 0, 0, PixelFormat::Mono8), path, "width 0");
  EXPECT_INPUT_ERROR(open_raw(path, kMaxWidth + 1, 0, PixelFormat::Mono8), path, "out of range");
  EXPECT_INPUT_ERROR(open_raw(path, 10, -1, PixelFormat::Mono8), path, "height");
  EXPECT_INPUT_ERROR(open_raw(path, 10, 0, static_cast<PixelFormat>(12)), path, "depth");
}

// ---------------------------------------------------------------------------
// Formats

TEST(ImageFormat, FromPathAndFromContent) {
  EXPECT_EQ(format_from_path("a/b.TIF"), ImageFileFormat::Tiff);
  EXPECT_EQ(format_from_path("b.tiff"), ImageFileFormat::Tiff);
  EXPECT_EQ(format_from_path("b.Png"), ImageFileFormat::Png);
  EXPECT_EQ(format_from_path("b.pgm"), ImageFileFormat::Pgm);
  EXPECT_EQ(format_from_path("b.raw"), ImageFileFormat::Raw);
  EXPECT_EQ(format_from_path("b.bin"), ImageFileFormat::Raw);
  EXPECT_EQ(format_from_path("b.dat"), ImageFileFormat::Auto);
  EXPECT_EQ(format_from_path("noext"), ImageFileFormat::Auto);

  IoTempDir dir;
  const Image img = make_image(8, 4, PixelFormat::Mono8);
  for (const char* ext : {".png", ".tif", ".pgm"}) {
    write_any(dir / (std::string("x") + ext), img);
    const fs::path renamed = dir / (std::string("x") + ext + ".img");
    fs::rename(dir / (std::string("x") + ext), renamed);
    auto reader = open_image(renamed);
    expect_same_pixels(img, read_all(*reader, 3));
  }
  const fs::path unknown = dir / "mystery.dat";
  write_bytes(unknown, std::string(32, 'z'));
  EXPECT_INPUT_ERROR(open_image(unknown), unknown, "cannot tell the image format");
  // With a raw geometry, an unknown extension is raw.
  auto raw = open_image(unknown, ImageFileFormat::Auto, RawGeometry{8, 0, PixelFormat::Mono8});
  EXPECT_EQ(raw->info().height, 4);
  // An explicit format wins over the extension.
  write_any(dir / "p.png", img);
  EXPECT_INPUT_ERROR(open_image(dir / "p.png", ImageFileFormat::Tiff), dir / "p.png", "TIFF");
}

// ---------------------------------------------------------------------------
// The bad-input matrix: every case is an InputError naming the file.

TEST(IoBadInput, MissingFile) {
  IoTempDir dir;
  for (const char* name : {"nope.png", "nope.tif", "nope.pgm", "nope.raw"}) {
    const fs::path path = dir / name;
    EXPECT_INPUT_ERROR(open_image(path, ImageFileFormat::Auto, RawGeometry{4, 0, PixelFormat::Mono8}), path,
                       "not found");
  }
  EXPECT_INPUT_ERROR(open_image(dir.path() / "sub" / "x.png"), dir.path() / "sub" / "x.png", "not found");
  // A directory is not an image.
  fs::create_directory(dir / "d.png");
  EXPECT_INPUT_ERROR(open_image(dir / "d.png"), dir / "d.png", "directory");
}

TEST(IoBadInput, EmptyFile) {
  IoTempDir dir;
  for (const char* name : {"e.png", "e.tif", "e.pgm", "e.raw"}) {
    const fs::path path = dir / name;
    write_bytes(path, "");
    EXPECT_INPUT_ERROR(open_image(path, ImageFileFormat::Auto, RawGeometry{4, 0, PixelFormat::Mono8}), path,
                       "empty");
  }
}

TEST(IoBadInput, TruncatedFiles) {
  IoTempDir dir;
  const Image img = make_image(64, 200, PixelFormat::Mono16, 21);
  for (const char* name : {"t.png", "t.tif", "t_none.tif", "t.pgm", "t.raw"}) {
    SCOPED_TRACE(name);
    const fs::path path = dir / name;
    write_any(path, img, std::string(name) != "t_none.tif");
    const auto full = fs::file_size(path);
    for (double keep : {0.5, 0.9, 0.99}) {
      write_any(path, img, std::string(name) != "t_none.tif");
      fs::resize_file(path, static_cast<std::uintmax_t>(static_cast<double>(full) * keep));
      if (path.extension() == ".raw") {
        // Raw with an explicit height: the size no longer matches.
        EXPECT_INPUT_ERROR(open_and_read_all(path, RawGeometry{64, 200, PixelFormat::Mono16}), path, "file size");
      } else {
        EXPECT_INPUT_ERROR(open_and_read_all(path), path, "");
      }
    }
    // Cut inside the header.
    write_any(path, img, std::string(name) != "t_none.tif");
    fs::resize_file(path, 5);
    if (path.extension() != ".raw") EXPECT_INPUT_ERROR(open_and_read_all(path), path, "");
  }
}

TEST(IoBadInput, TruncatedPgmNamesTheRowsItHas) {
  IoTempDir dir;
  const fs::path path = dir / "t.pgm";
  write_bytes(path, "P5\n4 10\n255\n" + std::string(4 * 6 + 3, 'a'));
  EXPECT_INPUT_ERROR(open_image(path), path, "file ends at row 6, expected 10 rows");
}

TEST(IoBadInput, TruncatedPngNamesTheRow) {
  IoTempDir dir;
  const fs::path path = dir / "t.png";
  const Image img = make_image(256, 512, PixelFormat::Mono8, 4);  // noise: compresses poorly
  write_image(path, img.bytes.data(), img.width, img.height, img.format, ImageWriteOptions{false});
  fs::resize_file(path, fs::file_size(path) / 2);
  EXPECT_INPUT_ERROR(open_and_read_all(path), path, "expected 512 rows");
}

// Writes `img` to dir/name, then changes its bytes with `corrupt`.
template <class Corrupt>
fs::path corrupted_file(const IoTempDir& dir, const char* name, const Image& img, Corrupt corrupt) {
  const fs::path path = dir / name;
  write_any(path, img);
  std::string b = read_bytes(path);
  corrupt(b);
  write_bytes(path, b);
  return path;
}

// PNG: one changed byte in the image data fails its CRC.
void flip_middle_byte(std::string& b) { b[b.size() / 2] = static_cast<char>(b[b.size() / 2] ^ 0x5a); }
// TIFF: deflate data overwritten (the first strip follows the 8-byte header).
void overwrite_first_strip(std::string& b) {
  for (std::size_t i = 8; i < 40; ++i) b[i] = static_cast<char>(0xff);
}

TEST(IoBadInput, CorruptBytes) {
  IoTempDir dir;
  const Image img = make_image(64, 64, PixelFormat::Mono8, 2);
  const fs::path crc = corrupted_file(dir, "c.png", img, flip_middle_byte);
  EXPECT_INPUT_ERROR(open_and_read_all(crc), crc, "");
  // PNG: bad signature.
  const fs::path sig = corrupted_file(dir, "sig.png", img, [](std::string& b) { b[1] = 'X'; });
  EXPECT_INPUT_ERROR(open_and_read_all(sig), sig, "not a PNG");
  // TIFF: bad magic.
  const fs::path magic = corrupted_file(dir, "magic.tif", img, [](std::string& b) { b[0] = 'X', b[1] = 'Y'; });
  EXPECT_INPUT_ERROR(open_and_read_all(magic), magic, "TIFF");
  const fs::path data = corrupted_file(dir, "data.tif", img, overwrite_first_strip);
  EXPECT_INPUT_ERROR(open_and_read_all(data), data, "row 0");
  // TIFF: directory offset pointing past the end.
  const fs::path ifd = corrupted_file(dir, "ifd.tif", img, [](std::string& b) {
    b[4] = b[5] = b[6] = static_cast<char>(0xff);
    b[7] = 0x7f;
  });
  EXPECT_INPUT_ERROR(open_and_read_all(ifd), ifd, "");
  // PGM: garbage where a number should be, a missing separator, wrong magic.
  for (const char* header : {"P5\n12 x\n255\n", "P5\n12 4\n255", "P512 4 255\n", "PX\n1 1\n255\n", "GIF89a",
                             "P5\n-3 4\n255\n"}) {
    const fs::path path = dir / "h.pgm";
    write_bytes(path, std::string(header) + std::string(64, 'a'));
    EXPECT_INPUT_ERROR(open_and_read_all(path), path, "");
  }
}

TEST(IoBadInput, NothingIsPrintedToStderr) {
  IoTempDir dir;
  const Image img = make_image(64, 64, PixelFormat::Mono8, 2);
  const fs::path tif = corrupted_file(dir, "data.tif", img, overwrite_first_strip);
  const fs::path tif2 = dir / "cut.tif";
  write_any(tif2, img);
  fs::resize_file(tif2, fs::file_size(tif2) - 20);
  const fs::path png = corrupted_file(dir, "c.png", img, flip_middle_byte);

  ::testing::internal::CaptureStderr();
  EXPECT_THROW(open_and_read_all(tif), InputError);
  EXPECT_THROW(open_and_read_all(tif2), InputError);
  EXPECT_THROW(open_and_read_all(png), InputError);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, "") << "libtiff/libpng printed to stderr";
}

TEST(IoBadInput, UnsupportedPngKinds) {
  IoTempDir dir;
  std::vector<unsigned char> data(64 * 8 * 8, 0x40);
  struct Case {
    const char* name;
    int bit_depth, color_type, interlace;
    std::size_t row_bytes;
    const char* fragment;
  } cases[] = {
      {"one_bit.png", 1, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, 1, "bit depth 1"},
      {"four_bit.png", 4, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, 4, "bit depth 4"},
      {"palette.png", 8, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE, 8, "palette"},
      {"adam7.png", 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_ADAM7, 8, "interlaced"},
  };
  for (const Case& c : cases) {
    const fs::path path = dir / c.name;
    ASSERT_EQ(write_png_custom(path.c_str(), 8, 8, c.bit_depth, c.color_type, c.interlace, data.data(), c.row_bytes),
              0)
        << c.name;
    EXPECT_INPUT_ERROR(open_image(path), path, c.fragment);
  }
  // Colour and alpha are read, mixed to grey (test_colour.cpp checks the values).
  for (auto [name, depth, type, row_bytes] : {std::tuple{"rgb.png", 8, PNG_COLOR_TYPE_RGB, 24}, std::tuple{"rgb16.png", 16, PNG_COLOR_TYPE_RGB, 48},
                                              std::tuple{"rgba.png", 8, PNG_COLOR_TYPE_RGB_ALPHA, 32}, std::tuple{"ga.png", 8, PNG_COLOR_TYPE_GRAY_ALPHA, 16}}) {
    const fs::path path = dir / name;
    ASSERT_EQ(write_png_custom(path.c_str(), 8, 8, depth, type, PNG_INTERLACE_NONE, data.data(), row_bytes), 0) << name;
    auto reader = open_image(path);
    std::vector<std::byte> grey(8 * 8 * static_cast<std::size_t>(depth / 8));
    EXPECT_NO_THROW(reader->read_rows(grey.data(), 8)) << name;
  }
  // Absurd width in the header.
  const fs::path wide = dir / "wide.png";
  std::vector<unsigned char> row(kMaxWidth + 10, 1);
  ASSERT_EQ(write_png_custom(wide.c_str(), kMaxWidth + 10, 1, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, row.data(),
                             row.size()),
            0);
  EXPECT_INPUT_ERROR(open_image(wide), wide, "width 65546 is out of range");
}

TEST(IoBadInput, UnsupportedTiffKinds) {
  IoTempDir dir;
  std::vector<std::uint8_t> data(16 * 8 * 8, 0x40);
  struct Case {
    const char* name;
    TiffSpec spec;
    const char* fragment;
  };
  TiffSpec one_bit;
  one_bit.bits = 1;
  TiffSpec four_bit;
  four_bit.bits = 4;
  TiffSpec rgb;
  rgb.samples = 3;
  rgb.photometric = PHOTOMETRIC_RGB;
  TiffSpec grey_alpha;
  grey_alpha.samples = 2;
  TiffSpec fp;
  fp.bits = 32;
  fp.sample_format = SAMPLEFORMAT_IEEEFP;
  TiffSpec int16;
  int16.bits = 16;
  int16.sample_format = SAMPLEFORMAT_INT;
  TiffSpec white;
  white.photometric = PHOTOMETRIC_MINISWHITE;
  TiffSpec palette;
  palette.photometric = PHOTOMETRIC_PALETTE;
  const Case cases[] = {{"one_bit.tif", one_bit, "bit depth 1"},   {"four_bit.tif", four_bit, "bit depth 4"},
                        {"float.tif", fp, ""},                     {"int16.tif", int16, "sample format"},
                        {"white.tif", white, "min-is-white"},      {"palette.tif", palette, "photometric"}};
  for (const Case& c : cases) {
    const fs::path path = dir / c.name;
    write_tiff_custom(path, c.spec, data);
    EXPECT_INPUT_ERROR(open_image(path), path, c.fragment);
  }
  // RGB and grey+alpha are read, mixed to grey (test_colour.cpp checks the values).
  for (auto [name, spec] : {std::pair{"rgb.tif", rgb}, std::pair{"ga.tif", grey_alpha}}) {
    const fs::path path = dir / name;
    write_tiff_custom(path, spec, data);
    auto reader = open_image(path);
    std::vector<std::byte> grey(static_cast<std::size_t>(reader->info().width) * static_cast<std::size_t>(reader->info().height));
    EXPECT_NO_THROW(reader->read_rows(grey.data(), reader->info().height)) << name;
  }
  TiffSpec wide;
  wide.width = 100000;
  wide.height = 1;
  const fs::path path = dir / "wide.tif";
  write_tiff_custom(path, wide, std::vector<std::uint8_t>(100000, 3));
  EXPECT_INPUT_ERROR(open_image(path), path, "width 100000 is out of range");
}

TEST(IoBadInput, UnsupportedPgmKinds) {
  IoTempDir dir;
  const std::string pixels(64, 'a');
  const std::vector<BadFile> files = {
      {"maxval0.pgm", "P5\n4 4\n0\n" + pixels, "maxval 0"},
      {"maxval70000.pgm", "P5\n4 4\n70000\n" + pixels, "maxval 70000"},
      {"ascii.pgm", "P2\n4 4\n255\n" + pixels, "P2"},
      {"ppm.pgm", "P6\n4 4\n255\n" + pixels, "P6"},
      {"absurd.pgm", "P5\n100000000 1\n255\n" + pixels, "width 100000000 is out of range"},
      {"huge.pgm", "P5\n99999999999999999999999 1\n255\n" + pixels, "out of range"},
      {"zero_w.pgm", "P5\n0 4\n255\n" + pixels, "width 0"},
      {"zero_h.pgm", "P5\n4 0\n255\n" + pixels, "height 0"},
  };
  expect_bad_files(dir, files, [](const fs::path& path) { return open_image(path); });
}

// ---------------------------------------------------------------------------
// Writers

TEST(ImageWriter, UnsupportedExtensionLeavesNothing) {
  IoTempDir dir;
  const Image img = make_image(4, 4, PixelFormat::Mono8);
  for (const char* name : {"x.jpg", "x", "x.raw", "x.png.bak"}) {
    const fs::path path = dir / name;
    EXPECT_INPUT_ERROR(write_image(path, img.bytes.data(), 4, 4, PixelFormat::Mono8), path, "unsupported");
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(ImageWriter, UnwritablePathIsAnInputErrorAndLeavesNothing) {
  IoTempDir dir;
  const Image img = make_image(4, 4, PixelFormat::Mono8);
  for (const char* name : {"x.png", "x.tif", "x.pgm"}) {
    const fs::path path = dir / "missing_dir" / name;
    EXPECT_INPUT_ERROR(write_image(path, img.bytes.data(), 4, 4, PixelFormat::Mono8), path, "does not exist");
    EXPECT_FALSE(fs::exists(path));
  }
  // The parent is a file, not a directory.
  write_bytes(dir / "file", "x");
  EXPECT_INPUT_ERROR(write_image(dir / "file" / "x.png", img.bytes.data(), 4, 4, PixelFormat::Mono8),
                     dir / "file" / "x.png", "not a directory");
  // The target is a directory.
  fs::create_directory(dir / "d.png");
  EXPECT_INPUT_ERROR(write_image(dir / "d.png", img.bytes.data(), 4, 4, PixelFormat::Mono8), dir / "d.png",
                     "directory");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"d.png", "file"}));
  if (::geteuid() != 0) {  // root ignores permissions
    fs::create_directory(dir / "ro");
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_INPUT_ERROR(write_image(dir / "ro" / "x.png", img.bytes.data(), 4, 4, PixelFormat::Mono8),
                       dir / "ro" / "x.png", "cannot create");
    fs::permissions(dir / "ro", fs::perms::owner_all);
    EXPECT_TRUE(fs::is_empty(dir / "ro"));
  }
}

TEST(ImageWriter, BadDimensionsAreInputErrorsAndLeaveNothing) {
  IoTempDir dir;
  const Image img = make_image(4, 4, PixelFormat::Mono8);
  const fs::path path = dir / "x.png";
  EXPECT_INPUT_ERROR(write_image(path, img.bytes.data(), 0, 4, PixelFormat::Mono8), path, "0x4");
  EXPECT_INPUT_ERROR(write_image(path, img.bytes.data(), 4, 0, PixelFormat::Mono8), path, "4x0");
  EXPECT_INPUT_ERROR(write_image(path, img.bytes.data(), kMaxWidth + 1, 1, PixelFormat::Mono8), path, "width");
  EXPECT_INPUT_ERROR(write_image(path, nullptr, 4, 4, PixelFormat::Mono8), path, "null");
  EXPECT_TRUE(dir.entries().empty());
}

TEST(ImageWriter, ReplacesAnExistingFileAtomically) {
  IoTempDir dir;
  const fs::path path = dir / "x.tif";
  const Image a = make_image(9, 9, PixelFormat::Mono8, 1);
  const Image b = make_image(12, 3, PixelFormat::Mono16, 2);
  write_any(path, a);
  write_any(path, b);
  auto reader = open_image(path);
  expect_same_pixels(b, read_all(*reader, 2));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"x.tif"});
}

TEST(ImageWriter, TiffStripsAreSensibleAndCompressionSelectable) {
  IoTempDir dir;
  const Image img = make_image(1936, 300, PixelFormat::Mono8, 1);
  std::vector<std::uint8_t> flat(img.bytes.size(), 7);  // compresses well
  write_image(dir / "d.tif", flat.data(), 1936, 300, PixelFormat::Mono8);
  write_image(dir / "n.tif", flat.data(), 1936, 300, PixelFormat::Mono8, ImageWriteOptions{false});
  EXPECT_LT(fs::file_size(dir / "d.tif"), flat.size() / 10);
  EXPECT_GT(fs::file_size(dir / "n.tif"), flat.size());
  for (const char* name : {"d.tif", "n.tif"}) {
    TIFF* t = TIFFOpen((dir / name).c_str(), "r");
    ASSERT_NE(t, nullptr);
    std::uint32_t rps = 0;
    std::uint16_t compression = 0;
    ASSERT_EQ(TIFFGetField(t, TIFFTAG_ROWSPERSTRIP, &rps), 1);
    TIFFGetField(t, TIFFTAG_COMPRESSION, &compression);
    EXPECT_GE(rps, 8u);
    EXPECT_LE(rps * 1936u, 1u << 20) << "strips should stay small enough to stream";
    EXPECT_EQ(compression, std::string(name) == "d.tif" ? COMPRESSION_ADOBE_DEFLATE : COMPRESSION_NONE);
    TIFFClose(t);
  }
}

// A short write (here: the file-size limit, which turns write() into EFBIG)
// is a RuntimeFailure, and neither the final name nor a temporary remains.
TEST(ImageWriter, ShortWriteIsRuntimeFailureAndLeavesNothing) {
  IoTempDir dir;
  const Image img = make_image(512, 512, PixelFormat::Mono16, 3);  // 512 KiB of noise
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 64 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  for (const char* name : {"x.png", "x.tif", "x.pgm"}) {
    const fs::path path = dir / name;
    try {
      write_image(path, img.bytes.data(), img.width, img.height, img.format);
      ADD_FAILURE() << name << ": no exception";
    } catch (const RuntimeFailure& e) {
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": expected RuntimeFailure, got " << e.what();
    }
  }
  {
    PlyWriter ply(dir / "x.ply", PlyEncoding::BinaryLittleEndian);
    std::vector<PlyVertex> v(20000, PlyVertex{1, 2, 3, 4});
    EXPECT_THROW(
        {
          ply.write(v.data(), v.size());
          ply.finish();
        },
        RuntimeFailure);
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(dir.entries().empty()) << "left behind: " << (dir.entries().empty() ? "" : dir.entries()[0]);
}

// ---------------------------------------------------------------------------
// AtomicFile

TEST(AtomicFile, CommitPublishesTheContentAndRemovesTheTemporary) {
  IoTempDir dir;
  const fs::path target = dir / "out.bin";
  {
    AtomicFile f(target);
    EXPECT_EQ(f.target(), target);
    EXPECT_EQ(f.temp_path().parent_path(), dir.path());
    const std::string temp_name = f.temp_path().filename().string();
    EXPECT_EQ(temp_name.rfind(".out.bin.tmp-" + std::to_string(::getpid()) + "-", 0), 0u) << temp_name;
    EXPECT_TRUE(fs::exists(f.temp_path()));
    EXPECT_FALSE(fs::exists(target)) << "nothing under the final name before commit";
    f.write("hello world", 11);
    f.seek(0);
    f.write("J", 1);
    std::fputs("!", f.handle());  // direct stdio on the same stream is allowed
    f.seek(11);
    f.commit();
    EXPECT_FALSE(fs::exists(f.temp_path()));
  }
  EXPECT_EQ(read_bytes(target), "J!llo world");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.bin"});
}

TEST(AtomicFile, TwoAtOnceGetDistinctTemporaries) {
  IoTempDir dir;
  AtomicFile a(dir / "same");
  AtomicFile b(dir / "same");
  EXPECT_NE(a.temp_path(), b.temp_path());
  a.write("a", 1);
  b.write("b", 1);
  a.commit();
  b.commit();
  EXPECT_EQ(read_bytes(dir / "same"), "b");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"same"});
}

TEST(AtomicFile, UncommittedIsRemovedEvenWhenAnExceptionUnwinds) {
  IoTempDir dir;
  write_bytes(dir / "keep.txt", "old");
  { AtomicFile f(dir / "a.txt"); }
  try {
    AtomicFile f(dir / "keep.txt");
    f.write("new content", 11);
    throw std::runtime_error("something failed half way");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"keep.txt"});
  EXPECT_EQ(read_bytes(dir / "keep.txt"), "old") << "the old file must survive an aborted rewrite";
  EXPECT_FALSE(has_temp_files(dir));
}

TEST(AtomicFile, MissingDirectoryIsAnInputErrorNamingThePath) {
  IoTempDir dir;
  const fs::path target = dir / "no" / "such" / "dir" / "f.bin";
  EXPECT_INPUT_ERROR(AtomicFile{target}, target, "does not exist");
  EXPECT_INPUT_ERROR(AtomicFile{dir.path()}, dir.path(), "directory");
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AtomicFile, RelativePathUsesTheCurrentDirectory) {
  IoTempDir dir;
  const fs::path old = fs::current_path();
  fs::current_path(dir.path());
  {
    AtomicFile f("rel.txt");
    EXPECT_EQ(f.temp_path().parent_path(), fs::path());
    f.write("x", 1);
    f.commit();
  }
  fs::current_path(old);
  EXPECT_EQ(read_bytes(dir / "rel.txt"), "x");
}

// ---------------------------------------------------------------------------
// PLY

std::vector<PlyVertex> special_vertices() {
  const float inf = std::numeric_limits<float>::infinity();
  return {
      {0.0f, -0.0, 1.0f, 0.5f, 12.0f, 0, 0},
      {1.0f / 3.0f, -2.0 / 7.0, 1e-45f, 255.0f, 65535.0f, 1, 7},                       // denormal
      {std::numeric_limits<float>::max(), std::numeric_limits<double>::lowest(), 1.17549435e-38f, 1e30f, 1.0f, 255, 65535},
      {123456.789f, -0.000123456, 3.14159265f, 0.0f, 0.0f, 3, 12},
      {inf, -std::numeric_limits<double>::infinity(), 16777217.0f, 65535.0f, 180.0f, 2, 1},
      // y is float64: frame indices past 2^24 (28 min at 10 kHz) stay exact.
      {5.0f, 16777217.0, 2.0f, 9.0f, 3.0f, 0, 4},
      {6.0f, 9007199254740991.0, 2.5f, 9.0f, 3.0f, 0, 4},
      {7.0f, 4.9406564584124654e-324, 2.5f, 9.0f, 3.0f, 0, 4},
  };
}

std::string ply_header(const fs::path& path) {
  const std::string bytes = read_bytes(path);
  const auto end = bytes.find("end_header\n");
  return end == std::string::npos ? std::string() : bytes.substr(0, end + 11);
}

// Field by field, bit-exactly (NaN, -0); PlyVertex has padding, so no memcmp.
void expect_same_vertices(const std::vector<PlyVertex>& expected, const std::vector<PlyVertex>& got) {
  ASSERT_EQ(got.size(), expected.size());
  auto same = [](auto a, auto b) { return std::memcmp(&a, &b, sizeof a) == 0; };
  for (std::size_t i = 0; i < got.size(); ++i) {
    const PlyVertex &g = got[i], &e = expected[i];
    if (!same(g.x, e.x) || !same(g.y, e.y) || !same(g.z, e.z) || !same(g.intensity, e.intensity) || !same(g.quality, e.quality) ||
        g.slot != e.slot || g.width != e.width) {
      FAIL() << "vertex " << i << ": got " << g.x << " " << g.y << " " << g.z << " " << g.intensity << " q " << g.quality << " slot "
             << int(g.slot) << " width " << g.width << ", expected " << e.x << " " << e.y << " " << e.z << " " << e.intensity << " q "
             << e.quality << " slot " << int(e.slot) << " width " << e.width;
    }
  }
}

class PlyRoundTrip : public ::testing::TestWithParam<PlyEncoding> {};

TEST_P(PlyRoundTrip, SpecialValuesSurviveBitExactly) {
  IoTempDir dir;
  const fs::path path = dir / "s.ply";
  const auto v = special_vertices();
  {
    PlyWriter w(path, GetParam(), {"made by a test", "second comment"});
    w.write(v.data(), 2);
    w.write(v.data(), 0);
    w.write(v.data() + 2, v.size() - 2);
    EXPECT_EQ(w.vertices(), v.size());
    EXPECT_FALSE(fs::exists(path)) << "nothing under the final name before finish()";
    w.finish();
  }
  expect_same_vertices(v, read_ply(path));
  const std::string header = ply_header(path);
  EXPECT_NE(header.find("\nelement vertex 8\n"), std::string::npos) << header;
  EXPECT_NE(header.find("\ncomment made by a test\ncomment second comment\n"), std::string::npos) << header;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"s.ply"});
}

TEST_P(PlyRoundTrip, NanSurvives) {
  IoTempDir dir;
  const fs::path path = dir / "nan.ply";
  const PlyVertex v{std::nanf(""), 1.0f, 2.0f, 3.0f};
  PlyWriter w(path, GetParam());
  w.write(&v, 1);
  w.finish();
  const auto got = read_ply(path);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(std::isnan(got[0].x));
  EXPECT_EQ(got[0].intensity, 3.0f);
}

TEST_P(PlyRoundTrip, ZeroVertices) {
  IoTempDir dir;
  const fs::path path = dir / "empty.ply";
  {
    PlyWriter w(path, GetParam());
    w.finish();
  }
  EXPECT_TRUE(read_ply(path).empty());
  const std::string header = ply_header(path);
  EXPECT_NE(header.find("\nelement vertex 0\n"), std::string::npos) << header;
  EXPECT_EQ(fs::file_size(path), header.size()) << "no body";
}

TEST_P(PlyRoundTrip, HundredThousandVerticesAndAnExactHeader) {
  IoTempDir dir;
  const fs::path path = dir / "big.ply";
  const fs::path small = dir / "small.ply";
  std::vector<PlyVertex> v(100003);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> d(-1000.0f, 1000.0f);
  std::uint32_t k = 0;
  for (auto& p : v) {
    p = {d(rng), d(rng) * 1e5 + 0.1234567890123, d(rng) * 1e-3f, std::floor(std::abs(d(rng))), 0.0f,
         static_cast<std::uint8_t>(k % 4), static_cast<std::uint16_t>(k * 37)};
    ++k;
  }
  {
    PlyWriter w(path, GetParam(), {"scan"});
    for (std::size_t i = 0; i < v.size(); i += 7777) w.write(v.data() + i, std::min<std::size_t>(7777, v.size() - i));
    w.finish();
    PlyWriter s(small, GetParam(), {"scan"});
    s.write(v.data(), 1);
    s.finish();
  }
  expect_same_vertices(v, read_ply(path));

  const std::string header = ply_header(path);
  const char* format =
      GetParam() == PlyEncoding::Ascii ? "format ascii 1.0\n" : "format binary_little_endian 1.0\n";
  // An ordinary header: the fixed lines in order, the real count.
  std::vector<std::string> lines;
  std::istringstream in(header);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 13u) << header;
  EXPECT_EQ(lines[0], "ply");
  EXPECT_EQ(lines[1] + "\n", format);
  EXPECT_EQ(lines[2], "comment scan");
  EXPECT_EQ(lines[3].rfind("comment ", 0), 0u) << "padding comment: " << lines[3];
  EXPECT_EQ(lines[4], "element vertex 100003");
  EXPECT_EQ(lines[5], "property float x");
  EXPECT_EQ(lines[6], "property double y");
  EXPECT_EQ(lines[7], "property float z");
  EXPECT_EQ(lines[8], "property float intensity");
  EXPECT_EQ(lines[9], "property float quality");
  EXPECT_EQ(lines[10], "property uchar slot");
  EXPECT_EQ(lines[11], "property ushort width");
  EXPECT_EQ(lines[12], "end_header");
  // The header has the same length whatever the count (rewritten in place).
  EXPECT_EQ(ply_header(small).size(), header.size());
  if (GetParam() == PlyEncoding::BinaryLittleEndian) {
    EXPECT_EQ(fs::file_size(path), header.size() + 27 * v.size()) << "packed records: 4+8+4+4+4+1+2 bytes";
    // Little-endian float x of the first vertex right after the header.
    const std::string bytes = read_bytes(path);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &v[0].x, 4);
    EXPECT_EQ(static_cast<unsigned char>(bytes[header.size()]), bits & 0xff);
    EXPECT_EQ(static_cast<unsigned char>(bytes[header.size() + 3]), bits >> 24);
  } else {
    // One line per vertex.
    const std::string bytes = read_bytes(path);
    EXPECT_EQ(static_cast<std::size_t>(std::count(bytes.begin() + static_cast<std::ptrdiff_t>(header.size()),
                                                  bytes.end(), '\n')),
              v.size());
  }
}

TEST_P(PlyRoundTrip, AbandonedWriterLeavesNothing) {
  IoTempDir dir;
  {
    PlyWriter w(dir / "a.ply", GetParam());
    const auto v = special_vertices();
    w.write(v.data(), v.size());
  }
  EXPECT_TRUE(dir.entries().empty());
  EXPECT_INPUT_ERROR(PlyWriter(dir / "nodir" / "a.ply", GetParam()), dir / "nodir" / "a.ply", "does not exist");
  EXPECT_TRUE(dir.entries().empty());
}

TEST_P(PlyRoundTrip, CommentsCannotBreakTheHeader) {
  IoTempDir dir;
  const fs::path path = dir / "c.ply";
  PlyWriter w(path, GetParam(), {"two\nlines", "end_header"});
  const PlyVertex v{1, 2, 3, 4};
  w.write(&v, 1);
  w.finish();
  const auto got = read_ply(path);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].z, 3.0f);
  EXPECT_NE(ply_header(path).find("comment two lines\n"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(PlyAll, PlyRoundTrip, ::testing::Values(PlyEncoding::BinaryLittleEndian, PlyEncoding::Ascii),
                         [](const auto& info) {
                           return info.param == PlyEncoding::Ascii ? std::string("Ascii") : std::string("Binary");
                         });

TEST(PlyRead, OtherWritersFilesAreRead) {
  IoTempDir dir;
  // ASCII with extra properties, doubles, an element before and after the vertices.
  const fs::path a = dir / "a.ply";
  write_bytes(a,
              "ply\r\nformat ascii 1.0\r\ncomment from elsewhere\r\nelement camera 1\r\nproperty float fx\r\n"
              "property list uchar int ids\r\nelement vertex 2\r\nproperty double x\r\nproperty float y\r\n"
              "property float z\r\nproperty uchar red\r\nobj_info whatever\r\nelement face 1\r\n"
              "property list uchar int vertex_indices\r\nend_header\r\n"
              "500 3 1 2 3\r\n1.5 -2 +3e2 255\r\n-0.25 1e-3 7 0\r\n3 0 1 1\r\n");
  const auto av = read_ply(a);
  ASSERT_EQ(av.size(), 2u);
  EXPECT_EQ(av[0].x, 1.5f);
  EXPECT_EQ(av[0].y, -2.0f);
  EXPECT_EQ(av[0].z, 300.0f);
  EXPECT_EQ(av[0].intensity, 0.0f) << "no intensity property: 0";
  EXPECT_EQ(av[1].x, -0.25f);
  EXPECT_EQ(av[1].y, 1e-3f);

  // Binary big-endian, intensity as ushort, an extra int property in between.
  const fs::path b = dir / "b.ply";
  std::string body;
  auto be32 = [&](std::uint32_t u) {
    for (int s = 24; s >= 0; s -= 8) body.push_back(static_cast<char>((u >> s) & 0xff));
  };
  auto bef = [&](float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    be32(u);
  };
  bef(1.25f);
  be32(77);
  bef(-8.0f);
  bef(0.5f);
  body.push_back(0x01);
  body.push_back(0x02);  // intensity 258
  write_bytes(b,
              "ply\nformat binary_big_endian 1.0\nelement vertex 1\nproperty float x\nproperty int tag\n"
              "property float y\nproperty float z\nproperty ushort intensity\nend_header\n" +
                  body);
  const auto bv = read_ply(b);
  ASSERT_EQ(bv.size(), 1u);
  EXPECT_EQ(bv[0].x, 1.25f);
  EXPECT_EQ(bv[0].y, -8.0f);
  EXPECT_EQ(bv[0].z, 0.5f);
  EXPECT_EQ(bv[0].intensity, 258.0f);
}

TEST(PlyRead, BadFilesAreInputErrors) {
  IoTempDir dir;
  const fs::path missing = dir / "missing.ply";
  EXPECT_INPUT_ERROR(read_ply(missing), missing, "not found");

  const std::vector<BadFile> files = {
      {"empty.ply", "", "empty"},
      {"notply.ply", "solid cube\n", "not a PLY"},
      {"noend.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n", "end_header"},
      {"format.ply", "ply\nformat binary_middle_endian 1.0\nend_header\n", "binary_middle_endian"},
      {"noformat.ply", "ply\nelement vertex 0\nproperty float x\nend_header\n", "format"},
      {"novertex.ply", "ply\nformat ascii 1.0\nelement face 0\nend_header\n", "no vertex"},
      {"noz.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nend_header\n1 2\n",
       "x, y or z"},
      {"listx.ply",
       "ply\nformat ascii 1.0\nelement vertex 1\nproperty list uchar float x\nproperty float y\nproperty float "
       "z\nend_header\n1 1 2 3\n",
       "list"},
      {"type.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float128 x\nend_header\n", "property"},
      {"count.ply", "ply\nformat ascii 1.0\nelement vertex many\nend_header\n", "element"},
      {"short_ascii.ply",
       "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nend_header\n"
       "1 2 3\n4 5 6\n",
       "item 2 of 3"},
      {"garbage_ascii.ply",
       "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nend_header\n"
       "1 two 3\n",
       "item 0"},
  };
  expect_bad_files(dir, files, [](const fs::path& path) { return read_ply(path); });

  // A truncated binary file.
  const fs::path cut = dir / "cut.ply";
  {
    PlyWriter w(cut, PlyEncoding::BinaryLittleEndian);
    std::vector<PlyVertex> v(10, PlyVertex{1, 2, 3, 4});
    w.write(v.data(), v.size());
    w.finish();
  }
  fs::resize_file(cut, fs::file_size(cut) - 5);
  EXPECT_INPUT_ERROR(read_ply(cut), cut, "item 9 of 10");
  // An absurd count must not allocate: it fails on the missing data.
  const fs::path absurd = dir / "absurd.ply";
  write_bytes(absurd,
              "ply\nformat binary_little_endian 1.0\nelement vertex 18446744073709551615\nproperty float x\n"
              "property float y\nproperty float z\nend_header\n" +
                  std::string(12, '\0'));
  EXPECT_INPUT_ERROR(read_ply(absurd), absurd, "item 1 of 18446744073709551615");
}

}  // namespace
}  // namespace stripeline::io

// The colour map: the anchors land where they are said to, the order in
// lightness holds (no reader sees a lower height lighter), NaN is no-data grey.
TEST(ColourMap, AnchorsOrderAndNoData) {
  const auto& map = stripeline::io::height_colour_map();
  EXPECT_EQ(map[0], (stripeline::io::Rgb8{68, 1, 84}));
  EXPECT_EQ(map[255], (stripeline::io::Rgb8{253, 231, 37}));
  auto luma = [](const stripeline::io::Rgb8& c) { return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b; };
  for (std::size_t i = 1; i < map.size(); ++i) EXPECT_GE(luma(map[i]), luma(map[i - 1])) << "entry " << i;
  EXPECT_EQ(stripeline::io::height_colour(std::nan("")), stripeline::io::kNoDataColour);
  EXPECT_EQ(stripeline::io::height_colour(-3.0), map[0]);
  EXPECT_EQ(stripeline::io::height_colour(7.0), map[255]);
  const std::string json = stripeline::io::height_colour_map_json();
  EXPECT_EQ(json.rfind("[[68,1,84],", 0), 0u);
  EXPECT_EQ(std::count(json.begin(), json.end(), '['), 257);
}
