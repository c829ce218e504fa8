// Measurement (docs/measure.md): part detection and the tools, first on rows
// made by hand (the definitions, exactly), then on the synthetic
// triangulation scanner's parts with truth, calibrated like every scan
// (docs/calibration.md): the accuracy the docs quote is asserted here.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "calibration_fixtures.h"
#include "core/errors.h"
#include "measure/geometry.h"
#include "measure/job.h"
#include "measure/measure_sink.h"
#include "measure/part_detector.h"
#include "measure/records.h"
#include "measure/tools.h"
#include "pipeline/pipeline.h"
#include "gpu_test.h"
#if STRIPELINE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda/check.h"
#include "core/cuda/runtime.h"
#include "kernels/cuda/volume_kernels.h"
#endif

namespace stripeline {
namespace {

using measure::Decision;
using measure::Job;
using measure::MeasureRow;
using measure::Part;
using measure::PartResult;

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A row of `n` points from x0 step dx, heights from f(x).
template <typename F>
MeasureRow row_of(std::uint64_t frame, double y, double x0, double dx, int n, F&& f) {
  MeasureRow r;
  r.frame = frame;
  r.y = y;
  for (int i = 0; i < n; ++i) {
    const double x = x0 + i * dx;
    r.x.push_back(static_cast<float>(x));
    r.z.push_back(static_cast<float>(f(x, y)));
  }
  return r;
}

std::vector<Part> detect(const measure::DetectionSettings& s, const std::vector<MeasureRow>& rows, double pitch) {
  std::vector<Part> parts;
  measure::PartDetector d(s, pitch, "mm", [&](Part&& p) { parts.push_back(std::move(p)); });
  for (auto r : rows) d.push(r);
  d.finish();
  return parts;
}

// Boxes of height 3 at y in [starts[i], ends[i]), on a belt z = 0.1 + 0.01 x, rows every 0.5 mm.
std::vector<MeasureRow> boxes(const std::vector<std::pair<double, double>>& spans, double y_end) {
  std::vector<MeasureRow> rows;
  std::uint64_t f = 0;
  for (double y = 0; y < y_end; y += 0.5, ++f)
    rows.push_back(row_of(f, y, -10, 0.1, 201, [&](double x, double yy) {
      for (const auto& [a, b] : spans)
        if (yy >= a && yy < b && x > -3 && x < 3) return 3.0;
      return 0.1 + 0.01 * x;
    }));
  return rows;
}

TEST(MeasureDetection, ContinuousPartsEndAfterTheGapAndShortRunsAreDropped) {
  measure::DetectionSettings s;
  s.gap_length = 2.0;
  s.min_length = 2.0;
  // 10..20 and 25..30 are parts; 40..41 is too short; 50..52 and 53..56 are one (a 1 mm gap).
  const auto rows = boxes({{10, 20}, {25, 30}, {40, 41}, {50, 52}, {53, 56}}, 70);
  const auto parts = detect(s, rows, 0.5);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_DOUBLE_EQ(parts[0].y_start(), 10.0);
  EXPECT_DOUBLE_EQ(parts[0].y_end(), 19.5);
  EXPECT_DOUBLE_EQ(parts[0].length(), 10.0);
  EXPECT_DOUBLE_EQ(parts[1].y_start(), 25.0);
  EXPECT_DOUBLE_EQ(parts[2].y_start(), 50.0);
  EXPECT_DOUBLE_EQ(parts[2].y_end(), 55.5);
  EXPECT_EQ(parts[2].id, 3u);
  EXPECT_NEAR(parts[0].box.x_min, -2.9, 1e-5);
  EXPECT_NEAR(parts[0].box.x_max, 2.9, 1e-5);
}

TEST(MeasureDetection, MaxLengthCutsAndFixedLengthRearms) {
  measure::DetectionSettings s;
  s.max_length = 4.0;
  auto parts = detect(s, boxes({{10, 20}}, 30), 0.5);
  ASSERT_EQ(parts.size(), 3u);  // 10..14, 14..18 (cut), 18..20
  EXPECT_TRUE(parts[0].cut);
  EXPECT_TRUE(parts[1].cut);
  EXPECT_FALSE(parts[2].cut);
  EXPECT_DOUBLE_EQ(parts[1].y_start(), 14.0);
  s = {};
  s.mode = measure::DetectionMode::FixedLength;
  s.length = 3.0;
  parts = detect(s, boxes({{10, 20}, {25, 26}}, 30), 0.5);
  ASSERT_EQ(parts.size(), 2u);  // one from 10 (3 mm), none until the box ends, one from 25
  EXPECT_DOUBLE_EQ(parts[0].y_start(), 10.0);
  EXPECT_DOUBLE_EQ(parts[0].length(), 3.0);
  EXPECT_DOUBLE_EQ(parts[1].y_start(), 25.0);
}

TEST(MeasureDetection, EncoderModeCutsAtFixedPlacesWhateverTheHeight) {
  measure::DetectionSettings s;
  s.mode = measure::DetectionMode::Encoder;
  s.start = 2.0;
  s.pitch = 10.0;
  s.length = 4.0;
  const auto parts = detect(s, boxes({}, 30), 0.5);
  ASSERT_EQ(parts.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(parts[i].y_start(), 2.0 + 10 * i);
    EXPECT_DOUBLE_EQ(parts[i].length(), 4.0);
  }
}

TEST(MeasureDetection, BeltReferenceFollowsATiltedBelt) {
  measure::DetectionSettings s;
  s.reference = measure::ReferenceKind::Belt;
  s.threshold = 0.3;
  // Belt z = 0.1 + 0.01 x: at x = -10 and 10 it is 0.2 off a flat zero. A
  // fixed reference at 0 with threshold 0.15 would see a part everywhere.
  const auto parts = detect(s, boxes({{10, 20}}, 30), 0.5);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_NEAR(parts[0].reference.a, 0.1, 1e-6);
  EXPECT_NEAR(parts[0].reference.b, 0.01, 1e-6);
}

Part one_part(std::vector<MeasureRow> rows) {
  Part p;
  p.id = 1;
  p.rows = std::move(rows);
  p.row_pitch = 0.5;
  p.box.x_min = -10;
  p.box.x_max = 10;
  return p;
}

PartResult run_job(const std::string& toml, const Part& p) { return measure::measure_part(measure::parse_job(toml, "t.toml"), p); }

// docs/measure.md "Holes in a row": a hole whose higher side slopes down into
// it is filled by the parabola leaving that side with its slope; a hole beside
// a flat top (a shadow beside a step) stays a step.
TEST(MeasureGeometry, AHoleOnASlopeIsAParabolaAndAShadowBesideAStepIsAStep) {
  std::vector<float> x;
  std::vector<double> h;
  for (int i = 0; i <= 20; ++i) x.push_back(0.05f * static_cast<float>(i));          // 0 .. 1
  for (int i = 0; i <= 4; ++i) x.push_back(2.0f + 0.05f * static_cast<float>(i));    // 2 .. 2.2: a hole from 1 to 2
  for (float v : x) h.push_back(10.0 - static_cast<double>(v) * v);                   // a cap: 10 - x^2
  measure::Joining j;
  j.spacing = 0.05;
  const long hole = 20;
  const double slope = measure::ramp_slope(x.data(), h.data(), 0, static_cast<long>(x.size()), hole);
  EXPECT_NEAR(slope, 1.9, 1e-5);  // (h(1) - h(0.9)) / 0.1
  const double dx = static_cast<double>(x[hole + 1]) - x[hole], exact = 10.0 - 7.0 / 3.0;  // the integral of 10 - x^2 over [1, 2]
  const double filled = measure::positive_area(h[hole], h[hole + 1], dx, j, slope);
  EXPECT_NEAR(filled, exact, 0.02);
  EXPECT_LT(measure::positive_area(h[hole], h[hole + 1], dx, j), exact - 1.5);  // the step fill: the lower side's 6 almost all the way
  // A flat top beside the hole (a block's shadow): no ramp, the step.
  for (long i = 0; i <= hole; ++i) h[static_cast<std::size_t>(i)] = 5.0;
  for (std::size_t i = hole + 1; i < h.size(); ++i) h[i] = 0.0;
  EXPECT_TRUE(std::isnan(measure::ramp_slope(x.data(), h.data(), 0, static_cast<long>(x.size()), hole)));
  EXPECT_NEAR(measure::positive_area(h[hole], h[hole + 1], dx, j), 5.0 * 0.025, 1e-9);
}

TEST(MeasureTools, DefinitionsOnExactRows) {
  // Points every 0.05 mm from -10: left surface z = 1 up to x = -1.05, right
  // z = 1.25 from x = 1.55, floor 0 between.
  std::vector<MeasureRow> rows;
  for (int f = 0; f < 20; ++f)
    rows.push_back(row_of(f, f * 0.5, -10, 0.05, 401, [](double x, double) { return x < -1.02 ? 1.0 : x > 1.52 ? 1.25 : 0.0; }));
  const Part p = one_part(rows);
  const PartResult r = run_job(R"(
[[tool]]
name = "gf"
type = "gap_flush"
region = { anchor = "scan", x = [-5, 5] }
a = { anchor = "scan", x = [-8, -2] }
b = { anchor = "scan", x = [2.5, 8] }
limits = { gap = [2.4, 2.6], flush = [0.3, 0.4] }
[[tool]]
name = "st"
type = "step"
a = { anchor = "scan", x = [-0.8, 1.3] }
b = { x = [0.5, 4] }
[[tool]]
name = "gr"
type = "groove"
level = 0.5
region = { anchor = "scan", x = [-5, 5] }
[[tool]]
name = "vol"
type = "volume"
region = { anchor = "gr", x = [-1.5, 1.5] }
[[tool]]
name = "h"
type = "height"
region = { anchor = "scan", x = [2, 9], y = [1, 3] }
)",
                                p);
  ASSERT_EQ(r.tools.size(), 5u);
  // Edges where each surface drops 0.5 below its plane: the left one between
  // -1.05 (h 0) and -1.0 (h -1): -1.025; the right one between 1.55 (h 0)
  // and 1.50 (h -1.25): 1.55 - 0.05 * 0.5 / 1.25 = 1.53.
  EXPECT_NEAR(r.tools[0].value("gap"), 1.53 + 1.025, 1e-5);
  EXPECT_NEAR(r.tools[0].value("flush"), 0.25, 1e-6);
  EXPECT_EQ(r.tools[0].value_decisions[0], Decision::Pass);
  EXPECT_EQ(r.tools[0].value_decisions[1], Decision::Fail);  // flush 0.25 outside [0.3, 0.4]
  EXPECT_EQ(r.tools[0].decision, Decision::Fail);
  EXPECT_EQ(r.decision, Decision::Fail);
  // b from the part's x_min (-10): [-9.5, -6], z = 1, over a's floor.
  EXPECT_NEAR(r.tools[1].value("step"), 1.0, 1e-6);
  EXPECT_EQ(r.tools[1].decision, Decision::None);
  // Groove at level 0.5: falling at -1.025, rising at 1.50 + 0.05 * 0.5 / 1.25 = 1.52.
  EXPECT_NEAR(r.tools[2].value("width"), 1.52 + 1.025, 1e-5);
  EXPECT_NEAR(r.tools[2].value("x"), 0.5 * (1.52 - 1.025), 1e-5);
  EXPECT_NEAR(r.tools[2].value("depth"), (80 * 1.0 + 70 * 1.25) / 150, 1e-3);
  // Anchored on the groove: [x - 1.5, x + 1.5] = [-1.2525, 1.7475]; per row
  // 0.2 + 0.025 (left) + 0.03125 + 0.1875 (right) mm^2, 20 rows of 0.5 mm.
  EXPECT_NEAR(r.tools[3].value("volume"), 0.44375 * 10, 1e-4);
  EXPECT_NEAR(r.tools[4].value("mean"), 1.25, 1e-6);
  EXPECT_GE(r.tools[4].points, 5u * 139u);  // rows y = 1 .. 3, x = 2 .. 9
  EXPECT_LE(r.tools[4].points, 5u * 141u);
}

TEST(MeasureTools, VolumeFlatnessAndRowToolsOnAKnownSurface) {
  // A ridge z = 2 - |x| for |x| < 2 (cross-section area 4), on z = 0; plus a plane
  // z = 0.1 x + 0.02 y with a 0.01 ripple where x > 5.
  std::vector<MeasureRow> rows;
  for (int f = 0; f < 40; ++f)
    rows.push_back(row_of(f, f * 0.5, -10, 0.01, 2001, [](double x, double y) {
      if (x > 5) return 0.1 * x + 0.02 * y + ((static_cast<long>(std::lround(x * 100)) % 2) ? 0.01 : -0.01);
      return std::max(0.0, 2 - std::abs(x));
    }));
  const PartResult r = run_job(R"(
[[tool]]
name = "v"
type = "volume"
region = { anchor = "scan", x = [-4, 4] }
level = 1
limits = { volume = [79, 81] }
[[tool]]
name = "f"
type = "flatness"
region = { anchor = "scan", x = [5.5, 9.5] }
[[tool]]
name = "w"
type = "row_width"
level = 1
region = { anchor = "scan", x = [-4, 4] }
[[tool]]
name = "rs"
type = "row_step"
a = { anchor = "scan", x = [-4, -3] }
b = { anchor = "scan", x = [-0.005, 0.005] }
)",
                               one_part(rows));
  EXPECT_NEAR(r.tools[0].value("volume"), 4.0 * 20.0, 1e-3);  // 40 rows x 0.5 mm
  EXPECT_NEAR(r.tools[0].value("area"), 2.0 * 20.0, 1e-3);    // above 1: |x| < 1
  EXPECT_EQ(r.tools[0].decision, Decision::Pass);
  EXPECT_NEAR(r.tools[1].value("rms"), 0.01 / std::sqrt(1 + 0.01 + 0.0004), 2e-4);
  EXPECT_NEAR(r.tools[1].value("max"), 0.01, 2e-4);
  EXPECT_NEAR(r.tools[2].value("mean"), 2.0, 1e-4);
  EXPECT_NEAR(r.tools[3].value("mean"), 2.0, 1e-4);
}

