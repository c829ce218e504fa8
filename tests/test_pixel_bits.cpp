// Significant bits (docs/data-model.md, "Significant bits"): the PixelFormat
// mapping, the file tags that say them, the inference from the data, the
// decision and what the outputs report; and the acceptance: 10-,
// 12- and 14-bit recordings in 16-bit words, TIFF and PNG, with and without
// tags, replayed with no options, meet every synthetic target of the project
// as 8-bit data do.
#include <gtest/gtest.h>

#include <tiffio.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "acquisition/camera_source.h"
#include "acquisition/file_source.h"
#include "acquisition/pixel_bits.h"
#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "extraction_eval.h"
#include "io/metadata_reader.h"
#include "io/image_reader.h"
#include "io/image_writer.h"
#include "io/recording.h"
#include "pipeline/pipeline.h"
#include "test_helpers.h"

using namespace stripeline;
using namespace stripeline::test;

namespace {

// A source that only reports a layout and what it knows about its bits.
class KnownBitsSource final : public FrameSource {
 public:
  KnownBitsSource(PixelFormat format, SignificantBits bits) : format_(format), bits_(bits) {}
  BatchLayout frame_layout() const override { return {16, 8, 0, format_}; }
  bool fill(Batch&) override { return false; }
  std::string describe() const override { return "known-bits source"; }
  SignificantBits significant_bits() const override { return bits_; }

 private:
  PixelFormat format_;
  SignificantBits bits_;
};

// 12-bit values (0..4095) in 16-bit words: the synthetic scanner's default scene.
SyntheticConfig twelve_bit_scene(std::uint64_t frames) {
  SyntheticConfig c;
  c.width = 256;
  c.frame_height = 40;
  c.frames = frames;
  c.format = PixelFormat::Mono16;
  c.bits = 12;
  return c;
}

void write_scene(const std::filesystem::path& path, const SyntheticConfig& c, bool tags) {
  SyntheticScanner scan(c);
  BatchLayout l = scan.frame_layout();
  l.frames = static_cast<int>(c.frames);
  Batch batch(l, &allocate_host);
  ASSERT_TRUE(scan.fill(batch));
  io::RecordingWriteOptions o;
  o.significant_bits = c.bits;
  o.bits_tags = tags;
  io::write_recording(path, batch.pixels.data(), l.width, l.frame_height, c.frames, l.format, o);
}

// Collects what a run tells its sinks.
class InfoSink final : public ProfileSink {
 public:
  void begin(const ScanInfo& info) override { info_ = info; }
  void consume(const ProfileSpan& p) override {
    for (int f = 0; f < p.frames; ++f)
      for (int x = 0; x < p.width; ++x) points_ += p.peaks(f, x);
  }
  void finish() override {}
  ScanInfo info_;
  std::uint64_t points_ = 0;
};

}  // namespace

TEST(PixelBits, PixelFormatNamesOfEveryTransport) {
  EXPECT_EQ(pixel_format_significant_bits("Mono8"), 8);
  EXPECT_EQ(pixel_format_significant_bits("Mono10"), 10);
  EXPECT_EQ(pixel_format_significant_bits("Mono10p"), 10);
  EXPECT_EQ(pixel_format_significant_bits("Mono10Packed"), 10);
  EXPECT_EQ(pixel_format_significant_bits("Mono12"), 12);
  EXPECT_EQ(pixel_format_significant_bits("Mono12p"), 12);
  EXPECT_EQ(pixel_format_significant_bits("Mono12Packed"), 12);
  EXPECT_EQ(pixel_format_significant_bits("Mono14"), 14);
  EXPECT_EQ(pixel_format_significant_bits("Mono14p"), 14);
  EXPECT_EQ(pixel_format_significant_bits("Mono16"), 16);
  for (const char* other : {"", "Mono", "Mono8p", "Mono16p", "Mono12x", "Mono1", "Mono120", "BayerRG12", "RGB8", "mono12"})
    EXPECT_EQ(pixel_format_significant_bits(other), 0) << other;
}

