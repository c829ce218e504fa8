#pragma once
// Per-column stripe extraction, the heart of stripeline: given one column of
// one frame (H pixels, top to bottom), find the stripe.
//
// These are host+device inline templates: the CPU stage loops over columns
// calling them, the CUDA kernels call them from one thread per column. The
// arithmetic is integer only, so both backends produce the same bits by
// construction, not by luck.
//
// `Column` is any callable `uint32_t (int y)` returning the pixel at row y of
// the frame (0 <= y < height), after the blur; `Raw` the same for the
// unblurred pixel (adaptive's clipped-core test and centre read it). `Emit` is a callable
// `void (int slot, int32_t position, uint32_t intensity, uint32_t width, uint32_t quality)`;
// quality is the point's contrast in pixel units (see each method).
// Every function returns the number of peaks *found* (which may exceed the
// slots it emitted into: the caller records it so overflow is visible).
//
// The legacy methods (cog, max, window, local-max, all) use one absolute
// threshold; `adaptive` (kernels/adaptive_extract.h) estimates the background
// of each column locally and offers several sub-pixel estimators.
#include <cstdint>

#include "core/fixed_point.h"

namespace stripeline::kernels {

enum class ColumnMethod : std::int32_t { Cog = 0, Max = 1, Window = 2, LocalMax = 3, All = 4, Adaptive = 5 };
enum class SpotSelection : std::int32_t { Strongest = 0, Top = 1, Bottom = 2, All = 3 };
// adaptive: how the sub-pixel centre of a detected stripe is computed.
enum class SubpixelEstimator : std::int32_t { Centroid = 0, Gauss = 1, Parabola = 2, Steger = 3 };

inline constexpr int kMaxDerivativeRadius = 7;  // adaptive/steger: derivative-of-Gaussian taps j = -7..7

// Plain data, copied by value into kernels.
struct ColumnParams {
  ColumnMethod method = ColumnMethod::Cog;
  std::uint32_t threshold = 40;   // a pixel belongs to the stripe when value >= threshold
  std::uint32_t min_peak = 50;    // cog: the brightest pixel must reach this
  std::int32_t min_width = 1;     // cog: run of above-threshold pixels at least this long
  std::int32_t max_width = 0;     // cog: ... and at most this long (0 = no limit)
  std::int32_t window = 10;       // window: pixels scanned from the first above-threshold one
  std::int32_t neighbours = 3;    // local-max: must beat this many pixels above and below
  SpotSelection selection = SpotSelection::Strongest;  // local-max, adaptive: which peaks to report
  std::int32_t slots = 1;         // output slots per column

