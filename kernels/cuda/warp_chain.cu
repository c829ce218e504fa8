// The chain for a few frames (the live path's batch of 1): blur ->
// threshold -> the adaptive extraction, a warp per column.
//
// Why: the fused kernel (fused_chain.cu) gives each column one thread, which
// walks its rows alone: the blur, the column's summary, then every
// candidate's evaluation (prominence walks, anchors, run, gates) and centre
// one after the other. Over a 300-frame batch that is the right shape (every
// SM full); one frame has 2048 threads on a few SMs and takes as long as one
// thread's chain of dependent steps (~35 us on an H100, issue 24). Here the
// rows are split over the 32 lanes of a warp:
//
// Grid: one block per (frame, kWarpChainColumns columns), a warp per column.
//  1. load (the block): the strip's rows plus the blur's halo, columns
//     clamped (replicate), into shared memory, column by column;
//  2. blur (per warp, its column): the horizontal pass, then the vertical
//     pass and the threshold: kernels/gaussian.h's blur_h, blur_v and
//     apply_threshold themselves, so the bits are the CPU's;
//  3. per warp: the column's summary (lowest pixel, total variation, the
//     brightest row) by warp reductions, the candidate rows by ballots; the
//     candidates evaluated (adaptive::evaluate) and the valid ones centred
//     (adaptive::centre) into shared memory: up to kWarpEvaluatedCandidates
//     by the whole warp, one after the other, each walk of the evaluation a
//     ballot or a reduction over 32 rows at once (warp_loops.cuh); more (a
//     noisy column) a lane each;
//  4. the lanes empty slots 1.. of the column, a slot each; lane 0 runs the
//     CPU's scan (column_adaptive_scan: selection, the `all` method's kept
//     stripes) over those results and stores the column
//     (detail::store_column, as the fused kernel does).
// Every function of the extraction is the CPU's; only the order of
// independent evaluations changes (evaluate and centre are pure functions of
// the column and the row), so the output is the CPU's bit for bit
// (tests/test_cuda.cpp checks it on every geometry, blur and format).
//
// Frames up to kWarpChainMaxHeight rows (4 rows a lane); method adaptive.
#include <cstdint>
#include <string>

#include "core/cuda/check.h"
#include "core/errors.h"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/live_kernels.h"
#include "kernels/cuda/live_sync.cuh"
#include "kernels/cuda/stripe_kernels.h"
#include "kernels/cuda/warp_loops.cuh"

