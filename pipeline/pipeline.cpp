#include "pipeline/pipeline.h"

#include <tbb/concurrent_queue.h>
#include <tbb/parallel_pipeline.h>

#include <spdlog/spdlog.h>

#include "core/errors.h"
#include "pipeline/buffer_pool.h"

namespace stripeline {

Pipeline::Pipeline(PipelineOptions options) : options_(std::move(options)) {}

PipelineStats Pipeline::run(FrameSource& source, const std::vector<ProfileSink*>& sinks, const ProgressCallback& progress) {
  using clock = std::chrono::steady_clock;
  PipelineStats stats;
  stats.backend = resolve_backend(options_.backend);
  stats.cuda_startup_ms = stats.backend == Backend::Cuda ? cuda_startup_ms() : 0.0;

  BatchLayout layout = source.frame_layout();
  layout.frames = options_.batch_frames;
  const kernels::ColumnParams params = validate_chain(options_.chain, layout);
  if (options_.buffers < 1 || options_.buffers > 64)
    throw ConfigError("buffers = " + std::to_string(options_.buffers) + " is out of range (expected 1..64)");

  // Set-up: everything is allocated here, nothing in the steady state.
  BufferPool pool(layout, params.slots, options_.buffers, host_allocator_for(stats.backend));
  stats.pinned = pool.pinned();
  const int lanes = options_.lanes > 0 ? std::min(options_.lanes, options_.buffers) : std::max(1, options_.buffers - 1);
  std::vector<std::unique_ptr<BatchProcessor>> processors;
  tbb::concurrent_bounded_queue<BatchProcessor*> free_lanes;
  for (int i = 0; i < lanes; ++i) {
    processors.push_back(make_processor(stats.backend, layout, options_.chain));
    free_lanes.push(processors.back().get());
  }
  spdlog::debug("pipeline: {} backend, {} slots of {} frames ({:.1f} MB, {}), {} lanes", to_string(stats.backend), pool.size(),
                layout.frames, pool.bytes() / 1e6, stats.pinned ? "pinned" : "pageable", lanes);

  ScanInfo info{layout, params.slots, options_.chain, options_.calibration, source.describe(), stats.backend};
  std::size_t begun = 0;
  try {
    for (; begun < sinks.size(); ++begun) sinks[begun]->begin(info);

    std::uint64_t sequence = 0, next_index = 0;
    const auto start = clock::now();
    tbb::parallel_pipeline(
        static_cast<std::size_t>(pool.size()),
        tbb::make_filter<void, Slot*>(tbb::filter_mode::serial_in_order,
                                      [&](tbb::flow_control& fc) -> Slot* {
                                        if (stop_requested_.load()) {
                                          fc.stop();
                                          return nullptr;
                                        }
                                        Slot* slot = pool.acquire();
                                        slot->batch.frames = 0;
                                        if (!source.fill(slot->batch) || slot->batch.frames == 0) {
                                          pool.release(slot);
                                          fc.stop();
                                          return nullptr;
                                        }
                                        slot->batch.sequence = sequence++;
                                        slot->batch.first_index = next_index;
                                        next_index += static_cast<std::uint64_t>(slot->batch.frames);
                                        return slot;
                                      }) &
            tbb::make_filter<Slot*, Slot*>(tbb::filter_mode::parallel,
                                           [&](Slot* slot) -> Slot* {
                                             BatchProcessor* lane = nullptr;
                                             free_lanes.pop(lane);  // lanes <= tokens: waits only briefly
                                             try {
                                               lane->process(slot->batch, slot->profiles);
                                             } catch (...) {
                                               free_lanes.push(lane);
                                               pool.release(slot);
                                               throw;
                                             }
                                             slot->profiles.sequence = slot->batch.sequence;
                                             // A frame that never arrived (a camera's frame-id gap, an
                                             // incomplete buffer) is an empty profile, never a row of
                                             // whatever its pixels held.
                                             for (int f = 0; f < slot->batch.frames; ++f)
                                               if (slot->batch.meta[f].missing) slot->profiles.clear_frame(f);
                                             slot->compute_ms = lane->last_compute_ms();
                                             free_lanes.push(lane);
                                             // Counted here, in parallel, not in the serial sink stage:
                                             // a 300x2048 batch has 614,400 columns to look at.
                                             slot->points = slot->profiles.points();
                                             slot->overflow = slot->profiles.overflow();
                                             return slot;
                                           }) &
            tbb::make_filter<Slot*, void>(tbb::filter_mode::serial_in_order, [&](Slot* slot) {
              struct Release {
                BufferPool& pool;
                Slot* slot;
                ~Release() { pool.release(slot); }
              } release{pool, slot};
              for (ProfileSink* sink : sinks) sink->consume(slot->batch, slot->profiles);
              stats.frames += static_cast<std::uint64_t>(slot->batch.frames);
              stats.profiles += static_cast<std::uint64_t>(slot->profiles.frames);
              stats.points += slot->points;
              stats.overflow += slot->overflow;
              stats.bytes += slot->batch.filled_bytes();
              stats.compute_ms += slot->compute_ms;
              ++stats.batches;
              stats.seconds = std::chrono::duration<double>(clock::now() - start).count();
              if (progress) progress(stats);
            }));
    pool.wait_all_returned();
    stats.seconds = std::chrono::duration<double>(clock::now() - start).count();
    for (ProfileSink* sink : sinks) sink->finish();
  } catch (...) {
    for (std::size_t i = 0; i < begun; ++i) sinks[i]->abort();
    throw;
  }
  return stats;
}

}  // namespace stripeline
