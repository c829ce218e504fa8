#pragma once
// The `adaptive` extraction method: find the stripe of one column against a
// local background, whatever the light level, then locate its centre with a
// selectable sub-pixel estimator. Included by kernels/column_extract.h (use
// that header); host+device inline, integer arithmetic only, so the CPU loops
// and the CUDA kernels produce the same bits.
//
// Per column (values v[y] after the blur; the threshold stage does not apply):
//  1. Candidates: local maxima (v[y] > v[y-1] and v[y] >= v[y+1]; a plateau
//     gives its top pixel). A candidate that cannot beat what is already
//     known (an upper bound of its score from its value and the column
//     minimum) is skipped unevaluated.
//  2. Prominence: walking up and down from the candidate (at most
//     stripe_max_width rows, stopping at higher ground), the lowest pixel on
//     each side; prominence = value - the higher of the two. A bump on the
//     flank of a brighter peak has almost none; a stripe next to another
//     stripe keeps the depth of the valley between them.
//  3. Local background: an anchor on each side ~2.5 half-widths out (the
//     lowest pixel of the outer half of that walk), or a valley when the
//     profile rises again within 3 rows of its lowest pixel (another stripe,
//     or the ambient light climbing); the mean of the anchor pixel and the
//     next one out sets a straight background line under the stripe. A
//     valley is lifted by the neighbour's tail, so it is replaced by the
//     other side's level (flat) when it is deep (below level x contrast over
//     that level) and the other side's floor is level over 4 rows; on a slope
//     or hump of the ambient light the line through the valley is kept.
//     u = v - line, in 1/16 pixel units (Q4).
//  4. Gates: prominence >= min_contrast/2 (cheap early reject), contrast
//     (u at the peak) >= min_contrast; the run of pixels with
//     u >= level * contrast around the candidate at most stripe_max_width
//     rows, and a run wider than kWideRun (8) needs contrast >= min_contrast
//     x width / 8 (broad humps of texture or light are no stripe);
//     contrast >= noise_q4/16 x the mean |v[y+1] - v[y]| of the column
//     outside the stripe (the column's own noise and texture); the column's
//     own unblurred data holds the stripe: its brightest pixel of the run at
//     least contrast/2 over the background line (a blur across columns
//     carries a lit neighbour's stripe into an occluded column).
//  5. Selection `strongest`: the largest 2 x value + contrast (topmost on
//     ties): the laser adds to what the surface reflects, so the line is the
//     brightest stripe-shaped candidate; `top`, `bottom` and `all` (the most
//     prominent) as for local-max.
//  6. Centre, from u (never from pixels of another run):
//      clipped core (unblurred pixels of the run at the format's maximum),
//        saturated or flat top of the blurred data (peak >= saturation, or
//        >= 3 pixels equal to the peak): the middle of the two sub-pixel
//        crossings of peak - contrast/8 around the plateau's middle;
//      centroid: sum w * y / sum w, w = (u - centroid_level*C)^2 over the
//                pixels above that level around the run, inside the anchors
//                (squared: the core dominates, a one-sided glow tail little;
//                the level is level*C next to a valley or a background step);
//      gauss:    3-point Gaussian fit (integer log2) at the run's maximum;
//      parabola: 3-point parabola at the run's maximum;
//      steger:   zero crossing of the derivative-of-Gaussian response of u
//                (linear interpolation), the derivative falling across it.
// Emits position (1/256 px), intensity = peak pixel, width = run length,
// quality = contrast (peak minus background line, pixel units).
#include <cstdint>

#include "core/fixed_point.h"

