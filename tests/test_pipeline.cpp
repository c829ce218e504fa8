// The pipeline: order, bounded buffers, partial batches, failures, and the
// accuracy of the default chain against the simulated scanner's truth.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <climits>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "io/image_reader.h"
#include "io/ply_writer.h"
#include "pipeline/background_sink.h"
#include "pipeline/buffer_pool.h"
#include "pipeline/file_sinks.h"
#include "pipeline/lane_threads.h"
#include "pipeline/pipeline.h"
#include "stages/heightmap_filters.h"
#include "test_helpers.h"

using namespace stripeline;

namespace {

// Keeps every profile's primary position by global frame index.
class RecordingSink final : public ProfileSink {
 public:
  void begin(const ScanInfo& info) override {
    width = info.layout.width;
    begun = true;
  }
  void consume(const ProfileSpan& p) override {
    EXPECT_EQ(p.first_index, next_index) << "batches out of order";
    for (int f = 0; f < p.frames; ++f) {
      EXPECT_EQ(p.meta[f].frame_id, p.first_index + static_cast<std::uint64_t>(f));
      std::vector<std::int32_t> row(p.width);
      for (int x = 0; x < p.width; ++x) row[x] = p.peaks(f, x) ? p.position[p.slot_index(f, 0, x)] : kNoPeak;
      rows.push_back(std::move(row));
      meta.push_back(p.meta[f]);
    }
    next_index += static_cast<std::uint64_t>(p.frames);
  }
  void finish() override { finished = true; }
  void abort() noexcept override { aborted = true; }

  int width = 0;
  bool begun = false, finished = false, aborted = false;
  std::uint64_t next_index = 0;
  std::vector<std::vector<std::int32_t>> rows;
  std::vector<FrameMeta> meta;
};

SyntheticConfig small_scan(std::uint64_t frames) {
  SyntheticConfig c;
  c.width = 301;
  c.frame_height = 40;
  c.frames = frames;
  return c;
}

// The CPU chain in batches of `batch_frames`.
PipelineOptions cpu_options(int batch_frames = PipelineOptions{}.batch_frames) {
  PipelineOptions o;
  o.backend = Backend::Cpu;
  o.batch_frames = batch_frames;
  return o;
}

// A source that throws after `good` batches.
class FailingSource final : public FrameSource {
 public:
  FailingSource(SyntheticScanner& inner, int good) : inner_(inner), good_(good) {}
  BatchLayout frame_layout() const override { return inner_.frame_layout(); }
  bool fill(Batch& b) override {
    if (good_-- <= 0) throw InputError("recording.tiff: corrupt strip at row 1234");
    return inner_.fill(b);
  }
  std::string describe() const override { return "failing"; }

 private:
  SyntheticScanner& inner_;
  int good_;
};

}  // namespace

TEST(Pipeline, EveryFrameInOrderWithPartialLastBatchForAnyPoolSize) {
  // Reference: the whole scan in one batch, processed directly.
  SyntheticScanner ref_scan(small_scan(53));
  BatchLayout l = ref_scan.frame_layout();
  l.frames = 53;
  Batch all(l, &allocate_host);
  ASSERT_TRUE(ref_scan.fill(all));
  ChainConfig chain;
  ProfileBatch ref(l.width, l.frames, 1, &allocate_host);
  make_processor(Backend::Cpu, l, chain)->process(all, ref);

  for (int buffers : {1, 2, 4}) {
    for (int batch_frames : {1, 7, 53, 100}) {
      SyntheticScanner scan(small_scan(53));
      PipelineOptions o = cpu_options(batch_frames);
      o.buffers = buffers;
      RecordingSink sink;
      const auto stats = Pipeline(o).run(scan, {&sink});
      ASSERT_TRUE(sink.finished);
      ASSERT_EQ(sink.rows.size(), 53u) << "buffers " << buffers << " batch " << batch_frames;
      EXPECT_EQ(stats.frames, 53u);
      EXPECT_EQ(stats.profiles, 53u);
      EXPECT_EQ(stats.batches, static_cast<std::uint64_t>((53 + batch_frames - 1) / batch_frames));
      for (int f = 0; f < 53; ++f)
        for (int x = 0; x < l.width; ++x)
          ASSERT_EQ(sink.rows[f][x], ref.peaks(f, x) ? ref.position[ref.slot_index(f, 0, x)] : kNoPeak) << f << "," << x;
      EXPECT_EQ(sink.meta[52].encoder, 52 * 4);
    }
  }
}