namespace stripeline::kernels::cuda {

namespace {

constexpr int kColumns = kWarpChainColumns;
constexpr int kLanes = 32;
constexpr int kMasks = kWarpChainMaxHeight / kLanes;  // ballots of candidate rows per column
constexpr unsigned kAll = 0xFFFFFFFFu;

// Shared memory of one block, column-major (a warp's lanes read consecutive
// rows of one column: no bank conflicts), for frames of `height` rows and a
// blur of radius r:
//   stripe: [column][row] the evaluated candidates (8-byte aligned: first);
//   centre: [column][row] the valid ones' centres;
//   value:  [column][row] blurred, thresholded pixels;
//   mid:    [column][row] the horizontal pass (blur on only);
//   mask:   [column][2 kMasks] the candidate rows' and the valid stripes' ballots;
//   raw:    [column + r][row] the unblurred pixels, halo included.
struct Layout {
  std::size_t stripe = 0, centre = 0, value = 0, mid = 0, mask = 0, raw = 0, bytes = 0;
  __host__ __device__ Layout(int height, int radius, int bytes_per_pixel) {
    const auto h = static_cast<std::size_t>(height), c = static_cast<std::size_t>(kColumns);
    std::size_t at = 0;
    stripe = at, at += c * h * sizeof(adaptive::Stripe);
    centre = at, at += c * h * sizeof(std::int32_t);
    value = at, at += c * h * sizeof(std::uint32_t);
    mid = at, at += radius > 0 ? c * h * sizeof(std::uint32_t) : 0;
    mask = at, at += c * 2 * kMasks * sizeof(unsigned);
    raw = at, at += (c + 2 * static_cast<std::size_t>(radius)) * h * static_cast<std::size_t>(bytes_per_pixel);
    bytes = (at + 15) / 16 * 16;
  }
};

// 1: the strip's rows plus the blur's halo (radius r), columns clamped
// (replicate), into `raw`, by the block: each thread one column of the strip,
// every (blockDim / columns)-th row (coalesced: consecutive threads,
// consecutive columns of a row).
template <class T>
__device__ void load_strip(const T* frame, int width, int height, int x0, int r, const Layout& l, unsigned char* smem) {
  constexpr int kAtOnce = 4;  // loads in flight per thread before their stores
  const int cols = kColumns + 2 * r, rows_a_pass = static_cast<int>(blockDim.x) / cols;
  const int j = static_cast<int>(threadIdx.x) % cols, y0 = static_cast<int>(threadIdx.x) / cols;
  if (y0 < rows_a_pass) {  // the threads past the last whole row of a pass idle
    const T* src = frame + clamp_index(x0 - r + j, width);
    T* dst = reinterpret_cast<T*>(smem + l.raw) + j * height;
    for (int ya = y0; ya < height; ya += kAtOnce * rows_a_pass) {
      T pixel[kAtOnce];
#pragma unroll
      for (int k = 0; k < kAtOnce; ++k)
        if (const int y = ya + k * rows_a_pass; y < height) pixel[k] = src[static_cast<std::size_t>(y) * width];
#pragma unroll
      for (int k = 0; k < kAtOnce; ++k)
        if (const int y = ya + k * rows_a_pass; y < height) dst[y] = pixel[k];
    }
  }
  __syncthreads();
}

// 2: column c of the strip blurred and thresholded into `value` by its own
// warp (the horizontal pass reads raw columns c .. c + 2r, loaded by the
// block; the vertical pass only the warp's own `mid` column): no barrier of
// the block.
template <class T>
__device__ void blur_column(int c, int lane, int width, int height, int x0, const ChainParams& p, const std::uint32_t* taps, const Layout& l,
                            unsigned char* smem) {
  const int r = p.taps.size / 2;
  T* raw = reinterpret_cast<T*>(smem + l.raw);
  std::uint32_t* mid = reinterpret_cast<std::uint32_t*>(smem + l.mid) + c * height;
  std::uint32_t* value = reinterpret_cast<std::uint32_t*>(smem + l.value) + c * height;
  if (p.taps.size == 0) {
    for (int y = lane; y < height; y += kLanes) {  // [column][row] alike; the raw pixels thresholded too, as the fused kernel's
      const std::uint32_t v = apply_threshold(raw[c * height + y], p.zero_below);
      value[y] = v;
      raw[c * height + y] = static_cast<T>(v);
    }
    __syncwarp();
    return;
  }
  for (int y = lane; y < height; y += kLanes) {
    // raw column j holds global column clamp(x0 - r + j): blur_h's clamped column gx is raw column gx - x0 + r.
    const T* row = raw + y;
    mid[y] = p.taps.across ? blur_h([&](int gx) { return row[(gx - x0 + r) * height]; }, x0 + c, width, taps, p.taps.size)
                           : blur_h_none(row[(c + r) * height]);
  }
  __syncwarp();
  for (int y = lane; y < height; y += kLanes)
    value[y] = apply_threshold(blur_v([&](int yy) { return mid[yy]; }, y, height, taps, p.taps.size), p.zero_below);
  __syncwarp();
}

// The column's summary (adaptive::summarise's) from the lanes' rows.
template <class Column>
__device__ adaptive::ColumnSummary warp_summary(const Column& col, int height, int lane) {
  std::uint32_t lowest = 0xFFFFFFFFu, top = 0;
  int brightest = height;
  unsigned long long tv = 0;
  for (int y = lane; y < height; y += kLanes) {
    const std::uint32_t v = col(y);
    lowest = v < lowest ? v : lowest;
    if (v > top || (v == top && y < brightest)) top = v, brightest = y;  // the topmost on ties
    if (y > 0) {
      const std::uint32_t u = col(y - 1);
      tv += v > u ? v - u : u - v;
    }
  }
  for (int d = kLanes / 2; d > 0; d /= 2) {
    const std::uint32_t other_lowest = __shfl_xor_sync(kAll, lowest, d), other_top = __shfl_xor_sync(kAll, top, d);
    const int other_brightest = __shfl_xor_sync(kAll, brightest, d);
    tv += __shfl_xor_sync(kAll, tv, d);
    lowest = other_lowest < lowest ? other_lowest : lowest;
    if (other_top > top || (other_top == top && other_brightest < brightest)) top = other_top, brightest = other_brightest;
  }
  adaptive::ColumnSummary s;
  s.lowest = lowest;
  s.top = top;
  s.brightest = brightest;
  s.tv = tv;
  return s;
}

// Each candidate row of the ballots evaluated (and centred when valid) by the
// whole warp, one after the other (detail::WarpLoops); lane 0 stores them.
template <class Column, class Raw>
__device__ void evaluate_by_warp(const Column& col, const Raw& raw, int height, const ColumnParams& cp, std::uint64_t tv, const unsigned* ballot,
                                 int lane, adaptive::Stripe* stripes, std::int32_t* centres, unsigned* masks) {
  const detail::WarpLoops loops(lane);
  for (int m = 0; m < kMasks; ++m)
    for (unsigned rows = ballot[m]; rows != 0; rows &= rows - 1) {
      const int y = m * kLanes + __ffs(static_cast<int>(rows)) - 1;
      const adaptive::Stripe s = adaptive::evaluate(col, raw, height, y, cp, tv, loops);
      const std::int32_t position = s.valid ? adaptive::centre(col, raw, height, s, cp, loops) : 0;
      if (lane != 0) continue;
      stripes[y] = s;
      if (s.valid) centres[y] = position, masks[kMasks + m] |= 1u << (y % kLanes);
    }
}

// The k-th candidate row by lane k, each alone (adaptive::ScalarLoops).
template <class Column, class Raw>
__device__ void evaluate_by_lanes(const Column& col, const Raw& raw, int height, const ColumnParams& cp, std::uint64_t tv, const unsigned* ballot,
                                  int total, int lane, adaptive::Stripe* stripes, std::int32_t* centres, unsigned* masks) {
  for (int k = lane; k < total; k += kLanes) {
    int y = 0;
    for (int m = 0, rank = k; m < kMasks; ++m) {  // the k-th set bit over the ballots
      const int here = __popc(ballot[m]);
      if (rank < here) {
        y = m * kLanes + static_cast<int>(__fns(ballot[m], 0, rank + 1));
        break;
      }
      rank -= here;
    }
    const adaptive::Stripe s = adaptive::evaluate(col, raw, height, y, cp, tv);
    stripes[y] = s;
    if (s.valid) {
      centres[y] = adaptive::centre(col, raw, height, s, cp);
      atomicOr(&masks[kMasks + y / kLanes], 1u << (y % kLanes));
    }
  }
}

// A strip of kColumns columns of one frame, steps 1 to 4, by one block
// (`taps`: the blur's weights in shared memory). `may_store(lane)`, called
// by every lane of a column's warp before its first store, says whether it
// may store (the persistent kernel waits there for the model to have read
// the frame before; false: stopped, the column is left).
template <class T, class MayStore>
__device__ __forceinline__ void chain_strip(const T* frame, int width, int height, int x0, int f, const ChainParams& p, const ProfileView& out,
                                            int by_warp_up_to, unsigned char* smem, const std::uint32_t* taps, const MayStore& may_store) {
  const Layout l(height, p.taps.size / 2, static_cast<int>(sizeof(T)));
  load_strip<T>(frame, width, height, x0, p.taps.size / 2, l, smem);

  const int c = threadIdx.x / kLanes, lane = threadIdx.x % kLanes, x = x0 + c;
  if (x >= width) return;  // the whole warp: no barrier of the block follows
  blur_column<T>(c, lane, width, height, x0, p, taps, l, smem);
  const std::uint32_t* value = reinterpret_cast<const std::uint32_t*>(smem + l.value) + c * height;
  const T* raw_column = reinterpret_cast<const T*>(smem + l.raw) + (c + p.taps.size / 2) * height;
  adaptive::Stripe* stripes = reinterpret_cast<adaptive::Stripe*>(smem + l.stripe) + c * height;
  std::int32_t* centres = reinterpret_cast<std::int32_t*>(smem + l.centre) + c * height;
  unsigned* masks = reinterpret_cast<unsigned*>(smem + l.mask) + c * 2 * kMasks;  // [0, kMasks): candidate rows; [kMasks, 2 kMasks): valid stripes
  auto col = [value](int y) -> std::uint32_t { return value[y]; };
  auto raw = [raw_column](int y) -> std::uint32_t { return raw_column[y]; };
  const ColumnParams& cp = p.column;

  // 3. Every candidate of the column evaluated (and centred when valid): a
  // few by the whole warp, one after the other; more, a lane each.
  adaptive::ColumnSummary summary;
  if (height >= 2) {
    summary = warp_summary(col, height, lane);
    unsigned ballot[kMasks];
    int total = 0;
#pragma unroll
    for (int m = 0; m < kMasks; ++m) {
      const int y = m * kLanes + lane;
      ballot[m] = __ballot_sync(kAll, y < height && adaptive::is_candidate(col, height, y, summary.lowest, cp));
      total += __popc(ballot[m]);
      if (lane == 0) masks[m] = ballot[m], masks[kMasks + m] = 0;
    }
    __syncwarp();
    if (total <= by_warp_up_to)
      evaluate_by_warp(col, raw, height, cp, summary.tv, ballot, lane, stripes, centres, masks);
    else
      evaluate_by_lanes(col, raw, height, cp, summary.tv, ballot, total, lane, stripes, centres, masks);
  }
  if (!may_store(lane)) return;
  // Slots 1.. emptied a lane each; lane 0's emits below overwrite them.
  for (int slot = 1 + lane; slot < out.slots; slot += kLanes) detail::clear_slot(out, f, x, slot);
  __syncwarp();
  if (lane != 0) return;

  // 4. The CPU's scan over those results; a row not evaluated above (none
  // is: the scan asks only candidate rows) would be evaluated here. Its
  // next() steps over the valid stripes alone: an invalid one changes
  // nothing in any selection (each skips it), so leaving it out leaves the
  // result as it was, with fewer steps (noise makes many candidates).
  auto is_evaluated = [&](int y) { return (masks[y / kLanes] >> (y % kLanes)) & 1u; };
  auto next = [&](int y) {
    while (y < height) {
      const unsigned rest = masks[kMasks + y / kLanes] >> (y % kLanes);
      if (rest != 0) return y + __ffs(static_cast<int>(rest)) - 1;
      y = (y / kLanes + 1) * kLanes;
    }
    return height;
  };
  auto evaluate = [&](int y) { return is_evaluated(y) ? stripes[y] : adaptive::evaluate(col, raw, height, y, cp, summary.tv); };
  auto centre = [&](const adaptive::Stripe& s) { return is_evaluated(s.peak) ? centres[s.peak] : adaptive::centre(col, raw, height, s, cp); };
  detail::store_column(
      [&](const auto& emit) { return height < 2 ? 0 : column_adaptive_scan(col, height, cp, emit, summary, next, evaluate, centre); }, out, f, x,
      /*cleared=*/true);
}

template <class T>
__global__ void __launch_bounds__(kColumns * kLanes)
    warp_chain_kernel(const T* __restrict__ in, int width, int height, int strips, ChainParams p, ProfileView out, int by_warp_up_to) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int f = blockIdx.x / strips;
  const int x0 = (blockIdx.x - f * strips) * kColumns;
  __shared__ std::uint32_t taps[kMaxBlurSize];
  if (threadIdx.x < kMaxBlurSize) taps[threadIdx.x] = p.taps.w[threadIdx.x];  // seen after load_strip's barrier
  chain_strip<T>(in + static_cast<std::size_t>(f) * height * width, width, height, x0, f, p, out, by_warp_up_to, smem, taps,
                 [](int) { return true; });
}

// The live path's persistent chain (live_kernels.h): block b takes strip b
// of every frame the mailbox hands over, until the stop.
namespace live_chain {

// Block 0's first warp (of the copy kernel; of the chain without it):
// polls the ticket's request, its 64-byte line in one load (a word a lane),
// until its seq and check agree; every lane gets the line's words. False
// when stopped, or when none came for a.idle_ns, every frame before it is
// modelled (none is cut off in flight: a frame under a sanitizer may take
// longer than the idle time) and the host has not written it since
// (LiveMailbox::parked): the stop raised for every kernel.
__device__ __forceinline__ bool take_request(const LiveChainArgs& a, std::uint64_t ticket, std::uint64_t (&words)[8]) {
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const std::uint64_t* line = reinterpret_cast<const std::uint64_t*>(&a.mailbox->request[ticket % kLiveSlots]);
  std::uint64_t since = live::now_ns();
  for (;;) {
    const std::uint64_t word = lane < 8 ? live::load_relaxed_sys(line + lane) : 0;
    std::uint64_t term = lane >= 1 && lane <= kLiveRequestFields ? live_check_term(ticket, lane, word) : 0;
    for (int d = 4; d >= 1; d /= 2) term ^= __shfl_xor_sync(kAll, term, d);  // lanes 0..7: the XOR of lanes 1..6's terms
#pragma unroll
    for (int i = 0; i < 8; ++i) words[i] = __shfl_sync(kAll, word, i);
    if (words[0] == ticket && words[7] == __shfl_sync(kAll, term, 0)) {
      live::fence_acq_rel_sys();  // the host's stores before its seq (the frame) seen from here on
      return true;
    }
    int verdict = 0;  // lane 0's: 0 poll again, 1 stopped or parked
    if (lane == 0) {
      if (live::load_relaxed_gpu(&a.state->stop) != 0) {
        verdict = 1;
      } else if (live::now_ns() - since >= a.idle_ns && live::modelled_up_to(a.state, ticket - a.first_ticket)) {
        live::store_release_sys(&a.mailbox->parked, ticket);
        live::fence_sc_sys();
        if (live::load_acquire_sys(&a.mailbox->request[ticket % kLiveSlots].seq) == ticket) {  // the host wrote it meanwhile: on
          live::store_release_sys(&a.mailbox->parked, 0);
          since = live::now_ns();
        } else {
          live::store_relaxed_gpu(&a.state->stop, 1);
          verdict = 1;
        }
      }
    }
    if (__shfl_sync(kAll, verdict, 0) != 0) return false;
  }
}

// Frame n's start: block 0's first warp waits for the request in the
// mailbox; its lane 0 keeps the fields in the state and raises `go`; every
// other block waits for `go`. Returns the frame's host pixels in every
// thread (null: stopped).
__device__ const void* begin_frame(const LiveChainArgs& a, std::uint64_t n) {
  __shared__ const void* host_pixels;
  LiveState::Current& c = a.state->current[n % kLiveCurrent];
  if (blockIdx.x == 0) {
    if (threadIdx.x < kLanes) {
      std::uint64_t words[8];
      const bool ok = take_request(a, a.first_ticket + n - 1, words);
      if (threadIdx.x == 0) {
        if (ok) {
          c.start_ns = live::now_ns();
          a.mailbox->finished[(a.first_ticket + n - 1) % kLiveSlots].stamps[0] = c.start_ns;
          c.pixels = reinterpret_cast<const void*>(words[1]);
          c.out = {reinterpret_cast<std::int32_t*>(words[2]), reinterpret_cast<std::uint16_t*>(words[3]), reinterpret_cast<std::uint16_t*>(words[4]),
                   reinterpret_cast<std::uint16_t*>(words[5]), reinterpret_cast<std::uint8_t*>(words[6])};
          live::store_release_gpu(&a.state->go, n);
        }
        host_pixels = ok ? c.pixels : nullptr;
      }
    }
  } else if (threadIdx.x == 0) {
    const bool ok = live::wait_at_least(&a.state->go, n, a.state, /*idle=*/true);
    host_pixels = ok ? c.pixels : nullptr;
  }
  __syncthreads();
  return host_pixels;
}

// Share `part` of `parts` (blockDim.x threads each) of copy group g's
// columns (kLiveCopyGroup strips), every row, host -> device: the frame's
// 16-byte units within them, bytes where a unit straddles the group's edge
// (rows not a multiple of 16 bytes).
__device__ void copy_group_share(const LiveChainArgs& a, const unsigned char* host, unsigned char* device, int group, int part, int parts,
                                 int bytes_per_pixel) {
  const int first = group * kLiveCopyGroup, members = min(kLiveCopyGroup, static_cast<int>(live_chain_blocks(a.width)) - first);
  const std::size_t row_bytes = static_cast<std::size_t>(a.width) * bytes_per_pixel;
  const std::size_t lo = static_cast<std::size_t>(first) * kColumns * bytes_per_pixel;
  const std::size_t hi = static_cast<std::size_t>(min((first + members) * kColumns, a.width)) * bytes_per_pixel;
  const std::size_t per_row = (hi - lo + 15) / 16 + (row_bytes % 16 == 0 ? 0 : 1);  // lo is a multiple of 16
  const std::size_t items = per_row * static_cast<std::size_t>(a.height), step = static_cast<std::size_t>(parts) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(part) * blockDim.x + threadIdx.x; i < items; i += step) {
    const std::size_t row = i / per_row, begin = row * row_bytes + lo, end = row * row_bytes + hi;
    const std::size_t unit = begin / 16 + i % per_row, from = unit * 16;
    if (from >= end) continue;
    if (from >= begin && from + 16 <= end) {
      reinterpret_cast<uint4*>(device)[unit] = reinterpret_cast<const uint4*>(host)[unit];
    } else {
      for (std::size_t b = from > begin ? from : begin, to = from + 16 < end ? from + 16 : end; b < to; ++b) device[b] = host[b];
    }
  }
}

// The copy kernel's block g: frame n's columns of copy group g, once frame
// n - 3's pixels, in the third frame n takes, are all loaded (the model
// finished frame n - 3). Then copied[g] says n. False: stopped.
__device__ bool copy_group(const LiveChainArgs& a, const unsigned char* host, unsigned char* device, std::uint64_t n, int bytes_per_pixel) {
  __shared__ bool ok;
  if (threadIdx.x == 0) ok = n <= 3 || live::wait_modelled(a.state, n - 3);
  __syncthreads();
  if (!ok) return false;
  const int group = static_cast<int>(blockIdx.x);
  copy_group_share(a, host, device, group, 0, 1, bytes_per_pixel);
  __syncthreads();
  if (threadIdx.x == 0) live::arrive(&a.state->copied[group]);
  return true;
}

// A chain block's wait, between frames, for frame n's copy groups that its
// strip and the blur's halo read. False: stopped.
__device__ bool wait_copied(const LiveChainArgs& a, std::uint64_t n) {
  __shared__ bool ok;
  if (threadIdx.x == 0) {
    const int r = a.chain.taps.size / 2, x0 = static_cast<int>(blockIdx.x) * kColumns, span = kLiveCopyGroup * kColumns;
    const int first = max(x0 - r, 0) / span, last = min(x0 + kColumns - 1 + r, a.width - 1) / span;
    ok = true;
    for (int g = first; ok && g <= last; ++g) ok = live::wait_at_least(&a.state->copied[g], n, a.state, /*idle=*/g == first);
    if (blockIdx.x == 0 && ok) live::stamp(a.mailbox, a.first_ticket, n, 1);
  }
  __syncthreads();
  return ok;
}

// Without the copy kernel (LiveChainArgs::copy_ahead false): the block's
// share of its copy group's columns (the group's blocks split it), then the
// waits for the groups the strip and the blur's halo read. False: stopped.
__device__ bool copy_frame(const LiveChainArgs& a, const unsigned char* host, unsigned char* device, std::uint64_t n, int bytes_per_pixel) {
  const int blocks = static_cast<int>(gridDim.x), group = static_cast<int>(blockIdx.x) / kLiveCopyGroup, first = group * kLiveCopyGroup;
  copy_group_share(a, host, device, group, static_cast<int>(blockIdx.x) - first, min(kLiveCopyGroup, blocks - first), bytes_per_pixel);
  __syncthreads();
  __shared__ bool ok;
  if (threadIdx.x == 0) {
    live::arrive(&a.state->copied[group]);
    const int r = a.chain.taps.size / 2, x0 = static_cast<int>(blockIdx.x) * kColumns, span = kLiveCopyGroup * kColumns;
    const int last = min(x0 + kColumns - 1 + r, a.width - 1) / span;
    ok = true;
    for (int g = max(x0 - r, 0) / span; ok && g <= last; ++g)
      ok = live::wait_at_least(&a.state->copied[g], static_cast<std::uint64_t>(min(kLiveCopyGroup, blocks - g * kLiveCopyGroup)) * n, a.state);
    if (blockIdx.x == 0) live::stamp(a.mailbox, a.first_ticket, n, 1);
  }
  __syncthreads();
  return ok;
}

// After the block's strip: its frame number in `stored`, then, once its
// left neighbour's strip is stored too (staging column x reads column
// x - 1), its columns of the model's pass 0 staged (stage_ahead_pair, four
// threads a column), then `staged`. False: stopped.
__device__ bool stage_frame(const LiveChainArgs& a, std::uint64_t n) {
  __shared__ bool ok;
  if (threadIdx.x == 0) {
    __threadfence();  // the block's candidates before its number
    live::store_release_gpu(&a.state->stored[blockIdx.x], n);
    if (blockIdx.x == 0) live::stamp(a.mailbox, a.first_ticket, n, 2);
    ok = a.ahead.bytes == nullptr || blockIdx.x == 0 || live::wait_at_least(&a.state->stored[blockIdx.x - 1], n, a.state);
  }
  __syncthreads();
  if (!ok) return false;
  if (a.ahead.bytes != nullptr) {
    constexpr int kWays = 2 * kLineStagedSlots;
    static_assert(kColumns * kWays <= kColumns * kLanes, "a thread a column's way");
    const int x0 = static_cast<int>(blockIdx.x) * kColumns, items = (min(x0 + kColumns, a.width) - x0) * kWays, t = static_cast<int>(threadIdx.x);
    if (t < items) line_model::stage_ahead_pair(a.view, a.ahead, static_cast<int>(n & 1), x0 + t / kWays, t % kWays);
    __syncthreads();
  }
  if (threadIdx.x == 0) live::arrive(&a.state->staged);
  return true;
}

}  // namespace live_chain