// A volume joins every hole in its region unless the job says otherwise;
// the other tools keep 2 mm (docs/measure.md, "Holes in a row").
TEST(MeasureJob, VolumeJoinsEveryHoleUnlessToldOtherwise) {
  const Job j = measure::parse_job("[[tool]]\nname = \"v\"\ntype = \"volume\"\n[[tool]]\nname = \"w\"\ntype = \"volume\"\nmax_spacing = 3.5\n"
                                   "[[tool]]\nname = \"e\"\ntype = \"edge\"\nlevel = 1.0\nregion = { x = [0, 5] }\n",
                                   "j.toml");
  ASSERT_EQ(j.tools.size(), 3u);
  EXPECT_TRUE(std::isinf(j.tools[0].max_spacing));
  EXPECT_EQ(j.tools[1].max_spacing, 3.5);
  EXPECT_EQ(j.tools[2].max_spacing, 2.0);
}

TEST(MeasureJob, BadKeysAndValuesNameTheKey) {
  auto message = [](const std::string& text) {
    try {
      measure::parse_job(text, "job.toml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string tool = "[[tool]]\nname = \"s\"\ntype = \"step\"\na = { x = [0, 1] }\nb = { x = [2, 3] }\n";
  EXPECT_EQ(message("[detection]\nthreshold = -1\n" + tool), "job.toml: detection.threshold: -1 (expected a number > 0)");
  EXPECT_EQ(message("[detection]\nmode = \"sometimes\"\n" + tool),
            "job.toml: detection.mode: 'sometimes' (expected continuous, fixed-length or encoder)");
  EXPECT_EQ(message("[detection]\nthreshhold = 1\n" + tool), "job.toml: detection.threshhold: unknown key");
  EXPECT_EQ(message(tool + "limits = { hieght = [0, 1] }\n"), "job.toml: tool[0].limits.hieght: not a value of a step tool (expected step)");
  EXPECT_EQ(message(tool + "limits = { step = [2, 1] }\n"), "job.toml: tool[0].limits.step: [2, 1] (expected [min, max], min <= max)");
  EXPECT_EQ(message("[[tool]]\nname = \"e\"\ntype = \"edge\"\nregion = { x = [0, 1] }\n"), "job.toml: tool[0].level: missing");
  EXPECT_EQ(message("[[tool]]\nname = \"h\"\ntype = \"height\"\nregion = { anchor = \"nowhere\", x = [0, 1] }\n"),
            "job.toml: tool[0].region: anchor 'nowhere' (expected \"part\", \"scan\" or the name of an earlier edge or groove tool)");
  EXPECT_EQ(message("[[tool]]\nname = \"h\"\ntype = \"height\"\nregion = { x = [1, 0] }\n"), "job.toml: tool[0].region.x: [1, 0] (expected x0 < x1)");
  EXPECT_EQ(message("[job]\nunits = \"inch\"\n" + tool), "job.toml: job.units: 'inch' (expected mm or px)");
  EXPECT_EQ(message(""), "job.toml: (file).tool: missing (expected at least one [[tool]])");
  EXPECT_EQ(message("[detection]\nmode = \"encoder\"\nlength = 5\n" + tool), "job.toml: detection.pitch: missing (mode encoder needs the pitch between parts)");
  EXPECT_NE(message("[[tool]\n").find("job.toml:1:"), std::string::npos);
}

}  // namespace
}  // namespace stripeline

// ---------------------------------------------------------------------------
// The synthetic scanner's parts, calibrated (the calibration's own recording
// and fit, as tests/test_calibration.cpp makes them), scanned through the CPU
// pipeline into the measuring sink.

namespace stripeline {
namespace {

class MeasureSynthetic : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const CalibrationTarget target = load_target(test::target_path("sawtooth.toml"));
    auto rec = test::target_recording(target, 30, 0.0, 0.0);
    model_ = new SheetOfLightModel(calibrate(*rec, target, test::calibrate_options(rec->config())).file.model);
    x_origin_ = test::truth_x_origin(rec->camera());
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  // Calibrated X of a truth X, as TOML text.
  static std::string X(double truth) { return std::to_string(truth - x_origin_); }
  static std::string xs(double a, double b) { return "[" + X(a) + ", " + X(b) + "]"; }

  // queue_parts > 0: the tools on the sink's worker (the live path's hand-off).
  // parts: where given, the parts themselves too.
  static std::vector<PartResult> scan(const std::string& scene, const std::string& job_text, int queue_parts = 0,
                                      SensorRoi roi = {0, 428, 2048, 256}, std::vector<Part>* parts = nullptr, Backend backend = Backend::Cpu) {
    const PartsPreset preset = parts_preset(scene);
    TriangulationScanner scanner(test::sensor_config(preset.frames, roi), std::make_shared<PartsScene>(preset.config));
    auto sheet = std::make_shared<AppliedCalibration>();
    sheet->model = *model_;
    sheet->model.y_step = preset.config.y_step_mm;
    sheet->model.y_offset = 0.0;
    sheet->roi_x = roi.x;
    sheet->roi_y = roi.y;
    PipelineOptions o;
    o.backend = backend;
    o.sheet = sheet;
    auto job = std::make_shared<const Job>(measure::parse_job(job_text, scene + ".toml"));
    std::vector<PartResult> out;
    measure::MeasureSink sink(
        job,
        [&](const PartResult& r, const Part& p) {
          out.push_back(r);
          if (parts) parts->push_back(p);
        },
        queue_parts);
    Pipeline(o).run(scanner, {&sink});
    EXPECT_EQ(sink.dropped(), 0u);
    return out;
  }
  static inline SheetOfLightModel* model_ = nullptr;
  static inline double x_origin_ = 0;
};

TEST_F(MeasureSynthetic, GaugeBlocksStepsVolumesAndFlatness) {
  const double x0[4] = {-42.0, -22.0, -2.0, 18.0}, h[4] = {1.0, 2.0, 5.0, 10.0};
  std::string job;
  for (int i = 0; i < 4; ++i) {
    const double belt = i == 0 ? x0[0] + 13.5 : x0[i] - 6.5;  // the conveyor beside the block
    job += "[[tool]]\nname = \"step" + std::to_string(i) + "\"\ntype = \"step\"\na = { anchor = \"scan\", x = " + xs(belt, belt + 5) +
           ", y = [8, 32] }\nb = { anchor = \"scan\", x = " + xs(x0[i] + 1.5, x0[i] + 10.5) + ", y = [8, 32] }\n";
    job += "[[tool]]\nname = \"vol" + std::to_string(i) + "\"\ntype = \"volume\"\nregion = { anchor = \"scan\", x = " + xs(x0[i] - 1, x0[i] + 13.2) + " }\n";
    job += "[[tool]]\nname = \"flat" + std::to_string(i) + "\"\ntype = \"flatness\"\nregion = { anchor = \"scan\", x = " + xs(x0[i] + 1.5, x0[i] + 10.5) +
           ", y = [8, 32] }\n";
  }
  const auto parts = scan("gauge-blocks", job);
  ASSERT_EQ(parts.size(), 1u);
  const PartResult& r = parts[0];
  EXPECT_NEAR(r.y_first, 5.2, 1e-9);
  EXPECT_NEAR(r.y_last, 35.0, 1e-9);
  for (int i = 0; i < 4; ++i) {
    const double step = r.tools[3 * i].value("step"), vol = r.tools[3 * i + 1].value("volume"), flat = r.tools[3 * i + 2].value("rms");
    const double vol_truth = 12.0 * 30.0 * h[i];
    std::printf("[ measure ] gauge block %g mm: step error %+.2f um, volume %.2f mm^3 (error %+.3f %%), flatness RMS %.2f um, max %.2f um\n", h[i],
                (step - h[i]) * 1000, vol, (vol / vol_truth - 1) * 100, flat * 1000, r.tools[3 * i + 2].value("max") * 1000);
    EXPECT_NEAR(step, h[i], 0.010) << i;
    EXPECT_NEAR(vol / vol_truth, 1.0, 0.005) << i;
    EXPECT_LT(flat, 0.005) << i;
  }
}

TEST_F(MeasureSynthetic, SphereVolumeAndHeight) {
  const std::string region = "region = { anchor = \"scan\", x = " + xs(-10, 10) + " }\n";
  const auto parts = scan("sphere", "[[tool]]\nname = \"vol\"\ntype = \"volume\"\n" + region + "[[tool]]\nname = \"h\"\ntype = \"height\"\n" + region);
  ASSERT_EQ(parts.size(), 1u);
  const double cap = 7.0, r = 8.0, truth = 3.14159265358979323846 * cap * cap * (3 * r - cap) / 3;
  const double vol = parts[0].tools[0].value("volume"), top = parts[0].tools[1].value("max");
  // The cap within the part's rows (each row stands for its pitch): the rows
  // past the last one (Y 27.1 .. 27.94) have the stripe on the ball hidden
  // from the camera by the ball's top, so no row holds them (docs/measure.md,
  // "Measured accuracy"). Segment area at Y: rc^2 acos(1/rc) - sqrt(rc^2 - 1).
  const double y0 = parts[0].y_first - 0.1, y1 = parts[0].y_last + 0.1;
  double seen = 0;
  const int steps = 20000;
  for (int i = 0; i < steps; ++i) {
    const double y = y0 + (i + 0.5) * (y1 - y0) / steps, rc2 = r * r - (y - 20.0) * (y - 20.0);
    if (rc2 > 1) seen += (rc2 * std::acos(1 / std::sqrt(rc2)) - std::sqrt(rc2 - 1)) * (y1 - y0) / steps;
  }
  std::printf("[ measure ] sphere cap (r 8, 7 mm high): volume %.2f of %.2f mm^3 (error %+.3f %%); of the %.2f in the part's rows Y %.1f..%.1f: %+.3f %%; top %+.2f um\n",
              vol, truth, (vol / truth - 1) * 100, seen, y0, y1, (vol / seen - 1) * 100, (top - cap) * 1000);
  EXPECT_NEAR(vol / seen, 1.0, 0.005);
  EXPECT_NEAR(vol / truth, 1.0, 0.010);  // the unseen far end: about -0.6 %
  EXPECT_LT(vol, truth);
  EXPECT_NEAR(top, cap, 0.010);
  // Holes wider than max_spacing are not joined at all: the former default
  // (2 mm) leaves out the far slope's widest holes.
  const auto narrow = scan("sphere", "[[tool]]\nname = \"vol\"\ntype = \"volume\"\nmax_spacing = 2.0\n" + region);
  ASSERT_EQ(narrow.size(), 1u);
  const double vol2 = narrow[0].tools[0].value("volume");
  std::printf("[ measure ] sphere cap, max_spacing 2 mm: volume %.2f (error %+.3f %%; %+.3f %% of the part's rows)\n", vol2, (vol2 / truth - 1) * 100,
              (vol2 / seen - 1) * 100);
  EXPECT_LT(vol2, vol);
}

TEST_F(MeasureSynthetic, TiltedPlaneFlatness) {
  const auto parts = scan("tilted-plane", "[[tool]]\nname = \"flat\"\ntype = \"flatness\"\nregion = { anchor = \"scan\", x = " + xs(-17, 17) +
                                               ", y = [8, 32] }\n");
  ASSERT_EQ(parts.size(), 1u);
  const auto& t = parts[0].tools[0];
  std::printf("[ measure ] tilted plane (10 deg, 1.15 deg): flatness RMS %.2f um, max %.2f um (truth 0) over %llu points\n", t.value("rms") * 1000,
              t.value("max") * 1000, static_cast<unsigned long long>(t.points));
  EXPECT_LT(t.value("rms"), 0.005);
  EXPECT_GT(t.points, 50000u);
}

TEST_F(MeasureSynthetic, GrooveWidthPositionAndDepth) {
  const auto parts = scan("groove", "[[tool]]\nname = \"left\"\ntype = \"edge\"\nlevel = 4\nregion = { anchor = \"scan\", x = " + xs(-25, -10) +
                                         ", y = [8, 32] }\n[[tool]]\nname = \"g\"\ntype = \"groove\"\nlevel = 7\nregion = { anchor = \"left\", x = [10, 30], y = [3, 27] }\n");
  ASSERT_EQ(parts.size(), 1u);
  // Truth: the sides lean 0.004 along Y from y = 5.1; over rows 8..32 they sit 0.004 * (20 - 5.1) further.
  const double lean = 0.004 * (20.0 - 5.1);
  const auto &edge = parts[0].tools[0], &g = parts[0].tools[1];
  const double width = g.value("width"), x = g.value("x"), depth = g.value("depth");
  std::printf("[ measure ] groove 3 mm wide, 2 mm deep: width %+.2f um, position %+.2f um, depth %+.2f um; edge position %+.2f um\n", (width - 3) * 1000,
              (x - std::stod(X(lean))) * 1000, (depth - 2) * 1000, (edge.value("x") - std::stod(X(-20 + lean))) * 1000);
  EXPECT_NEAR(edge.value("x"), -20 + lean - x_origin_, 0.020);
  EXPECT_NEAR(width, 3.0, 0.020);
  EXPECT_NEAR(x, lean - x_origin_, 0.020);
  EXPECT_NEAR(depth, 2.0, 0.010);
}

TEST_F(MeasureSynthetic, PanelsGapAndFlush) {
  const auto parts = scan("panels", "[[tool]]\nname = \"gf\"\ntype = \"gap_flush\"\nregion = { anchor = \"scan\", x = " + xs(-8, 8) +
                                         ", y = [8, 32] }\na = { anchor = \"scan\", x = " + xs(-20, -4) + ", y = [8, 32] }\nb = { anchor = \"scan\", x = " +
                                         xs(4, 20) + ", y = [8, 32] }\nedge_depth = 2.5\nlimits = { gap = [2.18, 2.22], flush = [0.28, 0.32] }\n");
  ASSERT_EQ(parts.size(), 1u);
  const auto& t = parts[0].tools[0];
  std::printf("[ measure ] panels (gap 2.2, flush 0.3 mm): gap %+.2f um, flush %+.2f um (%llu rows with both edges and flush points)\n", (t.value("gap") - 2.2) * 1000,
              (t.value("flush") - 0.3) * 1000, static_cast<unsigned long long>(t.points));
  EXPECT_NEAR(t.value("gap"), 2.2, 0.020);
  EXPECT_NEAR(t.value("flush"), 0.3, 0.020);
  EXPECT_EQ(t.decision, Decision::Pass);
  EXPECT_EQ(parts[0].decision, Decision::Pass);
}

TEST_F(MeasureSynthetic, ConveyorOfFiftyPartsNoneSplitOrMerged) {
  const PartsPreset preset = parts_preset("conveyor");
  const auto parts = scan("conveyor", "[detection]\nthreshold = 0.5\ngap_length = 2.0\nmin_length = 2.0\n[[tool]]\nname = \"v\"\ntype = \"volume\"\n",
                            64);  // the tools on the worker thread, as live
  ASSERT_EQ(preset.config.blocks.size(), 50u);
  ASSERT_EQ(parts.size(), 50u);
  const double step = preset.config.y_step_mm;
  int matched = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const GaugeBlock& b = preset.config.blocks[i];
    const PartResult& p = parts[i];
    EXPECT_EQ(p.part, i + 1);
    // Its rows are the frames over the block: first within a step after y0, last within a step before y1.
    const bool ok = p.y_first >= b.y0 - 1e-9 && p.y_first < b.y0 + step + 1e-9 && p.y_last <= b.y1 + 1e-9 && p.y_last > b.y1 - step - 1e-9 &&
                    std::abs(p.box.z_max - b.height) < 0.05 && std::abs(p.box.x_min - (b.x0 - x_origin_)) < 0.2 &&
                    std::abs(p.box.x_max - (b.x1 - x_origin_)) < 0.2;
    matched += ok;
    EXPECT_TRUE(ok) << "part " << p.part << ": y " << p.y_first << ".." << p.y_last << " (block " << b.y0 << ".." << b.y1 << "), z_max " << p.box.z_max
                    << " (" << b.height << "), x " << p.box.x_min << ".." << p.box.x_max << " (" << b.x0 - x_origin_ << ".." << b.x1 - x_origin_ << ")";
  }
  std::printf("[ measure ] conveyor: %zu parts detected of 50, %d matched their block (span, height, X extent), none split or merged\n", parts.size(),
              matched);
}

}  // namespace
}  // namespace stripeline

