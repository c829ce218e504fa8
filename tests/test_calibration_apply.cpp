// Phase 2: a calibration applied in the product path, through the commands:
// synthetic target recording -> `stripeline calibrate` -> a gauge-block
// recording taken with another ROI -> `stripeline replay --calibration` ->
// the PLY's millimetres against the truth.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "calibration/calibration_file.h"
#include "calibration_fixtures.h"
#include "io/image_reader.h"
#include "io/image_writer.h"
#include "io/metadata_reader.h"
#include "kernels/rectify.h"

namespace stripeline {
namespace {

// Renders every frame of a scanner into one 8-bit TIFF (frames stacked).
void write_recording(TriangulationScanner& rec, std::uint64_t frames, const std::filesystem::path& path) {
  const BatchLayout layout = rec.frame_layout();
  std::vector<std::uint8_t> image(layout.frame_pixels() * frames);
  for (std::uint64_t f = 0; f < frames; ++f) rec.render(f, reinterpret_cast<std::byte*>(image.data() + f * layout.frame_pixels()));
  io::write_image(path, image.data(), layout.width, static_cast<int>(frames) * layout.frame_height, PixelFormat::Mono8);
}

struct Ply {
  std::vector<std::string> comments;
  std::vector<test::Point3> points;
};

// An ASCII PLY's comments and the first three properties (x, y, z) of its vertices.
Ply read_ascii_ply(const std::filesystem::path& path) {
  std::ifstream in(path);
  Ply ply;
  std::string line;
  while (std::getline(in, line) && line != "end_header")
    if (line.rfind("comment ", 0) == 0) ply.comments.push_back(line.substr(8));
  while (std::getline(in, line)) {
    std::istringstream s(line);
    test::Point3 p{};
    if (s >> p.x >> p.y >> p.z) ply.points.push_back(p);
  }
  return ply;
}

bool has_comment(const Ply& ply, const std::string& needle) {
  return std::any_of(ply.comments.begin(), ply.comments.end(), [&](const std::string& c) { return c.find(needle) != std::string::npos; });
}

class CalibrationApplied : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    const CalibrationTarget target = load_target(test::target_path("sawtooth.toml"));
    auto rec = test::target_recording(target, 30, 0.0, 0.0);
    x_origin_ = test::truth_x_origin(rec->camera());
    write_recording(*rec, 30, path("target.tiff"));
    std::string out;
    calibrate_rc_ = test::run_cli("calibrate " + path("target.tiff").string() + " -H 256 --target " + test::target_path("sawtooth.toml") +
                                      " --roi-offset 0,428 --sensor 2048x1088 --y-step 0.2 --out " + path("cal.toml").string(),
                                  &out);
    calibrate_out_ = out;
    // The gauge blocks, taken with another ROI than the calibration's.
    TriangulationScanner gauge(test::sensor_config(kFrames, kOtherRoi), std::make_shared<PartsScene>(test::GaugeScene::config()));
    write_recording(gauge, kFrames, path("gauge.tiff"));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::filesystem::path path(const std::string& name) { return dir_->path() / name; }

