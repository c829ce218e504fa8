// Tests of acquisition/: the synthetic scanner (known truth, deterministic
// rendering) and the file replay source (round trip through io/).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "acquisition/file_source.h"
#include "acquisition/synthetic_scanner.h"
#include "core/batch.h"
#include "core/errors.h"
#include "io/image_writer.h"
#include "test_helpers.h"

namespace stripeline {
namespace {

namespace fs = std::filesystem;

Batch make_batch(const BatchLayout& frame_layout, int capacity) { return test::make_poisoned_batch(frame_layout, capacity); }

std::vector<std::byte> render_frame(const SyntheticScanner& s, std::uint64_t frame) {
  const BatchLayout l = s.frame_layout();
  std::vector<std::byte> out(l.frame_pixels() * bytes_per_pixel(l.format), std::byte{0x5A});
  s.render(frame, out.data());
  return out;
}

// All frames of a source, concatenated, read with batches of `capacity`.
struct Drained {
  std::vector<std::byte> pixels;
  std::vector<FrameMeta> meta;
  std::vector<int> batch_frames;
};

Drained drain(FrameSource& src, int capacity, int max_batches = 1000) {
  Drained d;
  Batch b = make_batch(src.frame_layout(), capacity);
  for (int k = 0; k < max_batches; ++k) {
    const bool got = src.fill(b);
    if (!got) {
      EXPECT_EQ(b.frames, 0);
      return d;
    }
    EXPECT_GT(b.frames, 0);
    EXPECT_LE(b.frames, capacity);
    d.batch_frames.push_back(b.frames);
    d.pixels.insert(d.pixels.end(), b.pixels.data(), b.pixels.data() + b.filled_bytes());
    d.meta.insert(d.meta.end(), b.meta.begin(), b.meta.begin() + b.frames);
  }
  ADD_FAILURE() << "source did not end within " << max_batches << " batches";
  return d;
}

SyntheticConfig quiet_config() {
  SyntheticConfig c;
  c.width = 301;
  c.frame_height = 52;
  c.frames = 40;
  c.noise = 0.0;
  c.speckle = 0.0;
  return c;
}

int pixel(const std::vector<std::byte>& frame, PixelFormat f, int width, int x, int y) {
  const std::size_t i = static_cast<std::size_t>(y) * width + x;
  if (f == PixelFormat::Mono8) return static_cast<int>(reinterpret_cast<const std::uint8_t*>(frame.data())[i]);
  return static_cast<int>(reinterpret_cast<const std::uint16_t*>(frame.data())[i]);
}

// ---------------------------------------------------------------------------
// Synthetic scanner

TEST(SyntheticScanner, RenderIsDeterministic) {
  SyntheticConfig c;
  c.width = 333;
  c.frame_height = 41;
  const SyntheticScanner a(c), b(c);
  for (std::uint64_t f : {0ull, 1ull, 77ull, 599ull, 123456ull}) {
    const auto first = render_frame(a, f);
    EXPECT_EQ(first, render_frame(a, f)) << "frame " << f;
    EXPECT_EQ(first, render_frame(b, f)) << "frame " << f;
  }
  // A different seed gives different noise.
  SyntheticConfig c2 = c;
  c2.seed = 2;
  EXPECT_NE(render_frame(a, 3), render_frame(SyntheticScanner(c2), 3));
}

TEST(SyntheticScanner, TruthIsPureAndInsideTheFrame) {
  SyntheticConfig c;
  c.width = 517;
  c.frame_height = 52;
  const SyntheticScanner a(c), b(c);
  const double margin = 4 * c.beam_sigma + 2;
  std::size_t occluded = 0, total = 0;
  for (std::uint64_t f = 0; f < 1300; f += 7) {
    for (int x = 0; x < c.width; ++x) {
      const double t = a.truth(f, x);
      const double t2 = b.truth(f, x);
      ++total;
      if (std::isnan(t)) {
        EXPECT_TRUE(std::isnan(t2));
        ++occluded;
        continue;
      }
      ASSERT_EQ(t, t2) << "frame " << f << " column " << x;
      ASSERT_GE(t, margin) << "frame " << f << " column " << x;
      ASSERT_LE(t, c.frame_height - 1 - margin) << "frame " << f << " column " << x;
    }
  }
  const double fraction = static_cast<double>(occluded) / total;
  EXPECT_NEAR(fraction, c.occlusion, 0.02);
  EXPECT_TRUE(std::isnan(a.truth(0, -1)));
  EXPECT_TRUE(std::isnan(a.truth(0, c.width)));
}

TEST(SyntheticScanner, SurfaceHasStepsSlopesAndVariesAlongFrames) {
  SyntheticConfig c;
  c.width = 2048;
  c.occlusion = 0.0;
  const SyntheticScanner s(c);
  // Steps: some jumps of more than 3 rows between neighbouring columns.
  int steps = 0;
  double max_slope = 0;
  for (int x = 1; x < c.width; ++x) {
    const double d = std::abs(s.truth(100, x) - s.truth(100, x - 1));
    if (d > 3.0) ++steps;
    else max_slope = std::max(max_slope, d);
  }
  EXPECT_GE(steps, 2);
  EXPECT_GT(max_slope, 0.005);
  // Along the frames the profile changes.
  int changed = 0;
  for (int x = 0; x < c.width; ++x)
    if (std::abs(s.truth(100, x) - s.truth(300, x)) > 1.0) ++changed;
  EXPECT_GT(changed, c.width / 20);
}

TEST(SyntheticScanner, FillWithAnyBatchSizeGivesTheSamePixels) {
  SyntheticConfig c;
  c.width = 173;  // odd sizes
  c.frame_height = 23;
  c.frames = 50;
  c.frame_rate = 3000.0;
  c.encoder_step = -3;
  std::vector<Drained> runs;
  for (int capacity : {1, 7, 64}) {
    SyntheticScanner s(c);
    ASSERT_EQ(s.total_frames(), std::optional<std::uint64_t>(50));
    runs.push_back(drain(s, capacity));
  }
  ASSERT_EQ(runs[0].meta.size(), 50u);
  EXPECT_EQ(runs[1].batch_frames, (std::vector<int>{7, 7, 7, 7, 7, 7, 7, 1}));
  EXPECT_EQ(runs[2].batch_frames, (std::vector<int>{50}));
  for (const Drained& d : runs) {
    EXPECT_EQ(d.pixels, runs[0].pixels);
    ASSERT_EQ(d.meta.size(), 50u);
    for (std::size_t i = 0; i < d.meta.size(); ++i) {
      EXPECT_EQ(d.meta[i].frame_id, i);
      EXPECT_EQ(d.meta[i].timestamp_ns, std::llround(i * 1e9 / 3000.0));
      EXPECT_EQ(d.meta[i].encoder, -3 * static_cast<std::int64_t>(i));
      EXPECT_TRUE(d.meta[i].has_encoder);
      EXPECT_FALSE(d.meta[i].missing);
    }
  }
  // The batch pixels are exactly render()'s.
  const SyntheticScanner s(c);
  const std::size_t fb = static_cast<std::size_t>(c.width) * c.frame_height;
  for (std::uint64_t f : {0ull, 13ull, 49ull}) {
    const auto r = render_frame(s, f);
    EXPECT_TRUE(std::equal(r.begin(), r.end(), runs[1].pixels.begin() + static_cast<std::ptrdiff_t>(f * fb)))
        << "frame " << f;
  }
}

TEST(SyntheticScanner, CachedFramesRepeatTheSceneWhileTheMetadataGoesOn) {
  SyntheticConfig c;
  c.width = 97;
  c.frame_height = 19;
  c.frames = 40;
  c.frame_rate = 2000.0;
  c.cached_frames = 12;
  SyntheticConfig plain = c;
  plain.cached_frames = 0;
  SyntheticScanner cached(c);
  const SyntheticScanner uncached(plain);
  const Drained d = drain(cached, 24);  // a batch holds frames n and n + 12: one render of their slot
  ASSERT_EQ(d.meta.size(), 40u);
  const std::size_t fb = static_cast<std::size_t>(c.width) * c.frame_height;
  for (std::uint64_t f : {0ull, 5ull, 11ull, 12ull, 23ull, 39ull}) {
    const auto want = render_frame(uncached, f % 12);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), d.pixels.begin() + static_cast<std::ptrdiff_t>(f * fb))) << "frame " << f;
    EXPECT_EQ(d.meta[f].frame_id, f);
    EXPECT_EQ(d.meta[f].timestamp_ns, std::llround(static_cast<double>(f) * 1e9 / 2000.0));
    EXPECT_EQ(d.meta[f].encoder, 4 * static_cast<std::int64_t>(f));
    EXPECT_EQ(cached.truth(f, 50), uncached.truth(f % 12, 50));
  }
  // Frame 13 differs from frame 1 without the cache: the cache is what repeats it.
  const auto f13 = render_frame(uncached, 13), f1 = render_frame(uncached, 1);
  EXPECT_NE(f13, f1);
}

