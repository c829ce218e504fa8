// The default extraction (ChainConfig{}: adaptive, centroid) against the
// targets of docs/extraction.md: the synthetic scanner's hard cases against
// their truth (8, 12 and 16 bits) and the real photographs against the Steger
// reference. Every synthetic case meets the targets; where a real photograph
// does not, its bound is the figure measured today (a regression guard, the
// cause in docs/extraction.md, "Not yet at the targets").
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "extraction_eval.h"

using namespace stripeline;
using namespace stripeline::test;

namespace {

struct Bounds {
  double rms_px, detection_percent, outlier_percent, false_percent;
};

// The targets.
const Bounds kTarget{kTruthTargets.rms_px, kTruthTargets.detection_percent, kTruthTargets.outlier_percent, kTruthTargets.false_percent};

}  // namespace

class DefaultExtraction : public ::testing::TestWithParam<int> {};

TEST_P(DefaultExtraction, MeetsTheTargetsOnEverySyntheticHardCase) {
  const int bits = GetParam();
  for (const HardCase& hc : hard_cases(bits, 60)) {
    ChainConfig chain;  // the built-in default
    if (bits == 12) chain.adaptive.pixel_bits = 12;
    const TruthScore s = score_synthetic(hc.config, chain);
    const Bounds& b = kTarget;
    const std::string what = hc.name + " at " + std::to_string(bits) + " bits";
    ASSERT_GT(s.expected, 1000u) << what;
    EXPECT_LE(s.rms(), b.rms_px) << what;
    EXPECT_GE(s.detection_percent(), b.detection_percent) << what;
    EXPECT_LE(s.outlier_percent(), b.outlier_percent) << what;
    if (s.occluded > 0) EXPECT_LE(s.false_percent(), b.false_percent) << what;
  }
}
INSTANTIATE_TEST_SUITE_P(Depth, DefaultExtraction, ::testing::Values(8, 12, 16), [](const auto& info) { return std::to_string(info.param) + "bit"; });

// Occlusion edges: a detection needs the stripe in its column's own
// unblurred data, so the 2-D blur's share of a lit column's stripe gives no
// point in the occluded column beside it. Every occluded cell counts here,
// edges included: at most 1 % get a point, and none beyond an occlusion's
// first column.
TEST_P(DefaultExtraction, GivesNoPointsInOccludedColumns) {
  const int bits = GetParam();
  for (const HardCase& hc : occlusion_cases(bits, 60)) {
    ChainConfig chain;
    if (bits == 12) chain.adaptive.pixel_bits = 12;
    const TruthScore s = score_synthetic(hc.config, chain);
    const std::string what = hc.name + " at " + std::to_string(bits) + " bits";
    ASSERT_GT(s.occluded_cells, 400u) << what;
    EXPECT_LE(s.occluded_false_percent(), 1.0) << what << ": " << s.false_first << " in first columns, " << s.false_beyond << " beyond";
    EXPECT_EQ(s.false_beyond, 0u) << what;
    EXPECT_LE(s.rms(), kTarget.rms_px) << what;
    EXPECT_GE(s.detection_percent(), kTarget.detection_percent) << what;
  }
}

// A clipped core with a strong one-sided glow: the centre comes from the
// clipped plateau's edges in the unblurred data, not from the glow's mass.
TEST_P(DefaultExtraction, CentresASaturatedCoreWithOneSidedGlow) {
  const int bits = GetParam();
  const HardCase hc = saturated_glow_case(bits, 60);
  ChainConfig chain;
  if (bits == 12) chain.adaptive.pixel_bits = 12;
  const TruthScore s = score_synthetic(hc.config, chain);
  const std::string what = hc.name + " at " + std::to_string(bits) + " bits";
  ASSERT_GT(s.expected, 1000u) << what;
  std::printf("%s: RMS %.4f px, bias %+.4f px, detected %.3f %%, > 1 px %.3f %%\n", what.c_str(), s.rms(), s.bias(), s.detection_percent(),
              s.outlier_percent());
  EXPECT_LE(s.rms(), 0.15) << what;
  EXPECT_GE(s.detection_percent(), kTarget.detection_percent) << what;
  EXPECT_LE(s.outlier_percent(), kTarget.outlier_percent) << what;
}