// File writers run on their own threads (BackgroundSink): every profile in
// order, every slot back in the pool, the wrapped sink finished.
TEST(BackgroundSink, KeepsOrderAndReturnsEverySlot) {
  for (const int buffers : {1, 2, 5}) {
    SyntheticScanner source(small_scan(203));
    auto owned = std::make_unique<RecordingSink>();
    RecordingSink& recording = *owned;
    BackgroundSink background(std::move(owned), "test writer");
    PipelineOptions o = cpu_options(16);
    o.buffers = buffers;
    Pipeline(o).run(source, {&background});  // waits for every slot: a lease never released would hang here
    EXPECT_TRUE(recording.finished);
    EXPECT_FALSE(recording.aborted);
    EXPECT_EQ(recording.rows.size(), 203u) << buffers << " buffers";
  }
}

// A writer failing on its thread fails the run on the caller's thread: every
// sink aborted, every slot back, the error rethrown as it was.
TEST(BackgroundSink, AFailureOnTheWorkerFailsTheRun) {
  class Failing final : public ProfileSink {
   public:
    void begin(const ScanInfo&) override {}
    void consume(const ProfileSpan&) override {
      if (++calls == 3) throw InputError("out.ply: disk full");
    }
    void finish() override { finished = true; }
    void abort() noexcept override { aborted = true; }
    int calls = 0;
    bool finished = false, aborted = false;
  };
  auto owned = std::make_unique<Failing>();
  Failing& failing = *owned;
  BackgroundSink background(std::move(owned), "test writer");
  RecordingSink plain;
  SyntheticScanner source(small_scan(400));
  PipelineOptions o = cpu_options(8);
  o.buffers = 3;
  try {
    Pipeline(o).run(source, {&background, &plain});
    FAIL() << "the run should have failed";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "out.ply: disk full");
  }
  EXPECT_TRUE(failing.aborted);
  EXPECT_FALSE(failing.finished);
  EXPECT_TRUE(plain.aborted);
  EXPECT_EQ(failing.calls, 3);  // nothing consumed after the failure
}

// Outside a pipeline (the daemon's scan writer, the subscriber) consume() is
// synchronous.
TEST(BackgroundSink, PlainConsumeRunsInOrderOnTheCaller) {
  auto owned = std::make_unique<RecordingSink>();
  RecordingSink& recording = *owned;
  BackgroundSink background(std::move(owned), "test writer");
  SyntheticScanner source(small_scan(10));
  BatchLayout l = source.frame_layout();
  l.frames = 10;
  Batch b(l, &allocate_host);
  ASSERT_TRUE(source.fill(b));
  ProfileBatch p(l.width, 10, 1, &allocate_host);
  make_processor(Backend::Cpu, l, ChainConfig{})->process(b, p);
  ScanInfo info;
  info.layout = l;
  background.begin(info);
  background.consume(p.span().subspan(0, 4));
  background.consume(p.span().subspan(4, 6));
  background.finish();
  EXPECT_EQ(recording.rows.size(), 10u);
  EXPECT_TRUE(recording.finished);
}

