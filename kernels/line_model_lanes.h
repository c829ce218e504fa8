#pragma once
// The line model (kernels/line_model.h) solved by `lanes` cooperating
// threads per frame: the CUDA kernel's warp (kernels/cuda/line_model_kernels.cu)
// and, lane after lane, the test that checks this decomposition on the CPU
// against line_model_frame(), the oracle.
//
// Why: the oracle walks the columns one after the other; on a GPU one frame
// alone then takes ~1.3 ms (2048 dependent steps), far from what a live path
// at 20 kHz allows. The forward pass is a (max, +) product of one matrix per
// column, and that product is associative: each lane reduces its chunk of
// columns to one transfer matrix (its rows started from each state of the
// column before the chunk), the chunks' entering scores follow by a short
// scan over the lanes, and each lane then walks its own chunk again from
// its exact entering scores with the oracle's column function, so scores
// and back-pointers are the oracle's bit for bit (integers: max and + are
// exact in any order). That exact forward pass (phases 1 to 3) is the warp
// kernel's, and the block kernel's fallback: the block kernel first tries
// the speculative one (phases S1 to S4 below), which walks each chunk about
// once instead of once per state. The trace back and the minimum segment
// length are split the same way: per chunk, then a scan over the lanes,
// then per chunk.
//
// Each phase is a function of one lane; between phases every lane's writes
// must be visible to the others (the kernel's __syncwarp). Phases marked
// "one lane" run on lane 0 alone; "per state" ones on lanes 0..K.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/line_model.h"

#if defined(__CUDACC__)
#include <cuda_pipeline.h>  // lane_take_staged's asynchronous copies
#endif

