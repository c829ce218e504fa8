// The neighbour check (kernels/neighbour_check.h): isolated detections go,
// lines stay; through the processor; its keys validated (read from a
// config file: tests/test_config.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/errors.h"
#include "kernels/neighbour_check.h"
#include "stages/chain.h"
#include "test_helpers.h"

using namespace stripeline;

namespace {

// One frame's single-slot profile, rows given per column (negative = none).
struct Profile {
  std::vector<std::int32_t> position;
  std::vector<std::uint16_t> intensity, width, quality;
  std::vector<std::uint8_t> count, isolated;
  explicit Profile(const std::vector<double>& rows)
      : position(rows.size()), intensity(rows.size(), 100), width(rows.size(), 3), quality(rows.size(), 50), count(rows.size()),
        isolated(rows.size(), 0xEE) {
    for (std::size_t x = 0; x < rows.size(); ++x) {
      count[x] = rows[x] >= 0.0 ? 1 : 0;
      position[x] = rows[x] >= 0.0 ? static_cast<std::int32_t>(rows[x] * kPositionOne) : kNoPeak;
      if (rows[x] < 0.0) intensity[x] = width[x] = quality[x] = 0;
    }
  }
  // Columns still holding a detection after the check.
  std::vector<int> check(int columns, double step) {
    kernels::NeighbourCheckView v;
    v.position = position.data(), v.intensity = intensity.data(), v.stripe_width = width.data(), v.quality = quality.data();
    v.count = count.data(), v.isolated = isolated.data(), v.frames = 1, v.width = static_cast<int>(position.size());
    kernels::NeighbourCheckParams p;
    p.columns = columns;
    p.step_q8 = static_cast<std::int32_t>(step * kPositionOne);
    kernels::neighbour_check_cpu(v, p, 0, 1);
    std::vector<int> kept;
    for (std::size_t x = 0; x < position.size(); ++x) {
      if (count[x]) {
        kept.push_back(static_cast<int>(x));
        continue;
      }
      EXPECT_EQ(position[x], kNoPeak) << x;  // an emptied column is empty in every array
      EXPECT_EQ(intensity[x] + width[x] + quality[x], 0) << x;
    }
    return kept;
  }
};

}  // namespace

TEST(NeighbourCheck, RemovesSpikesAndKeepsLines) {
  //                  0     1     2     3     4     5     6     7     8     9     10   11
  Profile p({10.0, 10.2, 10.4, 10.5, 10.3, 10.1, 40.0, 10.6, 10.9, 11.0, -1.0, 11.5});
  // The spike at 6 goes; 11 is next to an empty column only: alone with 1 column, supported by 9 with 2.
  EXPECT_EQ(Profile(p).check(1, 2.0), (std::vector<int>{0, 1, 2, 3, 4, 5, 7, 8, 9}));
  EXPECT_EQ(Profile(p).check(2, 2.0), (std::vector<int>{0, 1, 2, 3, 4, 5, 7, 8, 9, 11}));
  // Two neighbours both isolated from the rest are each other's support.
  EXPECT_EQ(Profile({10.0, 10.0, 50.0, 50.5, 10.0, 10.0}).check(1, 2.0), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  // A single detection in a frame has no support at all.
  EXPECT_EQ(Profile({-1.0, 20.0, -1.0}).check(16, 64.0), std::vector<int>{});
  // Off: nothing changes.
  EXPECT_EQ(Profile(p).check(0, 2.0).size(), 11u);
}

TEST(NeighbourCheck, StepIsRowsPerColumnOfDistance) {
  // A line rising 3 rows per column: kept with step 3, gone with step 2.
  const std::vector<double> slope{10.0, 13.0, 16.0, 19.0, 22.0};
  EXPECT_EQ(Profile(slope).check(1, 3.0).size(), 5u);
  EXPECT_EQ(Profile(slope).check(1, 2.0).size(), 0u);
  // Two columns apart, the reach doubles: 5 rows over 2 columns passes step 2.5.
  EXPECT_EQ(Profile({10.0, -1.0, 15.0}).check(2, 2.5).size(), 2u);
  EXPECT_EQ(Profile({10.0, -1.0, 15.0}).check(2, 2.4).size(), 0u);
}

// Through the CPU processor: a frame with a stripe and one bright dot far
// from it in a column of its own (with the stripe missing there).
TEST(NeighbourCheck, TheProcessorDropsAnIsolatedDot) {
  const int w = 64, h = 40;
  Batch b = test::make_batch<std::uint8_t>(w, h, 1);
  auto* px = reinterpret_cast<std::uint8_t*>(b.pixels.data());
  std::memset(px, 10, b.pixels.size());
  for (int x = 0; x < w; ++x) {
    if (x == 30) continue;
    for (int dy = -2; dy <= 2; ++dy) px[(20 + dy) * w + x] = static_cast<std::uint8_t>(dy == 0 ? 200 : (dy == 1 || dy == -1 ? 120 : 40));
  }
  for (int dy = -2; dy <= 2; ++dy) px[(5 + dy) * w + 30] = static_cast<std::uint8_t>(dy == 0 ? 200 : (dy == 1 || dy == -1 ? 120 : 40));
  ChainConfig chain;
  chain.blur_size = 0;
  chain.line_model.enabled = false;  // the check alone (the line model drops the dot itself)
  ProfileBatch off(w, 1, 1, &allocate_host), on(w, 1, 1, &allocate_host);
  make_processor(Backend::Cpu, b.layout, chain)->process(b, off);
  chain.neighbour_check.columns = 2;
  make_processor(Backend::Cpu, b.layout, chain)->process(b, on);
  ASSERT_EQ(off.peaks(0, 30), 1);
  EXPECT_NEAR(position_to_row(off.position[30]), 5.0, 0.05);
  EXPECT_EQ(on.peaks(0, 30), 0) << "the dot at row 5 is no line";
  for (int x = 0; x < w; ++x) {
    if (x == 30) continue;
    ASSERT_EQ(on.peaks(0, x), 1) << x;
    EXPECT_EQ(on.position[x], off.position[x]) << x;
  }
  EXPECT_EQ(on.points(), off.points() - 1);
}

TEST(NeighbourCheck, KeysAreValidatedNamingTheKey) {
  const BatchLayout l{64, 16, 10, PixelFormat::Mono8};
  auto message = [&](const ChainConfig& c) -> std::string {
    try {
      validate_neighbour_check(c, validate_chain(c, l));
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  ChainConfig c;
  c.neighbour_check.columns = 17;
  EXPECT_NE(message(c).find("neighbour_columns"), std::string::npos) << message(c);
  c.neighbour_check.columns = 2;
  c.neighbour_check.step = 0.0;
  EXPECT_NE(message(c).find("neighbour_step"), std::string::npos) << message(c);
  c.neighbour_check.step = 2.0;
  EXPECT_EQ(message(c), "");
  c.column.selection = SpotSelection::All;  // several slots: refused, not ignored
  EXPECT_NE(message(c).find("single-peak"), std::string::npos) << message(c);
  EXPECT_THROW(make_processor(Backend::Cpu, l, c), ConfigError);
}
