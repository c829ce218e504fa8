// CUDA kernel of the line model. See line_model_kernels.h.
#include <atomic>
#include <string>

#include <cuda_runtime.h>

#include "core/cuda/check.h"
#include "kernels/cuda/line_model_kernels.h"
#include "kernels/cuda/live_kernels.h"
#include "kernels/cuda/live_sync.cuh"
#include "kernels/line_model_lanes.h"

namespace stripeline::kernels::cuda {

namespace {

namespace lm = line_model;

constexpr int kWarp = kLineKernelLanes;
constexpr unsigned kFullMask = 0xFFFFFFFFu;
// Shared memory a block may take: the opt-in set by configure_line_model,
// up to what a 2048-column frame with 8 candidates needs (~50 KiB), which
// leaves an SM four frames at once. (Caching the first two candidates of
// every column there too, 118 KiB, left one frame per SM: 1.27 ms per
// production batch instead of 0.92 on an H100.)
constexpr std::size_t kDefaultShared = 48 * 1024, kMostShared = 56 * 1024;
std::atomic<std::size_t> g_shared_limit{kDefaultShared};
std::atomic<std::size_t> g_block_shared_limit{0};  // 0 until configure_line_model: the block kernel unused
std::atomic<std::size_t> g_live_shared_limit{0};   // the persistent model's, likewise

// Frame f's scratch: the fixed part at the start of shared memory, the
// column arrays after it or, when they do not fit, in the global scratch.
__device__ LineModelLaneScratch frame_scratch(const LineModelParams& p, int width, int lanes, int f, unsigned char* shared,
                                              unsigned char* global_columns, bool columns_shared) {
  const LineLaneLayout size = line_lane_layout(p.candidates, width, lanes, nullptr, nullptr);
  unsigned char* columns = columns_shared ? shared + size.fixed_bytes : global_columns + static_cast<std::size_t>(f) * size.column_bytes;
  return line_lane_layout(p.candidates, width, lanes, shared, columns).scratch;
}

// One frame per block of one warp: the phases of line_model_frame_lanes()
// with the lanes side by side (__syncwarp between phases).
__global__ void line_model_kernel(LineModelView v, LineModelParams p, unsigned char* global_columns, bool columns_shared) {
  extern __shared__ __align__(16) unsigned char shared[];
  const int f = static_cast<int>(blockIdx.x), lane = static_cast<int>(threadIdx.x);
  const LineModelLaneScratch s = frame_scratch(p, v.width, kWarp, f, shared, global_columns, columns_shared);
  const int used = lm::lanes_used(v.width, kWarp);
  for (int pass = 0; pass < kLinePasses; ++pass) {
    lm::lane_transfer(v, p, f, pass, kWarp, lane, s);
    __syncwarp();
    for (int l = 0; l < used; ++l) {
      if (lane < kLineStates) lm::lanes_entering(lane, l, s);
      __syncwarp();
    }
    lm::lane_back_pointers(v, p, f, kWarp, lane, s);
    __syncwarp();
    lm::lane_first_states(v, p, kWarp, lane, s);
    __syncwarp();
    if (lane == 0) lm::lanes_last_states(v, p, kWarp, s);
    __syncwarp();
    lm::lane_path(v, p, kWarp, lane, s);
    __syncwarp();
    if (lane == 0) lm::lanes_runs(v, kWarp, s);
    __syncwarp();
    lm::lane_drop_short(v, p, kWarp, lane, s);
    const bool dropped = __any_sync(kFullMask, s.dropped[lane] != 0);
    __syncwarp();
    if (!dropped) break;
  }
  lm::lane_write(v, p, f, kWarp, lane, s);
}


// ---------------------------------------------------------------------------
// One frame per block of kBlockLanes threads: chunks of width / 256 columns
// (8 for 2,048), so the per-lane phases walk 8 columns instead of 64. The
// forward pass is the speculative one (line_model_frame_lanes(): each lane
// walks its chunk from a guess, in rounds until every lane agrees with the
// one before), and the three scans over the lanes run in log depth: the
// entering scores (the fallback's) over the block's tree of lanes, the
// chosen states at the chunks' ends and the segment lengths within each
// warp and over the 8 warps. Every scan is of exact
// integer functions (max-plus matrices, maps of states, saturated counts),
// so any order of composition gives the sequential loops' values: the
// CPU test of the phases (lane after lane) and the oracle stay the check.
constexpr int kBlockLanes = kLineBlockLanes;
constexpr int kBlockWarps = kBlockLanes / kWarp;

// The block's own scratch beside the phases' (static shared memory).
struct BlockScan {
  unsigned long long warp_map[kBlockWarps];                       // each warp's composed map of states (below)
  unsigned warp_run_in[kBlockWarps], warp_run_out[kBlockWarps];   // each warp's composed run functions
  std::uint8_t warp_last[kBlockWarps];                            // the chosen state at each warp's last chunk's end
  std::uint16_t warp_run_before[kBlockWarps], warp_run_after[kBlockWarps];
};

// The entering scores of every chunk in log depth: a work-efficient
// (Blelloch) scan over the block's lanes of the chunks' (max, +) transfer
// matrices, in place in s.transfer, one thread per tree node. Up: the node
// whose range ends at lane j (ranges of 2d lanes, j = 2d k + 2d - 1) gets
// T(left half) x T(right half) where T(right half) was, so the left half's
// product stays at its own right end for the way down. Down: s.entering[j]
// holds the scores entering node j's range; its left half gets them as they
// are, its right half gets them times the left half's product. Lanes past
// `used` are the identity, so lane `used` ends with the scores at the last
// column. Every step is an exact integer max/plus, so the scores are the
// sequential loop's in any order (tests: the CPU phases lane after lane).
__device__ int states_before(const LineModelLaneScratch& s, int l) { return l == 0 ? 1 : s.n_last[l - 1] + 1; }

// R = L x R in place, column by column (each column of R read into
// registers before it is overwritten): L rows x mid, R mid x cols.
__device__ void multiply_into_right(const std::int64_t* left, std::int64_t* right, int rows, int mid, int cols, int stride) {
  for (int c = 0; c < cols; ++c) {
    std::int64_t in[kLineStates], out[kLineStates];
#pragma unroll
    for (int m = 0; m < kLineStates; ++m) in[m] = m < mid ? right[m * stride + c] : lm::kNone;
#pragma unroll
    for (int a = 0; a < kLineStates; ++a) {
      std::int64_t best = lm::kNone;
      if (a < rows)
#pragma unroll
        for (int m = 0; m < kLineStates; ++m) {
          if (m >= mid) break;
          const std::int64_t x = left[a * stride + m], y = in[m];
          const std::int64_t score = x <= lm::kNone || y <= lm::kNone ? lm::kNone : x + y;
          if (score > best) best = score;
        }
      out[a] = best;
    }
#pragma unroll
    for (int a = 0; a < kLineStates; ++a)
      if (a < rows) right[a * stride + c] = out[a];
  }
}

// v = v x M in place: v has n entries, M n x cols.
__device__ void vector_times(std::int64_t* v, const std::int64_t* matrix, int n, int cols, int stride) {
  std::int64_t in[kLineStates];
#pragma unroll
  for (int a = 0; a < kLineStates; ++a) in[a] = a < n ? v[a] : lm::kNone;
#pragma unroll
  for (int c = 0; c < kLineStates; ++c) {
    if (c >= cols) break;
    std::int64_t best = lm::kNone;
#pragma unroll
    for (int a = 0; a < kLineStates; ++a) {
      if (a >= n) break;
      const std::int64_t x = in[a], y = matrix[a * stride + c];
      const std::int64_t score = x <= lm::kNone || y <= lm::kNone ? lm::kNone : x + y;
      if (score > best) best = score;
    }
    v[c] = best;
  }
}

template <int kLanes>
__device__ void block_entering(const LineModelLaneScratch& s, int used, int tid) {
  const int states = s.states;
  std::int64_t* const entering = s.entering;
  auto matrix = [&](int l) { return lm::transfer_row(s, l, 0); };
  auto vec = [&](int l) { return entering + static_cast<std::size_t>(l) * kLineStates; };
  if (tid >= used && tid < kLanes) {  // the identity on the last column's states
    const int n = s.n_last[used - 1];
    s.n_last[tid] = static_cast<std::uint8_t>(n);
    for (int a = 0; a <= n; ++a)
      for (int b = 0; b <= n; ++b) matrix(tid)[a * states + b] = a == b ? 0 : lm::kNone;
  }
  __syncthreads();
  for (int d = 1; d < kLanes; d *= 2) {
    const int j = (tid + 1) * 2 * d - 1;
    if (j < kLanes) multiply_into_right(matrix(j - d), matrix(j), states_before(s, j - 2 * d + 1), s.n_last[j - d] + 1, s.n_last[j] + 1, states);
    __syncthreads();
  }
  if (tid == 0) {
    if (used == kLanes) {  // the scores at the last column: the frame's start times the whole product
      std::int64_t* last = vec(kLanes);
      last[0] = 0;
      vector_times(last, matrix(kLanes - 1), 1, s.n_last[kLanes - 1] + 1, states);
    }
    vec(kLanes - 1)[0] = 0;  // before column 0: "no line", nothing else
  }
  __syncthreads();
  for (int d = kLanes / 2; d >= 1; d /= 2) {
    const int j = (tid + 1) * 2 * d - 1;
    if (j < kLanes) {
      const int n = states_before(s, j - 2 * d + 1);
      std::int64_t* right = vec(j);
      std::int64_t* left = vec(j - d);
      for (int a = 0; a < n; ++a) left[a] = right[a];
      vector_times(right, matrix(j - d), n, s.n_last[j - d] + 1, states);
    }
    __syncthreads();
  }
}

// Maps of states, 4 bits per state in 64 bits: (f o g)(t) = f(g(t)).
__device__ unsigned long long map_compose(unsigned long long f, unsigned long long g) {
  unsigned long long out = 0;
  for (int t = 0; t < 16; ++t) out |= ((f >> (4 * ((g >> (4 * t)) & 0xF))) & 0xF) << (4 * t);
  return out;
}
constexpr unsigned long long kIdentityMap = 0xFEDCBA9876543210ull;
__device__ int map_apply(unsigned long long f, int t) { return static_cast<int>((f >> (4 * t)) & 0xF); }

// The chosen state at each chunk's last column (lanes_last_states in log
// depth). last[l - 1] = m_l(last[l]) with m_l(t) = back(first column of
// chunk l, first[l][t]); last[used - 1] = the frame's best final state.
// Within a warp a suffix scan of compositions; over the warps, one lane.
__device__ void block_last_states(const LineModelView& v, const LineModelParams& p, const LineModelLaneScratch& s, int used, int warp, int lane,
                                  BlockScan& b) {
  const int l = warp * kWarp + lane, states = p.candidates + 1;
  unsigned long long m = kIdentityMap;
  if (l >= 1 && l < used) {
    const std::size_t begin = static_cast<std::size_t>(lm::chunk_of(v.width, kBlockLanes, l).begin);
    m = 0;
    for (int t = 0; t <= s.n_last[l]; ++t) m |= static_cast<unsigned long long>(s.back[begin * states + s.first[l * kLineStates + t]] & 0x0F) << (4 * t);
  }
  // Inclusive suffix within the warp: r = m_l o m_{l+1} o ... o m_(warp's last).
  unsigned long long r = m;
  for (int d = 1; d < kWarp; d *= 2) {
    const unsigned long long after = __shfl_down_sync(kFullMask, r, d);
    if (lane + d < kWarp) r = map_compose(r, after);
  }
  if (lane == 0) b.warp_map[warp] = r;
  __syncthreads();
  if (threadIdx.x == 0) {
    const int last_warp = (used - 1) / kWarp;
    int state = lm::final_state(s.entering + static_cast<std::size_t>(used) * kLineStates, s.n_last[used - 1]);
    for (int w = kBlockWarps - 1; w >= 0; --w) {
      b.warp_last[w] = static_cast<std::uint8_t>(state);  // last[32 w + 31] (lanes beyond `used` map as the identity)
      if (w <= last_warp) state = map_apply(b.warp_map[w], state);
    }
  }
  __syncthreads();
  // last[l] = m_{l+1} o ... o m_(warp's last) (last[32 w + 31]).
  const unsigned long long next = __shfl_down_sync(kFullMask, r, 1);
  if (l < used) s.last[l] = static_cast<std::uint8_t>(lane == kWarp - 1 ? b.warp_last[warp] : map_apply(next, b.warp_last[warp]));
}

// Run functions r -> r + k (saturated) or a constant c: bit 16 set for a
// constant, the low 16 bits k or c. (f o g): g first.
constexpr unsigned kRunConstant = 1u << 16;
__device__ unsigned run_compose(unsigned f, unsigned g) {
  if (f & kRunConstant) return f;
  const unsigned sum = min((g & 0xFFFFu) + (f & 0xFFFFu), static_cast<unsigned>(lm::kRunCap));
  return (g & kRunConstant) | sum;
}
__device__ std::uint16_t run_apply(unsigned f, std::uint16_t r) {
  if (f & kRunConstant) return static_cast<std::uint16_t>(f & 0xFFFFu);
  return lm::run_plus(r, static_cast<int>(f & 0xFFFFu));
}

// lanes_runs in log depth: run_in[l + 1] = f_l(run_in[l]) (prefix),
// run_out[l] = g_l(run_out[l + 1]) (suffix), each a scan of compositions.
__device__ void block_runs(const LineModelView& v, const LineModelLaneScratch& s, int used, int warp, int lane, BlockScan& b) {
  const int l = warp * kWarp + lane;
  unsigned f = 0, g = 0;  // the identity (add 0)
  if (l < used) {
    const lm::Chunk c = lm::chunk_of(v.width, kBlockLanes, l);
    if (c.end < v.width && lm::continues(s.chosen[c.end])) s.open[l] = static_cast<std::uint8_t>(s.open[l] | lm::kOpenNext);
    const std::uint8_t open = s.open[l];
    f = (open & lm::kOpenLeft) != 0 ? static_cast<unsigned>(c.size()) : (kRunConstant | s.tail[l]);
    g = (open & lm::kOpenRight) != 0 && (open & lm::kOpenNext) != 0 ? static_cast<unsigned>(c.size()) : (kRunConstant | s.head[l]);
  }
  unsigned prefix = f, suffix = g;  // f_l o ... o f_(warp's first); g_l o ... o g_(warp's last)
  for (int d = 1; d < kWarp; d *= 2) {
    const unsigned before = __shfl_up_sync(kFullMask, prefix, d), after = __shfl_down_sync(kFullMask, suffix, d);
    if (lane >= d) prefix = run_compose(prefix, before);
    if (lane + d < kWarp) suffix = run_compose(suffix, after);
  }
  if (lane == kWarp - 1) b.warp_run_in[warp] = prefix;
  if (lane == 0) b.warp_run_out[warp] = suffix;
  __syncthreads();
  if (threadIdx.x == 0) {
    std::uint16_t run = 0;
    for (int w = 0; w < kBlockWarps; ++w) b.warp_run_before[w] = run, run = run_apply(b.warp_run_in[w], run);
    run = 0;
    for (int w = kBlockWarps - 1; w >= 0; --w) b.warp_run_after[w] = run, run = run_apply(b.warp_run_out[w], run);
  }
  __syncthreads();
  if (l == 0) s.run_in[0] = 0;
  if (l < used) {
    s.run_in[l + 1] = run_apply(prefix, b.warp_run_before[warp]);
    s.run_out[l] = run_apply(suffix, b.warp_run_after[warp]);
  }
  if (l == used - 1) s.run_out[used] = 0;
}

// The forward pass's parts, each compiled on its own (not inlined): the
// exact one's transfer matrices need every register and, inlined, made the
// kernel spill the speculative walks' scores and candidates as well.
__device__ int g_warmup = lm::kLineWarmup;  // columns; set_line_model_warmup (the bench) changes it
__device__ bool g_narrow_walks = true;       // set_line_model_narrow_walks (the bench) changes it
__device__ bool g_link_table = true;         // set_line_model_link_table (the bench) changes it
__device__ __noinline__ void speculate(const LineModelView& v, const LineModelParams& p, int f, int lane, const LineModelLaneScratch& s) {
  lm::lane_speculate(v, p, f, kBlockLanes, lane, s, g_warmup);
}
__device__ __noinline__ void walk_again(const LineModelView& v, const LineModelParams& p, int f, int lane, const LineModelLaneScratch& s) {
  lm::lane_walk_again(v, p, f, kBlockLanes, lane, s);
}
// Pass 0 staged ahead (LineStageAhead): the span copied into the fixed
// region at `to` (the scratch's span). On sm_90 by one bulk copy (the Tensor
// Memory Accelerator), issued by one thread at the kernel's start, beside
// the scratch's set-up, an mbarrier counting its bytes in; the lanes'
// 16-byte asynchronous copies took ~2.9 us a frame for the 2,048-column
// frame's 116 KiB (call 3 of session 14), the bulk copy 2.4 us (call 4).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// The barrier counting the bulk copies' bytes in: set up once per block (a
// block of the live model takes a copy every frame, its phase flipping:
// waiters pass the frame's parity), seen by the copy engine after the fence.
__device__ void init_staged_barrier(std::uint64_t* arrived) {
  const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(arrived));
  asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(bar) : "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ void issue_staged_copy(const LineStageAhead& ahead, int f, unsigned char* to, std::uint64_t* arrived) {
  const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(arrived));
  const unsigned bulk = static_cast<unsigned>((ahead.end - ahead.begin) / 16 * 16);  // 16-byte multiples: the bulk copy's unit
  std::uint64_t from = 0;
  asm volatile("cvta.to.global.u64 %0, %1;" : "=l"(from) : "l"(ahead.bytes + static_cast<std::size_t>(f) * ahead.frame_bytes));
  asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(bar), "r"(bulk) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   static_cast<unsigned>(__cvta_generic_to_shared(to))),
               "l"(from), "r"(bulk), "r"(bar)
               : "memory");
}
#endif
// Every thread that wrote the shared memory a bulk copy will write over,
// before the block's barrier that precedes the copy's issue: the copy
// engine (the async proxy) then writes after those writes (the PTX memory
// model's order between proxies; racecheck reported the live model's copies
// as write-write hazards with only the issuing thread's fence).
__device__ __forceinline__ void fence_before_bulk_copy() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
// Then, every thread (after a barrier since the issue; the kernel's follows):
// the bytes past the bulk copy's, the masks cleared, and the wait for it.
// Elsewhere than sm_90 the whole copy here (lane_take_staged). Compiled on
// its own (inlined, the kernel spilled).
__device__ __noinline__ void take_staged_ahead(const LineModelView& v, const LineStageAhead& ahead, int f, int lane, const LineModelLaneScratch& s,
                                               std::uint64_t* arrived, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned char* to = reinterpret_cast<unsigned char*>(s.link_pair);
  const unsigned char* from = ahead.bytes + static_cast<std::size_t>(f) * ahead.frame_bytes;
  const std::size_t span = ahead.end - ahead.begin;
  for (std::size_t i = span / 16 * 16 + static_cast<std::size_t>(lane); i < span; i += kBlockLanes) to[i] = from[i];
  lm::lane_clear_masks(v, kBlockLanes, lane, s);
  const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(arrived));
  for (unsigned done = 0; done == 0;)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#else
  (void)arrived, (void)parity;
  lm::lane_take_staged(v, ahead, f, kBlockLanes, lane, s);