TEST(Pipeline, FramesInFlightNeverExceedThePool) {
  class CountingSource final : public FrameSource {
   public:
    explicit CountingSource(std::atomic<int>& in_flight) : scan_(small_scan(200)), in_flight_(in_flight) {}
    BatchLayout frame_layout() const override { return scan_.frame_layout(); }
    bool fill(Batch& b) override {
      if (!scan_.fill(b)) return false;
      max_seen = std::max(max_seen, ++in_flight_);
      return true;
    }
    std::string describe() const override { return "counting"; }
    int max_seen = 0;

   private:
    SyntheticScanner scan_;
    std::atomic<int>& in_flight_;
  };
  class DrainSink final : public ProfileSink {
   public:
    explicit DrainSink(std::atomic<int>& n) : n_(n) {}
    void begin(const ScanInfo&) override {}
    void consume(const ProfileSpan&) override { --n_; }
    void finish() override {}

   private:
    std::atomic<int>& n_;
  };
  std::atomic<int> in_flight{0};
  CountingSource src(in_flight);
  DrainSink sink(in_flight);
  PipelineOptions o = cpu_options(3);
  o.buffers = 3;
  Pipeline(o).run(src, {&sink});
  EXPECT_GE(src.max_seen, 1);
  EXPECT_LE(src.max_seen, 3);
  EXPECT_EQ(in_flight.load(), 0);
}

TEST(Pipeline, SourceFailureAbortsSinksAndLeavesNoFile) {
  test::TempDir dir;
  SyntheticScanner scan(small_scan(100));
  FailingSource src(scan, 3);
  PipelineOptions o = cpu_options(10);
  RecordingSink rec;
  PlySink ply(dir / "scan.ply", io::PlyEncoding::BinaryLittleEndian);
  HeightMapSink hm(dir / "hm.png", dir / "pv.png", 6);
  EXPECT_THROW(Pipeline(o).run(src, {&rec, &ply, &hm}), InputError);
  EXPECT_TRUE(rec.aborted);
  EXPECT_FALSE(rec.finished);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "something was left in " << dir.path();
}

// Dedicated lane threads (pipeline/lane_threads.h): batches processed on
// lane k mod lanes, in parallel, reach the sink in acquisition order
// whatever each one's processing time; the source's end ends every lane.
TEST(LaneThreads, EveryBatchOnItsLaneAndSunkInOrder) {
  const int batches = 300;
  for (int lanes : {1, 2, 4}) {
    std::vector<Slot> slots(static_cast<std::size_t>(batches));
    int acquired = 0;
    std::mutex m;
    std::vector<int> lane_of(batches, -1), sunk;
    std::atomic<int> processing{0}, most_at_once{0};
    TurnSteps steps;
    steps.acquire = [&]() -> Slot* { return acquired < batches ? &slots[static_cast<std::size_t>(acquired++)] : nullptr; };
    steps.process = [&](Slot* s, int lane) {
      const int k = static_cast<int>(s - slots.data());
      const int now = ++processing;
      for (int seen = most_at_once.load(); now > seen && !most_at_once.compare_exchange_weak(seen, now);) {
      }
      std::this_thread::sleep_for(std::chrono::microseconds((k * 37) % 5 * 100));  // later batches often finish first
      --processing;
      std::lock_guard lock(m);
      lane_of[static_cast<std::size_t>(k)] = lane;
    };
    steps.sink = [&](Slot* s) { sunk.push_back(static_cast<int>(s - slots.data())); };
    steps.abandon = [&](Slot*) { ADD_FAILURE() << "nothing failed, nothing is abandoned"; };
    run_in_turns(lanes, steps);
    ASSERT_EQ(acquired, batches);
    ASSERT_EQ(sunk.size(), static_cast<std::size_t>(batches));
    for (int k = 0; k < batches; ++k) {
      EXPECT_EQ(sunk[static_cast<std::size_t>(k)], k) << lanes << " lanes";
      EXPECT_EQ(lane_of[static_cast<std::size_t>(k)], k % lanes) << "batch " << k;
    }
    EXPECT_LE(most_at_once.load(), lanes);
    if (lanes > 1) EXPECT_GT(most_at_once.load(), 1) << "the lanes never processed at once";
  }
}