TEST(SyntheticScanner, RewindAndEndlessAndNoEncoder) {
  SyntheticConfig c;
  c.width = 64;
  c.frame_height = 16;
  c.frames = 0;
  c.encoder_step = 0;
  SyntheticScanner s(c);
  EXPECT_FALSE(s.total_frames().has_value());
  Batch b = make_batch(s.frame_layout(), 9);
  for (int k = 0; k < 5; ++k) {
    ASSERT_TRUE(s.fill(b));
    ASSERT_EQ(b.frames, 9);
    EXPECT_EQ(b.first_index, 0u) << "only the pipeline numbers batches, not a source";
    EXPECT_EQ(b.meta[0].frame_id, static_cast<std::uint64_t>(9 * k));
    EXPECT_FALSE(b.meta[0].has_encoder);
    EXPECT_EQ(b.meta[0].encoder, 0);
  }
  s.rewind();
  ASSERT_TRUE(s.fill(b));
  EXPECT_EQ(b.meta[0].frame_id, 0u);
  const auto r = render_frame(s, 0);
  EXPECT_TRUE(std::equal(r.begin(), r.end(), b.frame_data(0)));
}

TEST(SyntheticScanner, FillRejectsAMismatchedBatch) {
  SyntheticConfig c;
  c.width = 64;
  c.frame_height = 16;
  SyntheticScanner s(c);
  BatchLayout l = s.frame_layout();
  l.format = PixelFormat::Mono16;
  Batch b = make_batch(l, 2);
  EXPECT_THROW(s.fill(b), RuntimeFailure);
  l = s.frame_layout();
  l.width = 65;
  Batch b2 = make_batch(l, 2);
  EXPECT_THROW(s.fill(b2), RuntimeFailure);
}