#endif
}
// The exact forward pass (the fallback): transfer matrices, their scan, the back-pointers.
__device__ __noinline__ void exact_forward_pass(const LineModelView& v, const LineModelParams& p, int f, int pass, int used, int lane,
                                                const LineModelLaneScratch& s) {
  lm::lane_transfer(v, p, f, pass, kBlockLanes, lane, s);
  __syncthreads();
  block_entering<kBlockLanes>(s, used, lane);
  __syncthreads();
  lm::lane_back_pointers(v, p, f, kBlockLanes, lane, s);
  __syncthreads();
}

// Phase boundaries of the block kernel, for the bench's cycle profile
// (line_model_block_phase_cycles): kTimed instantiations have thread 0 add
// each phase's clock64() cycles to g_phase_cycles[pass][phase].
constexpr int kPhases = kLinePhaseCount;
__device__ unsigned long long g_phase_cycles[kLinePasses + 1][kPhases];

template <bool kTimed>
struct PhaseClock {
  long long at = 0;
  __device__ PhaseClock() {
    if constexpr (kTimed) at = clock64();
  }
  __device__ void mark(int pass, int phase) {
    if constexpr (kTimed) {
      if (threadIdx.x != 0) return;
      const long long now = clock64();
      atomicAdd(&g_phase_cycles[pass][phase], static_cast<unsigned long long>(now - at));  // blocks run side by side
      at = now;
    }
  }
  __device__ void count_round() {
    if constexpr (kTimed)
      if (threadIdx.x == 0) atomicAdd(&g_phase_cycles[kLinePasses][2], 1ull);
  }
  __device__ void count_fallback() {
    if constexpr (kTimed)
      if (threadIdx.x == 0) atomicAdd(&g_phase_cycles[kLinePasses][3], 1ull);
  }
};

