// The CPU chain's SIMD loops (stages/cpu/simd_chain.h), compiled once per
// instruction set by Highway's foreach_target and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "stages/cpu/simd_chain.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target

#include <hwy/highway.h>

#include <cstring>
#include <type_traits>

#include "stages/cpu/simd_chain.h"

HWY_BEFORE_NAMESPACE();
namespace stripeline::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DU = hn::ScalableTag<std::uint32_t>;
using DI = hn::RebindToSigned<DU>;

// Taps the same from both ends (make_gaussian_taps' always are): sums may
// pair the pixels a tap weighs, w (a + b) = w a + w b exactly (uint32, no
// overflow: kernels/gaussian.h).
inline bool symmetric(const kernels::GaussianTaps& taps) {
  for (int k = 0; k < taps.size / 2; ++k)
    if (taps.w[k] != taps.w[taps.size - 1 - k]) return false;
  return true;
}

// The horizontal pass's values, kept for the vertical one: 8-bit pixels'
// below 2^12 (16-bit words: half the scratch's bytes, the tile's fits the L1
// cache), 16-bit pixels' below 2^20.
template <class T>
using Mid = std::conditional_t<sizeof(T) == 1, std::uint16_t, std::uint32_t>;
template <class M>
void store_mid(hn::Vec<DU> v, M* HWY_RESTRICT at) {
  if constexpr (sizeof(M) == 4) {
    hn::StoreU(v, DU(), at);
  } else {
    const hn::Rebind<M, DI> dm;
    hn::StoreU(hn::DemoteTo(dm, hn::BitCast(DI(), v)), dm, at);  // < 2^12: no saturation
  }
}
template <class M>
hn::Vec<DU> load_mid(const M* at) {
  if constexpr (sizeof(M) == 4) {
    return hn::LoadU(DU(), at);
  } else {
    return hn::PromoteTo(DU(), hn::LoadU(hn::Rebind<M, DU>(), at));
  }
}

// The horizontal pass of one frame row into mid (m[x] for x in [x0, x1)):
// kernels::blur_h (blur_h_none along the columns only), vectors of
// Lanes(DU) columns, the edges (a window past the row's ends) and the
// columns left over scalar.
// S: taps.size when known at compile time (the loops over the taps
// unrolled), 0 when not.
template <int S, class T, class M>
void blur_row(const T* row, int width, int x0, int x1, const kernels::GaussianTaps& taps, M* HWY_RESTRICT m) {
  const int size = S > 0 ? S : taps.size;
  const DU du;
  const hn::Rebind<T, DU> dt;
  const int n = static_cast<int>(hn::Lanes(du));
  if (!taps.across) {
    int x = x0;
    for (; x + n <= x1; x += n)
      store_mid(hn::ShiftLeft<kernels::kBlurWeightBits - kernels::kBlurMidShift>(hn::PromoteTo(du, hn::LoadU(dt, row + x))), m + x);
    for (; x < x1; ++x) m[x] = static_cast<M>(kernels::blur_h_none(row[x]));
    return;
  }
  const int r = size / 2;
  const std::uint32_t* w = taps.w.data();
  auto pixel = [row](int x) { return row[x]; };
  // Columns whose whole window lies inside the row (as cpu::blur_tile).
  const int in0 = x0 > r ? x0 : (r < x1 ? r : x1);
  const int in1 = x1 < width - r ? x1 : (width - r > in0 ? width - r : in0);
  for (int x = x0; x < in0; ++x) m[x] = static_cast<M>(kernels::blur_h(pixel, x, width, w, taps.size));
  int x = in0;
  const auto half = hn::Set(du, 1u << (kernels::kBlurMidShift - 1));
  auto at = [&](int x) { return hn::PromoteTo(du, hn::LoadU(dt, row + x)); };
  const bool folded = symmetric(taps);
  auto columns = [&](int x) {  // m[x, x + n)
    auto acc = half;
    if (folded) {  // w[k] (p[x-r+k] + p[x+r-k]): fewer products, the same exact sum
      acc = hn::Add(acc, hn::Mul(hn::Set(du, w[r]), at(x)));
      for (int k = 0; k < r; ++k) acc = hn::Add(acc, hn::Mul(hn::Set(du, w[k]), hn::Add(at(x + k - r), at(x + r - k))));
    } else {
      for (int k = 0; k < size; ++k) acc = hn::Add(acc, hn::Mul(hn::Set(du, w[k]), at(x + k - r)));
    }
    store_mid(hn::ShiftRight<kernels::kBlurMidShift>(acc), m + x);
  };
  for (; x + n <= in1; x += n) columns(x);
  if (x < in1 && in1 - in0 >= n) {  // the last inside columns: a vector ending at in1 (the columns it repeats get the same values)
    columns(in1 - n);
    x = in1;
  }
  for (; x < x1; ++x) m[x] = static_cast<M>(kernels::blur_h(pixel, x, width, w, taps.size));
}

