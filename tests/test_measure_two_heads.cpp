// Two heads facing each other (docs/measure.md, "Two heads facing each
// other"): the synthetic sensor scans the sphere as today (head A) and as a
// second identical head turned 180 degrees about Z sees it (head B,
// acquisition/triangulation_scenes.h ReversedScene: its camera on the other
// side of the laser plane, its motion step negative in its own frame). Each
// head runs the CPU pipeline with the same calibration model; its profiles
// become the wire messages a head publishes (calibrated points and motion_y,
// wire::encode_rows), decoded as the merge receives them; the real merge
// (streaming::Merger) aligns the rows by the shared encoder, maps head B
// through its head-to-world transform (a transforms file: 180 degrees about
// Z and the X offset) onto one world X grid, and the merged rows are measured
// by the job's tools (part detection, volume, height). What one camera's
// occlusion hides (the ball's far slope behind its top), the other sees.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "calibration/head_alignment.h"
#include "core/errors.h"
#include "calibration_fixtures.h"
#include "core/profile_mapping.h"
#include "gpu_test.h"
#include "io/image_writer.h"
#include "measure/job.h"
#include "measure/part_detector.h"
#include "measure/scan_files.h"
#include "measure/tools.h"
#include "pipeline/pipeline.h"
#include "streaming/merge.h"
#include "streaming/wire_format.h"

namespace stripeline {
namespace {

using measure::MeasureRow;
using measure::Part;
using measure::PartResult;

constexpr double kPi = 3.14159265358979323846;
constexpr double kHeadBOriginMm = 1.5;  // head B's X origin in the world (truth) frame: the heads are not quite in line

// A head's profiles as the wire messages its publisher sends (series-start,
// one profile message per span with the calibrated points, series-end),
// each decoded as a subscriber receives it.
class WireCapture final : public ProfileSink {
 public:
  void begin(const ScanInfo& info) override {
    series_ = wire::new_uuid();
    mapping_ = ProfileMapping(info.calibration, kDefaultHeightCodeBits, info.sheet);
    nlohmann::json h = wire::base_header(wire::Topic::SeriesStart, series_, seq_++);
    h["width"] = info.layout.width;
    messages.push_back(wire::decode(wire::encode_control(wire::Topic::SeriesStart, h).strings()));
  }
  void consume(const ProfileSpan& p) override {
    nlohmann::json h = wire::base_header(wire::Topic::Profile, series_, seq_++);
    h["calibration"] = wire::calibration_json(mapping_.calibration());
    h["height_bits"] = kDefaultHeightCodeBits;
    messages.push_back(wire::decode(wire::encode_rows(wire::Topic::Profile, h, p, 0, p.frames, mapping_, rows_, true).strings()));
    rows_ += static_cast<std::uint64_t>(p.frames);
  }
  void finish() override {
    nlohmann::json h = wire::base_header(wire::Topic::SeriesEnd, series_, seq_++);
    h["profile_rows"] = rows_;
    h["rows_in"] = rows_;
    messages.push_back(wire::decode(wire::encode_control(wire::Topic::SeriesEnd, h).strings()));
  }
  std::vector<wire::Decoded> messages;

 private:
  std::string series_;
  std::uint64_t seq_ = 0, rows_ = 0;
  ProfileMapping mapping_;
};

class TwoHeads : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const CalibrationTarget target = load_target(test::target_path("sawtooth.toml"));
    auto rec = test::target_recording(target, 30, 0.0, 0.0);
    cal_ = new CalibrationFile(calibrate(*rec, target, test::calibrate_options(rec->config())).file);
    x_origin_ = test::truth_x_origin(rec->camera());
    // `stripeline align` on one common target (configs/targets/align-steps.toml,
    // its x = 0 the world's): head B with --reversed; the file written and read back.
    const CalibrationTarget steps = load_target(test::target_path("align-steps.toml"));
    auto profile = std::make_shared<test::ProfileScene>(steps.profile);
    TriangulationScanner a(test::sensor_config(6), profile), b(test::sensor_config(6), std::make_shared<ReversedScene>(profile, kHeadBOriginMm));
    AlignOptions reversed;
    reversed.reversed = true;
    HeadTransforms found;
    found.heads = {align_to_target(target_scan_points(a, *cal_, 0, 428), steps, "a").transform,
                   align_to_target(target_scan_points(b, *cal_, 0, 428), steps, "b", reversed).transform};
    aligned_ = new HeadTransforms(parse_head_transforms(format_head_transforms(found), "two-heads.toml"));
  }
  static void TearDownTestSuite() {
    delete cal_, delete aligned_;
    cal_ = nullptr, aligned_ = nullptr;
  }