// Noise- and speckle-free: the centre of gravity of (pixel - background) over
// the stripe is the truth, within the rounding of the pixels.
void check_centre_of_gravity(SyntheticConfig c, double tolerance) {
  c.noise = 0.0;
  c.speckle = 0.0;
  const SyntheticScanner s(c);
  const double scale = c.format == PixelFormat::Mono16 ? 256.0 : 1.0;
  const double bg = std::round(c.background * scale);
  double worst = 0;
  int checked = 0;
  for (std::uint64_t f = 0; f < 600; f += 23) {
    const auto img = render_frame(s, f);
    for (int x = 0; x < c.width; ++x) {
      const double t = s.truth(f, x);
      if (std::isnan(t) || !std::isnan(s.reflection_row(f, x))) continue;
      double sum = 0, sum_y = 0;
      for (int y = 0; y < c.frame_height; ++y) {
        const double v = pixel(img, c.format, c.width, x, y) - bg;
        sum += v;
        sum_y += v * y;
      }
      ASSERT_GT(sum, 0) << "frame " << f << " column " << x;
      const double err = std::abs(sum_y / sum - t);
      worst = std::max(worst, err);
      ++checked;
      ASSERT_LT(err, tolerance) << "frame " << f << " column " << x << " truth " << t << " sigma " << c.beam_sigma
                                << " " << to_string(c.format);
    }
  }
  EXPECT_GT(checked, c.width * 10);
  ::testing::Test::RecordProperty("worst_cog_error_sigma_" + std::to_string(static_cast<int>(c.beam_sigma * 10)) + "_" +
                     to_string(c.format),
                 std::to_string(worst));
}

TEST(SyntheticScanner, CentreOfGravityMatchesTruthMono8) {
  for (double sigma : {0.5, 1.4, 3.0}) {
    SyntheticConfig c = quiet_config();
    c.beam_sigma = sigma;
    c.frame_height = 64;
    check_centre_of_gravity(c, 0.05);
  }
}

