// CPU stages on small hand-computed cases and odd sizes. The CPU stage is the
// oracle for every other backend, so these pin its exact behaviour.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/errors.h"
#include "stages/chain.h"
#include "stages/stages.h"
#include "test_helpers.h"

using namespace stripeline;
using stripeline::test::make_batch;
using stripeline::test::px;

namespace {

kernels::ColumnParams params(ColumnMethod m, std::uint32_t threshold = 40) {
  kernels::ColumnParams p;
  p.method = m;
  p.threshold = threshold;
  p.min_peak = threshold;
  p.slots = 1;
  return p;
}

ProfileBatch extract(const Batch& b, const kernels::ColumnParams& p) {
  ProfileBatch out(b.layout.width, b.layout.frames, p.slots, &allocate_host);
  out.poison();
  make_extract_stage(Backend::Cpu, b.layout, p)->run(b, out);
  return out;
}

void set_column(Batch& b, int frame, int x, const std::vector<std::uint8_t>& values) {
  for (std::size_t y = 0; y < values.size(); ++y) px<std::uint8_t>(b, frame, x, static_cast<int>(y)) = values[y];
}

// Straightforward reference blur of one frame: replicate borders, same integer rounding.
std::vector<std::uint32_t> reference_blur(const std::vector<std::uint32_t>& f, int w, int h, const kernels::GaussianTaps& t) {
  const int r = t.radius();
  std::vector<std::uint32_t> mid(f.size()), out(f.size());
  auto cl = [](int i, int n) { return std::min(std::max(i, 0), n - 1); };
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      std::uint64_t a = 0;
      for (int k = -r; k <= r; ++k) a += static_cast<std::uint64_t>(t.w[k + r]) * f[y * w + cl(x + k, w)];
      mid[y * w + x] = static_cast<std::uint32_t>((a + 128) >> 8);
    }
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      std::uint64_t a = 0;
      for (int k = -r; k <= r; ++k) a += static_cast<std::uint64_t>(t.w[k + r]) * mid[cl(y + k, h) * w + x];
      out[y * w + x] = static_cast<std::uint32_t>((a + 32768) >> 16);
    }
  return out;
}

}  // namespace

TEST(GaussianTaps, SumToExactlyOneAndAreSymmetric) {
  for (int size = 3; size <= 15; size += 2) {
    for (double sigma : {0.0, 0.5, 1.0, 2.5, 8.0}) {
      const auto t = kernels::make_gaussian_taps(size, sigma);
      std::uint32_t sum = 0;
      for (int k = 0; k < size; ++k) {
        sum += t.w[k];
        EXPECT_EQ(t.w[k], t.w[size - 1 - k]) << "size " << size << " sigma " << sigma;
      }
      EXPECT_EQ(sum, kernels::kBlurWeightSum) << "size " << size << " sigma " << sigma;
    }
  }
  EXPECT_EQ(kernels::make_gaussian_taps(0, 0).size, 0);
}

TEST(GaussianTaps, RejectsBadSizesAndSigmas) {
  for (int size : {-1, 2, 4, 16, 17, 99}) EXPECT_THROW(kernels::make_gaussian_taps(size, 1.0), ConfigError) << size;
  EXPECT_THROW(kernels::make_gaussian_taps(5, -1.0), ConfigError);
  EXPECT_THROW(kernels::make_gaussian_taps(5, std::nan("")), ConfigError);
}

TEST(BlurCpu, ConstantFrameStaysConstant) {
  auto b = make_batch<std::uint8_t>(37, 9, 3);
  std::memset(b.pixels.data(), 77, b.pixels.size());
  auto out = make_batch<std::uint8_t>(37, 9, 3);
  make_blur_stage(Backend::Cpu, b.layout, kernels::make_gaussian_taps(7, 0))->run(b, out);
  for (std::size_t i = 0; i < b.layout.pixels(); ++i) ASSERT_EQ(reinterpret_cast<std::uint8_t*>(out.pixels.data())[i], 77) << i;
}