  // One head's scan of a preset through the pipeline, as its wire
  // messages. Head B (reversed) is the same sensor with the same model; the
  // motion runs the other way in its frame, so its step is negative.
  static std::vector<wire::Decoded> scan(const PartsPreset& preset, bool reversed, Backend backend = Backend::Cpu) {
    std::shared_ptr<const TriangulationScene> scene = std::make_shared<PartsScene>(preset.config);
    if (reversed) scene = std::make_shared<ReversedScene>(scene, kHeadBOriginMm);
    const SensorRoi roi{0, 428, 2048, 256};
    TriangulationScanner scanner(test::sensor_config(preset.frames, roi), scene);
    auto sheet = std::make_shared<AppliedCalibration>();
    sheet->model = cal_->model;
    sheet->model.y_step = reversed ? -preset.config.y_step_mm : preset.config.y_step_mm;
    sheet->model.y_offset = 0.0;
    sheet->roi_x = roi.x;
    sheet->roi_y = roi.y;
    PipelineOptions o;
    o.backend = backend;
    o.sheet = sheet;
    WireCapture capture;
    Pipeline(o).run(scanner, {&capture});
    return std::move(capture.messages);
  }

  // The heads' transforms into the world (the scenes' truth frame) from the
  // truth, written by hand (docs/measure.md): head A's calibrated X is truth
  // X - x_origin (the calibration's gauge, docs/calibration.md); head B sees
  // the world's X at kHeadBOriginMm - x and the motion reversed.
  static HeadTransforms truth_transforms() {
    auto num = [](double v) {
      char s[40];
      std::snprintf(s, sizeof s, "%.17g", v);
      return std::string(s);
    };
    const std::string text = "[alignment]\nformat = \"stripeline-head-transforms\"\nversion = 1\n"
                             "[[head]]\nname = \"a\"\nrotation = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]\ntranslation = [" +
                             num(x_origin_) + ", 0.0, 0.0]\n[[head]]\nname = \"b\"\nrotation = [-1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 1.0]\ntranslation = [" +
                             num(kHeadBOriginMm - x_origin_) + ", 0.0, 0.0]\n";
    return parse_head_transforms(text, "two-heads.toml");
  }

