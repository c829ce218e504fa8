// The CPU chain's SIMD loops (stages/cpu/simd_chain.h), compiled once per
// instruction set by Highway's foreach_target and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "stages/cpu/simd_chain.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target

#include <hwy/highway.h>

#include <cstring>

#include "stages/cpu/simd_chain.h"

HWY_BEFORE_NAMESPACE();
namespace stripeline::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DU = hn::ScalableTag<std::uint32_t>;
using DI = hn::RebindToSigned<DU>;

// The horizontal pass of one frame row into mid (m[x] for x in [x0, x1)):
// kernels::blur_h (blur_h_none along the columns only), vectors of
// Lanes(DU) columns, the edges (a window past the row's ends) and the
// columns left over scalar.
template <class T>
void blur_row(const T* row, int width, int x0, int x1, const kernels::GaussianTaps& taps, std::uint32_t* HWY_RESTRICT m) {
  const DU du;
  const hn::Rebind<T, DU> dt;
  const int n = static_cast<int>(hn::Lanes(du));
  if (!taps.across) {
    int x = x0;
    for (; x + n <= x1; x += n)
      hn::StoreU(hn::ShiftLeft<kernels::kBlurWeightBits - kernels::kBlurMidShift>(hn::PromoteTo(du, hn::LoadU(dt, row + x))), du, m + x);
    for (; x < x1; ++x) m[x] = kernels::blur_h_none(row[x]);
    return;
  }
  const int r = taps.radius();
  const std::uint32_t* w = taps.w.data();
  auto pixel = [row](int x) { return row[x]; };
  // Columns whose whole window lies inside the row (as cpu::blur_tile).
  const int in0 = x0 > r ? x0 : (r < x1 ? r : x1);
  const int in1 = x1 < width - r ? x1 : (width - r > in0 ? width - r : in0);
  for (int x = x0; x < in0; ++x) m[x] = kernels::blur_h(pixel, x, width, w, taps.size);
  int x = in0;
  const auto half = hn::Set(du, 1u << (kernels::kBlurMidShift - 1));
  for (; x + n <= in1; x += n) {
    auto acc = half;
    for (int k = 0; k < taps.size; ++k) acc = hn::Add(acc, hn::Mul(hn::Set(du, w[k]), hn::PromoteTo(du, hn::LoadU(dt, row + x + k - r))));
    hn::StoreU(hn::ShiftRight<kernels::kBlurMidShift>(acc), du, m + x);
  }
  for (; x < x1; ++x) m[x] = kernels::blur_h(pixel, x, width, w, taps.size);
}

template <class T>
void blur_tile_t(const T* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1, const kernels::GaussianTaps& taps,
                 std::uint32_t* mid, T* out) {
  const int tw = x1 - x0;
  if (taps.size == 0) {
    for (int y = 0; y < height; ++y) std::memcpy(out + static_cast<std::ptrdiff_t>(y) * tw, frame + y * stride + x0, sizeof(T) * tw);
    return;
  }
  for (int y = 0; y < height; ++y) blur_row(frame + y * stride, width, x0, x1, taps, mid + static_cast<std::ptrdiff_t>(y) * tw - x0);
  // The vertical pass: kernels::blur_v, a row of the tile at a time.
  const DU du;
  const DI di;
  const hn::Rebind<T, DI> dt;
  const int n = static_cast<int>(hn::Lanes(du)), r = taps.radius();
  const std::uint32_t* w = taps.w.data();
  const auto half = hn::Set(du, 1u << (kernels::kBlurFinalShift - 1));
  const std::uint32_t* src[kernels::kMaxBlurSize];
  for (int y = 0; y < height; ++y) {
    for (int k = 0; k < taps.size; ++k) src[k] = mid + static_cast<std::ptrdiff_t>(kernels::clamp_index(y + k - r, height)) * tw;
    T* HWY_RESTRICT o = out + static_cast<std::ptrdiff_t>(y) * tw;
    int c = 0;
    for (; c + n <= tw; c += n) {
      auto acc = half;
      for (int k = 0; k < taps.size; ++k) acc = hn::Add(acc, hn::Mul(hn::Set(du, w[k]), hn::LoadU(du, src[k] + c)));
      // < 2^16 after the shift: the signed demotion cannot saturate.
      hn::StoreU(hn::DemoteTo(dt, hn::BitCast(di, hn::ShiftRight<kernels::kBlurFinalShift>(acc))), dt, o + c);
    }
    for (; c < tw; ++c) {
      auto column = [&](int yy) { return mid[static_cast<std::ptrdiff_t>(yy) * tw + c]; };
      o[c] = static_cast<T>(kernels::blur_v(column, y, height, w, taps.size));
    }
  }
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
  // bound >= min_contrast and bound != 0, as bound > floor (bound < 2^16).
  const std::int32_t floor = p.min_contrast == 0 ? 0 : (p.min_contrast > 65536u ? 65535 : static_cast<std::int32_t>(p.min_contrast) - 1);
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

void BlurTile8(const std::uint8_t* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1, const kernels::GaussianTaps& taps,
               std::uint32_t* mid, std::uint8_t* out) {
  blur_tile_t(frame, width, height, stride, x0, x1, taps, mid, out);
}
void BlurTile16(const std::uint16_t* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1, const kernels::GaussianTaps& taps,
                std::uint32_t* mid, std::uint16_t* out) {
  blur_tile_t(frame, width, height, stride, x0, x1, taps, mid, out);
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

std::string target_name(std::int64_t target) { return hwy::TargetName(target); }
std::string target_name() { return target_name(HWY_DYNAMIC_DISPATCH(Target)()); }
std::vector<std::int64_t> available_targets() { return hwy::SupportedAndGeneratedTargets(); }
void force_target(std::int64_t target) { hwy::SetSupportedTargetsForTest(target); }

}  // namespace stripeline::cpu::simd
#endif
