// The CPU backend's SIMD chain (stages/cpu/simd_chain.h) against the scalar
// loops it replaces, which stay the oracle: bit for bit, on every
// instruction set this binary has code for that this CPU runs (Highway's
// portable emulation included), odd widths and heights, 8- and 16-bit pixels
// of 8 to 16 significant bits, poisoned outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/profile.h"
#include "stages/chain.h"
#include "stages/cpu/cpu_kernels.h"
#include "stages/cpu/simd_chain.h"

namespace stripeline {
namespace {

// Runs `body` once per instruction set, forced; back to the best after.
template <class Body>
void for_each_target(const Body& body) {
  const auto targets = cpu::simd::available_targets();
  ASSERT_FALSE(targets.empty());
  for (const std::int64_t t : targets) {
    cpu::simd::force_target(t);
    SCOPED_TRACE("target " + cpu::simd::target_name(t));
    ASSERT_EQ(cpu::simd::target_name(), cpu::simd::target_name(t)) << "forcing the target did not reach the dispatch";
    body();
  }
  cpu::simd::force_target(0);
}

TEST(SimdChain, CodeForMoreThanOneInstructionSet) {
  // The portable emulation and at least one x86 vector set: the comparisons
  // below then check more than one code path.
  const auto targets = cpu::simd::available_targets();
  std::string names;
  for (const auto t : targets) names += cpu::simd::target_name(t) + " ";
  RecordProperty("targets", names);
  EXPECT_GE(targets.size(), 2u) << names;
  EXPECT_FALSE(cpu::simd::target_name().empty());
}

// Frames that look like a laser line: a Gaussian stripe per column wandering
// across the frame over a sloping, noisy background, columns without one,
// clipped columns, a second fainter stripe in some, pure noise in others.
template <class T>
std::vector<T> stripe_frame(int width, int height, int bits, unsigned seed) {
  std::mt19937 rng(seed);
  const double full = static_cast<double>((1u << bits) - 1);
  std::normal_distribution<double> noise(0.0, full / 120.0);
  std::vector<T> f(static_cast<std::size_t>(width) * height);
  for (int x = 0; x < width; ++x) {
    const int kind = static_cast<int>(rng() % 8);
    const double centre = height * (0.2 + 0.6 * (0.5 + 0.5 * std::sin(x * 0.05 + seed))) + (rng() % 5) * 0.21;
    const double sigma = 0.7 + (rng() % 6) * 0.35, amp = full * (0.15 + (rng() % 100) / 90.0);
    for (int y = 0; y < height; ++y) {
      double v = full * 0.05 + full * 0.1 * y / height + noise(rng);
      if (kind != 0) v += amp * std::exp(-(y - centre) * (y - centre) / (2 * sigma * sigma));
      if (kind == 3) v += 0.4 * amp * std::exp(-(y - centre / 2) * (y - centre / 2) / 2.0);
      if (kind == 5) v = full * (rng() % 1000) / 1000.0;
      if (v < 0) v = 0;
      if (v > full) v = full;
      f[static_cast<std::size_t>(y) * width + x] = static_cast<T>(v);
    }
  }
  return f;
}

template <class T>
void check_blur(int width, int height, int bits, const kernels::GaussianTaps& taps, int x0, int x1) {
  SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height) + " bits " + std::to_string(bits) + " blur " + std::to_string(taps.size) +
               (taps.across ? " 2-D" : " columns") + " tile [" + std::to_string(x0) + "," + std::to_string(x1) + ")");
  const auto frame = stripe_frame<T>(width, height, bits, static_cast<unsigned>(width * 31 + height));
  const int tw = x1 - x0;
  std::vector<std::uint32_t> mid(static_cast<std::size_t>(tw) * height, 0xDEADBEEFu), acc(tw);
  std::vector<T> want(static_cast<std::size_t>(tw) * height, T(0xA5)), got(want.size());
  cpu::blur_tile(frame.data(), width, height, width, x0, x1, taps, mid.data(), acc.data(), want.data());
  for_each_target([&] {
    std::fill(mid.begin(), mid.end(), 0xDEADBEEFu);
    std::fill(got.begin(), got.end(), T(0x5A));
    cpu::simd::blur_tile(frame.data(), width, height, width, x0, x1, taps, mid.data(), got.data());
    ASSERT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(T) * want.size()));
  });
}