  // The heads' messages merged (the real merge, keyed by the shared encoder,
  // the mean where both see a cell; the transforms `align` found) and the
  // merged rows measured by the job.
  // heads: indices into `scans` and the aligned transforms; masks: each
  // merged row's head mask.
  static std::vector<PartResult> merge_and_measure(const std::vector<std::vector<wire::Decoded>>& scans, const std::vector<int>& heads,
                                                   const std::string& job_text, double pitch, std::vector<std::uint64_t>* masks = nullptr,
                                                   double grid_mm = 0.05) {
    const HeadTransforms& all = *aligned_;
    MergeConfig c;
    for (int h : heads) c.heads.push_back(all.heads[static_cast<std::size_t>(h)]);
    c.align = AlignKey::Encoder;
    c.grid = {-60.0, 60.0, grid_mm, 0, kernels::RectifyRule::Mean};
    c.overlap = OverlapRule::Mean;

    const measure::Job job = measure::parse_job(job_text, "two-heads-job.toml");
    std::vector<PartResult> out;
    measure::PartDetector* self = nullptr;
    measure::PartDetector detector(job.detection, pitch, "mm", [&](Part&& p) {
      out.push_back(measure::measure_part(job, p));
      self->recycle(std::move(p));
    });
    self = &detector;
    MeasureRow row;
    Merger merger(c, [&](const MergedBlock& b) {  // each merged row's filled cells are its points, at the cells' centres
      for (int r = 0; r < b.rows.rows; ++r) {
        measure::grid_row(b.rows.z.data() + static_cast<std::size_t>(r) * b.rows.width, b.rows.width, c.grid.x_min, c.grid.dx, row);
        row.frame = b.rows.frame_ids[static_cast<std::size_t>(r)];
        row.y = b.y_mm[static_cast<std::size_t>(r)];
        row.encoder = b.rows.encoder[static_cast<std::size_t>(r)].value_or(0);
        row.has_encoder = b.rows.encoder[static_cast<std::size_t>(r)].has_value();
        if (masks) masks->push_back(b.heads[static_cast<std::size_t>(r)]);
        detector.push(row);
      }
    });
    const auto now = Merger::Clock::now();
    std::size_t longest = 0;
    for (int h : heads) longest = std::max(longest, scans[static_cast<std::size_t>(h)].size());
    for (std::size_t k = 0; k < longest; ++k)
      for (std::size_t i = 0; i < heads.size(); ++i)
        if (k < scans[static_cast<std::size_t>(heads[i])].size()) merger.on_message(static_cast<int>(i), scans[static_cast<std::size_t>(heads[i])][k], now);
    EXPECT_TRUE(merger.all_ended());
    const MergeCounters k = merger.counters();
    for (std::size_t i = 0; i < heads.size(); ++i) {
      EXPECT_EQ(k.heads[i].merged, k.heads[i].received) << "head " << heads[i];
      EXPECT_EQ(k.heads[i].absent, 0u) << "head " << heads[i];
    }
    detector.finish();
    return out;
  }

  static inline CalibrationFile* cal_ = nullptr;
  static inline HeadTransforms* aligned_ = nullptr;
  static inline double x_origin_ = 0;
};