// The blur along the columns only gives no point there either.
TEST(DefaultExtraction, TheBlurAlongColumnsGivesNoPointInOccludedColumns) {
  ChainConfig along;
  along.blur_across = false;
  const TruthScore s = score_synthetic(occlusion_cases(8, 30)[1].config, along);
  ASSERT_GT(s.occluded_cells, 400u);
  EXPECT_EQ(s.false_first + s.false_beyond, 0u);
}

// The fixed-threshold chain that was the default: it fails exactly where the
// adaptive one holds (bright ambient, texture, 16-bit), so the comparison is
// not an artefact of the scoring.
TEST(DefaultExtraction, TheOldFixedThresholdDefaultFailsOnAmbientLightAnd16Bit) {
  const auto cases = hard_cases(8, 30);
  for (const HardCase& hc : cases)
    if (hc.name == "ambient") EXPECT_GT(score_synthetic(hc.config, old_default_chain()).outlier_percent(), 50.0);
  for (const HardCase& hc : hard_cases(16, 30))
    if (hc.name == "default") EXPECT_GT(score_synthetic(hc.config, old_default_chain()).false_percent(), 50.0);
}

TEST(DefaultExtraction, HoldsOnRealPhotographsAgainstTheStegerReference) {
  // Every image meets the targets but one figure: gravel top, 9.38 % extra
  // (8 and 16 bits). 48 of its 60 extra columns (182-229) are a dim segment
  // of the line that the reference does not seed: its strongest ridge is
  // 2.4 x the gravel's ridge noise, under the reference's 5 x, and at 4 x the
  // reference already reports texture lines in 22 % of the synthetic
  // scanner's occluded textured columns (docs/extraction.md, "Not yet at the
  // targets", with the picture). Bounded at today's figure.
  const std::map<std::string, double> extra_bound = {{"gravel_top_line_red.png", 9.5}};
  // print_board_red.png: a thin line over a printed black-and-white board;
  // each column alone, in 45 % of the columns the brightest stripe-shaped
  // candidate is a printed edge of the white paper. The line model (the
  // default) brings it to 0.201 px and 8.05 % > 3 px (9.65 % as 16 bits); in
  // 31 of its 69 columns > 3 px off the reference itself is > 3 px from the
  // laser's two straight segments (docs/extraction.md, "Line model"):
  // bounded at today's figure. wood_slice_red.png: 5.16 % (5.30 % as 16
  // bits) of the reference's columns missed, most of them short segments
  // between breaks that the model drops (line_min_length): bounded at today's.
  // Missing columns are no issue-21 target; wrong and extra points are.
  const std::map<std::string, double> median_bound = {};
  const std::map<std::string, double> over_3px_bound = {{"print_board_red.png", 10.0}};
  const std::map<std::string, double> missed_bound = {{"wood_slice_red.png", 5.5}, {"print_board_red.png", 3.5}, {"gravel_top_line_red.png", 2.5}};
  for (const std::string& name : real_image_names()) {
    const RealImage img = load_real_image(name);
    const auto ref = steger_reference(img);
    for (bool bits16 : {false, true}) {
      const ReferenceScore s = score_against_reference(extract_real(img, ChainConfig{}, bits16), ref);
      const std::string what = name + (bits16 ? " as 16-bit" : " as 8-bit");
      std::printf("%s: median %.3f px, > 3 px %.2f %%, extra %.2f %%, missed %.2f %% (reference %d of %d columns, %d steep)\n", what.c_str(),
                  s.median, s.over_3px_percent(), s.extra_percent(), s.missed_percent(), s.reference, s.columns, s.steep);
      ASSERT_GT(s.reference, s.columns * 9 / 10) << what << ": the reference finds the line in too few columns to score";
      EXPECT_LE(s.median, median_bound.count(name) ? median_bound.at(name) : 0.5) << what;
      EXPECT_LE(s.over_3px_percent(), over_3px_bound.count(name) ? over_3px_bound.at(name) : 5.0) << what;
      EXPECT_LE(s.extra_percent(), extra_bound.count(name) ? extra_bound.at(name) : 5.0) << what;
      EXPECT_LE(s.missed_percent(), missed_bound.count(name) ? missed_bound.at(name) : 2.0) << what;
    }
  }
}