// The first failure (here a processing error on batch 37) stops every lane
// and is rethrown once all have ended; no batch after it reaches the sink,
// and every acquired slot is accounted for: sunk, given back by the failing
// step, or abandoned.
TEST(LaneThreads, AFailureStopsEveryLaneAndIsRethrown) {
  for (int lanes : {1, 3}) {
    std::vector<Slot> slots(1000);
    std::atomic<int> acquired{0}, abandoned{0};
    std::vector<int> sunk;
    TurnSteps steps;
    steps.acquire = [&]() -> Slot* { return &slots[static_cast<std::size_t>(acquired++)]; };  // an endless source
    steps.process = [&](Slot* s, int) {
      if (s - slots.data() == 37) throw InputError("frame 37: corrupt");
    };
    steps.sink = [&](Slot* s) { sunk.push_back(static_cast<int>(s - slots.data())); };
    steps.abandon = [&](Slot*) { ++abandoned; };
    EXPECT_THROW(run_in_turns(lanes, steps), InputError);
    ASSERT_LE(sunk.size(), 37u);
    for (std::size_t k = 0; k < sunk.size(); ++k) EXPECT_EQ(sunk[k], static_cast<int>(k));
    EXPECT_EQ(static_cast<int>(sunk.size()) + 1 + abandoned.load(), acquired.load()) << lanes << " lanes";
    EXPECT_LT(acquired.load(), 37 + 2 * lanes + 1) << "lanes went on acquiring after the failure";
  }
}

// The pipeline on lane threads gives the oneTBB pipeline's rows, in order,
// for batches of 1 and 7 and a sink failure surfaces the same way.
TEST(LaneThreads, ThePipelineOnLaneThreadsGivesTheSameRows) {
  for (int batch_frames : {1, 7}) {
    std::vector<std::vector<std::int32_t>> rows[2];
    for (int threads : {0, 1}) {
      SyntheticScanner scan(small_scan(53));
      PipelineOptions o = cpu_options(batch_frames);
      o.scheduling = threads ? LaneScheduling::Threads : LaneScheduling::Pipeline;
      o.buffers = 4;
      o.lanes = 3;
      RecordingSink sink;
      const auto stats = Pipeline(o).run(scan, {&sink});
      EXPECT_EQ(stats.lane_threads, threads == 1);
      EXPECT_TRUE(sink.finished);
      EXPECT_EQ(stats.frames, 53u);
      rows[threads] = sink.rows;
    }
    EXPECT_EQ(rows[0], rows[1]) << "batch " << batch_frames;
  }
  SyntheticScanner scan(small_scan(100));
  FailingSource src(scan, 3);
  PipelineOptions o = cpu_options(10);
  o.scheduling = LaneScheduling::Threads;
  RecordingSink rec;
  EXPECT_THROW(Pipeline(o).run(src, {&rec}), InputError);
  EXPECT_TRUE(rec.aborted);
}

// The PLY carries each point's quality (the extraction's contrast) beside
// its intensity: the default adaptive method gives every synthetic stripe
// point a contrast of at least min_contrast (20) and at most the peak.
TEST(PlySink, WritesEachPointsQuality) {
  test::TempDir dir;
  SyntheticScanner scan(small_scan(12));
  PipelineOptions o = cpu_options(5);
  PlySink ply(dir / "scan.ply", io::PlyEncoding::BinaryLittleEndian);
  Pipeline(o).run(scan, {&ply});
  const auto v = io::read_ply(dir / "scan.ply");
  ASSERT_FALSE(v.empty());
  for (const auto& p : v) {
    ASSERT_GE(p.quality, 20.0f) << "a point with quality below min_contrast";
    ASSERT_LE(p.quality, p.intensity) << "quality above the peak's value";
  }
}

TEST(Pipeline, RejectsBadOptions) {
  SyntheticScanner scan(small_scan(10));
  PipelineOptions o = cpu_options();
  o.buffers = 0;
  RecordingSink sink;
  EXPECT_THROW(Pipeline(o).run(scan, {&sink}), ConfigError);
  o.buffers = 2;
  o.chain.blur_size = 6;
  EXPECT_THROW(Pipeline(o).run(scan, {&sink}), ConfigError);
}

TEST(BufferPool, AcquireReleaseAndCount) {
  BatchLayout l{16, 4, 2, PixelFormat::Mono8};
  BufferPool pool(l, 1, 2, &allocate_host);
  EXPECT_EQ(pool.size(), 2);
  Slot* a = pool.acquire();
  Slot* b = pool.acquire();
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.in_use(), 2);
  EXPECT_EQ(a->batch.pixels.size(), l.bytes());
  EXPECT_EQ(a->profiles.capacity, 2);
  pool.release(a);
  pool.release(b);
  pool.wait_all_returned();
  EXPECT_EQ(pool.in_use(), 0);
}