namespace stripeline::kernels {

inline constexpr int kLineStates = kMaxLineCandidates + 1;
// One frame's scratch. Column arrays: `width` elements (back: width x (K + 1)).
// The CUDA kernels keep the fixed region (line_lane_layout) in shared memory.
struct LineModelLaneScratch {
  std::uint8_t* back = nullptr;       // [column][state]: predecessor | kBreak
  std::uint8_t* mask = nullptr;       // [column]: candidates excluded by an earlier pass (bit s - 1)
  std::uint8_t* chosen = nullptr;     // [column]: the chosen state | kSegmentStart
  std::uint16_t* run = nullptr;       // [column]: columns of its segment up to it (saturated)
  std::int64_t* transfer = nullptr;   // [lane][state in][state out]: best score through the chunk
  std::int64_t* entering = nullptr;   // [lane + 1][state]: scores at the column before the chunk ([lanes]: at the last column)
  std::uint8_t* n_last = nullptr;     // [lane]: candidates of the chunk's last column
  std::uint8_t* first = nullptr;      // [lane][state]: the state at the chunk's first column on the path ending in `state`
  std::uint8_t* last = nullptr;       // [lane]: the chosen state at the chunk's last column
  std::uint8_t* open = nullptr;       // [lane]: kOpen* bits
  std::uint16_t* tail = nullptr;      // [lane]: segment columns up to the chunk's last, counted from its first column only
  std::uint16_t* head = nullptr;      // [lane]: segment columns from the chunk's first on, counted to its last column only
  std::uint16_t* run_in = nullptr;    // [lane + 1]: segment columns up to the chunk's last column (run_in[l]: before chunk l)
  std::uint16_t* run_out = nullptr;   // [lane + 1]: segment columns from the chunk's first column on
  std::uint8_t* dropped = nullptr;    // [lane]: a segment was dropped in the chunk
  // The speculative forward pass's (sharing the transfer matrices' bytes,
  // which only its fallback uses):
  std::int64_t* spec_start = nullptr;  // [lane][state]: the scores the lane's walk of its chunk started from
  line_model::Candidate* staged = nullptr;         // [column][slot < staged_slots]: the first candidates of every column
  std::uint16_t* staged_count_mask = nullptr;  // [column]: its candidates (low byte, at most K) and its mask (high byte), one load for the walks
  // The link table (null where it does not fit): for the speculative walks'
  // steps between columns of at most two candidates, what each step would
  // compute from the staged candidates, computed once a pass for all of them
  // (lane_stage). Pair (a, b), a candidate of column x - 1 and one of
  // column x (1 or 2 each), at link_pair[4 x + 2 (b - 1) + a - 1]:
  // strength(b) - the link's penalty (its cost, or segment_cost where that
  // is a break), times two, plus one for a break; a segment started at b,
  // link_fresh[2 x + b - 1]: strength(b) - segment_cost.
  std::int32_t* link_pair = nullptr;   // 16-byte aligned: one vector load a step on the GPU
  std::int32_t* link_fresh = nullptr;  // 8-byte aligned
  int staged_slots = 0;                // 0: the walks read the candidates from the view
  int states = kLineStates;            // K + 1: the stride of a transfer matrix's rows
  bool narrow_walks = true;            // the speculative walks in 32 bits where the parameters allow (NarrowLink; the bench compares)
  // narrow_link(params), taken once a frame by whoever runs the speculative
  // pass (its three divisions were a visible part of each phase's start);
  // left as it is (not ok), the walks take the 64-bit path.
  line_model::NarrowLink link;
};

// Candidates of a column kept in the scratch (shared memory on the GPU) for
// the speculative walks, which read most columns twice: at most two, as the
// scratch allows (real frames have about one a column).
inline constexpr int kLineStagedSlots = 2;

// Where the staged candidates, their counts and the link table (when it
// fits: `table`) lie in the fixed region: with the table, one span
// [begin, end) (LineStageAhead copies it).
struct LineStagedOffsets {
  std::size_t begin = 0, fresh = 0, staged = 0, counts = 0, end = 0;
  bool table = false;
};
STRIPELINE_HD void point_staged(LineModelLaneScratch& s, unsigned char* base, const LineStagedOffsets& o) {
  s.staged = reinterpret_cast<line_model::Candidate*>(base + o.staged);
  s.staged_count_mask = reinterpret_cast<std::uint16_t*>(base + o.counts);
  if (o.table) {
    s.link_pair = reinterpret_cast<std::int32_t*>(base + o.begin);
    s.link_fresh = reinterpret_cast<std::int32_t*>(base + o.fresh);
  }
}
// The scratch of one frame laid out in two regions: `fixed` (8-byte
// aligned, line_lane_fixed_bytes) and `columns` (2-byte aligned,
// line_lane_column_bytes). Null bases only measure.
struct LineLaneLayout {
  LineModelLaneScratch scratch;
  std::size_t fixed_bytes = 0, column_bytes = 0;
  LineStagedOffsets staged;
};
STRIPELINE_HD LineLaneLayout line_lane_layout(int candidates, int width, int lanes, unsigned char* fixed, unsigned char* columns) {
  LineLaneLayout out;
  const auto l = static_cast<std::size_t>(lanes), w = static_cast<std::size_t>(width);
  std::size_t at = 0;
  auto take = [&](unsigned char* base, std::size_t bytes) {
    unsigned char* p = base == nullptr ? nullptr : base + at;
    at += bytes;
    return p;
  };
  LineModelLaneScratch& s = out.scratch;
  s.states = candidates + 1;
  const auto states = static_cast<std::size_t>(s.states);
  // The transfer matrices, or (the same bytes) the speculative pass's
  // starting scores and staged candidates.
  const std::size_t transfer_bytes = 8 * l * states * states, spec_bytes = 8 * l * kLineStates;
  const std::size_t shared_bytes = transfer_bytes > spec_bytes ? transfer_bytes : spec_bytes;
  unsigned char* region = take(fixed, shared_bytes);
  s.transfer = reinterpret_cast<std::int64_t*>(region);
  s.spec_start = reinterpret_cast<std::int64_t*>(region);
  s.staged_slots = kLineStagedSlots < candidates ? kLineStagedSlots : candidates;
  while (s.staged_slots > 0 && spec_bytes + w * (sizeof(line_model::Candidate) * static_cast<std::size_t>(s.staged_slots) + 2) > shared_bytes) --s.staged_slots;
  // The link table first (16-byte aligned), where it fits beside two staged slots.
  const std::size_t table_at = (spec_bytes + 15) / 16 * 16, table_bytes = w * 6 * sizeof(std::int32_t);
  const bool table = s.staged_slots == kLineStagedSlots &&
                     table_at + table_bytes + w * (sizeof(line_model::Candidate) * kLineStagedSlots + 2) <= shared_bytes;
  LineStagedOffsets& o = out.staged;
  o.staged = table ? table_at + table_bytes : spec_bytes;
  o.counts = o.staged + w * sizeof(line_model::Candidate) * static_cast<std::size_t>(s.staged_slots);
  o.end = o.counts + w * sizeof(std::uint16_t);
  o.table = table;
  if (table) o.begin = table_at, o.fresh = table_at + 4 * w * sizeof(std::int32_t);
  if (region != nullptr) point_staged(s, region, o);  // even without staged slots: on the GPU a valid shared address (assume_staged_shared)
  s.entering = reinterpret_cast<std::int64_t*>(take(fixed, 8 * (l + 1) * kLineStates));
  s.tail = reinterpret_cast<std::uint16_t*>(take(fixed, 2 * l));
  s.head = reinterpret_cast<std::uint16_t*>(take(fixed, 2 * l));
  s.run_in = reinterpret_cast<std::uint16_t*>(take(fixed, 2 * (l + 1)));
  s.run_out = reinterpret_cast<std::uint16_t*>(take(fixed, 2 * (l + 1)));
  s.n_last = take(fixed, l);
  s.first = take(fixed, l * kLineStates);
  s.last = take(fixed, l);
  s.open = take(fixed, l);
  s.dropped = take(fixed, l);
  out.fixed_bytes = (at + 7) / 8 * 8;
  at = 0;
  s.run = reinterpret_cast<std::uint16_t*>(take(columns, 2 * w));
  s.back = take(columns, w * (static_cast<std::size_t>(candidates) + 1));
  s.mask = take(columns, w);
  s.chosen = take(columns, w);
  out.column_bytes = (at + 7) / 8 * 8;
  return out;
}

// Lanes per frame of the CUDA kernel (one warp), and the global scratch it
// needs for `frames` frames (their column arrays, used where shared memory
// is too small; the memory budget counts it: stages/chain.cpp).
inline constexpr int kLineKernelLanes = 32;
inline constexpr int kLineBlockLanes = 256;  // the block kernel's lanes (column arrays: the same bytes)
inline std::size_t line_model_device_scratch_bytes(int candidates, int width, int frames) {
  return line_lane_layout(candidates, width, kLineKernelLanes, nullptr, nullptr).column_bytes * static_cast<std::size_t>(frames);
}

// Pass 0's staging done ahead (issue 24). The block kernel's 256 threads
// staged a 2,048-column frame on one SM in ~6 of its ~26 us (on an H100):
// each column's candidates loaded, made, and its four link entries costed,
// eight columns a thread. A kernel of its own before it (four threads a
// column, on every SM: line_model::stage_ahead_pair) stages the frame into
// bytes laid out as the scratch's own span (LineStagedOffsets); the model
// then copies the span into its shared memory (lane_take_staged; on sm_90
// one bulk copy). The same functions on the same candidates: the same bytes
// (LineModel.TheStagingAheadGivesTheSameScratch).
struct LineStageAhead {
  unsigned char* bytes = nullptr;  // frame f's span at bytes + f frame_bytes (offset `begin` of its layout at bytes); null: none
  std::size_t frame_bytes = 0, begin = 0, end = 0;
  LineModelLaneScratch at;  // frame 0's staged pointers into `bytes`, its staged slots and link
  LineModelParams params;   // with `width`, what the layout was made for
  int width = 0;
};
// Frames of `width` columns ahead of the block kernel, into `bytes` (a
// device allocation of frames x frame_bytes; null measures). None (bytes
// and frame_bytes 0) where that layout has no link table or its narrow
// link does not hold.
inline LineStageAhead line_stage_ahead(const LineModelParams& p, int width, unsigned char* bytes) {
  LineStageAhead a;
  const LineLaneLayout l = line_lane_layout(p.candidates, width, kLineBlockLanes, nullptr, nullptr);
  const line_model::NarrowLink link = line_model::narrow_link(p);
  if (!l.staged.table || !link.ok) return a;
  LineStagedOffsets from_zero = l.staged;  // the span first in a frame's bytes
  from_zero.fresh -= l.staged.begin, from_zero.staged -= l.staged.begin, from_zero.counts -= l.staged.begin;
  from_zero.end -= l.staged.begin, from_zero.begin = 0;
  a.frame_bytes = (from_zero.end + 15) / 16 * 16;
  a.begin = l.staged.begin, a.end = l.staged.end;
  a.params = p;
  a.width = width;
  a.at.staged_slots = l.scratch.staged_slots;
  a.at.link = link;
  a.bytes = bytes;
  if (bytes != nullptr) point_staged(a.at, bytes, from_zero);
  return a;
}

namespace line_model {

inline constexpr std::uint8_t kSegmentStart = 0x10;
inline constexpr unsigned kStagedCountBits = 0xFF;  // staged_count_mask: the count
inline constexpr std::uint16_t kRunCap = 0xFFFF;

struct Chunk {
  int begin = 0, end = 0;
  STRIPELINE_HD bool empty() const { return begin >= end; }
  STRIPELINE_HD int size() const { return end - begin; }
};
// Lane `lane`'s columns: ceil(width / lanes) each, the last chunks shorter or empty.
STRIPELINE_HD Chunk chunk_of(int width, int lanes, int lane) {
  const int per = (width + lanes - 1) / lanes;
  const int b = lane * per < width ? lane * per : width;
  return {b, b + per < width ? b + per : width};
}
STRIPELINE_HD int lanes_used(int width, int lanes) {
  const int per = (width + lanes - 1) / lanes;
  return (width + per - 1) / per;
}

// The CUDA kernels keep the fixed region (staged candidates included) in
// shared memory; told so, the compiler gives the walks 32-bit shared loads
// instead of generic ones, whose latency each column's step waited on.
STRIPELINE_HD void assume_staged_shared(const LineModelLaneScratch& s) {
#if defined(__CUDA_ARCH__)
  __builtin_assume(__isShared(s.staged));
  __builtin_assume(__isShared(s.staged_count_mask));
#else
  (void)s;
#endif
}

STRIPELINE_HD std::int64_t* transfer_row(const LineModelLaneScratch& s, int lane, int a) {
  return s.transfer + (static_cast<std::size_t>(lane) * s.states + a) * s.states;
}

// A column's candidates and scores handed on to the next column by copy
// (bounded, unrolled loops): with constant indices they stay in registers on
// the GPU, where swapping two arrays through pointers put them in local memory.
// The first n of at most kMax elements:
template <int kMax, class T>
STRIPELINE_HD void copy_first(const T* from, int n, T* to) {
  STRIPELINE_UNROLL
  for (int i = 0; i < kMax; ++i) {
    if (i >= n) break;
    to[i] = from[i];
  }
}
STRIPELINE_HD void copy_candidates(const Candidate* from, int n, Candidate* to) { copy_first<kMaxLineCandidates>(from, n, to); }
// The scores of states 0..n.
STRIPELINE_HD void copy_scores(const std::int64_t* from, int n, std::int64_t* to) { copy_first<kLineStates>(from, n + 1, to); }

// Phase 1 (per lane): the chunk's transfer matrix; pass 0 clears its masks.
STRIPELINE_HD void lane_transfer(const LineModelView& v, const LineModelParams& p, int f, int pass, int lanes, int lane, const LineModelLaneScratch& s) {
  const Chunk c = chunk_of(v.width, lanes, lane);
  if (c.empty()) return;
  Candidate prev_c[kMaxLineCandidates], cur_c[kMaxLineCandidates];
  const int in_n = c.begin == 0 ? 0 : load_candidates(v, p, f, c.begin - 1, prev_c);
  for (int a = 0; a <= in_n; ++a)  // row a starts from state a alone
    for (int b = 0; b <= in_n; ++b) transfer_row(s, lane, a)[b] = a == b ? 0 : kNone;
  int prev_n = in_n;
  for (int x = c.begin; x < c.end; ++x) {
    if (pass == 0) s.mask[x] = 0;
    const int cur_n = load_candidates(v, p, f, x, cur_c);
    for (int a = 0; a <= in_n; ++a) {
      std::int64_t* row = transfer_row(s, lane, a);
      std::int64_t next[kLineStates];
      advance_column(prev_c, prev_n, row, cur_c, cur_n, s.mask[x], p, next, nullptr, 0);
      copy_scores(next, cur_n, row);
    }
    copy_candidates(cur_c, cur_n, prev_c);
    prev_n = cur_n;
  }
  s.n_last[lane] = static_cast<std::uint8_t>(prev_n);
}

// Phase 2 (per state b, one chunk after the other): the scores entering each
// chunk, from the previous chunk's (`in`: the scores at the column before
// chunk l) and its transfer matrix. Scores of states no path reaches stay at
// kNone (clamped, so sums of them cannot overflow).
STRIPELINE_HD void lanes_entering(int b, int l, const LineModelLaneScratch& s, const std::int64_t* in) {
  const int in_n = l == 0 ? 0 : s.n_last[l - 1];
  if (b > s.n_last[l]) return;
  std::int64_t best = kNone;
  for (int a = 0; a <= in_n; ++a) {
    const std::int64_t from = l == 0 ? 0 : in[a];
    const std::int64_t through = transfer_row(s, l, a)[b];
    const std::int64_t score = from <= kNone || through <= kNone ? kNone : from + through;
    if (score > best) best = score;
  }
  s.entering[static_cast<std::size_t>(l + 1) * kLineStates + b] = best;
}
STRIPELINE_HD void lanes_entering(int b, int l, const LineModelLaneScratch& s) {
  lanes_entering(b, l, s, s.entering + static_cast<std::size_t>(l) * kLineStates);
}

// Column x's candidates: the staged ones from the scratch, the rest from
// the view; and, when `mask` is given, the column's exclusion mask.
STRIPELINE_HD int load_staged(const LineModelView& v, const LineModelParams& p, int f, int x, const LineModelLaneScratch& s, Candidate* c,
                              std::uint8_t* mask = nullptr) {
  if (s.staged_slots == 0) {
    if (mask != nullptr) *mask = s.mask[x];
    return load_candidates(v, p, f, x, c);
  }
  const unsigned packed = s.staged_count_mask[x];
  if (mask != nullptr) *mask = static_cast<std::uint8_t>(packed >> 8);
  const int n = static_cast<int>(packed & kStagedCountBits);
  const Candidate* staged = s.staged + static_cast<std::size_t>(x) * s.staged_slots;
  STRIPELINE_UNROLL
  for (int i = 0; i < kMaxLineCandidates; ++i) {
    if (i >= n) break;
    c[i] = i < s.staged_slots ? staged[i] : candidate(v, p, f, i, x);
  }
  return n;
}

// Columns [from, to) walked from `score` (the scores at column from - 1,
// whose candidates are prev_c[0, prev_n)); back-pointers written from column
// write_from on. Leaves column to - 1's scores in `score` and candidates in
// prev_c, and returns their number.
STRIPELINE_HD int walk_columns(const LineModelView& v, const LineModelParams& params, int f, const LineModelLaneScratch& scratch, int from, int to,
                               int write_from, Candidate* prev_c, int prev_n, std::int64_t* score) {
  // Copies the loop reads from registers: through the references, each
  // back-pointer store (a byte, which may alias anything) made every cost
  // and pointer load again (on the GPU from the kernel's stack, later its
  // parameter bank and shared memory). The other per-lane phases copy too.
  const LineModelParams p = params;
  const LineModelLaneScratch s = scratch;
  const int states = p.candidates + 1;
  Candidate cur_c[kMaxLineCandidates];
  std::int64_t cur_score[kLineStates];
  for (int x = from; x < to; ++x) {
    const int cur_n = load_staged(v, p, f, x, s, cur_c);
    std::uint8_t* back = x >= write_from ? s.back + static_cast<std::size_t>(x) * states : nullptr;
    advance_column(prev_c, prev_n, score, cur_c, cur_n, s.mask[x], p, cur_score, back, 1);
    copy_scores(cur_score, cur_n, score);
    copy_candidates(cur_c, cur_n, prev_c);
    prev_n = cur_n;
  }
  return prev_n;
}

// The same walk in 32 bits (NarrowLink; the speculative passes' walks take
// it where walks_narrow). Scores are held relative to the column's "no
// line" state (r[0] = 0): every choice compares scores of one column, so
// the back-pointers are walk_columns' and the scores it leaves differ from
// walk_columns' by a constant, which is all the speculative pass uses them
// for (parallel_scores, final_state). Relative scores stay within
// [-segment_cost - 2^24, 2^24] (a strength is below 2^24), far from
// kNarrowNone, which marks excluded states as kNone does.
inline constexpr std::int32_t kNarrowNone = -(1 << 30);

// One column (advance_column's choices, in the same order), with loops
// bounded by kPrev and kCur: the walk takes <2, 2> where both columns have
// at most two candidates (nearly every column), so its hot loop is short.
template <int kPrev, int kCur>
STRIPELINE_HD void advance_narrow(const Candidate* prev_c, int prev_n, const std::int32_t* prev, const Candidate* cur_c, int cur_n, std::uint8_t excluded,
                                  const NarrowLink& link, std::int32_t* cur, std::uint8_t* back) {
  std::int32_t gain = 0;  // "no line": the best previous state (prev[0] = 0), the lowest on ties
  int from_none = 0;
  STRIPELINE_UNROLL
  for (int a = 1; a <= kPrev; ++a) {
    if (a > prev_n) break;
    if (prev[a] > gain) gain = prev[a], from_none = a;
  }
  if (back != nullptr) back[0] = static_cast<std::uint8_t>(from_none);
  cur[0] = 0;
  STRIPELINE_UNROLL
  for (int b = 1; b <= kCur; ++b) {
    if (b > cur_n) break;
    std::uint8_t from = 0;
    if ((excluded >> (b - 1)) & 1) {
      cur[b] = kNarrowNone;
    } else {
      std::int32_t top = -link.segment;  // a new segment: prev[0] - segment_cost
      STRIPELINE_UNROLL
      for (int a = 1; a <= kPrev; ++a) {
        if (a > prev_n) break;
        const std::uint32_t cost = narrow_link_cost(prev_c[a - 1], cur_c[b - 1], link);
        const bool brk = cost > static_cast<std::uint32_t>(link.segment);
        const std::int32_t score = prev[a] - (brk ? link.segment : static_cast<std::int32_t>(cost));
        if (score > top) top = score, from = static_cast<std::uint8_t>(a | (brk ? kBreak : 0));
      }
      cur[b] = top + cur_c[b - 1].strength - gain;  // relative to this column's "no line"
    }
    if (back != nullptr) back[b] = from;
  }
}

// advance_narrow<2, 2> from the link table (lane_stage): the same
// choices in the same order, each compared with strength(b) added to both
// sides, so the same scores and back-pointers (written with kWrite). prev
// holds three scores (kNarrowNone past prev_n).
template <bool kWrite>
STRIPELINE_HD unsigned advance_from_table(const LineModelLaneScratch& s, int x, unsigned packed, int prev_n, const std::int32_t* prev, int cur_n,
                                          std::int32_t* cur, std::uint8_t* back) {
  std::int32_t pair[4], fresh[2];
#if defined(__CUDA_ARCH__)
  __builtin_assume(__isShared(s.link_pair));
  __builtin_assume(__isShared(s.link_fresh));
  const int4 p4 = reinterpret_cast<const int4*>(s.link_pair)[x];
  const int2 f2 = reinterpret_cast<const int2*>(s.link_fresh)[x];
  pair[0] = p4.x, pair[1] = p4.y, pair[2] = p4.z, pair[3] = p4.w, fresh[0] = f2.x, fresh[1] = f2.y;
#else
  for (int i = 0; i < 4; ++i) pair[i] = s.link_pair[4 * x + i];
  fresh[0] = s.link_fresh[2 * x], fresh[1] = s.link_fresh[2 * x + 1];
#endif
  std::int32_t gain = 0;  // "no line": the best previous state (prev[0] = 0), the lowest on ties
  unsigned from_none = 0;
  if (prev_n >= 1 && prev[1] > gain) gain = prev[1], from_none = 1;
  if (prev_n >= 2 && prev[2] > gain) gain = prev[2], from_none = 2;
  if constexpr (kWrite) back[0] = static_cast<std::uint8_t>(from_none);
  unsigned states = from_none;  // each state's predecessor, 4 bits a state
  cur[0] = 0;
  STRIPELINE_UNROLL
  for (int b = 1; b <= 2; ++b) {
    if (b > cur_n) break;
    const std::int32_t via1 = prev[1] + (pair[2 * (b - 1)] >> 1), via2 = prev[2] + (pair[2 * (b - 1) + 1] >> 1);
    std::int32_t top = fresh[b - 1];  // a new segment
    unsigned from = 0;
    bool brk = false;
    if (prev_n >= 1 && via1 > top) top = via1, from = 1u, brk = (pair[2 * (b - 1)] & 1) != 0;
    if (prev_n >= 2 && via2 > top) top = via2, from = 2u, brk = (pair[2 * (b - 1) + 1] & 1) != 0;
    const bool excluded = (packed >> (7 + b)) & 1;  // the mask's bit b - 1
    cur[b] = excluded ? kNarrowNone : top - gain;   // relative to this column's "no line"
    if (excluded) from = 0;
    if constexpr (kWrite) back[b] = static_cast<std::uint8_t>(from | (brk && !excluded ? kBreak : 0u));
    states |= from << (4 * b);
  }
  return states;
}

// The chunk walks' first states (phase 4's, carried along the walk instead
// of traced back after it): 4 bits a state, the state at the walk's first
// column on the best path to each state of the current column.
inline constexpr std::uint64_t kFirstIdentity = 0x876543210ull;  // at the first column: each state itself
STRIPELINE_HD std::uint64_t first_through(std::uint64_t first, std::uint64_t predecessors, int n) {
  std::uint64_t out = 0;
  STRIPELINE_UNROLL
  for (int b = 0; b < kLineStates; ++b) {
    if (b > n) break;
    out |= ((first >> (4 * ((predecessors >> (4 * b)) & 0xF))) & 0xF) << (4 * b);
  }
  return out;
}

// Scores as the narrow walks hold them: relative to "no line" (r[0] = 0).
STRIPELINE_HD void narrow_scores(const std::int64_t* score, int n, std::int32_t* r) {
  r[0] = 0;
  STRIPELINE_UNROLL
  for (int i = 1; i < kLineStates; ++i) {
    if (i > n) break;
    r[i] = score[i] <= kNone ? kNarrowNone : static_cast<std::int32_t>(score[i] - score[0]);
  }
}
STRIPELINE_HD void wide_scores(const std::int32_t* r, int n, std::int64_t* score) {
  STRIPELINE_UNROLL
  for (int i = 0; i < kLineStates; ++i) {
    if (i > n) break;
    score[i] = r[i] <= kNarrowNone ? kNone : r[i];
  }
}

// The narrow walk's columns from the staged candidates (no link table).
STRIPELINE_HD int walk_candidates_narrow(const LineModelView& v, const LineModelParams& params, int f, const LineModelLaneScratch& scratch, int from,
                                         int to, int write_from, Candidate* prev_c, int prev_n, std::int32_t* r, const NarrowLink& link) {
  const LineModelParams p = params;  // register copies (walk_columns says why)
  const LineModelLaneScratch s = scratch;
  assume_staged_shared(s);
  const int states = p.candidates + 1;
  // The loop's own copies: the caller's arrays may be in memory (on the GPU
  // their addresses also go to the 64-bit walk, compiled apart).
  Candidate cur_c[kMaxLineCandidates], pc[kMaxLineCandidates];
  copy_first<kMaxLineCandidates>(prev_c, prev_n, pc);
  std::int32_t cur[kLineStates];
  for (int x = from; x < to; ++x) {
    std::uint8_t mask = 0;
    const int cur_n = load_staged(v, p, f, x, s, cur_c, &mask);
    std::uint8_t* back = x >= write_from ? s.back + static_cast<std::size_t>(x) * states : nullptr;
    if (prev_n <= 2 && cur_n <= 2) {
      advance_narrow<2, 2>(pc, prev_n, r, cur_c, cur_n, mask, link, cur, back);
      copy_first<3>(cur, cur_n + 1, r);
      copy_first<2>(cur_c, cur_n, pc);
    } else {
      advance_narrow<kMaxLineCandidates, kMaxLineCandidates>(pc, prev_n, r, cur_c, cur_n, mask, link, cur, back);
      copy_first<kLineStates>(cur, cur_n + 1, r);
      copy_first<kMaxLineCandidates>(cur_c, cur_n, pc);
    }
    prev_n = cur_n;
  }
  copy_first<kMaxLineCandidates>(pc, prev_n, prev_c);
  return prev_n;
}

// The narrow walk's columns from the link table: a step between columns of
// at most two candidates reads two table entries instead of the candidates
// and their link costs; other steps read the candidates (both columns').
// The candidates are not carried: prev_c is neither read nor written.
// Back-pointers written for every column with kWrite, for none without.
// With kWrite, also each state's first state (first_through; `first` set
// at the end, from kFirstIdentity at column `from`).
template <bool kWrite>
STRIPELINE_HD int walk_table(const LineModelView& v, const LineModelParams& params, int f, const LineModelLaneScratch& scratch, int from, int to,
                             int prev_n, std::int32_t* r, const NarrowLink& link, std::uint64_t* first) {
  const LineModelParams p = params;  // register copies (walk_columns says why)
  const LineModelLaneScratch s = scratch;
  assume_staged_shared(s);
  const int states = p.candidates + 1;
  std::int32_t cur[kLineStates];
  std::uint8_t* back = kWrite ? s.back + static_cast<std::size_t>(from) * states : nullptr;
  std::uint64_t firsts = kFirstIdentity;
  for (int x = from; x < to; ++x) {
    const unsigned packed = s.staged_count_mask[x];
    const int cur_n = static_cast<int>(packed & kStagedCountBits);
    std::uint64_t predecessors = 0;
    if (prev_n <= 2 && cur_n <= 2) {
      if (prev_n < 2) r[2] = kNarrowNone;  // read (never taken) by the step's sums
      if (prev_n < 1) r[1] = kNarrowNone;
      predecessors = advance_from_table<kWrite>(s, x, packed, prev_n, r, cur_n, cur, back);
      copy_first<3>(cur, cur_n + 1, r);
    } else {
      Candidate pc[kMaxLineCandidates], cur_c[kMaxLineCandidates];
      if (prev_n > 0) load_staged(v, p, f, x - 1, s, pc);
      load_staged(v, p, f, x, s, cur_c);
      advance_narrow<kMaxLineCandidates, kMaxLineCandidates>(pc, prev_n, r, cur_c, cur_n, static_cast<std::uint8_t>(packed >> 8), link, cur,
                                                            kWrite ? back : nullptr);
      copy_first<kLineStates>(cur, cur_n + 1, r);
      if constexpr (kWrite)
        for (int b = 0; b <= cur_n; ++b) predecessors |= static_cast<std::uint64_t>(back[b] & 0x0F) << (4 * b);
    }
    if constexpr (kWrite)
      if (x > from) firsts = first_through(firsts, predecessors, cur_n);
    prev_n = cur_n;
    if constexpr (kWrite) back += states;
  }
  if constexpr (kWrite)
    if (first != nullptr) *first = firsts;
  return prev_n;
}

// walk_columns in 32 bits: the same back-pointers; `score` in and out as
// walk_columns', up to a constant. (Measured on an H100 and not kept: the
// next column's loads issued a column ahead, and a 2 x 2 step without
// branches that evaluates every pair: both slower, more instructions a
// step.)
STRIPELINE_HD int walk_columns_narrow(const LineModelView& v, const LineModelParams& p, int f, const LineModelLaneScratch& s, int from, int to,
                                      int write_from, Candidate* prev_c, int prev_n, std::int64_t* score, const NarrowLink& link,
                                      std::uint64_t* first) {
  std::int32_t r[kLineStates];
  narrow_scores(score, prev_n, r);
  int n = prev_n;
  if (s.link_pair != nullptr) {  // the columns before write_from, then the rest (the walks take one or the other)
    const int mid = write_from < from ? from : write_from > to ? to : write_from;
    if (from < mid) n = walk_table<false>(v, p, f, s, from, mid, n, r, link, nullptr);
    if (mid < to) n = walk_table<true>(v, p, f, s, mid, to, n, r, link, first);
  } else {
    n = walk_candidates_narrow(v, p, f, s, from, to, write_from, prev_c, prev_n, r, link);
  }
  wide_scores(r, n, score);
  return n;
}

// walk_columns compiled apart on the GPU (a template for the header's one
// definition): inlined beside the narrow walk, its registers made the
// speculative walks spill.
#if defined(__CUDACC__)
#define STRIPELINE_HD_APART __host__ __device__ __noinline__
#else
#define STRIPELINE_HD_APART inline
#endif
template <int = 0>
STRIPELINE_HD_APART int walk_columns_apart(const LineModelView& v, const LineModelParams& p, int f, const LineModelLaneScratch& s, int from, int to,
                                           int write_from, Candidate* prev_c, int prev_n, std::int64_t* score) {
  return walk_columns(v, p, f, s, from, to, write_from, prev_c, prev_n, score);
}

// Whether the speculative walks take 32 bits (s.link: the parameters allow
// it), and whether they carry each chunk's first states (the table walks
// do; phase 4 then runs only after the exact fallback).
STRIPELINE_HD bool walks_narrow(const LineModelLaneScratch& s) { return s.link.ok && s.narrow_walks; }
STRIPELINE_HD bool walks_carry_first(const LineModelLaneScratch& s) { return walks_narrow(s) && s.link_pair != nullptr; }

// The speculative walks' columns, in 32 bits where walks_narrow; `first`
// (the walks from write_from = from on, where walks_carry_first) gets
// first_through's states at the last column.
STRIPELINE_HD int walk_speculative(const LineModelView& v, const LineModelParams& p, int f, const LineModelLaneScratch& s, int from, int to, int write_from,
                                   Candidate* prev_c, int prev_n, std::int64_t* score, std::uint64_t* first = nullptr) {
  if (walks_narrow(s)) return walk_columns_narrow(v, p, f, s, from, to, write_from, prev_c, prev_n, score, s.link, first);
  return walk_columns_apart(v, p, f, s, from, to, write_from, prev_c, prev_n, score);
}

// A chunk's first states as phase 4 stores them.
STRIPELINE_HD void store_first(const LineModelLaneScratch& s, int lane, std::uint64_t first, int n) {
  for (int t = 0; t <= n; ++t) s.first[lane * kLineStates + t] = static_cast<std::uint8_t>((first >> (4 * t)) & 0xF);
}

// Phase 3 (per lane): the chunk walked again from its exact entering scores
// with the oracle's column function: the back-pointers.
STRIPELINE_HD void lane_back_pointers(const LineModelView& v, const LineModelParams& p, int f, int lanes, int lane, const LineModelLaneScratch& s) {
  const Chunk c = chunk_of(v.width, lanes, lane);
  if (c.empty()) return;
  LineModelLaneScratch unstaged = s;  // the transfer matrices took the staged candidates' bytes: read the view
  unstaged.staged_slots = 0;
  Candidate prev_c[kMaxLineCandidates];
  const int prev_n = c.begin == 0 ? 0 : load_candidates(v, p, f, c.begin - 1, prev_c);
  std::int64_t score[kLineStates];
  if (lane == 0)
    score[0] = 0;
  else
    copy_scores(s.entering + static_cast<std::size_t>(lane) * kLineStates, prev_n, score);
  walk_columns(v, p, f, unstaged, c.begin, c.end, c.begin, prev_c, prev_n, score);
}

// ---------------------------------------------------------------------------
// The speculative forward pass (the block kernel's; phases 1 to 3 above are
// its fallback). Why: phases 1 and 2 cost a frame ~77 of its ~105 us on an
// H100, because a transfer matrix walks its chunk once per entering state.
// But every choice of the walk (enter_none, enter_candidate, final_state)
// compares scores of one column, so scores that differ by a constant give
// the same back-pointers; and the model forgets: a column without
// candidates, or a line much stronger than the rest, makes the scores from
// any start differ by a constant after a few columns (the (max, +) product
// converges to rank one). So each lane walks its chunk once, from "no line"
// kLineWarmup columns before it (a guess at its entering scores), and then
// checks the guess against the scores the previous lane ended with: where
// they differ by a constant (nearly always) its back-pointers are the
// oracle's; where not, it walks again from them, in rounds until every lane
// agrees with the one before (by induction from lane 0, which starts from
// the frame's start, each is then exact up to a constant). After
// kLineSpecRounds rounds without that, the exact phases 1 to 3 run instead,
// so a frame of long parallel lines costs what it did before.
inline constexpr int kLineWarmup = 8;       // columns walked before the chunk, from "no line"
inline constexpr int kLineSpecRounds = 8;   // rounds of walks again before the fallback

// Column x's entries of the link table from the first two candidates of
// columns x - 1 (prev: prev_n of them) and x (cur: cur_n). Pairs of
// uncounted candidates are not written: the walks never take them (their
// sums with kNarrowNone stay in range whatever the entry holds). A pair is
// (strength - penalty) x 2 + break: a strength is below 2^24 and
// segment_cost below 2^23, so it fits, and the step reads both with one
// load.
static_assert(kLineStagedSlots == 2, "the link table pairs two staged slots of each column");
STRIPELINE_HD std::int32_t link_fresh_entry(const Candidate& b, const NarrowLink& link) { return b.strength - link.segment; }
STRIPELINE_HD std::int32_t link_pair_entry(const Candidate& a, const Candidate& b, const NarrowLink& link) {
  const std::uint32_t cost = narrow_link_cost(a, b, link);
  const bool brk = cost > static_cast<std::uint32_t>(link.segment);
  const std::int32_t gain = b.strength - (brk ? link.segment : static_cast<std::int32_t>(cost));
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(gain) << 1 | (brk ? 1u : 0u));
}
STRIPELINE_HD void link_entries(const Candidate* prev, int prev_n, const Candidate* cur, int cur_n, const NarrowLink& link, const LineModelLaneScratch& s,
                                int x) {
  STRIPELINE_UNROLL
  for (int b = 0; b < kLineStagedSlots; ++b) {
    if (b >= cur_n) break;
    s.link_fresh[2 * x + b] = link_fresh_entry(cur[b], link);
    STRIPELINE_UNROLL
    for (int a = 0; a < kLineStagedSlots; ++a) {
      if (a >= prev_n) break;
      s.link_pair[4 * x + 2 * b + a] = link_pair_entry(prev[a], cur[b], link);
    }
  }
}

// Column x staged (its scratch holding staged slots): its count beside its
// mask, its first candidates and, with the table, its link entries from
// its left neighbour's first candidates (n_left of them: 0 at column 0).
STRIPELINE_HD void stage_column(const RawCandidate* raw, int n, unsigned mask, const RawCandidate* left, int n_left, const LineModelParams& p, bool table,
                                const LineModelLaneScratch& s, int x) {
  s.staged_count_mask[x] = static_cast<std::uint16_t>(static_cast<unsigned>(n) | mask << 8);
  Candidate cur[kLineStagedSlots], prev[kLineStagedSlots];
  STRIPELINE_UNROLL
  for (int i = 0; i < kLineStagedSlots; ++i) {
    if (i < s.staged_slots && i < n) s.staged[static_cast<std::size_t>(x) * s.staged_slots + i] = cur[i] = make_candidate(raw[i], p);
    if (i < n_left) prev[i] = make_candidate(left[i], p);
  }
  if (table) link_entries(prev, n_left, cur, n, s.link, s, x);
}

#if defined(__CUDA_ARCH__)
// lane_stage's left neighbours on the GPU: column x - 1's count and first
// two candidates from the lane before (its column x - 1), for every lane
// of the warp but the first (which loaded its own).
template <int kAtOnce>
__device__ void left_by_shuffle(const int* n, const RawCandidate (*raw)[kLineStagedSlots], int x0, int lanes, int width, int warp_lane, int* n_left,
                                RawCandidate (*left)[kLineStagedSlots]) {
  constexpr unsigned kWarpMask = 0xFFFFFFFFu;
  STRIPELINE_UNROLL
  for (int k = 0; k < kAtOnce; ++k) {
    const bool mine = warp_lane != 0 && x0 + k * lanes < width;
    const int count = __shfl_up_sync(kWarpMask, n[k], 1);
    if (mine) n_left[k] = count;
    STRIPELINE_UNROLL
    for (int i = 0; i < kLineStagedSlots; ++i) {
      const RawCandidate& r = raw[k][i];
      const std::int32_t position = __shfl_up_sync(kWarpMask, r.position, 1);
      const unsigned width_quality = __shfl_up_sync(kWarpMask, static_cast<unsigned>(r.width) | static_cast<unsigned>(r.quality) << 16, 1);
      const unsigned intensity = __shfl_up_sync(kWarpMask, static_cast<unsigned>(r.intensity), 1);
      if (mine)
        left[k][i] = {position, static_cast<std::uint16_t>(width_quality & 0xFFFFu), static_cast<std::uint16_t>(width_quality >> 16),
                      static_cast<std::uint16_t>(intensity)};
    }
  }
}
#endif

// Phase S1 (per lane, columns lane, lane + lanes, ...: coalesced on the
// GPU): the candidates staged, each column's count beside its mask (so a
// walk's step reads both with one shared load, also where the column
// arrays did not fit in shared memory: wide frames), and, where the scratch
// has one, the link table (from the column's and its left neighbour's
// first two candidates); pass 0 clears the masks. Every load of four
// columns (their counts and the fields of their first slots and their left
// neighbours', read whatever the count: the arrays hold every slot) is
// issued before any is used, so a lane waits for memory once for them, not
// once for the counts and again for the candidates (stores through the
// scratch's pointers could alias the view's, so the GPU would otherwise
// wait for each load in turn).
STRIPELINE_HD void lane_stage(const LineModelView& view, const LineModelParams& params, int f, int pass, int lanes, int lane, const LineModelLaneScratch& scratch) {
  const LineModelView v = view;  // copies in registers (walk_columns says why)
  const LineModelParams p = params;
  const LineModelLaneScratch s = scratch;
  assume_staged_shared(s);
  const NarrowLink link = s.link;
  const bool table = s.link_pair != nullptr && link.ok;  // then staged_slots == kLineStagedSlots
  constexpr int kAtOnce = 4;
  // On the GPU (lanes a multiple of the warp, a warp's lanes side by side)
  // a column's left neighbour is the lane before's column: its candidates
  // come by shuffle, loaded only by each warp's first lane. The shuffles
  // need the whole warp, so its lanes loop alike (the first lane's count).
#if defined(__CUDA_ARCH__)
  const int warp_lane = lane & 31;
#else
  const int warp_lane = 0;
#endif
  for (int x0 = lane; x0 - warp_lane < v.width; x0 += kAtOnce * lanes) {
    int n[kAtOnce], n_left[kAtOnce];
    unsigned mask[kAtOnce];
    RawCandidate raw[kAtOnce][kLineStagedSlots], left[kAtOnce][kLineStagedSlots];
    STRIPELINE_UNROLL
    for (int k = 0; k < kAtOnce; ++k) {
      const int x = x0 + k * lanes;
      const bool staged = x < v.width && s.staged_slots > 0;
      const bool load_left = staged && table && x > 0 && warp_lane == 0;  // column 0's pairs are never read
      n[k] = staged ? slots_filled(v, p, f, x) : 0;
      n_left[k] = load_left ? slots_filled(v, p, f, x - 1) : 0;
      mask[k] = staged && pass > 0 ? s.mask[x] : 0u;  // pass 0 clears the masks
      STRIPELINE_UNROLL
      for (int i = 0; i < kLineStagedSlots; ++i) {
        if (staged && i < s.staged_slots) raw[k][i] = raw_candidate(v, p, f, i, x);
        if (load_left) left[k][i] = raw_candidate(v, p, f, i, x - 1);
      }
    }
#if defined(__CUDA_ARCH__)
    if (table) left_by_shuffle<kAtOnce>(n, raw, x0, lanes, v.width, warp_lane, n_left, left);
#endif
    STRIPELINE_UNROLL
    for (int k = 0; k < kAtOnce; ++k) {
      const int x = x0 + k * lanes;
      if (x >= v.width) break;
      if (pass == 0) s.mask[x] = 0;
      if (s.staged_slots > 0) stage_column(raw[k], n[k], mask[k], left[k], n_left[k], p, table, s, x);
    }
  }
}

// The staging ahead (LineStageAhead), split four ways: pair j = (a, b) =
// (j % 2, j / 2) of column x of frame f, from the view's candidates into
// the frame's bytes: candidate b of x staged (a = 0), its fresh entry
// (a = 0) and its pair with candidate a of x - 1; j = 0 also the count.
// Four threads then wait for memory once, together, and make one or two
// candidates each (the four ways write what stage_column writes).
template <class T>
STRIPELINE_HD T* bytes_on(T* p, std::size_t bytes) {
  return reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(p) + bytes);
}
STRIPELINE_HD void stage_ahead_pair(const LineModelView& v, const LineStageAhead& ahead, int f, int x, int j) {
  const LineModelParams& p = ahead.params;
  const LineModelLaneScratch& s = ahead.at;
  const std::size_t shift = static_cast<std::size_t>(f) * ahead.frame_bytes;  // frame f's bytes
  const int a = j % 2, b = j / 2;
  const bool left = x > 0;
  const int n = slots_filled(v, p, f, x), n_left = left ? slots_filled(v, p, f, x - 1) : 0;
  const RawCandidate raw_b = raw_candidate(v, p, f, b, x);
  const RawCandidate raw_a = left ? raw_candidate(v, p, f, a, x - 1) : RawCandidate{};
  if (j == 0) bytes_on(s.staged_count_mask, shift)[x] = static_cast<std::uint16_t>(n);
  if (b >= n) return;
  const Candidate cur = make_candidate(raw_b, p);
  if (a == 0) {
    if (b < s.staged_slots) bytes_on(s.staged, shift)[static_cast<std::size_t>(x) * s.staged_slots + b] = cur;
    bytes_on(s.link_fresh, shift)[2 * x + b] = link_fresh_entry(cur, s.link);
  }
  if (a < n_left) bytes_on(s.link_pair, shift)[4 * x + 2 * b + a] = link_pair_entry(make_candidate(raw_a, p), cur, s.link);
}
STRIPELINE_HD void stage_ahead_column(const LineModelView& v, const LineStageAhead& ahead, int f, int x) {
  for (int j = 0; j < 2 * kLineStagedSlots; ++j) stage_ahead_pair(v, ahead, f, x, j);
}

