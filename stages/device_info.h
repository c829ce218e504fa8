#pragma once
// Measurements of the host<->device link, for the benchmark.
#include <cstddef>
#include <string>
#include <vector>

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

// Pinned H2D on several devices at once (the host's buses shared): one thread
// per entry of `devices`, each with its own pinned buffer, device buffer and
// stream, released together, enqueueing `copies` copies of `bytes` back to
// back; GB/s of each (its first copy's start to its last copy's end, CUDA
// events), after one warm-up round. One device alone is the same measurement
// without company. A device may appear twice (two links' worth of copies
// sharing one). Throws RuntimeFailure / ConfigError (no such device).
std::vector<double> measure_h2d_together(std::size_t bytes, const std::vector<int>& devices, int copies);

}  // namespace stripeline