// 96 registers: four blocks an SM with room beside them. Left to itself
// ptxas took 117 (61,440 of an SM's 65,536 for the four), and the engine's
// start then failed whenever other kernels held a few on some SMs (no spill
// at 96).
template <class T>
__global__ void __maxnreg__(96) live_chain_kernel(const __grid_constant__ LiveChainArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ std::uint32_t taps[kMaxBlurSize];
  if (threadIdx.x < kMaxBlurSize) taps[threadIdx.x] = a.chain.taps.w[threadIdx.x];
  if (threadIdx.x == 0) atomicAdd(&a.state->alive, 1u);
  const int x0 = static_cast<int>(blockIdx.x) * kColumns;
  for (std::uint64_t n = 1;; ++n) {
    // Pixels n % 3: frame n - 3's, which every block had loaded before the
    // model's frame n - 3 ended, which the copy kernel waits for (the
    // blocks copying themselves: which this block waited for in may_store
    // of frame n - 1). Candidates and staging n & 1: frame n - 2's, which
    // the model has done with once frame n - 2 is modelled (may_store).
    unsigned char* pixels = a.pixels + (n % 3) * a.frame_stride;
    const int buffer = static_cast<int>(n & 1);
    if (a.copy_ahead) {
      if (!live_chain::wait_copied(a, n)) return;
    } else {
      const void* host = live_chain::begin_frame(a, n);
      if (host == nullptr || !live_chain::copy_frame(a, static_cast<const unsigned char*>(host), pixels, n, static_cast<int>(sizeof(T)))) return;
    }
    auto may_store = [&](int lane) {
      bool ok = true;
      if (lane == 0 && n > 2) ok = live::wait_modelled(a.state, n - 2);
      return __shfl_sync(kAll, ok ? 1 : 0, 0) != 0;
    };
    chain_strip<T>(reinterpret_cast<const T*>(pixels), a.width, a.height, x0, buffer, a.chain, a.candidates, a.by_warp_up_to, smem, taps, may_store);
    __syncthreads();
    if (!live_chain::stage_frame(a, n)) return;
  }
}