TEST(BlurCpu, MatchesStraightforwardReferenceOnOddSizes) {
  std::mt19937 rng(7);
  struct Case { int w, h, frames, size; };
  for (const Case c : {Case{13, 42, 2, 3}, Case{176, 113, 1, 5}, Case{300, 7, 4, 15}, Case{1, 1, 3, 3}, Case{257, 5, 2, 9}}) {
    auto in = make_batch<std::uint16_t>(c.w, c.h, c.frames);
    for (std::size_t i = 0; i < in.layout.pixels(); ++i) reinterpret_cast<std::uint16_t*>(in.pixels.data())[i] = rng() & 0xFFFF;
    auto out = make_batch<std::uint16_t>(c.w, c.h, c.frames);
    const auto taps = kernels::make_gaussian_taps(c.size, 0);
    make_blur_stage(Backend::Cpu, in.layout, taps)->run(in, out);
    for (int f = 0; f < c.frames; ++f) {
      std::vector<std::uint32_t> frame(in.layout.frame_pixels());
      for (int y = 0; y < c.h; ++y)
        for (int x = 0; x < c.w; ++x) frame[y * c.w + x] = px<std::uint16_t>(in, f, x, y);
      const auto ref = reference_blur(frame, c.w, c.h, taps);
      for (int y = 0; y < c.h; ++y)
        for (int x = 0; x < c.w; ++x)
          ASSERT_EQ(px<std::uint16_t>(out, f, x, y), ref[y * c.w + x]) << c.w << "x" << c.h << " frame " << f << " at " << x << "," << y;
    }
  }
}

// blur_across = false: each column blurred alone, exactly the reference
// blur with the single horizontal tap 4096; a column never takes light from
// its neighbours.
TEST(BlurCpu, AlongColumnsOnlyMatchesTheReferenceWithOneHorizontalTap) {
  std::mt19937 rng(11);
  ChainConfig chain;
  chain.blur_size = 7;
  chain.blur_across = false;
  const kernels::GaussianTaps taps = chain_blur_taps(chain);
  ASSERT_FALSE(taps.across);
  auto in = make_batch<std::uint16_t>(37, 11, 2);
  for (std::size_t i = 0; i < in.layout.pixels(); ++i) reinterpret_cast<std::uint16_t*>(in.pixels.data())[i] = rng() & 0xFFFF;
  auto out = make_batch<std::uint16_t>(37, 11, 2);
  make_blur_stage(Backend::Cpu, in.layout, taps)->run(in, out);
  for (int f = 0; f < 2; ++f)
    for (int x = 0; x < 37; ++x)
      for (int y = 0; y < 11; ++y) {
        std::uint64_t a = 0;
        for (int k = -3; k <= 3; ++k) a += static_cast<std::uint64_t>(taps.w[k + 3]) * (px<std::uint16_t>(in, f, x, std::clamp(y + k, 0, 10)) << 4);
        ASSERT_EQ(px<std::uint16_t>(out, f, x, y), (a + 32768) >> 16) << "frame " << f << " at " << x << "," << y;
      }
  EXPECT_TRUE(chain_blur_taps(ChainConfig{}).across) << "the 2-D blur is the default";
}

TEST(BlurCpu, NeverMixesNeighbouringFrames) {
  // Frame 0 bright on its last row, frame 1 black: frame 1 must stay black,
  // and frame 0 must blur exactly as it would alone.
  auto b = make_batch<std::uint8_t>(20, 6, 2);
  for (int x = 0; x < 20; ++x) px<std::uint8_t>(b, 0, x, 5) = 255;
  auto out = make_batch<std::uint8_t>(20, 6, 2);
  make_blur_stage(Backend::Cpu, b.layout, kernels::make_gaussian_taps(15, 3.0))->run(b, out);
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 20; ++x) ASSERT_EQ(px<std::uint8_t>(out, 1, x, y), 0) << x << "," << y;
  auto alone = make_batch<std::uint8_t>(20, 6, 1);
  for (int x = 0; x < 20; ++x) px<std::uint8_t>(alone, 0, x, 5) = 255;
  auto alone_out = make_batch<std::uint8_t>(20, 6, 1);
  make_blur_stage(Backend::Cpu, alone.layout, kernels::make_gaussian_taps(15, 3.0))->run(alone, alone_out);
  EXPECT_EQ(0, std::memcmp(alone_out.pixels.data(), out.pixels.data(), alone.layout.bytes()));
  EXPECT_EQ(px<std::uint8_t>(out, 0, 3, 5), px<std::uint8_t>(out, 0, 3, 5));
  EXPECT_GT(px<std::uint8_t>(out, 0, 3, 5), 100);  // replicated bottom edge keeps the last row bright
}