// Frame f's scratch for the block kernels (thread 0's, into shared memory):
// frame_scratch with the bench's switches (narrow walks, the link table).
__device__ LineModelLaneScratch block_scratch(const LineModelParams& p, int width, int f, unsigned char* shared, unsigned char* global_columns,
                                              bool columns_shared) {
  LineModelLaneScratch s = frame_scratch(p, width, kBlockLanes, f, shared, global_columns, columns_shared);
  s.narrow_walks = g_narrow_walks;
  s.link = lm::narrow_link(p);
  if (!g_link_table) s.link_pair = s.link_fresh = nullptr;
  return s;
}

// Frame f of the block kernel: the passes' phases over the candidates of
// `v`, then the write into its out arrays (the persistent kernel's `v`
// carries its request's). Returns the passes run (kLinePasses when every
// pass dropped a segment). Every thread of the block.
template <bool kTimed>
__device__ __forceinline__ int model_frame(const LineModelView& v, const LineModelParams& p, int f, const LineModelLaneScratch& s, BlockScan& scan,
                                           bool staged_ahead, const LineStageAhead& ahead, std::uint64_t* staged_arrived, unsigned staged_parity,
                                           PhaseClock<kTimed>& clock) {
  const int lane_id = static_cast<int>(threadIdx.x), warp = lane_id / kWarp, lane = lane_id % kWarp;
  const int used = lm::lanes_used(v.width, kBlockLanes);
  int pass = 0;
  for (; pass < kLinePasses; ++pass) {
    // The speculative forward pass (kernels/line_model_lanes.h), in rounds.
    if (pass == 0 && staged_ahead)
      take_staged_ahead(v, ahead, f, lane_id, s, staged_arrived, staged_parity);
    else
      lm::lane_stage(v, p, f, pass, kBlockLanes, lane_id, s);
    __syncthreads();
    clock.mark(pass, 0);
    speculate(v, p, f, lane_id, s);
    __syncthreads();
    clock.mark(pass, 1);
    bool exact = false;
    for (int round = 0; round < lm::kLineSpecRounds; ++round) {
      const bool need = lm::lane_needs_walk(v, kBlockLanes, lane_id, s);
      if (!__syncthreads_or(need)) {
        exact = true;
        break;
      }
      clock.count_round();
      if (need) walk_again(v, p, f, lane_id, s);
      __syncthreads();
    }
    clock.mark(pass, 2);
    if (!exact) {
      clock.count_fallback();
      exact_forward_pass(v, p, f, pass, used, lane_id, s);
    }
    clock.mark(pass, 3);
    if (!exact || !lm::walks_carry_first(s)) lm::lane_first_states(v, p, kBlockLanes, lane_id, s);  // else the walks carried them
    __syncthreads();
    clock.mark(pass, 4);
    block_last_states(v, p, s, used, warp, lane, scan);
    __syncthreads();
    clock.mark(pass, 5);
    lm::lane_path(v, p, kBlockLanes, lane_id, s);
    __syncthreads();
    clock.mark(pass, 6);
    block_runs(v, s, used, warp, lane, scan);
    __syncthreads();
    clock.mark(pass, 7);
    lm::lane_drop_short(v, p, kBlockLanes, lane_id, s);
    const bool again = __syncthreads_or(s.dropped[lane_id] != 0);
    clock.mark(pass, 8);
    if (!again) break;
  }
  lm::lane_write(v, p, f, kBlockLanes, lane_id, s);
  return pass;
}

