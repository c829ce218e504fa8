// Colour recordings: RGB(A) PNG and TIFF read as grey through a channel
// choice (io/channel_mix.h), exact integer weights, the same frames as a grey
// recording of the laser's channel.
#include <gtest/gtest.h>
#include <png.h>
#include <tiffio.h>

#include <cstring>
#include <limits>
#include <vector>

#include "acquisition/file_source.h"
#include "core/errors.h"
#include "io/channel_mix.h"
#include "io/image_reader.h"
#include "test_helpers.h"

using namespace stripeline;
using test::TempDir;

namespace {

constexpr int kW = 37, kH = 24;

// A stripe in red, a different pattern in green, a ramp in blue, alpha 200.
std::uint32_t channel_value(int c, int x, int y, std::uint32_t full) {
  switch (c) {
    case 0: return std::abs(y - (8 + x % 5)) <= 1 ? full : full / 16;  // the laser line
    case 1: return (x * 7 + y * 3) % (full + 1);
    case 2: return (x + y) * full / (kW + kH);
    default: return full * 200 / 255;
  }
}

// A kW x kH image of `channels` interleaved channels of T, full scale T's maximum.
template <class T>
std::vector<T> interleaved(int channels) {
  const int full = std::numeric_limits<T>::max();
  std::vector<T> v(static_cast<std::size_t>(kW) * kH * channels);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x)
      for (int c = 0; c < channels; ++c) v[(static_cast<std::size_t>(y) * kW + x) * channels + c] = static_cast<T>(channel_value(c, x, y, full));
  return v;
}
std::vector<std::uint8_t> rgb8(int channels) { return interleaved<std::uint8_t>(channels); }
std::vector<std::uint16_t> rgb16(int channels) { return interleaved<std::uint16_t>(channels); }

void write_png(const std::filesystem::path& path, int channels, bool bits16) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = kW;
  image.height = kH;
  image.format = (channels == 4 ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB) | (bits16 ? PNG_FORMAT_FLAG_LINEAR : 0u);
  if (bits16) {
    auto v = rgb16(channels);
    ASSERT_NE(png_image_write_to_file(&image, path.c_str(), 0, v.data(), 0, nullptr), 0) << image.message;
  } else {
    auto v = rgb8(channels);
    ASSERT_NE(png_image_write_to_file(&image, path.c_str(), 0, v.data(), 0, nullptr), 0) << image.message;
  }
}

void write_tiff(const std::filesystem::path& path, int channels, bool bits16) {
  TIFF* t = TIFFOpen(path.c_str(), "w");
  ASSERT_NE(t, nullptr);
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, kW);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, kH);
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, channels);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bits16 ? 16 : 8);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 5);
  if (channels == 4) {
    const std::uint16_t extra = EXTRASAMPLE_UNASSALPHA;
    TIFFSetField(t, TIFFTAG_EXTRASAMPLES, 1, &extra);
  }
  const auto v8 = rgb8(channels);
  const auto v16 = rgb16(channels);
  for (int y = 0; y < kH; ++y) {
    const void* row = bits16 ? static_cast<const void*>(v16.data() + static_cast<std::size_t>(y) * kW * channels)
                             : static_cast<const void*>(v8.data() + static_cast<std::size_t>(y) * kW * channels);
    ASSERT_EQ(TIFFWriteScanline(t, const_cast<void*>(row), static_cast<std::uint32_t>(y), 0), 1);
  }
  TIFFClose(t);
}

// What the reader must return: (wr R + wg G + wb B + 128) >> 8 per pixel.
std::vector<std::uint32_t> expected_grey(const io::ChannelMix& m, bool bits16) {
  const std::uint32_t full = bits16 ? 65535 : 255;
  std::vector<std::uint32_t> g(static_cast<std::size_t>(kW) * kH);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x)
      g[static_cast<std::size_t>(y) * kW + x] = (m.weights[0] * channel_value(0, x, y, full) + m.weights[1] * channel_value(1, x, y, full) +
                                                 m.weights[2] * channel_value(2, x, y, full) + 128) >> 8;
  return g;
}

std::vector<std::uint32_t> read_grey(const std::filesystem::path& path, const io::ChannelMix& m) {
  io::ImageReadOptions o;
  o.channel = m;
  auto r = io::open_image(path, io::ImageFileFormat::Auto, std::nullopt, o);
  EXPECT_EQ(r->info().width, kW);
  EXPECT_EQ(r->info().height, kH);
  const bool bits16 = r->info().format == PixelFormat::Mono16;
  std::vector<std::byte> raw(static_cast<std::size_t>(kW) * kH * (bits16 ? 2 : 1));
  r->read_rows(raw.data(), kH / 2);  // two calls: the row position carries over
  r->read_rows(raw.data() + raw.size() / kH * (kH / 2), kH - kH / 2);
  std::vector<std::uint32_t> g(static_cast<std::size_t>(kW) * kH);
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (bits16) {
      std::uint16_t v;
      std::memcpy(&v, raw.data() + 2 * i, 2);
      g[i] = v;
    } else {
      g[i] = static_cast<std::uint8_t>(raw[i]);
    }
  }
  return g;
}

}  // namespace

