#pragma once
// The line model: per frame, the laser line chosen as a path across the
// columns instead of a peak per column (docs/extraction.md, "Line model";
// issue 21). Extraction keeps up to K candidates per column (the adaptive
// method with selection `all`); this step chooses, by dynamic programming
// over the columns of the frame (Viterbi), at most one of them per column,
// and writes it as the column's single detection.
//
// States of column x: 0 = "no line here", s = 1..n = the column's candidate
// in slot s-1 (n = min(count, K)). The score of a path is the sum of
//   + strength(c) for every chosen candidate c: its contrast in 8-bit units
//     (quality >> (bits - 8), Q8), times line_width / width when the
//     candidate's run is wider than line_width (broad bright bands of a
//     print or a texture are no laser line);
//   - link(a, b) between chosen candidates of neighbouring columns:
//       jump_cost x (|dy| - step)+  (rows beyond the free step)
//     + width_cost x |dw|            (pixels of run width)
//     + intensity_cost x |di|        (8-bit levels of peak intensity),
//     or segment_cost when that is less (a break: the line ends and a new
//     segment starts, as at a step of the surface);
//   - segment_cost for every segment started after a "no line" column (or at
//     column 0).
// "No line" scores 0, so a stretch of candidates is only worth taking when
// its strength pays for its start; where the data holds no candidate the
// path passes through "no line" (a break the data allows). The best path is
// traced back, and every segment (a run of chosen columns without a break)
// shorter than min_length columns is dropped: its candidates are excluded
// and the frame is solved again (at most kLinePasses times in all), so a
// short bright detour off the line gives the line back rather than a hole;
// what the last pass drops stays empty.
//
// Integer arithmetic only (int64 scores, Q8 = 1/256 of an 8-bit level), ties
// broken by the lowest state, so the CPU loop and the CUDA kernel
// (kernels/cuda/line_model_kernels.h) give the same bits: both call
// line_model_frame(). The back-pointers are scratch passed in as a view, one
// byte per (column, state): the predecessor state in the low 4 bits, bit 7
// set when the link was a break; and one byte per column more: the mask of
// the candidates excluded by an earlier pass.
#include <cstddef>
#include <cstdint>

#include "core/fixed_point.h"

