// The extraction evaluation table: every hard case of the synthetic scanner
// (8, 12 and 16 bits) against its truth, and the real photographs against the
// Steger reference, for the old default chain, the adaptive method each
// column alone, and with the line model (the default) and each estimator. Run it alone to read the table:
//
//   build/tests/unit_tests --gtest_filter='ExtractionEval.*'
//
// docs/extraction.md quotes its output. It asserts only that every chain ran
// and scored something; the targets are asserted by the accuracy tests.
#include <gtest/gtest.h>

#include <cstdio>

#include "extraction_eval.h"

using namespace stripeline;
using namespace stripeline::test;

namespace {

struct Named {
  const char* name;
  ChainConfig chain;
};

std::vector<Named> compared_chains() {
  ChainConfig per_column = adaptive_chain(SubpixelEstimator::Centroid);
  per_column.line_model.enabled = false;
  return {{"old default (cog 40/50)", old_default_chain()},
          {"adaptive centroid, each column alone", per_column},
          {"adaptive centroid + line model (default)", adaptive_chain(SubpixelEstimator::Centroid)},
          {"adaptive gauss", adaptive_chain(SubpixelEstimator::Gauss)},
          {"adaptive parabola", adaptive_chain(SubpixelEstimator::Parabola)},
          {"adaptive steger", adaptive_chain(SubpixelEstimator::Steger)},
          {"adaptive centroid + neighbour check 1/2", neighbour_checked_chain()}};
}

}  // namespace

TEST(ExtractionEval, SyntheticHardCasesTable) {
  const auto chains = compared_chains();
  std::vector<ChainConfig> configs;
  for (const auto& c : chains) configs.push_back(c.chain);
  std::printf("\n| case | bits | chain | RMS px | bias px | max inlier px | detected %% | >1 px %% | false in occluded %% |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (int bits : {8, 16, 12}) {
    for (const HardCase& hc : hard_cases(bits, 60)) {
      std::vector<ChainConfig> cfg = configs;
      if (bits == 12)
        for (auto& c : cfg) c.adaptive.pixel_bits = 12;
      const auto scores = score_synthetic(hc.config, cfg);
      for (std::size_t i = 0; i < chains.size(); ++i) {
        const TruthScore& s = scores[i];
        std::printf("| %s | %d | %s | %.4f | %+.4f | %.3f | %.3f | %.3f | %.2f |\n", hc.name.c_str(), bits, chains[i].name, s.rms(), s.bias(),
                    s.max_inlier, s.detection_percent(), s.outlier_percent(), s.false_percent());
        EXPECT_GT(s.expected, 0u);
      }
    }
  }
}

// Occlusion edges: the 2-D blur (the default), the blur along the columns
// only (blur_across = false), and no blur, on occluded runs of 8..40
// columns: points in every occluded cell (in the run's first column / beyond
// it), and the accuracy of the hard cases with each blur.
TEST(ExtractionEval, OcclusionEdgesTable) {
  ChainConfig along, across, none;
  along.blur_across = false;
  none.blur_size = 0;
  const std::vector<Named> chains = {{"blur 5, 2-D (default)", across}, {"blur 5 along columns", along}, {"no blur", none}};
  std::vector<ChainConfig> configs;
  for (const auto& c : chains) configs.push_back(c.chain);
  std::printf("\n| case | bits | chain | occluded cells | points in first column | beyond | %% of occluded | RMS px | detected %% |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (int bits : {8, 16}) {
    auto cases = occlusion_cases(bits, 60);
    for (const HardCase& hc : hard_cases(bits, 60)) cases.push_back(hc);
    for (const HardCase& hc : cases) {
      const auto scores = score_synthetic(hc.config, configs);
      for (std::size_t i = 0; i < chains.size(); ++i) {
        const TruthScore& s = scores[i];
        std::printf("| %s | %d | %s | %llu | %llu | %llu | %.2f | %.4f | %.3f |\n", hc.name.c_str(), bits, chains[i].name,
                    static_cast<unsigned long long>(s.occluded_cells), static_cast<unsigned long long>(s.false_first),
                    static_cast<unsigned long long>(s.false_beyond), s.occluded_false_percent(), s.rms(), s.detection_percent());
        EXPECT_GT(s.expected, 0u);
      }
    }
  }
}

TEST(ExtractionEval, RealImagesTable) {
  const auto chains = compared_chains();
  std::printf("\n| image | chain | reference columns | detected | median px | >3 px %% of both | extra %% of columns | missed %% of reference |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const std::string& name : real_image_names()) {
    const RealImage img = load_real_image(name);
    const auto ref = steger_reference(img);
    for (const auto& c : chains) {
      const auto s = score_against_reference(extract_real(img, c.chain), ref);
      std::printf("| %s | %s | %d/%d | %d | %.3f | %.2f | %.2f | %.2f |\n", name.c_str(), c.name, s.reference, s.columns, s.detected, s.median,
                  s.over_3px_percent(), s.extra_percent(), s.missed_percent());
      EXPECT_GT(s.columns, 0);
    }
  }
}