TEST(SyntheticScanner, CentreOfGravityMatchesTruthMono16) {
  for (double sigma : {0.5, 1.4, 3.0}) {
    SyntheticConfig c = quiet_config();
    c.beam_sigma = sigma;
    c.frame_height = 64;
    c.format = PixelFormat::Mono16;
    check_centre_of_gravity(c, 0.005);
  }
}

TEST(SyntheticScanner, OccludedColumnsHaveNoStripe) {
  SyntheticConfig c;  // with noise and speckle
  c.width = 640;
  c.occlusion = 0.2;
  const SyntheticScanner s(c);
  int occluded = 0, lit = 0;
  for (std::uint64_t f = 0; f < 400; f += 13) {
    const auto img = render_frame(s, f);
    for (int x = 0; x < c.width; ++x) {
      int mx = 0;
      for (int y = 0; y < c.frame_height; ++y) mx = std::max(mx, pixel(img, c.format, c.width, x, y));
      if (std::isnan(s.truth(f, x))) {
        ++occluded;
        EXPECT_TRUE(std::isnan(s.reflection_row(f, x)));
        // The noise is bounded (sum of uniforms) at 3.5 sigma.
        ASSERT_LE(mx, c.background + 4 * c.noise) << "frame " << f << " column " << x;
      } else {
        ++lit;
        ASSERT_GE(mx, c.background + 0.2 * c.peak) << "frame " << f << " column " << x;
      }
    }
  }
  EXPECT_GT(occluded, 0);
  EXPECT_GT(lit, occluded);
}

TEST(SyntheticScanner, ReflectionColumnsHaveASecondPeak) {
  SyntheticConfig c = quiet_config();
  c.reflection = 0.3;
  c.reflection_strength = 0.35;
  const SyntheticScanner s(c);
  const double bg = c.background;
  const double weakest = c.peak * (1 - c.peak_variation);
  int with = 0, without = 0;
  for (std::uint64_t f = 0; f < 600; f += 17) {
    const auto img = render_frame(s, f);
    for (int x = 0; x < c.width; ++x) {
      const double t = s.truth(f, x);
      if (std::isnan(t)) continue;
      const double r = s.reflection_row(f, x);
      if (std::isnan(r)) {
        // Noise-free: nothing beyond 5.5 sigma from the stripe.
        ++without;
        for (int y = 0; y < c.frame_height; ++y) {
          if (std::abs(y - t) > 5.5 * c.beam_sigma) {
            ASSERT_EQ(pixel(img, c.format, c.width, x, y), bg) << "frame " << f << " column " << x << " row " << y;
          }
        }
        continue;
      }
      ++with;
      ASSERT_GE(std::abs(r - t), 6 * c.beam_sigma - 1e-9);
      ASSERT_GE(r, 0.0);
      ASSERT_LE(r, c.frame_height - 1.0);
      const int yr = static_cast<int>(std::lround(r));
      const int yt = static_cast<int>(std::lround(t));
      const int at_r = pixel(img, c.format, c.width, x, yr);
      ASSERT_GE(at_r - bg, 0.6 * c.reflection_strength * weakest) << "frame " << f << " column " << x;
      ASSERT_LT(at_r, pixel(img, c.format, c.width, x, yt)) << "frame " << f << " column " << x;
      // A dip close to the background between the two peaks: two separate peaks.
      int dip = 1 << 20;
      for (int y = std::min(yr, yt) + 1; y < std::max(yr, yt); ++y) dip = std::min(dip, pixel(img, c.format, c.width, x, y));
      ASSERT_LE(dip - bg, 0.1 * (at_r - bg)) << "frame " << f << " column " << x;
    }
  }
  EXPECT_GT(with, 100);
  EXPECT_GT(without, with);
}