TEST(HeightMapSink, RoundTripThroughPngDecodesToThePositions) {
  test::TempDir dir;
  SyntheticScanner scan(small_scan(20));
  PipelineOptions o = cpu_options(8);
  RecordingSink rec;
  HeightMapSink hm(dir / "hm.png", dir / "pv.png", 6);
  Pipeline(o).run(scan, {&rec, &hm});
  auto reader = io::open_image(dir / "hm.png");
  ASSERT_EQ(reader->info().width, 301);
  ASSERT_EQ(reader->info().height, 20);
  ASSERT_EQ(reader->info().format, PixelFormat::Mono16);
  std::vector<std::uint16_t> codes(301 * 20);
  reader->read_rows(reinterpret_cast<std::byte*>(codes.data()), 20);
  int valid = 0;
  for (int f = 0; f < 20; ++f)
    for (int x = 0; x < 301; ++x) {
      const std::int32_t pos = rec.rows[f][x];
      const std::uint16_t code = codes[f * 301 + x];
      if (pos == kNoPeak) {
        ASSERT_EQ(code, 0);
        continue;
      }
      ++valid;
      ASSERT_NEAR(decode_height(code, 6), position_to_row(pos), 1.0 / 128 + 1e-6);
    }
  EXPECT_GT(valid, 301 * 20 * 9 / 10);
  auto preview = io::open_image(dir / "pv.png");
  EXPECT_EQ(preview->info().format, PixelFormat::Mono8);
}

TEST(HeightCode, EncodesEveryRowAboveZeroAndDecodesBack) {
  for (int bits = 0; bits <= 8; ++bits) {
    const int max_h = max_frame_height_for_code(bits);
    for (std::int32_t p : {0, 1, 127, 128, 255, 256, 1000, (max_h - 1) * 256}) {
      const auto code = encode_height(p, bits);
      EXPECT_GE(code, 1) << bits << " " << p;
      EXPECT_NEAR(decode_height(code, bits), p / 256.0, 0.5 / (1 << bits) + 1e-6) << bits << " " << p;
    }
    EXPECT_EQ(encode_height(kNoPeak, bits), 0);
  }
  EXPECT_EQ(encode_height(5 * 256, 6), (5 * 64) + 32);  // row 5 -> 5.5 * 64
}

// Profiles recorded from the synthetic scanner, scored against its truth over
// columns [x_begin, x_end). The 5x5 blur spreads light sideways by 2 columns:
// next to an occlusion edge or a step the blurred stripe is legitimately a mix
// of neighbours, so those columns are judged apart (counted, not scored).
struct AccuracyScore {
  double sum_sq = 0, max_err = 0;
  std::uint64_t expected = 0, detected = 0, false_detections = 0, occluded = 0, edge_columns = 0;
  double rms() const { return std::sqrt(sum_sq / static_cast<double>(detected)); }
  double rate() const { return static_cast<double>(detected) / static_cast<double>(expected); }
};

AccuracyScore score_against_truth(const SyntheticScanner& scan, const RecordingSink& rec, int x_begin, int x_end) {
  const SyntheticConfig& sc = scan.config();
  AccuracyScore a;
  for (std::uint64_t f = 0; f < sc.frames; ++f)
    for (int x = x_begin; x < x_end; ++x) {
      const double truth = scan.truth(f, x);
      const std::int32_t pos = rec.rows[f][x];
      bool near_edge = false;
      for (int dx = -2; dx <= 2 && !near_edge; ++dx) {
        if (dx == 0 || x + dx < 0 || x + dx >= sc.width) continue;
        const double n = scan.truth(f, x + dx);
        near_edge = std::isnan(n) != std::isnan(truth) || (!std::isnan(n) && std::abs(n - truth) > 1.0);
      }
      if (near_edge) {
        ++a.edge_columns;
        continue;
      }
      if (std::isnan(truth)) {
        ++a.occluded;
        a.false_detections += pos != kNoPeak;
        continue;
      }
      ++a.expected;
      if (pos == kNoPeak) continue;
      ++a.detected;
      const double err = position_to_row(pos) - truth;
      a.sum_sq += err * err;
      a.max_err = std::max(a.max_err, std::abs(err));
    }
  return a;
}