// ---------------------------------------------------------------------------
// Through the commands: synth -> calibrate -> measure, its records, and a bad
// job (one line naming the key, exit 2, nothing written).

namespace stripeline {
namespace {

TEST(MeasureCommand, SynthCalibrateMeasureWritesRecords) {
  test::TempDir dir;
  auto p = [&](const char* name) { return (dir.path() / name).string(); };
  std::string out;
  ASSERT_EQ(test::run_cli("synth " + p("target.tiff") + " --scene target --target " + test::target_path("sawtooth.toml") + " --frames 30", &out), 0) << out;
  ASSERT_EQ(test::run_cli("calibrate " + p("target.tiff") + " -H 256 --target " + test::target_path("sawtooth.toml") +
                              " --roi-offset 0,428 --sensor 2048x1088 --y-step 0.2 --out " + p("cal.toml"),
                          &out),
            0)
      << out;
  ASSERT_EQ(test::run_cli("synth " + p("panels.tiff") + " --scene panels --truth " + p("truth.json"), &out), 0) << out;
  std::ifstream tin(p("truth.json"));
  const nlohmann::json truth = nlohmann::json::parse(tin);
  const double xo = truth["x_origin_mm"].get<double>();
  auto X = [&](double v) { return std::to_string(v - xo); };
  std::ofstream(p("job.toml")) << "[job]\nname = \"panels\"\n[detection]\nthreshold = 1.0\n[[tool]]\nname = \"gf\"\ntype = \"gap_flush\"\n"
                               << "region = { anchor = \"scan\", x = [" << X(-8) << ", " << X(8) << "], y = [8, 32] }\n"
                               << "a = { anchor = \"scan\", x = [" << X(-20) << ", " << X(-4) << "], y = [8, 32] }\n"
                               << "b = { anchor = \"scan\", x = [" << X(4) << ", " << X(20) << "], y = [8, 32] }\n"
                               << "edge_depth = 2.5\nlimits = { gap = [2.18, 2.22], flush = [0.35, 0.40] }\n";
  ASSERT_EQ(test::run_cli("measure " + p("panels.tiff") + " -H 256 --job " + p("job.toml") + " --calibration " + p("cal.toml") +
                              " --roi-offset 0,428 --json " + p("r.json") + " --csv " + p("r.csv"),
                          &out),
            0)
      << out;
  EXPECT_NE(out.find("1 parts (0 passed, 1 failed)"), std::string::npos) << out;  // flush 0.3 is outside [0.35, 0.40]
  std::ifstream jin(p("r.json"));
  const nlohmann::json r = nlohmann::json::parse(jin);
  ASSERT_EQ(r["parts"].size(), 1u);
  const auto& part = r["parts"][0];
  EXPECT_EQ(part["units"], "mm");
  EXPECT_EQ(part["decision"], "fail");
  EXPECT_EQ(part["tools"][0]["decisions"]["gap"], "pass");
  EXPECT_EQ(part["tools"][0]["decisions"]["flush"], "fail");
  EXPECT_NEAR(part["tools"][0]["values"]["gap"].get<double>(), 2.2, 0.020);
  EXPECT_NEAR(part["tools"][0]["values"]["flush"].get<double>(), 0.3, 0.020);
  EXPECT_NEAR(part["y"][0].get<double>(), 5.2, 1e-6);
  const std::string csv = read_file(p("r.csv"));
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "part,decision,frame_first,frame_last,y_first,y_last,length,encoder_first,encoder_last,timestamp_first_ns,timestamp_last_ns,"
            "x_min,x_max,y_min,y_max,z_min,z_max,gf.gap,gf.flush,gf.decision");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2);
  EXPECT_EQ(csv.substr(csv.find('\n') + 1, 7), "1,fail,");