TEST(ChannelMix, NamesAndWeightsGiveIntegerWeightsSumming256) {
  EXPECT_EQ(io::parse_channel_mix("red").weights, (std::array<std::uint32_t, 3>{256, 0, 0}));
  EXPECT_EQ(io::parse_channel_mix("green").weights, (std::array<std::uint32_t, 3>{0, 256, 0}));
  EXPECT_EQ(io::parse_channel_mix("blue").weights, (std::array<std::uint32_t, 3>{0, 0, 256}));
  EXPECT_EQ(io::parse_channel_mix("luma").weights, (std::array<std::uint32_t, 3>{77, 150, 29}));
  EXPECT_EQ(io::ChannelMix{}.name, "luma");  // the documented default
  for (const char* w : {"1,1,1", "0.8,0.2,0", "3,0,1", "0.299,0.587,0.114"}) {
    const auto m = io::parse_channel_mix(w);
    EXPECT_EQ(m.weights[0] + m.weights[1] + m.weights[2], 256u) << w;
  }
  EXPECT_EQ(io::parse_channel_mix("1,1,0").weights, (std::array<std::uint32_t, 3>{128, 128, 0}));
  for (const char* bad : {"purple", "", "1,1", "1,1,1,1", "-1,1,1", "0,0,0", "a,b,c", "1,,1", "nan,1,1"}) {
    try {
      io::parse_channel_mix(bad, "--channel");
      FAIL() << "accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--channel"), std::string::npos) << e.what();
    }
  }
}

TEST(ColourRecordings, PngAndTiffRgbAndRgbaAt8And16BitsGiveTheMixedGreyExactly) {
  TempDir dir;
  for (bool bits16 : {false, true})
    for (int channels : {3, 4})
      for (bool tiff : {false, true}) {
        // libpng's simplified writer premultiplies 16-bit colour by alpha, so
        // a 16-bit RGBA PNG written here would not hold the planned values.
        if (!tiff && bits16 && channels == 4) continue;
        const auto path = dir / ("c" + std::to_string(channels) + (bits16 ? "_16" : "_8") + (tiff ? ".tif" : ".png"));
        if (tiff)
          write_tiff(path, channels, bits16);
        else
          write_png(path, channels, bits16);
        for (const char* name : {"red", "green", "luma", "0.6,0.3,0.1"}) {
          const auto m = io::parse_channel_mix(name);
          EXPECT_EQ(read_grey(path, m), expected_grey(m, bits16)) << path << " channel " << name;
        }
      }
}

TEST(ColourRecordings, TheRedChannelOfAColourRecordingReplaysLikeItsGreyCopy) {
  // The file source with channel = red gives the frames the red plane holds.
  TempDir dir;
  write_png(dir / "rgb.png", 3, false);
  FileSourceConfig c;
  c.path = dir / "rgb.png";
  c.frame_height = kH / 2;
  c.channel = io::parse_channel_mix("red");
  FileSource source(c);
  Batch b({kW, kH / 2, 2, PixelFormat::Mono8}, &allocate_host);
  ASSERT_TRUE(source.fill(b));
  ASSERT_EQ(b.frames, 2);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x)
      ASSERT_EQ(static_cast<std::uint32_t>(static_cast<std::uint8_t>(b.pixels.data()[static_cast<std::size_t>(y) * kW + x])), channel_value(0, x, y, 255))
          << x << "," << y;
}

TEST(ColourRecordings, PaletteTiledAndPlanarColourFilesAreRefusedNamingTheFile) {
  TempDir dir;
  const auto planar = dir / "planar.tif";
  TIFF* t = TIFFOpen(planar.c_str(), "w");
  ASSERT_NE(t, nullptr);
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 4);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, 4);
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 3);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_SEPARATE);
  std::uint8_t row[4] = {1, 2, 3, 4};
  for (std::uint16_t s = 0; s < 3; ++s)
    for (std::uint32_t y = 0; y < 4; ++y) TIFFWriteScanline(t, row, y, s);
  TIFFClose(t);
  try {
    io::open_image(planar);
    FAIL() << "planar colour TIFF accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("planar.tif"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("separate planes"), std::string::npos) << e.what();
  }
}