TEST(SimdChain, BlurIsTheScalarBlurBitForBit) {
  std::vector<kernels::GaussianTaps> all_taps = {kernels::make_gaussian_taps(0, 0), kernels::make_gaussian_taps(3, 0),
                                                 kernels::make_gaussian_taps(5, 0), kernels::make_gaussian_taps(7, 0),
                                                 kernels::make_gaussian_taps(15, 4.0)};
  auto along = kernels::make_gaussian_taps(5, 0);
  along.across = false;
  all_taps.push_back(along);
  kernels::GaussianTaps lopsided;  // taps not the same from both ends: the unpaired sums
  lopsided.size = 5;
  lopsided.w = {100, 900, 2000, 1000, 96};
  all_taps.push_back(lopsided);
  for (const auto& taps : all_taps)
    for (const int width : {1, 2, 7, 17, 33, 256, 257, 2047, 2049})
      for (const int height : {1, 2, 7, 52}) {
        check_blur<std::uint8_t>(width, height, 8, taps, 0, width);
        check_blur<std::uint16_t>(width, height, 16, taps, 0, width);
        if (width > 20) {  // tiles away from the frame's edges and against each
          check_blur<std::uint8_t>(width, height, 8, taps, 3, width - 5);
          check_blur<std::uint16_t>(width, height, 12, taps, width - 19, width);
          check_blur<std::uint16_t>(width, height, 16, taps, 0, 19);
        }
      }
}

template <class T>
void check_summary(int width, int height, int bits, std::uint32_t min_contrast) {
  SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height) + " bits " + std::to_string(bits) + " min_contrast " +
               std::to_string(min_contrast));
  const auto frame = stripe_frame<T>(width, height, bits, static_cast<unsigned>(width + height * 7 + bits));
  kernels::ColumnParams p{.method = kernels::ColumnMethod::Adaptive};
  p.min_contrast = min_contrast;
  const int words = cpu::simd::candidate_words(height);
  std::vector<std::uint32_t> lowest(width), tv(width), top(width), bits_out(static_cast<std::size_t>(words) * width);
  std::vector<std::int32_t> brightest(width);
  const cpu::simd::TileSummary out{lowest.data(), tv.data(), brightest.data(), top.data(), bits_out.data()};
  for_each_target([&] {
    for (auto* v : {&lowest, &tv, &top, &bits_out}) std::fill(v->begin(), v->end(), 0xDEADBEEFu);
    std::fill(brightest.begin(), brightest.end(), -77);
    cpu::simd::summarise_tile(frame.data(), width, width, height, p, out);
    for (int x = 0; x < width; ++x) {
      auto column = [&](int y) -> std::uint32_t { return frame[static_cast<std::size_t>(y) * width + x]; };
      const auto s = kernels::adaptive::summarise(column, height);
      ASSERT_EQ(lowest[x], s.lowest) << "column " << x;
      ASSERT_EQ(tv[x], s.tv) << "column " << x;
      ASSERT_EQ(brightest[x], s.brightest) << "column " << x;
      ASSERT_EQ(top[x], s.top) << "column " << x;
      int candidates = 0;
      for (int y = 0; y < height; ++y) {
        const bool want = kernels::adaptive::is_candidate(column, height, y, s.lowest, p);
        const bool got = (bits_out[static_cast<std::size_t>(y / 32) * width + x] >> (y % 32)) & 1u;
        ASSERT_EQ(want, got) << "column " << x << " row " << y;
        candidates += want;
      }
      // next_candidate walks exactly those rows.
      int walked = 0;
      for (int y = cpu::simd::next_candidate(bits_out.data(), width, x, 0, height); y < height;
           y = cpu::simd::next_candidate(bits_out.data(), width, x, y + 1, height)) {
        ASSERT_TRUE(kernels::adaptive::is_candidate(column, height, y, s.lowest, p)) << "column " << x << " row " << y;
        ++walked;
      }
      ASSERT_EQ(walked, candidates) << "column " << x;
    }
  });
}

TEST(SimdChain, ColumnSummaryIsTheScalarPassBitForBit) {
  for (const int width : {1, 7, 16, 33, 257, 2049})
    for (const int height : {2, 3, 31, 32, 33, 52, 64, 65, 200}) {
      check_summary<std::uint8_t>(width, height, 8, 20);
      check_summary<std::uint8_t>(width, height, 8, 0);
      for (const int bits : {10, 12, 14, 16}) check_summary<std::uint16_t>(width, height, bits, 20u << (bits - 8));
      check_summary<std::uint16_t>(width, height, 16, 1);
      check_summary<std::uint16_t>(width, height, 16, 70000);  // no candidate can pass
    }
}