namespace {
// Aravis and GenTL cameras share CameraSource::significant_bits(): the PixelFormat the camera accepted.
class FakeCamera final : public CameraSource {
 public:
  explicit FakeCamera(std::string pixel_format) { settings_.pixel_format = std::move(pixel_format); }
  const CameraSettings& settings() const override { return settings_; }
  double loss_detection_seconds() const override { return 0.0; }
  std::string loss_reason() const override { return ""; }
  BatchLayout frame_layout() const override { return {16, 8, 0, PixelFormat::Mono16}; }
  bool fill(Batch&) override { return false; }
  std::string describe() const override { return "fake camera"; }

 private:
  CameraSettings settings_;
};
}  // namespace

TEST(PixelBits, CamerasReportTheirPixelFormatsBits) {
  EXPECT_EQ(FakeCamera("Mono12p").significant_bits(), (SignificantBits{12, BitsOrigin::Camera}));
  EXPECT_EQ(FakeCamera("Mono10").significant_bits(), (SignificantBits{10, BitsOrigin::Camera}));
  EXPECT_EQ(FakeCamera("Mono16").significant_bits(), (SignificantBits{16, BitsOrigin::Camera}));
  EXPECT_FALSE(FakeCamera("YUV422_8").significant_bits().known());
  const FakeCamera mono14("Mono14");
  EXPECT_FALSE(pixel_bits_need_data(0, mono14));
  EXPECT_EQ(decide_pixel_bits(0, mono14, std::nullopt), (SignificantBits{14, BitsOrigin::Camera}));
}

TEST(PixelBits, FewestBitsThatHoldTheHighestValue) {
  EXPECT_EQ(bits_for_max_value(0), 8);
  EXPECT_EQ(bits_for_max_value(255), 8);
  EXPECT_EQ(bits_for_max_value(256), 9);
  EXPECT_EQ(bits_for_max_value(1023), 10);
  EXPECT_EQ(bits_for_max_value(1024), 11);
  EXPECT_EQ(bits_for_max_value(3000), 12);
  EXPECT_EQ(bits_for_max_value(4095), 12);
  EXPECT_EQ(bits_for_max_value(16383), 14);
  EXPECT_EQ(bits_for_max_value(16384), 15);
  EXPECT_EQ(bits_for_max_value(65535), 16);
  EXPECT_EQ(bits_for_max_value(1u << 20), 16);
}

TEST(PixelBits, MaxPixelValueLooksAtTheFilledFramesOnly) {
  Batch b = make_batch<std::uint8_t>(8, 4, 2, 3);  // 2 filled of 3
  std::fill_n(reinterpret_cast<std::uint8_t*>(b.pixels.data()), b.layout.bytes(), std::uint8_t{0});
  px<std::uint8_t>(b, 1, 7, 3) = 200;
  px<std::uint8_t>(b, 2, 0, 0) = 255;  // beyond the filled frames
  EXPECT_EQ(max_pixel_value(b), 200u);
  BatchLayout l{5, 3, 2, PixelFormat::Mono16};
  Batch w(l, &allocate_host);
  w.frames = 2;
  std::fill_n(reinterpret_cast<std::uint16_t*>(w.pixels.data()), l.pixels(), std::uint16_t{17});
  reinterpret_cast<std::uint16_t*>(w.pixels.data())[l.pixels() - 1] = 4000;
  EXPECT_EQ(max_pixel_value(w), 4000u);
}

TEST(PixelBits, ConfigThenSourceThenFormatThenData) {
  const KnownBitsSource camera(PixelFormat::Mono16, {12, BitsOrigin::Camera});
  const KnownBitsSource unknown16(PixelFormat::Mono16, {});
  const KnownBitsSource unknown8(PixelFormat::Mono8, {});
  EXPECT_EQ(decide_pixel_bits(14, camera, std::nullopt), (SignificantBits{14, BitsOrigin::Config}));
  EXPECT_EQ(decide_pixel_bits(0, camera, 65535u), (SignificantBits{12, BitsOrigin::Camera}));
  EXPECT_EQ(decide_pixel_bits(0, unknown8, std::nullopt), (SignificantBits{8, BitsOrigin::Format}));
  EXPECT_EQ(decide_pixel_bits(0, unknown16, 1023u), (SignificantBits{10, BitsOrigin::Inferred}));
  EXPECT_EQ(decide_pixel_bits(0, unknown16, 4000u), (SignificantBits{12, BitsOrigin::Inferred}));
  EXPECT_EQ(decide_pixel_bits(0, unknown16, 60000u), (SignificantBits{16, BitsOrigin::Inferred}));
  EXPECT_EQ(decide_pixel_bits(0, unknown16, std::nullopt), (SignificantBits{16, BitsOrigin::Format}));  // no batch came
  EXPECT_FALSE(pixel_bits_need_data(12, unknown16));
  EXPECT_FALSE(pixel_bits_need_data(0, camera));
  EXPECT_FALSE(pixel_bits_need_data(0, unknown8));
  EXPECT_TRUE(pixel_bits_need_data(0, unknown16));
}

