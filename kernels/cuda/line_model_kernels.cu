// CUDA kernel of the line model. See line_model_kernels.h.
#include <atomic>
#include <string>

#include <cuda_runtime.h>

#include "core/cuda/check.h"
#include "kernels/cuda/line_model_kernels.h"
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
  extern __shared__ __align__(8) unsigned char shared[];
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
// (8 for 2,048), so the per-lane phases walk 8 columns instead of 64, and the
// three scans over the lanes (the entering scores, the chosen states at the
// chunks' ends, the segment lengths) run in log depth within each warp and
// over the 8 warps, instead of lane after lane. Every scan is of exact
// integer functions (max-plus matrices, maps of states, saturated counts),
// so any order of composition gives the sequential loops' values: the
// CPU test of the phases (lane after lane) and the oracle stay the check.
constexpr int kBlockLanes = kLineBlockLanes;
constexpr int kBlockWarps = kBlockLanes / kWarp;

// The block's own scratch beside the phases' (static shared memory).
struct BlockScan {
  std::int64_t product[kBlockWarps][kLineStates * kLineStates];  // each warp's chunks' transfer matrices multiplied
  std::int64_t warp_entering[kBlockWarps][kLineStates];           // the scores entering each warp's first chunk
  std::uint8_t product_rows[kBlockWarps];                         // rows of product[w] (states entering warp w's first chunk)
  unsigned long long warp_map[kBlockWarps];                       // each warp's composed map of states (below)
  unsigned warp_run_in[kBlockWarps], warp_run_out[kBlockWarps];   // each warp's composed run functions
  std::uint8_t warp_last[kBlockWarps];                            // the chosen state at each warp's last chunk's end
  std::uint16_t warp_run_before[kBlockWarps], warp_run_after[kBlockWarps];
};

// E1 (warp w): product[w] = T(first chunk) x ... x T(last chunk) of the warp,
// the (max, +) product over the states each boundary has. A chunk's matrix
// has rows 0..n_last[l - 1] (0 for the frame's first chunk) and columns
// 0..n_last[l]; the product's entries are spread over the warp's lanes.
__device__ void warp_transfer_product(const LineModelLaneScratch& s, int used, int warp, int lane, BlockScan& b) {
  const int first = warp * kWarp, end = min(first + kWarp, used);
  std::int64_t* acc = b.product[warp];
  const int rows = first == 0 ? 1 : s.n_last[first - 1] + 1;
  int cols = s.n_last[first] + 1;
  for (int e = lane; e < rows * cols; e += kWarp) acc[e] = lm::transfer_row(s, first, e / cols)[e % cols];
  __syncwarp();
  for (int l = first + 1; l < end; ++l) {
    const int mid = cols, next_cols = s.n_last[l] + 1;
    std::int64_t value[(kLineStates * kLineStates + kWarp - 1) / kWarp];
    int k = 0;
    for (int e = lane; e < rows * next_cols; e += kWarp, ++k) {
      const int a = e / next_cols, c = e % next_cols;
      std::int64_t best = lm::kNone;
      for (int m = 0; m < mid; ++m) {
        const std::int64_t x = acc[a * mid + m], y = lm::transfer_row(s, l, m)[c];
        const std::int64_t score = x <= lm::kNone || y <= lm::kNone ? lm::kNone : x + y;
        if (score > best) best = score;
      }
      value[k] = best;
    }
    __syncwarp();
    k = 0;
    for (int e = lane; e < rows * next_cols; e += kWarp, ++k) acc[e] = value[k];
    cols = next_cols;
    __syncwarp();
  }
  if (lane == 0) b.product_rows[warp] = static_cast<std::uint8_t>(rows);
}