  static constexpr std::uint64_t kFrames = 20;
  static constexpr SensorRoi kOtherRoi{160, 460, 1700, 232};
  static inline test::TempDir* dir_ = nullptr;
  static inline double x_origin_ = 0;
  static inline int calibrate_rc_ = -1;
  static inline std::string calibrate_out_;
};

TEST_F(CalibrationApplied, ReplayMeasuresGaugeBlocksInMillimetresAtAnotherRoi) {
  ASSERT_EQ(calibrate_rc_, 0) << calibrate_out_;
  const CalibrationFile cal = load_calibration(path("cal.toml"));
  std::string out;
  ASSERT_EQ(test::run_cli("replay " + path("gauge.tiff").string() + " -H 232 -q --ascii --ply " + path("g.ply").string() + " --summary " +
                              path("s.json").string() + " --calibration " + path("cal.toml").string() + " --roi-offset 160,460",
                          &out),
            0)
      << out;
  const Ply ply = read_ascii_ply(path("g.ply"));
  EXPECT_TRUE(has_comment(ply, "units mm")) << ply.comments.size();
  EXPECT_TRUE(has_comment(ply, "z height up")) << ply.comments.size();
  const metadata::Json meta = io::read_metadata(path("g.ply"));  // the header's metadata comment (core/metadata.h)
  EXPECT_EQ(meta["calibration"]["model"], "sheet-of-light");
  EXPECT_EQ(meta["calibration"]["id"], cal.id);
  EXPECT_EQ(meta["calibration"]["roi_offset"], metadata::Json::array({160, 460}));

  // Y in mm: frame index x the file's 0.2 mm step.
  std::set<long> rows;
  for (const auto& p : ply.points) {
    const double frame = p.y / 0.2;
    EXPECT_NEAR(frame, std::round(frame), 1e-4) << p.y;
    rows.insert(std::lround(frame));
  }
  EXPECT_EQ(rows.size(), kFrames);
  EXPECT_EQ(*rows.begin(), 0);

  // Z up: the blocks stand above the conveyor by their heights.
  const test::GaugeMeasurement g = test::measure_gauge_blocks(ply.points, x_origin_);
  std::printf("[ calibration ] replay --calibration at ROI (160, 460) 1700x232, PLY blocks: errors %.2f %.2f %.2f %.2f um (%zu points)\n",
              (g.height[0] - 1) * 1000, (g.height[1] - 2) * 1000, (g.height[2] - 5) * 1000, (g.height[3] - 10) * 1000, ply.points.size());
  for (int i = 0; i < 4; ++i) {
    EXPECT_GT(g.top_points[i], 1000u) << i;
    EXPECT_NEAR(g.height[i], test::GaugeScene::kHeights[i], 0.010) << "block " << i;
  }

  std::ifstream in(path("s.json"));
  const nlohmann::json s = nlohmann::json::parse(in);
  EXPECT_EQ(s["point_unit"], "mm");
  EXPECT_EQ(s["calibration"]["id"], cal.id);
  EXPECT_EQ(s["calibration"]["model"], "sheet-of-light");
  EXPECT_EQ(s["calibration"]["roi_offset"], nlohmann::json::array({160, 460}));
  EXPECT_EQ(s["calibration"]["y_step_mm"].get<double>(), 0.2);
}

TEST_F(CalibrationApplied, YStepAndRoiOffsetMatter) {
  ASSERT_EQ(calibrate_rc_, 0) << calibrate_out_;
  std::string out;
  // --y-step overrides the file's step.
  ASSERT_EQ(test::run_cli("replay " + path("gauge.tiff").string() + " -H 232 -q --ascii --ply " + path("y.ply").string() + " --calibration " +
                              path("cal.toml").string() + " --roi-offset 160,460 --y-step 0.5",
                          &out),
            0)
      << out;
  double y_max = 0;
  for (const auto& p : read_ascii_ply(path("y.ply")).points) y_max = std::max(y_max, p.y);
  EXPECT_NEAR(y_max, 0.5 * (kFrames - 1), 1e-4);
  // Leaving the offsets out (0,0) maps the rows to the wrong sensor rows:
  // millimetres off, which the test can tell.
  ASSERT_EQ(test::run_cli("replay " + path("gauge.tiff").string() + " -H 232 -q --ascii --ply " + path("w.ply").string() + " --calibration " +
                              path("cal.toml").string(),
                          &out),
            0)
      << out;
  const test::GaugeMeasurement wrong = test::measure_gauge_blocks(read_ascii_ply(path("w.ply")).points, x_origin_);
  EXPECT_GT(std::abs(wrong.height[3] - 10.0), 0.1);
}

// Rectified range maps: a uniform X grid in mm, one row per frame. The
// 16-bit codes (Z = code * 0.001 mm) read back give the blocks' heights.
TEST_F(CalibrationApplied, RangeMapsOnAUniformXGrid) {
  ASSERT_EQ(calibrate_rc_, 0) << calibrate_out_;
  std::string out;
  ASSERT_EQ(test::run_cli("replay " + path("gauge.tiff").string() + " -H 232 -q --calibration " + path("cal.toml").string() +
                              " --roi-offset 160,460 --range-map " + path("r.tif").string() + " --range-codes " + path("r.png").string() +
                              " --range-grid -60:60:0.1 --range-rule mean --range-fill 4 --range-code -5:0.001",
                          &out),
            0)
      << out;
  ASSERT_TRUE(std::filesystem::exists(path("r.tif")));
  auto reader = io::open_image(path("r.png"));
  ASSERT_EQ(reader->info().width, 1201);
  ASSERT_EQ(reader->info().height, static_cast<std::int64_t>(kFrames));
  ASSERT_EQ(reader->info().format, PixelFormat::Mono16);
  std::vector<std::uint16_t> codes(1201 * kFrames);
  reader->read_rows(reinterpret_cast<std::byte*>(codes.data()), kFrames);
  // Bin i is X = -60 + 0.1 i in the calibration's frame; the fixture's X origin shifts the truth.
  auto mean_z = [&](double x0, double x1) {
    double sum = 0;
    std::size_t n = 0;
    for (std::uint64_t r = 0; r < kFrames; ++r)
      for (int i = 0; i < 1201; ++i) {
        const double x = -60.0 + 0.1 * i + x_origin_;
        const std::uint16_t c = codes[r * 1201 + i];
        if (x > x0 && x < x1 && c) sum += -5.0 + 0.001 * c, ++n;
      }
    EXPECT_GT(n, 100u) << x0;
    return n ? sum / n : 0.0;
  };
  const double base = mean_z(test::GaugeScene::kX0[1] + test::GaugeScene::kWidth + 2.0, test::GaugeScene::kX0[2] - 2.0);  // conveyor between blocks 2 and 3
  for (int b = 0; b < 4; ++b) {
    const double top = mean_z(test::GaugeScene::kX0[b] + 2.0, test::GaugeScene::kX0[b] + test::GaugeScene::kWidth - 2.0);
    // Codes quantise to 1 um; the base plane is fitted nowhere here, so allow for its tilt.
    std::printf("[ calibration ] range map (mean, 0.1 mm bins, 1 um codes): block %g mm measured %.4f mm\n", test::GaugeScene::kHeights[b], top - base);
    EXPECT_NEAR(top - base, test::GaugeScene::kHeights[b], 0.02) << "block " << b;
  }
  // Without a calibration a range map cannot be made: one line, exit 2.
  std::string msg;
  EXPECT_EQ(test::run_cli("replay " + path("gauge.tiff").string() + " -H 232 -q --range-map " + path("n.tif").string() + " --range-grid 0:1:0.1", &msg), 2);
  EXPECT_NE(msg.find("need a sheet-of-light calibration"), std::string::npos) << msg;
  EXPECT_EQ(test::run_cli("replay " + path("gauge.tiff").string() + " -H 232 -q --calibration " + path("cal.toml").string() + " --range-map " +
                              path("n.tif").string() + " --range-grid 5:1:0.1",
                          &msg),
            2);
  EXPECT_NE(msg.find("range-map grid"), std::string::npos) << msg;
  EXPECT_FALSE(std::filesystem::exists(path("n.tif")));
}

// The whole chain through the commands alone: synth -> calibrate -> synth ->
// replay --calibration, checked against the truth synth wrote.
TEST(CalibrationCommands, SynthCalibrateReplayThroughTheCommands) {
  test::TempDir dir;
  auto p = [&](const char* name) { return (dir.path() / name).string(); };
  std::string out;
  ASSERT_EQ(test::run_cli(std::string("synth ") + p("target.tiff") + " --scene target --target " + test::target_path("sawtooth.toml") +
                              " --frames 30 --truth " + p("target.json"),
                          &out),
            0)
      << out;
  ASSERT_EQ(test::run_cli(std::string("calibrate ") + p("target.tiff") + " -H 256 --target " + test::target_path("sawtooth.toml") +
                              " --roi-offset 0,428 --sensor 2048x1088 --y-step 0.2 --out " + p("cal.toml"),
                          &out),
            0)
      << out;
  ASSERT_EQ(test::run_cli(std::string("synth ") + p("gauge.tiff") + " --scene gauge --roi 160,460,1700,232 --frames 20 --truth " + p("gauge.json"),
                          &out),
            0)
      << out;
  ASSERT_EQ(test::run_cli(std::string("replay ") + p("gauge.tiff") + " -H 232 -q --ascii --ply " + p("g.ply") + " --calibration " + p("cal.toml") +
                              " --roi-offset 160,460",
                          &out),
            0)
      << out;
  std::ifstream in(p("gauge.json"));
  const nlohmann::json truth = nlohmann::json::parse(in);
  EXPECT_FALSE(truth.contains("poses"));
  EXPECT_EQ(truth["unit"], "mm");
  ASSERT_EQ(truth["parts"]["gauge_blocks"].size(), 4u);
  std::ifstream tin(p("target.json"));
  EXPECT_EQ(nlohmann::json::parse(tin)["poses"].size(), 30u);
  const test::GaugeMeasurement g = test::measure_gauge_blocks(read_ascii_ply(p("g.ply")).points, truth["x_origin_mm"].get<double>());
  std::printf("[ calibration ] synth -> calibrate -> synth (ROI 160,460) -> replay: block errors %.2f %.2f %.2f %.2f um\n", (g.height[0] - 1) * 1000,
              (g.height[1] - 2) * 1000, (g.height[2] - 5) * 1000, (g.height[3] - 10) * 1000);
  for (int i = 0; i < 4; ++i) {
    EXPECT_GT(g.top_points[i], 1000u) << i;
    EXPECT_NEAR(g.height[i], truth["parts"]["gauge_blocks"][i]["height"].get<double>(), 0.010) << "block " << i;
  }
}

TEST(RangeMapRows, RulesAndGapFill) {
  kernels::RectifyGrid g{0.0, 1.0, 0.25, 1, kernels::RectifyRule::Max};
  const int bins = g.bins();
  ASSERT_EQ(bins, 5);
  std::vector<float> z(bins), key(bins);
  std::vector<std::uint32_t> n(bins);
  const kernels::RectifyAccumulator acc{z.data(), key.data(), n.data()};
  auto run = [&](kernels::RectifyRule rule, int fill) {
    g.rule = rule;
    g.fill = fill;
    acc.clear(bins);
    acc.add(g, bins, 0.01, 1.0);   // bin 0
    acc.add(g, bins, -0.1, 3.0);   // bin 0, farther from its centre
    acc.add(g, bins, 0.74, 5.0);   // bin 3 (0.74 / 0.25 = 2.96)
    acc.add(g, bins, 2.0, 9.0);    // outside
    acc.finish(g, bins);
  };
  run(kernels::RectifyRule::Max, 0);
  EXPECT_EQ(z[0], 3.0f);
  EXPECT_TRUE(std::isnan(z[1]) && std::isnan(z[2]) && std::isnan(z[4]));
  EXPECT_EQ(z[3], 5.0f);
  run(kernels::RectifyRule::Min, 0);
  EXPECT_EQ(z[0], 1.0f);
  run(kernels::RectifyRule::Mean, 0);
  EXPECT_EQ(z[0], 2.0f);
  run(kernels::RectifyRule::Nearest, 0);
  EXPECT_EQ(z[0], 1.0f);
  run(kernels::RectifyRule::Nearest, 1);  // a gap of 2 stays
  EXPECT_TRUE(std::isnan(z[1]));
  run(kernels::RectifyRule::Nearest, 2);  // filled linearly between 1 and 5
  EXPECT_FLOAT_EQ(z[1], 1.0f + 4.0f / 3.0f);
  EXPECT_FLOAT_EQ(z[2], 1.0f + 8.0f / 3.0f);
  EXPECT_TRUE(std::isnan(z[4]));  // nothing beyond the last point
  EXPECT_EQ(kernels::range_code(NAN, 0, 0.001), 0);
  EXPECT_EQ(kernels::range_code(1.2344f, 0, 0.001), 1234);
  EXPECT_EQ(kernels::range_code(-1.0f, 0, 0.001), 1);
  EXPECT_EQ(kernels::range_code(100.0f, 0, 0.001), 65535);
}

// The stream carries the model in series-start (rows stay in rows): the
// subscriber's PLY is the publisher's, point for point.
TEST_F(CalibrationApplied, SubscriberMapsTheStreamToTheSameMillimetres) {
  ASSERT_EQ(calibrate_rc_, 0) << calibrate_out_;
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(20000 + ::getpid() % 20000);
  std::string sub_out;
  int sub_rc = -1;
  std::thread subscriber([&] {
    sub_rc = test::run_cli("subscribe " + endpoint + " --ascii --ply " + path("sub.ply").string() + " --timeout 60", &sub_out);
  });
  std::string out;
  const int rc = test::run_cli("replay " + path("gauge.tiff").string() + " -H 232 -q --ascii --ply " + path("pub.ply").string() + " --calibration " +
                                   path("cal.toml").string() + " --roi-offset 160,460 --publish " + endpoint + " --wait-subscriber 30",
                               &out);
  subscriber.join();
  ASSERT_EQ(rc, 0) << out;
  ASSERT_EQ(sub_rc, 0) << sub_out;
  EXPECT_NE(sub_out.find("mm"), std::string::npos) << sub_out;
  const Ply pub = read_ascii_ply(path("pub.ply")), sub = read_ascii_ply(path("sub.ply"));
  EXPECT_TRUE(has_comment(sub, "units mm"));
  EXPECT_EQ(io::read_metadata(path("sub.ply"))["calibration"]["id"], load_calibration(path("cal.toml")).id);
  ASSERT_EQ(pub.points.size(), sub.points.size());
  ASSERT_GT(pub.points.size(), 10000u);
  for (std::size_t i = 0; i < pub.points.size(); ++i) {
    ASSERT_EQ(pub.points[i].x, sub.points[i].x) << i;
    ASSERT_EQ(pub.points[i].y, sub.points[i].y) << i;
    ASSERT_EQ(pub.points[i].z, sub.points[i].z) << i;
  }
}

TEST_F(CalibrationApplied, BadCalibrationFilesGiveOneLineAndExitTwo) {
  ASSERT_EQ(calibrate_rc_, 0) << calibrate_out_;
  {
    std::ofstream(path("garbage.toml")) << "[calibration]\nformat = \"something-else\"\n";
  }
  {
    std::string text;
    std::ifstream in(path("cal.toml"));
    std::stringstream s;
    s << in.rdbuf();
    text = s.str();
    const auto at = text.find("version = 1");
    ASSERT_NE(at, std::string::npos);
    std::ofstream(path("future.toml")) << text.replace(at, 11, "version = 99");
  }
  const std::string replay = "replay " + path("gauge.tiff").string() + " -H 232 -q --ply " + path("bad.ply").string() + " --calibration ";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {replay + path("none.toml").string(), "none.toml: cannot open the calibration file"},
      {replay + path("garbage.toml").string(), "garbage.toml"},
      {replay + path("future.toml").string(), "future.toml"},
      {replay + path("cal.toml").string() + " --roi-offset 400,900", "fall outside its sensor"},
      {replay + path("cal.toml").string() + " --roi-offset 4", "--roi-offset '4' is not a ROI offset"},
      {replay + path("cal.toml").string() + " --y-step -1", "--y-step"},
  };
  for (const auto& [args, needle] : bad) {
    std::string msg;
    EXPECT_EQ(test::run_cli(args, &msg), 2) << args << "\n" << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_EQ(std::count(msg.begin(), msg.end(), '\n'), 1) << msg;
  }
  EXPECT_FALSE(std::filesystem::exists(path("bad.ply")));
}

}  // namespace
}  // namespace stripeline
