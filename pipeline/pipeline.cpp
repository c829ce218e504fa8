// The flow, as three named steps: AcquireFilter (serial, in order) ->
// ProcessFilter (parallel, one processor lane per batch) -> SinkFilter
// (serial, in order), run either as a oneTBB parallel_pipeline whose tokens
// are the pool's slots or, for the per-frame path, by dedicated lane threads
// taking the batches in turn (pipeline/lane_threads.h).
#include "pipeline/pipeline.h"

#include <algorithm>
#include <memory>
#include <optional>

#include <tbb/concurrent_queue.h>
#include <tbb/parallel_pipeline.h>

#include <spdlog/spdlog.h>

#include "acquisition/pixel_bits.h"
#include "core/errors.h"
#include "io/image_reader.h"
#include "pipeline/buffer_pool.h"
#include "pipeline/lane_threads.h"

namespace stripeline {

const char* to_string(LaneScheduling s) {
  return s == LaneScheduling::Pipeline ? "pipeline" : s == LaneScheduling::Threads ? "threads" : "auto";
}
LaneScheduling parse_lane_scheduling(std::string_view text) {
  if (text == "auto") return LaneScheduling::Auto;
  if (text == "pipeline") return LaneScheduling::Pipeline;
  if (text == "threads") return LaneScheduling::Threads;
  throw ConfigError("lane_scheduling '" + std::string(text) + "' is not known (expected auto, pipeline or threads)");
}

void PipelineOptions::validate() const {
  auto bad = [](const char* key, int value, const std::string& expected) {
    throw ConfigError(std::string(key) + " = " + std::to_string(value) + " is out of range (expected " + expected + ")");
  };
  if (batch_frames < 0 || batch_frames > kMaxBatchFrames)
    bad("batch_frames", batch_frames, "0 (from the memory budget) or 1.." + std::to_string(kMaxBatchFrames));
  if (buffers < 1 || buffers > 64) bad("buffers", buffers, "1..64");
  if (lanes < 0 || lanes > 64) bad("lanes", lanes, "0 (automatic)..64");
  if (device < 0 || device > 63) bad("device", device, "a CUDA device ordinal 0..63");
  if (live_max_batch < 0 || live_max_batch > kMaxBatchFrames) bad("live_max_batch", live_max_batch, "0 (off) or 1.." + std::to_string(kMaxBatchFrames));
  if (live_max_waiting < -1) bad("live_max_waiting", live_max_waiting, "-1 (never drop), 0 (buffers x live_max_batch) or a frame count");
  const int priority = lane_thread_scheduling.fifo_priority;
  ThreadScheduling{priority, {}}.validate("lane_realtime_priority");
  ThreadScheduling{0, lane_thread_scheduling.cpus}.validate("lane_cpus");
  if (priority > 0) lane_thread_scheduling.check_permitted("lane_realtime_priority");
  ambient.validate();
  if (ambient.mode == AmbientMode::Alternate && batch_frames % 2 != 0)  // 0 (automatic) is made even
    bad("batch_frames", batch_frames, "an even number with ambient = \"alternate\" (laser-on/off pairs never straddle two batches)");
}

namespace {

using clock = std::chrono::steady_clock;

// The laser-off reference, read once at set-up (InputError naming the file).
std::shared_ptr<const DarkFrame> load_dark_frame(const std::string& path, const BatchLayout& frames) {
  auto reader = io::open_image(path);
  const io::ImageInfo& info = reader->info();
  auto d = std::make_shared<DarkFrame>();
  d->origin = path;
  d->width = info.width;
  d->height = static_cast<int>(std::min<std::int64_t>(info.height, std::int64_t{1} << 30));
  d->format = info.format;
  if (info.height != frames.frame_height || info.width != frames.width || info.format != frames.format) return d;  // the suppressor names the mismatch
  d->pixels.resize(frames.frame_pixels() * bytes_per_pixel(frames.format));
  reader->read_rows(d->pixels.data(), info.height);
  return d;
}

// steady_clock now, in nanoseconds (the frames' arrival stamps' clock).
std::int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count(); }

// When each frame became available: the source's word, else now, as fill()
// returned (the batch's fill stamp too).
void stamp_arrival(const FrameSource& source, Slot* slot) {
  const std::int64_t now = now_ns();
  slot->filled_ns = now;
  const Batch& b = slot->batch;
  for (int i = 0; i < b.frames; ++i) {
    const std::int64_t a = source.arrival_ns(b.meta[static_cast<std::size_t>(i)]);
    slot->arrival_ns[static_cast<std::size_t>(i)] = a != 0 ? a : now;
  }
}

// The source's next batch into the slot, laser-off frames consumed by the
// ambient suppressor (a batch whose frames were all laser-off is refilled).
// False when the source has ended. `raw_max`, when given, gets the highest
// pixel value before the suppression (the significant bits' inference).
bool fill_slot(FrameSource& source, Slot* slot, const AmbientSuppressor* ambient, std::uint64_t& consumed, std::uint32_t* raw_max = nullptr) {
  do {
    slot->batch.frames = 0;
    if (!source.fill(slot->batch) || slot->batch.frames == 0) return false;
    if (raw_max != nullptr) *raw_max = std::max(*raw_max, max_pixel_value(slot->batch));
    if (ambient != nullptr) consumed += ambient->apply(slot->batch);
  } while (slot->batch.frames == 0);
  stamp_arrival(source, slot);  // the frames that stay (laser-on, with their own metadata)
  return true;
}

// 1. A free slot, filled by the source; the pipeline numbers the batch.
// `first`: a batch already filled before the run began (the significant
// bits' inference), handed on first; null when none.
class AcquireFilter {
 public:
  // `first_index`: the first profile's global index (0, or where a part of a recording starts).
  // `live`: the live path's batcher (low-latency mode), null otherwise.
  AcquireFilter(FrameSource& source, BufferPool& pool, const std::atomic<bool>& stop, const AmbientSuppressor* ambient, std::uint64_t& consumed,
                Slot* first, std::uint64_t first_index, LiveBatcher* live)
      : source_(source), pool_(pool), stop_(stop), ambient_(ambient), consumed_(consumed), live_(live), next_index_(first_index), first_(first) {}
  Slot* operator()(tbb::flow_control& fc) const {
    Slot* slot = next();
    if (slot == nullptr) fc.stop();
    return slot;
  }
  // The next numbered batch; null once the source has ended or stop was asked.
  Slot* next() const {
    Slot* slot = first_;
    first_ = nullptr;
    if (slot == nullptr) {
      if (stop_.load()) return nullptr;
      slot = pool_.acquire();
      if (live_ != nullptr) size_live_batch(slot);
      const bool filled = fill_slot(source_, slot, ambient_, consumed_);
      if (live_ != nullptr) slot->batch.layout.frames = live_->stats().max_batch;  // the slot's capacity again: what the processors were set up for
      if (!filled) {
        pool_.release(slot);
        return nullptr;
      }
    }
    slot->batch.sequence = next_sequence_++;
    slot->batch.first_index = next_index_;
    next_index_ += static_cast<std::uint64_t>(slot->batch.frames);
    return slot;
  }