template <int S, class T>
void blur_tile_t(const T* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1, const kernels::GaussianTaps& taps,
                 std::uint32_t* mid32, T* out) {
  const int tw = x1 - x0;
  if (taps.size == 0) {
    for (int y = 0; y < height; ++y) std::memcpy(out + static_cast<std::ptrdiff_t>(y) * tw, frame + y * stride + x0, sizeof(T) * tw);
    return;
  }
  using M = Mid<T>;
  M* mid = reinterpret_cast<M*>(mid32);  // the scratch holds the values as M alone here
  for (int y = 0; y < height; ++y) blur_row<S>(frame + y * stride, width, x0, x1, taps, mid + static_cast<std::ptrdiff_t>(y) * tw - x0);
  // The vertical pass: kernels::blur_v, a row of the tile at a time.
  const DU du;
  const DI di;
  const hn::Rebind<T, DI> dt;
  const int size = S > 0 ? S : taps.size;
  const int n = static_cast<int>(hn::Lanes(du)), r = size / 2;
  const std::uint32_t* w = taps.w.data();
  const auto half = hn::Set(du, 1u << (kernels::kBlurFinalShift - 1));
  const M* src[kernels::kMaxBlurSize];
  const bool folded = symmetric(taps);
  for (int y = 0; y < height; ++y) {
    for (int k = 0; k < size; ++k) src[k] = mid + static_cast<std::ptrdiff_t>(kernels::clamp_index(y + k - r, height)) * tw;
    T* HWY_RESTRICT o = out + static_cast<std::ptrdiff_t>(y) * tw;
    int c = 0;
    for (; c + n <= tw; c += n) {
      auto acc = half;
      if (folded) {
        acc = hn::Add(acc, hn::Mul(hn::Set(du, w[r]), load_mid(src[r] + c)));
        for (int k = 0; k < r; ++k) acc = hn::Add(acc, hn::Mul(hn::Set(du, w[k]), hn::Add(load_mid(src[k] + c), load_mid(src[size - 1 - k] + c))));
      } else {
        for (int k = 0; k < size; ++k) acc = hn::Add(acc, hn::Mul(hn::Set(du, w[k]), load_mid(src[k] + c)));
      }
      // < 2^16 after the shift: the signed demotion cannot saturate.
      hn::StoreU(hn::DemoteTo(dt, hn::BitCast(di, hn::ShiftRight<kernels::kBlurFinalShift>(acc))), dt, o + c);
    }
    for (; c < tw; ++c) {
      auto column = [&](int yy) -> std::uint32_t { return mid[static_cast<std::ptrdiff_t>(yy) * tw + c]; };
      o[c] = static_cast<T>(kernels::blur_v(column, y, height, w, taps.size));
    }
  }
}

// blur_tile_t with the common window sizes' loops unrolled.
template <class T>
void blur_tile_sized(const T* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1, const kernels::GaussianTaps& taps,
                     std::uint32_t* mid, T* out) {
  switch (taps.size) {
    case 3: return blur_tile_t<3>(frame, width, height, stride, x0, x1, taps, mid, out);
    case 5: return blur_tile_t<5>(frame, width, height, stride, x0, x1, taps, mid, out);
    case 7: return blur_tile_t<7>(frame, width, height, stride, x0, x1, taps, mid, out);
    default: return blur_tile_t<0>(frame, width, height, stride, x0, x1, taps, mid, out);
  }
}

// bound = top - lowest passes `bound >= min_contrast and bound != 0` as
// bound > candidate_floor (bound < 2^16): adaptive::is_candidate's bound, and
// column_adaptive_scan's condition to evaluate the brightest row.
std::int32_t candidate_floor(const kernels::ColumnParams& p) {
  return p.min_contrast == 0 ? 0 : (p.min_contrast > 65536u ? 65535 : static_cast<std::int32_t>(p.min_contrast) - 1);
}

// adaptive::summarise and the adaptive::is_candidate bits of columns [c, c +
// Lanes) in 32-bit signed lanes (pixels < 2^16, tv < 2^31).
template <class T>
void summarise_vector(const T* pixels, std::ptrdiff_t stride, int tw, int height, int c, std::int32_t floor, const TileSummary& out) {
  const DI di;
  const DU du;
  const hn::Rebind<T, DI> dt;
  auto row = [&](int y) { return hn::PromoteTo(di, hn::LoadU(dt, pixels + y * stride + c)); };
  auto v = row(0);
  auto lowest = v, top = v, brightest = hn::Zero(di), tv = hn::Zero(di), prev = v;
  for (int y = 1; y < height; ++y) {
    v = row(y);
    tv = hn::Add(tv, hn::Abs(hn::Sub(v, prev)));
    lowest = hn::Min(lowest, v);
    const auto higher = hn::Gt(v, top);
    top = hn::IfThenElse(higher, v, top);
    brightest = hn::IfThenElse(higher, hn::Set(di, y), brightest);
    prev = v;
  }
  hn::StoreU(hn::BitCast(du, lowest), du, out.lowest + c);
  hn::StoreU(hn::BitCast(du, tv), du, out.tv + c);
  hn::StoreU(brightest, di, out.brightest + c);
  hn::StoreU(hn::BitCast(du, top), du, out.top + c);
  // Candidates: v[y-1] < v[y] >= v[y+1], v - lowest > floor.
  const auto bound_floor = hn::Add(lowest, hn::Set(di, floor));
  auto above = hn::Zero(di);  // v[y-1]; row 0 has no row above
  v = row(0);
  auto bits = hn::Zero(du);
  for (int y = 0; y < height; ++y) {
    auto is = hn::Gt(v, bound_floor);
    if (y > 0) is = hn::And(is, hn::Lt(above, v));
    if (y + 1 < height) {
      const auto below = row(y + 1);
      is = hn::And(is, hn::Not(hn::Gt(below, v)));
      above = v;
      v = below;
    }
    bits = hn::Or(bits, hn::IfThenElseZero(hn::RebindMask(du, is), hn::Set(du, 1u << (y & 31))));
    if ((y & 31) == 31 || y + 1 == height) {
      hn::StoreU(bits, du, out.candidates + static_cast<std::ptrdiff_t>(y >> 5) * tw + c);
      bits = hn::Zero(du);
    }
  }
}

template <class T>
void summarise_tile_t(const T* pixels, std::ptrdiff_t stride, int tw, int height, const kernels::ColumnParams& p, const TileSummary& out) {
  const std::int32_t floor = candidate_floor(p);
  const int n = static_cast<int>(hn::Lanes(DU()));
  int c = 0;
  for (; c + n <= tw; c += n) summarise_vector(pixels, stride, tw, height, c, floor, out);
  for (; c < tw; ++c) {  // the columns left over: the scalar helpers themselves
    auto column = [&](int y) -> std::uint32_t { return pixels[y * stride + c]; };
    const kernels::adaptive::ColumnSummary s = kernels::adaptive::summarise(column, height);
    out.lowest[c] = s.lowest;
    out.tv[c] = static_cast<std::uint32_t>(s.tv);
    out.brightest[c] = s.brightest;
    out.top[c] = s.top;
    for (int w = 0; w < candidate_words(height); ++w) out.candidates[static_cast<std::ptrdiff_t>(w) * tw + c] = 0;
    for (int y = 0; y < height; ++y)
      if (kernels::adaptive::is_candidate(column, height, y, s.lowest, p)) out.candidates[static_cast<std::ptrdiff_t>(y >> 5) * tw + c] |= 1u << (y & 31);
  }
}

