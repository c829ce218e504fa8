#pragma once
// A camera emulated to the microsecond: synthetic frames "arrive" on a fixed
// schedule (one segment after another, each at its own rate) whatever the
// consumer does, as a free-running camera's do. What the live path is
// measured and tested with (`stripeline bench`'s latency run, the backlog
// tests): it knows exactly which frames have arrived and wait
// (pending_frames), discards the oldest on request (drop_pending), and tells
// each frame's arrival (arrival_ns: its scheduled time).
//
// fill() hands on up to batch.layout.frames frames once the last of them has
// arrived (spinning until then, as the harness must not oversleep). Each
// pool buffer is rendered once (real stripe content) at first sight; later
// fills only stamp the metadata, so the source costs nothing per frame.
// Thread-safety: one thread calls fill(), pending_frames() and drop_pending().
#include <chrono>
#include <cstdint>
#include <vector>

#include "acquisition/synthetic_scanner.h"

namespace stripeline {

struct PacedSegment {
  std::uint64_t frames = 0;
  double rate = 0;  // frames per second, > 0
};

class PacedSource final : public FrameSource {
 public:
  // The frames' content (config.frames is ignored: the segments say how many).
  PacedSource(SyntheticConfig config, std::vector<PacedSegment> segments);
  BatchLayout frame_layout() const override { return scanner_.frame_layout(); }
  bool fill(Batch& batch) override;
  std::optional<std::uint64_t> total_frames() const override { return total_; }
  std::optional<std::uint64_t> pending_frames() const override;
  std::uint64_t drop_pending(std::uint64_t n) override;
  std::int64_t arrival_ns(const FrameMeta& frame) const override;
  std::string describe() const override;

  std::uint64_t sent() const { return next_; }        // frames handed on or dropped so far
  std::uint64_t dropped() const { return dropped_; }  // frames discarded by drop_pending
  // The most frames waiting as a fill() began (the backlog its consumer left
  // at the source), after the first tenth of the frames (the warm-up, where
  // the first sight of each pool buffer renders it).
  std::uint64_t largest_backlog() const { return largest_backlog_; }
  // The scheduled arrival of frame i, steady_clock (valid once the first fill() started the clock).
  std::chrono::steady_clock::time_point arrival(std::uint64_t i) const;

 private:
  using clock = std::chrono::steady_clock;
  std::uint64_t due_by(clock::time_point t) const;  // frames whose arrival is <= t
  SyntheticScanner scanner_;
  std::vector<PacedSegment> segments_;
  std::vector<double> segment_start_s_;  // each segment's first frame, seconds after start_
  std::uint64_t total_ = 0, next_ = 0, dropped_ = 0, largest_backlog_ = 0;
  bool started_ = false;
  clock::time_point start_;
  std::vector<const std::byte*> rendered_;
};

}  // namespace stripeline