 private:
  // The live path: what waits decides how many frames this fill takes (the
  // slot holds live_max_batch); beyond the bound the oldest are dropped.
  void size_live_batch(Slot* slot) const {
    const LiveBatcher::Decision d = live_->decide(source_.pending_frames());
    live_->dropped(d.drop > 0 ? source_.drop_pending(d.drop) : 0, d.drop);
    slot->batch.layout.frames = d.take;
    slot->live = live_->stats();
  }
  FrameSource& source_;
  BufferPool& pool_;
  const std::atomic<bool>& stop_;
  const AmbientSuppressor* ambient_;  // null: none
  std::uint64_t& consumed_;
  LiveBatcher* live_;  // null: not the live path
  // Serial filter: one call at a time, so plain counters (mutable: TBB takes the filter by const reference).
  mutable std::uint64_t next_sequence_ = 0, next_index_;
  mutable Slot* first_;
};

// A batch's points, for the run's statistics. A large batch counts them in
// the parallel process stage: a 300x2048 batch has 614,400 columns to look
// at, which would hold up the serial sink stage. A few frames count them
// after their sinks: a frame's columns, just written by the device, took
// ~1.1 us that delayed its profile (H100, session 19).
constexpr int kCountAfterSinksFrames = 16;
bool counts_points_after_sinks(const Slot& slot) { return slot.batch.frames <= kCountAfterSinksFrames; }
void count_points(Slot& slot) {
  const ProfileBatch::PointCounts counts = slot.profiles.count_points();
  slot.points = counts.points;
  slot.overflow = counts.overflow;
}

// 2. Profiles from pixels, on whichever processor lane is free.
class ProcessFilter {
 public:
  ProcessFilter(tbb::concurrent_bounded_queue<BatchProcessor*>& lanes, BufferPool& pool) : lanes_(lanes), pool_(pool) {}
  Slot* operator()(Slot* slot) const {
    BatchProcessor* lane = nullptr;
    lanes_.pop(lane);  // lanes <= tokens: waits only briefly
    struct GiveBack {
      tbb::concurrent_bounded_queue<BatchProcessor*>& lanes;
      BatchProcessor* lane;
      ~GiveBack() { lanes.push(lane); }
    } give_back{lanes_, lane};
    process_on(*lane, slot, pool_);
    return slot;
  }
  // The batch's profiles from `lane` (the slot goes back to the pool if it throws).
  static void process_on(BatchProcessor& lane, Slot* slot, BufferPool& pool) {
    try {
      lane.process(slot->batch, slot->profiles);
    } catch (...) {
      pool.release(slot);
      throw;
    }
    slot->processed_ns = slot->counted_ns = now_ns();
    slot->compute_ms = lane.last_compute_ms();
    if (counts_points_after_sinks(*slot)) return;
    count_points(*slot);
    slot->counted_ns = now_ns();
  }