// The neighbour check (1 column each side, 2 rows per column) on the real
// photographs: of the detections it removes where the reference has a
// centre, most were wrong (> 3 px off it). Measured: 3 right, 19 wrong (the
// other 20 removed are where the reference has no line, or only a steep one).
// And the synthetic hard cases keep their targets with it.
TEST(NeighbourCheck, RemovesMostlyWrongPointsOnRealPhotographs) {
  int right = 0, wrong = 0, elsewhere = 0;
  for (const std::string& name : real_image_names()) {
    const RealImage img = load_real_image(name);
    const auto ref = steger_reference(img);
    // Each column alone (the line model off: it removes most of these points itself).
    ChainConfig per_column, checked = neighbour_checked_chain();
    per_column.line_model.enabled = checked.line_model.enabled = false;
    const auto before = extract_real(img, per_column);
    const auto after = extract_real(img, checked);
    for (std::size_t x = 0; x < before.size(); ++x) {
      if (std::isnan(before[x])) {
        EXPECT_TRUE(std::isnan(after[x])) << name << " column " << x << ": the check only removes";
        continue;
      }
      if (!std::isnan(after[x])) {
        EXPECT_EQ(after[x], before[x]) << name << " column " << x << ": a kept point is unchanged";
        continue;
      }
      if (!std::isfinite(ref[x]))
        ++elsewhere;
      else if (std::abs(before[x] - ref[x]) > 3.0)
        ++wrong;
      else
        ++right;
    }
  }
  std::printf("neighbour check removed %d points off the reference, %d on it, %d where it has no centre\n", wrong, right, elsewhere);
  EXPECT_GE(wrong, 4 * right);
  EXPECT_GT(wrong, 10);
  for (const HardCase& hc : hard_cases(8, 30)) {
    const TruthScore s = score_synthetic(hc.config, neighbour_checked_chain());
    EXPECT_LE(s.rms(), kTarget.rms_px) << hc.name;
    EXPECT_GE(s.detection_percent(), kTarget.detection_percent) << hc.name;
    EXPECT_LE(s.outlier_percent(), kTarget.outlier_percent) << hc.name;
    if (s.occluded > 0) EXPECT_LE(s.false_percent(), kTarget.false_percent) << hc.name;
  }
}

// Two lines 280 rows apart in one image: selection "all" keeps both, each
// where the single-line crops put it (the crops are rows 0..179 and 180..359).
// Measured: 496 of 576 columns (86.1 %); the rest lose a line to gravel
// speckle as prominent as the line.
TEST(DefaultExtraction, TwoLinesStayTwoPeaksWithSelectionAll) {
  RealImage both = load_real_image("gravel_two_lines_red.png");
  const auto top = steger_reference(load_real_image("gravel_top_line_red.png"));
  const auto bottom = steger_reference(load_real_image("gravel_bottom_line_red.png"));
  ChainConfig chain;
  chain.column.selection = SpotSelection::All;
  chain.max_peaks = 4;
  const auto rows = extract_all_real(both, chain);
  int columns = 0, both_found = 0;
  for (int x = 0; x < both.width; ++x) {
    if (!std::isfinite(top[x]) || !std::isfinite(bottom[x])) continue;
    ++columns;
    bool t = false, b = false;
    for (double r : rows[static_cast<std::size_t>(x)]) {
      t = t || std::abs(r - top[x]) <= 3.0;
      b = b || std::abs(r - (bottom[x] + 180.0)) <= 3.0;
    }
    both_found += t && b;
  }
  std::printf("both lines found in %d of %d columns\n", both_found, columns);
  ASSERT_GT(columns, 400);
  EXPECT_GE(both_found, columns * 80 / 100) << both_found << " of " << columns << " columns hold both lines";
}
