// The live path's backlog (pipeline/live_batching.h): with a paced source
// faster than a deliberately slow path, the batch grows up to its bound,
// the frames waiting stay bounded (the oldest dropped beyond the bound), every
// frame is either processed or counted as dropped, the switches are logged
// and counted, and the batch returns to its configured size once the source
// slows down; with a source slower than the path nothing switches. CPU
// backend; no timing is asserted (the slow sink makes the path slow, the
// assertions are on counts).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "acquisition/paced_source.h"
#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "pipeline/live_batching.h"
#include "pipeline/pipeline.h"

using namespace stripeline;

namespace {

SyntheticConfig small_frames() {
  SyntheticConfig c;
  c.width = 64;
  c.frame_height = 16;
  return c;
}

// A path slower than the source: each batch takes `per_batch` in the sink,
// whatever its size (as a batch-of-1 path's per-batch host cost does). It
// records every frame id it saw.
class SlowSink final : public ProfileSink {
 public:
  explicit SlowSink(std::chrono::microseconds per_batch) : per_batch_(per_batch) {}
  void begin(const ScanInfo&) override {}
  void consume(const ProfileSpan& p) override {
    for (int f = 0; f < p.frames; ++f) {
      EXPECT_TRUE(ids.insert(p.meta[f].frame_id).second) << "frame " << p.meta[f].frame_id << " handed on twice";
      if (last_id >= 0) EXPECT_GT(static_cast<long long>(p.meta[f].frame_id), last_id) << "frames out of order";
      last_id = static_cast<long long>(p.meta[f].frame_id);
    }
    if (per_batch_.count() > 0) std::this_thread::sleep_for(per_batch_);
  }
  void finish() override {}
  std::set<std::uint64_t> ids;
  long long last_id = -1;

 private:
  std::chrono::microseconds per_batch_;
};

// The default logger's lines while it lives.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) { spdlog::default_logger()->sinks().push_back(sink_); }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

PipelineOptions live_options(int max_batch, int max_waiting, LaneScheduling scheduling = LaneScheduling::Auto) {
  PipelineOptions o;
  o.backend = Backend::Cpu;
  o.scheduling = scheduling;
  o.batch_frames = 1;
  o.buffers = 2;
  o.lanes = 1;
  if (scheduling == LaneScheduling::Threads) o.buffers = 3, o.lanes = 2;  // two lanes taking turns
  o.live_max_batch = max_batch;
  o.live_max_waiting = max_waiting;
  return o;
}

// The backlog tests run the steps both ways: oneTBB's pipeline and the
// dedicated lane threads (the CUDA per-frame path's, pipeline/lane_threads.h).
class LiveBacklogOn : public ::testing::TestWithParam<LaneScheduling> {};
std::string scheduling_name(const ::testing::TestParamInfo<LaneScheduling>& info) {
  return info.param == LaneScheduling::Threads ? "LaneThreads" : "TbbPipeline";
}

}  // namespace

TEST(LiveBatcher, GrowsWithTheBacklogDropsBeyondTheBoundAndShrinksBack) {
  LiveBatcher b(1, 16, 32);
  EXPECT_EQ(b.decide(0).take, 1);
  EXPECT_EQ(b.decide(1).take, 1);
  EXPECT_EQ(b.stats().to_batching, 0u);
  LiveBatcher::Decision d = b.decide(5);
  EXPECT_EQ(d.take, 5);
  EXPECT_EQ(d.drop, 0u);
  EXPECT_EQ(b.stats().to_batching, 1u);
  d = b.decide(100);  // beyond the bound: the 68 oldest go, 32 stay, 16 are taken
  EXPECT_EQ(d.drop, 68u);
  EXPECT_EQ(d.take, 16);
  b.dropped(68, 68);
  EXPECT_EQ(b.stats().dropped, 68u);
  EXPECT_EQ(b.stats().largest_kept_depth, 32u);
  EXPECT_EQ(b.stats().largest_queue_depth, 100u);
  EXPECT_EQ(b.stats().to_batching, 1u) << "still batching: not a new switch";
  EXPECT_EQ(b.decide(1).take, 1);
  EXPECT_EQ(b.stats().caught_up, 1u);
  EXPECT_FALSE(b.stats().batching);
  EXPECT_EQ(b.decide(std::nullopt).take, 1) << "an unknown backlog keeps the configured batch";
  EXPECT_EQ(b.stats().largest_batch, 16);
  // A source that cannot discard: what waits stays counted as kept.
  LiveBatcher keep(2, 8, 10);
  d = keep.decide(50);
  keep.dropped(0, d.drop);
  EXPECT_EQ(keep.stats().dropped, 0u);
  EXPECT_EQ(keep.stats().largest_kept_depth, 50u);
  // Never drop.
  LiveBatcher never(1, 8, 0);
  EXPECT_EQ(never.decide(1000).drop, 0u);
}