// The live path's copy kernel: block g copies copy group g's columns of
// every frame the mailbox hands over (block 0 polls it), up to three frames
// ahead of the model, so frame n + 1's copy overlaps frame n's chain.
__global__ void __launch_bounds__(kLiveCopyThreads) live_copy_kernel(const __grid_constant__ LiveChainArgs a, int bytes_per_pixel) {
  if (threadIdx.x == 0) atomicAdd(&a.state->alive, 1u);
  for (std::uint64_t n = 1;; ++n) {
    const void* host = live_chain::begin_frame(a, n);
    if (host == nullptr) return;
    unsigned char* pixels = a.pixels + (n % 3) * a.frame_stride;
    if (!live_chain::copy_group(a, static_cast<const unsigned char*>(host), pixels, n, bytes_per_pixel)) return;
  }
}

template <class T>
const char* type_name() {
  return sizeof(T) == 1 ? "uint8" : "uint16";
}

}  // namespace

std::size_t warp_chain_shared_bytes(int bytes_per_pixel, int frame_height, int blur_size) {
  return Layout(frame_height, blur_size / 2, bytes_per_pixel).bytes;
}

bool warp_chain_supports(const ChainParams& p, int frame_height) {
  return p.column.method == ColumnMethod::Adaptive && frame_height >= 1 && frame_height <= kWarpChainMaxHeight;
}

