// Height-map filters (stages/heightmap_filters.h): the CPU backend against
// plain reference implementations written here, the CUDA backend against the
// CPU one exactly, the parser, and `stripeline filter` end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/errors.h"
#include "io/image_reader.h"
#include "io/image_writer.h"
#include "stages/backend.h"
#include "stages/heightmap_filters.h"
#include "gpu_test.h"
#include "test_helpers.h"

namespace stripeline {
namespace {

using Map = std::vector<std::uint16_t>;

struct Dims {
  int w, h;
};
const Dims kSizes[] = {{1, 1}, {13, 42}, {176, 113}, {257, 3}, {3, 257}, {31, 1}};

// Random codes with ~10% no-detection pixels; narrow value range so that
// windows hold ties.
Map random_map(int w, int h, unsigned seed, int range = 60000) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> v(1, range);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Map m(static_cast<std::size_t>(w) * h);
  for (auto& p : m) p = u(rng) < 0.1 ? 0 : static_cast<std::uint16_t>(v(rng));
  return m;
}

// ---- reference implementations: the rules, plainly --------------------------------
Map ref_median(const Map& in, int w, int h, int k) {
  Map out(in.size());
  const int r = k / 2;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      std::vector<std::uint16_t> valid;
      for (int yy = y - r; yy <= y + r; ++yy)
        for (int xx = x - r; xx <= x + r; ++xx)
          if (yy >= 0 && yy < h && xx >= 0 && xx < w && in[yy * w + xx] != 0) valid.push_back(in[yy * w + xx]);
      std::sort(valid.begin(), valid.end());
      out[y * w + x] = valid.empty() ? 0 : valid[(valid.size() - 1) / 2];  // lower middle
    }
  return out;
}

std::uint8_t ref_to8(std::uint16_t v, int lo, int hi) {
  if (v == 0) return 0;
  if (v <= lo) return 1;
  if (v >= hi) return 255;
  return static_cast<std::uint8_t>(1 + ((v - lo) * 254 + (hi - lo) / 2) / (hi - lo));
}

Map ref_morph(const Map& in, int w, int h, int L, bool vertical, bool erode) {
  Map out(in.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      int best = erode ? 65536 : 0;
      for (int d = -(L / 2); d <= (L - 1) / 2; ++d) {
        const int xx = vertical ? x : x + d, yy = vertical ? y + d : y;
        if (xx < 0 || xx >= w || yy < 0 || yy >= h) continue;
        const int v = in[yy * w + xx];
        if (erode) {
          if (v != 0) best = std::min(best, v);
        } else {
          best = std::max(best, v);
        }
      }
      out[y * w + x] = static_cast<std::uint16_t>(best == 65536 ? 0 : best);
    }
  return out;
}

Map run16(Backend b, const Map& in, int w, int h, const std::vector<FilterStep>& steps) {
  auto f = make_heightmap_filter(b, w, h, steps);
  EXPECT_FALSE(f->output_8bit());
  Map out(in.size(), 0xABCD);  // poison
  f->run(in.data(), out.data());
  return out;
}

std::vector<std::uint8_t> run8(Backend b, const Map& in, int w, int h, const std::vector<FilterStep>& steps) {
  auto f = make_heightmap_filter(b, w, h, steps);
  EXPECT_TRUE(f->output_8bit());
  std::vector<std::uint8_t> out(in.size(), 0xAB);  // poison (0xAB is a valid to8 value, see the 2nd poison below)
  f->run(in.data(), out.data());
  std::vector<std::uint8_t> again(in.size(), 0x5C);
  f->run(in.data(), again.data());
  EXPECT_EQ(out, again) << "an output byte was left unwritten";
  return out;
}

FilterStep morph(bool erode, bool vertical, int L) {
  return {erode ? FilterOp::Erode : FilterOp::Dilate, vertical ? FilterAxis::Vertical : FilterAxis::Horizontal, L, 0, 0};
}
FilterStep median(int k) { return {FilterOp::Median, FilterAxis::None, k, 0, 0}; }
FilterStep to8(int lo, int hi) {
  return {FilterOp::To8, FilterAxis::None, 0, static_cast<std::uint16_t>(lo), static_cast<std::uint16_t>(hi)};
}

std::vector<int> lengths() {
  std::vector<int> l;
  for (int i = 1; i <= 70; ++i) l.push_back(i);
  l.push_back(128);
  l.push_back(254);
  l.push_back(255);
  return l;
}

// Every morphology case: a random map of each size (seeds from `seed` on),
// every length, both axes, erosion and dilation; stops at the first fatal
// failure of `check`.
template <class Check>
void for_each_morphology(unsigned seed, Check check) {
  for (const auto& d : kSizes) {
    const Map in = random_map(d.w, d.h, seed++);
    for (int L : lengths())
      for (bool vertical : {false, true})
        for (bool erode : {false, true}) {
          check(in, d, L, vertical, erode);
          if (::testing::Test::HasFatalFailure()) return;
        }
  }
}