TEST(LiveBatcher, LatencyHistogramBuckets) {
  LatencyHistogram h;
  h.observe(5);       // <= 10
  h.observe(10);      // <= 10 (upper bounds are inclusive, as Prometheus' le)
  h.observe(150);     // <= 200
  h.observe(3e6);     // above every bound
  EXPECT_EQ(h.counts[0], 2u);
  EXPECT_EQ(h.counts[4], 1u);
  EXPECT_EQ(h.counts.back(), 1u);
  EXPECT_EQ(h.count, 4u);
  EXPECT_DOUBLE_EQ(h.sum_us, 5 + 10 + 150 + 3e6);
  EXPECT_EQ(h.quantile_bound_us(0.5), 10);
  EXPECT_TRUE(std::isinf(h.quantile_bound_us(0.99)));
}

// The source outruns the path (3000 frames/s against a path of at most 500
// batches/s), then slows to 100 frames/s: the batch grows to catch up, nothing
// is dropped (live_max_waiting -1), and it comes back to 1.
TEST_P(LiveBacklogOn, FasterSourceSwitchesToBatchingAndBack) {
  PacedSource src(small_frames(), {{1500, 3000.0}, {60, 100.0}});
  SlowSink sink(std::chrono::microseconds(2000));
  LogCapture log;
  Pipeline p(live_options(16, -1, GetParam()));
  const PipelineStats s = p.run(src, {&sink});
  EXPECT_EQ(s.lane_threads, GetParam() == LaneScheduling::Threads);
  const LiveStats& l = s.live;
  ASSERT_TRUE(l.active);
  EXPECT_EQ(l.configured_batch, 1);
  EXPECT_EQ(l.max_batch, 16);
  EXPECT_EQ(s.geometry.frames, 16) << "the pool's slots hold the bound";
  EXPECT_EQ(s.frames + l.dropped, 1560u) << "every frame processed or counted as dropped";
  EXPECT_EQ(l.dropped, 0u);
  EXPECT_EQ(sink.ids.size(), 1560u);
  EXPECT_GE(l.to_batching, 1u);
  EXPECT_GE(l.caught_up, 1u);
  EXPECT_GT(l.largest_batch, 1);
  EXPECT_LE(l.largest_batch, 16);
  EXPECT_EQ(l.current_batch, 1) << "the slow tail: back to the configured batch";
  EXPECT_FALSE(l.batching);
  EXPECT_EQ(l.latency.count, 1560u) << "every frame's latency observed";
  const std::string text = log.text();
  EXPECT_NE(text.find("frames waiting: batching up to 16"), std::string::npos) << text;
  EXPECT_NE(text.find("live path: caught up"), std::string::npos) << text;
}

// The source outruns even the largest batch (5000 frames/s against at most
// 8 frames per 5 ms): the oldest beyond 32 waiting frames are dropped, so the
// backlog stays bounded, and processed + dropped = sent.
TEST_P(LiveBacklogOn, BacklogBeyondTheBoundDropsTheOldest) {
  const std::uint64_t sent = 3000;
  PacedSource src(small_frames(), {{sent, 5000.0}});
  SlowSink sink(std::chrono::microseconds(5000));
  LogCapture log;
  Pipeline p(live_options(8, 32, GetParam()));
  const PipelineStats s = p.run(src, {&sink});
  const LiveStats& l = s.live;
  ASSERT_TRUE(l.active);
  EXPECT_GT(l.dropped, 0u);
  EXPECT_EQ(l.dropped, src.dropped()) << "the pipeline counts what the source discarded";
  EXPECT_EQ(s.frames + l.dropped, sent) << "every frame processed or counted as dropped";
  EXPECT_EQ(sink.ids.size(), s.frames);
  EXPECT_EQ(l.largest_batch, 8);
  EXPECT_LE(l.largest_kept_depth, 32u) << "frames left waiting after the bound";
  // Seen at the source as fill() takes frames: the bound plus what arrived
  // since the acquisition decided (without the bound: about 2000).
  EXPECT_LE(src.largest_backlog(), 32u + 8u + 64u);
  EXPECT_GE(l.to_batching, 1u);
  const std::string text = log.text();
  EXPECT_NE(text.find("frames waiting: batching up to 8"), std::string::npos) << text;
  EXPECT_NE(text.find("dropping the oldest"), std::string::npos) << text;
}