TEST(SyntheticScanner, Mono16IsMono8ScaledBy256) {
  SyntheticConfig c8;  // noise and speckle on: the same random streams
  c8.width = 257;
  SyntheticConfig c16 = c8;
  c16.format = PixelFormat::Mono16;
  const SyntheticScanner s8(c8), s16(c16);
  EXPECT_EQ(s16.frame_layout().format, PixelFormat::Mono16);
  int above_255 = 0;
  for (std::uint64_t f : {0ull, 111ull, 222ull}) {
    const auto a = render_frame(s8, f);
    const auto b = render_frame(s16, f);
    ASSERT_EQ(b.size(), 2 * a.size());
    for (int y = 0; y < c8.frame_height; ++y)
      for (int x = 0; x < c8.width; ++x) {
        const int p8 = pixel(a, PixelFormat::Mono8, c8.width, x, y);
        const int p16 = pixel(b, PixelFormat::Mono16, c8.width, x, y);
        if (p16 > 255) ++above_255;
        // Both round the same value: 8-bit to 1, 16-bit to 1/256; both clamp.
        if (p8 == 255) {
          ASSERT_GE(p16, 255 * 256 - 128) << "frame " << f << " x " << x << " y " << y;
        } else {
          ASSERT_LE(std::abs(p16 - 256 * p8), 129) << "frame " << f << " x " << x << " y " << y;
        }
      }
  }
  EXPECT_GT(above_255, 0);
}

TEST(SyntheticScanner, SaturationClampsToTheFormatRange) {
  for (PixelFormat fmt : {PixelFormat::Mono8, PixelFormat::Mono16}) {
    SyntheticConfig c;
    c.width = 128;
    c.peak = 600;
    c.format = fmt;
    const SyntheticScanner s(c);
    const auto img = render_frame(s, 5);
    int mx = 0;
    for (int y = 0; y < c.frame_height; ++y)
      for (int x = 0; x < c.width; ++x) mx = std::max(mx, pixel(img, fmt, c.width, x, y));
    EXPECT_EQ(mx, fmt == PixelFormat::Mono8 ? 255 : 65535);
  }
}

TEST(SyntheticScanner, TinyFramesPutTheStripeInTheMiddle) {
  for (int h : {8, 9, 16}) {
    SyntheticConfig c;
    c.width = 1;
    c.frame_height = h;
    c.occlusion = 0;
    c.reflection = 0.5;
    c.noise = 0;
    c.speckle = 0;
    const SyntheticScanner s(c);
    for (std::uint64_t f = 0; f < 50; ++f) {
      EXPECT_DOUBLE_EQ(s.truth(f, 0), 0.5 * (h - 1));
      EXPECT_TRUE(std::isnan(s.reflection_row(f, 0)));  // no room for it
    }
    const auto img = render_frame(s, 0);
    int mx = 0, at = -1;
    for (int y = 0; y < h; ++y)
      if (pixel(img, c.format, 1, 0, y) > mx) mx = pixel(img, c.format, 1, 0, y), at = y;
    EXPECT_NEAR(at, 0.5 * (h - 1), 0.5);
  }
}

TEST(SyntheticScanner, DefaultsLookLikeATypicalRecording) {
  const SyntheticConfig c;
  const SyntheticScanner s(c);
  EXPECT_NE(s.describe().find("2048x52"), std::string::npos) << s.describe();
  EXPECT_EQ(s.describe().find('\n'), std::string::npos);
  std::vector<int> peaks;
  for (std::uint64_t f = 0; f < 600; f += 50) {
    const auto img = render_frame(s, f);
    for (int x = 0; x < c.width; ++x) {
      if (std::isnan(s.truth(f, x))) continue;
      int mx = 0;
      for (int y = 0; y < c.frame_height; ++y) mx = std::max(mx, pixel(img, c.format, c.width, x, y));
      peaks.push_back(mx);
    }
  }
  std::sort(peaks.begin(), peaks.end());
  const int weakest = peaks.front(), median = peaks[peaks.size() / 2];
  const double expected_weakest = c.background + c.peak * (1 - c.peak_variation) * (1 - c.speckle);
  EXPECT_GE(weakest, 0.8 * expected_weakest);  // weakest columns still well visible
  EXPECT_LT(weakest, 0.75 * median);           // ... but clearly weaker than most
  EXPECT_GE(median, c.background + 0.7 * c.peak);
}

struct BadValue {
  const char* key;
  void (*apply)(SyntheticConfig&);
};