// ---- CPU against the references ------------------------------------------------------
TEST(HeightMapFilters, MorphologyMatchesReferenceEveryLength) {
  for_each_morphology(1, [](const Map& in, const Dims& d, int L, bool vertical, bool erode) {
    ASSERT_EQ(run16(Backend::Cpu, in, d.w, d.h, {morph(erode, vertical, L)}), ref_morph(in, d.w, d.h, L, vertical, erode))
        << d.w << "x" << d.h << " L=" << L << (vertical ? " vertical" : " horizontal") << (erode ? " erode" : " dilate");
  });
}

TEST(HeightMapFilters, ErosionIgnoresHolesAndAllZeroWindowsGiveZero) {
  // One row: 5 0 0 0 7, erosion of length 3 keeps the surface around the hole.
  const Map in = {5, 0, 0, 0, 7};
  EXPECT_EQ(run16(Backend::Cpu, in, 5, 1, {morph(true, false, 3)}), (Map{5, 5, 0, 7, 7}));
  EXPECT_EQ(run16(Backend::Cpu, in, 5, 1, {morph(false, false, 3)}), (Map{5, 5, 0, 7, 7}));
  // Even length: window [x-1, x].
  EXPECT_EQ(run16(Backend::Cpu, Map{1, 9, 2, 3}, 4, 1, {morph(false, false, 2)}), (Map{1, 9, 9, 3}));
  EXPECT_EQ(run16(Backend::Cpu, Map{1, 9, 2, 3}, 4, 1, {morph(true, false, 2)}), (Map{1, 1, 2, 2}));
  // Extreme codes: 65535 and 1 are valid heights, not sentinels.
  EXPECT_EQ(run16(Backend::Cpu, Map{65535, 0, 1}, 3, 1, {morph(true, false, 3)}), (Map{65535, 1, 1}));
  EXPECT_EQ(run16(Backend::Cpu, Map{65535, 0, 1}, 3, 1, {morph(false, false, 3)}), (Map{65535, 65535, 1}));
}

TEST(HeightMapFilters, MedianMatchesReferenceEverySize) {
  unsigned seed = 100;
  for (const auto& d : kSizes)
    for (int range : {60000, 5}) {
      const Map in = random_map(d.w, d.h, seed++, range);
      for (int k = 3; k <= 15; k += 2)
        ASSERT_EQ(run16(Backend::Cpu, in, d.w, d.h, {median(k)}), ref_median(in, d.w, d.h, k)) << d.w << "x" << d.h << " k=" << k;
    }
}

TEST(HeightMapFilters, MedianRules) {
  // Even count -> lower middle: valid {10, 20} in every 3x3 window of this 2x1 map.
  EXPECT_EQ(run16(Backend::Cpu, Map{20, 10}, 2, 1, {median(3)}), (Map{10, 10}));
  // No valid pixel -> 0; a hole among valid pixels is filled.
  EXPECT_EQ(run16(Backend::Cpu, Map{0, 0, 0}, 3, 1, {median(3)}), (Map{0, 0, 0}));
  EXPECT_EQ(run16(Backend::Cpu, Map{7, 0, 9}, 3, 1, {median(3)}), (Map{7, 7, 9}));
}

TEST(HeightMapFilters, To8Rule) {
  EXPECT_EQ(ref_to8(0, 100, 200), 0);
  const Map in = {0, 1, 100, 101, 150, 199, 200, 65535};
  const auto out = run8(Backend::Cpu, in, 8, 1, {to8(100, 200)});
  EXPECT_EQ(out, (std::vector<std::uint8_t>{0, 1, 1, 4, 128, 252, 255, 255}));
  const Map r = random_map(176, 113, 7);
  std::vector<std::uint8_t> expected(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) expected[i] = ref_to8(r[i], 1000, 50000);
  EXPECT_EQ(run8(Backend::Cpu, r, 176, 113, {to8(1000, 50000)}), expected);
}

TEST(HeightMapFilters, MedianThenTo8InOnePassEqualsComposition) {
  for (const auto& d : kSizes)
    for (int k = 3; k <= 15; k += 4) {
      const Map in = random_map(d.w, d.h, 40 + k);
      const Map med = ref_median(in, d.w, d.h, k);
      std::vector<std::uint8_t> expected(in.size());
      for (std::size_t i = 0; i < in.size(); ++i) expected[i] = ref_to8(med[i], 2000, 60000);
      ASSERT_EQ(run8(Backend::Cpu, in, d.w, d.h, {median(k), to8(2000, 60000)}), expected) << d.w << "x" << d.h << " k=" << k;
    }
}