// Row walks across columns: each lane in `alive` visits rows `from` to `to`
// (inclusive; dir -1: upwards, from >= to; +1: downwards, from <= to) in
// that order, each once, until `step(y, yv, in)` (row y, lanes `in` visiting
// it) returns it among the lanes that stop there.
template <class Step>
void walk(int dir, hn::Vec<DI> from, hn::Vec<DI> to, hn::Mask<DI> alive, const Step& step) {
  const DI di;
  alive = hn::And(alive, dir < 0 ? hn::Not(hn::Lt(from, to)) : hn::Not(hn::Gt(from, to)));
  if (hn::AllFalse(di, alive)) return;
  const auto low = hn::Set(di, INT32_MIN), high = hn::Set(di, INT32_MAX);
  const int y0 = dir < 0 ? hn::GetLane(hn::MaxOfLanes(di, hn::IfThenElse(alive, from, low)))
                         : hn::GetLane(hn::MinOfLanes(di, hn::IfThenElse(alive, from, high)));
  const int y1 = dir < 0 ? hn::GetLane(hn::MinOfLanes(di, hn::IfThenElse(alive, to, high)))
                         : hn::GetLane(hn::MaxOfLanes(di, hn::IfThenElse(alive, to, low)));
  for (int y = y0; dir < 0 ? y >= y1 : y <= y1; y += dir) {
    const auto yv = hn::Set(di, y);
    const auto within = dir < 0 ? hn::And(hn::Not(hn::Gt(yv, from)), hn::Not(hn::Lt(yv, to))) : hn::And(hn::Not(hn::Lt(yv, from)), hn::Not(hn::Gt(yv, to)));
    const auto in = hn::And(alive, within);
    if (!hn::AllFalse(di, in)) alive = hn::AndNot(step(y, yv, in), alive);
    if (hn::AllFalse(di, alive)) return;
  }
}

constexpr int kMaxLanes = 64;  // 32-bit lanes of the widest vector Highway has
struct Lanes {
  HWY_ALIGN std::int32_t v[kMaxLanes];
};

struct Lanes64 {
  HWY_ALIGN std::int64_t v[kMaxLanes];
};

// The centroid's sums of the lanes in `fast` over their rows lo..hi (each a
// lane's own), walking rows y0..y1 = the lanes' lowest lo and highest hi:
// sw = sum w^2 and the sum over those rows of the running sw, from which
// swy = (y1 + 1 - lo) sw - that sum (per column, after); w = u(y) - level
// where above 0, u from `u_at(y, yv)`. A lane whose w reaches 46341 (w^2
// no longer fits 31 bits) is set in `bad`.
template <class U>
void centroid_sums(hn::Vec<DI> lo, hn::Vec<DI> hi, hn::Vec<DI> level, hn::Mask<DI> fast, int y0, int y1, const U& u_at, Lanes64& sw,
                   Lanes64& running, hn::Mask<DI>& bad) {
  const DI di;
  const auto zero = hn::Zero(di), wmax = hn::Set(di, 46340);
#if HWY_TARGET == HWY_SCALAR
  const hn::Rebind<std::int64_t, DI> d64;
  auto a = hn::Zero(d64), b = hn::Zero(d64);
#else
  const hn::Half<DI> dh;
  const hn::Rebind<std::int64_t, decltype(dh)> d64;
  auto a0 = hn::Zero(d64), a1 = hn::Zero(d64), b0 = hn::Zero(d64), b1 = hn::Zero(d64);
#endif
  for (int y = y0; y <= y1; ++y) {
    const auto yv = hn::Set(di, y);
    const auto in = hn::And(fast, hn::And(hn::Not(hn::Lt(yv, lo)), hn::Not(hn::Gt(yv, hi))));
    const auto w = hn::Sub(u_at(y, yv), level);
    const auto pos = hn::And(in, hn::Gt(w, zero));
    bad = hn::Or(bad, hn::And(pos, hn::Gt(w, wmax)));
    const auto w2 = hn::IfThenElseZero(pos, hn::Mul(w, w));
#if HWY_TARGET == HWY_SCALAR
    a = hn::Add(a, hn::PromoteTo(d64, w2));
    b = hn::Add(b, a);
#else
    a0 = hn::Add(a0, hn::PromoteTo(d64, hn::LowerHalf(dh, w2)));
    a1 = hn::Add(a1, hn::PromoteTo(d64, hn::UpperHalf(dh, w2)));
    b0 = hn::Add(b0, a0);
    b1 = hn::Add(b1, a1);
#endif
  }
#if HWY_TARGET == HWY_SCALAR
  hn::Store(a, d64, sw.v);
  hn::Store(b, d64, running.v);
#else
  const std::size_t half = hn::Lanes(d64);
  hn::Store(a0, d64, sw.v);
  hn::Store(a1, d64, sw.v + half);
  hn::Store(b0, d64, running.v);
  hn::Store(b1, d64, running.v + half);
#endif
}