// A source slower than the path: no switch, batches of 1 throughout.
TEST_P(LiveBacklogOn, SlowerSourceNeverSwitches) {
  PacedSource src(small_frames(), {{30, 30.0}});
  SlowSink sink(std::chrono::microseconds(0));
  Pipeline p(live_options(16, 0, GetParam()));
  const PipelineStats s = p.run(src, {&sink});
  ASSERT_TRUE(s.live.active);
  EXPECT_EQ(s.frames, 30u);
  EXPECT_EQ(s.batches, 30u);
  EXPECT_EQ(s.live.to_batching, 0u);
  EXPECT_EQ(s.live.largest_batch, 1);
  EXPECT_EQ(s.live.dropped, 0u);
}

INSTANTIATE_TEST_SUITE_P(LiveBacklog, LiveBacklogOn, ::testing::Values(LaneScheduling::Pipeline, LaneScheduling::Threads), scheduling_name);

// Sources that do not report a backlog (files, an unpaced synthetic scan),
// a configured batch at or above the bound, or live_max_batch 0: the plain path.
TEST(LiveBacklog, OffWithoutABacklogOrABound) {
  SyntheticConfig c = small_frames();
  c.frames = 20;
  SyntheticScanner unpaced(c);
  SlowSink sink(std::chrono::microseconds(0));
  Pipeline p(live_options(16, 0));
  PipelineStats s = p.run(unpaced, {&sink});
  EXPECT_FALSE(s.live.active);
  EXPECT_EQ(s.geometry.frames, 1);
  EXPECT_EQ(s.live.latency.count, 20u) << "latency from the fill stamp even so";

  PacedSource paced(small_frames(), {{10, 1000.0}});
  SlowSink sink2(std::chrono::microseconds(0));
  Pipeline off(live_options(0, 0));
  s = off.run(paced, {&sink2});
  EXPECT_FALSE(s.live.active);
  EXPECT_EQ(s.frames, 10u);
}

TEST(LiveBacklog, OptionsOutOfRangeAreRefused) {
  PipelineOptions o = live_options(-1, 0);
  EXPECT_THROW(o.validate(), ConfigError);
  o = live_options(16, -2);
  EXPECT_THROW(o.validate(), ConfigError);
}

// Where the latency goes (PipelineStats::stages): each stage's median from
// the batches' stamps, in quarter microseconds; a stamp before the one
// before it counts as nothing, a stage beyond the top in the last bucket.
TEST(StageTimes, MediansOfEachStageFromTheStamps) {
  StageTimes t;
  EXPECT_EQ(t.median_us(StageTimes::kProcess), 0.0);
  const std::int64_t us = 1000;
  t.observe(0, 2 * us, 42 * us, 43 * us, 44 * us);
  t.observe(0, 3 * us, 44 * us, 44 * us, 45 * us);
  t.observe(0, 1 * us, 1000 * us, 1001 * us, 999 * us);
  EXPECT_EQ(t.batches, 3u);
  EXPECT_DOUBLE_EQ(t.median_us(StageTimes::kAcquire), 2.125);  // 2 us: the bucket [2, 2.25)
  EXPECT_DOUBLE_EQ(t.median_us(StageTimes::kProcess), 41.125);
  EXPECT_DOUBLE_EQ(t.median_us(StageTimes::kCount), 1.125);
  EXPECT_DOUBLE_EQ(t.median_us(StageTimes::kSink), 1.125);
  t.observe(0, 0, 600 * us, 600 * us, 600 * us);
  t.observe(0, 0, 700 * us, 700 * us, 700 * us);
  EXPECT_DOUBLE_EQ(t.median_us(StageTimes::kProcess), 500.125);  // three of five beyond the top
  EXPECT_DOUBLE_EQ(t.median_us(StageTimes::kSink), 0.125);       // three of five nothing (one a stamp before its last)
}