// The reversed head's truth is the scene mirrored, and the occlusion changes
// sides: where head A sees no point of the ball (behind its top, Y 27.6),
// head B sees the ball's slope, and the other way round at Y 12.4.
TEST_F(TwoHeads, ReversedSceneMirrorsTheWorldAndTheOcclusion) {
  const PartsPreset preset = parts_preset("sphere");
  auto world = std::make_shared<PartsScene>(preset.config);
  auto mirrored = std::make_shared<ReversedScene>(world, kHeadBOriginMm);
  for (double x : {-7.0, -2.5, 0.0, 3.0, 6.5})
    for (double dy : {-1.0, 0.0, 2.0}) EXPECT_EQ(mirrored->height(100, x, dy), world->height(100, kHeadBOriginMm - x, -dy)) << x << " " << dy;
  std::vector<double> a, b;
  world->breaks(100, a);
  mirrored->breaks(100, b);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(b[i], kHeadBOriginMm - a[a.size() - 1 - i]);
  EXPECT_NE(mirrored->describe().find("180 deg"), std::string::npos);
  // Head B's transform: a rotation the transforms file takes, written back
  // as such (its comment says the turn is about Z, not in the laser plane).
  const HeadTransforms tf = truth_transforms();
  const std::string text = format_head_transforms(tf);
  EXPECT_NE(text.find("# turn about Z 180 degrees"), std::string::npos) << text;
  EXPECT_NE(text.find("# in-plane turn 0 degrees"), std::string::npos) << text;
  const HeadTransforms back = parse_head_transforms(text, "back.toml");
  for (int i = 0; i < 9; ++i) EXPECT_EQ(back.heads[1].r[i], tf.heads[1].r[i]);
  double wx, wy, wz;
  back.heads[1].apply(2.0, -3.0, 4.0, wx, wy, wz);
  EXPECT_DOUBLE_EQ(wx, kHeadBOriginMm - x_origin_ - 2.0);
  EXPECT_DOUBLE_EQ(wy, 3.0);
  EXPECT_DOUBLE_EQ(wz, 4.0);

  TriangulationScanner head_a(test::sensor_config(preset.frames), world), head_b(test::sensor_config(preset.frames), mirrored);
  // Columns whose stripe lies on the ball (above the conveyor), and the
  // truth of head B's points against the world's surface.
  auto on_ball = [](const StripeTruth& t) {
    int n = 0;
    for (double z : t.z) n += std::isfinite(z) && z > 0.05;
    return n;
  };
  for (std::uint64_t frame : {std::uint64_t{62}, std::uint64_t{138}}) {  // Y 12.4 and 27.6: the ball's ends
    const StripeTruth ta = head_a.truth(frame), tb = head_b.truth(frame);
    const bool far_end = frame == 138;
    std::printf("[ measure ] Y %.1f: stripe columns on the ball: head A %d (hidden columns %d), head B %d (hidden %d)\n", world->y_of(frame), on_ball(ta),
                ta.hidden, on_ball(tb), tb.hidden);
    EXPECT_EQ(on_ball(far_end ? ta : tb), 0) << frame;  // the camera looking at the ball's back sees none of its stripe
    EXPECT_GT(on_ball(far_end ? tb : ta), 20) << frame;
    EXPECT_GT((far_end ? ta : tb).hidden, 20) << frame;
    for (std::size_t c = 0; c < tb.x.size(); ++c)
      if (std::isfinite(tb.z[c])) EXPECT_NEAR(tb.z[c], world->height_at(mirrored->inner_x(tb.x[c]), world->y_of(frame)), 1e-9) << c;
  }
}

// `align --reversed` finds head B's transform from its scan of the common
// target: the world points it gives are the truth's (hand-written from the
// simulator's geometry) within 0.02 mm, as for a head facing forward.
TEST_F(TwoHeads, AlignFindsTheReversedHeadsTransform) {
  const HeadTransforms truth = truth_transforms();
  ASSERT_EQ(aligned_->heads.size(), 2u);
  for (std::size_t h = 0; h < 2; ++h) {
    const HeadTransform &found = aligned_->heads[h], &want = truth.heads[h];
    double worst = 0;
    for (double x = -25.0; x <= 25.0; x += 5.0)
      for (double z = 0.0; z <= 10.0; z += 2.5) {
        double fx, fy, fz, wx, wy, wz;
        found.apply(x, 0.0, z, fx, fy, fz);
        want.apply(x, 0.0, z, wx, wy, wz);
        worst = std::max({worst, std::abs(fx - wx), std::abs(fz - wz)});
        EXPECT_EQ(fy, wy);
      }
    std::printf("[ measure ] align head %s: R [%g %g %g; %g %g %g; %g %g %g], t (%.4f, %.4f, %.4f) mm, RMS %.4f mm; against the truth %.4f mm at worst\n",
                found.name.c_str(), found.r[0], found.r[1], found.r[2], found.r[3], found.r[4], found.r[5], found.r[6], found.r[7], found.r[8], found.t[0],
                found.t[1], found.t[2], found.residual_rms_mm, worst);
    EXPECT_LT(worst, 0.02) << found.name;
    EXPECT_LT(found.residual_rms_mm, 0.02) << found.name;
  }
  EXPECT_EQ(aligned_->heads[1].r[4], -1.0);  // the motion runs the other way in head B's frame
  // Without --reversed the mirrored head's fit is wrong (or refused).
  const CalibrationTarget steps = load_target(test::target_path("align-steps.toml"));
  TriangulationScanner b(test::sensor_config(6), std::make_shared<ReversedScene>(std::make_shared<test::ProfileScene>(steps.profile), kHeadBOriginMm));
  const std::vector<PlanePoint> pts = target_scan_points(b, *cal_, 0, 428);
  try {
    const AlignResult r = align_to_target(pts, steps, "b");
    EXPECT_GT(std::abs(r.transform.t[0] - aligned_->heads[1].t[0]) + r.rms_mm, 0.1);
  } catch (const InputError&) {
  }
}

