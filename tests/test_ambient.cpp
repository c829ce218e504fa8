// Ambient-light suppression with laser-off frames (stages/ambient.h): a dark
// frame subtracted from every frame, or laser-on/off pairs turned into one
// frame each, on the host before any backend.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "pipeline/pipeline.h"
#include "stages/ambient.h"
#include "test_helpers.h"

using namespace stripeline;

namespace {

constexpr int kW = 53, kH = 20;

// A bright, uneven, per-frame-changing background: what a fixed threshold
// cannot cope with, and what the laser-off frame holds exactly.
std::uint32_t ambient(int x, int y, int pair, std::uint32_t full) { return (full / 3) * ((x * 5 + y * 11 + pair * 7) % 13) / 12; }
std::uint32_t stripe(int x, int y, std::uint32_t full) {
  const int centre = 6 + x % 9;
  const int d = std::abs(y - centre);
  return d == 0 ? full / 2 : d == 1 ? full / 4 : 0;
}

template <class T>
void put(Batch& b, int f, int x, int y, std::uint32_t v) {
  reinterpret_cast<T*>(b.frame_data(f))[static_cast<std::size_t>(y) * b.layout.width + x] = static_cast<T>(v);
}
template <class T>
std::uint32_t get(const Batch& b, int f, int x, int y) {
  return reinterpret_cast<const T*>(b.frame_data(f))[static_cast<std::size_t>(y) * b.layout.width + x];
}

// Frames 2k (laser on: stripe + ambient of pair k) and 2k+1 (laser off:
// ambient of pair k).
template <class T>
void fill_alternating(Batch& b, int frames, std::uint32_t full) {
  b.frames = frames;
  for (int f = 0; f < frames; ++f) {
    b.meta[static_cast<std::size_t>(f)] = FrameMeta{static_cast<std::uint64_t>(100 + f), 1000 * f, 7 * f, true, false};
    for (int y = 0; y < kH; ++y)
      for (int x = 0; x < kW; ++x) put<T>(b, f, x, y, ambient(x, y, f / 2, full) + (f % 2 == 0 ? stripe(x, y, full) : 0));
  }
}

}  // namespace

TEST(Ambient, AlternateFramesBecomeOnMinusOffWithTheLaserOnFramesMetadata) {
  for (PixelFormat format : {PixelFormat::Mono8, PixelFormat::Mono16}) {
    const std::uint32_t full = format == PixelFormat::Mono8 ? 255 : 65535;
    Batch b({kW, kH, 8, format}, &allocate_host);
    if (format == PixelFormat::Mono8)
      fill_alternating<std::uint8_t>(b, 7, full);  // 3 pairs and one unpaired frame
    else
      fill_alternating<std::uint16_t>(b, 7, full);
    b.meta[3].missing = true;  // the laser-off frame of pair 1
    AmbientConfig c;
    c.mode = AmbientMode::Alternate;
    AmbientSuppressor a(c, b.layout);
    EXPECT_EQ(a.apply(b), 4u);
    ASSERT_EQ(b.frames, 3);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(b.meta[static_cast<std::size_t>(k)].frame_id, static_cast<std::uint64_t>(100 + 2 * k));
      EXPECT_EQ(b.meta[static_cast<std::size_t>(k)].encoder, 7 * 2 * k);
      EXPECT_EQ(b.meta[static_cast<std::size_t>(k)].missing, k == 1) << "a pair with a missing frame is missing";
      for (int y = 0; y < kH; ++y)
        for (int x = 0; x < kW; ++x) {
          const std::uint32_t v = format == PixelFormat::Mono8 ? get<std::uint8_t>(b, k, x, y) : get<std::uint16_t>(b, k, x, y);
          ASSERT_EQ(v, stripe(x, y, full)) << "pair " << k << " at " << x << "," << y;
        }
    }
  }
}

TEST(Ambient, OffFirstPairsAndSaturationAtZero) {
  Batch b({kW, kH, 4, PixelFormat::Mono8}, &allocate_host);
  fill_alternating<std::uint8_t>(b, 4, 255);
  // As (off, on) pairs, frames 0 and 2 hold the stripe: on - off saturates.
  AmbientConfig c;
  c.mode = AmbientMode::Alternate;
  c.off_first = true;
  AmbientSuppressor(c, b.layout).apply(b);
  ASSERT_EQ(b.frames, 2);
  EXPECT_EQ(b.meta[0].frame_id, 101u);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) ASSERT_EQ(get<std::uint8_t>(b, 0, x, y), 0u) << "off minus on must saturate at 0";
}