// The entering scores of every chunk: E1 per warp, E2 over the warps (warp
// 0, a lane per state), E3 per warp over its chunks from its entering scores.
__device__ void block_entering(const LineModelLaneScratch& s, int used, int warp, int lane, BlockScan& b) {
  const int warps = (used + kWarp - 1) / kWarp;
  if (warp < warps) warp_transfer_product(s, used, warp, lane, b);
  __syncthreads();
  if (warp == 0 && lane < kLineStates) {
    std::int64_t in[kLineStates];
    for (int a = 0; a < kLineStates; ++a) in[a] = a == 0 ? 0 : lm::kNone;  // before column 0: "no line"
    for (int w = 0; w < warps; ++w) {
      b.warp_entering[w][lane] = in[lane];
      __syncwarp(0x1FFu);
      const int rows = b.product_rows[w], cols = s.n_last[min((w + 1) * kWarp, used) - 1] + 1;
      std::int64_t best = lm::kNone;
      if (lane < cols)
        for (int a = 0; a < rows; ++a) {
          const std::int64_t x = b.warp_entering[w][a], y = b.product[w][a * cols + lane];
          const std::int64_t score = x <= lm::kNone || y <= lm::kNone ? lm::kNone : x + y;
          if (score > best) best = score;
        }
      for (int a = 0; a < kLineStates; ++a) in[a] = __shfl_sync(0x1FFu, best, a);
    }
  }
  __syncthreads();
  if (warp < warps && lane < kLineStates)
    for (int l = warp * kWarp; l < min((warp + 1) * kWarp, used); ++l) {
      lm::lanes_entering(lane, l, s, l == warp * kWarp ? b.warp_entering[warp] : s.entering + static_cast<std::size_t>(l) * kLineStates);
      __syncwarp(0x1FFu);
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

__global__ void __launch_bounds__(kBlockLanes, 1)
    line_model_block_kernel(LineModelView v, LineModelParams p, unsigned char* global_columns, bool columns_shared) {
  extern __shared__ __align__(8) unsigned char shared[];
  __shared__ BlockScan scan;
  const int f = static_cast<int>(blockIdx.x), lane_id = static_cast<int>(threadIdx.x);
  const int warp = lane_id / kWarp, lane = lane_id % kWarp;
  const LineModelLaneScratch s = frame_scratch(p, v.width, kBlockLanes, f, shared, global_columns, columns_shared);
  const int used = lm::lanes_used(v.width, kBlockLanes);
  for (int pass = 0; pass < kLinePasses; ++pass) {
    lm::lane_transfer(v, p, f, pass, kBlockLanes, lane_id, s);
    __syncthreads();
    block_entering(s, used, warp, lane, scan);
    __syncthreads();
    lm::lane_back_pointers(v, p, f, kBlockLanes, lane_id, s);
    __syncthreads();
    lm::lane_first_states(v, p, kBlockLanes, lane_id, s);
    __syncthreads();
    block_last_states(v, p, s, used, warp, lane, scan);
    __syncthreads();
    lm::lane_path(v, p, kBlockLanes, lane_id, s);
    __syncthreads();
    block_runs(v, s, used, warp, lane, scan);
    __syncthreads();
    lm::lane_drop_short(v, p, kBlockLanes, lane_id, s);
    if (!__syncthreads_or(s.dropped[lane_id] != 0)) break;
  }
  lm::lane_write(v, p, f, kBlockLanes, lane_id, s);
}
}  // namespace

void configure_line_model(std::size_t max_bytes) {
  const std::size_t bytes = max_bytes < kMostShared ? max_bytes : kMostShared;
  STRIPELINE_CUDA_CHECK(cudaFuncSetAttribute(line_model_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  g_shared_limit.store(bytes < kDefaultShared ? kDefaultShared : bytes);
  cudaFuncAttributes block{};
  STRIPELINE_CUDA_CHECK(cudaFuncGetAttributes(&block, line_model_block_kernel));
  const std::size_t block_bytes = max_bytes > block.sharedSizeBytes ? max_bytes - block.sharedSizeBytes : 0;
  STRIPELINE_CUDA_CHECK(cudaFuncSetAttribute(line_model_block_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(block_bytes)));
  g_block_shared_limit.store(block_bytes);
}

LineKernel line_kernel_for(const LineModelParams& params, int width) {
  const LineLaneLayout block = line_lane_layout(params.candidates, width, kLineBlockLanes, nullptr, nullptr);
  return block.fixed_bytes <= g_block_shared_limit.load() ? LineKernel::Block : LineKernel::Warp;
}

void launch_line_model(const LineModelView& view, const LineModelParams& params, cudaStream_t stream, LineKernel kernel) {
  if (view.frames <= 0 || view.width <= 0 || params.candidates <= 0) return;
  if (kernel == LineKernel::Auto) kernel = line_kernel_for(params, view.width);
  const bool block = kernel == LineKernel::Block;
  const LineLaneLayout size = line_lane_layout(params.candidates, view.width, block ? kLineBlockLanes : kWarp, nullptr, nullptr);
  const std::size_t limit = block ? g_block_shared_limit.load() : g_shared_limit.load();
  if (size.fixed_bytes > limit) throw ::stripeline::RuntimeFailure("line model: the " + std::string(block ? "block" : "warp") + " kernel needs " +
                                                std::to_string(size.fixed_bytes) + " bytes of shared memory, " + std::to_string(limit) + " configured");
  const bool columns_shared = size.fixed_bytes + size.column_bytes <= limit;
  const std::size_t shared = size.fixed_bytes + (columns_shared ? size.column_bytes : 0);
  const auto frames = static_cast<unsigned>(view.frames);
  if (block) {
    line_model_block_kernel<<<frames, kLineBlockLanes, shared, stream>>>(view, params, view.back, columns_shared);
    STRIPELINE_CUDA_CHECK_LAUNCH("line_model_block_kernel");
  } else {
    line_model_kernel<<<frames, kWarp, shared, stream>>>(view, params, view.back, columns_shared);
    STRIPELINE_CUDA_CHECK_LAUNCH("line_model_kernel");
  }
}

}  // namespace stripeline::kernels::cuda