TEST(SyntheticConfigValidate, RejectsOutOfRangeValuesNamingTheKey) {
  const BadValue cases[] = {
      {"synthetic.width", [](SyntheticConfig& c) { c.width = 0; }},
      {"synthetic.width", [](SyntheticConfig& c) { c.width = kMaxWidth + 1; }},
      {"synthetic.frame_height", [](SyntheticConfig& c) { c.frame_height = 7; }},
      {"synthetic.frame_height", [](SyntheticConfig& c) { c.frame_height = kMaxFrameHeight + 1; }},
      {"synthetic.format", [](SyntheticConfig& c) { c.format = static_cast<PixelFormat>(12); }},
      {"synthetic.beam_sigma", [](SyntheticConfig& c) { c.beam_sigma = -1; }},
      {"synthetic.beam_sigma", [](SyntheticConfig& c) { c.beam_sigma = 0.1; }},
      {"synthetic.beam_sigma", [](SyntheticConfig& c) { c.beam_sigma = 25; }},
      {"synthetic.beam_sigma", [](SyntheticConfig& c) { c.beam_sigma = std::nan(""); }},
      {"synthetic.peak", [](SyntheticConfig& c) { c.peak = 0; }},
      {"synthetic.peak", [](SyntheticConfig& c) { c.peak = 1e9; }},
      {"synthetic.peak", [](SyntheticConfig& c) { c.peak = 800, c.peak_variation = 0.5; }},
      {"synthetic.peak_variation", [](SyntheticConfig& c) { c.peak_variation = 0.95; }},
      {"synthetic.peak_variation", [](SyntheticConfig& c) { c.peak_variation = -0.1; }},
      {"synthetic.background", [](SyntheticConfig& c) { c.background = -1; }},
      {"synthetic.background", [](SyntheticConfig& c) { c.background = 300; }},
      {"synthetic.noise", [](SyntheticConfig& c) { c.noise = -0.5; }},
      {"synthetic.speckle", [](SyntheticConfig& c) { c.speckle = 1.5; }},
      {"synthetic.occlusion", [](SyntheticConfig& c) { c.occlusion = 1.0; }},
      {"synthetic.occlusion", [](SyntheticConfig& c) { c.occlusion = -0.01; }},
      {"synthetic.reflection", [](SyntheticConfig& c) { c.reflection = 1.0; }},
      {"synthetic.reflection_strength", [](SyntheticConfig& c) { c.reflection_strength = -1; }},
      {"synthetic.frame_rate", [](SyntheticConfig& c) { c.frame_rate = 0; }},
      {"synthetic.frame_rate", [](SyntheticConfig& c) { c.frame_rate = std::numeric_limits<double>::infinity(); }},
      {"synthetic.cached_frames", [](SyntheticConfig& c) { c.cached_frames = -1; }},
      {"synthetic.cached_frames", [](SyntheticConfig& c) { c.cached_frames = 100001; }},
  };
  for (const BadValue& bad : cases) {
    SyntheticConfig c;
    bad.apply(c);
    try {
      c.validate();
      ADD_FAILURE() << "no ConfigError for " << bad.key;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(bad.key), std::string::npos) << what;
      EXPECT_NE(what.find("expected"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    EXPECT_THROW(SyntheticScanner{c}, InputError) << bad.key;  // ConfigError is an InputError
  }
  SyntheticConfig ok;
  EXPECT_NO_THROW(ok.validate());
  try {
    SyntheticConfig c;
    c.beam_sigma = -1;
    c.validate();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "synthetic.beam_sigma = -1 is out of range (expected 0.3..20)");
  }
}

// ---------------------------------------------------------------------------
// File source

class FileSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("stripeline_acq_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A synthetic recording: `frames` frames, concatenated, and the scanner.
  static std::vector<std::byte> recording(const SyntheticConfig& c) {
    SyntheticScanner s(c);
    Drained d = drain(s, 16);
    return d.pixels;
  }

  // A small synthetic recording in format f: its configuration and pixels.
  struct Recorded {
    SyntheticConfig c;
    std::vector<std::byte> pixels;
  };
  static Recorded recorded(PixelFormat f) {
    Recorded r{small_config(f), {}};
    r.pixels = recording(r.c);
    return r;
  }

  // A replay of the file p in frames of frame_height rows.
  static FileSourceConfig replay_of(const fs::path& p, int frame_height) {
    FileSourceConfig fc;
    fc.path = p;
    fc.frame_height = frame_height;
    return fc;
  }

  // The recording of c written as the image file `name` (its format from the
  // extension), and a replay of it.
  FileSourceConfig image_replay(const std::string& name, const SyntheticConfig& c, const std::vector<std::byte>& rec) const {
    const fs::path p = dir_ / name;
    io::write_image(p, rec.data(), c.width, static_cast<std::int64_t>(c.frames) * c.frame_height, c.format);
    return replay_of(p, c.frame_height);
  }

  static SyntheticConfig small_config(PixelFormat f) {
    SyntheticConfig c;
    c.width = 45;
    c.frame_height = 12;
    c.frames = 10;
    c.format = f;
    return c;
  }

  void write_raw(const fs::path& p, const std::vector<std::byte>& pixels, PixelFormat f) {
    std::ofstream out(p, std::ios::binary);
    if (f == PixelFormat::Mono8) {
      out.write(reinterpret_cast<const char*>(pixels.data()), static_cast<std::streamsize>(pixels.size()));
    } else {  // 16-bit little-endian, whatever the host
      const auto* px = reinterpret_cast<const std::uint16_t*>(pixels.data());
      for (std::size_t i = 0; i < pixels.size() / 2; ++i) {
        const char le[2] = {static_cast<char>(px[i] & 0xff), static_cast<char>(px[i] >> 8)};
        out.write(le, 2);
      }
    }
    ASSERT_TRUE(out.good());
  }

  fs::path dir_;
};

void expect_replay(const std::vector<std::byte>& rec, const SyntheticConfig& c, FileSourceConfig fc, int capacity) {
  const std::uint64_t per_pass = c.frames;
  const std::uint64_t loops = fc.loops;
  FileSource src(fc);
  const BatchLayout l = src.frame_layout();
  EXPECT_EQ(l.width, c.width);
  EXPECT_EQ(l.frame_height, c.frame_height);
  EXPECT_EQ(l.format, c.format);
  EXPECT_EQ(src.total_frames(), std::optional<std::uint64_t>(per_pass * loops));
  EXPECT_NE(src.describe().find(fc.path.filename().string()), std::string::npos) << src.describe();
  const Drained d = drain(src, capacity);
  ASSERT_EQ(d.meta.size(), per_pass * loops);
  const std::size_t frame_bytes = l.frame_pixels() * bytes_per_pixel(l.format);
  for (std::size_t i = 0; i < d.meta.size(); ++i) {
    EXPECT_EQ(d.meta[i].frame_id, i);
    EXPECT_FALSE(d.meta[i].has_encoder);
    EXPECT_FALSE(d.meta[i].missing);
    EXPECT_GE(d.meta[i].timestamp_ns, 0);
    if (i > 0) {
      EXPECT_GE(d.meta[i].timestamp_ns, d.meta[i - 1].timestamp_ns);
    }
    const std::size_t src_frame = i % per_pass;
    ASSERT_TRUE(std::equal(rec.begin() + static_cast<std::ptrdiff_t>(src_frame * frame_bytes),
                           rec.begin() + static_cast<std::ptrdiff_t>((src_frame + 1) * frame_bytes),
                           d.pixels.begin() + static_cast<std::ptrdiff_t>(i * frame_bytes)))
        << fc.path << ": frame " << i;
  }
  // Only the last batch may be partial.
  for (std::size_t k = 0; k + 1 < d.batch_frames.size(); ++k) EXPECT_EQ(d.batch_frames[k], capacity);
}

TEST_F(FileSourceTest, RoundTripThroughImageFiles) {
  for (PixelFormat f : {PixelFormat::Mono8, PixelFormat::Mono16}) {
    const auto [c, rec] = recorded(f);
    for (const char* ext : {".png", ".tiff", ".pgm"}) {
      expect_replay(rec, c, image_replay(std::string("rec_") + to_string(f) + ext, c, rec), 4);
    }
  }
}

TEST_F(FileSourceTest, RoundTripThroughRawFiles) {
  for (PixelFormat f : {PixelFormat::Mono8, PixelFormat::Mono16}) {
    const auto [c, rec] = recorded(f);
    const fs::path p = dir_ / (std::string("rec_") + to_string(f) + ".raw");
    write_raw(p, rec, f);
    for (std::int64_t height : {std::int64_t{0}, static_cast<std::int64_t>(c.frames) * c.frame_height}) {
      FileSourceConfig fc = replay_of(p, c.frame_height);
      fc.raw = io::RawGeometry{c.width, height, f};
      expect_replay(rec, c, fc, 3);
    }
  }
}

TEST_F(FileSourceTest, LoopsTwiceWithConsecutiveFrameIds) {
  const auto [c, rec] = recorded(PixelFormat::Mono8);
  FileSourceConfig fc = image_replay("rec.pgm", c, rec);
  fc.loops = 2;
  expect_replay(rec, c, fc, 4);  // 20 frames: a batch spans the end of the first pass
  expect_replay(rec, c, fc, 7);
}

TEST_F(FileSourceTest, LoopsForeverWhenLoopsIsZero) {
  const auto [c, rec] = recorded(PixelFormat::Mono8);
  FileSourceConfig fc = image_replay("rec.png", c, rec);
  fc.loops = 0;
  FileSource src(fc);
  EXPECT_FALSE(src.total_frames().has_value());
  Batch b = make_batch(src.frame_layout(), 6);
  const std::size_t frame_bytes = b.layout.frame_pixels();
  for (std::uint64_t k = 0; k < 8; ++k) {  // 48 frames = almost 5 passes
    ASSERT_TRUE(src.fill(b));
    ASSERT_EQ(b.frames, 6);
    for (int i = 0; i < 6; ++i) {
      const std::uint64_t id = 6 * k + i;
      EXPECT_EQ(b.meta[i].frame_id, id);
      const std::size_t sf = id % c.frames;
      EXPECT_EQ(std::memcmp(b.frame_data(i), rec.data() + sf * frame_bytes, frame_bytes), 0) << "frame " << id;
    }
  }
}

TEST_F(FileSourceTest, HeightNotAMultipleOfTheFrameHeightNamesTheFile) {
  const SyntheticConfig c = small_config(PixelFormat::Mono8);
  auto rec = recording(c);
  rec.resize(rec.size() + static_cast<std::size_t>(c.width), std::byte{20});  // one extra row: 121 rows
  const fs::path p = dir_ / "odd_height.tiff";
  io::write_image(p, rec.data(), c.width, 121, c.format);
  try {
    FileSource src(replay_of(p, c.frame_height));
    ADD_FAILURE() << "no InputError for a height of 121 rows with frames of 12";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(p.string()), std::string::npos) << what;
    EXPECT_NE(what.find("121"), std::string::npos) << what;
    EXPECT_NE(what.find("12 "), std::string::npos) << what;
    EXPECT_NE(what.find("expected"), std::string::npos) << what;
  }
}

