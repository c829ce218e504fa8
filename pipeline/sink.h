#pragma once
// Where profiles go. Sinks see batches in acquisition order, one at a time
// (the pipeline's last filter is serial and in order).
#include <cstdint>
#include <string>

#include "core/batch.h"
#include "core/calibration.h"
#include "core/profile.h"
#include "stages/chain.h"

namespace stripeline {

struct ScanInfo {
  BatchLayout layout;            // frames = batch capacity
  int profile_slots = 1;
  ChainConfig chain;
  LinearCalibration calibration;
  std::string source;            // describe() of the source
  Backend backend = Backend::Cpu;
};

class ProfileSink {
 public:
  virtual ~ProfileSink() = default;
  virtual void begin(const ScanInfo& info) = 0;
  virtual void consume(const Batch& batch, const ProfileBatch& profiles) = 0;
  // The scan is complete: finish files (they appear under their final names now).
  virtual void finish() = 0;
  // The scan failed: drop temporaries, leave nothing half-written. Never throws.
  virtual void abort() noexcept {}
};

}  // namespace stripeline