TEST(HeightMapFilters, ChainsAndOpeningClosing) {
  const int w = 176, h = 113;
  const Map in = random_map(w, h, 77);
  Map expected = ref_median(in, w, h, 5);
  expected = ref_morph(expected, w, h, 32, false, false);
  expected = ref_morph(expected, w, h, 7, true, true);
  EXPECT_EQ(run16(Backend::Cpu, in, w, h, {median(5), morph(false, false, 32), morph(true, true, 7)}), expected);
  EXPECT_EQ(run16(Backend::Cpu, in, w, h, opening(FilterAxis::Horizontal, 9)),
            ref_morph(ref_morph(in, w, h, 9, false, true), w, h, 9, false, false));
  EXPECT_EQ(run16(Backend::Cpu, in, w, h, closing(FilterAxis::Vertical, 4)),
            ref_morph(ref_morph(in, w, h, 4, true, false), w, h, 4, true, true));
}

TEST(HeightMapFilters, ParseKeepsOrderAndRejectsBadSteps) {
  const auto s = parse_filter_steps({"--median", "5", "--dilate-h", "32", "--erode-v=2", "--to8", "10:4000"});
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].op, FilterOp::Median);
  EXPECT_EQ(s[0].size, 5);
  EXPECT_EQ(s[1].op, FilterOp::Dilate);
  EXPECT_EQ(s[1].axis, FilterAxis::Horizontal);
  EXPECT_EQ(s[1].size, 32);
  EXPECT_EQ(s[2].op, FilterOp::Erode);
  EXPECT_EQ(s[2].axis, FilterAxis::Vertical);
  EXPECT_EQ(s[3].op, FilterOp::To8);
  EXPECT_EQ(s[3].lo, 10);
  EXPECT_EQ(s[3].hi, 4000);
  EXPECT_EQ(parse_filter_step_list({"median 3", "dilate-v 64"}).size(), 2u);
  for (const auto& bad : std::vector<std::vector<std::string>>{{"--median", "4"},
                                                                {"--median", "17"},
                                                                {"--median", "x"},
                                                                {"--dilate-h", "0"},
                                                                {"--erode-v", "256"},
                                                                {"--to8", "5:3"},
                                                                {"--to8", "5"},
                                                                {"--to8", "1:70000"},
                                                                {"--to8", "1:2", "--median", "3"},
                                                                {"--blur", "3"},
                                                                {"--median"},
                                                                {}})
    EXPECT_THROW(parse_filter_steps(bad), InputError);
  EXPECT_THROW(make_heightmap_filter(Backend::Cpu, 0, 5, {median(3)}), InputError);
}

// ---- CUDA against the CPU ------------------------------------------------------------
class HeightMapFiltersCuda : public test::CudaTest {};

TEST_F(HeightMapFiltersCuda, MorphologyMatchesCpuExactly) {
  for_each_morphology(500, [](const Map& in, const Dims& d, int L, bool vertical, bool erode) {
    const std::vector<FilterStep> steps = {morph(erode, vertical, L)};
    ASSERT_EQ(run16(Backend::Cuda, in, d.w, d.h, steps), run16(Backend::Cpu, in, d.w, d.h, steps))
        << d.w << "x" << d.h << " " << describe(steps[0]);
  });
}

TEST_F(HeightMapFiltersCuda, MedianAndTo8MatchCpuExactly) {
  unsigned seed = 900;
  for (const auto& d : kSizes)
    for (int range : {60000, 5}) {
      const Map in = random_map(d.w, d.h, seed++, range);
      for (int k = 3; k <= 15; k += 2) {
        ASSERT_EQ(run16(Backend::Cuda, in, d.w, d.h, {median(k)}), run16(Backend::Cpu, in, d.w, d.h, {median(k)}))
            << d.w << "x" << d.h << " k=" << k;
        ASSERT_EQ(run8(Backend::Cuda, in, d.w, d.h, {median(k), to8(3, 40000)}), run8(Backend::Cpu, in, d.w, d.h, {median(k), to8(3, 40000)}))
            << d.w << "x" << d.h << " k=" << k << " + to8";
      }
      ASSERT_EQ(run8(Backend::Cuda, in, d.w, d.h, {to8(2, 30000)}), run8(Backend::Cpu, in, d.w, d.h, {to8(2, 30000)}));
    }
}