TEST(ThresholdCpu, ZeroesBelowKeepsAtAndAbove) {
  auto b = make_batch<std::uint8_t>(5, 1, 1);
  const std::uint8_t v[5] = {0, 39, 40, 41, 255};
  for (int x = 0; x < 5; ++x) px<std::uint8_t>(b, 0, x, 0) = v[x];
  make_threshold_stage(Backend::Cpu, b.layout, 40)->run(b, b);
  const std::uint8_t want[5] = {0, 0, 40, 41, 255};
  for (int x = 0; x < 5; ++x) EXPECT_EQ(px<std::uint8_t>(b, 0, x, 0), want[x]) << x;
}

TEST(ExtractCog, SymmetricRunIsCentredOnItsPeak) {
  auto b = make_batch<std::uint8_t>(1, 12, 1);
  set_column(b, 0, 0, {0, 0, 0, 10, 50, 100, 50, 10, 0, 0, 0, 0});
  const auto p = extract(b, params(ColumnMethod::Cog));
  EXPECT_EQ(p.count[0], 1);
  EXPECT_EQ(p.position[0], 5 * 256);
  EXPECT_EQ(p.intensity[0], 100);
  EXPECT_EQ(p.stripe_width[0], 3);
  EXPECT_EQ(p.quality[0], 60);  // cog's quality: the peak above the threshold
}

// The stored per-point quality of the adaptive method is its contrast: the
// peak above the column's background line, in pixel units; a weaker stripe
// on the same background scores lower.
TEST(ExtractQuality, AdaptiveQualityIsThePeakAboveTheBackground) {
  auto b = make_batch<std::uint8_t>(2, 64, 1);
  std::vector<std::uint8_t> strong(64, 20), weak(64, 20);
  const std::uint8_t s[5] = {60, 140, 200, 140, 60}, w[5] = {40, 80, 100, 80, 40};
  for (int i = 0; i < 5; ++i) strong[30 + i] = s[i], weak[20 + i] = w[i];
  set_column(b, 0, 0, strong);
  set_column(b, 0, 1, weak);
  ChainConfig cc;
  cc.column.method = ColumnMethod::Adaptive;
  cc.blur_size = 0;
  cc.line_model.enabled = false;  // two columns: each alone (the model drops segments shorter than line_min_length)
  const auto p = validate_chain(cc, b.layout);
  ProfileBatch out(2, 1, p.slots, &allocate_host);
  out.poison();
  make_processor(Backend::Cpu, b.layout, cc)->process(b, out);
  ASSERT_EQ(out.peaks(0, 0), 1);
  ASSERT_EQ(out.peaks(0, 1), 1);
  EXPECT_EQ(out.position[out.slot_index(0, 0, 0)], 32 * 256);
  EXPECT_EQ(out.quality[out.slot_index(0, 0, 0)], 180);
  EXPECT_EQ(out.quality[out.slot_index(0, 0, 1)], 80);
  // Empty slots carry zero quality, never the poison.
  for (int s = 1; s < p.slots; ++s) EXPECT_EQ(out.quality[out.slot_index(0, s, 0)], 0);
}

TEST(ExtractCog, AsymmetricRunHandComputed) {
  // Run rows 4..6 = 60,100,40 with threshold 40: weights 21,61,1; sum 83;
  // moment 61*1 + 1*2 = 63; 63/83 px = 194.3/256 -> 194. Position 4*256+194.
  auto b = make_batch<std::uint8_t>(1, 10, 1);
  set_column(b, 0, 0, {5, 5, 5, 20, 60, 100, 40, 20, 5, 5});
  const auto p = extract(b, params(ColumnMethod::Cog));
  EXPECT_EQ(p.position[0], 4 * 256 + 194);
  EXPECT_EQ(p.stripe_width[0], 3);
  EXPECT_FLOAT_EQ(position_to_row(p.position[0]), 4.0f + 194.0f / 256.0f);
}