// Pass 0 clears the masks (per lane).
STRIPELINE_HD void lane_clear_masks(const LineModelView& v, int lanes, int lane, const LineModelLaneScratch& s) {
  for (int x = lane; x < v.width; x += lanes) s.mask[x] = 0;
}

// The model's part, pass 0 (per lane; then the kernel's barrier): frame
// f's staged span copied from the bytes ahead into the scratch (whose link
// table it needs), its masks cleared. (On sm_90 the kernel copies by one
// bulk copy instead: line_model_kernels.cu.)
STRIPELINE_HD void lane_take_staged(const LineModelView& v, const LineStageAhead& a, int f, int lanes, int lane, const LineModelLaneScratch& s) {
  unsigned char* to = reinterpret_cast<unsigned char*>(s.link_pair);
  const unsigned char* from = a.bytes + static_cast<std::size_t>(f) * a.frame_bytes;
  const std::size_t bytes = a.end - a.begin, vectors = bytes / 16;
  // On the GPU asynchronous copies (cp.async): a lane's loads all in flight
  // at once, not one L2 round trip each.
  for (std::size_t i = static_cast<std::size_t>(lane); i < vectors; i += static_cast<std::size_t>(lanes)) {
#if defined(__CUDA_ARCH__)
    __pipeline_memcpy_async(to + 16 * i, from + 16 * i, 16);
#else
    std::memcpy(to + 16 * i, from + 16 * i, 16);
#endif
  }
#if defined(__CUDA_ARCH__)
  __pipeline_commit();
  __pipeline_wait_prior(0);
#endif
  for (std::size_t i = 16 * vectors + static_cast<std::size_t>(lane); i < bytes; i += static_cast<std::size_t>(lanes)) to[i] = from[i];
  lane_clear_masks(v, lanes, lane, s);
}