  // The same scan as a range map file (mean of 0.05 mm bins), measured offline.
  ASSERT_EQ(test::run_cli("replay " + p("panels.tiff") + " -H 256 -q --calibration " + p("cal.toml") + " --roi-offset 0,428 --range-map " + p("rm.tif") +
                              " --range-grid -45:45:0.05 --range-rule mean",
                          &out),
            0)
      << out;
  ASSERT_EQ(test::run_cli("measure " + p("rm.tif") + " --job " + p("job.toml") + " --json " + p("rm.json"), &out), 0) << out;
  std::ifstream rin(p("rm.json"));
  const nlohmann::json rm = nlohmann::json::parse(rin);
  ASSERT_EQ(rm["parts"].size(), 1u);
  const double rm_gap = rm["parts"][0]["tools"][0]["values"]["gap"].get<double>(), rm_flush = rm["parts"][0]["tools"][0]["values"]["flush"].get<double>();
  std::printf("[ measure ] panels from a range map (mean of 0.05 mm bins): gap %+.2f um, flush %+.2f um\n", (rm_gap - 2.2) * 1000, (rm_flush - 0.3) * 1000);
  EXPECT_NEAR(rm_gap, 2.2, 0.020);
  EXPECT_NEAR(rm_flush, 0.3, 0.020);
  EXPECT_NEAR(rm["parts"][0]["y"][0].get<double>(), 5.2, 1e-6);
  // And as a calibrated PLY.
  ASSERT_EQ(test::run_cli("replay " + p("panels.tiff") + " -H 256 -q --calibration " + p("cal.toml") + " --roi-offset 0,428 --ply " + p("pts.ply"), &out),
            0)
      << out;
  ASSERT_EQ(test::run_cli("measure " + p("pts.ply") + " --job " + p("job.toml") + " --json " + p("ply.json"), &out), 0) << out;
  std::ifstream pin(p("ply.json"));
  const nlohmann::json pj = nlohmann::json::parse(pin);
  ASSERT_EQ(pj["parts"].size(), 1u);
  EXPECT_NEAR(pj["parts"][0]["tools"][0]["values"]["gap"].get<double>(), part["tools"][0]["values"]["gap"].get<double>(), 1e-6);  // the same points
  EXPECT_NEAR(pj["parts"][0]["tools"][0]["values"]["flush"].get<double>(), part["tools"][0]["values"]["flush"].get<double>(), 1e-6);
  EXPECT_EQ(test::run_cli("measure " + p("panels.tiff") + " --job " + p("job.toml"), &out), 2);  // a recording without -H
  EXPECT_NE(out.find("or a recording with -H)"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;

  // The shipped example job: regions on the part, belt reference; all pass.
  std::filesystem::create_directory(p("parts"));
  ASSERT_EQ(test::run_cli("measure " + p("panels.tiff") + " -H 256 --job " + test::source_dir() + "/configs/jobs/panels.toml --calibration " +
                              p("cal.toml") + " --roi-offset 0,428 --json " + p("e.json") + " --parts-dir " + p("parts") + " --queue 4",
                          &out),
            0)
      << out;
  EXPECT_NE(out.find("1 parts (1 passed, 0 failed)"), std::string::npos) << out;
  // The part's own files: its points and its range map.
  EXPECT_GT(std::filesystem::file_size(p("parts/part-000001.ply")), 100000u);
  EXPECT_GT(std::filesystem::file_size(p("parts/part-000001.tif")), 1000u);

  // A bad key: one line naming it, exit 2, no records written.
  std::ofstream(p("bad.toml")) << "[detection]\nthreshold = 1.0\ngap = 3\n[[tool]]\nname = \"h\"\ntype = \"height\"\nregion = { x = [0, 1] }\n";
  EXPECT_EQ(test::run_cli("measure " + p("panels.tiff") + " -H 256 --job " + p("bad.toml") + " --calibration " + p("cal.toml") + " --json " + p("b.json"), &out),
            2);
  EXPECT_EQ(out, "stripeline: error: " + p("bad.toml") + ": detection.gap: unknown key\n");
  EXPECT_FALSE(std::filesystem::exists(p("b.json")));
  // A job in mm on a scan without a calibration: exit 2, said so.
  EXPECT_EQ(test::run_cli("measure " + p("panels.tiff") + " -H 256 --job " + p("job.toml") + " --json " + p("b.json"), &out), 2);
  EXPECT_NE(out.find("job.units = \"mm\" but the scan is in px"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(p("b.json")));
}

}  // namespace
}  // namespace stripeline

// ---------------------------------------------------------------------------
// The worker hand-off: a slow consumer of results never holds up the sink.

namespace stripeline {
namespace {

// `parts` boxes 10 rows long, 10 apart, as profiles without a calibration
// (px: Z = the stripe's row), one span per 5 rows.
struct HandMadeScan {
  static constexpr int kWidth = 64, kRows = 5;
  std::vector<FrameMeta> meta = std::vector<FrameMeta>(kRows);
  std::vector<std::int32_t> position = std::vector<std::int32_t>(kRows * kWidth);
  std::vector<std::uint8_t> count = std::vector<std::uint8_t>(kRows * kWidth, 1);