 private:
  tbb::concurrent_bounded_queue<BatchProcessor*>& lanes_;
  BufferPool& pool_;
};

// 3. Every sink, in acquisition order; then the slot goes back to the pool.
class SinkFilter {
 public:
  SinkFilter(const std::vector<ProfileSink*>& sinks, PipelineStats& stats, StageTimes& stages, clock::time_point start, const ProgressCallback& progress)
      : sinks_(sinks), stats_(stats), stages_(stages), start_(start), progress_(progress) {}
  void operator()(Slot* slot) const {
    // The sink stage holds the slot; so does every sink that keeps the span
    // (a file writer on its own thread): it returns to the pool after the last.
    slot->holders.store(1, std::memory_order_relaxed);
    struct Release {
      Slot* slot;
      ~Release() { slot->release(); }
    } release{slot};
    const ProfileSpan span = slot->profiles.span();
    for (ProfileSink* sink : sinks_) {
      if (sink->keeps_spans()) {
        slot->holders.fetch_add(1, std::memory_order_relaxed);
        sink->consume_kept(span, *slot);
      } else {
        sink->consume(span);
      }
    }
    observe_latency(*slot);
    if (counts_points_after_sinks(*slot)) count_points(*slot);
    if (slot->live.active) {
      const LatencyHistogram latency = stats_.live.latency;
      stats_.live = slot->live;
      stats_.live.latency = latency;
    }
    stats_.frames += static_cast<std::uint64_t>(slot->batch.frames);
    stats_.profiles += static_cast<std::uint64_t>(span.frames);
    stats_.points += slot->points;
    stats_.overflow += slot->overflow;
    stats_.bytes += slot->batch.filled_bytes();
    stats_.compute_ms += slot->compute_ms;
    ++stats_.batches;
    stats_.seconds = std::chrono::duration<double>(clock::now() - start_).count();
    if (progress_) progress_(stats_);
  }

