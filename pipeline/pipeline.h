#pragma once
// The flow: source -> processor lanes -> sinks, with oneTBB's
// parallel_pipeline. Follow one frame:
//   1. acquire (serial, in order): a slot is taken from the BufferPool, the
//      source writes the next frames straight into it, the pipeline numbers
//      the batch (the only place batches are numbered);
//   2. process (parallel): a free processor lane (CPU, or a CUDA stream)
//      turns the batch into profiles;
//   3. sink (serial, in order): every sink consumes the profiles in
//      acquisition order, and the slot goes back to the pool.
// The number of tokens equals the number of slots, so frames in flight are
// bounded by the pool by construction. The per-frame path (small batches on
// the CUDA backend) runs the same three steps on dedicated lane threads
// taking the batches in turn instead (pipeline/lane_threads.h): oneTBB's
// hand-overs cost it tens of microseconds a frame.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "acquisition/source.h"
#include "core/calibration.h"
#include "core/thread_scheduling.h"
#include "pipeline/live_batching.h"
#include "pipeline/memory_budget.h"
#include "pipeline/sink.h"
#include "stages/ambient.h"
#include "stages/chain.h"

namespace stripeline {

// Who runs the steps: oneTBB's parallel_pipeline, or dedicated lane threads
// taking the batches in turn (pipeline/lane_threads.h). Auto: the threads for
// batches of at most kLaneThreadsMaxBatch frames on the CUDA backend (the
// per-frame path, whose latency the hand-overs would dominate), oneTBB
// otherwise (the CPU backend's own work runs on oneTBB's workers).
enum class LaneScheduling { Auto, Pipeline, Threads };
const char* to_string(LaneScheduling s);
LaneScheduling parse_lane_scheduling(std::string_view text);  // ConfigError naming lane_scheduling
inline constexpr int kLaneThreadsMaxBatch = 16;
inline constexpr int kLaneThreadsAuto = 4;  // lane threads at most when PipelineOptions::lanes is 0 (automatic)

// [processing] (and [calibration]) of a configuration.
struct PipelineOptions {
  Backend backend = Backend::Auto;  // resolved by the pipeline
  int batch_frames = 0;             // frames per batch (the grabber's buffer); 0 = from the memory budget, at most 300 (pipeline/memory_budget.h)
  int buffers = 4;                  // slots in the pool = batches in flight (at most the batches a file holds)
  MemoryBudget memory;              // host and device bytes the batches may take; 0 = automatic
  int lanes = 0;                    // processors working at once (0 = buffers - 1, at least 1)
  // The CUDA device (ordinal) this engine's processors, streams and device
  // buffers live on; several engines in one process may each name their own
  // (a multi-head daemon, `bench --devices`). Ignored by the CPU backend.
  int device = 0;
  // The live path (pipeline/live_batching.h): with batch_frames in
  // 1..live_max_batch-1 and a source that reports its backlog, the batch
  // grows up to live_max_batch frames while frames wait, and beyond
  // live_max_waiting waiting frames the oldest are dropped.
  int live_max_batch = 64;          // 0 = off: the batch never grows
  int live_max_waiting = 0;         // 0 = buffers x live_max_batch; -1 = never drop
  LaneScheduling scheduling = LaneScheduling::Auto;
  ThreadScheduling lane_thread_scheduling;  // the lane threads' CPUs (lane_cpus) and SCHED_FIFO priority (lane_realtime_priority); default: untouched
  ChainConfig chain;
  AmbientConfig ambient;            // laser-off frames: none, a dark frame, or alternate frames (stages/ambient.h)
  LinearCalibration calibration;
  // [calibration] file (or --calibration): the sheet-of-light model every
  // point goes through (app/calibration_setup.h loads it); null = none.
  std::shared_ptr<const AppliedCalibration> sheet;

  // Ranges of batch_frames, buffers and lanes (ConfigError naming the key);
  // the chain is checked against the frame geometry when a run starts.
  void validate() const;
};

struct PipelineStats {
  Backend backend = Backend::Cpu;
  std::uint64_t frames = 0;      // frames acquired
  std::uint64_t profiles = 0;    // profiles emitted (one per frame)
  std::uint64_t points = 0;      // detected points written to the sinks
  std::uint64_t overflow = 0;    // points found beyond the output slots (counted, not written)
  std::uint64_t ambient_frames = 0;  // laser-off frames consumed by ambient = "alternate" (not profiles)
  std::uint64_t batches = 0;
  std::uint64_t bytes = 0;       // pixel bytes processed
  double seconds = 0.0;          // wall time from first fill to last sink
  double compute_ms = 0.0;       // processor time summed over batches
  double cuda_startup_ms = 0.0;
  bool pinned = false;
  bool lane_threads = false;       // the steps ran on dedicated lane threads (PipelineOptions::scheduling), not oneTBB's pipeline
  SignificantBits pixel_bits{};    // the significant bits extracted with, and where they came from (acquisition/pixel_bits.h)
  LiveStats live;                  // the live path's backlog, batch sizes and latency (pipeline/live_batching.h)
  // Where each batch's latency went (the source's hand-over, the processing,
  // the point count, the sinks), filled by run()'s sink stage: shared, not
  // held, so the stats copied after every batch (the daemon's metrics) stay
  // small. Null before run().
  std::shared_ptr<const StageTimes> stages;
  BatchGeometry geometry;          // frames per batch, buffers, lanes, slots and the memory they take (pipeline/memory_budget.h)
  double mb_per_s() const { return seconds > 0 ? bytes / 1e6 / seconds : 0.0; }
  double profiles_per_s() const { return seconds > 0 ? profiles / seconds : 0.0; }
};

// Called from the sink stage after each batch (progress bars, metrics).
using ProgressCallback = std::function<void(const PipelineStats&)>;

class Pipeline {
 public:
  // Throws ConfigError for out-of-range options.
  explicit Pipeline(PipelineOptions options);
  // Runs until the source is exhausted or stop() is called; then every sink
  // finishes. On an exception every sink aborts and it is rethrown.
  PipelineStats run(FrameSource& source, const std::vector<ProfileSink*>& sinks, const ProgressCallback& progress = {});
  // Ask a running pipeline to stop after the batches in flight (thread-safe).
  void stop() { stop_requested_.store(true); }

 private:
  // The batch geometry for this source and these sinks (pipeline/memory_budget.h).
  BatchGeometry plan_geometry(const FrameSource& source, const std::vector<ProfileSink*>& sinks, const BatchLayout& frame,
                              const ChainConfig& chain, Backend backend, int batch_frames) const;
  PipelineOptions options_;
  std::atomic<bool> stop_requested_{false};
};

}  // namespace stripeline