namespace stripeline::kernels {

inline constexpr int kMaxLineCandidates = 8;  // K: states per column are K + 1 (fits the 4-bit back-pointer and the 8-bit mask)
inline constexpr int kLinePasses = 3;         // solves per frame at most (each after dropping short segments)

struct LineModelParams {
  std::int32_t candidates = 0;          // K, slots per column of the input; 0 = off
  std::int32_t strength_shift = 0;      // pixel units -> 8-bit units: significant bits - 8
  std::int32_t line_width = 8;          // px: a wider candidate counts its contrast x line_width / width
  std::int32_t step_q8 = 512;           // free change of position per column, 1/256 px
  std::int32_t jump_cost_q8 = 1024;     // Q8 levels per px beyond the free step
  std::int32_t width_cost_q8 = 512;     // Q8 levels per px of run width change
  std::int32_t intensity_cost_q8 = 0;   // Q8 levels per 8-bit level of intensity change (a fraction x 256)
  std::int32_t segment_cost_q8 = 16384; // Q8 levels to start a segment (and the cost of a break)
  std::int32_t min_length = 8;          // columns: shorter segments are dropped
  bool operator==(const LineModelParams&) const = default;
};

// In: the candidates, K slots per column ([frame][slot][column], ProfileLayout
// with slots = K) and their counts. Out: single-slot profiles
// ([frame][column]), every element written. Scratch of the CPU loop: the
// back-pointers, element (frame f, column x, state s) at
// ((x * (K + 2) + s) * back_stride + f), s = K + 1 the column's exclusion
// mask (back_stride 1 on the CPU backend: one frame's scratch per task).
// The CUDA kernel lays its own scratch out (line_model_kernels.h).
struct LineModelArrays {
  std::int32_t* position = nullptr;
  std::uint16_t* intensity = nullptr;
  std::uint16_t* stripe_width = nullptr;
  std::uint16_t* quality = nullptr;
  std::uint8_t* count = nullptr;
};
struct LineModelView {
  LineModelArrays in;   // read only
  LineModelArrays out;  // every element of the frames written
  std::uint8_t* back = nullptr;
  std::size_t back_stride = 1;
  int frames = 0, width = 0;
};

// Scratch bytes of the back-pointers for `frames` frames of `width` columns.
inline std::size_t line_model_scratch_bytes(int candidates, int width, int frames) {
  return static_cast<std::size_t>(candidates + 2) * static_cast<std::size_t>(width) * static_cast<std::size_t>(frames);
}

namespace line_model {

// Loops over a column's candidates or states run to the constant bound
// (K or K + 1) and stop at the column's own count, and the GPU unrolls
// them: every array index is then a constant, so a lane's candidates and
// scores live in registers, not in local memory (on the block kernel, whose
// shared memory leaves the L1 cache little room, local memory went to L2).
#if defined(__CUDA_ARCH__)
#define STRIPELINE_UNROLL _Pragma("unroll")
#else
#define STRIPELINE_UNROLL
#endif

inline constexpr std::int64_t kNone = -(std::int64_t{1} << 60);  // an unreachable state's score
inline constexpr std::uint8_t kBreak = 0x80;

// 32-bit fields (strength and level are at most 65535 << 8): four registers
// a candidate on the GPU. Sums and products of them are taken in 64 bits.
struct Candidate {
  std::int32_t position = 0, width = 0;
  std::int32_t strength = 0, level = 0;  // Q8 8-bit levels
};

STRIPELINE_HD std::int64_t abs64(std::int64_t v) { return v < 0 ? -v : v; }

// Element (frame f, slot, column x) of the candidate arrays.
STRIPELINE_HD std::size_t candidate_index(const LineModelView& v, const LineModelParams& p, int f, int slot, int x) {
  return (static_cast<std::size_t>(f) * p.candidates + slot) * v.width + x;
}

// A candidate's fields as stored, read apart from the arithmetic on them so
// a GPU lane can issue many columns' loads before it waits for any.
struct RawCandidate {
  std::int32_t position = 0;
  std::uint16_t width = 0, quality = 0, intensity = 0;
};
STRIPELINE_HD RawCandidate raw_candidate(const LineModelView& v, const LineModelParams& p, int f, int slot, int x) {
  const std::size_t i = candidate_index(v, p, f, slot, x);
  return {v.in.position[i], v.in.stripe_width[i], v.in.quality[i], v.in.intensity[i]};
}
STRIPELINE_HD Candidate make_candidate(const RawCandidate& r, const LineModelParams& p) {
  Candidate c;
  c.position = r.position;
  c.width = r.width;
  std::int64_t strength = (static_cast<std::int64_t>(r.quality) << 8) >> p.strength_shift;
  if (c.width > p.line_width) {
    // The same quotient in 32 bits where the product fits (a strength is
    // below 2^24 for any shift >= 0; the 64-bit division was a long
    // subroutine in the GPU's staging of every column).
    if (strength >= 0 && strength < (std::int64_t{1} << 24) && p.line_width >= 0 && p.line_width < 256)
      strength = static_cast<std::uint32_t>(strength) * static_cast<std::uint32_t>(p.line_width) / static_cast<std::uint32_t>(c.width);
    else
      strength = strength * p.line_width / c.width;
  }
  c.strength = static_cast<std::int32_t>(strength);
  c.level = static_cast<std::int32_t>((static_cast<std::int64_t>(r.intensity) << 8) >> p.strength_shift);
  return c;
}
STRIPELINE_HD Candidate candidate(const LineModelView& v, const LineModelParams& p, int f, int slot, int x) {
  return make_candidate(raw_candidate(v, p, f, slot, x), p);
}

// The cost of the link a -> b between neighbouring columns (before the cap
// at segment_cost).
STRIPELINE_HD std::int64_t link_cost(const Candidate& a, const Candidate& b, const LineModelParams& p) {
  const std::int64_t dy = abs64(static_cast<std::int64_t>(b.position) - a.position);
  const std::int64_t excess = dy > p.step_q8 ? dy - p.step_q8 : 0;
  return ((excess * p.jump_cost_q8) >> 8) + abs64(static_cast<std::int64_t>(b.width) - a.width) * p.width_cost_q8 +
         ((abs64(static_cast<std::int64_t>(b.level) - a.level) * p.intensity_cost_q8) >> 8);
}

// The link cost in 32 bits, for the GPU's speculative walks
// (kernels/line_model_lanes.h: walk_columns_narrow), whose 64-bit
// arithmetic was most of their instructions. Exact where it matters: the
// walk only needs a link's cost when it is at most segment_cost (beyond, a
// break costs segment_cost), and every term is non-negative, so each term's
// input is clamped where that term alone already exceeds segment_cost; below
// the clamps the products fit 32 bits and equal link_cost's. `ok` only for
// parameters that bound the terms so (any sane settings; the walks keep the
// 64-bit arithmetic otherwise).
struct NarrowLink {
  bool ok = false;
  std::uint32_t step = 0, jump = 0, width = 0, intensity = 0;  // the costs, Q8
  std::uint32_t excess_cap = 0, width_cap = 0, level_cap = 0;   // each term's input clamped here
  std::int32_t segment = 0;
};
inline constexpr std::int32_t kNarrowSegmentBound = 1 << 23;  // segment_cost_q8 below this (32768 8-bit levels)
inline constexpr std::int32_t kNarrowCostBound = 1 << 28;     // jump, width and intensity costs at most this
STRIPELINE_HD NarrowLink narrow_link(const LineModelParams& p) {
  NarrowLink n;
  const auto in = [](std::int32_t v, std::int32_t bound) { return v >= 0 && v <= bound; };
  if (!in(p.step_q8, 0x7FFFFFFF) || !in(p.jump_cost_q8, kNarrowCostBound) || !in(p.width_cost_q8, kNarrowCostBound) ||
      !in(p.intensity_cost_q8, kNarrowCostBound) || !in(p.segment_cost_q8, kNarrowSegmentBound - 1) || p.strength_shift < 0 || p.line_width < 0)
    return n;
  const auto seg = static_cast<std::uint32_t>(p.segment_cost_q8);
  n.step = static_cast<std::uint32_t>(p.step_q8);
  n.jump = static_cast<std::uint32_t>(p.jump_cost_q8);
  n.width = static_cast<std::uint32_t>(p.width_cost_q8);
  n.intensity = static_cast<std::uint32_t>(p.intensity_cost_q8);
  // (cap x cost) >> 8 > seg, and cap x cost < 2^31 + 2^28: no overflow.
  n.excess_cap = n.jump == 0 ? 0 : ((seg + 1) << 8) / n.jump + 1;
  n.width_cap = n.width == 0 ? 0 : seg / n.width + 1;
  n.level_cap = n.intensity == 0 ? 0 : ((seg + 1) << 8) / n.intensity + 1;
  n.segment = p.segment_cost_q8;
  n.ok = true;
  return n;
}
STRIPELINE_HD std::uint32_t absolute_difference(std::int32_t a, std::int32_t b) {
  return a > b ? static_cast<std::uint32_t>(a) - static_cast<std::uint32_t>(b) : static_cast<std::uint32_t>(b) - static_cast<std::uint32_t>(a);
}
STRIPELINE_HD std::uint32_t clamp_to(std::uint32_t v, std::uint32_t cap) { return v < cap ? v : cap; }
// link_cost(a, b, p) where that is at most segment_cost; above it otherwise.
STRIPELINE_HD std::uint32_t narrow_link_cost(const Candidate& a, const Candidate& b, const NarrowLink& n) {
  const std::uint32_t dy = absolute_difference(b.position, a.position);
  const std::uint32_t excess = dy > n.step ? dy - n.step : 0;
  return ((clamp_to(excess, n.excess_cap) * n.jump) >> 8) + clamp_to(absolute_difference(b.width, a.width), n.width_cap) * n.width +
         ((clamp_to(absolute_difference(b.level, a.level), n.level_cap) * n.intensity) >> 8);
}

STRIPELINE_HD std::uint8_t& back_at(const LineModelView& v, const LineModelParams& p, int f, int x, int s) {
  return v.back[(static_cast<std::size_t>(x) * (p.candidates + 2) + s) * v.back_stride + f];
}
// The candidates of column x excluded by an earlier pass (bit s-1 for state s).
STRIPELINE_HD std::uint8_t& excluded_at(const LineModelView& v, const LineModelParams& p, int f, int x) {
  return back_at(v, p, f, x, p.candidates + 1);
}

STRIPELINE_HD int slots_filled(const LineModelView& v, const LineModelParams& p, int f, int x) {
  const int c = v.in.count[static_cast<std::size_t>(f) * v.width + x];
  return c < p.candidates ? c : p.candidates;
}

// Column x's candidates into c; returns their number.
STRIPELINE_HD int load_candidates(const LineModelView& v, const LineModelParams& p, int f, int x, Candidate* c) {
  const int n = slots_filled(v, p, f, x);
  STRIPELINE_UNROLL
  for (int s = 0; s < kMaxLineCandidates; ++s) {
    if (s >= n) break;
    c[s] = candidate(v, p, f, s, x);
  }
  return n;
}

// Column x of frame f's output: candidate state s (1..K) of the input, or
// empty (s = 0). Read (chosen_output) and written (store_output) apart, so a
// GPU lane can read several columns before it writes any.
struct ColumnOutput {
  std::int32_t position = kNoPeak;
  std::uint16_t intensity = 0, stripe_width = 0, quality = 0;
  std::uint8_t count = 0;
};
STRIPELINE_HD ColumnOutput chosen_output(const LineModelView& v, const LineModelParams& p, int f, int x, int s) {
  ColumnOutput o;
  if (s == 0) return o;
  const std::size_t i = candidate_index(v, p, f, s - 1, x);
  o.position = v.in.position[i];
  o.intensity = v.in.intensity[i];
  o.stripe_width = v.in.stripe_width[i];
  o.quality = v.in.quality[i];
  o.count = 1;
  return o;
}
STRIPELINE_HD void store_output(const LineModelView& v, int f, int x, const ColumnOutput& c) {
  const std::size_t o = static_cast<std::size_t>(f) * v.width + x;
  v.out.position[o] = c.position;
  v.out.intensity[o] = c.intensity;
  v.out.stripe_width[o] = c.stripe_width;
  v.out.quality[o] = c.quality;
  v.out.count[o] = c.count;
}
STRIPELINE_HD void write_column(const LineModelView& v, const LineModelParams& p, int f, int x, int s) {
  store_output(v, f, x, chosen_output(v, p, f, x, s));
}

// The best way into "no line" at a column: the best of the previous
// column's states, the lowest on ties (a line may end anywhere).
STRIPELINE_HD void enter_none(const std::int64_t* prev, int prev_n, std::int64_t& score, std::uint8_t& from) {
  int arg = 0;
  std::int64_t best = prev[0];
  STRIPELINE_UNROLL
  for (int a = 1; a <= kMaxLineCandidates; ++a) {
    if (a > prev_n) break;
    if (prev[a] > best) best = prev[a], arg = a;
  }
  score = best;
  from = static_cast<std::uint8_t>(arg);
}

// The best way into candidate c (not excluded): from "no line" (a new
// segment) or from one of the previous column's candidates (a link, or a
// break where the link costs more), the lowest state on ties; plus c's
// strength. The CPU's column loop and each lane of the CUDA kernel call it.
STRIPELINE_HD void enter_candidate(const Candidate& c, const Candidate* prev_c, int prev_n, const std::int64_t* prev, const LineModelParams& p,
                                   std::int64_t& score, std::uint8_t& from) {
  std::int64_t top = prev[0] - p.segment_cost_q8;
  std::uint8_t arg = 0;
  STRIPELINE_UNROLL
  for (int a = 1; a <= kMaxLineCandidates; ++a) {
    if (a > prev_n) break;
    const std::int64_t link = link_cost(prev_c[a - 1], c, p);
    const bool brk = link > p.segment_cost_q8;
    const std::int64_t s = prev[a] - (brk ? p.segment_cost_q8 : link);
    if (s > top) top = s, arg = static_cast<std::uint8_t>(a | (brk ? kBreak : 0));
  }
  score = top + c.strength;
  from = arg;
}

// The best state of the last column (the lowest on ties).
STRIPELINE_HD int final_state(const std::int64_t* score, int n) {
  int state = 0;
  std::int64_t best = score[0];
  STRIPELINE_UNROLL
  for (int s = 1; s <= kMaxLineCandidates; ++s) {
    if (s > n) break;
    if (score[s] > best) best = score[s], state = s;
  }
  return state;
}

// One column of the forward pass: the scores `cur` of a column's states
// from the previous column's, and (when `back` is not null) their
// back-pointers, state s's at back[s * back_stride]. States in `excluded`
// (bit s-1) are unreachable (score kNone): never a predecessor nor chosen,
// since "no line" always scores more.
STRIPELINE_HD void advance_column(const Candidate* prev_c, int prev_n, const std::int64_t* prev, const Candidate* cur_c, int cur_n, std::uint8_t excluded,
                                  const LineModelParams& p, std::int64_t* cur, std::uint8_t* back, std::size_t back_stride) {
  std::uint8_t from = 0;
  enter_none(prev, prev_n, cur[0], from);
  if (back != nullptr) back[0] = from;
  STRIPELINE_UNROLL
  for (int b = 1; b <= kMaxLineCandidates; ++b) {
    if (b > cur_n) break;
    if ((excluded >> (b - 1)) & 1) {
      cur[b] = kNone;
      from = 0;
    } else {
      enter_candidate(cur_c[b - 1], prev_c, prev_n, prev, p, cur[b], from);
    }
    if (back != nullptr) back[static_cast<std::size_t>(b) * back_stride] = from;
  }
}

// One solve of frame f: the forward pass (pass 0 clears the exclusion
// masks), the best final state (the lowest on ties).
STRIPELINE_HD int solve_frame(const LineModelView& v, const LineModelParams& p, int f, int pass) {
  Candidate cand[2][kMaxLineCandidates];
  std::int64_t score[2][kMaxLineCandidates + 1];
  int n[2] = {0, 0};
  score[1][0] = 0;  // before column 0: "no line", nothing else
  for (int x = 0; x < v.width; ++x) {
    const int cur = x & 1, prev = cur ^ 1;
    n[cur] = load_candidates(v, p, f, x, cand[cur]);
    if (pass == 0) excluded_at(v, p, f, x) = 0;
    advance_column(cand[prev], n[prev], score[prev], cand[cur], n[cur], excluded_at(v, p, f, x), p, score[cur], &back_at(v, p, f, x, 0), v.back_stride);
  }
  const int last = (v.width - 1) & 1;
  return final_state(score[last], n[last]);
}

// Back from the last column in `state`: every column of the frame written,
// each segment shorter than min_length emptied and its candidates excluded.
// Returns whether one was.
STRIPELINE_HD bool trace_back(const LineModelView& v, const LineModelParams& p, int f, int state) {
  bool dropped = false;
  int run = 0, end_state = 0;  // the segment being traced: its columns so far, and its state at its last column (x + run - 1)
  for (int x = v.width - 1; x >= 0; --x) {
    write_column(v, p, f, x, state);
    const std::uint8_t b = back_at(v, p, f, x, state);
    const int from = b & 0x0F;
    if (state != 0) {
      if (run++ == 0) end_state = state;
      // The segment starts here when it was entered from "no line", through a break, or at column 0.
      if (from == 0 || (b & kBreak) != 0 || x == 0) {
        if (run < p.min_length) {
          int s = end_state;
          for (int k = x + run - 1; k >= x; --k) {
            write_column(v, p, f, k, 0);
            excluded_at(v, p, f, k) |= static_cast<std::uint8_t>(1u << (s - 1));
            s = back_at(v, p, f, k, s) & 0x0F;
          }
          dropped = true;
        }
        run = 0;
      }
    }
    state = from;
  }
  return dropped;
}

}  // namespace line_model

// The whole step for frame f: solve, trace back; while a short segment was
// dropped, exclude it and solve again (kLinePasses solves at most). Every
// output element of the frame written.
STRIPELINE_HD void line_model_frame(const LineModelView& v, const LineModelParams& p, int f) {
  if (v.width <= 0) return;
  for (int pass = 0; pass < kLinePasses; ++pass)
    if (!line_model::trace_back(v, p, f, line_model::solve_frame(v, p, f, pass))) break;
}

// Frames [first, last) on the CPU (the backend and the oracle).
inline void line_model_cpu(const LineModelView& v, const LineModelParams& p, int first, int last) {
  for (int f = first; f < last; ++f) line_model_frame(v, p, f);
}

}  // namespace stripeline::kernels
