#pragma once
// CPU loops over the shared integer kernels (kernels/gaussian.h,
// kernels/column_extract.h). A "tile" is one frame's columns [x0, x1): the
// unit the CPU backend parallelises over, small enough to stay in cache.
// The scalar loops here are the oracle of the SIMD ones the backend runs
// (stages/cpu/simd_chain.h: blur, the adaptive method's column pass).
#include <cstddef>
#include <cstdint>

#include "core/fixed_point.h"
#include "core/profile.h"
#include "core/types.h"
#include "kernels/column_extract.h"
#include "kernels/gaussian.h"
#include "stages/cpu/simd_chain.h"

namespace stripeline::cpu {

// Bytes of one worker thread's scratch of the CPU backend for this layout
// (with the line model's back-pointers when line_candidates > 0): what the
// memory budget counts per thread (stages/chain.cpp, lane_memory).
std::size_t thread_scratch_bytes(const BatchLayout& l, int line_candidates);

// Blur columns [x0, x1) of one frame (width x height, row stride `stride`)
// into `out` (height rows of x1-x0 pixels). `mid` is scratch of
// height*(x1-x0) values, `acc` of x1-x0. With taps.size == 0 it copies.
//
// Same integer arithmetic as kernels::blur_h / blur_v, arranged so that the
// inner loops run along a row and vectorise: sums are exact, so the order of
// accumulation cannot change the result.
template <class T>
void blur_tile(const T* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1,
               const kernels::GaussianTaps& taps, std::uint32_t* mid, std::uint32_t* __restrict acc, T* out) {
  const int tw = x1 - x0;
  if (taps.size == 0) {
    for (int y = 0; y < height; ++y)
      for (int x = x0; x < x1; ++x) out[y * tw + (x - x0)] = frame[y * stride + x];
    return;
  }
  const int r = taps.radius();
  const std::uint32_t* w = taps.w.data();
  // Columns whose whole horizontal window lies inside the row.
  const int in0 = x0 > r ? x0 : (r < x1 ? r : x1);
  const int in1 = x1 < width - r ? x1 : (width - r > in0 ? width - r : in0);
  for (int y = 0; y < height; ++y) {
    const T* row = frame + y * stride;
    std::uint32_t* __restrict m = mid + static_cast<std::ptrdiff_t>(y) * tw - x0;  // m[x] for x in [x0, x1)
    if (!taps.across) {  // along the columns only
      for (int x = x0; x < x1; ++x) m[x] = kernels::blur_h_none(row[x]);
      continue;
    }
    auto pixel = [row](int x) { return row[x]; };
    for (int x = x0; x < in0; ++x) m[x] = kernels::blur_h(pixel, x, width, w, taps.size);
    for (int x = in1; x < x1; ++x) m[x] = kernels::blur_h(pixel, x, width, w, taps.size);
    if (in1 > in0) {
      for (int x = in0; x < in1; ++x) m[x] = 0;
      for (int k = 0; k < taps.size; ++k) {
        const std::uint32_t wk = w[k];
        const T* __restrict src = row + (k - r);
        for (int x = in0; x < in1; ++x) m[x] += wk * static_cast<std::uint32_t>(src[x]);
      }
      for (int x = in0; x < in1; ++x) m[x] = (m[x] + (1u << (kernels::kBlurMidShift - 1))) >> kernels::kBlurMidShift;
    }
  }
  for (int y = 0; y < height; ++y) {
    for (int c = 0; c < tw; ++c) acc[c] = 1u << (kernels::kBlurFinalShift - 1);
    for (int k = 0; k < taps.size; ++k) {
      const std::uint32_t wk = w[k];
      const std::uint32_t* __restrict src = mid + static_cast<std::ptrdiff_t>(kernels::clamp_index(y + k - r, height)) * tw;
      for (int c = 0; c < tw; ++c) acc[c] += wk * src[c];
    }
    T* __restrict o = out + static_cast<std::ptrdiff_t>(y) * tw;
    for (int c = 0; c < tw; ++c) o[c] = static_cast<T>(acc[c] >> kernels::kBlurFinalShift);
  }
}

// The outputs of columns [x0, x1) of frame `f`: every slot cleared, then
// `extract(x, emit)` finds the column's stripes (emit(slot, position, value,
// width, contrast)) and returns how many it found. With `clear` false the
// slots no stripe was emitted into keep what they held: for a batch read
// only up to each column's count (the line model's candidates), it saves
// writing the slots x columns x frames of the whole batch.
template <class Extract>
void extract_columns(int x0, int x1, int f, ProfileBatch& out, const Extract& extract, bool clear = true) {
  std::int32_t* position = out.position;
  std::uint16_t* intensity = out.intensity;
  std::uint16_t* stripe_width = out.stripe_width;
  std::uint16_t* quality = out.quality;
  std::uint8_t* count = out.count;
  for (int x = x0; x < x1; ++x) {
    for (int s = 0; clear && s < out.slots; ++s) {
      const std::size_t i = out.slot_index(f, s, x);
      position[i] = kNoPeak;
      intensity[i] = 0;
      stripe_width[i] = 0;
      quality[i] = 0;
    }
    auto emit = [&](int slot, std::int32_t pos, std::uint32_t value, std::uint32_t width, std::uint32_t contrast) {
      const std::size_t i = out.slot_index(f, slot, x);
      position[i] = pos;
      intensity[i] = static_cast<std::uint16_t>(value);
      stripe_width[i] = static_cast<std::uint16_t>(width);
      quality[i] = static_cast<std::uint16_t>(contrast > 65535u ? 65535u : contrast);
    };
    const int found = extract(x, emit);
    count[static_cast<std::size_t>(f) * out.width + x] = static_cast<std::uint8_t>(found > 255 ? 255 : found);
  }
}

// Extract columns [x0, x1) of frame `f` from pixels addressed by `pixel(x, y)`
// (blurred) and `raw(x, y)` (unblurred) into the profile batch.
template <class Pixel, class Raw>
void extract_tile(const Pixel& pixel, const Raw& raw, int height, int x0, int x1, int f, const kernels::ColumnParams& p, ProfileBatch& out) {
  extract_columns(x0, x1, f, out, [&](int x, const auto& emit) {
    auto column = [&pixel, x](int y) -> std::uint32_t { return pixel(x, y); };
    auto raw_column = [&raw, x](int y) -> std::uint32_t { return raw(x, y); };
    return kernels::extract_column(column, raw_column, height, p, emit);
  });
}

// extract_tile for method adaptive (height >= 2), from the columns'
// summaries `s` that simd::summarise_tile made of the same pixels (column
// x0 + c in lane c): kernels::column_adaptive_scan, candidates read from the
// bits, the brightest row's stripe and centre from s.stripes and s.centres
// where given. Same bits as extract_tile (`clear`: as extract_columns).
// adaptive::evaluate is a function of the row alone, so a stripe the scan
// evaluated is not evaluated again when it is emitted (selection `all`).
template <class Pixel, class Raw>
void extract_tile_adaptive(const Pixel& pixel, const Raw& raw, int height, int x0, int x1, int f, const kernels::ColumnParams& p,
                           const simd::TileSummary& s, ProfileBatch& out, bool clear = true) {
  namespace ad = kernels::adaptive;
  const int tw = x1 - x0;
  // The valid stripes of a column the scan evaluated (other than the
  // brightest row's), for selection `all`'s emits.
  constexpr int kMemo = kernels::kMaxAdaptivePeaks;
  ad::Stripe memo[kMemo];
  const int memo_size = p.selection == kernels::SpotSelection::All ? kMemo : 0;
  const bool only_candidate_rows = p.selection == kernels::SpotSelection::All || p.selection == kernels::SpotSelection::Strongest;
  extract_columns(x0, x1, f, out, [&](int x, const auto& emit) {
    auto column = [&pixel, x](int y) -> std::uint32_t { return pixel(x, y); };
    auto raw_column = [&raw, x](int y) -> std::uint32_t { return raw(x, y); };
    const int c = x - x0;
    ad::ColumnSummary summary;
    summary.lowest = s.lowest[c];
    summary.tv = s.tv[c];
    summary.brightest = s.brightest[c];
    summary.top = s.top[c];
    const bool cached = s.stripes && simd::brightest_evaluated(summary, p);
    auto next = [&s, tw, c, height](int y) { return simd::next_candidate(s.candidates, tw, c, y, height); };
    // The brightest row the column's only candidate (most columns): the
    // scan (selection strongest or all) would evaluate that row alone and
    // emit its stripe when valid, at its centre; read both.
    if (cached && s.centres && only_candidate_rows && simd::only_candidate(s.candidates, tw, c, summary.brightest, height)) {
      if (!s.stripes[c].valid) return 0;
      ad::emit_stripe(s.stripes[c], s.centres[c], 0, emit);
      return 1;
    }
    int memos = 0;
    auto evaluate = [&](int y) {
      if (cached && y == summary.brightest) return s.stripes[c];
      for (int k = memos - 1; k >= 0; --k)
        if (memo[k].peak == y) return memo[k];
      const ad::Stripe st = ad::evaluate(column, raw_column, height, y, p, summary.tv);
      if (st.valid && memos < memo_size) memo[memos++] = st;
      return st;
    };
    auto centre = [&](const ad::Stripe& st) {
      return s.centres && cached && st.peak == summary.brightest ? s.centres[c] : ad::centre(column, raw_column, height, st, p);
    };
    return kernels::column_adaptive_scan(column, height, p, emit, summary, next, evaluate, centre);
  }, clear);
}

}  // namespace stripeline::cpu
