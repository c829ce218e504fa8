// The line model (kernels/line_model.h): the laser line chosen per frame as a
// path across the columns. The CPU kernel on hand-made candidates (the
// oracle's cases), through the CPU processor, its keys validated, the CUDA
// kernel and processor bit for bit against the CPU (skipped without a GPU),
// and the evaluation with the line model on and off (printed tables: real
// photographs against the Steger reference, synthetic hard cases against
// their truth, the CPU cost), as docs/extraction.md quotes them:
//
//   build/tests/unit_tests --gtest_filter='LineModel*'
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "extraction_eval.h"
#include "pipeline/scan_metadata.h"
#include "gpu_test.h"
#include "kernels/line_model.h"
#include "kernels/line_model_lanes.h"
#include "stages/chain.h"
#include "stages/cpu/line_model_cpu.h"
#include "test_helpers.h"
#if STRIPELINE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda/runtime.h"
#include "kernels/cuda/line_model_kernels.h"
#include "kernels/cuda/live_kernels.h"
#include "stages/cuda/cuda_stages.h"
using stripeline::cuda::DeviceBuffer;
#endif

using namespace stripeline;

namespace {

// ---------------------------------------------------------------------------
// Hand-made candidates: frames x width columns, K slots.

struct Cand {
  double row;
  int contrast;   // 8-bit levels (quality)
  int width = 3;  // run width, pixels
  int intensity = 150;
};

struct Candidates {
  int frames, width, k;
  std::vector<std::int32_t> position;
  std::vector<std::uint16_t> intensity, stripe_width, quality;
  std::vector<std::uint8_t> count;
  Candidates(int f, int w, int slots)
      : frames(f),
        width(w),
        k(slots),
        position(static_cast<std::size_t>(f) * w * slots, kNoPeak),
        intensity(position.size(), 0),
        stripe_width(position.size(), 0),
        quality(position.size(), 0),
        count(static_cast<std::size_t>(f) * w, 0) {}
  std::size_t at(int f, int s, int x) const { return (static_cast<std::size_t>(f) * k + s) * width + x; }
  void add(int f, int x, const Cand& c) {
    std::uint8_t& n = count[static_cast<std::size_t>(f) * width + x];
    if (n < k) {
      const std::size_t i = at(f, n, x);
      position[i] = static_cast<std::int32_t>(std::lround(c.row * kPositionOne));
      quality[i] = static_cast<std::uint16_t>(c.contrast);
      stripe_width[i] = static_cast<std::uint16_t>(c.width);
      intensity[i] = static_cast<std::uint16_t>(c.intensity);
    }
    ++n;
  }
  kernels::LineModelArrays arrays() { return {position.data(), intensity.data(), stripe_width.data(), quality.data(), count.data()}; }
};

// Single-slot output, poisoned so that an unwritten element shows.
struct Output {
  std::vector<std::int32_t> position;
  std::vector<std::uint16_t> intensity, stripe_width, quality;
  std::vector<std::uint8_t> count;
  Output(int frames, int width)
      : position(static_cast<std::size_t>(frames) * width, 0x5A5A5A5A),
        intensity(position.size(), 0xA5A5),
        stripe_width(position.size(), 0xA5A5),
        quality(position.size(), 0xA5A5),
        count(position.size(), 0xEE) {}
  kernels::LineModelArrays arrays() { return {position.data(), intensity.data(), stripe_width.data(), quality.data(), count.data()}; }
  // Row of (frame, column), or -1 when empty.
  double row(int f, int x, int width) const {
    const std::size_t i = static_cast<std::size_t>(f) * width + x;
    return count[i] ? position_to_row(position[i]) : -1.0;
  }
};

// The model's parameters for 8-bit data, in the user's units.
kernels::LineModelParams params(int k, double segment_cost = 64.0, int min_length = 8, double step = 2.0, double jump_cost = 4.0,
                                double width_cost = 2.0, int line_width = 8) {
  kernels::LineModelParams p;
  p.candidates = k;
  p.strength_shift = 0;
  p.line_width = line_width;
  p.step_q8 = static_cast<std::int32_t>(step * 256);
  p.jump_cost_q8 = static_cast<std::int32_t>(jump_cost * 256);
  p.width_cost_q8 = static_cast<std::int32_t>(width_cost * 256);
  p.intensity_cost_q8 = 0;
  p.segment_cost_q8 = static_cast<std::int32_t>(segment_cost * 256);
  p.min_length = min_length;
  return p;
}

// Runs the CPU kernel on every frame; returns the chosen row per column of frame 0 (-1 = none).
std::vector<double> choose(Candidates& c, const kernels::LineModelParams& p, Output* keep = nullptr) {
  Output out(c.frames, c.width);
  std::vector<std::uint8_t> back(kernels::line_model_scratch_bytes(c.k, c.width, c.frames), 0xCC);
  kernels::LineModelView v;
  v.in = c.arrays(), v.out = out.arrays(), v.back = back.data(), v.back_stride = static_cast<std::size_t>(c.frames);
  v.frames = c.frames, v.width = c.width;
  kernels::line_model_cpu(v, p, 0, c.frames);
  std::vector<double> rows(static_cast<std::size_t>(c.width));
  for (int x = 0; x < c.width; ++x) rows[static_cast<std::size_t>(x)] = out.row(0, x, c.width);
  for (std::size_t i = 0; i < out.count.size(); ++i) {  // every element written: one point or an empty column
    EXPECT_LE(out.count[i], 1) << i;
    if (out.count[i] == 0) {
      EXPECT_EQ(out.position[i], kNoPeak) << i;
      EXPECT_EQ(out.intensity[i] + out.stripe_width[i] + out.quality[i], 0) << i;
    }
  }
  if (keep) *keep = out;
  return rows;
}

int chosen_columns(const std::vector<double>& rows) {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](double r) { return r >= 0.0; }));
}

}  // namespace

// A line with a brighter texture edge off it: the edge is a wide bright
// band (a print's white border) 20 rows away over 30 columns. Per column
// the band is the strongest candidate; the line model keeps the line.
TEST(LineModel, TheLineWinsOverABrighterWideEdgeOffIt) {
  Candidates c(1, 100, 4);
  for (int x = 0; x < 100; ++x) {
    if (x >= 40 && x < 70) c.add(0, x, {10.0 + 0.3 * x, 120, 14});  // the band above the line, brighter, 14 px wide
    c.add(0, x, {30.0 + 0.3 * x, 70, 3});
  }
  const auto rows = choose(c, params(4));
  for (int x = 0; x < 100; ++x) EXPECT_NEAR(rows[static_cast<std::size_t>(x)], 30.0 + 0.3 * x, 0.01) << x;
  // Narrow and brighter over a stretch long enough to pay for two breaks, it
  // would be taken: the model weighs strength against the breaks, it does
  // not forbid them.
  Candidates d(1, 100, 4);
  for (int x = 0; x < 100; ++x) {
    if (x >= 40 && x < 70) d.add(0, x, {10.0 + 0.3 * x, 120, 3});
    d.add(0, x, {30.0 + 0.3 * x, 70, 3});
  }
  const auto taken = choose(d, params(4));
  EXPECT_NEAR(taken[55], 10.0 + 0.3 * 55, 0.01);
  // ... unless leaving the line costs more than it gains: 30 x 50 levels <
  // 2 x min(jump 18 rows beyond the step x 100, break 800).
  const auto kept = choose(d, params(4, 800.0, 8, 2.0, 100.0));
  EXPECT_NEAR(kept[55], 30.0 + 0.3 * 55, 0.01);
}

// A short bright segment off the line (a speck of glare over 5 columns)
// does not pull the line away, and alone (no line in those columns) it is
// dropped as shorter than min_length.
TEST(LineModel, AShortSpuriousSegmentIsDropped) {
  Candidates c(1, 80, 4);
  for (int x = 0; x < 80; ++x) {
    if (x >= 20 && x < 25) c.add(0, x, {5.0, 80, 3});  // 5 x 20 levels more than the line: less than two breaks (2 x 64)
    if (x < 50) c.add(0, x, {30.0, 60, 3});
    if (x >= 60 && x < 65) c.add(0, x, {12.0, 200, 3});  // alone: no line here
  }
  const auto rows = choose(c, params(4));
  for (int x = 0; x < 50; ++x) EXPECT_NEAR(rows[static_cast<std::size_t>(x)], 30.0, 0.01) << x;
  for (int x = 50; x < 80; ++x) EXPECT_EQ(rows[static_cast<std::size_t>(x)], -1.0) << x;
  // The same 5 columns with min_length 5 are a segment of their own.
  const auto short_ok = choose(c, params(4, 64.0, 5));
  EXPECT_NEAR(short_ok[62], 12.0, 0.01);
  // min_length is exact: 7 columns go at 8, 8 stay.
  Candidates e(1, 30, 2);
  for (int x = 2; x < 9; ++x) e.add(0, x, {10.0, 100, 3});
  for (int x = 15; x < 23; ++x) e.add(0, x, {10.0, 100, 3});
  const auto r = choose(e, params(2, 10.0, 8));
  EXPECT_EQ(chosen_columns(r), 8);
  EXPECT_EQ(r[5], -1.0);
  EXPECT_NEAR(r[15], 10.0, 0.01);
  EXPECT_NEAR(r[22], 10.0, 0.01);
}