  void feed(ProfileSink& sink, int parts) {
    for (int block = 0; block < 4 * parts; ++block) {  // 20 rows per part: 10 high, 10 low
      const bool high = block % 4 < 2;
      for (int i = 0; i < kRows * kWidth; ++i) position[i] = (high && (i % kWidth) > 20 && (i % kWidth) < 40 ? 30 : 10) * kPositionOne;
      ProfileSpan s;
      s.first_index = static_cast<std::uint64_t>(block) * kRows;
      s.frames = kRows;
      s.width = kWidth;
      s.meta = meta.data();
      s.position = position.data();
      s.count = count.data();
      sink.consume(s);
    }
  }
};

TEST(MeasureSinkWorker, AFullQueueDropsPartsInsteadOfWaiting) {
  auto job = std::make_shared<const Job>(measure::parse_job(
      "[job]\nunits = \"px\"\n[detection]\nreference_z = 10\nthreshold = 5\ngap_length = 3\n[[tool]]\nname = \"h\"\ntype = \"height\"\nregion = { x = [2, 10] }\n", "px.toml"));
  ScanInfo info;
  // Synchronous: every part measured.
  std::vector<PartResult> all;
  {
    measure::MeasureSink sink(job, [&](const PartResult& r, const Part&) { all.push_back(r); });
    sink.begin(info);
    HandMadeScan().feed(sink, 12);
    sink.finish();
  }
  ASSERT_EQ(all.size(), 12u);
  EXPECT_EQ(all[0].units, "px");
  EXPECT_NEAR(all[0].tools[0].value("mean"), 20.0, 1e-9);  // row 30 over the reference row 10
  EXPECT_EQ(all[11].frame_first, 11u * 20u);
  // A worker with a queue of 2 whose consumer is stuck until the scan is fed.
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  std::vector<PartResult> got;
  measure::MeasureSink sink(job, [&](const PartResult& r, const Part&) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return release; });
    got.push_back(r);
  }, 2);
  sink.begin(info);
  HandMadeScan().feed(sink, 12);  // returns although the consumer is stuck: no part waits for it
  {
    std::lock_guard<std::mutex> lock(m);
    release = true;
  }
  cv.notify_all();
  sink.finish();
  // The first two always find room; a third if the worker had taken the
  // first out of the queue when it ended; the rest dropped and counted.
  EXPECT_GE(got.size(), 2u);
  EXPECT_LE(got.size(), 3u);
  EXPECT_EQ(got.size() + sink.dropped(), 12u);
  ASSERT_GE(got.size(), 2u);
  EXPECT_EQ(got[0].part, 1u);
  EXPECT_EQ(got[1].part, 2u);
}

}  // namespace
}  // namespace stripeline

