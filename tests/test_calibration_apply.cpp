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

#include "calibration/calibration_file.h"
#include "calibration_fixtures.h"
#include "io/image_writer.h"

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
  EXPECT_TRUE(has_comment(ply, "calibration sheet-of-light id " + cal.id));
  EXPECT_TRUE(has_comment(ply, "roi_offset 160,460"));

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
  EXPECT_EQ(s["unit"], "mm");
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