// Accuracy of the default chain (blur 5, threshold 40, cog) on the default
// synthetic scanner: the figures the README quotes come from this test.
TEST(Accuracy, DefaultChainOnSyntheticScannerAgainstTruth) {
  SyntheticConfig sc;  // defaults: 2048x52, 8-bit, noise, speckle, occlusions, reflections
  sc.frames = 60;
  SyntheticScanner scan(sc);
  PipelineOptions o = cpu_options(30);
  RecordingSink rec;
  Pipeline(o).run(scan, {&rec});
  const AccuracyScore a = score_against_truth(scan, rec, 0, sc.width);
  const double rms = a.rms(), rate = a.rate();
  std::printf(
      "[ accuracy ] cog on %llu columns: RMS error %.4f px, max %.3f px, detection rate %.4f%%, false detections %llu of %llu occluded "
      "(%llu columns within 2 of an occlusion edge or step not scored)\n",
      static_cast<unsigned long long>(a.expected), rms, a.max_err, rate * 100.0, static_cast<unsigned long long>(a.false_detections),
      static_cast<unsigned long long>(a.occluded), static_cast<unsigned long long>(a.edge_columns));
  RecordProperty("rms_px", std::to_string(rms));
  RecordProperty("detection_rate", std::to_string(rate));
  EXPECT_LT(rms, 0.08);
  EXPECT_LT(a.max_err, 0.6);
  EXPECT_GT(rate, 0.995);
  EXPECT_GT(a.occluded, 0u);
  EXPECT_LE(a.false_detections, a.occluded / 100);
}

// The defaults must work untuned on a dim recording: background 30, the
// weakest stripe peaks near 60.
TEST(Accuracy, DefaultChainOnDimRecording) {
  SyntheticConfig sc;
  sc.frames = 30;
  sc.background = 30.0;
  sc.peak = 50.0;
  sc.peak_variation = 0.35;  // weakest columns: 30 + 50 * 0.65 = ~62
  SyntheticScanner scan(sc);
  PipelineOptions o = cpu_options();
  RecordingSink rec;
  Pipeline(o).run(scan, {&rec});
  const AccuracyScore a = score_against_truth(scan, rec, 2, sc.width - 2);
  const double rate = a.rate(), rms = a.rms();
  std::printf("[ accuracy ] dim recording (background 30, weakest peaks ~62): RMS %.4f px, detection rate %.3f%%, false %llu of %llu occluded\n",
              rms, rate * 100.0, static_cast<unsigned long long>(a.false_detections), static_cast<unsigned long long>(a.occluded));
  EXPECT_GT(rate, 0.99);
  EXPECT_LT(rms, 0.15);
  EXPECT_LE(a.false_detections, a.occluded / 100);
}

// [output] heightmap_filters: the written map is the filtered one, and a final
// to8 makes the preview.
TEST(HeightMapSink, FiltersApplyBeforeWritingAndFinalTo8MakesThePreview) {
  test::TempDir dir;
  SyntheticConfig sc = small_scan(24);
  PipelineOptions o = cpu_options();
  RecordingSink rec;
  HeightMapSink plain(dir / "plain.png", "", 6);
  HeightMapSink filtered(dir / "f.png", dir / "f8.png", 6);
  filtered.set_filters({"median 3", "dilate-h 5", "to8 1000:2000"}, Backend::Cpu);
  SyntheticScanner scan(sc);
  Pipeline(o).run(scan, {&rec, &plain, &filtered});
  // Expected: the same filters run directly on the unfiltered map.
  const auto& raw = plain.codes();
  std::vector<std::uint16_t> want(raw.size());
  make_heightmap_filter(Backend::Cpu, 301, 24, parse_filter_step_list({"median 3", "dilate-h 5"}))->run(raw.data(), want.data());
  std::vector<std::uint8_t> want8(raw.size());
  make_heightmap_filter(Backend::Cpu, 301, 24, parse_filter_step_list({"to8 1000:2000"}))->run(want.data(), want8.data());
  auto r16 = io::open_image(dir / "f.png");
  std::vector<std::uint16_t> got(raw.size());
  r16->read_rows(reinterpret_cast<std::byte*>(got.data()), 24);
  EXPECT_EQ(got, want);
  EXPECT_NE(got, raw);
  auto r8 = io::open_image(dir / "f8.png");
  std::vector<std::uint8_t> got8(raw.size());
  r8->read_rows(reinterpret_cast<std::byte*>(got8.data()), 24);
  EXPECT_EQ(got8, want8);
  EXPECT_THROW(filtered.set_filters({"median 4"}, Backend::Cpu), InputError);
}