// The volume tool's sums on the GPU (kernels/cuda/volume_kernels.h) against
// the CPU's (measure::volume_sums, the oracle): the same bits. Skipped, and
// saying why, without a usable GPU (tests/gpu_test.h).
namespace stripeline {
namespace {

#if STRIPELINE_HAVE_CUDA
// Uploads the part's rows, packed, and sums q on the device; `out` poisoned first.
kernels::VolumeSums device_volume_sums(const Part& p, const kernels::VolumeQuery& q) {
  std::vector<float> x, z;
  std::vector<std::int64_t> begin{0};
  std::vector<double> y;
  for (const auto& row : p.rows) {
    x.insert(x.end(), row.x.begin(), row.x.end());
    z.insert(z.end(), row.z.begin(), row.z.end());
    begin.push_back(static_cast<std::int64_t>(x.size()));
    y.push_back(row.y);
  }
  auto upload = [](const auto& v, const char* what) {
    auto b = cuda::DeviceBuffer::allocate(std::max<std::size_t>(1, v.size() * sizeof(v[0])), what);
    if (!v.empty()) STRIPELINE_CUDA_CHECK(cudaMemcpy(b.data(), v.data(), v.size() * sizeof(v[0]), cudaMemcpyHostToDevice));
    return b;
  };
  const auto dx = upload(x, "x"), dz = upload(z, "z"), db = upload(begin, "row_begin"), dy = upload(y, "row_y");
  auto out = cuda::DeviceBuffer::allocate(sizeof(kernels::VolumeSums), "sums");
  STRIPELINE_CUDA_CHECK(cudaMemset(out.data(), 0xA5, sizeof(kernels::VolumeSums)));  // poisoned: the launch must zero it
  kernels::cuda::DeviceRows rows;
  rows.x = dx.as<float>(), rows.z = dz.as<float>(), rows.row_begin = db.as<std::int64_t>(), rows.row_y = dy.as<double>();
  rows.rows = static_cast<int>(p.rows.size());
  cuda::Stream stream = cuda::Stream::create();
  kernels::cuda::launch_volume_sums(rows, q, out.as<kernels::VolumeSums>(), stream.get());
  kernels::VolumeSums r;
  STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(&r, out.data(), sizeof r, cudaMemcpyDeviceToHost, stream.get()));
  STRIPELINE_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  return r;
}

void expect_same_sums(const Part& p, const kernels::VolumeQuery& q, const std::string& what) {
  const kernels::VolumeSums cpu = measure::volume_sums(p, q), gpu = device_volume_sums(p, q);
  EXPECT_EQ(cpu.volume, gpu.volume) << what;
  EXPECT_EQ(cpu.area, gpu.area) << what;
  EXPECT_EQ(cpu.points, gpu.points) << what;
}
#endif

class MeasureCuda : public test::CudaTest {};

// Rows of odd sizes (0, 1, 2, 3, 31..33, 127..129, 1000, 4099 points), with
// holes on slopes and beside steps, negative heights, a tilted reference;
// whole, clipped and empty regions; above and below.
TEST_F(MeasureCuda, VolumeSumsAreTheCpuOnesOnMadeRows) {
#if STRIPELINE_HAVE_CUDA
  Part p;
  p.row_pitch = 0.2;
  p.reference = {0.013, 0.0007};
  const int sizes[] = {0, 1, 2, 3, 31, 32, 33, 127, 128, 129, 1000, 4099};
  std::uint64_t frame = 0;
  for (int n : sizes) {
    MeasureRow r;
    r.frame = frame, r.y = 0.2 * static_cast<double>(frame++);
    for (int i = 0; i < n; ++i) {
      const double x = -20.0 + 0.05 * i + (i > n / 3 ? 1.3 : 0.0) + (i > n / 2 ? 3.1 : 0.0);  // a 1.3 mm and a 3.1 mm hole
      const double zz = 5.0 * std::sin(0.01 * i) - 0.7 + (i > 2 * n / 3 ? 2.0 : 0.0) + 1e-3 * ((i * 7919) % 13);
      r.x.push_back(static_cast<float>(x));
      r.z.push_back(static_cast<float>(zz));
    }
    p.rows.push_back(std::move(r));
  }
  const double inf = std::numeric_limits<double>::infinity();
  for (double sign : {1.0, -1.0})
    for (double max_spacing : {2.0, inf}) {
      kernels::VolumeQuery q;
      q.ref_a = p.reference.a, q.ref_b = p.reference.b, q.sign = sign, q.level = 0.5, q.max_spacing = max_spacing;
      q.x0 = -30, q.x1 = 300, q.y0 = -inf, q.y1 = inf;
      expect_same_sums(p, q, "whole");
      const kernels::VolumeSums whole = measure::volume_sums(p, q);
      EXPECT_GT(whole.points, 0u);
      EXPECT_NE(whole.volume, 0u);
      q.x0 = -17.3, q.x1 = 31.7, q.y0 = 0.3, q.y1 = 1.9;
      expect_same_sums(p, q, "clipped");
      q.x1 = q.x0;
      expect_same_sums(p, q, "empty");
      EXPECT_EQ(measure::volume_sums(p, q).points, 0u);
    }
#endif
}

class MeasureSyntheticCuda : public MeasureSynthetic {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no usable GPU: " << cuda_status();
  }
};