// Every field of the brightest row's evaluation, where the scan asks it.
template <class T>
void check_brightest(int width, int height, int bits, const kernels::ColumnParams& p, unsigned seed) {
  SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height) + " bits " + std::to_string(bits) + " seed " + std::to_string(seed));
  const auto frame = stripe_frame<T>(width, height, bits, seed);
  auto raw = frame;  // the unblurred data: the frame, a little changed
  for (std::size_t i = 0; i < raw.size(); i += 7) raw[i] = static_cast<T>(raw[i] / 2);
  const int words = cpu::simd::candidate_words(height);
  std::vector<std::uint32_t> lowest(width), tv(width), top(width), cand(static_cast<std::size_t>(words) * width);
  std::vector<std::int32_t> brightest(width);
  std::vector<kernels::adaptive::Stripe> stripes(width);
  std::vector<std::int32_t> centres(width);
  const cpu::simd::TileSummary s{lowest.data(), tv.data(), brightest.data(), top.data(), cand.data(), stripes.data(), centres.data()};
  for_each_target([&] {
    int asked = 0, valid = 0;
    cpu::simd::summarise_tile(frame.data(), width, width, height, p, s);
    for (auto& st : stripes) st.peak = -999, st.valid = true, st.first = -5;  // poison
    std::fill(centres.begin(), centres.end(), kNoPeak + 17);
    cpu::simd::evaluate_brightest(frame.data(), width, raw.data(), width, width, height, p, s);
    for (int x = 0; x < width; ++x) {
      if (!(top[x] - lowest[x] >= p.min_contrast && top[x] > lowest[x])) continue;
      auto column = [&](int y) -> std::uint32_t { return frame[static_cast<std::size_t>(y) * width + x]; };
      auto raw_column = [&](int y) -> std::uint32_t { return raw[static_cast<std::size_t>(y) * width + x]; };
      const auto want = kernels::adaptive::evaluate(column, raw_column, height, brightest[x], p, tv[x]);
      const auto& got = stripes[x];
      ++asked;
      valid += want.valid;
      ASSERT_EQ(want.valid, got.valid) << "column " << x;
      ASSERT_EQ(want.peak, got.peak) << "column " << x;
      ASSERT_EQ(want.value, got.value) << "column " << x;
      ASSERT_EQ(want.prominence, got.prominence) << "column " << x;
      if (!want.valid) continue;  // the scan reads nothing else of an invalid stripe
      ASSERT_EQ(want.anchor_lo, got.anchor_lo) << "column " << x;
      ASSERT_EQ(want.anchor_hi, got.anchor_hi) << "column " << x;
      ASSERT_EQ(want.bg_lo, got.bg_lo) << "column " << x;
      ASSERT_EQ(want.bg_hi, got.bg_hi) << "column " << x;
      ASSERT_EQ(want.slope_q12, got.slope_q12) << "column " << x;
      ASSERT_EQ(want.contrast, got.contrast) << "column " << x;
      ASSERT_EQ(want.valley, got.valley) << "column " << x;
      ASSERT_EQ(want.first, got.first) << "column " << x;
      ASSERT_EQ(want.last, got.last) << "column " << x;
      ASSERT_EQ(kernels::adaptive::centre(column, raw_column, height, want, p), centres[x]) << "column " << x;
    }
    if (width >= 200 && height >= 17) {
      EXPECT_GT(asked, width / 2) << "most columns are asked";
      EXPECT_GT(valid, width / 8) << "and many hold a stripe: the comparison means something";
    }
  });
}