template <bool kTimed>
__global__ void __launch_bounds__(kBlockLanes, 1)
    line_model_block_kernel(const __grid_constant__ LineModelView v, const __grid_constant__ LineModelParams p, unsigned char* global_columns,
                            bool columns_shared, const __grid_constant__ LineStageAhead ahead) {
  // The phases take the views and the scratch by reference (the compiled-
  // apart ones too), so they need addresses: the parameters' own
  // (__grid_constant__, read-only: no stack copy) and the scratch's in
  // shared memory. On the stack, every byte store (a back-pointer, a mask)
  // made the phases load them again, from local memory at L2 latency.
  extern __shared__ __align__(16) unsigned char shared[];  // 16: the link table's vector loads
  __shared__ BlockScan scan;
  __shared__ LineModelLaneScratch scratch;
  PhaseClock<kTimed> clock;
  const int f = static_cast<int>(blockIdx.x), lane_id = static_cast<int>(threadIdx.x);
  // Pass 0 staged ahead (launch checked the layout: the span at its
  // offset in the fixed region, which starts the shared memory); its copy
  // issued now, by warp 1's first lane, while lane 0 sets the scratch up.
  const bool staged_ahead = ahead.bytes != nullptr && g_link_table;
  __shared__ __align__(8) std::uint64_t staged_arrived;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (staged_ahead && lane_id == kWarp) {
    init_staged_barrier(&staged_arrived);
    issue_staged_copy(ahead, f, shared + ahead.begin, &staged_arrived);
  }
#endif
  if (lane_id == 0) scratch = block_scratch(p, v.width, f, shared, global_columns, columns_shared);
  __syncthreads();
  const int pass = model_frame<kTimed>(v, p, f, scratch, scan, staged_ahead, ahead, &staged_arrived, 0, clock);
  clock.mark(kLinePasses, 0);
  if constexpr (kTimed)
    if (threadIdx.x == 0) atomicAdd(&g_phase_cycles[kLinePasses][1], static_cast<unsigned long long>(pass < kLinePasses ? pass + 1 : pass));
}