// The synthetic parts (sphere, gauge blocks, tilted plane, groove, panels),
// calibrated: the volume tool's sums on the device are the CPU's, for the
// whole part and for a region of it.
// `stripeline measure` and the live job on the CUDA backend: the sink sums
// the volume tools on the device (measure/device_volume.h), on its own thread
// and on the worker; the records are the CPU run's, bit for bit.
TEST_F(MeasureSyntheticCuda, SinkOnTheCudaBackendGivesTheCpuVolumes) {
#if STRIPELINE_HAVE_CUDA
  const std::string job = "[[tool]]\nname = \"vol\"\ntype = \"volume\"\n[[tool]]\nname = \"cap\"\ntype = \"volume\"\nmax_spacing = 2.0\nregion = { anchor = \"scan\", x = " +
                          xs(-10, 10) + " }\n";
  for (const std::string scene : {"sphere", "gauge-blocks"})
    for (int queue : {0, 4}) {
      const auto cpu = scan(scene, job, queue), gpu = scan(scene, job, queue, {0, 428, 2048, 256}, nullptr, Backend::Cuda);
      ASSERT_EQ(cpu.size(), gpu.size()) << scene;
      ASSERT_FALSE(cpu.empty()) << scene;
      for (std::size_t i = 0; i < cpu.size(); ++i)
        for (int t = 0; t < 2; ++t)
          for (const char* v : {"volume", "area"}) {
            EXPECT_EQ(cpu[i].tools[t].value(v), gpu[i].tools[t].value(v)) << scene << " part " << i << " tool " << t << " " << v << " queue " << queue;
            EXPECT_TRUE(std::isfinite(gpu[i].tools[t].value(v)) || !std::isfinite(cpu[i].tools[t].value(v)));
          }
    }
#endif
}

TEST_F(MeasureSyntheticCuda, VolumeSumsAreTheCpuOnes) {
#if STRIPELINE_HAVE_CUDA
  for (const std::string scene : {"sphere", "gauge-blocks", "tilted-plane", "groove", "panels"}) {
    std::vector<Part> parts;
    scan(scene, "[[tool]]\nname = \"vol\"\ntype = \"volume\"\n", 0, {0, 428, 2048, 256}, &parts);
    ASSERT_FALSE(parts.empty()) << scene;
    const measure::ToolSpec t = measure::parse_job("[[tool]]\nname = \"vol\"\ntype = \"volume\"\n", scene + ".toml").tools.at(0);
    for (const Part& part : parts) {
      kernels::VolumeQuery q = measure::volume_query(t, part, {});
      expect_same_sums(part, q, scene + " whole part");
      q.x0 = 0.3 * part.box.x_min + 0.7 * part.box.x_max, q.y0 = part.rows[part.rows.size() / 3].y;
      expect_same_sums(part, q, scene + " region");
    }
  }
#endif
}

}  // namespace
}  // namespace stripeline