// The centres of the brightest rows' stripes (the centroid's sums across
// columns; the other estimators and the flat tops per column), every
// estimator, centroid levels, 8 to 16 bits (the 32-bit lanes' bounds: the
// deep pixels' columns fall back to the scalar code).
TEST(SimdChain, BrightestRowCentreIsTheScalarOneBitForBit) {
  const BatchLayout l8{64, 52, 1, PixelFormat::Mono8}, l16{64, 52, 1, PixelFormat::Mono16};
  for (const auto estimator : {SubpixelEstimator::Centroid, SubpixelEstimator::Gauss, SubpixelEstimator::Parabola, SubpixelEstimator::Steger})
    for (const double centroid_level : {0.0, 0.3})
      for (const int max_width : {16, 5}) {
        ChainConfig c;
        c.adaptive.estimator = estimator;
        c.adaptive.centroid_level = centroid_level;
        c.adaptive.max_width = max_width;
        const kernels::ColumnParams p8 = validate_chain(c, l8);
        for (const int width : {1, 15, 17, 33, 517})
          for (const int height : {2, 3, 17, 52, 130}) check_brightest<std::uint8_t>(width, height, 8, p8, static_cast<unsigned>(width * 5 + height));
        for (const int bits : {9, 11, 12, 14, 16}) {
          c.adaptive.pixel_bits = bits;
          const kernels::ColumnParams p16 = validate_chain(c, l16);
          check_brightest<std::uint16_t>(517, 52, bits, p16, static_cast<unsigned>(bits * 3));
          check_brightest<std::uint16_t>(33, 300, bits, p16, static_cast<unsigned>(bits + 7));
        }
      }
}

TEST(SimdChain, BrightestRowEvaluationIsTheScalarOneBitForBit) {
  const BatchLayout l8{64, 52, 1, PixelFormat::Mono8}, l16{64, 52, 1, PixelFormat::Mono16};
  for (const double noise : {4.0, 0.0})
    for (const int max_width : {16, 4, 40})
      for (const double level : {0.5, 0.25}) {
        ChainConfig c;
        c.adaptive.noise_factor = noise;
        c.adaptive.max_width = max_width;
        c.adaptive.level = level;
        const kernels::ColumnParams p8 = validate_chain(c, l8);
        for (const int width : {1, 7, 33, 517})
          for (const int height : {2, 3, 17, 52, 130}) check_brightest<std::uint8_t>(width, height, 8, p8, static_cast<unsigned>(width + height));
        for (const int bits : {10, 12, 14, 16}) {
          c.adaptive.pixel_bits = bits;
          const kernels::ColumnParams p16 = validate_chain(c, l16);
          check_brightest<std::uint16_t>(517, 52, bits, p16, static_cast<unsigned>(bits));
          check_brightest<std::uint16_t>(33, 300, bits, p16, static_cast<unsigned>(bits + 1));
        }
      }
}

// The whole per-tile chain, blur then adaptive extraction, both ways.
template <class T>
void check_extraction(int width, int height, int bits, const ChainConfig& cc, int tile) {
  const BatchLayout layout{width, height, 1, sizeof(T) == 1 ? PixelFormat::Mono8 : PixelFormat::Mono16};
  ChainConfig c = cc;
  c.adaptive.pixel_bits = bits;
  const kernels::ColumnParams p = validate_chain(c, layout);
  const kernels::GaussianTaps taps = chain_blur_taps(c);
  SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height) + " bits " + std::to_string(bits) + " estimator " +
               to_string(c.adaptive.estimator) + " selection " + to_string(c.column.selection) + " tile " + std::to_string(tile));
  const auto frame = stripe_frame<T>(width, height, bits, static_cast<unsigned>(width * 3 + height + bits));
  auto run = [&](bool simd, ProfileBatch& out) {
    out.poison();
    std::vector<std::uint32_t> mid(static_cast<std::size_t>(tile) * height), acc(tile);
    std::vector<T> blurred(static_cast<std::size_t>(tile) * height);
    const int words = cpu::simd::candidate_words(height);
    std::vector<std::uint32_t> lowest(tile), tv(tile), top(tile), cand(static_cast<std::size_t>(words) * tile);
    std::vector<std::int32_t> brightest(tile);
    std::vector<kernels::adaptive::Stripe> stripes(tile);
    std::vector<std::int32_t> centres(tile);
    const cpu::simd::TileSummary s{lowest.data(), tv.data(), brightest.data(), top.data(), cand.data()};
    for (int x0 = 0; x0 < width; x0 += tile) {
      const int x1 = x0 + tile < width ? x0 + tile : width, tw = x1 - x0;
      auto pixel = [&](int x, int y) -> std::uint32_t { return blurred[static_cast<std::size_t>(y) * tw + (x - x0)]; };
      auto raw = [&](int x, int y) -> std::uint32_t { return frame[static_cast<std::size_t>(y) * width + x]; };
      if (!simd) {
        cpu::blur_tile(frame.data(), width, height, width, x0, x1, taps, mid.data(), acc.data(), blurred.data());
        cpu::extract_tile(pixel, raw, height, x0, x1, 0, p, out);
        continue;
      }
      cpu::simd::blur_tile(frame.data(), width, height, width, x0, x1, taps, mid.data(), blurred.data());
      cpu::simd::TileSummary sum = s;
      cpu::simd::summarise_tile(blurred.data(), tw, tw, height, p, sum);
      if (p.selection != SpotSelection::Top) {  // as the backend (strongest, all), and bottom: the brightest rows evaluated across columns
        sum.stripes = stripes.data();
        if (p.selection != SpotSelection::Bottom) sum.centres = centres.data();  // bottom: the scan's own centre
        cpu::simd::evaluate_brightest(blurred.data(), tw, frame.data() + x0, width, tw, height, p, sum);
      }
      cpu::extract_tile_adaptive(pixel, raw, height, x0, x1, 0, p, sum, out);
    }
  };
  ProfileBatch want(width, 1, p.slots, &allocate_host), got(width, 1, p.slots, &allocate_host);
  run(false, want);
  const std::size_t n = static_cast<std::size_t>(p.slots) * width;
  int found = 0;
  for (int x = 0; x < width; ++x) found += want.count[x];
  if (width >= 64) EXPECT_GT(found, width / 4) << "the frames hold stripes: the comparison means something";
  for_each_target([&] {
    run(true, got);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(want.position[i], got.position[i]) << "element " << i;
      ASSERT_EQ(want.intensity[i], got.intensity[i]) << "element " << i;
      ASSERT_EQ(want.stripe_width[i], got.stripe_width[i]) << "element " << i;
      ASSERT_EQ(want.quality[i], got.quality[i]) << "element " << i;
    }
    ASSERT_EQ(0, std::memcmp(want.count, got.count, static_cast<std::size_t>(width)));
  });
}

