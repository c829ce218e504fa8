#pragma once
// The extraction evaluation shared by the accuracy tests and the table
// (tests/test_extraction_eval.cpp): the synthetic scanner's hard cases scored
// against its truth, and the real photographs of tests/data/real scored
// against the Steger reference (steger_reference.h).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "acquisition/synthetic_scanner.h"
#include "stages/chain.h"
#include "steger_reference.h"

namespace stripeline::test {

// ---------------------------------------------------------------------------
// Synthetic hard cases

struct HardCase {
  std::string name;
  SyntheticConfig config;
};

// The hard cases at 2048 x 52, `frames` frames, in the given depth (8, 12 or
// 16 bits): default, harder (speckle, beam width, reflections, occlusions),
// ambient, texture, saturated + glow, second stripe, dim segments, and all
// of them together.
std::vector<HardCase> hard_cases(int bits, std::uint64_t frames);

// The targets every synthetic hard case meets with the default chain, at
// every depth (docs/extraction.md): RMS over the inliers, detection, points
// beyond 1 px, false detections in occluded columns.
struct TruthTargets {
  double rms_px, detection_percent, outlier_percent, false_percent;
};
inline constexpr TruthTargets kTruthTargets{0.06, 99.5, 0.05, 1.0};

// Scored against the truth, columns within 2 of an occlusion edge or step
// left out (the blur mixes their neighbours): detection over the columns
// with a stripe, RMS over the points within 1 px of the truth (the others are
// counted as outliers), false detections over the occluded columns.
struct TruthScore {
  std::uint64_t expected = 0, detected = 0, outliers = 0, occluded = 0, false_detections = 0, edge_columns = 0;
  // Every occluded (frame, column) cell, edges included, and the detections
  // there: in an occlusion's first column (next to a lit one) and beyond it.
  std::uint64_t occluded_cells = 0, false_first = 0, false_beyond = 0;
  double occluded_false_percent() const;  // (false_first + false_beyond) / occluded_cells
  double sum_sq = 0.0, max_inlier = 0.0, bias_sum = 0.0;
  double rms() const;
  double detection_percent() const;
  double outlier_percent() const;
  double false_percent() const;
  double bias() const;
};

// Occluded runs of 8, 16, 24 and 40 columns (the default scene otherwise,
// and the "harder" one with 24), with truth: bleed across columns shows as
// detections in an occlusion's first column.
std::vector<HardCase> occlusion_cases(int bits, std::uint64_t frames);

// A saturated core with a one-sided glow: peak 600 (2.4 x the format's
// maximum: a clipped plateau of ~3 rows), glow 0.1 of the beam's power
// decaying over 6 px, full below the stripe and 35 % above it (twice the
// hard case's glow, a longer tail). The truth is the beam's centre.
HardCase saturated_glow_case(int bits, std::uint64_t frames);

// Renders the case, runs the CPU chain on it (batches of 30 frames), scores it.
TruthScore score_synthetic(const SyntheticConfig& scan, const ChainConfig& chain);
// The same for several chains, rendering once. `frames`: where the frames
// come from (a replay of the rendered recording), else the scanner itself.
// Chains with pixel_bits 0 take the significant bits a run would decide from
// that source (acquisition/pixel_bits.h); `used` gets them.
std::vector<TruthScore> score_synthetic(const SyntheticConfig& scan, const std::vector<ChainConfig>& chains, FrameSource* frames = nullptr,
                                        SignificantBits* used = nullptr);
// The case rendered into a recording at `path` (.tif or .png; 16-bit words
// with sc.bits significant bits, tagged or not), replayed from the file as
// `stripeline replay` does with no options; `used` gets the bits decided.
TruthScore score_replayed(const SyntheticConfig& scan, const ChainConfig& chain, const std::filesystem::path& path, bool bits_tags,
                          SignificantBits& used);

// ---------------------------------------------------------------------------
// Real photographs

struct RealImage {
  std::string name;             // file name in tests/data/real
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  // grey, row-major
};

std::vector<std::string> real_image_names();
RealImage load_real_image(const std::string& name);

// Primary position per column (rows, NaN = none) of the CPU chain on the
// image as one frame; `bits16` runs it as 16-bit pixels (value x 257).
std::vector<double> extract_real(const RealImage& image, const ChainConfig& chain, bool bits16 = false);
// Every peak per column (rows), for selection "all".
std::vector<std::vector<double>> extract_all_real(const RealImage& image, const ChainConfig& chain);
std::vector<double> steger_reference(const RealImage& image);

// ---------------------------------------------------------------------------
// Chains compared

ChainConfig old_default_chain();  // cog, threshold 40, min_peak 50, blur 5
ChainConfig adaptive_chain(SubpixelEstimator estimator);  // adaptive with that estimator, other settings default
ChainConfig neighbour_checked_chain();  // the default with the neighbour check on: 1 column each side, 2 rows per column

}  // namespace stripeline::test