template <class T>
void warp_chain(FramesView<const T> in, const ChainParams& p, ProfileView out, cudaStream_t stream, bool by_warp) {
  if (in.frames <= 0 || in.width <= 0 || in.frame_height <= 0) return;
  if (!warp_chain_supports(p, in.frame_height))
    throw ConfigError("warp chain: method or frame height " + std::to_string(in.frame_height) + " not supported (expected adaptive, at most " +
                      std::to_string(kWarpChainMaxHeight) + " rows)");
  const int strips = (in.width + kColumns - 1) / kColumns;
  const unsigned blocks = static_cast<unsigned>(in.frames) * static_cast<unsigned>(strips);
  const std::size_t shared = warp_chain_shared_bytes(static_cast<int>(sizeof(T)), in.frame_height, p.taps.size);
  warp_chain_kernel<T><<<blocks, kColumns * kLanes, shared, stream>>>(in.data, in.width, in.frame_height, strips, p, out,
                                                                          by_warp ? kWarpEvaluatedCandidates : 0);
  STRIPELINE_CUDA_CHECK_LAUNCH(std::string("warp_chain_kernel<") + type_name<T>() + "> (" + std::to_string(blocks) + " blocks, " +
                               std::to_string(shared) + " bytes of shared memory)");
}

template void warp_chain<std::uint8_t>(FramesView<const std::uint8_t>, const ChainParams&, ProfileView, cudaStream_t, bool);
template void warp_chain<std::uint16_t>(FramesView<const std::uint16_t>, const ChainParams&, ProfileView, cudaStream_t, bool);