// adaptive::centre of the valid stripes of columns [c, c + Lanes) into
// out.centres (simd_chain.h, evaluate_brightest).
template <class T>
void centre_vector(const T* pix, std::ptrdiff_t ps, const T* raw, std::ptrdiff_t rs, int height, int c, const kernels::ColumnParams& p,
                   const TileSummary& out) {
  namespace ad = kernels::adaptive;
  const DI di;
  const hn::Rebind<T, DI> dt;
  const int n = static_cast<int>(hn::Lanes(di));
  Lanes l_fast{}, l_first{}, l_last{}, l_alo{}, l_ahi{}, l_bg{}, l_slope{}, l_level{}, l_peak{}, l_value{};
  auto scalar_centre = [&](int l) {
    auto column = [&](int y) -> std::uint32_t { return pix[y * ps + c + l]; };
    auto raw_column = [&](int y) -> std::uint32_t { return raw[y * rs + c + l]; };
    out.centres[c + l] = ad::centre(column, raw_column, height, out.stripes[c + l], p);
  };
  int y0 = height, y1 = -1;
  for (int l = 0; l < n; ++l) {
    l_fast.v[l] = l_first.v[l] = l_last.v[l] = l_alo.v[l] = l_ahi.v[l] = l_bg.v[l] = l_slope.v[l] = l_level.v[l] = l_peak.v[l] = l_value.v[l] = 0;
    const ad::Stripe& s = out.stripes[c + l];
    if (!s.valid) continue;
    bool fast = p.estimator == kernels::SubpixelEstimator::Centroid && s.value < p.saturation;
    if (fast) {
      // The rows the centroid reads lie in [min(first, anchor_lo + 1),
      // max(last, anchor_hi - 1)]: the background line's product there
      // within 32 bits.
      const std::int64_t below = s.anchor_lo - s.first, above = (s.last > s.anchor_hi ? s.last : s.anchor_hi) - s.anchor_lo;
      const std::int64_t reach = below > above ? below : above;
      const std::int64_t slope = s.slope_q12 < 0 ? -s.slope_q12 : s.slope_q12;
      fast = slope < (std::int64_t{1} << 31) && slope * reach + 2048 < (std::int64_t{1} << 31);
    }
    if (!fast) {
      scalar_centre(l);
      continue;
    }
    l_fast.v[l] = -1;
    l_first.v[l] = s.first;
    l_last.v[l] = s.last;
    l_alo.v[l] = s.anchor_lo;
    l_ahi.v[l] = s.anchor_hi;
    l_bg.v[l] = s.bg_lo;
    l_slope.v[l] = static_cast<std::int32_t>(s.slope_q12);
    l_level.v[l] = ad::centroid_level(s, p);
    l_peak.v[l] = s.peak;
    l_value.v[l] = static_cast<std::int32_t>(s.value);
    y0 = s.first < y0 ? s.first : y0;
    const int end = s.peak + 2 < height ? s.peak + 2 : height - 1;
    y1 = s.last > y1 ? s.last : y1;
    y1 = end > y1 ? end : y1;
  }
  const auto zero = hn::Zero(di), one = hn::Set(di, 1);
  auto fast = hn::Ne(hn::Load(di, l_fast.v), zero);
  if (hn::AllFalse(di, fast)) return;
  {
    // adaptive::flat_top's cases across the columns: a raw pixel of the run
    // at saturation (a clipped core may start there: those columns take the
    // scalar code, which finds whether one does), or the two rows below the
    // peak at its value (the saturated peak is excluded above).
    const auto first = hn::Load(di, l_first.v), end = hn::Load(di, l_last.v), peak = hn::Load(di, l_peak.v), value = hn::Load(di, l_value.v);
    const auto sat = hn::Set(di, static_cast<std::int32_t>(p.saturation > 0x7fffffffu ? 0x7fffffffu : p.saturation));
    auto clipped = hn::Lt(zero, zero);
    auto below1 = hn::Set(di, -1), below2 = below1;
    const auto peak1 = hn::Add(peak, one), peak2 = hn::Add(peak1, one);
    for (int y = y0; y <= y1; ++y) {
      const auto yv = hn::Set(di, y);
      const auto in_run = hn::And(fast, hn::And(hn::Not(hn::Lt(yv, first)), hn::Not(hn::Gt(yv, end))));
      clipped = hn::Or(clipped, hn::And(in_run, hn::Not(hn::Lt(hn::PromoteTo(di, hn::LoadU(dt, raw + y * rs + c)), sat))));
      const auto v = hn::PromoteTo(di, hn::LoadU(dt, pix + y * ps + c));
      below1 = hn::IfThenElse(hn::Eq(yv, peak1), v, below1);
      below2 = hn::IfThenElse(hn::Eq(yv, peak2), v, below2);
    }
    const auto flat = hn::Or(clipped, hn::And(hn::Eq(below1, value), hn::Eq(below2, value)));
    if (!hn::AllFalse(di, hn::And(fast, flat))) {
      Lanes l_flat;
      hn::Store(hn::VecFromMask(di, hn::And(fast, flat)), di, l_flat.v);
      for (int l = 0; l < n; ++l)
        if (l_flat.v[l]) scalar_centre(l), l_fast.v[l] = 0;
      fast = hn::Ne(hn::Load(di, l_fast.v), zero);
      if (hn::AllFalse(di, fast)) return;
    }
  }
  const auto alo = hn::Load(di, l_alo.v), ahi = hn::Load(di, l_ahi.v), bg = hn::Load(di, l_bg.v), slope = hn::Load(di, l_slope.v);
  const auto level = hn::Load(di, l_level.v), round = hn::Set(di, 2048);
  // adaptive::u_at: (v << kQ) - background_at(y), exact in 32 bits for these lanes.
  auto u_at = [&](int y, hn::Vec<DI> yv) {
    const auto v = hn::PromoteTo(di, hn::LoadU(dt, pix + y * ps + c));
    const auto background = hn::Add(bg, hn::ShiftRight<12>(hn::Add(hn::Mul(slope, hn::Sub(yv, alo)), round)));
    return hn::Sub(hn::ShiftLeft<ad::kQ>(v), background);
  };
  // The weights' extent: from the run out while u > level, inside the anchors.
  auto lo = hn::Load(di, l_first.v), hi = hn::Load(di, l_last.v);
  auto extend = [&](auto& edge) {
    return [&](int y, hn::Vec<DI> yv, hn::Mask<DI> in) {
      const auto stop = hn::And(in, hn::Not(hn::Gt(u_at(y, yv), level)));
      edge = hn::IfThenElse(hn::AndNot(stop, in), yv, edge);
      return stop;
    };
  };
  walk(-1, hn::Sub(lo, one), hn::Add(alo, one), fast, extend(lo));
  walk(+1, hn::Add(hi, one), hn::Sub(ahi, one), fast, extend(hi));
  Lanes l_lo, l_hi;
  hn::Store(lo, di, l_lo.v);
  hn::Store(hi, di, l_hi.v);
  y0 = height, y1 = -1;
  for (int l = 0; l < n; ++l)
    if (l_fast.v[l]) y0 = l_lo.v[l] < y0 ? l_lo.v[l] : y0, y1 = l_hi.v[l] > y1 ? l_hi.v[l] : y1;
  Lanes64 sw, running;
  auto bad = hn::Lt(zero, zero);
  centroid_sums(lo, hi, level, fast, y0, y1, u_at, sw, running, bad);
  Lanes l_bad;
  hn::Store(hn::VecFromMask(di, bad), di, l_bad.v);
  for (int l = 0; l < n; ++l) {
    if (!l_fast.v[l]) continue;
    if (l_bad.v[l] || sw.v[l] <= 0) {  // w^2 beyond 31 bits; no weight (the run's maximum): the scalar code
      scalar_centre(l);
      continue;
    }
    const std::int64_t swy = (y1 + 1 - l_lo.v[l]) * sw.v[l] - running.v[l];
    out.centres[c + l] = ad::centroid_position(l_lo.v[l], sw.v[l], swy);
  }
}