// Recordings written with their bits are read back with them, by tag; without tags nothing says them.
TEST(PixelBits, RecordingTagsAreReadBack) {
  TempDir dir;
  std::vector<std::uint16_t> px(64 * 20, 100);
  const std::vector<std::pair<std::string, BitsOrigin>> kinds = {{"r.tif", BitsOrigin::TiffTag}, {"r.png", BitsOrigin::PngSbit}, {"r.pgm", BitsOrigin::PgmMaxval}};
  for (const auto& [name, origin] : kinds)
    for (int bits : {10, 12, 14})
      for (bool tags : {true, false}) {
        io::RecordingWriteOptions o;
        o.significant_bits = bits;
        o.bits_tags = tags;
        io::write_recording(dir / name, px.data(), 64, 10, 2, PixelFormat::Mono16, o);
        const SignificantBits got = io::open_image(dir / name)->info().significant_bits;
        const std::string what = name + " " + std::to_string(bits) + (tags ? " tagged" : " untagged");
        if (tags)
          EXPECT_EQ(got, (SignificantBits{bits, origin})) << what;
        else
          EXPECT_FALSE(got.known()) << what;
      }
  io::RecordingWriteOptions bad;
  bad.significant_bits = 12;
  EXPECT_THROW(io::write_recording(dir / "b.tif", px.data(), 64, 10, 2, PixelFormat::Mono8, bad), InputError);
  bad.significant_bits = 16;
  EXPECT_THROW(io::write_recording(dir / "b.tif", px.data(), 64, 10, 2, PixelFormat::Mono16, bad), InputError);
}

// A recording whose only word is its description ({"stripeline": {"significant_bits": N}}).
TEST(PixelBits, TheRecordingsDescriptionSaysThemWithoutATag) {
  TempDir dir;
  std::vector<std::uint16_t> px(64 * 20, 100);
  for (const char* name : {"d.tif", "d.png"}) {
    io::ImageWriteOptions o;
    o.description = io::recording_description(10, 2, 12);
    io::write_image(dir / name, px.data(), 64, 20, PixelFormat::Mono16, o);
    const io::ImageInfo info = io::open_image(dir / name)->info();
    EXPECT_EQ(info.significant_bits, (SignificantBits{12, BitsOrigin::Recording})) << name;
    EXPECT_EQ(info.recorded_frame_height, 10) << name;
  }
  // Nonsense in the description says nothing.
  for (const std::string& text : {std::string("{\"stripeline\": {\"significant_bits\": 20}}"), std::string("{\"stripeline\": {\"significant_bits\": \"12\"}}"),
                                  std::string("significant_bits 12")}) {
    io::ImageWriteOptions o;
    o.description = text;
    io::write_image(dir / "n.tif", px.data(), 64, 20, PixelFormat::Mono16, o);
    EXPECT_FALSE(io::open_image(dir / "n.tif")->info().significant_bits.known()) << text;
  }
}

