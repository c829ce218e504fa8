#pragma once
// `stripeline bench --calibration FILE`: what applying a sheet-of-light
// calibration costs in the production streaming run. The processor maps
// every detection to (X, dY, Z) mm on the GPU inside the batch
// (ChainConfig::calibration); this sink only checks that the points arrived:
// it counts the mapped points of the first batch (the rest are timed, not
// read, as in the plain streaming run).
#include <cmath>

#include "core/errors.h"
#include "pipeline/sink.h"

namespace stripeline::tools {

class CalibratedPointsCheck final : public ProfileSink {
 public:
  void begin(const ScanInfo&) override {}
  void consume(const ProfileSpan& p) override {
    if (batches_++ > 0) return;
    if (p.xyz == nullptr) throw RuntimeFailure("bench: the calibrated run's profiles carry no points array");
    for (int f = 0; f < p.frames; ++f)
      for (int s = 0; s < p.slots; ++s)
        for (int x = 0; x < p.width; ++x) points_ += std::isnan(p.xyz[3 * p.slot_index(f, s, x) + 2]) ? 0 : 1;
  }
  void finish() override {}
  // Points mapped in the first batch.
  std::uint64_t points_per_batch() const { return points_; }

 private:
  std::uint64_t batches_ = 0, points_ = 0;
};

}  // namespace stripeline::tools