// adaptive::line_and_gates of the stripes of columns [c, c + Lanes) whose
// lane is in `ok` (their anchors set; `valley_*`, `inside` per lane): the
// run's walks and the raw data's check across the columns, in 32-bit lanes
// where a column's rows are exact in them (the background line's product,
// checked per column); the rest per column. A column with a valley, or
// beyond those bounds, runs adaptive::line_and_gates itself.
template <class T>
void line_and_gates_vector(const T* pix, std::ptrdiff_t ps, const T* raw, std::ptrdiff_t rs, int height, int c, const kernels::ColumnParams& p,
                           const TileSummary& out, const Lanes& ok, const Lanes& valley_lo, const Lanes& valley_hi, const Lanes& inside) {
  namespace ad = kernels::adaptive;
  const DI di;
  const hn::Rebind<T, DI> dt;
  const int n = static_cast<int>(hn::Lanes(di));
  const int radius = p.stripe_max_width;
  Lanes l_vec{}, l_peak{}, l_alo{}, l_bg{}, l_slope{}, l_level{};
  bool any = false;
  for (int l = 0; l < n; ++l) {
    l_vec.v[l] = l_peak.v[l] = l_alo.v[l] = l_bg.v[l] = l_slope.v[l] = l_level.v[l] = 0;
    if (!ok.v[l]) continue;
    ad::Stripe& s = out.stripes[c + l];
    auto column = [&](int y) -> std::uint32_t { return pix[y * ps + c + l]; };
    if (valley_lo.v[l] || valley_hi.v[l]) {
      auto raw_column = [&](int y) -> std::uint32_t { return raw[y * rs + c + l]; };
      auto in = [&]() { return static_cast<std::uint64_t>(static_cast<std::uint32_t>(inside.v[l])); };
      ad::line_and_gates(column, raw_column, height, s, valley_lo.v[l] != 0, valley_hi.v[l] != 0, p, out.tv[c + l], in);
      continue;
    }
    // line_and_gates without a valley, to the run.
    if (s.anchor_lo == s.peak || s.anchor_hi == s.peak) continue;
    s.valley = false;
    s.slope_q12 = kernels::round_div((static_cast<std::int64_t>(s.bg_hi) - s.bg_lo) * 4096, s.anchor_hi - s.anchor_lo);
    s.contrast = ad::u_at(column, height, s, s.peak);
    if (s.contrast <= 0 || s.contrast < static_cast<std::int32_t>(p.min_contrast << ad::kQ)) continue;
    // The rows read: the run's, within radius of the peak.
    const std::int64_t below = s.anchor_lo - (s.peak - radius), above = s.peak + radius - s.anchor_lo;
    const std::int64_t reach = below > above ? below : above;
    const std::int64_t slope = s.slope_q12 < 0 ? -s.slope_q12 : s.slope_q12;
    if (!(slope < (std::int64_t{1} << 31) && slope * reach + 2048 < (std::int64_t{1} << 31))) {
      auto raw_column = [&](int y) -> std::uint32_t { return raw[y * rs + c + l]; };
      auto in = [&]() { return static_cast<std::uint64_t>(static_cast<std::uint32_t>(inside.v[l])); };
      ad::line_and_gates(column, raw_column, height, s, false, false, p, out.tv[c + l], in);
      continue;
    }
    l_vec.v[l] = -1;
    l_peak.v[l] = s.peak;
    l_alo.v[l] = s.anchor_lo;
    l_bg.v[l] = s.bg_lo;
    l_slope.v[l] = static_cast<std::int32_t>(s.slope_q12);
    l_level.v[l] = static_cast<std::int32_t>((static_cast<std::int64_t>(s.contrast) * p.level_q8) >> 8);
    any = true;
  }
  if (!any) return;
  const auto zero = hn::Zero(di), one = hn::Set(di, 1), last = hn::Set(di, height - 1), w = hn::Set(di, radius);
  const auto vec = hn::Ne(hn::Load(di, l_vec.v), zero);
  const auto peak = hn::Load(di, l_peak.v), alo = hn::Load(di, l_alo.v), bg = hn::Load(di, l_bg.v), slope = hn::Load(di, l_slope.v);
  const auto level = hn::Load(di, l_level.v), round = hn::Set(di, 2048);
  // (v << kQ) - adaptive::background_at(y) of the pixels at `at`.
  auto u_of = [&](const T* at, std::ptrdiff_t stride, int y, hn::Vec<DI> yv) {
    const auto v = hn::PromoteTo(di, hn::LoadU(dt, at + y * stride + c));
    return hn::Sub(hn::ShiftLeft<ad::kQ>(v), hn::Add(bg, hn::ShiftRight<12>(hn::Add(hn::Mul(slope, hn::Sub(yv, alo)), round))));
  };
  // The run at level around the peak, at most radius rows each side.
  auto first = peak, end = peak;
  auto run = [&](auto& edge) {
    return [&](int y, hn::Vec<DI> yv, hn::Mask<DI> in) {
      const auto stop = hn::And(in, hn::Lt(u_of(pix, ps, y, yv), level));
      edge = hn::IfThenElse(hn::AndNot(stop, in), yv, edge);
      return stop;
    };
  };
  walk(-1, hn::Sub(peak, one), hn::Max(hn::Sub(peak, w), zero), vec, run(first));
  walk(+1, hn::Add(peak, one), hn::Min(hn::Add(peak, w), last), vec, run(end));
  Lanes l_first, l_last;
  hn::Store(first, di, l_first.v);
  hn::Store(end, di, l_last.v);
  for (int l = 0; l < n; ++l) {  // the width and noise gates
    if (!l_vec.v[l]) continue;
    ad::Stripe& s = out.stripes[c + l];
    s.first = l_first.v[l];
    s.last = l_last.v[l];
    const std::int64_t width = s.last - s.first + 1;
    bool pass = width <= radius;
    if (pass && width > ad::kWideRun && static_cast<std::int64_t>(s.contrast) * ad::kWideRun < (static_cast<std::int64_t>(p.min_contrast) << ad::kQ) * width)
      pass = false;
    if (pass && p.noise_q4 > 0) {
      const std::uint64_t outside_tv = out.tv[c + l] - static_cast<std::uint64_t>(static_cast<std::uint32_t>(inside.v[l]));
      const std::int64_t outside_steps = static_cast<std::int64_t>(height - 1) - (s.anchor_hi - s.anchor_lo);
      if (outside_steps >= 4 &&
          static_cast<std::uint64_t>(s.contrast) * static_cast<std::uint64_t>(outside_steps) < static_cast<std::uint64_t>(p.noise_q4) * outside_tv)
        pass = false;
    }
    l_vec.v[l] = pass ? -1 : 0;
  }
  // The column's own (unblurred) data: its brightest pixel of the run over the line.
  const auto held = hn::Ne(hn::Load(di, l_vec.v), zero);
  auto best = zero;
  walk(+1, first, end, held, [&](int y, hn::Vec<DI> yv, hn::Mask<DI> in) {
    best = hn::IfThenElse(in, hn::Max(best, u_of(raw, rs, y, yv)), best);
    return hn::Lt(zero, zero);
  });
  Lanes l_best;
  hn::Store(best, di, l_best.v);
  for (int l = 0; l < n; ++l)
    if (l_vec.v[l]) out.stripes[c + l].valid = !(2 * l_best.v[l] < out.stripes[c + l].contrast);
}