// A short detour strong enough to be taken (5 columns x 140 levels more
// than the line, more than two breaks) is dropped as shorter than
// min_length, and the frame solved again without it: the line comes back
// in those columns, no hole.
TEST(LineModel, ADroppedDetourGivesTheLineBack) {
  Candidates c(1, 60, 2);
  for (int x = 0; x < 60; ++x) {
    if (x >= 20 && x < 25) c.add(0, x, {5.0, 200, 3});
    c.add(0, x, {30.0, 60, 3});
  }
  const auto rows = choose(c, params(2));
  for (int x = 0; x < 60; ++x) EXPECT_NEAR(rows[static_cast<std::size_t>(x)], 30.0, 0.01) << x;
  // Long enough to stay (min_length 5), the detour is the better path.
  const auto kept = choose(c, params(2, 64.0, 5));
  EXPECT_NEAR(kept[22], 5.0, 0.01);
  EXPECT_NEAR(kept[30], 30.0, 0.01);
}

// Where the data holds no candidate the line breaks, and both sides stay;
// a step of the surface (25 rows from one column to the next) is a break
// too, not a reason to leave either side.
TEST(LineModel, GapsAndStepsBreakTheLine) {
  Candidates c(1, 90, 2);
  for (int x = 0; x < 90; ++x) {
    if (x >= 30 && x < 35) continue;  // a gap: no stripe at all
    c.add(0, x, {x < 60 ? 20.0 : 45.0, 60, 3});
  }
  const auto rows = choose(c, params(2));
  for (int x = 0; x < 90; ++x) {
    if (x >= 30 && x < 35)
      EXPECT_EQ(rows[static_cast<std::size_t>(x)], -1.0) << x;
    else
      EXPECT_NEAR(rows[static_cast<std::size_t>(x)], x < 60 ? 20.0 : 45.0, 0.01) << x;
  }
}

// A steep but continuous line (3 rows per column, beyond the free step of
// 2) is kept whole: each column's jump costs less than its strength.
TEST(LineModel, ASteepContinuousLineIsKept) {
  Candidates c(1, 40, 3);
  for (int x = 0; x < 40; ++x) {
    c.add(0, x, {5.0 + 3.0 * x, 40, 3});
    if (x % 7 == 0) c.add(0, x, {200.0, 45, 3});  // specks far away, a column each
  }
  const auto rows = choose(c, params(3));
  for (int x = 0; x < 40; ++x) EXPECT_NEAR(rows[static_cast<std::size_t>(x)], 5.0 + 3.0 * x, 0.01) << x;
  // With a jump cost above the strength it breaks into pieces (each too
  // short to stay, or paying for its start): never a point off the line.
  const auto costly = choose(c, params(3, 64.0, 8, 2.0, 100.0));
  for (int x = 0; x < 40; ++x)
    if (costly[static_cast<std::size_t>(x)] >= 0.0) EXPECT_NEAR(costly[static_cast<std::size_t>(x)], 5.0 + 3.0 * x, 0.01) << x;
}

// Frames are independent; the chosen values are the candidate's own (every
// field copied), and more candidates than slots only count.
TEST(LineModel, FramesAreIndependentAndFieldsAreCopied) {
  Candidates c(3, 20, 2);
  for (int x = 0; x < 20; ++x) {
    c.add(0, x, {10.0, 50, 4, 111});
    c.add(1, x, {12.5, 80, 2, 222});
    c.add(1, x, {40.0, 20, 2, 99});
    c.add(1, x, {41.0, 20, 2, 99});  // beyond the 2 slots: counted, not read
  }
  Output out(3, 20);
  choose(c, params(2), &out);
  for (int x = 0; x < 20; ++x) {
    EXPECT_NEAR(out.row(0, x, 20), 10.0, 0.01);
    EXPECT_NEAR(out.row(1, x, 20), 12.5, 0.01);
    EXPECT_EQ(out.row(2, x, 20), -1.0);
    EXPECT_EQ(out.intensity[static_cast<std::size_t>(x)], 111);
    EXPECT_EQ(out.stripe_width[static_cast<std::size_t>(x)], 4);
    EXPECT_EQ(out.quality[static_cast<std::size_t>(20 + x)], 80);
  }
}

// Through the CPU processor: a dim line, and a short bright stripe 20 rows
// above it over 6 columns. Per column the bright stripe wins there; with the
// line model the line does, and the profiles have one slot.
TEST(LineModel, TheProcessorKeepsTheLineAndOneSlot) {
  const int w = 64, h = 48;
  Batch b = test::make_batch<std::uint8_t>(w, h, 1);
  auto* px = reinterpret_cast<std::uint8_t*>(b.pixels.data());
  std::memset(px, 10, b.pixels.size());
  auto stripe = [&](int x, int row, int peak) {
    for (int dy = -2; dy <= 2; ++dy) px[(row + dy) * w + x] = static_cast<std::uint8_t>(dy == 0 ? peak : (dy == 1 || dy == -1 ? 10 + (peak - 10) / 2 : 20));
  };
  for (int x = 0; x < w; ++x) stripe(x, 30, 90);
  for (int x = 30; x < 36; ++x) stripe(x, 10, 220);
  ChainConfig chain;
  chain.blur_size = 0;
  chain.line_model.enabled = false;
  ProfileBatch off(w, 1, 1, &allocate_host);
  make_processor(Backend::Cpu, b.layout, chain)->process(b, off);
  EXPECT_NEAR(position_to_row(off.position[32]), 10.0, 0.1) << "per column, the bright stripe";
  chain.line_model.enabled = true;
  chain.line_model.segment_cost = 600.0;  // 6 columns x (210 - 80) levels gained < 2 breaks (or jumps of 18 rows beyond the step)
  chain.line_model.jump_cost = 50.0;
  ASSERT_EQ(output_slots(chain, h), 1);
  auto p = make_processor(Backend::Cpu, b.layout, chain);
  EXPECT_EQ(p->slots(), 1);
  ProfileBatch on(w, 1, 1, &allocate_host);
  on.poison();
  p->process(b, on);
  for (int x = 0; x < w; ++x) {
    ASSERT_EQ(on.peaks(0, x), 1) << x;
    EXPECT_NEAR(position_to_row(on.position[x]), 30.0, 0.1) << x;
  }
  // With the neighbour check after it (single slot): nothing isolated to remove.
  chain.neighbour_check.columns = 1;
  ProfileBatch both(w, 1, 1, &allocate_host);
  make_processor(Backend::Cpu, b.layout, chain)->process(b, both);
  EXPECT_EQ(both.points(), static_cast<std::uint64_t>(w));
}

