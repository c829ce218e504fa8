#pragma once
// Where profiles go. Sinks see profiles in acquisition order, one span at a
// time (the pipeline's last filter is serial and in order). A span is a view
// (core/profile.h): it is valid during consume() only.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/applied_calibration.h"
#include "core/calibration.h"
#include "core/profile.h"
#include "core/significant_bits.h"
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
  SignificantBits pixel_bits{};    // significant bits of the pixels (chain.adaptive.pixel_bits) and where they came from
  // The run's memory budgets, resolved (pipeline/memory_budget.h), bytes: a
  // sink that sets up large memory of its own (the height-map filters)
  // checks it against them. Device 0: the CPU backend.
  std::uint64_t host_budget = 0, device_budget = 0;
  // The part of the recording this run replays (FrameSource::frame_range()),
  // recorded by every output's metadata; none: the whole source.
  std::optional<FrameRange> frames;
};

// A batch a sink keeps after consume_kept() returns (pipeline/background_sink.h):
// it stays out of the buffer pool until release() is called, once.
class SpanLease {
 public:
  virtual void release() noexcept = 0;

 protected:
  ~SpanLease() = default;
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
  // Sinks that work on a thread of their own keep the span past the call:
  // the pipeline then calls consume_kept(), and the batch returns to the pool
  // when the sink releases the lease.
  virtual bool keeps_spans() const { return false; }
  // Bytes this sink holds per frame of a batch while it works on one (its
  // encoding buffers, sized at begin() for the batch's frames): the memory
  // budget counts them (pipeline/memory_budget.h). 0: none that grows with
  // the batch.
  virtual std::size_t batch_bytes_per_frame(int width, int slots) const {
    (void)width;
    (void)slots;
    return 0;
  }
  virtual void consume_kept(const ProfileSpan& profiles, SpanLease& lease) {
    struct Release {
      SpanLease& lease;
      ~Release() { lease.release(); }
    } release{lease};
    consume(profiles);
  }
};

}  // namespace stripeline
