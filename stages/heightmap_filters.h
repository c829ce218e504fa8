#pragma once
// Filters on assembled 16-bit height maps (docs/heightmap-filters.md): median
// k x k, 16-bit -> 8-bit conversion over a height range, median-then-8-bit in
// one pass, grayscale dilation and erosion along rows (1 x L) and columns
// (L x 1) in time independent of L (van Herk / Gil-Werman). Opening and
// closing are compositions (opening(): erode then dilate; closing(): dilate
// then erode).
//
// Rules shared by every backend (bit-identical, the CPU one is the oracle):
//  - code 0 means "no detection" and is never a height:
//    median: left out of the window; no valid pixel in the window -> 0; an
//    even count n of valid pixels -> the LOWER middle value (rank (n-1)/2,
//    0-based, ascending);
//    dilation: 0 is the minimum, so it never wins unless the window is all 0;
//    erosion: 0 counts as +infinity, the output is 0 only when every pixel
//    of the window is 0.
//  - window along the axis for length L: [x - L/2, x + (L-1)/2] (for even L
//    one more pixel before than after); pixels outside the image do not
//    count (the window is clipped).
//  - to8 over [min, max]: 0 -> 0; v <= min -> 1; v >= max -> 255; else
//    1 + ((v-min)*254 + (max-min)/2) / (max-min) (integer, rounded).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stages/backend.h"

namespace stripeline {

enum class FilterOp { Median, Dilate, Erode, To8, MedianTo8 };
enum class FilterAxis { None, Horizontal, Vertical };

struct FilterStep {
  FilterOp op = FilterOp::Median;
  FilterAxis axis = FilterAxis::None;
  int size = 0;            // median k (odd, 3..15) or structuring length L (1..255)
  std::uint16_t lo = 0;    // to8 range [lo, hi], lo < hi
  std::uint16_t hi = 0;
};

constexpr int kMinMedian = 3;
constexpr int kMaxMedian = 15;
constexpr int kMaxMorphLength = 255;

// "--median K", "--dilate-h L", "--dilate-v L", "--erode-h L", "--erode-v L",
// "--to8 MIN:MAX" (also "median 3", "to8 100:4000" without dashes, and
// "K=V" forms such as "--median=5"), in the order given. Throws InputError
// naming the bad token and what was expected. Validates (see validate_filter_steps).
std::vector<FilterStep> parse_filter_steps(const std::vector<std::string>& args);
// One step per string, each "op value" (the config's form: "median 3").
std::vector<FilterStep> parse_filter_step_list(const std::vector<std::string>& steps);
// Throws InputError: median k not odd in 3..15, L not in 1..255, to8 lo >= hi,
// to8 anywhere but last, an empty chain.
void validate_filter_steps(const std::vector<FilterStep>& steps);
// Median directly followed by a final to8 becomes one MedianTo8 step.
std::vector<FilterStep> fuse_filter_steps(std::vector<FilterStep> steps);
std::string describe(const FilterStep& step);

inline std::vector<FilterStep> opening(FilterAxis axis, int length) {
  return {{FilterOp::Erode, axis, length, 0, 0}, {FilterOp::Dilate, axis, length, 0, 0}};
}
inline std::vector<FilterStep> closing(FilterAxis axis, int length) {
  return {{FilterOp::Dilate, axis, length, 0, 0}, {FilterOp::Erode, axis, length, 0, 0}};
}

// Memory a filter chain on a width x height map takes on `backend` (resolved),
// without allocating: host (the CPU's ping-pong maps and worker scratch) and
// device (CUDA: input, ping-pong, 8-bit output and the van Herk scratch).
// The height-map sink checks it against the run's memory budget.
struct FilterMemory {
  std::size_t host = 0, device = 0;
};
FilterMemory heightmap_filter_memory(Backend backend, int width, int height, const std::vector<FilterStep>& steps);

// A chain of filters set up for one width x height. run() never allocates.
class HeightMapFilter {
 public:
  virtual ~HeightMapFilter() = default;
  virtual Backend backend() const = 0;
  virtual int width() const = 0;
  virtual int height() const = 0;
  // True when the last step is to8: run() writes uint8 pixels, else uint16.
  virtual bool output_8bit() const = 0;
  // in: width*height uint16 codes, rows tightly packed, host memory.
  // out: width*height uint8 (output_8bit()) or uint16, host memory; may not
  // alias in. Synchronous.
  virtual void run(const std::uint16_t* in, void* out) = 0;
};

// Validates, fuses median+to8, sets up. Auto -> CUDA when available.
// width, height >= 1. Throws InputError/ConfigError for bad steps or sizes.
std::unique_ptr<HeightMapFilter> make_heightmap_filter(Backend backend, int width, int height, const std::vector<FilterStep>& steps);

namespace cpu {
std::unique_ptr<HeightMapFilter> make_heightmap_filter(int width, int height, const std::vector<FilterStep>& steps);
}

}  // namespace stripeline