// The same through the command: `stripeline align ... --reversed b` writes
// the transforms the fit above found; --reversed naming no head is refused.
TEST_F(TwoHeads, AlignCommandTakesAReversedHead) {
  test::TempDir dir;
  const CalibrationTarget steps = load_target(test::target_path("align-steps.toml"));
  auto profile = std::make_shared<test::ProfileScene>(steps.profile);
  const std::string out = (dir.path() / "t.toml").string();
  std::string args = "align -q --target " + test::target_path("align-steps.toml") + " -H 256 -o " + out;
  save_calibration(dir.path() / "cal.toml", *cal_);
  for (const char* name : {"a", "b"}) {
    std::shared_ptr<const TriangulationScene> scene = profile;
    if (name[0] == 'b') scene = std::make_shared<ReversedScene>(scene, kHeadBOriginMm);
    TriangulationScanner scanner(test::sensor_config(6), scene);
    const BatchLayout layout = scanner.frame_layout();
    std::vector<std::uint8_t> image(layout.frame_pixels() * 6);
    for (std::uint64_t f = 0; f < 6; ++f) scanner.render(f, reinterpret_cast<std::byte*>(image.data() + f * layout.frame_pixels()));
    const auto rec = dir.path() / (std::string(name) + ".tiff");
    io::write_image(rec, image.data(), layout.width, 6 * layout.frame_height, PixelFormat::Mono8);
    args += std::string(" --head ") + name + "=" + rec.string() + "," + (dir.path() / "cal.toml").string() + ",0,428";
  }
  std::string msg;
  EXPECT_EQ(test::run_cli(args + " --reversed c", &msg), 2) << msg;
  EXPECT_NE(msg.find("--reversed c: no --head of that name"), std::string::npos) << msg;
  EXPECT_FALSE(std::filesystem::exists(out));
  ASSERT_EQ(test::run_cli(args + " --reversed b", &msg), 0) << msg;
  const HeadTransforms t = load_head_transforms(out);
  ASSERT_EQ(t.heads.size(), 2u);
  for (std::size_t h = 0; h < 2; ++h) {
    for (int i = 0; i < 9; ++i) EXPECT_NEAR(t.heads[h].r[i], aligned_->heads[h].r[i], 1e-9) << h << " " << i;
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(t.heads[h].t[i], aligned_->heads[h].t[i], 1e-9) << h << " " << i;
  }
}