namespace stripeline::kernels {

// adaptive with selection `all`: stripes kept per column at most (max_peaks).
inline constexpr int kMaxAdaptivePeaks = 16;

// floor-accurate log2(x) in Q16 (16 fractional bits) for x >= 1, by repeated
// squaring of the normalised mantissa: exact integer steps, no table, the
// same bits on host and device. Error below 2^-15.
STRIPELINE_HD std::int32_t log2_q16(std::uint32_t x) {
  int e = 0;
  while (e < 31 && (x >> (e + 1)) != 0) ++e;
  std::uint64_t m = e <= 30 ? static_cast<std::uint64_t>(x) << (30 - e) : static_cast<std::uint64_t>(x) >> (e - 30);  // [1,2) in Q30
  std::int32_t r = e << 16;
  for (int bit = 15; bit >= 0; --bit) {
    m = (m * m) >> 30;  // [1,4) in Q30; m*m < 2^62
    if (m >= (std::uint64_t{2} << 30)) {
      m >>= 1;
      r |= 1 << bit;
    }
  }
  return r;
}

namespace adaptive {

constexpr int kQ = 4;  // u is kept in 1/16 pixel units
constexpr int kWideRun = 8;  // runs wider than this need proportionally more contrast

// One stripe candidate, evaluated.
struct Stripe {
  int peak = 0;                 // row of the local maximum (first row of a plateau)
  std::uint32_t value = 0;      // v[peak]
  std::uint32_t prominence = 0; // value - max(side minima)
  int anchor_lo = 0, anchor_hi = 0;     // background anchors (rows), anchor_lo <= peak <= anchor_hi
  std::int32_t bg_lo = 0, bg_hi = 0;    // background at the anchors, Q4
  std::int64_t slope_q12 = 0;           // background slope, Q4 per row, 12 more fractional bits
  std::int32_t contrast = 0;    // u at the peak, Q4
  bool valley = false;          // a background anchor is a valley next to another stripe
  int first = 0, last = 0;      // run at level
  bool valid = false;
};

// Background line at row y, Q4: bg_lo + slope * (y - anchor_lo), rounded.
// (The slope is divided once per candidate, not once per pixel.)
STRIPELINE_HD std::int32_t background_at(const Stripe& s, int y) {
  return s.bg_lo + static_cast<std::int32_t>((s.slope_q12 * (y - s.anchor_lo) + 2048) >> 12);
}

template <class Column>
STRIPELINE_HD std::int32_t u_at(const Column& col, int height, const Stripe& s, int y) {
  const int yc = y < 0 ? 0 : (y >= height ? height - 1 : y);
  return static_cast<std::int32_t>(col(yc) << kQ) - background_at(s, yc);
}

// Walk from `peak` in direction `dir` (+1 down, -1 up) at most `radius`
// rows, stopping at a pixel higher than `value`: the lowest pixel met
// (nearest on ties) and whether any pixel was visited.
template <class Column>
STRIPELINE_HD bool side_minimum(const Column& col, int height, int peak, std::uint32_t value, int dir, int radius, std::uint32_t& minimum,
                                int& at) {
  minimum = value;
  at = peak;
  bool any = false;
  for (int k = 1; k <= radius; ++k) {
    const int y = peak + dir * k;
    if (y < 0 || y >= height) break;
    const std::uint32_t v = col(y);
    if (v > value) break;
    any = true;
    if (v < minimum) {
      minimum = v;
      at = y;
    }
  }
  return any;
}

// anchor's end, from its walk's results (the lowest pixel's row, the outer
// half's lowest pixel's row, the last row walked, whether it met a valley).
template <class Column>
STRIPELINE_HD bool anchor_end(const Column& col, int height, int peak, int dir, std::uint32_t rise, bool valley, int lowest_at, int outer_at,
                              int at, int& at_row, std::int32_t& background) {
  at = valley ? lowest_at : (outer_at != peak ? outer_at : at);
  at_row = at;
  const int out = at + dir;
  if (!valley && out >= 0 && out < height && col(out) <= col(at) + rise)
    background = static_cast<std::int32_t>(((col(at) + col(out)) << kQ) / 2);
  else
    background = static_cast<std::int32_t>(col(at) << kQ);
  return valley;
}

// The anchor's search distance for a half-width of `rows` rows (peak
// included): 2.5 half-widths.
STRIPELINE_HD int anchor_distance(int rows) { return (rows * 5 + 1) / 2; }

// The background anchor on one side: `distance` rows out from the peak (2.5
// half-widths: ~3 sigma for a Gaussian stripe), or the frame's edge; when the
// profile rises by more than `rise` within 3 rows of the lowest pixel so far
// (another stripe, not a slope of the ambient light), that lowest pixel (a
// valley). Returns the anchor row and its background (Q4): the mean of the
// anchor pixel and its outer neighbour when that one is not higher by more
// than `rise`, else the anchor pixel alone; and whether it is a valley
// between stripes (lifted by both tails).
template <class Column>
STRIPELINE_HD void anchor_walk(const Column& col, int height, int peak, int dir, int distance, std::uint32_t rise, bool& valley, int& lowest_at,
                               int& outer_at, int& at) {
  std::uint32_t lowest = col(peak), outer_lowest = col(peak);
  lowest_at = outer_at = at = peak;
  valley = false;
  for (int k = 1; k <= distance; ++k) {
    const int y = peak + dir * k;
    if (y < 0 || y >= height) break;
    const std::uint32_t v = col(y);
    if (v < lowest) {
      lowest = v;
      lowest_at = y;
    }
    if (2 * k >= distance && (v < outer_lowest || outer_at == peak)) {
      outer_lowest = v;
      outer_at = y;
    }
    if (v > lowest + rise && (y - lowest_at) * dir <= 3) {
      valley = true;
      break;
    }
    at = y;
  }
}

// The loops of evaluate() and centre(), said once: ScalarLoops walks each row
// by row (the oracle: the CPU, the per-thread kernels); the warp chain passes
// a policy whose loops a warp takes a step at a time
// (kernels/cuda/warp_loops.cuh), with the same results.
struct ScalarLoops {
  // From `from` in direction `dir`, at most `steps` rows while keep(row): the
  // last row kept (`from` when none).
  template <class Keep>
  STRIPELINE_HD int extend(int from, int dir, int steps, const Keep& keep) const {
    int k = 0;
    while (k < steps && keep(from + dir * (k + 1))) ++k;
    return from + dir * k;
  }
  template <class Column>
  STRIPELINE_HD bool side_minimum(const Column& col, int height, int peak, std::uint32_t value, int dir, int radius, std::uint32_t& minimum,
                                  int& at) const {
    return adaptive::side_minimum(col, height, peak, value, dir, radius, minimum, at);
  }
  template <class Column>
  STRIPELINE_HD void anchor_walk(const Column& col, int height, int peak, int dir, int distance, std::uint32_t rise, bool& valley,
                                 int& lowest_at, int& outer_at, int& at) const {
    adaptive::anchor_walk(col, height, peak, dir, distance, rise, valley, lowest_at, outer_at, at);
  }
  // sum |v[y+1] - v[y]| over [lo, hi).
  template <class Column>
  STRIPELINE_HD std::uint64_t abs_steps(const Column& col, int lo, int hi) const {
    std::uint64_t sum = 0;
    for (int y = lo; y < hi; ++y) {
      const std::uint32_t a = col(y), b = col(y + 1);
      sum += a > b ? a - b : b - a;
    }
    return sum;
  }
  // The largest unblurred excess over the background line in [first, last], at least 0.
  template <class Raw>
  STRIPELINE_HD std::int32_t raw_excess(const Raw& raw, const Stripe& s, int first, int last) const {
    std::int32_t best = 0;
    for (int y = first; y <= last; ++y) {
      const std::int32_t u = static_cast<std::int32_t>(raw(y) << kQ) - background_at(s, y);
      if (u > best) best = u;
    }
    return best;
  }
  // The row of the largest u in [first, last] (the topmost on ties) and that u.
  template <class Column>
  STRIPELINE_HD int u_argmax(const Column& col, int height, const Stripe& s, int first, int last, std::int32_t& um) const {
    int ym = first;
    um = u_at(col, height, s, ym);
    for (int y = first + 1; y <= last; ++y) {
      const std::int32_t u = u_at(col, height, s, y);
      if (u > um) um = u, ym = y;
    }
    return ym;
  }
  // The centroid's sums over [lo, hi]: w = (u - level)^2 where u > level; sw = sum w, swy = sum w (y - lo).
  template <class Column>
  STRIPELINE_HD void centroid_sums(const Column& col, int height, const Stripe& s, int lo, int hi, std::int32_t level, std::int64_t& sw,
                                   std::int64_t& swy) const {
    sw = swy = 0;
    for (int y = lo; y <= hi; ++y) {
      std::int64_t w = u_at(col, height, s, y) - level;
      if (w <= 0) continue;
      w *= w;  // squared: the core counts, a one-sided tail (glow) little; w^2 < 2^41
      sw += w;
      swy += w * (y - lo);
    }
  }
};

template <class Column, class Loops = ScalarLoops>
STRIPELINE_HD bool anchor(const Column& col, int height, int peak, int dir, int distance, std::uint32_t rise, int& at_row,
                          std::int32_t& background, const Loops& loops = {}) {
  bool valley = false;
  int lowest_at = peak, outer_at = peak, at = peak;
  loops.anchor_walk(col, height, peak, dir, distance, rise, valley, lowest_at, outer_at, at);
  return anchor_end(col, height, peak, dir, rise, valley, lowest_at, outer_at, at, at_row, background);
}

// Step 2's gate from the side minima: both sides walked, the prominence
// (over the higher side's minimum `base`) at least min_contrast/2 and more
// than nothing.
STRIPELINE_HD bool prominence_gate(Stripe& s, bool has_lo, bool has_hi, std::uint32_t min_lo, std::uint32_t min_hi, const ColumnParams& p,
                                   std::uint32_t& base) {
  // Both sides are needed: a slope running into the frame's edge is no stripe.
  if (!has_lo || !has_hi) return false;
  base = min_lo > min_hi ? min_lo : min_hi;
  s.prominence = s.value - base;
  // Half the floor here: on a step of the background the prominence (over
  // the higher side) understates the stripe; the contrast gate below (peak
  // over the background line) decides.
  return !(s.prominence * 2 < p.min_contrast || s.prominence == 0);
}

// The level the half-width is measured at, and the rise that marks a valley.
STRIPELINE_HD std::uint32_t half_level(std::uint32_t base, std::uint32_t prominence) { return base + prominence / 2; }
STRIPELINE_HD std::uint32_t valley_rise(std::uint32_t prominence) { return prominence / 4; }

// Steps 3 (from the anchors on) and 4: the background line, the contrast,
// the run and the gates; sets s.valid. `inside()` returns sum |v[y+1] -
// v[y]| over [anchor_lo, anchor_hi) (asked only with the noise gate on).
template <class Column, class Raw, class Inside, class Loops = ScalarLoops>
STRIPELINE_HD void line_and_gates(const Column& col, const Raw& raw, int height, Stripe& s, bool valley_lo, bool valley_hi, const ColumnParams& p,
                                  std::uint64_t column_tv, const Inside& inside, const Loops& loops = {}) {
  const int peak = s.peak;
  if (s.anchor_lo == peak || s.anchor_hi == peak) return;
  // A valley next to another stripe is lifted by its tail: trust the other
  // side's level (flat), or the lower valley when both are.
  // Only where the valley is deep enough for that (below `level` of the
  // contrast over the flat level): a valley that high is a floor raised by
  // the ambient light (a hump, a slope), and the line through it is kept.
  if (valley_lo || valley_hi) {
    const std::int32_t flat = valley_lo && valley_hi ? (s.bg_lo < s.bg_hi ? s.bg_lo : s.bg_hi) : (valley_lo ? s.bg_hi : s.bg_lo);
    const std::int64_t top = (static_cast<std::int64_t>(s.value) << kQ) - flat;
    auto deep = [&](int row) { return ((static_cast<std::int64_t>(col(row)) << kQ) - flat) * 256 < top * p.level_q8; };
    // ... and where the other side's floor is level (changes by less than
    // prominence/32 over the 4 rows beyond its anchor): on a slope or a hump
    // of the ambient light the valley is the better estimate.
    auto level_beyond = [&](int row, int dir) {
      const int out = row + dir * 4;
      if (out < 0 || out >= height) return true;
      const std::int64_t d = static_cast<std::int64_t>(col(out)) - col(row);
      return (d < 0 ? -d : d) * 32 < static_cast<std::int64_t>(s.prominence);
    };
    if (valley_lo && deep(s.anchor_lo) && (valley_hi || level_beyond(s.anchor_hi, +1))) s.bg_lo = flat;
    if (valley_hi && deep(s.anchor_hi) && (valley_lo || level_beyond(s.anchor_lo, -1))) s.bg_hi = flat;
  }
  s.valley = valley_lo || valley_hi;
  s.slope_q12 = round_div((static_cast<std::int64_t>(s.bg_hi) - s.bg_lo) * 4096, s.anchor_hi - s.anchor_lo);

  s.contrast = u_at(col, height, s, peak);
  if (s.contrast <= 0) return;
  if (s.contrast < static_cast<std::int32_t>(p.min_contrast << kQ)) return;  // so quality >= min_contrast

  // The run at level around the peak, bounded.
  const std::int32_t level = static_cast<std::int32_t>((static_cast<std::int64_t>(s.contrast) * p.level_q8) >> 8);
  auto at_level = [&](int y) { return u_at(col, height, s, y) >= level; };
  const int up = peak < p.stripe_max_width ? peak : p.stripe_max_width, down = height - 1 - peak;
  s.first = loops.extend(peak, -1, up, at_level);
  s.last = loops.extend(peak, +1, down < p.stripe_max_width ? down : p.stripe_max_width, at_level);
  if (s.last - s.first + 1 > p.stripe_max_width) return;
  {
    // A run wider than kWideRun must be brighter in proportion: contrast >=
    // min_contrast x width / kWideRun (a broad low hump of texture or ambient
    // light is no stripe).
    const std::int64_t w = s.last - s.first + 1;
    if (w > kWideRun && static_cast<std::int64_t>(s.contrast) * kWideRun < (static_cast<std::int64_t>(p.min_contrast) << kQ) * w) return;
  }

  // Noise and texture of the column outside the stripe.
  if (p.noise_q4 > 0) {
    const std::uint64_t outside_tv = column_tv - inside();
    const std::int64_t outside_steps = static_cast<std::int64_t>(height - 1) - (s.anchor_hi - s.anchor_lo);
    if (outside_steps >= 4 && static_cast<std::uint64_t>(s.contrast) * static_cast<std::uint64_t>(outside_steps) <
                                  static_cast<std::uint64_t>(p.noise_q4) * outside_tv)
      return;  // contrast (Q4) < noise/16 x outside_tv/outside_steps, with both sides x16
  }
  // The column's own (unblurred) data must hold the stripe: its brightest
  // pixel of the run at least half the contrast over the background line. A
  // blur across columns carries a lit neighbour's stripe into a column
  // that has none (an occlusion's first column).
  if (2 * loops.raw_excess(raw, s, s.first, s.last) < s.contrast) return;
  s.valid = true;
}

// Evaluates the candidate at `peak`: prominence, background, run and gates.
// `column_tv` is sum |v[y+1] - v[y]| over the whole column.
template <class Column, class Raw, class Loops = ScalarLoops>
STRIPELINE_HD Stripe evaluate(const Column& col, const Raw& raw, int height, int peak, const ColumnParams& p, std::uint64_t column_tv,
                              const Loops& loops = {}) {
  Stripe s;
  s.peak = peak;
  s.value = col(peak);
  const int radius = p.stripe_max_width;
  std::uint32_t min_lo = 0, min_hi = 0;
  int at_lo = peak, at_hi = peak;
  const bool has_lo = loops.side_minimum(col, height, peak, s.value, -1, radius, min_lo, at_lo);
  const bool has_hi = loops.side_minimum(col, height, peak, s.value, +1, radius, min_hi, at_hi);
  std::uint32_t base = 0;
  if (!prominence_gate(s, has_lo, has_hi, min_lo, min_hi, p, base)) return s;

  // Background anchors 2.5 half-widths out, the half-width measured at half
  // the prominence on each side.
  const std::uint32_t half = half_level(base, s.prominence), rise = valley_rise(s.prominence);
  auto above_half = [&](int y) { return col(y) >= half; };
  const int down = height - 1 - peak;
  const int lo = loops.extend(peak, -1, peak < radius ? peak : radius, above_half);
  const int hi = loops.extend(peak, +1, down < radius ? down : radius, above_half);
  const bool valley_lo = anchor(col, height, peak, -1, anchor_distance(peak - lo + 1), rise, s.anchor_lo, s.bg_lo, loops);
  const bool valley_hi = anchor(col, height, peak, +1, anchor_distance(hi - peak + 1), rise, s.anchor_hi, s.bg_hi, loops);
  auto inside = [&]() { return loops.abs_steps(col, s.anchor_lo, s.anchor_hi); };
  line_and_gates(col, raw, height, s, valley_lo, valley_hi, p, column_tv, inside, loops);
  return s;
}

// Sub-pixel crossing of `level` between rows y (below level) and y - dir
// (at or above): position in 1/256 px.
template <class Column>
STRIPELINE_HD std::int32_t crossing(const Column& col, int height, const Stripe& s, int inside, int dir, std::int32_t level) {
  int y = inside;
  while (y + dir >= 0 && y + dir < height && u_at(col, height, s, y + dir) >= level) y += dir;
  const int out = y + dir;
  if (out < 0 || out >= height) return y * kPositionOne;
  const std::int32_t a = u_at(col, height, s, y), b = u_at(col, height, s, out);  // a >= level > b
  const std::int64_t frac = round_div(static_cast<std::int64_t>(a - level) * kPositionOne, a - b);
  return static_cast<std::int32_t>(y * kPositionOne + dir * frac);
}

// A clipped core: the longest stretch of unblurred pixels at the maximum
// that starts in [first, last] (the first on ties), rows a..b, at least
// kClippedRows long; a = -1 when none. (One or two clipped pixels are
// speckle on a stripe that barely reaches the maximum: its centroid is
// better there.)
constexpr int kClippedRows = 3;
template <class Raw>
STRIPELINE_HD void clipped_plateau(const Raw& raw, int height, int first, int last, std::uint32_t saturation, int& a, int& b) {
  int best = kClippedRows - 1;
  a = b = -1;
  for (int y = first; y <= last; ++y) {
    if (raw(y) < saturation) continue;
    int e = y;
    while (e + 1 < height && raw(e + 1) >= saturation) ++e;
    if (e - y + 1 > best) best = e - y + 1, a = y, b = e;
    y = e;
  }
}

template <class Column>
STRIPELINE_HD std::int32_t steger_derivative(const Column& col, int height, const Stripe& s, int y, const ColumnParams& p) {
  std::int64_t acc = 0;
  for (int j = 1; j <= p.dog_radius; ++j)
    acc += static_cast<std::int64_t>(p.dog[j]) * (u_at(col, height, s, y + j) - u_at(col, height, s, y - j));
  return static_cast<std::int32_t>(acc >> 12);
}

// Whether centre() takes its flat-top branch: a clipped core (clip_a >= 0,
// rows clip_a..clip_b), a saturated peak, or `equal` >= 3 rows at the peak's
// value from the peak down.
template <class Column, class Raw>
STRIPELINE_HD bool flat_top(const Column& col, const Raw& raw, int height, const Stripe& s, const ColumnParams& p, int& clip_a, int& clip_b,
                            int& equal) {
  clipped_plateau(raw, height, s.first, s.last, p.saturation, clip_a, clip_b);
  equal = 1;
  for (int y = s.peak + 1; y < height && col(y) == s.value; ++y) ++equal;
  return clip_a >= 0 || s.value >= p.saturation || equal >= 3;
}

// The centroid's weights start above this level (Q4): centroid_level x
// contrast, or level x contrast (the run's own edge) next to another stripe
// (a valley) or on a step of the background.
STRIPELINE_HD std::int32_t centroid_level(const Stripe& s, const ColumnParams& p) {
  const std::int32_t step = s.bg_hi > s.bg_lo ? s.bg_hi - s.bg_lo : s.bg_lo - s.bg_hi;
  const std::uint32_t q8 = s.valley || step * 8 > s.contrast ? p.level_q8 : p.centroid_level_q8;
  return static_cast<std::int32_t>((static_cast<std::int64_t>(s.contrast) * q8) >> 8);
}

// The centroid from its sums over rows lo..: sw = sum w > 0, swy = sum w x
// (y - lo); 1/256 px. swy < 2^61 (w^2 < 2^41, at most ~1300 rows): whole
// rows first, then the remainder in 1/256, so nothing overflows.
STRIPELINE_HD std::int32_t centroid_position(int lo, std::int64_t sw, std::int64_t swy) {
  const std::int64_t rows = swy / sw;
  return static_cast<std::int32_t>((lo + rows) * kPositionOne + round_div((swy - rows * sw) * kPositionOne, sw));
}

// The centre of an accepted stripe, 1/256 px.
template <class Column, class Raw, class Loops = ScalarLoops>
STRIPELINE_HD std::int32_t centre(const Column& col, const Raw& raw, int height, const Stripe& s, const ColumnParams& p, const Loops& loops = {}) {
  // A clipped core (unblurred pixels at the maximum; the blur rounds the
  // plateau off, so the blurred peak may no longer reach it), a saturated or
  // a flat top: the middle of its edges near the top, around the clipped
  // plateau's middle. Not the mass: a one-sided glow would pull it.
  int clip_a = -1, clip_b = -1, equal = 1;
  if (flat_top(col, raw, height, s, p, clip_a, clip_b, equal)) {
    const std::int32_t top = s.contrast - s.contrast / 8;
    const int mid = clip_a >= 0 ? (clip_a + clip_b) / 2 : s.peak + (equal - 1) / 2;
    std::int32_t level = top;
    if (u_at(col, height, s, mid) < level) level = u_at(col, height, s, mid);
    const std::int32_t lo = crossing(col, height, s, mid, -1, level), hi = crossing(col, height, s, mid, +1, level);
    return static_cast<std::int32_t>(round_div(static_cast<std::int64_t>(lo) + hi, 2));
  }

  // The run's maximum of u (topmost on ties): background removed, the
  // candidate's own row may not be the top any more.
  std::int32_t um = 0;
  const int ym = loops.u_argmax(col, height, s, s.first, s.last, um);

  switch (p.estimator) {
    case SubpixelEstimator::Centroid: {
      // Background-subtracted centre of gravity of the contiguous pixels
      // above centroid_level x contrast around the run, inside the anchors.
      const std::int32_t level = centroid_level(s, p);
      auto above = [&](int y) { return u_at(col, height, s, y) > level; };
      const int lo = loops.extend(s.first, -1, s.first - s.anchor_lo - 1, above);
      const int hi = loops.extend(s.last, +1, s.anchor_hi - 1 - s.last, above);
      std::int64_t sw = 0, swy = 0;
      loops.centroid_sums(col, height, s, lo, hi, level, sw, swy);
      if (sw <= 0) return ym * kPositionOne;
      return centroid_position(lo, sw, swy);
    }
    case SubpixelEstimator::Parabola:
    case SubpixelEstimator::Gauss: {
      if (ym == 0 || ym == height - 1) return ym * kPositionOne;
      std::int64_t a = u_at(col, height, s, ym - 1), b = um, c = u_at(col, height, s, ym + 1);
      if (p.estimator == SubpixelEstimator::Gauss) {
        a = log2_q16(static_cast<std::uint32_t>(a > 1 ? a : 1));
        b = log2_q16(static_cast<std::uint32_t>(b > 1 ? b : 1));
        c = log2_q16(static_cast<std::uint32_t>(c > 1 ? c : 1));
      }
      const std::int64_t curvature = 2 * b - a - c;
      if (curvature <= 0) return ym * kPositionOne;
      std::int64_t offset = round_div((c - a) * (kPositionOne / 2), curvature);
      if (offset > kPositionOne / 2) offset = kPositionOne / 2;
      if (offset < -kPositionOne / 2) offset = -kPositionOne / 2;
      return static_cast<std::int32_t>(ym * kPositionOne + offset);
    }
    case SubpixelEstimator::Steger: {
      // Zero crossing of the derivative next to ym, the derivative falling
      // across it (a ridge, not a valley); at most two rows away.
      std::int32_t d0 = steger_derivative(col, height, s, ym, p);
      if (d0 == 0) return ym * kPositionOne;
      const int dir = d0 > 0 ? 1 : -1;
      int y = ym;
      for (int step = 0; step < 2; ++step) {
        const int next = y + dir;
        if (next < s.first - 1 || next > s.last + 1) break;
        const std::int32_t d1 = steger_derivative(col, height, s, next, p);
        if ((d0 > 0) != (d1 > 0) || d1 == 0) {
          // Crossing between y and next: lower row k with derivative dk > 0 >= dk1.
          const int k = dir > 0 ? y : next;
          const std::int64_t dk = dir > 0 ? d0 : d1, dk1 = dir > 0 ? d1 : d0;
          if (dk - dk1 <= 0) break;  // derivative not falling: no ridge here
          return static_cast<std::int32_t>(k * kPositionOne + round_div(dk * kPositionOne, dk - dk1));
        }
        y = next;
        d0 = d1;
      }
      return ym * kPositionOne;
    }
  }
  return ym * kPositionOne;
}

// Selection `strongest`: among the stripes that pass the gates, the one with
// the largest 2 x peak value + contrast (pixel units). The laser adds its
// light to whatever the surface reflects, so the line is the brightest
// stripe-shaped candidate of the column; the contrast term prefers a line on
// a dark patch to a small bump on a bright one.
STRIPELINE_HD std::uint64_t score(const Stripe& s) {
  return 2 * static_cast<std::uint64_t>(s.value) + static_cast<std::uint64_t>(s.contrast >> kQ);
}
// Its upper bound for a candidate of value v, `bound` above the column's
// minimum (the background line never runs below the minimum, so the
// contrast is at most `bound`).
STRIPELINE_HD std::uint64_t score_bound(std::uint32_t v, std::uint32_t bound) {
  return 2 * static_cast<std::uint64_t>(v) + bound;
}

// The stripe's detection into `slot`, at `position` (its centre()).
template <class Emit>
STRIPELINE_HD void emit_stripe(const Stripe& s, std::int32_t position, int slot, const Emit& emit) {
  const std::int32_t q = (s.contrast + (1 << (kQ - 1))) >> kQ;
  emit(slot, position, s.value, static_cast<std::uint32_t>(s.last - s.first + 1), static_cast<std::uint32_t>(q > 65535 ? 65535 : q));
}

// What the scan needs of the whole column, from one pass: its lowest pixel,
// its total variation sum |v[y+1] - v[y]| and its brightest pixel (the
// topmost on ties, as brightest_row).
struct ColumnSummary {
  std::uint32_t lowest = 0;
  std::uint64_t tv = 0;
  int brightest = 0;
  std::uint32_t top = 0;
};

template <class Column>
STRIPELINE_HD ColumnSummary summarise(const Column& col, int height) {
  ColumnSummary c;
  c.lowest = c.top = col(0);
  std::uint32_t prev = c.lowest;
  for (int y = 1; y < height; ++y) {
    const std::uint32_t v = col(y);
    c.tv += v > prev ? v - prev : prev - v;
    if (v < c.lowest) c.lowest = v;
    if (v > c.top) c.top = v, c.brightest = y;
    prev = v;
  }
  return c;
}

// Step 1 and the first bound: row y is a local maximum (v[y] > v[y-1],
// v[y] >= v[y+1]; a plateau gives its top pixel) at least min_contrast (and
// more than nothing) over the column's lowest pixel.
template <class Column>
STRIPELINE_HD bool is_candidate(const Column& col, int height, int y, std::uint32_t lowest, const ColumnParams& p) {
  const std::uint32_t v = col(y);
  if (y > 0 && col(y - 1) >= v) return false;
  if (y + 1 < height && col(y + 1) > v) return false;
  const std::uint32_t bound = v - lowest;
  return bound >= p.min_contrast && bound != 0;
}

}  // namespace adaptive

// The scan of column_adaptive from the column's summary; `next(y)` returns
// the first row >= y that passes adaptive::is_candidate, or `height` when
// none does, `evaluate(y)` adaptive::evaluate of candidate row y and
// `centre(s)` adaptive::centre of an emitted stripe (a loop and calls here;
// the CPU's SIMD path reads the candidates, the brightest row's stripe and
// its centre from what it computed across columns, stages/cpu/simd_chain.h).
template <class Column, class Emit, class Next, class Evaluate, class Centre>
STRIPELINE_HD int column_adaptive_scan(const Column& col, int height, const ColumnParams& p, const Emit& emit,
                                       const adaptive::ColumnSummary& summary, const Next& next, const Evaluate& evaluate,
                                       const Centre& centre) {
  using adaptive::Stripe;
  const std::uint32_t lowest = summary.lowest;
  int found = 0;
  Stripe chosen;
  int brightest = -1;
  if (p.selection == SpotSelection::Strongest) {
    // The brightest pixel (topmost) is usually the stripe: evaluated first,
    // its score lets the scan skip most other candidates unevaluated.
    const std::uint32_t top = summary.top;
    brightest = summary.brightest;
    if (top - lowest >= p.min_contrast && top > lowest) chosen = evaluate(brightest);
  }
  int covered_until = -1;  // `all`, `bottom`: last row of the last accepted stripe's run
  // `all`: the most prominent p.slots stripes, kept in row order (the scan
  // meets them top to bottom), re-evaluated when emitted; a less prominent
  // stripe gives way (the lower one on ties), so speckle above a line cannot
  // take its slot.
  int kept_row[kMaxAdaptivePeaks];
  std::uint32_t kept_prominence[kMaxAdaptivePeaks];
  int kept = 0;
  for (int y = next(0); y < height; y = next(y + 1)) {
    const std::uint32_t v = col(y);
    // Upper bound of the contrast: skip what cannot win.
    const std::uint32_t bound = v - lowest;
    if (p.selection == SpotSelection::Strongest &&
        (y == brightest || (chosen.valid && (adaptive::score_bound(v, bound) < adaptive::score(chosen) ||
                                             (adaptive::score_bound(v, bound) == adaptive::score(chosen) && y > chosen.peak)))))
      continue;
    if (p.selection == SpotSelection::Top && chosen.valid) break;
    if (y <= covered_until) continue;
    // The prominence gate cannot pass (prominence <= v - lowest): an invalid
    // stripe changes nothing, so it need not be evaluated.
    if (bound == 0 || 2 * bound < p.min_contrast) continue;
    const Stripe s = evaluate(y);
    if (!s.valid) continue;
    switch (p.selection) {
      case SpotSelection::All: {
        ++found;
        covered_until = s.last;
        if (kept == p.slots) {
          int weakest = 0;  // the least prominent kept, the lowest on ties
          for (int k = 1; k < kept; ++k)
            if (kept_prominence[k] <= kept_prominence[weakest]) weakest = k;
          if (s.prominence <= kept_prominence[weakest]) break;
          for (int k = weakest; k + 1 < kept; ++k) {
            kept_row[k] = kept_row[k + 1];
            kept_prominence[k] = kept_prominence[k + 1];
          }
          --kept;
        }
        kept_row[kept] = y;
        kept_prominence[kept] = s.prominence;
        ++kept;
        break;
      }
      case SpotSelection::Strongest:
        if (!chosen.valid || adaptive::score(s) > adaptive::score(chosen) || (adaptive::score(s) == adaptive::score(chosen) && s.peak < chosen.peak))
          chosen = s;
        break;
      case SpotSelection::Top:
        if (!chosen.valid) chosen = s;
        break;
      case SpotSelection::Bottom:
        chosen = s;
        covered_until = s.last;
        break;
    }
  }
  if (p.selection == SpotSelection::All) {
    for (int k = 0; k < kept; ++k) {
      const Stripe s = evaluate(kept_row[k]);
      adaptive::emit_stripe(s, centre(s), k, emit);
    }
    return found;
  }
  if (!chosen.valid) return 0;
  adaptive::emit_stripe(chosen, centre(chosen), 0, emit);
  return 1;
}

template <class Column, class Raw, class Emit>
STRIPELINE_HD int column_adaptive(const Column& col, const Raw& raw, int height, const ColumnParams& p, const Emit& emit) {
  if (height < 2) return 0;
  const adaptive::ColumnSummary summary = adaptive::summarise(col, height);
  auto next = [&](int y) {
    while (y < height && !adaptive::is_candidate(col, height, y, summary.lowest, p)) ++y;
    return y;
  };
  auto evaluate = [&](int y) { return adaptive::evaluate(col, raw, height, y, p, summary.tv); };
  auto centre = [&](const adaptive::Stripe& s) { return adaptive::centre(col, raw, height, s, p); };
  return column_adaptive_scan(col, height, p, emit, summary, next, evaluate, centre);
}

}  // namespace stripeline::kernels
