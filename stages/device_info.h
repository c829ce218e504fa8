#pragma once
// Measurements of the host<->device link, for the benchmark.
#include <cstddef>
#include <string>

namespace stripeline {

struct CopyBandwidth {
  double h2d_gb_per_s = 0;           // pinned host -> device
  double d2h_gb_per_s = 0;           // device -> pinned host
  double pageable_h2d_gb_per_s = 0;  // pageable host -> device
  std::size_t bytes = 0;
};

// Median over `repeats` copies of `bytes`, timed with CUDA events after a
// warm-up. Throws RuntimeFailure when CUDA is not usable.
CopyBandwidth measure_copy_bandwidth(std::size_t bytes, int repeats);

}  // namespace stripeline
