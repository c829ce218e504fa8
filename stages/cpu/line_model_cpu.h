#pragma once
// The line model on the CPU backend: kernels::line_model_frame's solves and
// trace-backs, the same bits, walked faster. The kernel (the oracle, and what
// the CUDA kernel runs per frame) reloads each column's candidates from the
// slot arrays in every pass and solves every pass from column 0; here
//  - each column's candidates are loaded once per frame into a compact list
//    (only the filled slots, kernels::line_model::candidate of each);
//  - every column's scores are kept, so a pass after a drop solves again
//    only from the first column whose exclusion mask changed: the columns
//    before it see the same candidates, masks and predecessors, hence the
//    same scores and back-pointers (integer arithmetic, no rounding).
// The column step (advance_column), the final state and the trace-back
// (which drops short segments and writes the output) are the kernel's own
// functions. tests/test_line_model.cpp compares both on many frames.
//
// Thread-safety: the scratch belongs to one thread; the view's frames are
// written by one call each.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/line_model.h"

namespace stripeline::cpu {

// One frame's working set of the walk, sized once (reserve) and reused.
struct LineModelScratch {
  std::vector<kernels::line_model::Candidate> candidates;  // column x's at [first[x], first[x + 1])
  std::vector<std::int32_t> first;                          // width + 1
  std::vector<std::int64_t> score;                          // (width + 1) x (K + 1): before column 0, then each column
  std::vector<std::uint8_t> mask;                           // the exclusion masks the last solve saw

  void reserve(int candidates_per_column, int width) {
    const std::size_t w = static_cast<std::size_t>(width > 0 ? width : 0);
    const std::size_t k = static_cast<std::size_t>(candidates_per_column > 0 ? candidates_per_column : 0);
    candidates.resize(w * k);
    first.resize(w + 1);
    score.resize((w + 1) * (k + 1));
    mask.resize(w);
  }
  std::size_t bytes() const {
    return candidates.size() * sizeof(candidates[0]) + first.size() * sizeof(first[0]) + score.size() * sizeof(score[0]) + mask.size();
  }
};

// kernels::line_model_frame(v, p, f), the same output and scratch bytes.
// `s` reserved for at least (p.candidates, v.width); allocates nothing.
inline void line_model_frame(const kernels::LineModelView& v, const kernels::LineModelParams& p, int f, LineModelScratch& s) {
  namespace lm = kernels::line_model;
  if (v.width <= 0) return;
  const int k1 = p.candidates + 1;
  // The candidates, once.
  int count = 0;
  for (int x = 0; x < v.width; ++x) {
    s.first[x] = count;
    count += lm::load_candidates(v, p, f, x, s.candidates.data() + count);
  }
  s.first[v.width] = count;
  auto column_score = [&](int x) { return s.score.data() + static_cast<std::size_t>(x + 1) * k1; };  // x = -1: before column 0
  column_score(-1)[0] = 0;  // "no line", nothing else
  for (int x = 0; x < v.width; ++x) lm::excluded_at(v, p, f, x) = 0;
  int from = 0;  // the first column whose scores are not yet those of the current masks
  for (int pass = 0; pass < kernels::kLinePasses; ++pass) {
    for (int x = from; x < v.width; ++x) {
      const int prev_first = x > 0 ? s.first[x - 1] : 0;
      const std::uint8_t excluded = lm::excluded_at(v, p, f, x);
      s.mask[x] = excluded;
      lm::advance_column(s.candidates.data() + prev_first, s.first[x] - prev_first, column_score(x - 1), s.candidates.data() + s.first[x],
                         s.first[x + 1] - s.first[x], excluded, p, column_score(x), &lm::back_at(v, p, f, x, 0), v.back_stride);
    }
    const int last = v.width - 1;
    if (!lm::trace_back(v, p, f, lm::final_state(column_score(last), s.first[last + 1] - s.first[last]))) break;
    from = v.width;
    for (int x = 0; x < v.width; ++x)
      if (lm::excluded_at(v, p, f, x) != s.mask[x]) {
        from = x;
        break;
      }
  }
}

}  // namespace stripeline::cpu