// Thread 0: waits for every block of the three kernels to have started;
// false (the stop raised) when they have not within start_wait_ns: the
// chain's launch is held up (another thread's call waiting for the device,
// which waits for this kernel), so the kernels end and the host launches
// them again. Giving up marks `alive` (kLiveGaveUp) in the same atomic step
// that checks no block started since: the host, which takes the kernels as
// started only when `alive` is exactly their blocks, and this block never
// both decide.
__device__ bool all_started(const LiveModelArgs& a) {
  const std::uint64_t since = live::now_ns();
  const std::uint32_t all = a.chain_blocks + a.copy_blocks + gridDim.x;
  for (;;) {
    const std::uint32_t alive = live::load_relaxed_gpu(&a.state->alive);
    if ((alive & kLiveGaveUp) != 0 || live::load_relaxed_gpu(&a.state->stop) != 0) return false;
    if (alive >= all) return true;
    if (live::now_ns() - since > a.start_wait_ns && atomicCAS(&a.state->alive, alive, alive | kLiveGaveUp) == alive) {
      live::store_relaxed_gpu(&a.state->stop, 1);
      return false;
    }
    __nanosleep(100);
  }
}

// The live path's persistent model (live_kernels.h): the block kernel's
// frame for every kLiveModels-th frame the chain kernel hands over (block
// b: frames b + 1, b + 1 + kLiveModels, ...), until the stop. `v` is the
// candidates' layout; frame n reads the chain's buffer n & 1
// (LiveModelArgs::candidates) and writes its request's host arrays. Each
// block has its own scratch (frame blockIdx.x of `global_columns`).
__global__ void __launch_bounds__(kBlockLanes, 1)
    live_line_model_kernel(const __grid_constant__ LineModelView v, const __grid_constant__ LineModelParams p, unsigned char* global_columns,
                           bool columns_shared, const __grid_constant__ LiveModelArgs a) {
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ BlockScan scan;
  __shared__ LineModelLaneScratch scratch;
  __shared__ LineModelView frame_view;  // v with the frame's candidate buffer and output arrays
  __shared__ LineStageAhead ahead;   // a.ahead from the frame's buffer of staged bytes
  __shared__ std::uint64_t start_ns;
  PhaseClock<false> clock;
  bool ok = true;  // thread 0's, each barrier_or below gives every thread its answer
  if (threadIdx.x == 0) {
    scratch = block_scratch(p, v.width, static_cast<int>(blockIdx.x), shared, global_columns, columns_shared);
    frame_view = v;
    atomicAdd(&a.state->alive, 1u);
    ok = all_started(a);
  }
  __shared__ __align__(8) std::uint64_t staged_arrived;
  const bool staged_ahead = a.ahead.bytes != nullptr && g_link_table;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (staged_ahead && threadIdx.x == 0) init_staged_barrier(&staged_arrived);
#endif
  if (__syncthreads_or(!ok)) return;
  unsigned staged_parity = 0;  // the barrier's phase: one a frame of this block
  for (std::uint64_t n = 1 + blockIdx.x;; n += gridDim.x, staged_parity ^= 1u) {
    fence_before_bulk_copy();  // the last frame's (or the set-up's) writes before this frame's copy over them
    if (threadIdx.x == 0) {
      ok = live::wait_at_least(&a.state->staged, static_cast<std::uint64_t>(a.chain_blocks) * n, a.state, /*idle=*/true);
      if (ok) {
        const LiveState::Current& c = a.state->current[n % kLiveCurrent];
        const int buffer = static_cast<int>(n & 1);
        frame_view.in = a.candidates[buffer];
        frame_view.out = c.out;
        ahead = a.ahead;
        if (ahead.bytes != nullptr) ahead.bytes += static_cast<std::size_t>(buffer) * ahead.frame_bytes;
        start_ns = c.start_ns;
        live::stamp(a.mailbox, a.first_ticket, n, 3);
      }
    }
    if (__syncthreads_or(!ok)) return;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (staged_ahead && threadIdx.x == 0) issue_staged_copy(ahead, 0, shared + ahead.begin, &staged_arrived);
#endif
    model_frame<false>(frame_view, p, 0, scratch, scan, staged_ahead, ahead, &staged_arrived, staged_parity, clock);
    __syncthreads();
    if (threadIdx.x == 0) {
      live::store_release_gpu(&a.state->modelled[blockIdx.x], n);  // the candidates read: the chain may store over them
      live::stamp(a.mailbox, a.first_ticket, n, 4);
      const std::uint64_t ticket = a.first_ticket + n - 1;
      const auto slot = static_cast<int>(ticket % kLiveSlots);
      a.mailbox->finished[slot].device_ns = live::now_ns() - start_ns;
      // A release at the system's scope is cumulative: the block's profiles
      // (every thread's, ordered before it by the barrier) reach host memory
      // before the frame's number. One system fence a frame, where a full
      // fence before it waited for the same writes first; device_ns is
      // taken before it, so the device time no longer counts that wait.
      live::store_release_sys(&a.mailbox->finished[slot].done, ticket);
    }
  }
}
}  // namespace