  // adaptive (filled by validate_chain from the user's AdaptiveConfig; pixel units)
  SubpixelEstimator estimator = SubpixelEstimator::Centroid;
  std::uint32_t min_contrast = 10;    // a stripe's prominence above its surroundings at least this
  std::uint32_t level_q8 = 128;       // the stripe's run: pixels above background + level * contrast (1/256 units)
  std::uint32_t centroid_level_q8 = 32;  // centroid: weights u - centroid_level * contrast, between the background anchors
  std::uint32_t noise_q4 = 64;        // contrast >= noise_q4/16 x mean |row-to-row step| of the column outside the stripe (0: off)
  std::int32_t stripe_max_width = 16; // the run at `level` at most this many pixels; also the background search radius
  std::uint32_t saturation = 255;     // a peak at this value is a saturated (flat) top
  std::int32_t dog_radius = 0;        // steger: derivative taps dog[1..radius] (dog[-j] = -dog[j], dog[0] = 0)
  std::int32_t dog[kMaxDerivativeRadius + 1] = {};
  bool operator==(const ColumnParams&) const = default;
};

// Signed integer division rounded half away from zero (d > 0).
STRIPELINE_HD std::int64_t round_div(std::int64_t n, std::int64_t d) {
  return n >= 0 ? (2 * n + d) / (2 * d) : -((-2 * n + d) / (2 * d));
}

// Extent of the contiguous run of pixels >= threshold that contains row y.
template <class Column>
STRIPELINE_HD void run_around(const Column& col, int height, int y, std::uint32_t threshold, int& first, int& last) {
  first = y;
  while (first > 0 && col(first - 1) >= threshold) --first;
  last = y;
  while (last < height - 1 && col(last + 1) >= threshold) ++last;
}

// Brightest pixel of the column; the topmost one on ties.
template <class Column>
STRIPELINE_HD int brightest_row(const Column& col, int height, std::uint32_t& value) {
  int best = 0;
  value = col(0);
  for (int y = 1; y < height; ++y) {
    const std::uint32_t v = col(y);
    if (v > value) {
      value = v;
      best = y;
    }
  }
  return best;
}

// cog: brightest pixel, then the centre of gravity of the above-threshold run
// around it, weights (value - threshold + 1). Result rounded to 1/256 px.
template <class Column, class Emit>
STRIPELINE_HD int column_cog(const Column& col, int height, const ColumnParams& p, const Emit& emit) {
  std::uint32_t peak = 0;
  const int y = brightest_row(col, height, peak);
  if (peak < p.threshold || peak < p.min_peak) return 0;
  int first = 0, last = 0;
  run_around(col, height, y, p.threshold, first, last);
  const int width = last - first + 1;
  if (width < p.min_width || (p.max_width > 0 && width > p.max_width)) return 0;
  std::uint64_t sum_w = 0, sum_wy = 0;
  for (int r = first; r <= last; ++r) {
    const std::uint64_t w = col(r) - p.threshold + 1;
    sum_w += w;
    sum_wy += w * static_cast<std::uint64_t>(r - first);
  }
  const std::int64_t offset = round_div(static_cast<std::int64_t>(sum_wy) * kPositionOne, static_cast<std::int64_t>(sum_w));
  emit(0, static_cast<std::int32_t>(first * kPositionOne + offset), peak, static_cast<std::uint32_t>(width), peak - p.threshold);
  return 1;
}

// max: the brightest pixel (seeds' algorithm 1), whole-pixel position.
template <class Column, class Emit>
STRIPELINE_HD int column_max(const Column& col, int height, const ColumnParams& p, const Emit& emit) {
  std::uint32_t peak = 0;
  const int y = brightest_row(col, height, peak);
  if (peak < p.threshold) return 0;
  int first = 0, last = 0;
  run_around(col, height, y, p.threshold, first, last);
  emit(0, y * kPositionOne, peak, static_cast<std::uint32_t>(last - first + 1), peak - p.threshold);
  return 1;
}

// window: from the first pixel >= threshold (top down), the brightest of the
// next `window` pixels (seeds' algorithm 3), whole-pixel position.
template <class Column, class Emit>
STRIPELINE_HD int column_window(const Column& col, int height, const ColumnParams& p, const Emit& emit) {
  int start = 0;
  while (start < height && col(start) < p.threshold) ++start;
  if (start == height) return 0;
  const int end = start + p.window < height ? start + p.window : height;
  int best = start;
  std::uint32_t peak = col(start);
  for (int y = start + 1; y < end; ++y) {
    const std::uint32_t v = col(y);
    if (v > peak) {
      peak = v;
      best = y;
    }
  }
  int first = 0, last = 0;
  run_around(col, height, best, p.threshold, first, last);
  emit(0, best * kPositionOne, peak, static_cast<std::uint32_t>(last - first + 1), peak - p.threshold);
  return 1;
}

// Is row y a local maximum: >= threshold, strictly brighter than the
// `neighbours` pixels above it and at least as bright as those below it (so a
// plateau yields exactly its top pixel). Rows outside the frame do not count.
template <class Column>
STRIPELINE_HD bool is_local_max(const Column& col, int height, int y, std::uint32_t v, const ColumnParams& p) {
  if (v < p.threshold) return false;
  for (int k = 1; k <= p.neighbours; ++k) {
    if (y - k >= 0 && col(y - k) >= v) return false;
    if (y + k < height && col(y + k) > v) return false;
  }
  return true;
}

// Sub-pixel refinement of a local maximum by a parabola through (y-1, a),
// (y, b), (y+1, c): vertex at y + (a - c) / (2 (a - 2b + c)) = y - (a - c) / (2 curvature).
// A flat top (a saturated stripe) is located at the centre of its plateau.
template <class Column>
STRIPELINE_HD std::int32_t parabolic_position(const Column& col, int height, int y, std::uint32_t v) {
  int plateau_end = y;
  while (plateau_end + 1 < height && col(plateau_end + 1) == v) ++plateau_end;
  if (plateau_end > y) return (y + plateau_end) * (kPositionOne / 2);
  if (y == 0 || y == height - 1) return y * kPositionOne;
  const std::int64_t a = col(y - 1), b = v, c = col(y + 1);
  const std::int64_t curvature = 2 * b - a - c;  // > 0 for a strict maximum
  if (curvature <= 0) return y * kPositionOne;
  return static_cast<std::int32_t>(y * kPositionOne + round_div((c - a) * (kPositionOne / 2), curvature));
}

// local-max: pixels brighter than their neighbours (seeds' algorithm 4);
// several per column, reported by spot selection, parabolic sub-pixel position.
template <class Column, class Emit>
STRIPELINE_HD int column_local_max(const Column& col, int height, const ColumnParams& p, const Emit& emit) {
  int found = 0;
  int chosen = -1;
  std::uint32_t chosen_value = 0;
  for (int y = 0; y < height; ++y) {
    const std::uint32_t v = col(y);
    if (!is_local_max(col, height, y, v, p)) continue;
    ++found;
    switch (p.selection) {
      case SpotSelection::All:
        if (found <= p.slots) {
          int first = 0, last = 0;
          run_around(col, height, y, p.threshold, first, last);
          emit(found - 1, parabolic_position(col, height, y, v), v, static_cast<std::uint32_t>(last - first + 1), v - p.threshold);
        }
        break;
      case SpotSelection::Strongest:
        if (chosen < 0 || v > chosen_value) chosen = y, chosen_value = v;
        break;
      case SpotSelection::Top:
        if (chosen < 0) chosen = y, chosen_value = v;
        break;
      case SpotSelection::Bottom:
        chosen = y, chosen_value = v;
        break;
    }
  }
  if (p.selection == SpotSelection::All) return found;
  if (chosen < 0) return 0;
  int first = 0, last = 0;
  run_around(col, height, chosen, p.threshold, first, last);
  emit(0, parabolic_position(col, height, chosen, chosen_value), chosen_value, static_cast<std::uint32_t>(last - first + 1),
       chosen_value - p.threshold);
  return 1;
}

// all: every pixel >= threshold is a point (seeds' algorithm 2), top down.
template <class Column, class Emit>
STRIPELINE_HD int column_all(const Column& col, int height, const ColumnParams& p, const Emit& emit) {
  int found = 0;
  for (int y = 0; y < height; ++y) {
    const std::uint32_t v = col(y);
    if (v < p.threshold) continue;
    if (found < p.slots) emit(found, y * kPositionOne, v, 1u, v - p.threshold);
    ++found;
  }
  return found;
}

}  // namespace stripeline::kernels

#include "kernels/adaptive_extract.h"

namespace stripeline::kernels {

template <class Column, class Raw, class Emit>
STRIPELINE_HD int extract_column(const Column& col, const Raw& raw, int height, const ColumnParams& p, const Emit& emit) {
  switch (p.method) {
    case ColumnMethod::Cog: return column_cog(col, height, p, emit);
    case ColumnMethod::Max: return column_max(col, height, p, emit);
    case ColumnMethod::Window: return column_window(col, height, p, emit);
    case ColumnMethod::LocalMax: return column_local_max(col, height, p, emit);
    case ColumnMethod::All: return column_all(col, height, p, emit);
    case ColumnMethod::Adaptive: return column_adaptive(col, raw, height, p, emit);
  }
  return 0;
}

// No blur: the column is its own raw data.
template <class Column, class Emit>
STRIPELINE_HD int extract_column(const Column& col, int height, const ColumnParams& p, const Emit& emit) {
  return extract_column(col, col, height, p, emit);
}

}  // namespace stripeline::kernels