namespace {
// A 16- or 8-bit TIFF written by libtiff directly, with the sample-value tags given.
void write_tagged_tiff(const std::filesystem::path& path, int bps, int max_sample, double smax_sample) {
  TIFF* t = TIFFOpen(path.c_str(), "w");
  ASSERT_NE(t, nullptr);
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 16u);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, 4u);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<std::uint16_t>(bps));
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, static_cast<std::uint16_t>(1));
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, static_cast<std::uint16_t>(PHOTOMETRIC_MINISBLACK));
  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 4u);
  if (max_sample > 0) TIFFSetField(t, TIFFTAG_MAXSAMPLEVALUE, static_cast<std::uint16_t>(max_sample));
  if (smax_sample > 0) TIFFSetField(t, TIFFTAG_SMAXSAMPLEVALUE, smax_sample);
  std::vector<std::uint8_t> strip(16 * 4 * static_cast<std::size_t>(bps / 8), 0);
  ASSERT_GE(TIFFWriteEncodedStrip(t, 0, strip.data(), static_cast<tmsize_t>(strip.size())), 0);
  TIFFClose(t);
}
}  // namespace

TEST(PixelBits, TiffMaxSampleValueThenSMaxSampleValue) {
  TempDir dir;
  write_tagged_tiff(dir / "max.tif", 16, 1023, 0.0);
  EXPECT_EQ(io::open_image(dir / "max.tif")->info().significant_bits, (SignificantBits{10, BitsOrigin::TiffTag}));
  write_tagged_tiff(dir / "smax.tif", 16, 0, 16383.0);
  EXPECT_EQ(io::open_image(dir / "smax.tif")->info().significant_bits, (SignificantBits{14, BitsOrigin::TiffTag}));
  write_tagged_tiff(dir / "odd.tif", 16, 4000, 0.0);  // not 2^n - 1: the bits that hold it
  EXPECT_EQ(io::open_image(dir / "odd.tif")->info().significant_bits, (SignificantBits{12, BitsOrigin::TiffTag}));
  // A full-range value says nothing the word does not (many writers always set it): the data decide.
  write_tagged_tiff(dir / "full.tif", 16, 65535, 0.0);
  EXPECT_FALSE(io::open_image(dir / "full.tif")->info().significant_bits.known());
  write_tagged_tiff(dir / "eight.tif", 8, 127, 0.0);  // 8-bit words: the format's 8
  EXPECT_FALSE(io::open_image(dir / "eight.tif")->info().significant_bits.known());
}

// The run decides once, tells every sink and its stats; tag, inference and
// configuration give the same bits, hence the same points, on the same pixels.
TEST(PixelBits, PipelineDecidesBeforeTheFirstBatchAndTellsTheSinks) {
  TempDir dir;
  const SyntheticConfig scene = twelve_bit_scene(24);
  write_scene(dir / "tagged.tif", scene, true);
  write_scene(dir / "untagged.tif", scene, false);
  write_scene(dir / "untagged.png", scene, false);
  struct Case {
    std::string file;
    int configured;
    SignificantBits expected;
  };
  const std::vector<Case> cases = {{"tagged.tif", 0, {12, BitsOrigin::TiffTag}},
                                   {"untagged.tif", 0, {12, BitsOrigin::Inferred}},
                                   {"untagged.png", 0, {12, BitsOrigin::Inferred}},
                                   {"untagged.tif", 12, {12, BitsOrigin::Config}},
                                   {"untagged.tif", 16, {16, BitsOrigin::Config}}};
  std::uint64_t points_at_12 = 0;
  for (const Case& c : cases) {
    FileSourceConfig fc;
    fc.path = dir / c.file;
    fc.frame_height = scene.frame_height;
    FileSource source(fc);
    PipelineOptions po;
    po.backend = Backend::Cpu;
    po.batch_frames = 10;  // the first batch is not the whole file: the rest flows after it
    po.chain.adaptive.pixel_bits = c.configured;
    InfoSink sink;
    const PipelineStats s = Pipeline(po).run(source, {&sink});
    const std::string what = c.file + " configured " + std::to_string(c.configured);
    EXPECT_EQ(s.pixel_bits, c.expected) << what;
    EXPECT_EQ(sink.info_.pixel_bits, c.expected) << what;
    EXPECT_EQ(sink.info_.chain.adaptive.pixel_bits, c.expected.bits) << what;
    EXPECT_EQ(s.frames, scene.frames) << what;
    EXPECT_EQ(sink.points_, s.points) << what;
    if (c.expected.bits == 12) {
      EXPECT_GT(s.points, scene.frames * scene.width * 9 / 10) << what;
      if (points_at_12 == 0) points_at_12 = s.points;
      EXPECT_EQ(s.points, points_at_12) << what;
    } else {
      EXPECT_LT(s.points, scene.frames * scene.width / 10) << what << ": 16 bits on 12-bit data: the contrast floor is above the stripe";
    }
  }
}

