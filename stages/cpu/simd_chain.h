#pragma once
// The CPU backend's default chain, SIMD across columns (Google Highway, one
// binary for every x86-64: each function runs the widest instruction set the
// CPU has, chosen at run time: SSSE3, SSE4, AVX2, AVX-512, or Highway's
// portable emulation). Columns are the lanes: a tile's rows are walked top to
// bottom, each column's state kept in a vector lane.
//
// Same integer arithmetic, same bits as the scalar loops they stand beside
// (stages/cpu/cpu_kernels.h: blur_tile; kernels/adaptive_extract.h:
// adaptive::summarise and adaptive::is_candidate), which stay the oracle
// (tests/test_simd_chain.cpp) and run the columns of a tile that do not fill
// a vector. Thread-safe: no state beyond the arguments.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/column_extract.h"
#include "kernels/gaussian.h"

namespace stripeline::cpu::simd {

// cpu::blur_tile, SIMD: blur columns [x0, x1) of one frame (width x height,
// row stride `stride` pixels) into `out` (height rows of x1-x0 pixels); `mid`
// is scratch of height*(x1-x0) values (8-bit pixels use half its bytes). With
// taps.size == 0 it copies.
void blur_tile(const std::uint8_t* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1, const kernels::GaussianTaps& taps,
               std::uint32_t* mid, std::uint8_t* out);
void blur_tile(const std::uint16_t* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1, const kernels::GaussianTaps& taps,
               std::uint32_t* mid, std::uint16_t* out);

// Words of candidate bits per column: row y is bit y % 32 of word y / 32.
inline int candidate_words(int height) { return (height + 31) / 32; }

// The adaptive method's per-column pass over `tw` columns of `height` rows
// (row stride `stride` pixels; 2 <= height <= kMaxSummaryHeight): per column
// c, adaptive::summarise into lowest[c], tv[c], brightest[c], top[c], and the
// rows passing adaptive::is_candidate (with that lowest) as bits,
// candidates[(y / 32) * tw + c] bit y % 32.
struct TileSummary {
  std::uint32_t* lowest;
  std::uint32_t* tv;  // sum |v[y+1] - v[y]| < 2^32 for height <= kMaxSummaryHeight
  std::int32_t* brightest;
  std::uint32_t* top;
  std::uint32_t* candidates;  // candidate_words(height) * tw words
  // adaptive::evaluate of each column's brightest row (evaluate_brightest),
  // or null: the scan then evaluates it itself.
  kernels::adaptive::Stripe* stripes = nullptr;
  // With stripes: adaptive::centre of each column's brightest-row stripe,
  // where that is valid (evaluate_brightest), or null: the scan computes it.
  std::int32_t* centres = nullptr;
};
inline constexpr int kMaxSummaryHeight = 32768;  // 16-bit lanes' total variation fits 31 bits
void summarise_tile(const std::uint8_t* pixels, std::ptrdiff_t stride, int tw, int height, const kernels::ColumnParams& p,
                    const TileSummary& out);
void summarise_tile(const std::uint16_t* pixels, std::ptrdiff_t stride, int tw, int height, const kernels::ColumnParams& p,
                    const TileSummary& out);

// After summarise_tile of the same pixels: out.stripes[c] =
// adaptive::evaluate of column c's brightest row, for the columns where
// brightest_evaluated() (the others' stripes are unspecified). `raw` (row stride
// `raw_stride`) holds the columns' unblurred pixels. The walks out from the
// peaks run across columns, a row at a time; the rest is the scalar code's
// own pieces (adaptive::prominence_gate, anchor_end, line_and_gates) per column.
// With out.centres, also the centres of the valid ones: with the centroid
// estimator, the weights' extent and sums across columns (32-bit lanes where
// a column's rows are exact in them: the background line's product and w^2
// below 2^31, checked per column; 64-bit sums); the flat tops
// (adaptive::flat_top), the other estimators and the columns outside those
// bounds by adaptive::centre itself.
void evaluate_brightest(const std::uint8_t* pixels, std::ptrdiff_t stride, const std::uint8_t* raw, std::ptrdiff_t raw_stride, int tw, int height,
                        const kernels::ColumnParams& p, const TileSummary& out);
void evaluate_brightest(const std::uint16_t* pixels, std::ptrdiff_t stride, const std::uint16_t* raw, std::ptrdiff_t raw_stride, int tw,
                        int height, const kernels::ColumnParams& p, const TileSummary& out);

// Whether evaluate_brightest evaluated the column of this summary: its
// brightest row can be a stripe (top - lowest >= min_contrast and top >
// lowest; a candidate of kernels::column_adaptive_scan whenever it is one).
inline bool brightest_evaluated(const kernels::adaptive::ColumnSummary& s, const kernels::ColumnParams& p) {
  return s.top - s.lowest >= p.min_contrast && s.top > s.lowest;
}

// The first candidate row >= y of column c, or `height` (the `next` of
// kernels::column_adaptive_scan).
inline int next_candidate(const std::uint32_t* candidates, int tw, int c, int y, int height) {
  if (y >= height) return height;
  const int words = candidate_words(height);
  int w = y >> 5;
  std::uint32_t bits = candidates[static_cast<std::ptrdiff_t>(w) * tw + c] & (~0u << (y & 31));
  while (bits == 0) {
    if (++w >= words) return height;
    bits = candidates[static_cast<std::ptrdiff_t>(w) * tw + c];
  }
  return w * 32 + __builtin_ctz(bits);
}

// Whether row y is column c's only candidate.
inline bool only_candidate(const std::uint32_t* candidates, int tw, int c, int y, int height) {
  std::uint32_t others = 0;
  for (int w = 0; w < candidate_words(height); ++w) others |= candidates[static_cast<std::ptrdiff_t>(w) * tw + c] ^ (w == y >> 5 ? 1u << (y & 31) : 0u);
  return others == 0;
}

// The instruction set the functions above run now (e.g. "AVX3", "AVX2").
std::string target_name();

// For tests: the instruction sets this binary has code for that this CPU
// runs (Highway target bits), and forcing one of them (0: back to the best).
std::vector<std::int64_t> available_targets();
std::string target_name(std::int64_t target);
void force_target(std::int64_t target);

}  // namespace stripeline::cpu::simd