TEST(Ambient, DarkFrameIsSubtractedFromEveryFrameButMissingOnes) {
  Batch b({kW, kH, 3, PixelFormat::Mono16}, &allocate_host);
  b.frames = 3;
  auto dark = std::make_shared<DarkFrame>();
  dark->origin = "dark.png";
  dark->width = kW;
  dark->height = kH;
  dark->format = PixelFormat::Mono16;
  dark->pixels.resize(static_cast<std::size_t>(kW) * kH * 2);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) {
      const auto v = static_cast<std::uint16_t>(ambient(x, y, 0, 65535));
      std::memcpy(dark->pixels.data() + (static_cast<std::size_t>(y) * kW + x) * 2, &v, 2);
      for (int f = 0; f < 3; ++f) put<std::uint16_t>(b, f, x, y, ambient(x, y, 0, 65535) + stripe(x, y, 65535));
    }
  b.meta[2].missing = true;
  AmbientConfig c;
  c.mode = AmbientMode::DarkFrame;
  c.dark = dark;
  EXPECT_EQ(AmbientSuppressor(c, b.layout).apply(b), 0u);
  EXPECT_EQ(b.frames, 3);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) {
      ASSERT_EQ(get<std::uint16_t>(b, 0, x, y), stripe(x, y, 65535));
      ASSERT_EQ(get<std::uint16_t>(b, 1, x, y), stripe(x, y, 65535));
      ASSERT_EQ(get<std::uint16_t>(b, 2, x, y), ambient(x, y, 0, 65535) + stripe(x, y, 65535)) << "a missing frame is left alone";
    }
  // A reference of another geometry is refused naming it.
  dark->width = kW - 1;
  try {
    AmbientSuppressor(c, b.layout);
    FAIL() << "a dark frame of the wrong width was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("dark.png"), std::string::npos) << e.what();
  }
}

TEST(Ambient, ConfigurationErrorsNameTheKey) {
  EXPECT_THROW(parse_ambient_mode("laser-off"), ConfigError);
  PipelineOptions o;
  o.ambient.mode = AmbientMode::DarkFrame;
  EXPECT_THROW(o.validate(), ConfigError);
  o.ambient.mode = AmbientMode::Alternate;
  o.batch_frames = 301;
  try {
    o.validate();
    FAIL() << "odd batch_frames accepted with alternate frames";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("batch_frames"), std::string::npos) << e.what();
  }
}

// Through the pipeline, on every backend present: alternate frames under a
// changing ambient light give exactly the profiles of the clean stripe, and
// the laser-off frames are counted, not turned into profiles.
TEST(Ambient, PipelineWithAlternateFramesMatchesTheCleanStripe) {
  class AlternatingSource final : public FrameSource {
   public:
    explicit AlternatingSource(bool with_ambient) : with_ambient_(with_ambient) {}
    BatchLayout frame_layout() const override { return {kW, kH, 1, PixelFormat::Mono8}; }
    bool fill(Batch& b) override {
      if (sent_ >= 40) return false;
      b.frames = std::min(b.layout.frames, 40 - sent_);
      for (int f = 0; f < b.frames; ++f) {
        const int g = sent_ + f;  // global frame
        b.meta[static_cast<std::size_t>(f)] = FrameMeta{static_cast<std::uint64_t>(g), g, 0, false, false};
        for (int y = 0; y < kH; ++y)
          for (int x = 0; x < kW; ++x)
            put<std::uint8_t>(b, f, x, y, (with_ambient_ ? ambient(x, y, g / 2, 255) : 0) + (g % 2 == 0 ? stripe(x, y, 255) : 0));
      }
      sent_ += b.frames;
      return true;
    }
    std::string describe() const override { return "alternating"; }

   private:
    bool with_ambient_;
    int sent_ = 0;
  };
  class Rows final : public ProfileSink {
   public:
    void begin(const ScanInfo&) override {}
    void consume(const ProfileSpan& p) override {
      for (int f = 0; f < p.frames; ++f)
        for (int x = 0; x < p.width; ++x) rows.push_back(p.primary(f, x));
    }
    void finish() override {}
    std::vector<std::int32_t> rows;
  };
  for (Backend backend : {Backend::Cpu, Backend::Auto}) {
    PipelineOptions o;
    o.backend = backend;
    o.batch_frames = 10;
    o.chain.column.method = ColumnMethod::Cog;  // a fixed threshold: the ambient light alone would fool it
    o.chain.blur_size = 0;
    o.ambient.mode = AmbientMode::Alternate;
    AlternatingSource lit(true);
    Rows got;
    const PipelineStats s = Pipeline(o).run(lit, {&got});
    EXPECT_EQ(s.profiles, 20u);
    EXPECT_EQ(s.ambient_frames, 20u);
    AlternatingSource dark(false);  // the same frames without ambient light
    Rows want;
    Pipeline(o).run(dark, {&want});
    EXPECT_EQ(got.rows, want.rows) << to_string(s.backend);
    std::size_t found = 0;
    for (auto r : want.rows) found += r != kNoPeak;
    EXPECT_EQ(found, want.rows.size()) << "the stripe is in every column";
  }
}