void configure_line_model(std::size_t max_bytes) {
  const std::size_t bytes = max_bytes < kMostShared ? max_bytes : kMostShared;
  STRIPELINE_CUDA_CHECK(cudaFuncSetAttribute(line_model_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  g_shared_limit.store(bytes < kDefaultShared ? kDefaultShared : bytes);
  cudaFuncAttributes block{};
  STRIPELINE_CUDA_CHECK(cudaFuncGetAttributes(&block, line_model_block_kernel<false>));
  const std::size_t block_bytes = max_bytes > block.sharedSizeBytes ? max_bytes - block.sharedSizeBytes : 0;
  STRIPELINE_CUDA_CHECK(cudaFuncSetAttribute(line_model_block_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(block_bytes)));
  STRIPELINE_CUDA_CHECK(cudaFuncSetAttribute(line_model_block_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(block_bytes)));
  g_block_shared_limit.store(block_bytes);
  cudaFuncAttributes live{};
  STRIPELINE_CUDA_CHECK(cudaFuncGetAttributes(&live, live_line_model_kernel));
  const std::size_t live_bytes = max_bytes > live.sharedSizeBytes ? max_bytes - live.sharedSizeBytes : 0;
  STRIPELINE_CUDA_CHECK(cudaFuncSetAttribute(live_line_model_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(live_bytes)));
  g_live_shared_limit.store(live_bytes);
}

LineKernel line_kernel_for(const LineModelParams& params, int width) {
  const LineLaneLayout block = line_lane_layout(params.candidates, width, kLineBlockLanes, nullptr, nullptr);
  return block.fixed_bytes <= g_block_shared_limit.load() ? LineKernel::Block : LineKernel::Warp;
}

namespace {
// The staging ahead must be the block kernel's own layout for these
// parameters and frames (the processor builds both from the same): a
// mismatch would copy the wrong bytes. line_stage_ahead made the layout
// from exactly these two, so comparing them is enough (every launch: no
// layout computed again).
void check_ahead(const LineStageAhead& ahead, const LineModelParams& params, int width) {
  if (ahead.bytes == nullptr) return;
  if (ahead.width != width || !(params == ahead.params))
    throw ::stripeline::RuntimeFailure("line model: the staging ahead was laid out for other parameters or " + std::to_string(ahead.width) +
                                       "-column frames, not " + std::to_string(width));
}

void launch(const LineModelView& view, const LineModelParams& params, cudaStream_t stream, LineKernel kernel, bool timed, const LineStageAhead* ahead) {
  if (view.frames <= 0 || view.width <= 0 || params.candidates <= 0) return;
  if (kernel == LineKernel::Auto) kernel = line_kernel_for(params, view.width);
  const bool block = kernel == LineKernel::Block;
  const LineStageAhead none;
  if (ahead == nullptr || !block) ahead = &none;  // the warp kernel stages itself
  check_ahead(*ahead, params, view.width);
  const LineLaneLayout size = line_lane_layout(params.candidates, view.width, block ? kLineBlockLanes : kWarp, nullptr, nullptr);
  const std::size_t limit = block ? g_block_shared_limit.load() : g_shared_limit.load();
  if (size.fixed_bytes > limit) throw ::stripeline::RuntimeFailure("line model: the " + std::string(block ? "block" : "warp") + " kernel needs " +
                                                std::to_string(size.fixed_bytes) + " bytes of shared memory, " + std::to_string(limit) + " configured");
  const bool columns_shared = size.fixed_bytes + size.column_bytes <= limit;
  const std::size_t shared = size.fixed_bytes + (columns_shared ? size.column_bytes : 0);
  const auto frames = static_cast<unsigned>(view.frames);
  if (block && timed) {
    line_model_block_kernel<true><<<frames, kLineBlockLanes, shared, stream>>>(view, params, view.back, columns_shared, *ahead);
    STRIPELINE_CUDA_CHECK_LAUNCH("line_model_block_kernel (timed)");
  } else if (block) {
    line_model_block_kernel<false><<<frames, kLineBlockLanes, shared, stream>>>(view, params, view.back, columns_shared, *ahead);
    STRIPELINE_CUDA_CHECK_LAUNCH("line_model_block_kernel");
  } else {
    line_model_kernel<<<frames, kWarp, shared, stream>>>(view, params, view.back, columns_shared);
    STRIPELINE_CUDA_CHECK_LAUNCH("line_model_kernel");
  }
}

// Four threads a column, a pair of candidates each (stage_ahead_pair).
constexpr int kStageWays = 2 * kLineStagedSlots;
__global__ void line_stage_ahead_kernel(const __grid_constant__ LineModelView v, const __grid_constant__ LineStageAhead ahead) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x), f = static_cast<int>(blockIdx.y);
  if (t < v.width * kStageWays) lm::stage_ahead_pair(v, ahead, f, t / kStageWays, t % kStageWays);
}

}  // namespace