TEST(ExtractCog, IgnoresWeakerSecondaryRun) {
  auto b = make_batch<std::uint8_t>(1, 16, 1);
  set_column(b, 0, 0, {0, 70, 90, 70, 0, 0, 0, 0, 0, 0, 120, 200, 120, 0, 0, 0});
  const auto p = extract(b, params(ColumnMethod::Cog));
  EXPECT_EQ(p.position[0], 11 * 256);
  EXPECT_EQ(p.intensity[0], 200);
}

TEST(ExtractCog, GatesOnPeakAndWidth) {
  auto b = make_batch<std::uint8_t>(3, 10, 1);
  set_column(b, 0, 0, {0, 0, 45, 48, 45, 0, 0, 0, 0, 0});                 // peak 48 < min_peak 50
  set_column(b, 0, 1, {0, 0, 0, 0, 200, 0, 0, 0, 0, 0});                  // width 1 < min_width 2
  set_column(b, 0, 2, {0, 60, 80, 100, 120, 100, 80, 60, 0, 0});          // width 7 > max_width 5
  auto pr = params(ColumnMethod::Cog);
  pr.min_peak = 50;
  pr.min_width = 2;
  pr.max_width = 5;
  const auto p = extract(b, pr);
  for (int x = 0; x < 3; ++x) {
    EXPECT_EQ(p.count[x], 0) << x;
    EXPECT_EQ(p.position[x], kNoPeak) << x;
    EXPECT_EQ(p.intensity[x], 0) << x;
  }
}

TEST(ExtractCog, EmptyColumnAndFrameHeightOne) {
  auto b = make_batch<std::uint8_t>(2, 1, 2);
  px<std::uint8_t>(b, 0, 1, 0) = 90;
  px<std::uint8_t>(b, 1, 0, 0) = 10;
  const auto p = extract(b, params(ColumnMethod::Cog));
  EXPECT_EQ(p.count[0], 0);
  EXPECT_EQ(p.count[1], 1);
  EXPECT_EQ(p.position[1], 0);
  EXPECT_EQ(p.count[2], 0);
}

TEST(ExtractMax, BrightestPixelTopmostOnTies) {
  auto b = make_batch<std::uint8_t>(2, 8, 1);
  set_column(b, 0, 0, {0, 50, 90, 90, 50, 0, 0, 0});
  set_column(b, 0, 1, {0, 0, 0, 0, 0, 0, 0, 30});  // below threshold
  const auto p = extract(b, params(ColumnMethod::Max));
  EXPECT_EQ(p.position[0], 2 * 256);
  EXPECT_EQ(p.stripe_width[0], 4);
  EXPECT_EQ(p.count[1], 0);
}