TEST_F(HeightMapFiltersCuda, ChainsMatchCpuExactlyOnLargeMap) {
  const int w = 700, h = 700;
  const Map in = random_map(w, h, 4242);
  const std::vector<std::vector<FilterStep>> chains = {
      {median(3), morph(false, false, 64), morph(true, true, 32)},
      {morph(true, false, 2), morph(false, true, 255), median(15)},
      {median(5), morph(false, true, 33), to8(100, 50000)},
  };
  for (const auto& c : chains) {
    auto cpu = make_heightmap_filter(Backend::Cpu, w, h, c);
    auto gpu = make_heightmap_filter(Backend::Cuda, w, h, c);
    const std::size_t bytes = in.size() * (cpu->output_8bit() ? 1 : 2);
    std::vector<std::uint8_t> a(bytes, 0xEE), b(bytes, 0x11);
    cpu->run(in.data(), a.data());
    gpu->run(in.data(), b.data());
    ASSERT_EQ(a, b);
    gpu->run(in.data(), b.data());  // a second run on the same set-up
    ASSERT_EQ(a, b);
  }
}

// ---- the command ---------------------------------------------------------------------
Map read_map16(const std::filesystem::path& p, int& w, int& h) {
  auto r = io::open_image(p);
  w = r->info().width;
  h = static_cast<int>(r->info().height);
  EXPECT_EQ(r->info().format, PixelFormat::Mono16);
  Map m(static_cast<std::size_t>(w) * h);
  r->read_rows(reinterpret_cast<std::byte*>(m.data()), h);
  return m;
}

TEST(HeightMapFilterCommand, AppliesStepsInOrder) {
  test::TempDir dir;
  const int w = 57, h = 31;
  const Map in = random_map(w, h, 31337);
  io::write_image(dir / "in.png", in.data(), w, h, PixelFormat::Mono16);
  std::string out;
  ASSERT_EQ(test::run_cli("filter " + (dir / "in.png").string() + " " + (dir / "a.tiff").string() + " --dilate-h 5 --erode-v 3 --backend cpu", &out), 0)
      << out;
  ASSERT_EQ(test::run_cli("filter " + (dir / "in.png").string() + " " + (dir / "b.png").string() + " --erode-v 3 --dilate-h 5", &out), 0) << out;
  int aw = 0, ah = 0, bw = 0, bh = 0;
  const Map a = read_map16(dir / "a.tiff", aw, ah);
  const Map b = read_map16(dir / "b.png", bw, bh);
  EXPECT_EQ(aw, w);
  EXPECT_EQ(ah, h);
  EXPECT_EQ(a, ref_morph(ref_morph(in, w, h, 5, false, false), w, h, 3, true, true));
  EXPECT_EQ(b, ref_morph(ref_morph(in, w, h, 3, true, true), w, h, 5, false, false));

  ASSERT_EQ(test::run_cli("filter " + (dir / "in.png").string() + " " + (dir / "c.png").string() + " --median 3 --to8 100:50000", &out), 0) << out;
  auto r = io::open_image(dir / "c.png");
  ASSERT_EQ(r->info().format, PixelFormat::Mono8);
  std::vector<std::uint8_t> c(static_cast<std::size_t>(w) * h);
  r->read_rows(reinterpret_cast<std::byte*>(c.data()), h);
  const Map med = ref_median(in, w, h, 3);
  for (std::size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], ref_to8(med[i], 100, 50000)) << i;
}

TEST(HeightMapFilterCommand, BadInputExitsTwoWithOneLine) {
  test::TempDir dir;
  const Map in = random_map(20, 10, 5);
  io::write_image(dir / "in.png", in.data(), 20, 10, PixelFormat::Mono16);
  std::vector<std::uint8_t> eight(200, 9);
  io::write_image(dir / "eight.png", eight.data(), 20, 10, PixelFormat::Mono8);
  const std::string good = (dir / "in.png").string();
  const std::string outp = (dir / "out.png").string();
  const std::vector<std::string> cases = {
      (dir / "missing.png").string() + " " + outp + " --median 3",
      (dir / "eight.png").string() + " " + outp + " --median 3",
      good + " " + outp + " --median 4",
      good + " " + outp + " --dilate-h 0",
      good + " " + outp + " --erode-v abc",
      good + " " + outp + " --to8 9:2",
      good + " " + outp + " --to8 1:9000 --median 3",
      good + " " + outp + " --median",
      good + " " + outp,
      good + " " + outp + " --sharpen 3",
      good + " --median 3",
      good + " " + outp + " --median 3 --backend quantum",
  };
  for (const auto& args : cases) {
    std::string out;
    EXPECT_EQ(test::run_cli("filter " + args, &out), 2) << args << "\n" << out;
    EXPECT_NE(out.find("error"), std::string::npos) << args << "\n" << out;
    EXPECT_LE(std::count(out.begin(), out.end(), '\n'), 2) << out;
    EXPECT_FALSE(std::filesystem::exists(dir / "out.png")) << args;
  }
}

}  // namespace
}  // namespace stripeline
