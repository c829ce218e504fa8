#pragma once
// Where profiles go. Sinks see profiles in acquisition order, one span at a
// time (the pipeline's last filter is serial and in order). A span is a view
// (core/profile.h): it is valid during consume() only.
#include <memory>
#include <string>

#include "core/applied_calibration.h"
#include "core/calibration.h"
#include "core/profile.h"
#include "core/types.h"
#include "stages/chain.h"

namespace stripeline {

struct ScanInfo {
  BatchLayout layout;            // frames = batch capacity
  int profile_slots = 1;
  ChainConfig chain;
  LinearCalibration calibration;
  std::string source;            // describe() of the source
  Backend backend = Backend::Cpu;
  std::shared_ptr<const AppliedCalibration> sheet;  // sheet-of-light calibration in use, or none
};

class ProfileSink {
 public:
  virtual ~ProfileSink() = default;
  virtual void begin(const ScanInfo& info) = 0;
  virtual void consume(const ProfileSpan& profiles) = 0;
  // The scan is complete: finish files (they appear under their final names now).
  virtual void finish() = 0;
  // The scan failed: drop temporaries, leave nothing half-written. Never throws.
  virtual void abort() noexcept {}
};

}  // namespace stripeline