TEST(ExtractWindow, BestOfTheWindowAfterTheFirstBrightPixel) {
  auto b = make_batch<std::uint8_t>(1, 20, 1);
  // First above threshold at row 3; window 4 covers rows 3..6; row 10 is brighter but outside.
  set_column(b, 0, 0, {0, 0, 0, 41, 60, 80, 70, 0, 0, 0, 250, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  auto pr = params(ColumnMethod::Window);
  pr.window = 4;
  const auto p = extract(b, pr);
  EXPECT_EQ(p.position[0], 5 * 256);
  EXPECT_EQ(p.intensity[0], 80);
  EXPECT_EQ(p.stripe_width[0], 4);
}

TEST(ExtractLocalMax, SelectionsAndSubpixel) {
  // Peaks at rows 3 (value 100, symmetric) and 12 (value 200, asymmetric).
  const std::vector<std::uint8_t> col = {0, 0, 50, 100, 50, 0, 0, 0, 0, 0, 0, 100, 200, 150, 0, 0, 0};
  auto b = make_batch<std::uint8_t>(1, static_cast<int>(col.size()), 1);
  set_column(b, 0, 0, col);
  auto pr = params(ColumnMethod::LocalMax);
  pr.neighbours = 2;
  // Parabola at 12: a=100 b=200 c=150 -> vertex offset (a-c)/(2(a-2b+c)) = -50/-300 px = +42.67/256 -> +43
  // (towards the brighter neighbour).
  const std::int32_t second = 12 * 256 + 43;
  pr.selection = SpotSelection::Strongest;
  EXPECT_EQ(extract(b, pr).position[0], second);
  pr.selection = SpotSelection::Top;
  EXPECT_EQ(extract(b, pr).position[0], 3 * 256);
  pr.selection = SpotSelection::Bottom;
  EXPECT_EQ(extract(b, pr).position[0], second);
  pr.selection = SpotSelection::All;
  pr.slots = 4;
  const auto all = extract(b, pr);
  EXPECT_EQ(all.count[0], 2);
  EXPECT_EQ(all.position[all.slot_index(0, 0, 0)], 3 * 256);
  EXPECT_EQ(all.position[all.slot_index(0, 1, 0)], second);
  EXPECT_EQ(all.position[all.slot_index(0, 2, 0)], kNoPeak);
  EXPECT_EQ(all.points(), 2u);
  EXPECT_EQ(all.overflow(), 0u);
}

TEST(ExtractLocalMax, PlateauYieldsOnePeakAndOverflowIsCounted) {
  auto b = make_batch<std::uint8_t>(1, 16, 1);
  set_column(b, 0, 0, {0, 90, 90, 90, 0, 80, 0, 70, 0, 60, 0, 50, 0, 0, 0, 0});
  auto pr = params(ColumnMethod::LocalMax);
  pr.neighbours = 1;
  pr.selection = SpotSelection::All;
  pr.slots = 3;
  const auto p = extract(b, pr);
  EXPECT_EQ(p.count[0], 5);  // 1 (the plateau) + 80 + 70 + 60 + 50
  EXPECT_EQ(p.position[p.slot_index(0, 0, 0)], 2 * 256);  // a flat top is located at its centre
  EXPECT_EQ(p.position[p.slot_index(0, 1, 0)], 5 * 256);
  EXPECT_EQ(p.points(), 3u);
  EXPECT_EQ(p.overflow(), 2u);
}

TEST(ExtractAll, EveryPixelAboveThreshold) {
  auto b = make_batch<std::uint8_t>(1, 8, 1);
  set_column(b, 0, 0, {0, 40, 39, 100, 0, 0, 41, 0});
  auto pr = params(ColumnMethod::All);
  pr.slots = 8;
  const auto p = extract(b, pr);
  EXPECT_EQ(p.count[0], 3);
  EXPECT_EQ(p.position[p.slot_index(0, 0, 0)], 1 * 256);
  EXPECT_EQ(p.position[p.slot_index(0, 1, 0)], 3 * 256);
  EXPECT_EQ(p.position[p.slot_index(0, 2, 0)], 6 * 256);
  EXPECT_EQ(p.intensity[p.slot_index(0, 2, 0)], 41);
  for (int s = 3; s < 8; ++s) EXPECT_EQ(p.position[p.slot_index(0, s, 0)], kNoPeak);
}

TEST(ExtractAll, Mono16Values) {
  auto b = make_batch<std::uint16_t>(1, 4, 1);
  px<std::uint16_t>(b, 0, 0, 2) = 60000;
  auto pr = params(ColumnMethod::Cog, 1000);
  const auto p = extract(b, pr);
  EXPECT_EQ(p.position[0], 2 * 256);
  EXPECT_EQ(p.intensity[0], 60000);
}

TEST(ChainValidation, RejectsOutOfRangeValuesNamingTheKey) {
  BatchLayout l{64, 16, 10, PixelFormat::Mono8};
  ChainConfig c;
  c.column.method = ColumnMethod::Cog;  // the fixed-threshold keys (adaptive does not use them)
  c.column.threshold = 300;
  try {
    validate_chain(c, l);
    FAIL() << "threshold 300 accepted for Mono8";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("threshold"), std::string::npos) << e.what();
  }
  c = ChainConfig{};
  c.blur_size = 4;
  EXPECT_THROW(validate_chain(c, l), ConfigError);
  c = ChainConfig{};
  c.column.method = ColumnMethod::Window;
  c.column.window = 0;
  EXPECT_THROW(validate_chain(c, l), ConfigError);
  c = ChainConfig{};
  c.column.method = ColumnMethod::Cog;
  c.column.min_width = 17;  // longer than the frame: cog could never detect anything
  EXPECT_THROW(validate_chain(c, l), ConfigError);
  c.column.method = ColumnMethod::Max;  // ...but max does not use it
  EXPECT_NO_THROW(validate_chain(c, l));
  c = ChainConfig{};
  EXPECT_EQ(validate_chain(c, l).slots, 1);
  c.column.method = ColumnMethod::All;
  EXPECT_EQ(validate_chain(c, l).slots, 16);
  c.column.method = ColumnMethod::LocalMax;
  c.column.selection = SpotSelection::All;
  c.max_peaks = 6;
  EXPECT_EQ(validate_chain(c, l).slots, 6);
}

// The fused CPU chain must equal running blur, threshold and extraction one by one.
class FusedChain : public ::testing::TestWithParam<int> {};

TEST_P(FusedChain, EqualsStageByStage) {
  const ColumnMethod method = static_cast<ColumnMethod>(GetParam());
  std::mt19937 rng(11 + GetParam());
  struct Case { int w, h, frames, capacity; };
  for (const Case c : {Case{13, 42, 3, 4}, Case{176, 113, 2, 2}, Case{333, 9, 5, 8}, Case{257, 1, 3, 3}}) {
    auto in = make_batch<std::uint8_t>(c.w, c.h, c.frames, c.capacity);
    std::uniform_int_distribution<int> noise(0, 35);
    for (int f = 0; f < c.frames; ++f)
      for (int x = 0; x < c.w; ++x) {
        const int centre = static_cast<int>(rng() % c.h);
        for (int y = 0; y < c.h; ++y) {
          const int d = y - centre;
          const int v = noise(rng) + (d * d < 9 ? 200 - 40 * d * d : 0) + ((x % 7 == 0 && y == (centre + c.h / 2) % c.h) ? 90 : 0);
          px<std::uint8_t>(in, f, x, y) = static_cast<std::uint8_t>(std::min(v, 255));
        }
      }
    ChainConfig cc;
    cc.column.method = method;
    cc.column.selection = SpotSelection::All;
    cc.blur_size = 5;
    const auto p = validate_chain(cc, in.layout);

    ProfileBatch fused(c.w, c.capacity, p.slots, &allocate_host);
    fused.poison();
    make_processor(Backend::Cpu, in.layout, cc)->process(in, fused);

    auto blurred = make_batch<std::uint8_t>(c.w, c.h, c.frames, c.capacity);
    make_blur_stage(Backend::Cpu, in.layout, kernels::make_gaussian_taps(cc.blur_size, cc.blur_sigma))->run(in, blurred);
    make_threshold_stage(Backend::Cpu, in.layout, p.threshold)->run(blurred, blurred);
    ProfileBatch staged(c.w, c.capacity, p.slots, &allocate_host);
    staged.poison();
    make_extract_stage(Backend::Cpu, in.layout, p)->run(blurred, staged);

    const std::size_t n = static_cast<std::size_t>(c.frames) * p.slots * c.w;
    ASSERT_EQ(0, std::memcmp(fused.position, staged.position, n * 4)) << c.w << "x" << c.h;
    ASSERT_EQ(0, std::memcmp(fused.intensity, staged.intensity, n * 2));
    ASSERT_EQ(0, std::memcmp(fused.stripe_width, staged.stripe_width, n * 2));
    ASSERT_EQ(0, std::memcmp(fused.quality, staged.quality, n * 2));
    ASSERT_EQ(0, std::memcmp(fused.count, staged.count, static_cast<std::size_t>(c.frames) * c.w));
    EXPECT_EQ(fused.frames, c.frames);
    EXPECT_GT(fused.points(), 0u);
    // Every slot of the filled frames was written: no poison left.
    for (std::size_t i = 0; i < n; ++i) ASSERT_NE(fused.position[i], static_cast<std::int32_t>(0xA5A5A5A5)) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryMethod, FusedChain, ::testing::Values(0, 1, 2, 3, 4), [](const auto& info) {
  return std::string(to_string(static_cast<ColumnMethod>(info.param))) == "local-max" ? std::string("local_max")
                                                                                       : std::string(to_string(static_cast<ColumnMethod>(info.param)));
});