 private:
  // Frame arrival -> every sink done, per frame.
  void observe_latency(const Slot& slot) const {
    const std::int64_t now = now_ns();
    if (slot.batch.frames > 0) stages_.observe(slot.arrival_ns[0], slot.filled_ns, slot.processed_ns, slot.counted_ns, now);
    for (int f = 0; f < slot.batch.frames; ++f) stats_.live.latency.observe(static_cast<double>(now - slot.arrival_ns[static_cast<std::size_t>(f)]) / 1e3);
  }
  const std::vector<ProfileSink*>& sinks_;
  PipelineStats& stats_;
  StageTimes& stages_;  // stats_.stages, writable (one writer: this serial stage)
  clock::time_point start_;
  const ProgressCallback& progress_;
};

// The pool's batches shown to a source that writes into them (a frame
// grabber), for the life of the pool: detached before it is freed, on every
// path out of run().
class AttachedBuffers {
 public:
  AttachedBuffers(FrameSource& source, const BufferPool& pool, bool attach) : source_(attach ? &source : nullptr) {
    if (!source_) return;
    const std::vector<Batch*> batches = pool.batches();
    source_->attach_buffers(batches, pool.allocator());
  }
  ~AttachedBuffers() {
    if (source_) source_->detach_buffers();
  }
  AttachedBuffers(const AttachedBuffers&) = delete;
  AttachedBuffers& operator=(const AttachedBuffers&) = delete;

 private:
  FrameSource* source_;
};

// The first profile's index of a run over `range` (a part of a recording):
// its first frame's, or half of it where laser-off frames alternate (a pair
// is one profile). InputError where the part cannot give the whole replay's
// rows: an alternate part that splits a pair, significant bits that the whole
// replay would infer from its first batch.
std::uint64_t first_profile_index(const std::optional<FrameRange>& range, const FrameSource& source, const PipelineOptions& options,
                                  bool bits_need_data) {
  if (!range) return 0;
  const std::string part = "frames " + std::to_string(range->start) + ":" + std::to_string(range->end);
  if (bits_need_data)
    throw InputError(source.describe() + ": " + part + ": 16-bit frames whose significant bits the file does not record: the whole replay "
                     "infers them from its first batch, which a part does not see (expected --pixel-bits N, or [processing] pixel_bits)");
  if (options.ambient.mode != AmbientMode::Alternate) return range->start;
  if (range->start % 2 != 0 || (range->end % 2 != 0 && range->end != range->of))
    throw InputError(source.describe() + ": " + part + " splits a laser-on/off pair (expected even START and END, or END the last frame, " +
                     "with ambient = \"alternate\")");
  return range->start / 2;
}

}  // namespace

Pipeline::Pipeline(PipelineOptions options) : options_(std::move(options)) { options_.validate(); }

BatchGeometry Pipeline::plan_geometry(const FrameSource& source, const std::vector<ProfileSink*>& sinks, const BatchLayout& frame,
                                      const ChainConfig& chain, Backend backend, int batch_frames) const {
  GeometryRequest r;
  r.frame = frame;
  r.chain = chain;
  r.backend = backend;
  r.batch_frames = batch_frames;
  r.buffers = options_.buffers;
  r.lanes = options_.lanes;
  r.even_frames = options_.ambient.mode == AmbientMode::Alternate;
  r.source_frames = source.total_frames();
  r.direct_bytes = source.direct_buffer_bytes();
  r.budget = options_.memory;
  for (const ProfileSink* sink : sinks) r.sink_bytes_per_slot += sink->batch_bytes_per_frame(frame.width, 1);
  return plan_batch_geometry(r);
}

