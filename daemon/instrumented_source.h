#pragma once
// The daemon's view of its source: paces it (frames per second, interruptible
// by stop()), counts frames acquired, and remembers when each batch left the
// source so that the end-to-end latency of each batch (source -> every sink)
// and the batches in flight can be measured. Batches leave the source and
// reach the sinks in the same order (the pipeline's first and last filters
// are serial and in order), so a FIFO of fill times is enough.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include "acquisition/source.h"

namespace stripeline::daemon {

class InstrumentedSource final : public FrameSource {
 public:
  // on_end: called from fill() when the inner source ends, with its reason,
  // before the pipeline finishes its sinks (the scan's end reason is set there).
  InstrumentedSource(FrameSource& inner, double rate, std::function<void(SourceEnd)> on_end = {});
  BatchLayout frame_layout() const override { return inner_.frame_layout(); }
  bool fill(Batch& batch) override;
  std::optional<std::uint64_t> total_frames() const override { return inner_.total_frames(); }
  std::string describe() const override;
  SourceEnd end_reason() const override { return inner_.end_reason(); }
  void request_stop() noexcept override { inner_.request_stop(); }
  std::optional<AcquisitionCounters> acquisition_counters() const override { return inner_.acquisition_counters(); }
  // The inner source's backlog; a paced one's (`--rate`): the frames already due.
  std::optional<std::uint64_t> pending_frames() const override;
  std::uint64_t drop_pending(std::uint64_t n) override;
  std::int64_t arrival_ns(const FrameMeta& frame) const override { return inner_.arrival_ns(frame); }
  SignificantBits significant_bits() const override { return inner_.significant_bits(); }
  // Zero copy: the grabber writes into the pipeline's batches through this
  // wrapper as it would without it.
  std::size_t direct_buffer_bytes() const override { return inner_.direct_buffer_bytes(); }
  void attach_buffers(std::span<Batch* const> batches, HostAllocator allocator) override { inner_.attach_buffers(batches, allocator); }
  void detach_buffers() noexcept override { inner_.detach_buffers(); }

  // The next fill() returns false; a pacing wait (or a camera's wait for
  // frames) ends now. Thread-safe.
  void stop();
  // A batch reached every sink: its latency in seconds (the oldest in flight).
  std::optional<double> batch_done();
  std::size_t in_flight() const;
  // Age of the oldest batch in flight (0 when none).
  double oldest_in_flight_seconds() const;
  std::uint64_t frames() const { return frames_.load(); }
  std::uint64_t missing() const { return missing_.load(); }

 private:
  using clock = std::chrono::steady_clock;
  FrameSource& inner_;
  double rate_;
  std::function<void(SourceEnd)> on_end_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> frames_{0}, missing_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<clock::time_point> filled_;
  std::optional<clock::time_point> start_;
  std::uint64_t paced_frames_ = 0;
};

}  // namespace stripeline::daemon