void launch_line_model(const LineModelView& view, const LineModelParams& params, cudaStream_t stream, LineKernel kernel, const LineStageAhead* ahead) {
  launch(view, params, stream, kernel, false, ahead);
}

void load_live_line_model_kernel() {
  cudaFuncAttributes a{};
  STRIPELINE_CUDA_CHECK(cudaFuncGetAttributes(&a, live_line_model_kernel));
}

void launch_live_line_model(const LineModelView& view, const LineModelParams& params, const LiveModelArgs& args, cudaStream_t stream) {
  const LineLaneLayout size = line_lane_layout(params.candidates, view.width, kLineBlockLanes, nullptr, nullptr);
  const std::size_t limit = g_live_shared_limit.load();
  if (view.frames != 1 || size.fixed_bytes > limit)
    throw ::stripeline::RuntimeFailure("live line model: needs one frame's view and " + std::to_string(size.fixed_bytes) + " bytes of shared memory (" +
                                       std::to_string(limit) + " configured), has " + std::to_string(view.frames) + " frames");
  const bool columns_shared = size.fixed_bytes + size.column_bytes <= limit;
  const std::size_t shared = size.fixed_bytes + (columns_shared ? size.column_bytes : 0);
  live_line_model_kernel<<<kLiveModels, kLineBlockLanes, shared, stream>>>(view, params, view.back, columns_shared, args);
  STRIPELINE_CUDA_CHECK_LAUNCH("live_line_model_kernel");
}