TEST(SimdChain, AdaptiveExtractionIsTheScalarOneBitForBit) {
  for (const auto estimator : {SubpixelEstimator::Centroid, SubpixelEstimator::Gauss, SubpixelEstimator::Parabola, SubpixelEstimator::Steger})
    for (const auto selection : {SpotSelection::Strongest, SpotSelection::Top, SpotSelection::Bottom, SpotSelection::All})
      for (const bool across : {true, false}) {
        ChainConfig c;
        c.adaptive.estimator = estimator;
        c.column.selection = selection;
        c.blur_across = across;
        check_extraction<std::uint8_t>(2049, 52, 8, c, 256);
        check_extraction<std::uint16_t>(333, 61, 12, c, 100);
      }
  ChainConfig c;
  for (const int bits : {10, 14, 16}) check_extraction<std::uint16_t>(517, 52, bits, c, 256);
  for (const int width : {1, 7, 33})
    for (const int height : {2, 5, 52}) {
      check_extraction<std::uint8_t>(width, height, 8, c, 256);
      check_extraction<std::uint16_t>(width, height, 16, c, 256);
    }
  c.blur_size = 0;  // no blur: the raw frame is the column
  check_extraction<std::uint8_t>(1000, 52, 8, c, 256);
  c.blur_size = 15;
  check_extraction<std::uint16_t>(1000, 200, 12, c, 256);
}