// adaptive::evaluate of the brightest rows of columns [c, c + Lanes): the
// walks (side minima, half-widths, anchors, the noise gate's sum) across
// the columns; the rest per column, the scalar code's own pieces.
template <class T>
void evaluate_vector(const T* pix, std::ptrdiff_t ps, const T* raw, std::ptrdiff_t rs, int height, int c, const kernels::ColumnParams& p,
                     const TileSummary& out) {
  namespace ad = kernels::adaptive;
  const DI di;
  const DU du;
  const hn::Rebind<T, DI> dt;
  const int n = static_cast<int>(hn::Lanes(di));
  auto row = [&](int y) { return hn::PromoteTo(di, hn::LoadU(dt, pix + y * ps + c)); };
  const auto peak = hn::LoadU(di, out.brightest + c), value = hn::BitCast(di, hn::LoadU(du, out.top + c));
  const auto zero = hn::Zero(di), one = hn::Set(di, 1), last = hn::Set(di, height - 1), radius = hn::Set(di, p.stripe_max_width);
  const auto asked = hn::Gt(hn::Sub(value, hn::BitCast(di, hn::LoadU(du, out.lowest + c))), hn::Set(di, candidate_floor(p)));
  const auto none = hn::Lt(zero, zero);
  Lanes l_ok, l_half, l_rise, l_a, l_b, l_c, l_d;
  // Side minima (adaptive::side_minimum). The peak is its column's
  // brightest pixel: no walk stops at higher ground, so each side's minimum
  // is its window's (radius rows, inside the frame), and a side is walked
  // when its window holds a row. Both windows in one pass down the rows.
  auto min_lo = value, min_hi = value;
  const auto any_lo = p.stripe_max_width > 0 ? hn::And(asked, hn::Gt(peak, zero)) : none;
  const auto any_hi = p.stripe_max_width > 0 ? hn::And(asked, hn::Lt(peak, last)) : none;
  if (!hn::AllFalse(di, hn::Or(any_lo, any_hi))) {
    const auto lo_from = hn::Max(hn::Sub(peak, radius), zero), hi_to = hn::Min(hn::Add(peak, radius), last);
    const int y0 = hn::GetLane(hn::MinOfLanes(di, hn::IfThenElse(any_lo, lo_from, hn::IfThenElse(any_hi, hn::Add(peak, one), last))));
    const int y1 = hn::GetLane(hn::MaxOfLanes(di, hn::IfThenElse(any_hi, hi_to, hn::IfThenElse(any_lo, hn::Sub(peak, one), zero))));
    for (int y = y0; y <= y1; ++y) {
      const auto yv = hn::Set(di, y);
      const auto v = row(y);
      const auto in_lo = hn::And(any_lo, hn::And(hn::Not(hn::Lt(yv, lo_from)), hn::Lt(yv, peak)));
      const auto in_hi = hn::And(any_hi, hn::And(hn::Gt(yv, peak), hn::Not(hn::Gt(yv, hi_to))));
      min_lo = hn::IfThenElse(in_lo, hn::Min(min_lo, v), min_lo);
      min_hi = hn::IfThenElse(in_hi, hn::Min(min_hi, v), min_hi);
    }
  }
  hn::Store(hn::VecFromMask(di, asked), di, l_ok.v);
  hn::Store(hn::VecFromMask(di, any_lo), di, l_a.v);
  hn::Store(hn::VecFromMask(di, any_hi), di, l_b.v);
  hn::Store(min_lo, di, l_c.v);
  hn::Store(min_hi, di, l_d.v);
  for (int l = 0; l < n; ++l) {
    ad::Stripe& s = out.stripes[c + l];
    s = ad::Stripe{};
    s.peak = out.brightest[c + l];
    s.value = out.top[c + l];
    std::uint32_t base = 0;
    const bool ok = l_ok.v[l] && ad::prominence_gate(s, l_a.v[l] != 0, l_b.v[l] != 0, static_cast<std::uint32_t>(l_c.v[l]),
                                                     static_cast<std::uint32_t>(l_d.v[l]), p, base);
    l_ok.v[l] = ok ? -1 : 0;
    l_half.v[l] = ok ? static_cast<std::int32_t>(ad::half_level(base, s.prominence)) : 0;
    l_rise.v[l] = ok ? static_cast<std::int32_t>(ad::valley_rise(s.prominence)) : 0;
  }
  const auto ok = hn::Ne(hn::Load(di, l_ok.v), zero);
  if (hn::AllFalse(di, ok)) return;
  // Half-widths.
  const auto half = hn::Load(di, l_half.v), rise = hn::Load(di, l_rise.v);
  auto lo = peak, hi = peak;
  auto width = [&](auto& edge) {
    return [&](int y, hn::Vec<DI> yv, hn::Mask<DI> in) {
      const auto stop = hn::And(in, hn::Lt(row(y), half));
      edge = hn::IfThenElse(hn::AndNot(stop, in), yv, edge);
      return stop;
    };
  };
  walk(-1, hn::Sub(peak, one), hn::Max(hn::Sub(peak, radius), zero), ok, width(lo));
  walk(+1, hn::Add(peak, one), hn::Min(hn::Add(peak, radius), last), ok, width(hi));
  hn::Store(hn::Sub(peak, lo), di, l_a.v);
  hn::Store(hn::Sub(hi, peak), di, l_b.v);
  for (int l = 0; l < n; ++l) l_a.v[l] = ad::anchor_distance(l_a.v[l] + 1), l_b.v[l] = ad::anchor_distance(l_b.v[l] + 1);
  // Anchors (adaptive::anchor's walk; its end per column below).
  struct AnchorWalk {
    hn::Vec<DI> lowest, outer_lowest, lowest_at, outer_at, at;
    hn::Mask<DI> valley;
  };
  auto anchor_walk = [&](int dir, hn::Vec<DI> distance) {
    AnchorWalk a{value, value, peak, peak, peak, none};
    const auto to = dir < 0 ? hn::Max(hn::Sub(peak, distance), zero) : hn::Min(hn::Add(peak, distance), last);
    walk(dir, dir < 0 ? hn::Sub(peak, one) : hn::Add(peak, one), to, ok, [&](int y, hn::Vec<DI> yv, hn::Mask<DI> in) {
      const auto v = row(y);
      const auto k = dir < 0 ? hn::Sub(peak, yv) : hn::Sub(yv, peak);
      const auto lower = hn::And(in, hn::Lt(v, a.lowest));
      a.lowest = hn::IfThenElse(lower, v, a.lowest);
      a.lowest_at = hn::IfThenElse(lower, yv, a.lowest_at);
      const auto outer =
          hn::And(in, hn::And(hn::Not(hn::Lt(hn::Add(k, k), distance)), hn::Or(hn::Lt(v, a.outer_lowest), hn::Eq(a.outer_at, peak))));
      a.outer_lowest = hn::IfThenElse(outer, v, a.outer_lowest);
      a.outer_at = hn::IfThenElse(outer, yv, a.outer_at);
      const auto since = dir < 0 ? hn::Sub(a.lowest_at, yv) : hn::Sub(yv, a.lowest_at);
      const auto valley = hn::And(in, hn::And(hn::Gt(v, hn::Add(a.lowest, rise)), hn::Not(hn::Gt(since, hn::Set(di, 3)))));
      a.valley = hn::Or(a.valley, valley);
      a.at = hn::IfThenElse(hn::AndNot(valley, in), yv, a.at);
      return valley;
    });
    return a;
  };
  Lanes l_valley_lo, l_valley_hi;
  for (int dir : {-1, +1}) {
    const AnchorWalk a = anchor_walk(dir, hn::Load(di, dir < 0 ? l_a.v : l_b.v));
    Lanes l_lowest_at, l_outer_at, l_at, l_valley;
    hn::Store(a.lowest_at, di, l_lowest_at.v);
    hn::Store(a.outer_at, di, l_outer_at.v);
    hn::Store(a.at, di, l_at.v);
    hn::Store(hn::VecFromMask(di, a.valley), di, l_valley.v);
    for (int l = 0; l < n; ++l) {
      if (!l_ok.v[l]) continue;
      ad::Stripe& s = out.stripes[c + l];
      auto column = [&](int y) -> std::uint32_t { return pix[y * ps + c + l]; };
      const bool valley = ad::anchor_end(column, height, s.peak, dir, static_cast<std::uint32_t>(l_rise.v[l]), l_valley.v[l] != 0, l_lowest_at.v[l],
                                         l_outer_at.v[l], l_at.v[l], dir < 0 ? s.anchor_lo : s.anchor_hi, dir < 0 ? s.bg_lo : s.bg_hi);
      (dir < 0 ? l_valley_lo : l_valley_hi).v[l] = valley;
      (dir < 0 ? l_c : l_d).v[l] = dir < 0 ? s.anchor_lo : s.anchor_hi;
    }
  }
  // The noise gate's sum |v[y+1] - v[y]| over [anchor_lo, anchor_hi).
  Lanes l_inside;
  if (p.noise_q4 > 0) {
    auto inside = zero;
    walk(+1, hn::Load(di, l_c.v), hn::Sub(hn::Load(di, l_d.v), one), ok, [&](int y, hn::Vec<DI>, hn::Mask<DI> in) {
      inside = hn::Add(inside, hn::IfThenElseZero(in, hn::Abs(hn::Sub(row(y + 1), row(y)))));
      return none;
    });
    hn::Store(inside, di, l_inside.v);
  }
  line_and_gates_vector(pix, ps, raw, rs, height, c, p, out, l_ok, l_valley_lo, l_valley_hi, l_inside);
  if (out.centres) centre_vector(pix, ps, raw, rs, height, c, p, out);
}