TEST(LineModel, KeysAreValidatedNamingTheKey) {
  const BatchLayout l{64, 16, 10, PixelFormat::Mono8};
  auto message = [&](const ChainConfig& c) -> std::string {
    try {
      validate_chain(c, l);
      make_processor(Backend::Cpu, l, c);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  auto expect_key = [&](ChainConfig c, const char* key) {
    const std::string m = message(c);
    EXPECT_NE(m.find(key), std::string::npos) << key << ": " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
  };
  ChainConfig on;
  on.line_model.enabled = true;
  EXPECT_EQ(message(on), "");
  { ChainConfig c = on; c.line_model.candidates = 1; expect_key(c, "line_candidates"); }
  { ChainConfig c = on; c.line_model.candidates = 9; expect_key(c, "line_candidates"); }
  { ChainConfig c = on; c.line_model.step = -1.0; expect_key(c, "line_step"); }
  { ChainConfig c = on; c.line_model.jump_cost = 300.0; expect_key(c, "line_jump_cost"); }
  { ChainConfig c = on; c.line_model.width_cost = std::nan(""); expect_key(c, "line_width_cost"); }
  { ChainConfig c = on; c.line_model.intensity_cost = 17.0; expect_key(c, "line_intensity_cost"); }
  { ChainConfig c = on; c.line_model.segment_cost = -1.0; expect_key(c, "line_segment_cost"); }
  { ChainConfig c = on; c.line_model.min_length = 0; expect_key(c, "line_min_length"); }
  { ChainConfig c = on; c.line_model.line_width = 0; expect_key(c, "line_width"); }
  // Bad values are refused even with the model off (a typo never waits for the day it is turned on).
  { ChainConfig c; c.line_model.candidates = 0; expect_key(c, "line_candidates"); }
  // Another method or selection: the model does not run (it chooses among the adaptive method's strongest stripes), and that is no error.
  {
    ChainConfig c = on;
    c.column.method = ColumnMethod::Cog;
    EXPECT_EQ(message(c), "");
    EXPECT_EQ(validate_line_model(c, validate_chain(c, l)).candidates, 0);
    EXPECT_FALSE(line_model_runs(c));
  }
  {
    ChainConfig c = on;
    c.column.selection = SpotSelection::All;
    EXPECT_EQ(message(c), "");
    EXPECT_FALSE(line_model_runs(c));
    EXPECT_EQ(output_slots(c, 16), c.max_peaks);
  }
  // The kernel parameters: costs in Q8 8-bit levels, 16-bit data scaled down by 8 bits.
  const kernels::LineModelParams p8 = validate_line_model(on, validate_chain(on, l));
  EXPECT_EQ(p8.candidates, on.line_model.candidates);
  EXPECT_EQ(p8.strength_shift, 0);
  EXPECT_EQ(p8.segment_cost_q8, static_cast<std::int32_t>(on.line_model.segment_cost * 256));
  EXPECT_EQ(p8.jump_cost_q8, static_cast<std::int32_t>(on.line_model.jump_cost * 256));
  const BatchLayout l16{64, 16, 10, PixelFormat::Mono16};
  EXPECT_EQ(validate_line_model(on, validate_chain(on, l16)).strength_shift, 8);
  ChainConfig twelve = on;
  twelve.adaptive.pixel_bits = 12;
  EXPECT_EQ(validate_line_model(twelve, validate_chain(twelve, l16)).strength_shift, 4);
  EXPECT_EQ(validate_line_model(ChainConfig{}, validate_chain(ChainConfig{}, l)).candidates, 8) << "on by default";
  ChainConfig off;
  off.line_model.enabled = false;
  EXPECT_EQ(validate_line_model(off, validate_chain(off, l)).candidates, 0);
}

// Every output's metadata says when the line model chose the points, and with what.
TEST(LineModel, TheScanMetadataRecordsIt) {
  ScanInfo info;
  info.layout = BatchLayout{64, 16, 10, PixelFormat::Mono8};
  info.chain.line_model.enabled = false;
  EXPECT_FALSE(scan_document("summary", info).contains("line_model")) << "off: not written";
  info.chain.line_model.enabled = true;
  info.chain.line_model.segment_cost = 300.0;
  const metadata::Json d = scan_document("summary", info);
  ASSERT_TRUE(d.contains("line_model")) << d.dump();
  EXPECT_EQ(d["line_model"]["candidates"], info.chain.line_model.candidates);
  EXPECT_EQ(d["line_model"]["segment_cost"], 300.0);
  EXPECT_EQ(d["line_model"]["min_length"], info.chain.line_model.min_length);
}

// ---------------------------------------------------------------------------
// CUDA against the CPU oracle (skipped without a GPU)

namespace {

// Random candidates: lines that wander and step, bands, specks, gaps; every
// count from 0 to beyond K.
Candidates random_candidates(int frames, int width, int k, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Candidates c(frames, width, k);
  for (int f = 0; f < frames; ++f) {
    double line = 5.0 + 40.0 * u(rng);
    for (int x = 0; x < width; ++x) {
      line += (u(rng) - 0.5) * 3.0;
      if (u(rng) < 0.01) line = 60.0 * u(rng);
      const int n = static_cast<int>(u(rng) * (k + 3)) - 1;  // -1..k+1: gaps, and more than the slots
      for (int s = 0; s < n; ++s) {
        const bool on_line = s == 0 && u(rng) < 0.8;
        c.add(f, x, {on_line ? line : 60.0 * u(rng), 1 + static_cast<int>(u(rng) * 254), 1 + static_cast<int>(u(rng) * 20),
                     static_cast<int>(u(rng) * 256)});
      }
    }
  }
  return c;
}

#if STRIPELINE_HAVE_CUDA
template <class T>
void to_device(const DeviceBuffer& d, const std::vector<T>& v) {
  ASSERT_EQ(cudaMemcpy(d.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
}
template <class T>
void to_host(std::vector<T>& v, const DeviceBuffer& d) {
  ASSERT_EQ(cudaMemcpy(v.data(), d.data(), v.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
}
template <class T>
DeviceBuffer device_copy(const std::vector<T>& v, const char* what) {
  DeviceBuffer d = DeviceBuffer::allocate(std::max<std::size_t>(1, v.size() * sizeof(T)), what);
  to_device(d, v);
  return d;
}
#endif

// Synthetic frames for the processors: a laser line that wanders, steps and
// breaks, over a printed-looking background (bright bands with edges across
// many columns), speckle and occluded gaps. 8 or 16 bits.
Batch line_frames(int width, int frames, PixelFormat format, std::uint64_t seed, HostAllocator alloc = &allocate_host) {
  const int h = 52;
  Batch b(BatchLayout{width, h, frames, format}, alloc);
  b.frames = frames;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double full = format == PixelFormat::Mono8 ? 255.0 : 65535.0;
  for (int f = 0; f < frames; ++f) {
    double line = 10.0 + 30.0 * u(rng);
    int band_row = static_cast<int>(u(rng) * 40), band_left = 0;
    for (int x = 0; x < width; ++x) {
      line = std::clamp(line + (u(rng) - 0.5) * 0.6, 3.0, 48.0);
      if (u(rng) < 0.005) line = 5.0 + 40.0 * u(rng);
      if (band_left-- <= 0) band_row = static_cast<int>(u(rng) * 44), band_left = static_cast<int>(u(rng) * 120);
      const bool gap = u(rng) < 0.03;
      for (int y = 0; y < h; ++y) {
        double v = (0.05 + 0.05 * u(rng)) * full;
        if (band_left > 0 && y >= band_row && y < band_row + 6) v += 0.45 * full;
        if (!gap) v += 0.5 * full * std::exp(-0.5 * (y - line) * (y - line) / 1.2);
        const auto value = static_cast<std::uint32_t>(std::min(full, std::round(v)));
        const std::size_t i = static_cast<std::size_t>(f) * h * width + static_cast<std::size_t>(y) * width + x;
        if (format == PixelFormat::Mono8)
          reinterpret_cast<std::uint8_t*>(b.pixels.data())[i] = static_cast<std::uint8_t>(value);
        else
          reinterpret_cast<std::uint16_t*>(b.pixels.data())[i] = static_cast<std::uint16_t>(value);
      }
    }
  }
  return b;
}

bool same_profiles(const ProfileBatch& a, const ProfileBatch& b, std::string& where) {
  const std::size_t n = static_cast<std::size_t>(a.frames) * a.slots * a.width, c = static_cast<std::size_t>(a.frames) * a.width;
  if (a.slots != b.slots || a.frames != b.frames) return where = "shape", false;
  for (std::size_t i = 0; i < n; ++i)
    if (a.position[i] != b.position[i] || a.intensity[i] != b.intensity[i] || a.stripe_width[i] != b.stripe_width[i] || a.quality[i] != b.quality[i])
      return where = "element " + std::to_string(i) + " (frame " + std::to_string(i / a.width) + ", column " + std::to_string(i % a.width) + ")", false;
  for (std::size_t i = 0; i < c; ++i)
    if (a.count[i] != b.count[i]) return where = "count " + std::to_string(i), false;
  return true;
}

// Every element of two single-slot outputs equal.
void expect_same(const Output& got, const Output& expected) {
  EXPECT_EQ(got.position, expected.position);
  EXPECT_EQ(got.intensity, expected.intensity);
  EXPECT_EQ(got.stripe_width, expected.stripe_width);
  EXPECT_EQ(got.quality, expected.quality);
  EXPECT_EQ(got.count, expected.count);
}

// One frame's lane decomposition, lane after lane, against the oracle's output.
kernels::LineLaneStats lanes_against_oracle(Candidates& c, const kernels::LineModelParams& p, int lanes, int warmup, int rounds, bool narrow_walks = true) {
  const int frames = c.frames, width = c.width, k = c.k;
  Output expected(frames, width);
  choose(c, p, &expected);
  const kernels::LineLaneLayout size = kernels::line_lane_layout(k, width, lanes, nullptr, nullptr);
  std::vector<std::uint64_t> fixed(size.fixed_bytes / 8, 0xDEADBEEFDEADBEEFull), columns(size.column_bytes / 8, 0xDEADBEEFDEADBEEFull);
  kernels::LineModelLaneScratch s =
      kernels::line_lane_layout(k, width, lanes, reinterpret_cast<unsigned char*>(fixed.data()), reinterpret_cast<unsigned char*>(columns.data())).scratch;
  s.narrow_walks = narrow_walks;
  Output got(frames, width);
  kernels::LineModelView v;
  v.in = c.arrays(), v.out = got.arrays(), v.frames = frames, v.width = width;
  kernels::LineLaneStats stats;
  for (int f = 0; f < frames; ++f) {
    const kernels::LineLaneStats one = kernels::line_model_frame_lanes(v, p, f, lanes, s, warmup, rounds);
    stats.rounds += one.rounds, stats.fallbacks += one.fallbacks;
  }
  expect_same(got, expected);
  return stats;
}

// Two equally strong lines over the whole frame, the upper one starting at
// column `late` (entered by a break off the lower one): their scores keep
// that history, so walks started from a guess never agree with the exact
// ones (the speculative pass's worst case).
Candidates parallel_lines(int frames, int width, int k, int late) {
  Candidates c(frames, width, k);
  for (int f = 0; f < frames; ++f)
    for (int x = 0; x < width; ++x) {
      c.add(f, x, {30.0 + 0.1 * f, 100, 5, 200});
      if (x >= late) c.add(f, x, {10.0, 100, 5, 200});
    }
  return c;
}

}  // namespace

// The lane decomposition the block kernel runs (kernels/line_model_lanes.h),
// run lane after lane on the CPU: the oracle's bits for any number of lanes,
// chunks of 1 column to whole frames, minimum lengths shorter and longer
// than a chunk, segments crossing several chunks, candidates excluded over
// several passes; and each way of the forward pass: the speculative walks
// as the kernel runs them, walks from "no line" right at the chunk (many
// rounds), and the exact fallback alone (no rounds).
TEST(LineModel, TheLaneDecompositionGivesTheOraclesBits) {
  std::uint64_t seed = 101;
  kernels::LineLaneStats total[3];
  const int ways[3][2] = {{kernels::line_model::kLineWarmup, kernels::line_model::kLineSpecRounds}, {0, 100000}, {0, 0}};
  for (int k : {1, 2, 8})
    for (auto [width, frames] : {std::array{1, 2}, std::array{13, 3}, std::array{33, 4}, std::array{64, 5}, std::array{65, 3}, std::array{1937, 4},
                                 std::array{2048, 4}})
      for (int lanes : {256, 32, 7, 1})
        for (int min_length : {1, 3 + static_cast<int>(seed % 7), 45, 400}) {
          Candidates c = random_candidates(frames, width, k, seed++);
          kernels::LineModelParams p = params(k, 20.0 + static_cast<double>(seed % 5) * 30.0, min_length, 1.5, 6.0, 1.0, 6);
          p.intensity_cost_q8 = static_cast<std::int32_t>(seed % 3) * 40;
          for (int way = 0; way < 3; ++way) {
            SCOPED_TRACE("K " + std::to_string(k) + " width " + std::to_string(width) + " lanes " + std::to_string(lanes) + " min_length " +
                         std::to_string(min_length) + " warm-up " + std::to_string(ways[way][0]) + " rounds " + std::to_string(ways[way][1]));
            const kernels::LineLaneStats st = lanes_against_oracle(c, p, lanes, ways[way][0], ways[way][1]);
            if (HasFailure()) return;
            total[way].rounds += st.rounds, total[way].fallbacks += st.fallbacks;
          }
        }
  EXPECT_GT(total[0].rounds, 0) << "some chunks' guesses were walked again";
  EXPECT_GT(total[1].rounds, total[0].rounds) << "without a warm-up, more rounds";
  EXPECT_EQ(total[1].fallbacks, 0);
  EXPECT_GT(total[2].fallbacks, 0);
  EXPECT_EQ(total[2].rounds, 0);
}

// The link table (the speculative walks' steps between columns of at most
// two candidates, kernels/line_model_lanes.h) is laid out for the block
// kernel's production shape, so the lane tests above walk through it
// (mixed with the steps that read candidates: random columns have up to
// K + 1); where it does not fit, the walks read the staged candidates.
TEST(LineModel, TheLinkTableFitsTheProductionShape) {
  const auto layout = [](int k, int width, int lanes) { return kernels::line_lane_layout(k, width, lanes, nullptr, nullptr); };
  std::vector<std::uint64_t> fixed(layout(8, 2048, kernels::kLineBlockLanes).fixed_bytes / 8);
  const auto scratch = [&](int k, int width, int lanes) {
    return kernels::line_lane_layout(k, width, lanes, reinterpret_cast<unsigned char*>(fixed.data()), nullptr).scratch;
  };
  const kernels::LineModelLaneScratch block = scratch(8, 2048, kernels::kLineBlockLanes);
  ASSERT_NE(block.link_pair, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block.link_pair) % 16, reinterpret_cast<std::uintptr_t>(fixed.data()) % 16);
  EXPECT_EQ(block.link_fresh, block.link_pair + 4 * 2048);
  EXPECT_EQ(block.staged_slots, kernels::kLineStagedSlots);
  // The table and the staged candidates within the bytes the transfer matrices take.
  const auto* end = reinterpret_cast<const unsigned char*>(block.staged_count_mask + 2048);
  EXPECT_LE(end, reinterpret_cast<const unsigned char*>(block.transfer) + 8 * 256 * 9 * 9);
  EXPECT_EQ(scratch(8, 2048, 32).link_pair, nullptr);   // the warp kernel: no room
  EXPECT_EQ(scratch(2, 2048, kernels::kLineBlockLanes).link_pair, nullptr);  // no staged candidates
  EXPECT_EQ(scratch(8, 4096, kernels::kLineBlockLanes).link_pair, nullptr);  // too wide: staged candidates alone
  EXPECT_GT(scratch(8, 4096, kernels::kLineBlockLanes).staged_slots, 0);
}

// Pass 0's staging done ahead (kernels::LineStageAhead: four ways a column,
// then the model's copy): the same bytes of scratch as the model staging
// alone, masks cleared, on random frames (frame index 1 and 2 too: the
// bytes' offsets), and the oracle's output through the whole model; none
// where the layout has no link table.
TEST(LineModel, TheStagingAheadGivesTheSameScratch) {
  namespace lm = kernels::line_model;
  const int lanes = kernels::kLineBlockLanes, k = 8;
  std::uint64_t seed = 515;
  for (int width : {2048, 2047, 1001, 5}) {
    SCOPED_TRACE("width " + std::to_string(width));
    Candidates c = random_candidates(3, width, k, seed++);
    const kernels::LineModelParams p = params(k, 50.0, 8, 1.5, 6.0, 1.0, 6);
    const kernels::LineLaneLayout size = kernels::line_lane_layout(k, width, lanes, nullptr, nullptr);
    ASSERT_TRUE(size.staged.table);
    const kernels::LineStageAhead measured = kernels::line_stage_ahead(p, width, nullptr);
    ASSERT_GT(measured.frame_bytes, 0u);
    std::vector<std::uint64_t> ahead_bytes(measured.frame_bytes * c.frames / 8);
    const kernels::LineStageAhead ahead = kernels::line_stage_ahead(p, width, reinterpret_cast<unsigned char*>(ahead_bytes.data()));
    const auto scratch = [&](std::vector<std::uint64_t>& fixed, std::vector<std::uint64_t>& columns) {
      fixed.assign(size.fixed_bytes / 8, 0), columns.assign(size.column_bytes / 8, 0x0101010101010101ull);  // masks set: cleared by pass 0
      kernels::LineModelLaneScratch s = kernels::line_lane_layout(k, width, lanes, reinterpret_cast<unsigned char*>(fixed.data()),
                                                                  reinterpret_cast<unsigned char*>(columns.data()))
                                            .scratch;
      s.link = lm::narrow_link(p);
      return s;
    };
    Output out(c.frames, width);
    kernels::LineModelView v;
    v.in = c.arrays(), v.out = out.arrays(), v.frames = c.frames, v.width = width;
    for (int f = 0; f < c.frames; ++f) {
      SCOPED_TRACE("frame " + std::to_string(f));
      std::vector<std::uint64_t> fixed_alone, columns_alone, fixed_ahead, columns_ahead;
      const kernels::LineModelLaneScratch alone = scratch(fixed_alone, columns_alone), staged = scratch(fixed_ahead, columns_ahead);
      for (int lane = 0; lane < lanes; ++lane) lm::lane_stage(v, p, f, 0, lanes, lane, alone);
      for (int x = 0; x < width; ++x) lm::stage_ahead_column(v, ahead, f, x);
      for (int lane = 0; lane < lanes; ++lane) lm::lane_take_staged(v, ahead, f, lanes, lane, staged);
      const auto* a = reinterpret_cast<const unsigned char*>(fixed_alone.data());
      const auto* b = reinterpret_cast<const unsigned char*>(fixed_ahead.data());
      for (std::size_t i = size.staged.begin; i < size.staged.end; ++i) ASSERT_EQ(a[i], b[i]) << "byte " << i - size.staged.begin << " of the span";
      for (int x = 0; x < width; ++x) ASSERT_EQ(staged.mask[x], 0) << "column " << x;
      EXPECT_EQ(columns_alone, columns_ahead);
    }
    // The whole model, pass 0 staged ahead, against the oracle.
    Output expected(c.frames, width);
    choose(c, p, &expected);
    std::vector<std::uint64_t> fixed, columns;
    const kernels::LineModelLaneScratch s = scratch(fixed, columns);
    for (int f = 0; f < c.frames; ++f) kernels::line_model_frame_lanes(v, p, f, lanes, s, lm::kLineWarmup, lm::kLineSpecRounds, &ahead);
    expect_same(out, expected);
  }
  EXPECT_EQ(kernels::line_stage_ahead(params(8, 50.0, 8, 1.5, 6.0, 1.0, 6), 4096, nullptr).frame_bytes, 0u) << "too wide: no table";
  EXPECT_EQ(kernels::line_stage_ahead(params(2, 50.0, 8, 1.5, 6.0, 1.0, 6), 2048, nullptr).frame_bytes, 0u) << "K 2: no table";
}

// The table walks carry each chunk's first states (kernels/line_model_lanes.h,
// first_through), so phase 4 runs only after the exact fallback: after the
// speculative pass and its rounds, the carried states equal phase 4's
// trace back, state by state, on random frames (with masks from a drop:
// the second pass too), for warm-ups that need rounds and that do not.
TEST(LineModel, TheWalksCarryTheFirstStatesPhase4Traces) {
  namespace lm = kernels::line_model;
  std::uint64_t seed = 4242;
  const int lanes = kernels::kLineBlockLanes, width = 2048, k = 8;
  int compared = 0;
  for (int warmup : {0, lm::kLineWarmup}) {
    Candidates c = random_candidates(3, width, k, seed++);
    const kernels::LineModelParams p = params(k, 50.0, 8, 1.5, 6.0, 1.0, 6);
    const kernels::LineLaneLayout size = kernels::line_lane_layout(k, width, lanes, nullptr, nullptr);
    std::vector<std::uint64_t> fixed(size.fixed_bytes / 8), columns(size.column_bytes / 8);
    kernels::LineModelLaneScratch s =
        kernels::line_lane_layout(k, width, lanes, reinterpret_cast<unsigned char*>(fixed.data()), reinterpret_cast<unsigned char*>(columns.data())).scratch;
    s.link = lm::narrow_link(p);
    ASSERT_TRUE(lm::walks_carry_first(s));
    Output out(c.frames, width);
    kernels::LineModelView v;
    v.in = c.arrays(), v.out = out.arrays(), v.frames = c.frames, v.width = width;
    const int used = lm::lanes_used(width, lanes);
    for (int f = 0; f < c.frames; ++f)
      for (int pass = 0; pass < 2; ++pass) {
        SCOPED_TRACE("warm-up " + std::to_string(warmup) + " frame " + std::to_string(f) + " pass " + std::to_string(pass));
        for (int lane = 0; lane < lanes; ++lane) lm::lane_stage(v, p, f, pass, lanes, lane, s);
        for (int lane = 0; lane < lanes; ++lane) lm::lane_speculate(v, p, f, lanes, lane, s, warmup);
        for (bool again = true; again;) {
          std::vector<char> need(lanes, 0);
          again = false;
          for (int lane = 0; lane < lanes; ++lane) again = (need[lane] = lm::lane_needs_walk(v, lanes, lane, s) ? 1 : 0) || again;
          for (int lane = 0; lane < lanes; ++lane)
            if (need[lane]) lm::lane_walk_again(v, p, f, lanes, lane, s);
        }
        const std::vector<std::uint8_t> carried(s.first, s.first + lanes * kernels::kLineStates);
        for (int lane = 0; lane < lanes; ++lane) lm::lane_first_states(v, p, lanes, lane, s);
        for (int lane = 0; lane < used; ++lane)
          for (int t = 0; t <= s.n_last[lane]; ++t, ++compared)
            ASSERT_EQ(carried[lane * kernels::kLineStates + t], s.first[lane * kernels::kLineStates + t]) << "lane " << lane << " state " << t;
        // The rest of the pass, so the next one has its masks.
        lm::lanes_last_states(v, p, lanes, s);
        for (int lane = 0; lane < lanes; ++lane) lm::lane_path(v, p, lanes, lane, s);
        lm::lanes_runs(v, lanes, s);
        for (int lane = 0; lane < lanes; ++lane) lm::lane_drop_short(v, p, lanes, lane, s);
      }
  }
  EXPECT_GT(compared, 2 * 3 * 2 * 256) << "every lane's states compared";
}

// The speculative pass's worst case, two lines whose scores never forget
// which started first: the rounds run out and the exact phases give the
// oracle's bits; given rounds enough, the rounds do.
TEST(LineModel, ParallelLinesFallBackToTheExactPass) {
  Candidates c = parallel_lines(3, 2048, 8, 100);
  const kernels::LineModelParams p = params(8, 60.0, 8, 1.5, 6.0, 1.0, 6);
  const kernels::LineLaneStats spec = lanes_against_oracle(c, p, kernels::kLineBlockLanes, kernels::line_model::kLineWarmup,
                                                           kernels::line_model::kLineSpecRounds);
  EXPECT_GE(spec.fallbacks, 3) << "every frame";
  const kernels::LineLaneStats long_rounds = lanes_against_oracle(c, p, kernels::kLineBlockLanes, kernels::line_model::kLineWarmup, 1000);
  EXPECT_EQ(long_rounds.fallbacks, 0);
  EXPECT_GT(long_rounds.rounds, 3 * 100) << "about a round a chunk";
}

// The speculative walks' 32-bit link cost (kernels/line_model.h,
// NarrowLink): wherever the 64-bit cost is at most segment_cost it is that
// cost, and above it otherwise, for any positions, widths and levels, with
// costs at the bounds (where the clamps decide) and in between.
TEST(LineModel, TheNarrowLinkCostIsExactUpToTheSegmentCost) {
  std::mt19937_64 rng(4242);
  std::uniform_int_distribution<std::int32_t> any_int(INT32_MIN, INT32_MAX);
  std::uniform_int_distribution<int> pick(0, 3);
  const std::int32_t costs[] = {0, 1, 255, 256, 1024, 77777, kernels::line_model::kNarrowCostBound};
  const std::int32_t segments[] = {0, 1, 256, 16384, kernels::line_model::kNarrowSegmentBound - 1};
  int exact = 0, above = 0;
  for (std::int32_t seg : segments)
    for (int trial = 0; trial < 4000; ++trial) {
      kernels::LineModelParams p = params(8);
      p.segment_cost_q8 = seg;
      p.jump_cost_q8 = costs[static_cast<std::size_t>(trial) % 7];
      p.width_cost_q8 = costs[static_cast<std::size_t>(trial / 7) % 7];
      p.intensity_cost_q8 = costs[static_cast<std::size_t>(trial / 49) % 7];
      p.step_q8 = pick(rng) == 0 ? 0 : 512;
      const kernels::line_model::NarrowLink link = kernels::line_model::narrow_link(p);
      ASSERT_TRUE(link.ok);
      // Values near each other (the costs are small there) or anywhere in range.
      auto value = [&](std::int32_t base, std::int32_t spread) {
        if (pick(rng) == 0) return any_int(rng);
        return static_cast<std::int32_t>(std::clamp<std::int64_t>(std::int64_t{base} + any_int(rng) % spread, INT32_MIN, INT32_MAX));
      };
      kernels::line_model::Candidate a{value(0, 1 << 16), value(0, 1 << 16), 0, value(0, 1 << 24)};
      kernels::line_model::Candidate b{value(a.position, 2048), value(a.width, 8), 0, value(a.level, 4096)};
      a.width &= 0xFFFF, b.width &= 0xFFFF;  // run widths are 16-bit
      const std::int64_t wide = kernels::line_model::link_cost(a, b, p);
      const std::uint32_t narrow = kernels::line_model::narrow_link_cost(a, b, link);
      if (wide <= seg) {
        ASSERT_EQ(narrow, static_cast<std::uint64_t>(wide)) << "seg " << seg << " jump " << p.jump_cost_q8 << " width " << p.width_cost_q8;
        ++exact;
      } else {
        ASSERT_GT(narrow, static_cast<std::uint32_t>(seg)) << "seg " << seg << " wide " << wide;
        ++above;
      }
    }
  EXPECT_GT(exact, 1000);
  EXPECT_GT(above, 1000);
  kernels::LineModelParams too_big = params(8);
  too_big.segment_cost_q8 = kernels::line_model::kNarrowSegmentBound;
  EXPECT_FALSE(kernels::line_model::narrow_link(too_big).ok);
  too_big = params(8);
  too_big.jump_cost_q8 = kernels::line_model::kNarrowCostBound + 1;
  EXPECT_FALSE(kernels::line_model::narrow_link(too_big).ok);
}

// The lane decomposition with the walks in 32 bits at the parameters'
// bounds (clamped terms decide breaks), in 64 bits beyond them, and in 64
// bits by choice (the scratch's switch, the bench's): the oracle's bits
// every way.
TEST(LineModel, TheWalksGiveTheOraclesBitsInBothWidths) {
  std::uint64_t seed = 9090;
  const std::int32_t seg_bound = kernels::line_model::kNarrowSegmentBound;
  for (std::int32_t seg : {seg_bound - 1, seg_bound, 400 * 256})
    for (std::int32_t cost : {256, kernels::line_model::kNarrowCostBound})
      for (int k : {2, 8}) {
        Candidates c = random_candidates(3, 2048, k, seed++);
        kernels::LineModelParams p = params(k, 0.0, 8, 1.5, 6.0, 1.0, 6);
        p.segment_cost_q8 = seg;
        p.jump_cost_q8 = cost;
        p.intensity_cost_q8 = cost / 64;
        SCOPED_TRACE("K " + std::to_string(k) + " segment " + std::to_string(seg) + " cost " + std::to_string(cost));
        EXPECT_EQ(kernels::line_model::narrow_link(p).ok, seg < seg_bound);
        for (bool narrow : {true, false}) {
          lanes_against_oracle(c, p, kernels::kLineBlockLanes, kernels::line_model::kLineWarmup, kernels::line_model::kLineSpecRounds, narrow);
          if (HasFailure()) return;
        }
      }
}

// The CPU backend's walk (stages/cpu/line_model_cpu.h: candidates loaded
// once, a pass after a drop solved again only from the first column whose
// mask changed) against the kernel's loop: output and back-pointer scratch
// byte for byte, both poisoned; K 1..8, odd widths, gaps and more
// candidates than slots, minimum lengths from 1 to more than the frame (all
// three passes), 8- and 16-bit strength shifts, one scratch reused for
// every frame and size.
TEST(LineModel, TheCpuWalkGivesTheOraclesBits) {
  std::uint64_t seed = 707;
  cpu::LineModelScratch scratch;
  scratch.reserve(8, 2048);
  int dropped_frames = 0;
  for (int k : {1, 2, 3, 8})
    for (auto [width, frames] : {std::array{1, 3}, std::array{2, 3}, std::array{13, 4}, std::array{65, 5}, std::array{1937, 6}, std::array{2048, 6}})
      for (int min_length : {1, 2 + static_cast<int>(seed % 7), 20, 45, 3000})
        for (int shift : {0, 4}) {
          SCOPED_TRACE("K " + std::to_string(k) + " width " + std::to_string(width) + " min_length " + std::to_string(min_length) + " shift " +
                       std::to_string(shift));
          Candidates c = random_candidates(frames, width, k, seed++);
          kernels::LineModelParams p = params(k, 10.0 + static_cast<double>(seed % 5) * 30.0, min_length, 1.5, 6.0, 1.0, 6);
          p.intensity_cost_q8 = static_cast<std::int32_t>(seed % 3) * 40;
          p.strength_shift = shift;
          Output expected(frames, width), got(frames, width);
          std::vector<std::uint8_t> want_back(kernels::line_model_scratch_bytes(k, width, frames), 0xCC), got_back(want_back);
          kernels::LineModelView v;
          v.in = c.arrays(), v.out = expected.arrays(), v.back = want_back.data(), v.back_stride = static_cast<std::size_t>(frames);
          v.frames = frames, v.width = width;
          kernels::line_model_cpu(v, p, 0, frames);
          v.out = got.arrays(), v.back = got_back.data();
          for (int f = frames - 1; f >= 0; --f) cpu::line_model_frame(v, p, f, scratch);
          ASSERT_EQ(got.position, expected.position);
          ASSERT_EQ(got.intensity, expected.intensity);
          ASSERT_EQ(got.stripe_width, expected.stripe_width);
          ASSERT_EQ(got.quality, expected.quality);
          ASSERT_EQ(got.count, expected.count);
          ASSERT_EQ(got_back, want_back);
          for (int f = 0; f < frames; ++f)
            for (int x = 0; x < width; ++x)
              if (kernels::line_model::excluded_at(v, p, f, x) != 0) {
                ++dropped_frames;
                break;
              }
        }
  EXPECT_GT(dropped_frames, 100) << "short segments were dropped (passes after the first compared)";
}

class LineModelCuda : public test::CudaTest {};

#if STRIPELINE_HAVE_CUDA
namespace {
// Candidates and a poisoned single-slot output on the device, and the
// kernels' view of them.
struct DeviceLineModel {
  const int frames, width;
  DeviceBuffer pos, inten, wid, q, count, opos, oint, owid, oq, ocount, back;
  kernels::LineModelView view;
  explicit DeviceLineModel(const Candidates& c)
      : frames(c.frames),
        width(c.width),
        pos(device_copy(c.position, "pos")),
        inten(device_copy(c.intensity, "int")),
        wid(device_copy(c.stripe_width, "wid")),
        q(device_copy(c.quality, "q")),
        count(device_copy(c.count, "count")),
        opos(DeviceBuffer::allocate(c.count.size() * 4, "out pos")),
        oint(DeviceBuffer::allocate(c.count.size() * 2, "out int")),
        owid(DeviceBuffer::allocate(c.count.size() * 2, "out wid")),
        oq(DeviceBuffer::allocate(c.count.size() * 2, "out q")),
        ocount(DeviceBuffer::allocate(c.count.size(), "out count")),
        back(DeviceBuffer::allocate(kernels::line_model_device_scratch_bytes(c.k, c.width, c.frames), "scratch")) {
    view.in = {pos.as<std::int32_t>(), inten.as<std::uint16_t>(), wid.as<std::uint16_t>(), q.as<std::uint16_t>(), count.as<std::uint8_t>()};
    view.out = {opos.as<std::int32_t>(), oint.as<std::uint16_t>(), owid.as<std::uint16_t>(), oq.as<std::uint16_t>(), ocount.as<std::uint8_t>()};
    view.back = back.as<std::uint8_t>(), view.back_stride = static_cast<std::size_t>(frames), view.frames = frames, view.width = width;
    poison();
  }
  void poison() {
    const Output fresh(frames, width);
    to_device(opos, fresh.position), to_device(oint, fresh.intensity), to_device(owid, fresh.stripe_width), to_device(oq, fresh.quality),
        to_device(ocount, fresh.count);
  }
  Output output() {
    Output got(frames, width);
    to_host(got.position, opos), to_host(got.intensity, oint), to_host(got.stripe_width, owid), to_host(got.quality, oq), to_host(got.count, ocount);
    return got;
  }
};

// Random candidates of `frames` frames through each design (the block one
// only once configured: its shared memory needs the opt-in), outputs
// poisoned on both sides, against the oracle; minimum lengths short, and
// longer than the kernels' chunks (drops reaching back into written chunks).
void check_kernels(int k, int width, int frames, bool configured, std::uint64_t& seed) {
  SCOPED_TRACE("K " + std::to_string(k) + " width " + std::to_string(width) + " frames " + std::to_string(frames));
  Candidates c = random_candidates(frames, width, k, seed++);
  for (int min_length : {1 + static_cast<int>(seed % 9), 45}) {
    SCOPED_TRACE("min_length " + std::to_string(min_length));
    kernels::LineModelParams p = params(k, 20.0 + static_cast<double>(seed % 5) * 30.0, min_length, 1.5, 6.0, 1.0, 6);
    p.intensity_cost_q8 = static_cast<std::int32_t>(seed % 3) * 40;
    Output expected(frames, width);
    choose(c, p, &expected);
    DeviceLineModel d(c);
    for (kernels::cuda::LineKernel design : {kernels::cuda::LineKernel::Warp, kernels::cuda::LineKernel::Block}) {
      if (design == kernels::cuda::LineKernel::Block && !configured) continue;
      SCOPED_TRACE(design == kernels::cuda::LineKernel::Block ? "block per frame" : "warp per frame");
      d.poison();
      kernels::cuda::launch_line_model(d.view, p, nullptr, design);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      expect_same(d.output(), expected);
      if (::testing::Test::HasFailure()) return;
    }
    // The block kernel with pass 0 staged ahead (kernels::LineStageAhead), where its layout has the link table.
    const kernels::LineStageAhead size = kernels::line_stage_ahead(p, width, nullptr);
    if (!configured || size.frame_bytes == 0) continue;
    SCOPED_TRACE("block per frame, staged ahead");
    const DeviceBuffer bytes = DeviceBuffer::allocate(size.frame_bytes * static_cast<std::size_t>(frames), "staged ahead");
    const kernels::LineStageAhead ahead = kernels::line_stage_ahead(p, width, bytes.as<unsigned char>());
    d.poison();
    kernels::cuda::launch_line_stage_ahead(d.view, ahead, nullptr);
    kernels::cuda::launch_line_model(d.view, p, nullptr, kernels::cuda::LineKernel::Block, &ahead);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_same(d.output(), expected);
    if (::testing::Test::HasFailure()) return;
  }
}
}  // namespace
#endif

// The kernels alone: random candidates, K = 2..8, odd widths, 1..300 frames.
TEST_F(LineModelCuda, KernelMatchesCpuBitForBit) {
#if STRIPELINE_HAVE_CUDA
  std::uint64_t seed = 5;
  // The first pass keeps to 48 KiB of shared memory (wide frames' columns in
  // global memory); the second uses the opt-in, as the processor does.
  for (bool configured : {false, true}) {
    if (configured) kernels::cuda::configure_line_model(cuda::max_shared_bytes_per_block());
    for (int k : {2, 4, 8})
      for (auto [width, frames] : {std::array{1, 1}, std::array{13, 3}, std::array{33, 17}, std::array{1937, 5}, std::array{2048, 300},
                                   std::array{176, 299}, std::array{64, 7}, std::array{65, 2}, std::array{5000, 3}})
        check_kernels(k, width, frames, configured, seed);
  }
#else
  GTEST_SKIP() << "built without the CUDA backend";
#endif
}

#if STRIPELINE_HAVE_CUDA
namespace {
// Candidates through the block kernel with `warmup` columns of warm-up,
// against the oracle; returns the kernel's counts per launch
// ([kLinePasses][2] rounds, [3] fallbacks) from its timed variant, which
// runs the same code.
kernels::cuda::LinePhaseProfile block_kernel_against_oracle(Candidates& c, const kernels::LineModelParams& p, int warmup) {
  Output expected(c.frames, c.width);
  choose(c, p, &expected);
  DeviceLineModel d(c);
  kernels::cuda::set_line_model_warmup(warmup);
  const kernels::cuda::LinePhaseProfile profile = kernels::cuda::line_model_block_phase_cycles(d.view, p, nullptr);
  kernels::cuda::set_line_model_warmup(kernels::line_model::kLineWarmup);
  expect_same(d.output(), expected);
  return profile;
}
}  // namespace
#endif

// The block kernel's other ways on the GPU: lines that force the exact
// fallback, and walks without warm-up that need rounds; the oracle's bits
// each time, and each way seen taken.
TEST_F(LineModelCuda, TheBlockKernelsRoundsAndFallback) {
#if STRIPELINE_HAVE_CUDA
  kernels::cuda::configure_line_model(cuda::max_shared_bytes_per_block());
  Candidates lines = parallel_lines(3, 2048, 8, 100);
  const kernels::LineModelParams p = params(8, 60.0, 8, 1.5, 6.0, 1.0, 6);
  const auto fallback = block_kernel_against_oracle(lines, p, kernels::line_model::kLineWarmup);
  EXPECT_GE(fallback.cycles[kernels::kLinePasses][3], 3u) << "every frame fell back to the exact pass";
  std::uint64_t seed = 31;
  for (int k : {2, 8}) {
    Candidates c = random_candidates(5, 2048, k, seed++);
    const auto rounds = block_kernel_against_oracle(c, params(k, 50.0, 8, 1.5, 6.0, 1.0, 6), 0);
    EXPECT_GT(rounds.cycles[kernels::kLinePasses][2], 0u) << "K " << k << ": without a warm-up, lanes walked again";
  }
#else
  GTEST_SKIP() << "built without the CUDA backend";
#endif
}

// A few frames through both kernels (what compute-sanitizer's racecheck runs:
// the test above takes it too long): every width class of the block kernel,
// its columns in shared memory (2048) and in global memory (5000).
TEST_F(LineModelCuda, BothKernelsOnAFewFrames) {
#if STRIPELINE_HAVE_CUDA
  std::uint64_t seed = 77;
  kernels::cuda::configure_line_model(cuda::max_shared_bytes_per_block());
  for (auto [width, frames] : {std::array{33, 2}, std::array{2048, 2}, std::array{5000, 1}}) check_kernels(8, width, frames, true, seed);
#else
  GTEST_SKIP() << "built without the CUDA backend";
#endif
}

// The whole chain with the line model: CPU processor vs CUDA processor (fused
// and per-stage), 8 and 16 bits, odd widths, 1..300 frames, poisoned outputs,
// with and without the neighbour check after it.
TEST_F(LineModelCuda, ProcessorMatchesCpuBitForBit) {
#if STRIPELINE_HAVE_CUDA
  std::uint64_t seed = 11;
  for (PixelFormat format : {PixelFormat::Mono8, PixelFormat::Mono16})
    for (auto [width, frames] : {std::array{2048, 1}, std::array{1937, 2}, std::array{1937, 5}, std::array{2048, 17}, std::array{1937, 300},
                                 std::array{2048, 300}})
      for (int k : {2, 4, 8}) {
        SCOPED_TRACE(std::string(to_string(format)) + " width " + std::to_string(width) + " frames " + std::to_string(frames) + " K " + std::to_string(k));
        const Batch in = line_frames(width, frames, format, seed++);
        ChainConfig config;
        config.line_model.enabled = true;
        config.line_model.candidates = k;
        config.line_model.intensity_cost = k == 8 ? 0.5 : 0.0;
        config.neighbour_check.columns = k == 4 ? 1 : 0;
        auto cpu = make_processor(Backend::Cpu, in.layout, config);
        ProfileBatch expected(width, frames, 1, &allocate_host);
        expected.poison();
        cpu->process(in, expected);
        for (bool fused : {true, false}) {
          auto gpu = cuda::make_cuda_processor_ex(in.layout, config, cuda::CudaProcessorOptions{.allow_fused = fused});
          ProfileBatch got(width, frames, 1, host_allocator_for(Backend::Cuda));
          got.poison();
          gpu->process(in, got);
          std::string where;
          ASSERT_TRUE(same_profiles(expected, got, where)) << (fused ? "fused" : "per-stage") << ": " << where;
        }
        if (frames <= 2) {  // the warp chain's batches: pass 0 staged by the model itself too (staged ahead by default, above)
          auto gpu = cuda::make_cuda_processor_ex(in.layout, config, cuda::CudaProcessorOptions{.stage_line_ahead = false});
          ProfileBatch got(width, frames, 1, host_allocator_for(Backend::Cuda));
          got.poison();
          gpu->process(in, got);
          std::string where;
          ASSERT_TRUE(same_profiles(expected, got, where)) << "the model staging its pass 0: " << where;
        }
      }
#else
  GTEST_SKIP() << "built without the CUDA backend";
#endif
}

// The live path's persistent engine (stages/cuda/live_engine.h): frames alone
// in pinned batches, profiles into pinned host batches, as the pipeline's
// batch of 1 has them. Each frame against the CPU processor's.
class LiveEngineCuda : public test::CudaTest {};

#if STRIPELINE_HAVE_CUDA
namespace {
// Frames in a pinned batch of one, profiles into pinned batches of one, as
// the pipeline's batch of 1 has them (allocated before any engine starts:
// a pinned free waits for the device's running kernels).
struct LiveFrames {
  Batch all, one;
  ProfileBatch expected, got;
  LiveFrames(int width, PixelFormat format, int frames, std::uint64_t seed)
      : all(line_frames(width, frames, format, seed)),
        one(BatchLayout{width, all.layout.frame_height, 1, format}, host_allocator_for(Backend::Cuda)),
        expected(width, 1, 1, &allocate_host),
        got(width, 1, 1, host_allocator_for(Backend::Cuda)) {
    one.frames = 1;
  }
  // Frames [first, first + count) one at a time through `gpu`, each against
  // `cpu`'s on the same batch; false with `where` set.
  bool match(BatchProcessor& cpu, BatchProcessor& gpu, int first, int count, std::string& where) {
    for (int f = first; f < first + count; ++f) {
      std::memcpy(one.pixels.data(), all.frame_data(f), one.pixels.size());
      expected.poison();
      got.poison();
      cpu.process(one, expected);
      gpu.process(one, got);
      if (!same_profiles(expected, got, where)) return where = "frame " + std::to_string(f) + ": " + where, false;
    }
    return true;
  }
};

const cuda::CudaProcessorOptions kLive{.persistent_live = true};

ChainConfig live_chain(int candidates) {
  ChainConfig c;
  c.line_model.enabled = true;
  c.line_model.candidates = candidates;
  return c;
}
}  // namespace
#endif

// The engine's request is read by the device in one load whose words come
// in no set order (kernels/cuda/live_kernels.h): its check tells a request
// written whole from one caught half-written, whichever word is stale, and
// the same buffers asked again under a new ticket from the last request.
TEST(LiveRequest, ItsCheckTellsAStaleWord) {
#if STRIPELINE_HAVE_CUDA
  namespace kc = kernels::cuda;
  constexpr int n = kc::kLiveRequestFields;
  const std::uint64_t ticket = 37, last = ticket - kc::kLiveSlots;  // the slot's request before
  const std::array<std::uint64_t, n> now{0x7f00'0010'0000, 0x7f00'0020'0000, 0x7f00'0030'0000, 0x7f00'0040'0000, 0x7f00'0050'0000, 0x7f00'0060'0000};
  const std::array<std::uint64_t, n> before{0x7f00'0110'0000, 0x7f00'0120'0000, 0x7f00'0130'0000, 0x7f00'0140'0000, 0x7f00'0150'0000, 0x7f00'0160'0000};
  const std::uint64_t check = kc::live_request_check(ticket, now.data()), last_check = kc::live_request_check(last, before.data());
  EXPECT_EQ(check, kc::live_request_check(ticket, now.data()));  // what the device computes from a line read whole
  EXPECT_NE(kc::live_request_check(ticket, before.data()), last_check);  // every field and the check stale
  EXPECT_NE(check, last_check);                                          // the check stale, every field new
  EXPECT_NE(check, kc::live_request_check(last, now.data()));           // the same buffers, the last ticket's check
  for (int stale = 0; stale < n; ++stale) {  // one field stale, the check new
    std::array<std::uint64_t, n> read = now;
    read[static_cast<std::size_t>(stale)] = before[static_cast<std::size_t>(stale)];
    EXPECT_NE(kc::live_request_check(ticket, read.data()), check) << "field " << stale;
  }
#else
  GTEST_SKIP() << "built without the CUDA backend";
#endif
}

// Widths whose frames are and are not a multiple of 16 bytes, 8 and 16 bits,
// K 4 and 8: the CPU's bits, and no graph captured (the engine ran them).
TEST_F(LiveEngineCuda, FramesAloneMatchCpuBitForBit) {
#if STRIPELINE_HAVE_CUDA
  std::uint64_t seed = 71;
  for (PixelFormat format : {PixelFormat::Mono8, PixelFormat::Mono16})
    for (int width : {2048, 1937})
      for (int k : {4, 8}) {
        SCOPED_TRACE(std::string(to_string(format)) + " width " + std::to_string(width) + " K " + std::to_string(k));
        const BatchLayout layout{width, 52, 1, format};
        LiveFrames frames(width, format, 40, seed++);
        auto cpu = make_processor(Backend::Cpu, layout, live_chain(k));
        auto gpu = cuda::make_cuda_processor_ex(layout, live_chain(k), kLive);
        std::string where;
        ASSERT_TRUE(frames.match(*cpu, *gpu, 0, 40, where)) << where;
        EXPECT_EQ(gpu->graphs(), 0);
        EXPECT_GE(gpu->live_launches(), 1u);  // more where the host takes over 10 ms between frames (a sanitizer): idle ends
      }
#else
  GTEST_SKIP() << "built without the CUDA backend";
#endif
}

// Three processors on three threads share the device's engine (frames in
// the order submitted, a chain overlapping the model before it): each
// frame the CPU's bits.
TEST_F(LiveEngineCuda, ProcessorsOnThreadsShareTheEngine) {
#if STRIPELINE_HAVE_CUDA
  const BatchLayout layout{2048, 52, 1, PixelFormat::Mono8};
  std::vector<std::unique_ptr<cuda::CudaProcessor>> gpus;
  std::vector<std::unique_ptr<BatchProcessor>> cpus;
  std::vector<std::unique_ptr<LiveFrames>> frames;
  for (int t = 0; t < 3; ++t) {
    gpus.push_back(cuda::make_cuda_processor_ex(layout, live_chain(8), kLive));
    cpus.push_back(make_processor(Backend::Cpu, layout, live_chain(8)));
    frames.push_back(std::make_unique<LiveFrames>(2048, PixelFormat::Mono8, 150, 300 + t));
  }
  std::vector<std::string> failures(3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      std::string where;
      if (!frames[t]->match(*cpus[t], *gpus[t], 0, 150, where)) failures[t] = where;
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(failures[t], "") << "thread " << t;
    EXPECT_EQ(gpus[t]->graphs(), 0) << "thread " << t;
    EXPECT_GE(gpus[t]->live_launches(), 1u) << "thread " << t;
  }
#else
  GTEST_SKIP() << "built without the CUDA backend";
#endif
}

// Four threads each make their processor and pinned batches while the
// others' frames already run on the engine (as the bench's processors
// alone do): set-up calls that wait for the device wait for an idle end,
// and a chain launch held up by them makes the model's block end and both
// start again; every frame still the CPU's bits.
TEST_F(LiveEngineCuda, ProcessorsMadeWhileItRunsShareIt) {
#if STRIPELINE_HAVE_CUDA
  const BatchLayout layout{2048, 52, 1, PixelFormat::Mono8};
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      LiveFrames frames(2048, PixelFormat::Mono8, 100, 400 + t);
      auto cpu = make_processor(Backend::Cpu, layout, live_chain(8));
      auto gpu = cuda::make_cuda_processor_ex(layout, live_chain(8), kLive);
      std::string where;
      if (!frames.match(*cpu, *gpu, 0, 100, where)) failures[t] = where;
      if (gpu->graphs() != 0) failures[t] += " (graphs captured: the engine did not take every frame)";
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
#else
  GTEST_SKIP() << "built without the CUDA backend";
#endif
}

// Idle past LiveChainArgs::idle_ns (10 ms) the kernels end by themselves
// (so a cudaFree elsewhere is not held); the next frame starts them again.
TEST_F(LiveEngineCuda, AnIdleEngineEndsAndStartsAgain) {
#if STRIPELINE_HAVE_CUDA
  const BatchLayout layout{2048, 52, 1, PixelFormat::Mono8};
  LiveFrames frames(2048, PixelFormat::Mono8, 20, 91);
  auto cpu = make_processor(Backend::Cpu, layout, live_chain(8));
  auto gpu = cuda::make_cuda_processor_ex(layout, live_chain(8), kLive);
  std::string where;
  ASSERT_TRUE(frames.match(*cpu, *gpu, 0, 5, where)) << where;
  EXPECT_EQ(gpu->live_launches(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(frames.match(*cpu, *gpu, 5, 5, where)) << where;
  EXPECT_EQ(gpu->live_launches(), 2u);
  // A free of device memory right after frames returns once they idle (it
  // waits for every kernel of the device); the next frames start them again.
  DeviceBuffer spare = DeviceBuffer::allocate(1 << 20, "spare");
  ASSERT_TRUE(frames.match(*cpu, *gpu, 10, 5, where)) << where;
  spare.reset();
  ASSERT_TRUE(frames.match(*cpu, *gpu, 15, 5, where)) << where;
  EXPECT_GE(gpu->live_launches(), 3u);
#else
  GTEST_SKIP() << "built without the CUDA backend";
#endif
}

// A batch of several frames beside the engine (the live path batching when
// it falls behind) holds it: its kernels end (else the batch's kernels
// would wait for them to idle, which frames coming keep them from), the
// batch runs by its graph, and the next frame alone starts them again. The
// CPU's bits throughout.
TEST_F(LiveEngineCuda, ALargerBatchHoldsTheEngine) {
#if STRIPELINE_HAVE_CUDA
  const BatchLayout layout{2048, 52, 4, PixelFormat::Mono8};
  const Batch all = line_frames(2048, 12, PixelFormat::Mono8, 121);
  Batch in(layout, host_allocator_for(Backend::Cuda));
  ProfileBatch expected(2048, 4, 1, &allocate_host), got(2048, 4, 1, host_allocator_for(Backend::Cuda));
  auto cpu = make_processor(Backend::Cpu, layout, live_chain(8));
  auto gpu = cuda::make_cuda_processor_ex(layout, live_chain(8), kLive);
  auto run = [&](int first, int frames) {
    in.frames = frames;
    std::memcpy(in.pixels.data(), all.frame_data(first), static_cast<std::size_t>(frames) * layout.frame_pixels());
    expected.poison();
    got.poison();
    cpu->process(in, expected);
    gpu->process(in, got);
    std::string where;
    return same_profiles(expected, got, where) ? ::testing::AssertionSuccess()
                                               : ::testing::AssertionFailure() << "frames " << first << ".." << first + frames - 1 << ": " << where;
  };
  ASSERT_TRUE(run(0, 1));
  ASSERT_TRUE(run(1, 1));
  EXPECT_EQ(gpu->live_launches(), 1u);
  EXPECT_EQ(gpu->graphs(), 0);
  ASSERT_TRUE(run(2, 4));
  EXPECT_GT(gpu->graphs(), 0);
  ASSERT_TRUE(run(6, 1));
  EXPECT_EQ(gpu->live_launches(), 2u);  // held for the batch, started again for the frame
  ASSERT_TRUE(run(7, 4));
  ASSERT_TRUE(run(11, 1));
  EXPECT_EQ(gpu->live_launches(), 3u);
#else
  GTEST_SKIP() << "built without the CUDA backend";
#endif
}

// One engine a device: a processor of another configuration while it runs
// keeps its graphs, with the CPU's bits too; once the first is gone, the
// second configuration gets an engine of its own.
TEST_F(LiveEngineCuda, AnotherConfigurationKeepsItsGraphs) {
#if STRIPELINE_HAVE_CUDA
  const BatchLayout layout{2048, 52, 1, PixelFormat::Mono8};
  LiveFrames frames(2048, PixelFormat::Mono8, 15, 101);
  auto cpu8 = make_processor(Backend::Cpu, layout, live_chain(8));
  auto cpu4 = make_processor(Backend::Cpu, layout, live_chain(4));
  auto first = cuda::make_cuda_processor_ex(layout, live_chain(8), kLive);
  auto other = cuda::make_cuda_processor_ex(layout, live_chain(4), kLive);
  std::string where;
  ASSERT_TRUE(frames.match(*cpu8, *first, 0, 5, where)) << where;
  ASSERT_TRUE(frames.match(*cpu4, *other, 5, 5, where)) << where;
  EXPECT_EQ(other->live_launches(), 0u);
  EXPECT_GT(other->graphs(), 0);
  first.reset();
  auto later = cuda::make_cuda_processor_ex(layout, live_chain(4), kLive);
  ASSERT_TRUE(frames.match(*cpu4, *later, 10, 5, where)) << where;
  EXPECT_EQ(later->live_launches(), 1u);
  EXPECT_EQ(later->graphs(), 0);
#else
  GTEST_SKIP() << "built without the CUDA backend";
#endif
}

// ---------------------------------------------------------------------------
// The evaluation, line model on and off (printed; docs/extraction.md and
// docs/line-model-status.md quote it). Asserts only what the branch meets.

namespace {
ChainConfig line_model_chain() { return ChainConfig{}; }  // the default
ChainConfig per_column_chain() {  // the default before the line model: each column alone
  ChainConfig c;
  c.line_model.enabled = false;
  return c;
}
}  // namespace

TEST(LineModelEval, RealImagesOnAndOff) {
  std::printf("\n| image | reference columns | off: median px / >3 px %% / extra %% / missed %% | line model: median / >3 px / extra / missed |\n");
  std::printf("|---|---|---|---|\n");
  for (const std::string& name : test::real_image_names()) {
    const test::RealImage img = test::load_real_image(name);
    const auto ref = test::steger_reference(img);
    const auto off = test::score_against_reference(test::extract_real(img, per_column_chain()), ref);
    const auto on = test::score_against_reference(test::extract_real(img, line_model_chain()), ref);
    std::printf("| %s | %d/%d | %.3f / %.2f / %.2f / %.2f | %.3f / %.2f / %.2f / %.2f |\n", name.c_str(), off.reference, off.columns, off.median,
                off.over_3px_percent(), off.extra_percent(), off.missed_percent(), on.median, on.over_3px_percent(), on.extra_percent(),
                on.missed_percent());
    EXPECT_GT(on.detected, 0) << name;
  }
}

TEST(LineModelEval, SyntheticHardCasesOnAndOff) {
  std::printf("\n| case | bits | off: RMS px / detected %% / >1 px %% / false %% | line model: RMS / detected / >1 px / false | RMS change px |\n");
  std::printf("|---|---|---|---|---|\n");
  for (int bits : {8, 16}) {
    auto cases = test::hard_cases(bits, 60);
    for (const auto& oc : test::occlusion_cases(bits, 60)) cases.push_back(oc);
    for (const test::HardCase& hc : cases) {
      const auto s = test::score_synthetic(hc.config, std::vector<ChainConfig>{per_column_chain(), line_model_chain()});
      std::printf("| %s | %d | %.4f / %.3f / %.3f / %.2f | %.4f / %.3f / %.3f / %.2f | %+.4f |\n", hc.name.c_str(), bits, s[0].rms(),
                  s[0].detection_percent(), s[0].outlier_percent(), s[0].false_percent(), s[1].rms(), s[1].detection_percent(),
                  s[1].outlier_percent(), s[1].false_percent(), s[1].rms() - s[0].rms());
      EXPECT_GT(s[1].detected, 0u) << hc.name;
    }
  }
}

// CPU cost: profiles per second of the CPU processor, line model off and on,
// the production shape (300 x 2048x52, 8 bit) on the synthetic "all" case.
// Printed, never asserted (benchmarks measure; tests do not time).
TEST(LineModelEval, CpuCostPrinted) {
  SyntheticScanner scan(test::hard_cases(8, 300).back().config);
  BatchLayout l = scan.frame_layout();
  l.frames = 300;
  Batch batch(l, &allocate_host);
  ASSERT_TRUE(scan.fill(batch));
  for (int rep = 0; rep < 2; ++rep)
    for (int k : {0, 8, 4}) {  // 0: off
      const bool on = k > 0;
      ChainConfig c = on ? line_model_chain() : per_column_chain();
      if (on) c.line_model.candidates = k;
      auto p = make_processor(Backend::Cpu, l, c);
      ProfileBatch out(l.width, l.frames, 1, &allocate_host);
      p->process(batch, out);  // warm-up: thread scratch touched
      const auto start = std::chrono::steady_clock::now();
      const int runs = 3;
      for (int i = 0; i < runs; ++i) p->process(batch, out);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("line model %s (candidates %d): %.0f profiles/s (%d x %d frames of %dx%d, CPU backend)\n", on ? "on " : "off", k, runs * l.frames / s,
                  runs, l.frames, l.width, l.frame_height);
      EXPECT_GT(out.points(), 0u);
    }
}