// The backend itself (CpuProcessor: tiles of 256 columns over TBB, the SIMD
// path) against the scalar loops run over each whole frame as one tile.
template <class T>
void check_backend(int width, int height, int frames, int bits, const ChainConfig& cc) {
  const BatchLayout layout{width, height, frames, sizeof(T) == 1 ? PixelFormat::Mono8 : PixelFormat::Mono16};
  ChainConfig c = cc;
  c.adaptive.pixel_bits = bits;
  const kernels::ColumnParams p = validate_chain(c, layout);
  const kernels::GaussianTaps taps = chain_blur_taps(c);
  SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height) + " x" + std::to_string(frames) + " bits " + std::to_string(bits) +
               " selection " + to_string(c.column.selection) + (c.blur_across ? " 2-D" : " columns") +
               (line_model_runs(c) ? " line model K " + std::to_string(c.line_model.candidates) + " min_length " + std::to_string(c.line_model.min_length) : ""));
  Batch batch(layout, &allocate_host);
  batch.frames = frames;
  for (int f = 0; f < frames; ++f) {
    const auto frame = stripe_frame<T>(width, height, bits, static_cast<unsigned>(f * 101 + bits));
    std::memcpy(batch.frame_data(f), frame.data(), sizeof(T) * frame.size());
  }
  ProfileBatch got(width, frames, p.slots, &allocate_host), want(width, frames, p.slots, &allocate_host);
  got.poison();
  want.poison();
  make_processor(Backend::Cpu, layout, c)->process(batch, got);
  // The oracle: with the line model on, the candidates (selection all) and
  // then the kernel's own loop over the frames (kernels::line_model_cpu).
  const kernels::LineModelParams line = validate_line_model(c, p);
  const kernels::ColumnParams e = extraction_params(p, line);
  ProfileBatch candidates(width, frames, e.slots, &allocate_host);
  candidates.poison();
  ProfileBatch& extracted = line.candidates > 0 ? candidates : want;
  std::vector<std::uint32_t> mid(static_cast<std::size_t>(width) * height), acc(width);
  std::vector<T> blurred(static_cast<std::size_t>(width) * height);
  for (int f = 0; f < frames; ++f) {
    const T* frame = reinterpret_cast<const T*>(batch.frame_data(f));
    cpu::blur_tile(frame, width, height, width, 0, width, taps, mid.data(), acc.data(), blurred.data());
    auto pixel = [&](int x, int y) -> std::uint32_t { return blurred[static_cast<std::size_t>(y) * width + x]; };
    auto raw = [&](int x, int y) -> std::uint32_t { return frame[static_cast<std::size_t>(y) * width + x]; };
    cpu::extract_tile(pixel, raw, height, 0, width, f, e, extracted);
  }
  if (line.candidates > 0) {
    std::vector<std::uint8_t> back(kernels::line_model_scratch_bytes(line.candidates, width, frames), 0xCC);
    kernels::LineModelView v;
    v.in = {candidates.position, candidates.intensity, candidates.stripe_width, candidates.quality, candidates.count};
    v.out = {want.position, want.intensity, want.stripe_width, want.quality, want.count};
    v.back = back.data(), v.back_stride = static_cast<std::size_t>(frames), v.frames = frames, v.width = width;
    kernels::line_model_cpu(v, line, 0, frames);
  }
  const std::size_t n = static_cast<std::size_t>(frames) * p.slots * width;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(want.position[i], got.position[i]) << "element " << i;
    ASSERT_EQ(want.intensity[i], got.intensity[i]) << "element " << i;
    ASSERT_EQ(want.stripe_width[i], got.stripe_width[i]) << "element " << i;
    ASSERT_EQ(want.quality[i], got.quality[i]) << "element " << i;
  }
  ASSERT_EQ(0, std::memcmp(want.count, got.count, static_cast<std::size_t>(frames) * width));
}

TEST(SimdChain, CpuBackendIsTheScalarChainBitForBit) {
  ChainConfig c;  // the default chain: the line model on (its walk: cpu::line_model_frame against the kernel's)
  check_backend<std::uint8_t>(2049, 52, 3, 8, c);
  check_backend<std::uint16_t>(1937, 52, 3, 12, c);
  check_backend<std::uint8_t>(33, 17, 4, 8, c);
  // Frames enough for whole frames per task (the candidates in the thread's
  // one-frame profiles) on a host of up to 32 threads.
  check_backend<std::uint8_t>(517, 52, 65, 8, c);
  check_backend<std::uint16_t>(300, 52, 65, 12, c);
  c.line_model.candidates = 3;
  check_backend<std::uint16_t>(517, 52, 2, 16, c);
  c.line_model.candidates = 8;
  c.line_model.min_length = 40;  // most segments dropped: passes 2 and 3
  check_backend<std::uint8_t>(2049, 52, 3, 8, c);
  c.line_model = LineModelConfig{};
  c.line_model.enabled = false;  // the default chain's extraction alone
  check_backend<std::uint8_t>(2049, 52, 3, 8, c);
  check_backend<std::uint16_t>(2049, 52, 2, 12, c);
  check_backend<std::uint16_t>(300, 1, 2, 16, c);  // one row: the scalar fallback
  c.blur_across = false;
  check_backend<std::uint8_t>(517, 61, 2, 8, c);
  c.blur_across = true;
  c.column.selection = SpotSelection::All;  // the brightest rows evaluated across columns, the others per column
  check_backend<std::uint8_t>(517, 52, 2, 8, c);
  c.column.selection = SpotSelection::Top;
  check_backend<std::uint16_t>(517, 52, 2, 16, c);
}

}  // namespace
}  // namespace stripeline
