// CUDA kernel of the line model. See line_model_kernels.h.
#include <cuda_runtime.h>

#include "core/cuda/check.h"
#include "kernels/cuda/line_model_kernels.h"

namespace stripeline::kernels::cuda {

namespace {

namespace lm = line_model;

constexpr int kWarp = 32;            // columns per chunk, and threads per frame
constexpr int kFramesPerBlock = 4;   // warps per block
constexpr int kStates = kMaxLineCandidates + 1;

// One warp's shared memory: a chunk of columns, index 0 holding the column
// before the chunk (the previous chunk's last).
struct Chunk {
  lm::Candidate cand[kWarp + 1][kMaxLineCandidates];
  std::int64_t score[2][kStates];  // by column parity, as on the CPU
  std::uint8_t n[kWarp + 1];
  std::uint8_t excluded[kWarp + 1];
  std::uint8_t back[kWarp][kStates];
  std::uint8_t chosen[kWarp];
};

// The frame's global scratch: back-pointers [column][K + 1], the exclusion
// masks and the chosen states, one byte per column.
struct FrameScratch {
  std::uint8_t* back;
  std::uint8_t* mask;
  std::uint8_t* chosen;
};

__device__ FrameScratch frame_scratch(const LineModelView& v, const LineModelParams& p, int f) {
  const std::size_t columns = static_cast<std::size_t>(v.width) * v.frames;
  const std::size_t states = static_cast<std::size_t>(p.candidates) + 1;
  const std::size_t at = static_cast<std::size_t>(f) * v.width;
  return {v.back + at * states, v.back + columns * states + at, v.back + columns * (states + 1) + at};
}

// The chunk's columns [x0, x0 + cols) into shared memory, one lane per
// column (pass 0 clears the exclusion masks).
__device__ void load_chunk(const LineModelView& v, const LineModelParams& p, int f, int pass, int x0, int cols, const FrameScratch& g, Chunk& w,
                           int lane) {
  if (lane >= cols) return;
  const int x = x0 + lane;
  const int n = lm::slots_filled(v, p, f, x);
  w.n[lane + 1] = static_cast<std::uint8_t>(n);
  for (int s = 0; s < n; ++s) w.cand[lane + 1][s] = lm::candidate(v, p, f, s, x);
  if (pass == 0) g.mask[x] = 0;
  w.excluded[lane + 1] = pass == 0 ? 0 : g.mask[x];
}

// Forward over the frame; returns the best final state (the same on every lane).
__device__ int forward(const LineModelView& v, const LineModelParams& p, int f, int pass, const FrameScratch& g, Chunk& w, int lane) {
  const int states = p.candidates + 1;
  if (lane == 0) w.n[0] = 0;
  if (lane < states) w.score[1][lane] = lane == 0 ? 0 : lm::kNone;  // before column 0: "no line"
  for (int x0 = 0; x0 < v.width; x0 += kWarp) {
    const int cols = min(kWarp, v.width - x0);
    load_chunk(v, p, f, pass, x0, cols, g, w, lane);
    __syncwarp();
    for (int i = 0; i < cols; ++i) {
      const int cur = (x0 + i) & 1, prev = cur ^ 1;
      const int prev_n = w.n[i];
      if (lane <= w.n[i + 1]) {  // one lane per state of the column
        std::int64_t score = lm::kNone;
        std::uint8_t from = 0;
        if (lane == 0)
          lm::enter_none(w.score[prev], prev_n, score, from);
        else if (((w.excluded[i + 1] >> (lane - 1)) & 1) == 0)
          lm::enter_candidate(w.cand[i + 1][lane - 1], w.cand[i], prev_n, w.score[prev], p, score, from);
        w.score[cur][lane] = score;
        w.back[i][lane] = from;
      }
      __syncwarp();
    }
    for (int j = lane; j < cols * states; j += kWarp) g.back[static_cast<std::size_t>(x0) * states + j] = w.back[j / states][j % states];
    if (lane < p.candidates) w.cand[0][lane] = w.cand[cols][lane];
    if (lane == 0) w.n[0] = w.n[cols];
    __syncwarp();
  }
  return lm::final_state(w.score[(v.width - 1) & 1], w.n[0]);
}

// Segment [x, x + run) dropped: its candidates excluded, its columns empty
// (those of the chunk at x0 through `chosen`, later ones in the output).
__device__ void drop_segment(const LineModelView& v, const LineModelParams& p, int f, int x, int run, int x0, int cols, const FrameScratch& g, Chunk& w,
                             int lane) {
  __syncwarp();
  for (int k = lane; k < run; k += kWarp) {
    const int col = x + k;
    const bool in_chunk = col - x0 < cols;
    const int state = in_chunk ? w.chosen[col - x0] : g.chosen[col];
    g.mask[col] |= static_cast<std::uint8_t>(1u << (state - 1));
    if (in_chunk)
      w.chosen[col - x0] = 0;
    else
      lm::write_column(v, p, f, col, 0);
  }
  __syncwarp();
}

// Back from the last column in `state`, as lm::trace_back: every column
// written, each segment shorter than min_length emptied and excluded.
// Every lane walks (the same state), one writes; returns whether a segment
// was dropped.
__device__ bool trace(const LineModelView& v, const LineModelParams& p, int f, int state, const FrameScratch& g, Chunk& w, int lane) {
  const int states = p.candidates + 1;
  bool dropped = false;
  int run = 0;
  for (int x0 = ((v.width - 1) / kWarp) * kWarp; x0 >= 0; x0 -= kWarp) {
    const int cols = min(kWarp, v.width - x0);
    for (int j = lane; j < cols * states; j += kWarp) w.back[j / states][j % states] = g.back[static_cast<std::size_t>(x0) * states + j];
    __syncwarp();
    for (int i = cols - 1; i >= 0; --i) {
      const int x = x0 + i;
      const std::uint8_t b = w.back[i][state];
      const int from = b & 0x0F;
      if (lane == 0) w.chosen[i] = static_cast<std::uint8_t>(state);
      if (state != 0) {
        ++run;
        if (from == 0 || (b & lm::kBreak) != 0 || x == 0) {  // the segment starts here
          if (run < p.min_length) {
            drop_segment(v, p, f, x, run, x0, cols, g, w, lane);
            dropped = true;
          }
          run = 0;
        }
      }
      state = from;
    }
    __syncwarp();
    if (lane < cols) {
      lm::write_column(v, p, f, x0 + lane, w.chosen[lane]);
      g.chosen[x0 + lane] = w.chosen[lane];
    }
    __syncwarp();
  }
  return dropped;
}

__global__ void line_model_kernel(LineModelView v, LineModelParams p) {
  __shared__ Chunk chunks[kFramesPerBlock];
  const int warp = static_cast<int>(threadIdx.x) / kWarp, lane = static_cast<int>(threadIdx.x) % kWarp;
  const int f = static_cast<int>(blockIdx.x) * kFramesPerBlock + warp;
  if (f >= v.frames) return;  // the whole warp
  Chunk& w = chunks[warp];
  const FrameScratch g = frame_scratch(v, p, f);
  for (int pass = 0; pass < kLinePasses; ++pass)
    if (!trace(v, p, f, forward(v, p, f, pass, g, w, lane), g, w, lane)) break;
}

}  // namespace

void launch_line_model(const LineModelView& view, const LineModelParams& params, cudaStream_t stream) {
  if (view.frames <= 0 || view.width <= 0 || params.candidates <= 0) return;
  const unsigned blocks = static_cast<unsigned>((view.frames + kFramesPerBlock - 1) / kFramesPerBlock);
  line_model_kernel<<<blocks, kFramesPerBlock * kWarp, 0, stream>>>(view, params);
  STRIPELINE_CUDA_CHECK_LAUNCH("line_model_kernel");
}

}  // namespace stripeline::kernels::cuda