template <class T>
void evaluate_brightest_t(const T* pix, std::ptrdiff_t ps, const T* raw, std::ptrdiff_t rs, int tw, int height, const kernels::ColumnParams& p,
                          const TileSummary& out) {
  const int n = static_cast<int>(hn::Lanes(DI()));
  int c = 0;
  for (; c + n <= tw; c += n) evaluate_vector(pix, ps, raw, rs, height, c, p, out);
  for (; c < tw; ++c) {  // the columns left over: adaptive::evaluate itself
    auto column = [&](int y) -> std::uint32_t { return pix[y * ps + c]; };
    auto raw_column = [&](int y) -> std::uint32_t { return raw[y * rs + c]; };
    out.stripes[c] = kernels::adaptive::evaluate(column, raw_column, height, out.brightest[c], p, out.tv[c]);
    if (out.centres && out.stripes[c].valid) out.centres[c] = kernels::adaptive::centre(column, raw_column, height, out.stripes[c], p);
  }
}

void EvaluateBrightest8(const std::uint8_t* pix, std::ptrdiff_t ps, const std::uint8_t* raw, std::ptrdiff_t rs, int tw, int height,
                        const kernels::ColumnParams& p, const TileSummary& out) {
  evaluate_brightest_t(pix, ps, raw, rs, tw, height, p, out);
}
void EvaluateBrightest16(const std::uint16_t* pix, std::ptrdiff_t ps, const std::uint16_t* raw, std::ptrdiff_t rs, int tw, int height,
                         const kernels::ColumnParams& p, const TileSummary& out) {
  evaluate_brightest_t(pix, ps, raw, rs, tw, height, p, out);
}