void launch_line_stage_ahead(const LineModelView& view, const LineStageAhead& ahead, cudaStream_t stream) {
  if (view.frames <= 0 || view.width <= 0 || ahead.bytes == nullptr) return;
  check_ahead(ahead, ahead.params, view.width);
  constexpr unsigned kThreads = 128;
  const dim3 grid((static_cast<unsigned>(view.width) * kStageWays + kThreads - 1) / kThreads, static_cast<unsigned>(view.frames));
  line_stage_ahead_kernel<<<grid, kThreads, 0, stream>>>(view, ahead);
  STRIPELINE_CUDA_CHECK_LAUNCH("line_stage_ahead_kernel");
}

void set_line_model_warmup(int columns) {
  STRIPELINE_CUDA_CHECK(cudaMemcpyToSymbol(g_warmup, &columns, sizeof columns));
}

void set_line_model_narrow_walks(bool on) {
  STRIPELINE_CUDA_CHECK(cudaMemcpyToSymbol(g_narrow_walks, &on, sizeof on));
}

void set_line_model_link_table(bool on) {
  STRIPELINE_CUDA_CHECK(cudaMemcpyToSymbol(g_link_table, &on, sizeof on));
}

LinePhaseProfile line_model_block_phase_cycles(const LineModelView& view, const LineModelParams& params, cudaStream_t stream, const LineStageAhead* ahead) {
  static_assert(sizeof(LinePhaseCycles) == sizeof g_phase_cycles);
  const LinePhaseProfile zero{};
  STRIPELINE_CUDA_CHECK(cudaMemcpyToSymbolAsync(g_phase_cycles, zero.cycles, sizeof zero.cycles, 0, cudaMemcpyHostToDevice, stream));
  launch(view, params, stream, LineKernel::Block, true, ahead);
  LinePhaseProfile out{};
  STRIPELINE_CUDA_CHECK(cudaMemcpyFromSymbolAsync(out.cycles, g_phase_cycles, sizeof out.cycles, 0, cudaMemcpyDeviceToHost, stream));
  STRIPELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return out;
}

}  // namespace stripeline::kernels::cuda