// The acceptance: every synthetic hard case, rendered at 10, 12 and 14
// bits in 16-bit words, written as TIFF and PNG with and without the tags, and
// replayed with no options, meets the targets DefaultExtraction holds 8-bit
// data to (tests/test_extraction_accuracy.cpp); the bits used are the truth's,
// from the tag or inferred from the first batch.
class SignificantBitsReplay : public ::testing::TestWithParam<int> {};

TEST_P(SignificantBitsReplay, EverySyntheticTargetHoldsWithNoOptions) {
  const int bits = GetParam();
  TempDir dir;
  for (const char* ext : {".tif", ".png"})
    for (bool tags : {true, false}) {
      double worst_rms = 0.0, worst_detected = 100.0, worst_outliers = 0.0, worst_false = 0.0;
      std::string bits_seen;
      for (const HardCase& hc : hard_cases(bits, 60)) {
        SignificantBits used;
        const TruthScore s = score_replayed(hc.config, ChainConfig{}, dir / (std::string("rec") + ext), tags, used);
        const std::string what = hc.name + " at " + std::to_string(bits) + " bits, " + ext + (tags ? " tagged" : " untagged");
        const SignificantBits expected{bits, tags ? (std::string(ext) == ".tif" ? BitsOrigin::TiffTag : BitsOrigin::PngSbit) : BitsOrigin::Inferred};
        EXPECT_EQ(used, expected) << what << ": got " << used.bits << " bits (" << to_string(used.origin) << ")";
        if (bits_seen.find(std::to_string(used.bits)) == std::string::npos)
          bits_seen += (bits_seen.empty() ? "" : ",") + std::to_string(used.bits);
        ASSERT_GT(s.expected, 1000u) << what;
        EXPECT_LE(s.rms(), kTruthTargets.rms_px) << what;
        EXPECT_GE(s.detection_percent(), kTruthTargets.detection_percent) << what;
        EXPECT_LE(s.outlier_percent(), kTruthTargets.outlier_percent) << what;
        if (s.occluded > 0) EXPECT_LE(s.false_percent(), kTruthTargets.false_percent) << what;
        worst_rms = std::max(worst_rms, s.rms());
        worst_detected = std::min(worst_detected, s.detection_percent());
        worst_outliers = std::max(worst_outliers, s.outlier_percent());
        if (s.occluded > 0) worst_false = std::max(worst_false, s.false_percent());
      }
      std::printf("%d-bit %s %s: worst RMS %.4f px, detected %.2f %%, beyond 1 px %.3f %%, false in occluded %.3f %%; bits used %s (%s)\n", bits,
                  ext + 1, tags ? "tagged" : "untagged", worst_rms, worst_detected, worst_outliers, worst_false, bits_seen.c_str(),
                  tags ? (std::string(ext) == ".tif" ? "tiff-tag" : "png-sbit") : "inferred");
    }
}
INSTANTIATE_TEST_SUITE_P(Depth, SignificantBitsReplay, ::testing::Values(10, 12, 14), [](const auto& info) { return std::to_string(info.param) + "bit"; });

namespace {
std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}
std::uint64_t summary_points(const std::string& json) {
  const auto at = json.find("\"points\": ");
  return at == std::string::npos ? 0 : std::stoull(json.substr(at + 10));
}
}  // namespace