STRIPELINE_HD std::int64_t* lane_scores(std::int64_t* base, int lane) { return base + static_cast<std::size_t>(lane) * kLineStates; }

// Phase S2 (per lane): the chunk walked from "no line" `warmup` columns
// before it (lane 0 and lanes that reach column 0: exact): its back-pointers,
// the scores it entered the chunk with (spec_start) and ended with
// (entering[lane + 1]).
STRIPELINE_HD void lane_speculate(const LineModelView& v, const LineModelParams& p, int f, int lanes, int lane, const LineModelLaneScratch& s, int warmup) {
  const Chunk c = chunk_of(v.width, lanes, lane);
  if (c.empty()) return;
  Candidate prev_c[kMaxLineCandidates];
  std::int64_t score[kLineStates];
  score[0] = 0;
  const int start = c.begin > warmup ? c.begin - warmup : 0;
  int n = 0;
  if (start < c.begin) {
    n = walk_speculative(v, p, f, s, start, c.begin, v.width, prev_c, 0, score);
  } else if (c.begin > 0) {  // no warm-up: "no line" alone before the chunk
    n = load_staged(v, p, f, c.begin - 1, s, prev_c);
    STRIPELINE_UNROLL
    for (int i = 1; i < kLineStates; ++i) {
      if (i > n) break;
      score[i] = kNone;
    }
  }
  copy_scores(score, n, lane_scores(s.spec_start, lane));
  std::uint64_t first = 0;
  n = walk_speculative(v, p, f, s, c.begin, c.end, c.begin, prev_c, n, score, &first);
  copy_scores(score, n, lane_scores(s.entering, lane + 1));
  s.n_last[lane] = static_cast<std::uint8_t>(n);
  if (walks_carry_first(s)) store_first(s, lane, first, n);
}

