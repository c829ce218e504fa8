// Merging heads (streaming/merge.h) and aligning them (calibration/head_alignment.h):
//  - the transforms file, the overlap rules, gaps, late rows and timestamps,
//    on the Merger alone (messages encoded and decoded as on the wire);
//  - three heads of the simulated sheet-of-light sensor, each its own camera
//    moved along X and seeing a part of one scene, each with its own
//    calibration (the fit's, turned and shifted by a known amount): align
//    recovers their true poses, and their streams merged give the range map
//    one head seeing the whole scene gives, every row accounted for;
//  - publisher processes, one killed and restarted mid-series: exactly its
//    missing rows are marked, and the merge goes on; `stripeline merge` and
//    `stripeline align` through the commands.
#include <gtest/gtest.h>

#include <tiffio.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "calibration/head_alignment.h"
#include "calibration_fixtures.h"
#include "child_process.h"
#include "core/host_buffer.h"
#include "io/image_writer.h"
#include "io/ply_writer.h"
#include "stages/chain.h"
#include "streaming/curve.h"
#include "streaming/merge.h"
#include "streaming/publisher.h"
#include "streaming/subscriber.h"
#include "synthetic_head_rows.h"

namespace stripeline {
namespace {

using Clock = Merger::Clock;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------------
// The transforms file

TEST(HeadTransforms, FileRoundTripsBitForBit) {
  HeadTransforms t;
  t.target = "align-steps";
  t.heads.push_back(HeadTransform::in_plane("left", 1.234567891234, -32.1234567, 0.3333333333));
  t.heads.push_back(HeadTransform::in_plane("right", -0.5, 32.0, -0.25));
  t.heads[0].residual_rms_mm = 0.0123;
  t.heads[0].points = 800;
  const HeadTransforms back = parse_head_transforms(format_head_transforms(t), "t.toml");
  ASSERT_EQ(back.heads.size(), 2u);
  EXPECT_EQ(back.target, "align-steps");
  for (std::size_t h = 0; h < 2; ++h) {
    EXPECT_EQ(back.heads[h].name, t.heads[h].name);
    for (int i = 0; i < 9; ++i) EXPECT_EQ(back.heads[h].r[i], t.heads[h].r[i]);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(back.heads[h].t[i], t.heads[h].t[i]);
  }
  EXPECT_EQ(back.heads[0].points, 800u);
  EXPECT_NEAR(back.heads[0].angle_deg(), 1.234567891234, 1e-12);
  // after() and inverse(): T^-1 o T is the identity.
  const HeadTransform id = t.heads[0].inverse().after(t.heads[0]);
  double x, y, z;
  id.apply(3.0, -7.0, 11.0, x, y, z);
  EXPECT_NEAR(x, 3.0, 1e-12);
  EXPECT_NEAR(y, -7.0, 1e-12);
  EXPECT_NEAR(z, 11.0, 1e-12);
}

TEST(HeadTransforms, BadFilesGiveOneLineNamingTheKey) {
  const std::string head = "[alignment]\nformat = \"stripeline-head-transforms\"\nversion = 1\n[[head]]\nname = \"a\"\n";
  const std::string ok_rt = "rotation = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]\ntranslation = [0.0, 0.0, 0.0]\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head + "rotation = [1.0, 0.1, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]\ntranslation = [0.0, 0.0, 0.0]\n", "head[0].rotation: is not a rotation"},
      {head + "rotation = [-1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]\ntranslation = [0.0, 0.0, 0.0]\n", "head[0].rotation: is not a rotation"},
      {head + "rotation = [1.0, 0.0, 0.0]\ntranslation = [0.0, 0.0, 0.0]\n", "head[0].rotation: expected an array of 9 numbers"},
      {head + ok_rt + "colour = 3\n", "head[0].colour: unknown key"},
      {head + ok_rt + "[[head]]\nname = \"a\"\n" + ok_rt, "head[1].name: 'a' is given twice"},
      {"[alignment]\nformat = \"stripeline-head-transforms\"\nversion = 2\n", "alignment.version: 2 is not supported"},
      {"[alignment]\nformat = \"stripeline-head-transforms\"\nversion = 1\n", "head: missing"},
      {"[alignment\n", "t.toml:1:"},
  };
  for (const auto& [text, needle] : cases) {
    try {
      parse_head_transforms(text, "t.toml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(needle), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

// ---------------------------------------------------------------------------
// The Merger alone: messages encoded and decoded exactly as on the wire.

// One head's messages: series-start, profile messages of 8 rows, series-end.
class WireHead {
 public:
  WireHead(double shift, std::function<double(std::uint64_t, double)> z) : rows_(64, 8, -20.0, 20.0, std::move(z)), shift_(shift) {
    series_ = wire::new_uuid();
    mapping_ = ProfileMapping(LinearCalibration{}, kDefaultHeightCodeBits, rows_.info("x").sheet);
  }
  test::SyntheticHeadRows& rows() { return rows_; }
  wire::Decoded start() {
    nlohmann::json h = wire::base_header(wire::Topic::SeriesStart, series_, seq_++);
    h["width"] = 64;
    return wire::decode(wire::encode_control(wire::Topic::SeriesStart, h).strings());
  }
  // Frames [first, first + 8), with these timestamps when given.
  wire::Decoded profile(std::uint64_t first, const std::vector<std::int64_t>& stamps = {}) {
    nlohmann::json h = wire::base_header(wire::Topic::Profile, series_, seq_++);
    h["calibration"] = wire::calibration_json(LinearCalibration{});
    h["height_bits"] = kDefaultHeightCodeBits;
    ProfileSpan s = rows_.span(first, 8);
    if (!stamps.empty())
      for (int i = 0; i < 8; ++i) const_cast<FrameMeta&>(s.meta[i]).timestamp_ns = stamps[static_cast<std::size_t>(i)];
    wire::Decoded d = wire::decode(wire::encode_rows(wire::Topic::Profile, h, s, 0, 8, mapping_, series_row_, true).strings());
    series_row_ += 8;
    return d;
  }
  void skip_message() { ++seq_, series_row_ += 8; }  // sent, never received
  wire::Decoded end() {
    nlohmann::json h = wire::base_header(wire::Topic::SeriesEnd, series_, seq_++);
    h["profile_rows"] = series_row_;
    h["rows_in"] = series_row_;
    return wire::decode(wire::encode_control(wire::Topic::SeriesEnd, h).strings());
  }
  double shift() const { return shift_; }

 private:
  test::SyntheticHeadRows rows_;
  double shift_;
  std::string series_;
  std::uint64_t seq_ = 0, series_row_ = 0;
  ProfileMapping mapping_;
};

struct Collected {
  std::vector<std::uint64_t> heads;
  std::vector<std::optional<std::int64_t>> encoder;
  std::vector<std::int64_t> timestamps;
  std::vector<std::vector<float>> z;
  Merger::Output sink() {
    return [this](const MergedBlock& b) {
      for (int r = 0; r < b.rows.rows; ++r) {
        heads.push_back(b.heads[static_cast<std::size_t>(r)]);
        encoder.push_back(b.rows.encoder[static_cast<std::size_t>(r)]);
        timestamps.push_back(b.rows.timestamps_ns[static_cast<std::size_t>(r)]);
        z.emplace_back(b.rows.z.begin() + static_cast<std::ptrdiff_t>(r) * b.rows.width,
                       b.rows.z.begin() + static_cast<std::ptrdiff_t>(r + 1) * b.rows.width);
      }
    };
  }
};

MergeConfig two_heads(OverlapRule rule) {
  MergeConfig c;
  c.heads = {HeadTransform::in_plane("a", 0.0, -15.0, 0.0), HeadTransform::in_plane("b", 0.0, 15.0, 0.0)};
  c.grid = {-35.0, 35.0, 1.0, 0, kernels::RectifyRule::Mean};  // columns are 0.63 mm apart: every cell gets points
  c.overlap = rule;
  c.window = 100ms;
  return c;
}

void expect_accounted(const MergeCounters& c) {
  for (std::size_t h = 0; h < c.heads.size(); ++h) {
    const MergeHeadCounters& k = c.heads[h];
    EXPECT_EQ(k.received + k.lost, k.sent) << "head " << h;
    EXPECT_EQ(k.received, k.merged + k.late + k.unmatched + k.no_points + k.source_missing) << "head " << h;
    EXPECT_EQ(k.merged + k.absent, c.rows) << "head " << h;
  }
}

TEST(Merger, OverlapCellsTakeTheMeanOrTheBestQualityHead) {
  for (const OverlapRule rule : {OverlapRule::Mean, OverlapRule::Quality}) {
    Collected got;
    Merger m(two_heads(rule), got.sink());
    // Head a sees Z = 2 mm, head b Z = 3 mm; they overlap in world X -5..5.
    WireHead a(-15.0, [](std::uint64_t, double) { return 2.0; }), b(15.0, [](std::uint64_t, double) { return 3.0; });
    b.rows().set_quality(90);  // a's points have contrast 40
    const auto t = Clock::now();
    m.on_message(0, a.start(), t);
    m.on_message(1, b.start(), t);
    for (std::uint64_t f = 0; f < 32; f += 8) {
      m.on_message(0, a.profile(f), t);
      m.on_message(1, b.profile(f), t);
    }
    m.on_message(0, a.end(), t);
    m.on_message(1, b.end(), t);
    EXPECT_TRUE(m.all_ended());
    ASSERT_EQ(got.z.size(), 32u);
    const MergeConfig& c = m.config();
    for (std::size_t r = 0; r < got.z.size(); ++r) {
      EXPECT_EQ(got.heads[r], 3u);
      EXPECT_EQ(got.encoder[r], static_cast<std::int64_t>(4 * r));
      for (int i = 0; i < c.grid.bins(); ++i) {
        const double x = c.grid.x_min + i * c.grid.dx;
        const float z = got.z[r][static_cast<std::size_t>(i)];
        if (x < -34.0 || x > 34.0) continue;  // the views' ends: columns fall either side of the cell
        if (x < -5.5) EXPECT_EQ(z, 2.0f) << x;
        else if (x > 5.5) EXPECT_EQ(z, 3.0f) << x;
        else if (x > -4.5 && x < 4.5) EXPECT_EQ(z, rule == OverlapRule::Mean ? 2.5f : 3.0f) << x;
      }
    }
    const MergeCounters k = m.counters();
    EXPECT_EQ(k.rows, 32u);
    EXPECT_EQ(k.heads[0].merged, 32u);
    EXPECT_EQ(k.heads[1].absent, 0u);
    expect_accounted(k);
  }
}

TEST(Merger, AMessageLostOnTheWayMarksExactlyItsRows) {
  Collected got;
  Merger m(two_heads(OverlapRule::Mean), got.sink());
  WireHead a(-15.0, [](std::uint64_t, double) { return 1.0; }), b(15.0, [](std::uint64_t, double) { return 1.0; });
  const auto t = Clock::now();
  m.on_message(0, a.start(), t);
  m.on_message(1, b.start(), t);
  for (std::uint64_t f = 0; f < 48; f += 8) {
    m.on_message(0, a.profile(f), t);
    if (f == 16) b.skip_message();  // b's frames 16..23 never arrive
    else m.on_message(1, b.profile(f), t);
  }
  m.on_message(0, a.end(), t);
  m.on_message(1, b.end(), t);
  ASSERT_EQ(got.heads.size(), 48u);
  for (std::size_t r = 0; r < 48; ++r) EXPECT_EQ(got.heads[r], r >= 16 && r < 24 ? 1u : 3u) << r;
  const MergeCounters k = m.counters();
  EXPECT_EQ(k.heads[1].lost, 8u);
  EXPECT_EQ(k.heads[1].absent, 8u);
  EXPECT_EQ(k.heads[1].gap_messages, 1u);
  EXPECT_EQ(k.heads[1].sent, 48u);
  EXPECT_EQ(k.heads[1].received, 40u);
  expect_accounted(k);
}

TEST(Merger, RowsBeyondTheWindowGoOutWithoutTheHeadAndItsLateRowsAreCounted) {
  Collected got;
  Merger m(two_heads(OverlapRule::Mean), got.sink());
  WireHead a(-15.0, [](std::uint64_t, double) { return 1.0; }), b(15.0, [](std::uint64_t, double) { return 1.0; });
  const auto t = Clock::now();
  m.on_message(0, a.start(), t);
  m.on_message(1, b.start(), t);
  m.on_message(0, a.profile(0), t);
  m.on_message(1, b.profile(0), t);
  m.on_message(0, a.profile(8), t + 1ms);  // b's rows 8..15 are slow
  EXPECT_EQ(got.heads.size(), 8u);         // rows 8..15 wait for b
  m.expire(t + 50ms);
  EXPECT_EQ(got.heads.size(), 8u);
  m.expire(t + 102ms);  // the window (100 ms) has passed: out without b
  ASSERT_EQ(got.heads.size(), 16u);
  EXPECT_EQ(got.heads[8], 1u);
  m.on_message(1, b.profile(8), t + 150ms);  // too late
  m.on_message(0, a.profile(16), t + 151ms);
  m.on_message(1, b.profile(16), t + 151ms);
  m.on_message(0, a.end(), t + 152ms);
  m.on_message(1, b.end(), t + 152ms);
  ASSERT_EQ(got.heads.size(), 24u);
  EXPECT_EQ(got.heads[16], 3u);
  const MergeCounters k = m.counters();
  EXPECT_EQ(k.heads[1].late, 8u);
  EXPECT_EQ(k.heads[1].absent, 8u);
  EXPECT_EQ(k.heads[1].lost, 0u);
  expect_accounted(k);
}

TEST(Merger, HeadsNotHeardYetGetTheWindowFromTheLinesFirstMessageNotFromTheMergesStart) {
  Collected got;
  Merger m(two_heads(OverlapRule::Mean), got.sink());
  WireHead a(-15.0, [](std::uint64_t, double) { return 1.0; }), b(15.0, [](std::uint64_t, double) { return 1.0; });
  const auto t = Clock::now() + 10s;  // the merge has waited 100 windows for its heads
  m.on_message(0, a.profile(0), t);
  m.expire(t + 1ms);
  EXPECT_EQ(got.heads.size(), 0u);  // b has not been heard, but the line has only just started
  m.on_message(1, b.profile(0), t + 60ms);
  ASSERT_EQ(got.heads.size(), 8u);
  for (const auto h : got.heads) EXPECT_EQ(h, 3u);
  m.on_message(0, a.profile(8), t + 70ms);
  m.expire(t + 169ms);  // b silent for 109 ms (window 100): rows 8..15 go without it
  ASSERT_EQ(got.heads.size(), 16u);
  EXPECT_EQ(got.heads[8], 1u);
  const MergeCounters k = m.counters();
  EXPECT_EQ(k.heads[1].late, 0u);
  EXPECT_EQ(k.heads[1].absent, 8u);
  expect_accounted(k);
}

TEST(Merger, AHeadRunningAheadDoesNotAgeTheRowsItMakesEarly) {
  Collected got;
  Merger m(two_heads(OverlapRule::Mean), got.sink());
  WireHead a(-15.0, [](std::uint64_t, double) { return 1.0; }), b(15.0, [](std::uint64_t, double) { return 1.0; });
  const auto t = Clock::now();
  m.on_message(0, a.profile(0), t);
  m.on_message(1, b.profile(0), t);
  m.on_message(1, b.profile(8), t);  // b runs ahead: rows 8..23 wait for a
  m.on_message(1, b.profile(16), t);
  m.expire(t + 90ms);
  EXPECT_EQ(got.heads.size(), 8u);
  m.on_message(0, a.profile(8), t + 95ms);  // rows 8..15 out; 16..23 are next from now on
  m.expire(t + 150ms);                      // made 150 ms ago, next in line for 55 ms: they wait (window 100 ms)
  EXPECT_EQ(got.heads.size(), 16u);
  m.on_message(0, a.profile(16), t + 160ms);
  ASSERT_EQ(got.heads.size(), 24u);
  for (const auto h : got.heads) EXPECT_EQ(h, 3u);
  const MergeCounters k = m.counters();
  EXPECT_EQ(k.heads[0].late, 0u);
  EXPECT_EQ(k.heads[0].absent, 0u);
  expect_accounted(k);
}

TEST(Merger, RowsThatCannotBeMergedAreCountedByReason) {
  MergeConfig c = two_heads(OverlapRule::Mean);
  c.align = AlignKey::Frame;
  Collected got;
  Merger m(c, got.sink());
  WireHead a(-15.0, [](std::uint64_t, double) { return 1.0; }), b(15.0, [](std::uint64_t, double) { return 1.0; });
  const auto t = Clock::now();
  wire::Decoded a0 = a.profile(0), b0 = b.profile(0), a1 = a.profile(8), b1 = b.profile(8);
  b0.rows->missing[2] = 1;        // b's source lost frame 2
  b0.rows->frame_ids[5] = 3;      // a frame id that goes back: not a key of this head
  b1.rows->points.clear();        // a message without calibrated points
  b1.rows->motion_y.clear();
  for (auto* d : {&a0, &b0, &a1, &b1}) m.on_message(d == &a0 || d == &a1 ? 0 : 1, *d, t);
  m.flush_all(t);
  ASSERT_EQ(got.heads.size(), 16u);
  for (std::size_t r = 0; r < 16; ++r) EXPECT_EQ(got.heads[r], r == 2 || r == 5 || r >= 8 ? 1u : 3u) << r;
  const MergeCounters k = m.counters();
  EXPECT_EQ(k.heads[1].source_missing, 1u);
  EXPECT_EQ(k.heads[1].unmatched, 1u);
  EXPECT_EQ(k.heads[1].no_points, 8u);
  EXPECT_EQ(k.heads[1].merged, 6u);
  EXPECT_EQ(k.heads[1].absent, 10u);
  expect_accounted(k);
}

TEST(Merger, TimestampsWithinTheToleranceAreOneRow) {
  MergeConfig c = two_heads(OverlapRule::Mean);
  c.align = AlignKey::Timestamp;
  c.timestamp_tolerance_ns = 5'000;
  Collected got;
  Merger m(c, got.sink());
  WireHead a(-15.0, [](std::uint64_t, double) { return 1.0; }), b(15.0, [](std::uint64_t, double) { return 1.0; });
  std::vector<std::int64_t> ta, tb;
  for (int i = 0; i < 8; ++i) {
    ta.push_back(1'000'000 + 100'000 * i);
    tb.push_back(1'000'000 + 100'000 * i + (i % 2 ? 4'000 : -3'000));  // jitter within 5 us
  }
  tb[5] = 1'000'000 + 100'000 * 5 + 40'000;  // one beyond: its own row
  const auto t = Clock::now();
  m.on_message(0, a.profile(0, ta), t);
  m.on_message(1, b.profile(0, tb), t);
  m.flush_all(t);
  ASSERT_EQ(got.heads.size(), 9u);
  int both = 0;
  for (std::size_t r = 0; r < got.heads.size(); ++r) both += got.heads[r] == 3u;
  EXPECT_EQ(both, 7);
  EXPECT_EQ(got.timestamps[5], ta[5]);
  EXPECT_EQ(got.heads[5], 1u);
  EXPECT_EQ(got.heads[6], 2u);  // b's stray row
  expect_accounted(m.counters());
}

// ---------------------------------------------------------------------------
// Heads of the simulated sensor: align, then merge against one head seeing all.

using test::ProfileScene;  // tests/calibration_fixtures.h

// A head: the simulated sensor moved by cam_tx along X, a window of its
// columns, the fit's calibration turned and shifted by `calib` (its own
// calibrated frame), and its true head-to-world transform.
struct Head {
  std::string name;
  double cam_tx = 0;
  SensorRoi roi;
  HeadTransform calib;
  CalibrationFile cal;
  HeadTransform truth;

  TriangulationScannerConfig sensor(std::uint64_t frames) const {
    TriangulationScannerConfig c = test::sensor_config(frames, roi);
    c.geometry.reference_x_mm += cam_tx;
    c.geometry.laser_x_mm += cam_tx;
    c.x_min_mm += cam_tx;
    c.x_max_mm += cam_tx;
    return c;
  }
  // The frames' profiles through the CPU chain.
  ProfileBatch extract(std::shared_ptr<const TriangulationScene> scene, std::uint64_t frames) const {
    TriangulationScanner scanner(sensor(frames), std::move(scene));
    BatchLayout layout = scanner.frame_layout();
    layout.frames = static_cast<int>(frames);
    Batch batch(layout, &allocate_host);
    EXPECT_TRUE(scanner.fill(batch));
    const ChainConfig chain;
    auto processor = make_processor(Backend::Cpu, layout, chain);
    ProfileBatch profiles(layout.width, layout.frames, output_slots(chain, layout.frame_height), &allocate_host);
    processor->process(batch, profiles);
    return profiles;
  }
  ScanInfo info(const ProfileBatch& p) const {
    ScanInfo i;
    i.layout.width = p.width;
    i.layout.frame_height = roi.height;
    i.layout.frames = p.capacity;
    i.profile_slots = p.slots;
    auto sheet = std::make_shared<AppliedCalibration>();
    sheet->model = cal.model;
    sheet->roi_x = roi.x, sheet->roi_y = roi.y;
    sheet->id = model_id(cal.model);
    i.sheet = sheet;
    i.source = name;
    return i;
  }
};

class SyntheticHeads : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const CalibrationTarget target = load_target(test::target_path("sawtooth.toml"));
    auto rec = test::target_recording(target, 30, 0.0, 0.0);
    CalibrateOptions o = test::calibrate_options(rec->config());
    o.y_step_mm = test::GaugeScene::kYStep;
    base_ = new CalibrationFile(calibrate(*rec, target, o).file);
    // The fit's frame -> the truth's (the parts' frame for the unmoved sensor).
    const test::TruthComparison s = test::compare_with_truth(base_->model, rec->camera(), 0, 2047, 428, 683, 8.0);
    fit_to_truth_ = HeadTransform::in_plane("", s.rotation_deg, s.shift_x, s.shift_z);
    align_target_ = new CalibrationTarget(load_target(test::source_dir() + "/configs/targets/align-steps.toml"));
    // Three heads 32 mm apart, each 900 columns (~44 mm) wide; 12 mm overlaps.
    // Each has its own calibrated frame: the fit's, turned and shifted.
    const double cam[3] = {-32.0, 0.0, 32.0}, turn[3] = {1.5, -0.8, 2.2}, sx[3] = {4.0, -3.0, 7.5}, sz[3] = {0.6, -0.4, 1.1};
    for (int h = 0; h < 3; ++h) heads_.push_back(make_head("h" + std::to_string(h), cam[h], {574, 428, 900, 256}, turn[h], sx[h], sz[h]));
    whole_ = new Head(make_head("whole", 0.0, {0, 428, 2048, 256}, 0.0, 0.0, 0.0));
  }
  static void TearDownTestSuite() {
    delete base_, delete align_target_, delete whole_;
    heads_.clear();
  }

  static Head make_head(const std::string& name, double cam_tx, SensorRoi roi, double turn, double sx, double sz) {
    Head h;
    h.name = name;
    h.cam_tx = cam_tx;
    h.roi = roi;
    h.calib = HeadTransform::in_plane(name, turn, sx, sz);
    h.cal = *base_;
    // H' = A H with A the calibrated frame's turn and shift: exact through the homography.
    const double c = std::cos(turn * test::kDeg), s = std::sin(turn * test::kDeg);
    const double a[9] = {c, -s, sx, s, c, sz, 0, 0, 1};
    double hh[9];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) hh[3 * i + j] = a[3 * i] * base_->model.homography[j] + a[3 * i + 1] * base_->model.homography[3 + j] + a[3 * i + 2] * base_->model.homography[6 + j];
    std::copy(hh, hh + 9, h.cal.model.homography);
    h.cal.id = model_id(h.cal.model);
    // world = shift by the camera's move o fit -> truth o (the head's frame -> the fit's)
    h.truth = HeadTransform::in_plane(name, 0.0, cam_tx, 0.0).after(fit_to_truth_).after(h.calib.inverse());
    h.truth.name = name;
    return h;
  }

  // align on the common target, through the head's own calibration.
  static AlignResult align(const Head& h) {
    TriangulationScanner scanner(h.sensor(6), std::make_shared<ProfileScene>(align_target_->profile));
    const std::vector<PlanePoint> pts = target_scan_points(scanner, h.cal, h.roi.x, h.roi.y);
    return align_to_target(pts, *align_target_, h.name);
  }

  static inline CalibrationFile* base_ = nullptr;
  static inline HeadTransform fit_to_truth_;
  static inline CalibrationTarget* align_target_ = nullptr;
  static inline std::vector<Head> heads_;
  static inline Head* whole_ = nullptr;
};

TEST_F(SyntheticHeads, AlignRecoversEachHeadsTruePose) {
  for (const Head& h : heads_) {
    const AlignResult r = align(h);
    const double dangle = r.transform.angle_deg() - h.truth.angle_deg();
    const double dx = r.transform.t[0] - h.truth.t[0], dz = r.transform.t[2] - h.truth.t[2];
    std::printf("[ align ] head %s: true turn %.4f deg, shift %.4f, %.4f mm; found %+.5f deg, %+.4f, %+.4f mm off; RMS %.4f mm over %zu of %zu points\n",
                h.name.c_str(), h.truth.angle_deg(), h.truth.t[0], h.truth.t[2], dangle, dx, dz, r.rms_mm, r.points_used, r.points_total);
    // The stated tolerance (docs/scale-out.md): 0.02 degrees, 0.02 mm.
    EXPECT_NEAR(dangle, 0.0, 0.02) << h.name;
    EXPECT_NEAR(dx, 0.0, 0.02) << h.name;
    EXPECT_NEAR(dz, 0.0, 0.02) << h.name;
    EXPECT_LT(r.rms_mm, 0.02) << h.name;
  }
}

TEST_F(SyntheticHeads, AHeadThatSeesNoCornerIsRefused) {
  CalibrationTarget flat = *align_target_;
  flat.profile = {{-200.0, 0.0}, {200.0, 0.0}, {210.0, 5.0}};  // the head sees only the flat base
  TriangulationScanner scanner(heads_[1].sensor(4), std::make_shared<ProfileScene>(flat.profile));
  const std::vector<PlanePoint> pts = target_scan_points(scanner, heads_[1].cal, heads_[1].roi.x, heads_[1].roi.y);
  try {
    align_to_target(pts, flat, "h1");
    FAIL() << "a flat view was aligned";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no corner"), std::string::npos) << e.what();
  }
}

// The merged range map of the three heads against the whole-view head's, on
// the same world grid, each head through its own aligned transform.
TEST_F(SyntheticHeads, MergedStreamsEqualTheWholeViewScanEveryRowAccounted) {
  constexpr std::uint64_t kFrames = 24;
  const auto scene = std::make_shared<PartsScene>(test::GaugeScene::config());
  test::TempDir dir;
  MergeServiceConfig sc;
  sc.merge.grid = {-54.0, 54.0, 0.1, 0, kernels::RectifyRule::Mean};
  sc.merge.window = 3000ms;
  sc.publish = "ipc://" + (dir.path() / "merged.sock").string();
  sc.range_map = dir.path() / "merged.tif";
  sc.ply = dir.path() / "merged.ply";
  std::vector<ProfileBatch> batches;
  std::vector<std::unique_ptr<Publisher>> pubs;
  for (const Head& h : heads_) {
    HeadTransform t = align(h).transform;
    sc.merge.heads.push_back(t);
    batches.push_back(h.extract(scene, kFrames));
    PublisherConfig pc;
    pc.endpoint = "ipc://" + (dir.path() / (h.name + ".sock")).string();
    pc.send_hwm = 100000;
    pc.stats_interval = 0;
    pubs.push_back(std::make_unique<Publisher>(pc));
    sc.endpoints.push_back(pubs.back()->endpoint());
  }
  MergeService merge(sc);
  Subscriber out(SubscriberOptions{merge.publish_endpoint(), 100000, "", ""});
  ASSERT_TRUE(merge.wait_for_subscribers(1, 10s));
  for (auto& p : pubs) ASSERT_TRUE(p->wait_for_subscribers(1, 10s));
  for (std::size_t h = 0; h < pubs.size(); ++h) pubs[h]->begin(heads_[h].info(batches[h]));
  for (int f = 0; f < static_cast<int>(kFrames); f += 8)
    for (std::size_t h = 0; h < pubs.size(); ++h) pubs[h]->consume(batches[h].span().subspan(f, 8));
  for (auto& p : pubs) p->finish();
  ASSERT_TRUE(merge.wait_done(30s));
  merge.stop();

  // What a consumer of the merged stream got.
  std::vector<float> merged;
  std::vector<std::uint64_t> masks;
  std::optional<nlohmann::json> end;
  while (!end) {
    auto d = out.receive(5000ms);
    ASSERT_TRUE(d) << "the merged series did not end";
    if (d->topic == wire::Topic::SeriesEnd) end = d->header;
    if (d->topic != wire::Topic::Heightmap) continue;
    EXPECT_EQ(d->header.value("form", ""), "rectified");
    merged.insert(merged.end(), d->rows->z.begin(), d->rows->z.end());
    for (const auto& m : d->header["heads"]) masks.push_back(m.get<std::uint64_t>());
  }
  const int bins = sc.merge.grid.bins();
  ASSERT_EQ(masks.size(), kFrames);
  for (auto m : masks) EXPECT_EQ(m, 7u);
  const MergeCounters c = merge.counters();
  EXPECT_EQ(c.rows, kFrames);
  for (const auto& k : c.heads) {
    EXPECT_EQ(k.sent, kFrames);
    EXPECT_EQ(k.received, kFrames);
    EXPECT_EQ(k.merged, kFrames);
  }
  expect_accounted(c);
  EXPECT_EQ((*end)["merge"]["rows"], kFrames);
  {  // the range map file holds the rows the stream carried, bit for bit
    TIFF* tif = TIFFOpen(sc.range_map.c_str(), "r");
    ASSERT_NE(tif, nullptr);
    std::uint32_t w = 0, h = 0;
    std::uint16_t bits = 0, format = 0;
    TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetField(tif, TIFFTAG_BITSPERSAMPLE, &bits);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
    EXPECT_EQ(w, static_cast<std::uint32_t>(bins));
    EXPECT_EQ(h, static_cast<std::uint32_t>(kFrames));
    EXPECT_EQ(bits, 32);
    EXPECT_EQ(format, SAMPLEFORMAT_IEEEFP);
    std::vector<float> row(static_cast<std::size_t>(w));
    for (std::uint32_t y = 0; y < h && y < kFrames; ++y) {
      ASSERT_EQ(TIFFReadScanline(tif, row.data(), y, 0), 1);
      EXPECT_EQ(std::memcmp(row.data(), merged.data() + static_cast<std::size_t>(y) * bins, row.size() * sizeof(float)), 0) << "row " << y;
    }
    TIFFClose(tif);
  }
  const auto ply = io::read_ply(sc.ply);
  std::size_t cells = 0;
  for (float z : merged) cells += !std::isnan(z);
  EXPECT_EQ(ply.size(), cells);

  // The whole-view head through the same Merger logic, alone.
  MergeConfig one = sc.merge;
  one.heads = {align(*whole_).transform};
  std::vector<float> whole;
  Merger single(one, [&](const MergedBlock& b) { whole.insert(whole.end(), b.rows.z.begin(), b.rows.z.end()); });
  {
    // The rows encoded and decoded as the stream carries them.
    const ProfileBatch p = whole_->extract(scene, kFrames);
    const ScanInfo info = whole_->info(p);
    const ProfileMapping mapping(info.calibration, kDefaultHeightCodeBits, info.sheet);
    const std::string series = wire::new_uuid();
    for (int f = 0; f < static_cast<int>(kFrames); f += 8) {
      nlohmann::json h = wire::base_header(wire::Topic::Profile, series, static_cast<std::uint64_t>(f / 8));
      h["calibration"] = wire::calibration_json(info.calibration);
      single.on_message(0, wire::decode(wire::encode_rows(wire::Topic::Profile, h, p.span(), f, 8, mapping, static_cast<std::uint64_t>(f), true).strings()),
                        Clock::now());
    }
    single.flush_all(Clock::now());
  }
  ASSERT_EQ(whole.size(), merged.size());
  // Cells away from the blocks' walls (where each viewpoint's occlusion
  // differs): the same surface within the calibration's tolerance.
  auto near_wall = [](double x) {
    for (int b = 0; b < 4; ++b)
      for (double e : {test::GaugeScene::kX0[b], test::GaugeScene::kX0[b] + test::GaugeScene::kWidth})
        if (std::abs(x - e) < 2.0) return true;
    return false;
  };
  double worst = 0, sum = 0;
  std::size_t both = 0, whole_only = 0, compared_cells = 0;
  for (std::size_t r = 0; r < kFrames; ++r)
    for (int i = 0; i < bins; ++i) {
      const double x = sc.merge.grid.x_min + i * sc.merge.grid.dx;
      if (near_wall(x) || x < -49.0 || x > 49.0) continue;
      const float a = merged[r * bins + static_cast<std::size_t>(i)], b = whole[r * bins + static_cast<std::size_t>(i)];
      if (std::isnan(b)) continue;
      ++compared_cells;
      if (std::isnan(a)) {
        ++whole_only;
        continue;
      }
      ++both;
      worst = std::max(worst, static_cast<double>(std::abs(a - b)));
      sum += std::abs(a - b);
    }
  std::printf("[ merge ] 3 heads vs one whole-view head, %zu cells compared: |dZ| mean %.4f mm, max %.4f mm; %zu cells only in the whole view\n", both,
              sum / static_cast<double>(both), worst, whole_only);
  EXPECT_GT(both, compared_cells * 98 / 100);
  EXPECT_LT(worst, 0.05);  // the calibration's tolerance: 50 um (docs/scale-out.md)
  EXPECT_LT(sum / static_cast<double>(both), 0.01);
}

// ---------------------------------------------------------------------------
// Publisher processes: one killed and restarted mid-series.

std::string head_binary() { return STRIPELINE_SYNTHETIC_HEAD; }

TEST(MergeService, AHeadKilledAndRestartedIsMarkedExactlyWhereItWasDown) {
  test::TempDir dir;
  constexpr std::uint64_t kFrames = 1200, kHold = 160;
  auto ep = [&](const std::string& n) { return "ipc://" + (dir.path() / (n + ".sock")).string(); };
  MergeServiceConfig sc;
  for (int h = 0; h < 3; ++h) {
    sc.merge.heads.push_back(HeadTransform::in_plane("h" + std::to_string(h), 0.0, 35.0 * (h - 1), 0.0));
    sc.endpoints.push_back(ep("h" + std::to_string(h)));
  }
  sc.merge.grid = {-55.0, 55.0, 0.1, 0, kernels::RectifyRule::Mean};
  sc.merge.window = 2000ms;  // longer than a head process takes to start on a loaded machine
  sc.publish = ep("merged");
  MergeService merge(sc);
  Subscriber out(SubscriberOptions{merge.publish_endpoint(), 100000, "", ""});
  ASSERT_TRUE(merge.wait_for_subscribers(1, 10s));
  auto head = [&](int h, std::uint64_t first, std::uint64_t hold) {
    std::vector<std::string> args = {head_binary(), ep("h" + std::to_string(h)), std::to_string(first), std::to_string(kFrames), "400",
                                      std::to_string(35.0 * (h - 1))};
    if (hold) args.push_back(std::to_string(hold));
    return std::make_unique<test::Child>(args);
  };
  auto h1 = head(1, 0, kHold);
  auto h0 = head(0, 0, 0), h2 = head(2, 0, 0);
  ASSERT_TRUE(h1->wait_for("holding", 30s)) << h1->output();
  // Every row it published has reached the merge: then it dies, with no series-end.
  const auto deadline = test::steady::now() + 10s;
  while (merge.counters().heads[1].received < kHold && test::steady::now() < deadline) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(merge.counters().heads[1].received, kHold);
  h1->signal(SIGKILL);
  ASSERT_TRUE(h1->wait_exit(10s));
  // Restarted where the line will be 1 s from now (400 rows/s): it moved on meanwhile.
  std::uint64_t now_at = 0;
  {
    const std::string o = h0->output();
    const auto at = o.rfind("published ");
    ASSERT_NE(at, std::string::npos) << o;
    now_at = std::stoull(o.substr(at + 10));
  }
  const std::uint64_t restart = (now_at + 400) / 8 * 8;
  ASSERT_LT(restart + 80, kFrames) << "the other heads ran ahead (a loaded machine): " << now_at;
  h1 = head(1, restart, 0);
  ASSERT_EQ(h1->wait_exit(60s), 0) << h1->output();
  ASSERT_EQ(h0->wait_exit(60s), 0) << h0->output();
  ASSERT_EQ(h2->wait_exit(60s), 0) << h2->output();
  ASSERT_TRUE(merge.wait_done(30s));
  merge.stop();

  std::map<std::int64_t, std::uint64_t> mask_of;  // encoder -> heads
  for (bool ended = false; !ended;) {
    auto d = out.receive(5000ms);
    ASSERT_TRUE(d) << "the merged series did not end";
    ended = d->topic == wire::Topic::SeriesEnd;
    if (d->topic != wire::Topic::Heightmap) continue;
    for (int r = 0; r < d->rows->rows; ++r) mask_of[*d->rows->encoder[static_cast<std::size_t>(r)]] = d->header["heads"][static_cast<std::size_t>(r)];
  }
  const MergeCounters c = merge.counters();
  const MergeHeadCounters& k = c.heads[1];
  std::printf("[ merge ] head 1 killed after %llu frames, restarted at %llu: received %llu, lost %llu, late %llu, absent from %llu of %llu rows\n",
              static_cast<unsigned long long>(kHold), static_cast<unsigned long long>(restart), static_cast<unsigned long long>(k.received),
              static_cast<unsigned long long>(k.lost), static_cast<unsigned long long>(k.late), static_cast<unsigned long long>(k.absent),
              static_cast<unsigned long long>(c.rows));
  for (int h : {0, 2}) std::printf("[ merge ] head %d: received %llu, late %llu, absent %llu; the line was at frame %llu at the restart\n", h,
                                   static_cast<unsigned long long>(c.heads[static_cast<std::size_t>(h)].received),
                                   static_cast<unsigned long long>(c.heads[static_cast<std::size_t>(h)].late),
                                   static_cast<unsigned long long>(c.heads[static_cast<std::size_t>(h)].absent), static_cast<unsigned long long>(now_at));
  ASSERT_EQ(mask_of.size(), kFrames);
  EXPECT_EQ(c.rows, kFrames);
  EXPECT_EQ(k.lost, 0u);
  // Never sent: frames kHold .. restart - 1. Should the restarted head's first
  // rows come after the others' had gone out (a machine too loaded to start
  // it within the second), they are counted late and marked too, in order.
  EXPECT_LE(k.late, 80u);
  const std::uint64_t marked_to = restart + k.late;
  for (std::uint64_t f = 0; f < kFrames; ++f) EXPECT_EQ(mask_of[static_cast<std::int64_t>(4 * f)], f >= kHold && f < marked_to ? 5u : 7u) << "frame " << f;
  EXPECT_EQ(k.series, 2u);
  EXPECT_EQ(k.received, kFrames - (restart - kHold));
  EXPECT_EQ(k.sent, k.received);
  EXPECT_EQ(k.absent, restart - kHold + k.late);
  for (int h : {0, 2}) {
    EXPECT_EQ(c.heads[static_cast<std::size_t>(h)].received, kFrames);
    EXPECT_EQ(c.heads[static_cast<std::size_t>(h)].absent, 0u);
  }
  expect_accounted(c);
}

TEST(MergeService, CurveOnEachHopLetsOnlyListedPeersIn) {
  if (!curve_available()) GTEST_SKIP() << "libzmq was built without CURVE (zmq_has(\"curve\") is false)";
  test::TempDir dir;
  for (const char* k : {"head", "merge", "down", "consumer", "stranger"}) write_curve_keypair(dir.path() / k);
  // Upstream: the head admits the merge's key only; downstream: the merge admits the consumer's.
  PublisherConfig pc;
  pc.endpoint = "ipc://" + (dir.path() / "head.sock").string();
  pc.stats_interval = 0;
  pc.curve.enabled = true;
  pc.curve.server_secret_key = dir.path() / "head.secret";
  pc.curve.client_keys = {dir.path() / "merge.pub"};
  Publisher head(pc);
  MergeServiceConfig sc;
  sc.merge.heads = {HeadTransform::in_plane("h0", 0.0, 0.0, 0.0)};
  sc.merge.grid = {-25.0, 25.0, 1.0, 0, kernels::RectifyRule::Mean};
  sc.endpoints = {head.endpoint()};
  sc.server_keys = {(dir.path() / "head.pub").string()};
  sc.client_key = (dir.path() / "merge.secret").string();
  sc.publish = "ipc://" + (dir.path() / "merged.sock").string();
  sc.curve.enabled = true;
  sc.curve.server_secret_key = dir.path() / "down.secret";
  sc.curve.client_keys = {dir.path() / "consumer.pub"};
  MergeService merge(sc);
  Subscriber consumer(SubscriberOptions{merge.publish_endpoint(), 1000, (dir.path() / "down.pub").string(), (dir.path() / "consumer.secret").string()});
  Subscriber stranger(SubscriberOptions{merge.publish_endpoint(), 1000, (dir.path() / "down.pub").string(), (dir.path() / "stranger.secret").string()});
  ASSERT_TRUE(head.wait_for_subscribers(1, 10s));
  ASSERT_TRUE(merge.wait_for_subscribers(1, 10s));
  test::SyntheticHeadRows rows(64, 8, -20.0, 20.0, [](std::uint64_t, double) { return 1.0; });
  head.begin(rows.info("h0"));
  for (std::uint64_t f = 0; f < 32; f += 8) head.consume(rows.span(f, 8));
  head.finish();
  ASSERT_TRUE(merge.wait_done(10s));
  merge.stop();
  std::uint64_t got = 0;
  for (bool ended = false; !ended;) {
    auto d = consumer.receive(5000ms);
    ASSERT_TRUE(d) << "the listed consumer did not get the merged series";
    ended = d->topic == wire::Topic::SeriesEnd;
    if (d->topic == wire::Topic::Heightmap) got += static_cast<std::uint64_t>(d->rows->rows);
  }
  EXPECT_EQ(got, 32u);
  EXPECT_FALSE(stranger.receive(300ms)) << "a consumer not listed read the merged stream";
  EXPECT_EQ(merge.counters().heads[0].received, 32u);
}

// ---------------------------------------------------------------------------
// Through the commands.

TEST(MergeCli, SigintStopsItWithTheCountersAndExitZero) {
  test::TempDir dir;
  HeadTransforms t;
  t.heads.push_back(HeadTransform::in_plane("a", 0.0, 0.0, 0.0));
  save_head_transforms(dir.path() / "t.toml", t);
  test::Child merge({test::binary_path(), "merge", "--head", "a=ipc://" + (dir.path() / "nobody.sock").string(), "--transforms",
                     (dir.path() / "t.toml").string(), "--grid", "-10:10:0.5"});
  ASSERT_TRUE(merge.wait_for("merge: 1 heads", 10s)) << merge.output();
  merge.signal(SIGINT);
  ASSERT_EQ(merge.wait_exit(10s), 0) << merge.output();
  EXPECT_NE(merge.output().find("merge stopped (SIGINT): 0 merged rows"), std::string::npos) << merge.output();
  EXPECT_NE(merge.output().find("head a (bit 0): sent 0 = received 0 + lost 0"), std::string::npos) << merge.output();
}

TEST(MergeCli, MergesPublisherProcessesAndPrintsTheCounters) {
  test::TempDir dir;
  auto ep = [&](const std::string& n) { return "ipc://" + (dir.path() / (n + ".sock")).string(); };
  HeadTransforms t;
  for (int h = 0; h < 2; ++h) t.heads.push_back(HeadTransform::in_plane("h" + std::to_string(h), 0.0, 35.0 * h - 17.5, 0.0));
  save_head_transforms(dir.path() / "t.toml", t);
  const std::string out = (dir.path() / "m.tif").string(), ply = (dir.path() / "m.ply").string();
  test::Child merge({test::binary_path(), "merge", "--head", "h0=" + ep("h0"), "--head", "h1=" + ep("h1"), "--transforms",
                     (dir.path() / "t.toml").string(), "--grid", "-40:40:0.2", "--window-ms", "2000", "--range-map", out, "--ply", ply});
  std::vector<std::unique_ptr<test::Child>> heads;
  for (int h = 0; h < 2; ++h)
    heads.push_back(std::make_unique<test::Child>(std::vector<std::string>{head_binary(), ep("h" + std::to_string(h)), "0", "96", "2000",
                                                                           std::to_string(35.0 * h - 17.5)}));
  for (auto& h : heads) ASSERT_EQ(h->wait_exit(60s), 0) << h->output();
  ASSERT_EQ(merge.wait_exit(30s), 0) << merge.output();
  const std::string o = merge.output();
  EXPECT_NE(o.find("merge complete (every head ended its series): 96 merged rows"), std::string::npos) << o;
  EXPECT_NE(o.find("head h0 (bit 0): sent 96 = received 96 + lost 0"), std::string::npos) << o;
  EXPECT_NE(o.find("head h1 (bit 1): sent 96 = received 96 + lost 0"), std::string::npos) << o;
  EXPECT_TRUE(std::filesystem::exists(out));
  EXPECT_GT(io::read_ply(ply).size(), 96u * 300u);
}

TEST(MergeCli, BadInputGivesOneLineAndExitTwo) {
  test::TempDir dir;
  HeadTransforms t;
  t.heads.push_back(HeadTransform::in_plane("a", 0.0, 0.0, 0.0));
  save_head_transforms(dir.path() / "t.toml", t);
  const std::string tf = (dir.path() / "t.toml").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"merge --head b=ipc:///tmp/x --transforms " + tf + " --grid 0:1:0.1", "no [[head]] named 'b'"},
      {"merge --head a --transforms " + tf + " --grid 0:1:0.1", "--head 'a' is not understood"},
      {"merge --head a=ipc:///tmp/x --transforms " + tf + " --grid 1:0:0.1", "--grid"},
      {"merge --head a=ipc:///tmp/x --transforms " + tf + " --grid 0:1:0.1 --align phase", "align key 'phase' is not known"},
      {"merge --head a=ipc:///tmp/x --transforms " + (dir.path() / "none.toml").string() + " --grid 0:1:0.1", "cannot open the head transforms file"},
      {"merge --head a=ipc:///tmp/x --transforms " + tf + " --grid 0:1:0.1 --ply /nonexistent-dir/m.ply", "/nonexistent-dir"},
      {"merge --head a=ipc:///tmp/x --transforms " + tf + " --grid 0:1:0.1 --range-map " + (dir.path() / "m.png").string(), "expected a .tif"},
      {"align --head a=x.tiff --target " + test::target_path("sawtooth.toml") + " -H 8 -o " + (dir.path() / "o.toml").string(),
       "--head 'a=x.tiff' is not understood"},
  };
  for (const auto& [args, needle] : cases) {
    std::string msg;
    EXPECT_EQ(test::run_cli(args, &msg), 2) << args << "\n" << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "o.toml"));
}

TEST_F(SyntheticHeads, AlignThroughTheCommandWritesTheTransforms) {
  test::TempDir dir;
  std::string args = "align -q --target " + test::source_dir() + "/configs/targets/align-steps.toml -H 256 -o " + (dir.path() / "t.toml").string();
  for (const Head* h : {&heads_[0], &heads_[2]}) {
    TriangulationScanner scanner(h->sensor(4), std::make_shared<ProfileScene>(align_target_->profile));
    const BatchLayout layout = scanner.frame_layout();
    std::vector<std::uint8_t> image(layout.frame_pixels() * 4);
    for (std::uint64_t f = 0; f < 4; ++f) scanner.render(f, reinterpret_cast<std::byte*>(image.data() + f * layout.frame_pixels()));
    const auto rec = dir.path() / (h->name + ".tiff");
    io::write_image(rec, image.data(), layout.width, 4 * layout.frame_height, PixelFormat::Mono8);
    save_calibration(dir.path() / (h->name + ".toml"), h->cal);
    args += " --head " + h->name + "=" + rec.string() + "," + (dir.path() / (h->name + ".toml")).string() + "," + std::to_string(h->roi.x) + "," +
            std::to_string(h->roi.y);
  }
  std::string msg;
  ASSERT_EQ(test::run_cli(args, &msg), 0) << msg;
  const HeadTransforms t = load_head_transforms(dir.path() / "t.toml");
  ASSERT_EQ(t.heads.size(), 2u);
  EXPECT_EQ(t.target, align_target_->name);
  for (const Head* h : {&heads_[0], &heads_[2]}) {
    const HeadTransform* got = t.find(h->name);
    ASSERT_NE(got, nullptr);
    EXPECT_NEAR(got->angle_deg(), h->truth.angle_deg(), 0.02);
    EXPECT_NEAR(got->t[0], h->truth.t[0], 0.02);
    EXPECT_NEAR(got->t[2], h->truth.t[2], 0.02);
  }
}

}  // namespace
}  // namespace stripeline