void BlurTile8(const std::uint8_t* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1, const kernels::GaussianTaps& taps,
               std::uint32_t* mid, std::uint8_t* out) {
  blur_tile_sized(frame, width, height, stride, x0, x1, taps, mid, out);
}
void BlurTile16(const std::uint16_t* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1, const kernels::GaussianTaps& taps,
                std::uint32_t* mid, std::uint16_t* out) {
  blur_tile_sized(frame, width, height, stride, x0, x1, taps, mid, out);
}
void SummariseTile8(const std::uint8_t* pixels, std::ptrdiff_t stride, int tw, int height, const kernels::ColumnParams& p, const TileSummary& out) {
  summarise_tile_t(pixels, stride, tw, height, p, out);
}
void SummariseTile16(const std::uint16_t* pixels, std::ptrdiff_t stride, int tw, int height, const kernels::ColumnParams& p,
                     const TileSummary& out) {
  summarise_tile_t(pixels, stride, tw, height, p, out);
}
std::int64_t Target() { return HWY_TARGET; }

}  // namespace stripeline::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace stripeline::cpu::simd {

HWY_EXPORT(BlurTile8);
HWY_EXPORT(BlurTile16);
HWY_EXPORT(SummariseTile8);
HWY_EXPORT(SummariseTile16);
HWY_EXPORT(EvaluateBrightest8);
HWY_EXPORT(EvaluateBrightest16);
HWY_EXPORT(Target);

void blur_tile(const std::uint8_t* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1, const kernels::GaussianTaps& taps,
               std::uint32_t* mid, std::uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(BlurTile8)(frame, width, height, stride, x0, x1, taps, mid, out);
}
void blur_tile(const std::uint16_t* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1, const kernels::GaussianTaps& taps,
               std::uint32_t* mid, std::uint16_t* out) {
  HWY_DYNAMIC_DISPATCH(BlurTile16)(frame, width, height, stride, x0, x1, taps, mid, out);
}
void summarise_tile(const std::uint8_t* pixels, std::ptrdiff_t stride, int tw, int height, const kernels::ColumnParams& p,
                    const TileSummary& out) {
  HWY_DYNAMIC_DISPATCH(SummariseTile8)(pixels, stride, tw, height, p, out);
}
void summarise_tile(const std::uint16_t* pixels, std::ptrdiff_t stride, int tw, int height, const kernels::ColumnParams& p,
                    const TileSummary& out) {
  HWY_DYNAMIC_DISPATCH(SummariseTile16)(pixels, stride, tw, height, p, out);
}

void evaluate_brightest(const std::uint8_t* pixels, std::ptrdiff_t stride, const std::uint8_t* raw, std::ptrdiff_t raw_stride, int tw, int height,
                        const kernels::ColumnParams& p, const TileSummary& out) {
  HWY_DYNAMIC_DISPATCH(EvaluateBrightest8)(pixels, stride, raw, raw_stride, tw, height, p, out);
}
void evaluate_brightest(const std::uint16_t* pixels, std::ptrdiff_t stride, const std::uint16_t* raw, std::ptrdiff_t raw_stride, int tw,
                        int height, const kernels::ColumnParams& p, const TileSummary& out) {
  HWY_DYNAMIC_DISPATCH(EvaluateBrightest16)(pixels, stride, raw, raw_stride, tw, height, p, out);
}

std::string target_name(std::int64_t target) { return hwy::TargetName(target); }
std::string target_name() { return target_name(HWY_DYNAMIC_DISPATCH(Target)()); }
std::vector<std::int64_t> available_targets() { return hwy::SupportedAndGeneratedTargets(); }
void force_target(std::int64_t target) { hwy::SetSupportedTargetsForTest(target); }

}  // namespace stripeline::cpu::simd
#endif