// The acceptance: the whole cap within 0.5 %, by two heads facing each other.
TEST_F(TwoHeads, SphereCapWholeFromTwoHeadsFacingEachOther) {
  const PartsPreset preset = parts_preset("sphere");
  const std::vector<std::vector<wire::Decoded>> scans = {scan(preset, false), scan(preset, true)};
  const std::string region = "region = { anchor = \"scan\", x = [-10, 10] }\n";
  const std::string job = "[[tool]]\nname = \"vol\"\ntype = \"volume\"\n" + region + "[[tool]]\nname = \"h\"\ntype = \"height\"\n" + region;
  const double cap = 7.0, r = 8.0, truth = kPi * cap * cap * (3 * r - cap) / 3;
  const double step = preset.config.y_step_mm;

  std::vector<std::uint64_t> masks;
  const auto merged = merge_and_measure(scans, {0, 1}, job, step, &masks);
  const auto only_a = merge_and_measure(scans, {0}, job, step);
  const auto only_b = merge_and_measure(scans, {1}, job, step);
  ASSERT_EQ(merged.size(), 1u);
  ASSERT_EQ(only_a.size(), 1u);
  ASSERT_EQ(only_b.size(), 1u);
  ASSERT_EQ(masks.size(), preset.frames);
  for (std::uint64_t m : masks) EXPECT_EQ(m, 3u);  // every merged row has both heads (one encoder)

  auto report = [&](const char* what, const PartResult& p) {
    const double vol = p.tools[0].value("volume"), top = p.tools[1].value("max");
    std::printf("[ measure ] sphere cap (r 8, 7 mm high, %.2f mm^3), %s: volume %.2f (error %+.3f %%), rows Y %.1f..%.1f, top %+.2f um\n", truth, what, vol,
                (vol / truth - 1) * 100, p.y_first, p.y_last, (top - cap) * 1000);
    return vol;
  };
  const double vol = report("heads A and B merged (0.05 mm grid)", merged[0]);
  const double vol_a = report("head A alone (same grid)", only_a[0]);
  const double vol_b = report("head B alone (reversed; same grid)", only_b[0]);
  const auto coarse = merge_and_measure(scans, {0, 1}, job, step, nullptr, 0.1);
  ASSERT_EQ(coarse.size(), 1u);
  const double vol_coarse = report("heads A and B merged (0.1 mm grid)", coarse[0]);
  EXPECT_NEAR(vol_coarse / truth, 1.0, 0.005);
  EXPECT_NEAR(vol / truth, 1.0, 0.005);
  EXPECT_NEAR(merged[0].tools[1].value("max"), cap, 0.010);
  // Each head alone misses the end of the ball behind its top: A the far
  // end (Y > 27), B the near end (Y < 13).
  EXPECT_LT(vol_a / truth, 0.995);
  EXPECT_LT(vol_b / truth, 0.995);
  EXPECT_LT(only_a[0].y_last, merged[0].y_last - 0.5);
  EXPECT_GT(only_b[0].y_first, merged[0].y_first + 0.5);
}

// Prismatic parts: what the second head changes on the gauge blocks (steps,
// volumes) and the panels (gap and flush); the goals hold on the merged scan.
TEST_F(TwoHeads, GaugeBlocksAndPanelsFromTwoHeads) {
  auto xs = [](double a, double b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; };
  const double x0[4] = {-42.0, -22.0, -2.0, 18.0}, h[4] = {1.0, 2.0, 5.0, 10.0};
  std::string job;
  for (int i = 0; i < 4; ++i) {
    const double belt = i == 0 ? x0[0] + 13.5 : x0[i] - 6.5;
    job += "[[tool]]\nname = \"step" + std::to_string(i) + "\"\ntype = \"step\"\na = { anchor = \"scan\", x = " + xs(belt, belt + 5) +
           ", y = [8, 32] }\nb = { anchor = \"scan\", x = " + xs(x0[i] + 1.5, x0[i] + 10.5) + ", y = [8, 32] }\n";
    job += "[[tool]]\nname = \"vol" + std::to_string(i) + "\"\ntype = \"volume\"\nregion = { anchor = \"scan\", x = " + xs(x0[i] - 1, x0[i] + 13.2) + " }\n";
  }
  const PartsPreset blocks = parts_preset("gauge-blocks");
  const std::vector<std::vector<wire::Decoded>> scans = {scan(blocks, false), scan(blocks, true)};
  for (const auto& [what, heads] : {std::pair<const char*, std::vector<int>>{"A and B merged", {0, 1}}, {"A alone", {0}}, {"B alone", {1}}}) {
    const auto parts = merge_and_measure(scans, heads, job, blocks.config.y_step_mm);
    ASSERT_EQ(parts.size(), 1u) << what;
    for (int i = 0; i < 4; ++i) {
      const double step = parts[0].tools[2 * i].value("step"), vol = parts[0].tools[2 * i + 1].value("volume"), truth = 12.0 * 30.0 * h[i];
      std::printf("[ measure ] gauge block %g mm, %s: step error %+.2f um, volume error %+.3f %%\n", h[i], what, (step - h[i]) * 1000, (vol / truth - 1) * 100);
      if (heads.size() == 2) {  // the goals (issue 28) hold on the merged scan
        EXPECT_NEAR(step, h[i], 0.010) << i;
        EXPECT_NEAR(vol / truth, 1.0, 0.005) << i;
      }
    }
  }
  const PartsPreset panels = parts_preset("panels");
  const std::vector<std::vector<wire::Decoded>> pscans = {scan(panels, false), scan(panels, true)};
  const std::string pjob = "[[tool]]\nname = \"gf\"\ntype = \"gap_flush\"\nregion = { anchor = \"scan\", x = " + xs(-8, 8) +
                           ", y = [8, 32] }\na = { anchor = \"scan\", x = " + xs(-20, -4) + ", y = [8, 32] }\nb = { anchor = \"scan\", x = " + xs(4, 20) +
                           ", y = [8, 32] }\nedge_depth = 2.5\n";
  for (const auto& [what, heads] : {std::pair<const char*, std::vector<int>>{"A and B merged", {0, 1}}, {"A alone", {0}}, {"B alone", {1}}}) {
    const auto parts = merge_and_measure(pscans, heads, pjob, panels.config.y_step_mm);
    ASSERT_EQ(parts.size(), 1u) << what;
    const auto& t = parts[0].tools[0];
    std::printf("[ measure ] panels (gap 2.2, flush 0.3 mm), %s: gap %+.2f um, flush %+.2f um\n", what, (t.value("gap") - 2.2) * 1000,
                (t.value("flush") - 0.3) * 1000);
    if (heads.size() == 2) {
      EXPECT_NEAR(t.value("gap"), 2.2, 0.020);
      EXPECT_NEAR(t.value("flush"), 0.3, 0.020);
    }
  }
}