// Zero copy: a source that writes whole batches into memory the pipeline
// attached (a frame grabber's direct path, acquisition/source.h). The pool
// sizes every batch for its payload, attaches them all once before the first
// fill, every fill targets one of them, and they are detached after the run,
// on failure too. A source without the hook gets nothing attached.
namespace {

class AttachingSource final : public FrameSource {
 public:
  AttachingSource(SyntheticScanner& inner, std::size_t payload, int fail_after = -1)
      : inner_(inner), payload_(payload), fail_after_(fail_after) {}
  BatchLayout frame_layout() const override { return inner_.frame_layout(); }
  std::size_t direct_buffer_bytes() const override { return payload_; }
  void attach_buffers(std::span<Batch* const> batches, HostAllocator allocator) override {
    ++attach_calls;
    allocator_ok = allocator != nullptr;
    for (const Batch* b : batches) {
      memory.insert(b->pixels.data());
      smallest = std::min(smallest, b->pixels.size());
    }
  }
  void detach_buffers() noexcept override { ++detach_calls; }
  bool fill(Batch& b) override {
    if (detach_calls > 0) throw RuntimeFailure("fill() after detach_buffers()");
    if (!memory.count(b.pixels.data())) ++fills_outside;
    if (fail_after_ == 0) throw InputError("grabber: link error");
    --fail_after_;
    return inner_.fill(b);
  }
  std::string describe() const override { return "attaching"; }

  int attach_calls = 0, detach_calls = 0, fills_outside = 0;
  bool allocator_ok = false;
  std::set<const std::byte*> memory;
  std::size_t smallest = SIZE_MAX;

 private:
  SyntheticScanner& inner_;
  std::size_t payload_;
  int fail_after_;
};

}  // namespace

TEST(Pipeline, AttachesThePoolToASourceThatWritesWholeBatchesAndDetachesIt) {
  SyntheticScanner scan(small_scan(53));
  PipelineOptions o = cpu_options(10);
  o.buffers = 3;
  const std::size_t layout_bytes = scan.frame_layout().frame_pixels() * 10;
  AttachingSource source(scan, layout_bytes + 320);  // pixels + a chunk of 32 bytes per frame
  RecordingSink sink;
  const auto stats = Pipeline(o).run(source, {&sink});
  EXPECT_EQ(stats.frames, 53u);
  EXPECT_EQ(source.attach_calls, 1);
  EXPECT_TRUE(source.allocator_ok);
  EXPECT_EQ(source.memory.size(), 3u) << "every slot of the pool";
  EXPECT_GE(source.smallest, layout_bytes + 320) << "a batch too small for the grabber's payload";
  EXPECT_EQ(source.fills_outside, 0);
  EXPECT_EQ(source.detach_calls, 1);

  SyntheticScanner again(small_scan(53));
  AttachingSource failing(again, layout_bytes, 2);
  RecordingSink aborted;
  EXPECT_THROW(Pipeline(o).run(failing, {&aborted}), InputError);
  EXPECT_EQ(failing.detach_calls, 1) << "detached on the failure path too";

  SyntheticScanner plain(small_scan(53));
  AttachingSource none(plain, 0);
  Pipeline(o).run(none, {});
  EXPECT_EQ(none.attach_calls, 0);
  EXPECT_EQ(none.detach_calls, 0);
}