// Whether scores of states 0..n differ by a constant (states no path
// reaches, kNone, in the same places).
STRIPELINE_HD bool parallel_scores(const std::int64_t* a, const std::int64_t* b, int n) {
  const std::int64_t d = a[0] - b[0];
  for (int i = 1; i <= n; ++i) {
    const bool none_a = a[i] <= kNone, none_b = b[i] <= kNone;
    if (none_a != none_b || (!none_a && a[i] - b[i] != d)) return false;
  }
  return true;
}

// Phase S3 (per lane, each round): whether the lane's walk started from
// scores that are not the previous lane's last ones up to a constant; if
// so, those become its start (spec_start: the lane's own), before any lane
// walks again in the round.
STRIPELINE_HD bool lane_needs_walk(const LineModelView& v, int lanes, int lane, const LineModelLaneScratch& s) {
  if (lane == 0 || lane >= lanes_used(v.width, lanes)) return false;
  const std::int64_t* before = lane_scores(s.entering, lane);
  std::int64_t* start = lane_scores(s.spec_start, lane);
  const int n = s.n_last[lane - 1];
  if (parallel_scores(before, start, n)) return false;
  for (int i = 0; i <= n; ++i) start[i] = before[i];
  return true;
}

// Phase S4 (per lane that needs it, each round): the chunk walked again from
// its new start.
STRIPELINE_HD void lane_walk_again(const LineModelView& v, const LineModelParams& p, int f, int lanes, int lane, const LineModelLaneScratch& s) {
  const Chunk c = chunk_of(v.width, lanes, lane);
  Candidate prev_c[kMaxLineCandidates];
  int n = load_staged(v, p, f, c.begin - 1, s, prev_c);
  std::int64_t score[kLineStates];
  copy_scores(lane_scores(s.spec_start, lane), n, score);
  std::uint64_t first = 0;
  n = walk_speculative(v, p, f, s, c.begin, c.end, c.begin, prev_c, n, score, &first);
  copy_scores(score, n, lane_scores(s.entering, lane + 1));
  if (walks_carry_first(s)) store_first(s, lane, first, n);
}

