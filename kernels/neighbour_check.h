#pragma once
// The neighbour check: an optional step after extraction that removes
// isolated detections, the spikes a single column makes on a speck of glare,
// a stone brighter than a dim line or the dark gap past an occlusion edge
// (docs/extraction.md, "Neighbour check").
//
// A detection at column x of a frame is kept when at least one of the
// columns x - columns .. x + columns (x itself excluded) holds a detection
// within step x |dx| rows of it (|dx| the distance in columns); otherwise its
// column is emptied: count 0, position kNoPeak, intensity, width and quality
// 0. A real line continues into its neighbours; a spike does not. A line
// steeper than `step` rows per column (a face at more than atan(step) from
// the sensor's rows) loses its points too: raise the step for such parts.
//
// Single-peak profiles only (slot 0: validate_chain refuses it with more
// slots). Integer comparisons on the 1/256 px positions, so the CPU loop and
// the CUDA kernels (kernels/cuda/neighbour_check_kernels.h) give the same
// bits. Two phases, so no column is decided on an already-emptied neighbour:
// mark every isolated detection of the frames, then empty the marked ones.
#include <cstddef>
#include <cstdint>

#include "core/fixed_point.h"

namespace stripeline::kernels {

inline constexpr int kMaxNeighbourColumns = 16;

struct NeighbourCheckParams {
  std::int32_t columns = 0;     // columns looked at on each side; 0 = off
  std::int32_t step_q8 = 512;   // rows per column of distance, 1/256 px
};

// The arrays of a batch's profiles with one slot (ProfileLayout), and one
// mark byte per (frame, column) of scratch.
struct NeighbourCheckView {
  std::int32_t* position = nullptr;   // [frame][column]
  std::uint16_t* intensity = nullptr;
  std::uint16_t* stripe_width = nullptr;
  std::uint16_t* quality = nullptr;
  std::uint8_t* count = nullptr;      // [frame][column]
  std::uint8_t* isolated = nullptr;   // [frame][column] scratch
  int frames = 0, width = 0;
};

// Phase 1 for (frame f, column x): 1 when the column holds a detection and
// no neighbour supports it.
STRIPELINE_HD std::uint8_t isolated_detection(const NeighbourCheckView& v, const NeighbourCheckParams& p, int f, int x) {
  const std::size_t row = static_cast<std::size_t>(f) * v.width;
  if (p.columns <= 0 || v.count[row + x] == 0) return 0;  // off, or nothing to check
  const std::int64_t here = v.position[row + x];
  for (int d = 1; d <= p.columns; ++d) {
    const std::int64_t reach = static_cast<std::int64_t>(p.step_q8) * d;
    for (int side = -1; side <= 1; side += 2) {
      const int n = x + side * d;
      if (n < 0 || n >= v.width || v.count[row + n] == 0) continue;
      const std::int64_t diff = v.position[row + n] - here;
      if (diff <= reach && -diff <= reach) return 0;
    }
  }
  return 1;
}

// Phase 2 for (frame f, column x): empty the column when it was marked.
STRIPELINE_HD void clear_if_isolated(const NeighbourCheckView& v, int f, int x) {
  const std::size_t i = static_cast<std::size_t>(f) * v.width + x;
  if (v.isolated[i] == 0) return;
  v.count[i] = 0;
  v.position[i] = kNoPeak;
  v.intensity[i] = 0;
  v.stripe_width[i] = 0;
  v.quality[i] = 0;
}

// Frames [first, last) on the CPU (the backend and the oracle).
inline void neighbour_check_cpu(const NeighbourCheckView& v, const NeighbourCheckParams& p, int first, int last) {
  for (int f = first; f < last; ++f) {
    for (int x = 0; x < v.width; ++x) v.isolated[static_cast<std::size_t>(f) * v.width + x] = isolated_detection(v, p, f, x);
    for (int x = 0; x < v.width; ++x) clear_if_isolated(v, f, x);
  }
}

}  // namespace stripeline::kernels