// The case: 12-bit values in a 16-bit TIFF gave 0 points with the
// defaults. Now points, and every output says which bits and why.
TEST(PixelBits, ReplayOfA12BitTiffGivesPointsWithNoOptions) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(run_cli("synth " + (dir / "u.tif").string() + " --width 512 --frame-height 52 --frames 30 --depth 12 --no-bits-tags", &out), 0) << out;
  ASSERT_EQ(run_cli("synth " + (dir / "t.tif").string() + " --width 512 --frame-height 52 --frames 30 --depth 12", &out), 0) << out;
  EXPECT_NE(out.find("12 significant bits"), std::string::npos) << out;
  const std::uint64_t cells = 30 * 512;
  struct Case {
    std::string file, flags, origin;
    int bits;
  };
  for (const Case& c : {Case{"u.tif", "", "inferred", 12}, Case{"t.tif", "", "tiff-tag", 12}, Case{"u.tif", " --pixel-bits 12", "config", 12}}) {
    const std::string what = c.file + c.flags;
    ASSERT_EQ(run_cli("replay " + (dir / c.file).string() + " -H 52 -q --summary " + (dir / "s.json").string() + " --ascii --ply " +
                          (dir / "r.ply").string() + " --heightmap " + (dir / "h.tif").string() + c.flags,
                      &out),
              0)
        << what << ": " << out;
    if (c.origin == "inferred")
      EXPECT_NE(out.find("pixel bits: 12 inferred from the first batch's highest value"), std::string::npos) << what << ": " << out;
    else
      EXPECT_EQ(out.find("inferred"), std::string::npos) << what << ": " << out;
    EXPECT_EQ(out.find("right frame height"), std::string::npos) << what << ": " << out;
    const std::string summary = read_all(dir / "s.json");
    EXPECT_GT(summary_points(summary), cells * 9 / 10) << what << ": " << summary;
    // Every output's metadata document (core/metadata.h) says the bits and why.
    for (const char* file : {"s.json", "r.ply", "h.tif"}) {
      const metadata::Json d = io::read_metadata(dir / file);
      EXPECT_EQ(d.value("pixel_bits", 0), 12) << what << ": " << file << ": " << d.dump();
      EXPECT_EQ(d.value("pixel_bits_origin", std::string()), c.origin) << what << ": " << file << ": " << d.dump();
    }
  }
  // 16 bits asked of 12-bit data: (almost) no points, and the coverage warning names the bits.
  ASSERT_EQ(run_cli("replay " + (dir / "u.tif").string() + " -H 52 -q --summary " + (dir / "s.json").string() + " --pixel-bits 16", &out), 0) << out;
  EXPECT_LT(summary_points(read_all(dir / "s.json")), cells / 10);
  EXPECT_NE(out.find("Or are 16 significant bits (config) more than the pixels hold?"), std::string::npos) << out;
}

TEST(PixelBits, BadValuesAreOneLineAndExitTwo) {
  TempDir dir;
  ASSERT_EQ(run_cli("synth " + (dir / "u.tif").string() + " --width 64 --frame-height 20 --frames 4 --depth 12 --no-bits-tags"), 0);
  ASSERT_EQ(run_cli("synth " + (dir / "e.tif").string() + " --width 64 --frame-height 20 --frames 4"), 0);
  struct Case {
    std::string args, message;
  };
  const std::string ply = " --ply " + (dir / "bad.ply").string();
  const std::vector<Case> cases = {
      {"replay " + (dir / "u.tif").string() + " -H 20 --pixel-bits 20" + ply, "--pixel-bits: processing.pixel_bits: 20 is out of range (expected 0 (from the camera, the file or the data) or 8..16)"},
      {"replay " + (dir / "u.tif").string() + " -H 20 --pixel-bits 7" + ply, "--pixel-bits: processing.pixel_bits: 7 is out of range"},
      {"replay " + (dir / "e.tif").string() + " -H 20 --pixel-bits 12" + ply, "pixel_bits = 12 is out of range (expected 0 or 8 for Mono8)"},
      {"run -q -o " + (dir / "run").string() + " --pixel-bits 17", "--pixel-bits: processing.pixel_bits: 17 is out of range"},
      {"synth " + (dir / "x.tif").string() + " --depth 11", "--depth 11 is not supported (expected 8, 10, 12, 14 or 16)"},
  };
  for (const Case& c : cases) {
    std::string err;
    EXPECT_EQ(run_cli(c.args, &err), 2) << c.args << ": " << err;
    EXPECT_NE(err.find(c.message), std::string::npos) << c.args << ": " << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << c.args << ": " << err;
    EXPECT_FALSE(std::filesystem::exists(dir / "bad.ply")) << c.args;
    EXPECT_FALSE(std::filesystem::exists(dir / "x.tif")) << c.args;
    EXPECT_FALSE(std::filesystem::exists(dir / "run")) << c.args;
  }
}