// Phase 4 (per lane; where walks_carry_first, only after the exact
// fallback): for each state of the chunk's last column, the state
// at its first column on the best path ending there.
STRIPELINE_HD void lane_first_states(const LineModelView& view, const LineModelParams& params, int lanes, int lane, const LineModelLaneScratch& scratch) {
  const LineModelView v = view;  // copies in registers (walk_columns says why)
  const LineModelParams p = params;
  const LineModelLaneScratch s = scratch;
  const Chunk c = chunk_of(v.width, lanes, lane);
  if (c.empty()) return;
  const int states = p.candidates + 1;
  for (int t = 0; t <= s.n_last[lane]; ++t) {
    int state = t;
    for (int x = c.end - 1; x > c.begin; --x) state = s.back[static_cast<std::size_t>(x) * states + state] & 0x0F;
    s.first[lane * kLineStates + t] = static_cast<std::uint8_t>(state);
  }
}

// Phase 5 (one lane): the chosen state at each chunk's last column, from the
// frame's best final state back over the chunks.
STRIPELINE_HD void lanes_last_states(const LineModelView& v, const LineModelParams& p, int lanes, const LineModelLaneScratch& s) {
  const int used = lanes_used(v.width, lanes);
  const int states = p.candidates + 1;
  int state = final_state(s.entering + static_cast<std::size_t>(used) * kLineStates, s.n_last[used - 1]);
  for (int l = used - 1; l >= 0; --l) {
    s.last[l] = static_cast<std::uint8_t>(state);
    const int at_first = s.first[l * kLineStates + state];
    const int begin = chunk_of(v.width, lanes, l).begin;
    if (l > 0) state = s.back[static_cast<std::size_t>(begin) * states + at_first] & 0x0F;
  }
}