TEST_F(FileSourceTest, BadFrameHeightAndMissingFileAreInputErrors) {
  const auto [c, rec] = recorded(PixelFormat::Mono8);
  const fs::path p = dir_ / "rec.pgm";
  io::write_image(p, rec.data(), c.width, 120, c.format);
  for (int fh : {0, -5, kMaxFrameHeight + 1}) EXPECT_THROW(FileSource{replay_of(p, fh)}, InputError) << fh;
  EXPECT_THROW(FileSource{replay_of(dir_ / "does_not_exist.png", 12)}, InputError);
  // A batch of another layout is a programming error.
  FileSource src(replay_of(p, 12));
  BatchLayout l = src.frame_layout();
  l.frame_height = 6;
  Batch b = make_batch(l, 2);
  EXPECT_THROW(src.fill(b), RuntimeFailure);
}

TEST_F(FileSourceTest, PacingAtARateTakesAtLeastTheFramesDuration) {
  SyntheticConfig c = small_config(PixelFormat::Mono8);
  c.frames = 100;
  const auto rec = recording(c);
  const fs::path p = dir_ / "rec.raw";
  write_raw(p, rec, c.format);
  FileSourceConfig fc = replay_of(p, c.frame_height);
  fc.raw = io::RawGeometry{c.width, 0, c.format};
  fc.rate = 2000.0;
  FileSource src(fc);
  const auto t0 = std::chrono::steady_clock::now();
  const Drained d = drain(src, 16);
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(d.meta.size(), 100u);
  // Frame 99 is due 49.5 ms after the start; only a lower bound is asserted.
  EXPECT_GE(std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count(), 45000);
  for (std::size_t i = 0; i < d.meta.size(); ++i)
    EXPECT_EQ(d.meta[i].timestamp_ns, static_cast<std::int64_t>(i) * 500000) << "frame " << i;
}

}  // namespace
}  // namespace stripeline