void load_live_kernels() {
  cudaFuncAttributes a{};
  STRIPELINE_CUDA_CHECK(cudaFuncGetAttributes(&a, live_chain_kernel<std::uint8_t>));
  STRIPELINE_CUDA_CHECK(cudaFuncGetAttributes(&a, live_chain_kernel<std::uint16_t>));
  STRIPELINE_CUDA_CHECK(cudaFuncGetAttributes(&a, live_copy_kernel));
  // Its blocks beside the chain's: the chain's shared memory on their SM
  // (launch_live_chain).
  STRIPELINE_CUDA_CHECK(cudaFuncSetAttribute(live_copy_kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  load_live_line_model_kernel();
}

template <class T>
void launch_live_chain(const LiveChainArgs& a, cudaStream_t copy_stream, cudaStream_t stream) {
  static_assert(kMaxBlurSize / 2 < kLiveCopyGroup * kColumns, "a strip's halo reaches the neighbouring copy groups at most");
  if (!warp_chain_supports(a.chain, a.height) || live_chain_blocks(a.width) > static_cast<unsigned>(kLiveMaxBlocks) || a.frame_bytes != static_cast<std::size_t>(a.width) * a.height * sizeof(T) ||
      a.frame_stride < a.frame_bytes || a.frame_stride % 16 != 0)
    throw ConfigError("live chain: " + std::to_string(a.width) + "x" + std::to_string(a.height) +
                      " frames not supported (expected the adaptive method, at most " + std::to_string(kWarpChainMaxHeight) +
                      " rows, at most " + std::to_string(kLiveMaxBlocks * kColumns) +
                      " columns, three frames' device memory at a 16-byte multiple apart)");
  const unsigned blocks = live_chain_blocks(a.width);
  const std::size_t shared = warp_chain_shared_bytes(static_cast<int>(sizeof(T)), a.height, a.chain.taps.size);
  live_chain_kernel<T><<<blocks, kColumns * kLanes, shared, stream>>>(a);
  STRIPELINE_CUDA_CHECK_LAUNCH(std::string("live_chain_kernel<") + type_name<T>() + "> (" + std::to_string(blocks) + " blocks)");
  // The copy kernel after the chain, into the room its blocks leave: an SM
  // that takes a copy block first would be set up for the copy kernel's
  // (nil) shared memory, and no chain block would fit beside it until the
  // SM idles, which persistent kernels never let it (the engine did not
  // start on an H200, 512 strips).
  if (a.copy_ahead) {
    live_copy_kernel<<<live_copy_blocks(a.width), kLiveCopyThreads, 0, copy_stream>>>(a, static_cast<int>(sizeof(T)));
    STRIPELINE_CUDA_CHECK_LAUNCH("live_copy_kernel (" + std::to_string(live_copy_blocks(a.width)) + " blocks)");
  }
}

template void launch_live_chain<std::uint8_t>(const LiveChainArgs&, cudaStream_t, cudaStream_t);
template void launch_live_chain<std::uint16_t>(const LiveChainArgs&, cudaStream_t, cudaStream_t);

}  // namespace stripeline::kernels::cuda