// Whether chosen column x continues the segment of column x - 1.
STRIPELINE_HD bool continues(std::uint8_t chosen) { return (chosen & 0x0F) != 0 && (chosen & kSegmentStart) == 0; }
STRIPELINE_HD bool on_line(std::uint8_t chosen) { return (chosen & 0x0F) != 0; }

inline constexpr std::uint8_t kOpenLeft = 1;   // every column of the chunk continues its left neighbour
inline constexpr std::uint8_t kOpenRight = 2;  // the first column is on the line and every later one continues it
inline constexpr std::uint8_t kOpenNext = 4;   // the next chunk's first column continues this chunk's last

STRIPELINE_HD std::uint16_t run_plus(std::uint16_t run, int more) {
  const int r = run + more;
  return static_cast<std::uint16_t>(r < kRunCap ? r : kRunCap);
}

// Phase 6 (per lane): the chunk's path (the oracle's trace back), segment
// starts marked; the segment columns seen from inside the chunk alone.
STRIPELINE_HD void lane_path(const LineModelView& view, const LineModelParams& params, int lanes, int lane, const LineModelLaneScratch& scratch) {
  const LineModelView v = view;  // copies in registers (walk_columns says why)
  const LineModelParams p = params;
  const LineModelLaneScratch s = scratch;
  const Chunk c = chunk_of(v.width, lanes, lane);
  if (c.empty()) return;
  const int states = p.candidates + 1;
  int state = s.last[lane];
  std::uint16_t head = 0;
  bool left = true, right = true;
  for (int x = c.end - 1; x >= c.begin; --x) {
    const std::uint8_t b = s.back[static_cast<std::size_t>(x) * states + state];
    const int from = b & 0x0F;
    const bool start = state != 0 && (from == 0 || (b & kBreak) != 0 || x == 0);
    const std::uint8_t chosen = static_cast<std::uint8_t>(state | (start ? kSegmentStart : 0));
    s.chosen[x] = chosen;
    head = !on_line(chosen) ? 0 : (x + 1 < c.end && continues(s.chosen[x + 1]) ? run_plus(head, 1) : 1);
    left = left && continues(chosen);
    if (x > c.begin) right = right && continues(chosen);
    state = from;
  }
  std::uint16_t tail = 0;
  for (int x = c.begin; x < c.end; ++x) tail = continues(s.chosen[x]) ? run_plus(tail, 1) : (on_line(s.chosen[x]) ? 1 : 0);
  right = right && on_line(s.chosen[c.begin]);
  s.tail[lane] = tail, s.head[lane] = head;
  s.open[lane] = static_cast<std::uint8_t>((left ? kOpenLeft : 0) | (right ? kOpenRight : 0));
}