PipelineStats Pipeline::run(FrameSource& source, const std::vector<ProfileSink*>& sinks, const ProgressCallback& progress) {
  PipelineStats stats;
  stats.backend = resolve_backend(options_.backend);
  stats.cuda_startup_ms = stats.backend == Backend::Cuda ? cuda_startup_ms() : 0.0;
  // The engine's device, current while everything is set up (the memory
  // budget reads its free memory; processors record it and use it on every
  // call, whichever worker thread makes the call).
  std::optional<CudaDeviceScope> on_device;
  if (stats.backend == Backend::Cuda) on_device.emplace(options_.device);

  BatchLayout layout = source.frame_layout();
  // A sheet-of-light calibration is the chain's last step: every detection
  // mapped to mm by the processor, on its backend (the GPU's inside the batch).
  ChainConfig chain = options_.chain;
  chain.calibration = options_.sheet;
  layout.frames = std::max(1, options_.batch_frames);
  kernels::ColumnParams params = validate_chain(chain, layout);  // the configured values checked before any frame is read
  // The batch geometry from the memory budget, before anything is allocated
  // (pipeline/memory_budget.h): frames, buffers, lanes, slots.
  // The live path: a small configured batch over a source that reports its
  // backlog gets slots of live_max_batch frames (pipeline/live_batching.h).
  const bool live = options_.batch_frames >= 1 && options_.live_max_batch > options_.batch_frames && source.direct_buffer_bytes() == 0 &&
                    options_.ambient.mode != AmbientMode::Alternate && source.pending_frames().has_value();
  stats.geometry = plan_geometry(source, sinks, layout, chain, stats.backend, live ? options_.live_max_batch : options_.batch_frames);
  const BatchGeometry& geometry = stats.geometry;
  layout.frames = geometry.frames;
  chain = with_output_slots(chain, geometry.slots);
  params = validate_chain(chain, layout);
  std::optional<AmbientSuppressor> ambient;
  if (options_.ambient.mode != AmbientMode::None) {
    AmbientConfig a = options_.ambient;
    if (a.mode == AmbientMode::DarkFrame && !a.dark) a.dark = load_dark_frame(a.dark_frame_path, layout);
    ambient.emplace(a, layout);
  }
  std::uint64_t ambient_frames = 0;
  std::optional<LiveBatcher> live_batcher;
  if (live) {
    const int waiting = options_.live_max_waiting == 0 ? geometry.buffers * geometry.frames : std::max(0, options_.live_max_waiting);
    live_batcher.emplace(options_.batch_frames, geometry.frames, static_cast<std::uint64_t>(waiting));
    stats.live = live_batcher->stats();
    spdlog::info("live path: batches of {} frames, up to {} while frames wait; {}", options_.batch_frames, geometry.frames,
                 waiting > 0 ? "beyond " + std::to_string(waiting) + " waiting frames the oldest are dropped" : "no frame dropped");
  }

  // Set-up: everything is allocated here, nothing in the steady state. A
  // frame grabber that writes whole batches gets the pool's buffers (sized
  // for its payload): it fills them itself, nothing is copied (zero copy).
  const std::size_t direct_bytes = source.direct_buffer_bytes();
  BufferPool pool(layout, params.slots, geometry.buffers, host_allocator_for(stats.backend), chain.calibration != nullptr, direct_bytes);
  stats.pinned = pool.pinned();
  AttachedBuffers attached(source, pool, direct_bytes > 0);
  // The significant bits (acquisition/pixel_bits.h): from the configuration or
  // the source, else from the first batch, filled now and processed first.
  std::optional<clock::time_point> first_fill;
  Slot* first = nullptr;
  std::optional<std::uint32_t> first_max;
  const std::optional<FrameRange> range = source.frame_range();
  const std::uint64_t first_index =
      first_profile_index(range, source, options_, pixel_bits_need_data(chain.adaptive.pixel_bits, source));
  if (pixel_bits_need_data(chain.adaptive.pixel_bits, source)) {
    first_fill = clock::now();
    first = pool.acquire();
    if (live) first->batch.layout.frames = options_.batch_frames;  // the live path's first batch: the configured size
    std::uint32_t top = 0;
    const bool filled = fill_slot(source, first, ambient ? &*ambient : nullptr, ambient_frames, &top);
    first->batch.layout.frames = layout.frames;
    if (filled) {
      first_max = top;
    } else {
      pool.release(first);
      first = nullptr;
    }
  }
  stats.pixel_bits = decide_pixel_bits(chain.adaptive.pixel_bits, source, first_max);
  chain.adaptive.pixel_bits = stats.pixel_bits.bits;
  params = validate_chain(chain, layout);
  stats.lane_threads = options_.scheduling == LaneScheduling::Threads ||
                       (options_.scheduling == LaneScheduling::Auto && stats.backend == Backend::Cuda && options_.batch_frames >= 1 &&
                        options_.batch_frames <= kLaneThreadsMaxBatch);
  // Lane threads spin: beyond a few, they take cores from each other and
  // from the driver's completion spins (measured on an H100 host: 2-4 lanes
  // kept a 20 kHz batch of 1, 7 fell behind), so an automatic count stops at kLaneThreadsAuto.
  const int lanes = stats.lane_threads && options_.lanes == 0 ? std::min(geometry.lanes, kLaneThreadsAuto) : geometry.lanes;
  std::vector<std::unique_ptr<BatchProcessor>> processors;
  tbb::concurrent_bounded_queue<BatchProcessor*> free_lanes;
  for (int i = 0; i < lanes; ++i) {
    processors.push_back(make_processor(stats.backend, layout, chain));
    free_lanes.push(processors.back().get());
  }
  spdlog::info("pipeline: {} backend, {} ({}{})", to_string(stats.backend), geometry.describe(), stats.pinned ? "pinned" : "pageable",
               stats.lane_threads ? ", " + std::to_string(lanes) + " dedicated lane thread" + (lanes == 1 ? "" : "s") : std::string());
  spdlog::debug("pipeline: memory plan: frames per batch {} ({}), slots {} of {} asked, host {} of {} bytes, device {} of {} bytes", geometry.frames,
                geometry.frames_from_budget ? "cut by the budget" : "the target", geometry.slots, geometry.requested_slots, geometry.host_bytes,
                geometry.host_budget, geometry.device_bytes, geometry.device_budget);
  if (geometry.slots < geometry.requested_slots)
    spdlog::warn("pipeline: the memory budget keeps {} of {} slots per column: points beyond them are counted as overflow, not written",
                 geometry.slots, geometry.requested_slots);

  const ScanInfo info{layout, params.slots, chain, options_.calibration, source.describe(), stats.backend, options_.sheet, stats.pixel_bits,
                      geometry.host_budget, geometry.device_budget, range};
  std::size_t begun = 0;
  try {
    for (; begun < sinks.size(); ++begun) sinks[begun]->begin(info);
    const auto start = first_fill.value_or(clock::now());
    const AcquireFilter acquire(source, pool, stop_requested_, ambient ? &*ambient : nullptr, ambient_frames, first, first_index,
                                live_batcher ? &*live_batcher : nullptr);
    auto stages = std::make_shared<StageTimes>();
    stats.stages = stages;
    const SinkFilter sink(sinks, stats, *stages, start, progress);
    if (stats.lane_threads) {
      TurnSteps steps;
      steps.acquire = [&] { return acquire.next(); };
      steps.process = [&](Slot* slot, int lane) { ProcessFilter::process_on(*processors[static_cast<std::size_t>(lane)], slot, pool); };
      steps.sink = [&](Slot* slot) { sink(slot); };
      steps.abandon = [&](Slot* slot) { pool.release(slot); };
      if (const std::string note = fifo_spin_throttling(options_.lane_thread_scheduling); !note.empty()) spdlog::warn("lane threads: {}", note);
      run_in_turns(lanes, steps, options_.lane_thread_scheduling);
    } else {
      tbb::parallel_pipeline(static_cast<std::size_t>(pool.size()), tbb::make_filter<void, Slot*>(tbb::filter_mode::serial_in_order, acquire) &
                                                                        tbb::make_filter<Slot*, Slot*>(tbb::filter_mode::parallel, ProcessFilter(free_lanes, pool)) &
                                                                        tbb::make_filter<Slot*, void>(tbb::filter_mode::serial_in_order, sink));
    }
    pool.wait_all_returned();
    stats.ambient_frames = ambient_frames;
    if (live_batcher) {  // the last acquisition's counters (a drop or a switch after the last batch's)
      const LatencyHistogram latency = stats.live.latency;
      stats.live = live_batcher->stats();
      stats.live.latency = latency;
    }
    stats.seconds = std::chrono::duration<double>(clock::now() - start).count();
    for (ProfileSink* sink : sinks) sink->finish();
  } catch (...) {
    for (std::size_t i = 0; i < begun; ++i) sinks[i]->abort();
    throw;
  }
  return stats;
}

}  // namespace stripeline
