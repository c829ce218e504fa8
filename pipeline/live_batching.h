#pragma once
// The live path's backlog rule (docs/architecture.md, "The live path's
// backlog"). A run configured with a small batch (batch_frames below
// live_max_batch: the low-latency mode) gets pool buffers sized for
// live_max_batch frames; before each fill the acquire stage asks the source
// how many frames wait (FrameSource::pending_frames) and LiveBatcher decides:
//   - take max(configured, waiting) frames, at most live_max_batch: when the
//     path falls behind, the batch grows to catch up (the switch to batching,
//     logged and counted), and shrinks back to the configured size once
//     nothing more than it waits ("caught up", logged and counted);
//   - when more than live_max_waiting frames wait even so, the oldest beyond
//     that bound are discarded (FrameSource::drop_pending) and counted:
//     the newest frames keep a bounded latency rather than every frame
//     getting an ever larger one. Discarded frames leave no rows (like a gap
//     beyond the camera's gap_fill_limit); their ids show the jump.
// Also here: the frame-arrival -> profile latency histogram the sink stage
// fills (fixed buckets, nothing allocated per frame).
//
// Thread-safety: LiveBatcher is used by the acquire stage alone (serial);
// LiveStats is a value copied into PipelineStats by the sink stage.
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>

namespace stripeline {

// Frame-arrival -> profile latency, Prometheus-style buckets in microseconds
// (cumulative on output; counts per bucket here).
struct LatencyHistogram {
  static constexpr std::array<double, 16> kBoundsUs = {10,    20,    50,    100,    200,    500,    1000,   2000,
                                                       5000,  10000, 20000, 50000, 100000, 200000, 500000, 1000000};
  std::array<std::uint64_t, kBoundsUs.size() + 1> counts{};  // the last: above every bound (+Inf)
  double sum_us = 0.0;
  std::uint64_t count = 0;
  void observe(double us);
  // The smallest bucket bound holding at least fraction q of the observations
  // (+Inf as infinity; 0 when empty): a coarse quantile for summaries.
  double quantile_bound_us(double q) const;
};

// Where a batch's latency goes (PipelineStats::stages), in quarter-
// microsecond buckets up to kTopUs (the last bucket: beyond): the hand-over
// from the source (its frames' arrival -> the fill returned), the processing
// (-> the processor returned), the count of its points (-> counted; nothing
// for a batch that counts them after its sinks) and the sinks (-> every
// sink done). Per batch, from its first frame's arrival; nothing allocated.
struct StageTimes {
  enum Stage : int { kAcquire, kProcess, kCount, kSink, kStages };
  static constexpr int kPerUs = 4, kTopUs = 500, kBuckets = kPerUs * kTopUs + 1;
  std::array<std::array<std::uint32_t, kBuckets>, kStages> counts{};
  std::uint64_t batches = 0;
  // A batch's stamps (steady_clock ns): arrival, fill returned, processed, points counted, sinks done.
  void observe(std::int64_t arrival, std::int64_t filled, std::int64_t processed, std::int64_t counted, std::int64_t sunk);
  // The stage's median over the batches observed, us (a bucket's middle; 0 when none).
  double median_us(Stage s) const;
};

// What the live path did in one run (PipelineStats::live).
struct LiveStats {
  bool active = false;               // low-latency mode with a source that reports its backlog
  int configured_batch = 0;          // batch_frames
  int max_batch = 0;                 // the bound the batch grows to (live_max_batch, the pool's capacity)
  std::uint64_t max_waiting = 0;     // frames waiting beyond which the oldest are dropped (0 = never)
  int current_batch = 0;             // frames the last acquisition took
  int largest_batch = 0;             // the most frames one acquisition took
  std::uint64_t queue_depth = 0;     // frames waiting at the source at the last acquisition (before any drop)
  std::uint64_t largest_queue_depth = 0;  // the most frames seen waiting
  std::uint64_t largest_kept_depth = 0;   // the most frames left waiting after the bound (<= max_waiting when it is set)
  std::uint64_t to_batching = 0;     // switches from the configured batch to a larger one
  std::uint64_t caught_up = 0;       // switches back to the configured batch
  std::uint64_t dropped = 0;         // frames discarded by the bound (oldest first)
  bool batching = false;             // the last acquisition took more than the configured batch
  LatencyHistogram latency;          // frame arrival -> every sink done, per frame
};

class LiveBatcher {
 public:
  // configured >= 1, max_batch >= configured; max_waiting 0 = never drop.
  LiveBatcher(int configured, int max_batch, std::uint64_t max_waiting);
  struct Decision {
    int take;            // frames to ask the next fill() for
    std::uint64_t drop;  // oldest waiting frames to discard first
  };
  // The next acquisition, from the frames waiting now (nullopt: unknown, the
  // configured batch). Logs the switches (rate-limited).
  Decision decide(std::optional<std::uint64_t> waiting);
  // The source discarded `n` frames (what drop_pending returned).
  void dropped(std::uint64_t n, std::uint64_t asked);
  // The counters so far (latency not included: the sink stage owns it).
  const LiveStats& stats() const { return stats_; }

 private:
  using clock = std::chrono::steady_clock;
  LiveStats stats_;
  std::uint64_t waiting_ = 0;  // the last decide()'s
  clock::time_point last_log_{}, last_drop_log_{};  // the switches' lines and the drops' lines, each at most one a second
  std::uint64_t unlogged_drops_ = 0;
  bool logged_batching_ = false;
  bool said_cannot_drop_ = false;  // the last switch to batching was logged: so is its end
  static bool log_now(clock::time_point& last);
};

}  // namespace stripeline