// Phase 7 (one lane, over the chunks): the segment columns before each
// chunk's first column and from it on.
STRIPELINE_HD void lanes_runs(const LineModelView& v, int lanes, const LineModelLaneScratch& s) {
  const int used = lanes_used(v.width, lanes);
  s.run_in[0] = 0;
  for (int l = 0; l < used; ++l) {
    const Chunk c = chunk_of(v.width, lanes, l);
    if (c.end < v.width && continues(s.chosen[c.end])) s.open[l] = static_cast<std::uint8_t>(s.open[l] | kOpenNext);
    s.run_in[l + 1] = (s.open[l] & kOpenLeft) != 0 ? run_plus(s.run_in[l], c.size()) : s.tail[l];
  }
  s.run_out[used] = 0;
  for (int l = used - 1; l >= 0; --l) {
    const bool through = (s.open[l] & kOpenRight) != 0 && (s.open[l] & kOpenNext) != 0;
    s.run_out[l] = through ? run_plus(s.run_out[l + 1], chunk_of(v.width, lanes, l).size()) : s.head[l];
  }
}

// Phase 8 (per lane): each column's segment length (columns up to it from
// the left, from it on to the right); segments shorter than min_length
// emptied and their candidates excluded, as the oracle's trace back does.
STRIPELINE_HD void lane_drop_short(const LineModelView& view, const LineModelParams& params, int lanes, int lane, const LineModelLaneScratch& scratch) {
  const LineModelView v = view;  // copies in registers (walk_columns says why)
  const LineModelParams p = params;
  const LineModelLaneScratch s = scratch;
  const Chunk c = chunk_of(v.width, lanes, lane);
  s.dropped[lane] = 0;
  if (c.empty()) return;
  std::uint16_t run = s.run_in[lane];
  for (int x = c.begin; x < c.end; ++x) {
    run = continues(s.chosen[x]) ? run_plus(run, 1) : (on_line(s.chosen[x]) ? 1 : 0);
    s.run[x] = run;
  }
  std::uint16_t after = (s.open[lane] & kOpenNext) != 0 ? s.run_out[lane + 1] : 0;  // columns of the segment after x
  bool next_continues = (s.open[lane] & kOpenNext) != 0;
  for (int x = c.end - 1; x >= c.begin; --x) {
    const std::uint8_t chosen = s.chosen[x];
    if (!on_line(chosen)) {
      after = 0, next_continues = false;
      continue;
    }
    const int length = s.run[x] + (next_continues ? after : 0);
    after = next_continues ? run_plus(after, 1) : 1;
    next_continues = continues(chosen);
    if (length < p.min_length) {
      s.mask[x] = static_cast<std::uint8_t>(s.mask[x] | (1u << ((chosen & 0x0F) - 1)));
      s.chosen[x] = 0;
      s.dropped[lane] = 1;
    }
  }
}

// Phase 9 (per lane, columns lane, lane + lanes, ...: coalesced on the GPU):
// the output, four columns read before they are written (their loads
// overlap on the GPU).
STRIPELINE_HD void lane_write(const LineModelView& view, const LineModelParams& params, int f, int lanes, int lane, const LineModelLaneScratch& scratch) {
  const LineModelView v = view;  // copies in registers (walk_columns says why)
  const LineModelParams p = params;
  const LineModelLaneScratch s = scratch;
  constexpr int kAtOnce = 4;
  for (int x0 = lane; x0 < v.width; x0 += kAtOnce * lanes) {
    ColumnOutput out[kAtOnce];
    STRIPELINE_UNROLL
    for (int k = 0; k < kAtOnce; ++k) {
      const int x = x0 + k * lanes;
      if (x < v.width) out[k] = chosen_output(v, p, f, x, s.chosen[x] & 0x0F);
    }
    STRIPELINE_UNROLL
    for (int k = 0; k < kAtOnce; ++k) {
      const int x = x0 + k * lanes;
      if (x < v.width) store_output(v, f, x, out[k]);
    }
  }
}

}  // namespace line_model

// What a frame's forward passes took (the tests check each way is exercised).
struct LineLaneStats {
  int rounds = 0;     // rounds in which some lane walked again
  int fallbacks = 0;  // passes solved by the exact phases 1 to 3
};

// The phases in order for one frame, lane after lane: what the block kernel
// runs with its lanes side by side (tests/test_line_model.cpp checks it
// against line_model_frame(), for any warm-up and number of rounds).
// With `ahead` (lanes = kLineBlockLanes, the scratch's link table laid out
// as `ahead` says), pass 0's staging as the processor has it: every
// column staged ahead first (the stage kernel's part), then the model's
// copy.
inline LineLaneStats line_model_frame_lanes(const LineModelView& v, const LineModelParams& p, int f, int lanes, const LineModelLaneScratch& scratch,
                                            int warmup = line_model::kLineWarmup, int rounds = line_model::kLineSpecRounds,
                                            const LineStageAhead* ahead = nullptr) {
  namespace lm = line_model;
  LineModelLaneScratch s = scratch;
  s.link = lm::narrow_link(p);
  LineLaneStats stats;
  if (v.width <= 0) return stats;
  const int used = lm::lanes_used(v.width, lanes);
  for (int pass = 0; pass < kLinePasses; ++pass) {
    if (pass == 0 && ahead != nullptr && ahead->bytes != nullptr && s.link_pair != nullptr) {  // as the block kernel
      for (int x = 0; x < v.width; ++x) lm::stage_ahead_column(v, *ahead, f, x);
      for (int lane = 0; lane < lanes; ++lane) lm::lane_take_staged(v, *ahead, f, lanes, lane, s);
    } else {
      for (int lane = 0; lane < lanes; ++lane) lm::lane_stage(v, p, f, pass, lanes, lane, s);
    }
    for (int lane = 0; lane < lanes; ++lane) lm::lane_speculate(v, p, f, lanes, lane, s, warmup);
    bool exact = false;
    for (int round = 0; round < rounds; ++round) {
      // As the kernel: every lane takes its new start before any walks.
      std::vector<char> need(static_cast<std::size_t>(lanes), 0);
      bool any = false;
      for (int lane = 0; lane < lanes; ++lane) any = (need[lane] = lm::lane_needs_walk(v, lanes, lane, s) ? 1 : 0) || any;
      if (!any) {
        exact = true;
        break;
      }
      ++stats.rounds;
      for (int lane = 0; lane < lanes; ++lane)
        if (need[lane]) lm::lane_walk_again(v, p, f, lanes, lane, s);
    }
    if (!exact) {
      ++stats.fallbacks;
      for (int lane = 0; lane < lanes; ++lane) lm::lane_transfer(v, p, f, pass, lanes, lane, s);
      for (int l = 0; l < used; ++l)
        for (int b = 0; b < kLineStates; ++b) lm::lanes_entering(b, l, s);
      for (int lane = 0; lane < lanes; ++lane) lm::lane_back_pointers(v, p, f, lanes, lane, s);
    }
    if (!exact || !lm::walks_carry_first(s))  // the walks carried them
      for (int lane = 0; lane < lanes; ++lane) lm::lane_first_states(v, p, lanes, lane, s);
    lm::lanes_last_states(v, p, lanes, s);
    for (int lane = 0; lane < lanes; ++lane) lm::lane_path(v, p, lanes, lane, s);
    lm::lanes_runs(v, lanes, s);
    bool dropped = false;
    for (int lane = 0; lane < lanes; ++lane) {
      lm::lane_drop_short(v, p, lanes, lane, s);
      dropped = dropped || s.dropped[lane] != 0;
    }
    if (!dropped) break;
  }
  for (int lane = 0; lane < lanes; ++lane) lm::lane_write(v, p, f, lanes, lane, s);
  return stats;
}

}  // namespace stripeline::kernels