// On the CUDA backend both heads send the CPU's points, bit for bit (the
// calibrated points are computed by the same integer and float code), so the
// merged sphere measures the same. Skips without a usable GPU.
class TwoHeadsCuda : public TwoHeads {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no usable GPU: " << cuda_status();
  }
};

TEST_F(TwoHeadsCuda, BothHeadsSendTheCpuPointsAndTheSphereMeasuresTheSame) {
  const PartsPreset preset = parts_preset("sphere");
  std::vector<std::vector<wire::Decoded>> cpu, gpu;
  for (bool reversed : {false, true}) {
    cpu.push_back(scan(preset, reversed));
    gpu.push_back(scan(preset, reversed, Backend::Cuda));
    std::vector<float> a, b;
    std::vector<double> ya, yb;
    for (const auto& m : cpu.back())
      if (m.rows) a.insert(a.end(), m.rows->points.begin(), m.rows->points.end()), ya.insert(ya.end(), m.rows->motion_y.begin(), m.rows->motion_y.end());
    for (const auto& m : gpu.back())
      if (m.rows) b.insert(b.end(), m.rows->points.begin(), m.rows->points.end()), yb.insert(yb.end(), m.rows->motion_y.begin(), m.rows->motion_y.end());
    ASSERT_EQ(a.size(), b.size()) << reversed;
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "head " << (reversed ? "B" : "A") << ": points differ";
    EXPECT_EQ(ya, yb) << reversed;
  }
  const std::string job = "[[tool]]\nname = \"vol\"\ntype = \"volume\"\nregion = { anchor = \"scan\", x = [-10, 10] }\n";
  const auto c = merge_and_measure(cpu, {0, 1}, job, preset.config.y_step_mm), g = merge_and_measure(gpu, {0, 1}, job, preset.config.y_step_mm);
  ASSERT_EQ(c.size(), 1u);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(c[0].tools[0].value("volume"), g[0].tools[0].value("volume"));
  std::printf("[ measure ] sphere cap, two heads on the CUDA backend: volume %.4f mm^3 (CPU %.4f)\n", g[0].tools[0].value("volume"),
              c[0].tools[0].value("volume"));
}

}  // namespace
}  // namespace stripeline
