// The simulated sheet-of-light sensor (acquisition/triangulation_scanner.h):
// its geometry, its truth, and what the default extraction makes of it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "calibration/fit.h"
#include "calibration_fixtures.h"
#include "core/errors.h"
#include "test_helpers.h"

namespace stripeline {
namespace {

TEST(TriangulationCamera, ProjectsAndBackProjectsTheLaserPlane) {
  const TriangulationCamera cam{TriangulationGeometry{}};
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> X(-50, 50), Z(-1, 25);
  for (int i = 0; i < 200; ++i) {
    const double x = X(rng), z = Z(rng);
    double u, v, xb, zb;
    ASSERT_TRUE(cam.project(x, 0.0, z, u, v));
    ASSERT_TRUE(cam.back_project(u, v, xb, zb));
    EXPECT_NEAR(xb, x, 1e-9);
    EXPECT_NEAR(zb, z, 1e-9);
  }
  // The documented set-up: ~100 mm over 2048 columns, X grows with u, Z
  // (toward the sensor) makes v shrink, about 10 rows per mm at 30 degrees.
  double u0, v0, u1, v1, u2, v2;
  cam.project(-50, 0, 12.5, u0, v0);
  cam.project(50, 0, 12.5, u1, v1);
  cam.project(0, 0, 13.5, u2, v2);
  double uc, vc;
  cam.project(0, 0, 12.5, uc, vc);
  EXPECT_GT(u1, u0);
  EXPECT_NEAR(100.0 * 2048.0 / (u1 - u0), 100.0, 3.0);
  EXPECT_LT(v2, vc);
  EXPECT_NEAR(vc - v2, 10.2, 0.5);
}

TEST(TriangulationScanner, TruthLiesOnTheSurfaceAndProjectsOntoItsColumn) {
  const TriangulationScannerConfig sc = test::sensor_config(3);
  const auto scene = std::make_shared<PartsScene>(test::SphereRampScene::config());
  TriangulationScanner scanner(sc, scene);
  const std::uint64_t frame = 25;  // through the sphere and the ramp
  const StripeTruth t = scanner.truth(frame);
  int checked = 0;
  for (int c = 0; c < sc.roi.width; ++c) {
    const auto i = static_cast<std::size_t>(c);
    if (std::isnan(t.v[i])) continue;
    ++checked;
    EXPECT_NEAR(t.u[i], sc.roi.x + c, 1e-8);
    EXPECT_NEAR(t.z[i], scene->height(frame, t.x[i], 0.0), 1e-9);
    double u, v;
    ASSERT_TRUE(scanner.camera().project(t.x[i], 0.0, t.z[i], u, v));
    EXPECT_NEAR(u, t.u[i], 1e-9);
    EXPECT_NEAR(v, t.v[i], 1e-9);
    EXPECT_GE(t.v[i], sc.roi.y);
    EXPECT_LE(t.v[i], sc.roi.y + sc.roi.height - 1);
  }
  EXPECT_GT(checked, 1800);
}

TEST(TriangulationScanner, TheBlocksHideAndShadowTheConveyorBehindThem) {
  // Behind the 10 mm block (x 18..30) the camera cannot see the conveyor for
  // 10 * 30.7 / 229 = 1.34 mm and the laser leaves it dark for 10 * 30 / 290
  // = 1.03 mm: those columns see the block's top instead.
  TriangulationScanner scanner(test::sensor_config(1), std::make_shared<PartsScene>(test::GaugeScene::config()));
  const StripeTruth t = scanner.truth(0);
  const double x_end = test::GaugeScene::kX0[3] + test::GaugeScene::kWidth;
  int conveyor_hidden = 0, conveyor_seen = 0, top_near_edge = 0;
  for (std::size_t c = 0; c < t.v.size(); ++c) {
    if (std::isnan(t.v[c])) continue;
    if (std::abs(t.z[c]) < 1e-9 && t.x[c] > x_end + 0.05 && t.x[c] < x_end + 1.25) ++conveyor_hidden;
    if (std::abs(t.z[c]) < 1e-9 && t.x[c] > x_end + 1.6 && t.x[c] < x_end + 3.0) ++conveyor_seen;
    if (std::abs(t.z[c] - 10.0) < 1e-9 && t.x[c] > x_end - 1.0) ++top_near_edge;
  }
  EXPECT_EQ(conveyor_hidden, 0);
  EXPECT_GT(conveyor_seen, 20);
  EXPECT_GT(top_near_edge, 15);
  EXPECT_GT(t.hidden, 0);  // and a few columns see nothing but hidden or dark points
}

TEST(TriangulationScanner, AnotherRoiSeesTheSameStripe) {
  const auto scene = std::make_shared<PartsScene>(test::GaugeScene::config());
  TriangulationScanner a(test::sensor_config(1), scene);
  TriangulationScanner b(test::sensor_config(1, {160, 460, 1700, 232}), scene);
  const StripeTruth ta = a.truth(0), tb = b.truth(0);
  int same = 0;
  for (int c = 0; c < 1700; ++c) {
    const double va = ta.v[static_cast<std::size_t>(c + 160)], vb = tb.v[static_cast<std::size_t>(c)];
    if (std::isnan(va) || std::isnan(vb)) continue;
    EXPECT_DOUBLE_EQ(va, vb);
    EXPECT_DOUBLE_EQ(tb.row(c, 460), vb - 460);
    ++same;
  }
  EXPECT_GT(same, 1400);
}

TEST(TriangulationScanner, FramesDoNotDependOnTheBatching) {
  const CalibrationTarget target = load_target(test::target_path("sawtooth.toml"));
  auto one = test::target_recording(target, 5, 0.4, 0.2);
  auto two = test::target_recording(target, 5, 0.4, 0.2);
  Batch small = test::make_poisoned_batch(one->frame_layout(), 1);
  Batch big = test::make_poisoned_batch(two->frame_layout(), 8);
  ASSERT_TRUE(two->fill(big));
  ASSERT_EQ(big.frames, 5);
  EXPECT_EQ(two->total_frames(), 5u);
  for (int f = 0; f < 5; ++f) {
    ASSERT_TRUE(one->fill(small));
    EXPECT_EQ(small.meta[0].frame_id, static_cast<std::uint64_t>(f));
    EXPECT_EQ(std::memcmp(small.frame_data(0), big.frame_data(f), small.layout.frame_pixels()), 0) << f;
    EXPECT_EQ(big.meta[static_cast<std::size_t>(f)].frame_id, static_cast<std::uint64_t>(f));
    EXPECT_EQ(big.meta[static_cast<std::size_t>(f)].encoder, 4 * f);
    EXPECT_FALSE(big.meta[static_cast<std::size_t>(f)].missing);
  }
  EXPECT_FALSE(one->fill(small));
  EXPECT_EQ(small.frames, 0);
}

TEST(TriangulationScanner, DefaultExtractionFindsTheTrueStripe) {
  const CalibrationTarget target = load_target(test::target_path("sawtooth.toml"));
  auto rec = test::target_recording(target, 6, 0.0, 0.0);
  const ObservationSet obs = extract_observations(*rec, ChainConfig{}, rec->config().roi.x, rec->config().roi.y);
  double ss = 0;
  std::size_t n = 0, expected = 0;
  for (const auto& f : obs.frames) {
    const StripeTruth t = rec->truth(f.frame);
    for (double v : t.v) expected += !std::isnan(v);
    for (std::size_t i = 0; i < f.u.size(); ++i) {
      const double tv = t.v[static_cast<std::size_t>(f.u[i]) - static_cast<std::size_t>(rec->config().roi.x)];
      if (std::isnan(tv)) continue;
      ss += (f.v[i] - tv) * (f.v[i] - tv);
      ++n;
    }
  }
  const double rms = std::sqrt(ss / static_cast<double>(n));
  std::printf("[ triangulation ] default chain on the sawtooth: %zu of %zu true stripe columns found, RMS %.4f px\n", n, expected, rms);
  EXPECT_GT(static_cast<double>(n), 0.99 * static_cast<double>(expected));
  EXPECT_LT(rms, 0.08);
}

TEST(TargetScene, DrawsExactCountsAndKeepsPosesInView) {
  const CalibrationTarget target = load_target(test::target_path("sawtooth.toml"));
  auto rec = test::target_recording(target, 60, 1.0 / 3.0, 0.1);
  const auto& scene = dynamic_cast<const TargetScene&>(rec->scene());
  const SensorRoi roi = rec->config().roi;
  int kinds[4] = {0, 0, 0, 0};
  for (std::uint64_t f = 0; f < 60; ++f) {
    const TargetFrameKind k = scene.kind(f);
    ++kinds[static_cast<int>(k)];
    if (k != TargetFrameKind::InView && k != TargetFrameKind::PartlyOutOfView) continue;
    int outside = 0;
    for (const PlanePoint& p : scene.placed(scene.pose(f))) {
      double u, v;
      ASSERT_TRUE(rec->camera().project(p.x, 0.0, p.z, u, v));
      outside += u < roi.x || u > roi.x + roi.width - 1;
      if (u >= roi.x && u <= roi.x + roi.width - 1) {
        EXPECT_GE(v, roi.y);
        EXPECT_LE(v, roi.y + roi.height - 1);
      }
      EXPECT_GE(p.z, -1e-9);
      EXPECT_LE(p.z, 22.0 + 1e-9);
    }
    EXPECT_EQ(outside > 0, k == TargetFrameKind::PartlyOutOfView) << f;
  }
  EXPECT_EQ(kinds[static_cast<int>(TargetFrameKind::PartlyOutOfView)], 20);
  EXPECT_EQ(kinds[static_cast<int>(TargetFrameKind::DoubleExposure)] + kinds[static_cast<int>(TargetFrameKind::Foreign)], 6);
  EXPECT_EQ(kinds[static_cast<int>(TargetFrameKind::DoubleExposure)], 3);
  EXPECT_EQ(scene.kind(0), TargetFrameKind::InView);
  EXPECT_EQ(scene.pose(0).z, 0.0);
  EXPECT_EQ(scene.pose(0).angle_deg, 0.0);
}

TEST(TriangulationScanner, BadSettingsAreConfigErrors) {
  TriangulationScannerConfig c = test::sensor_config(1, {0, 900, 2048, 256});
  try {
    TriangulationScanner s(c, std::make_shared<PartsScene>(test::GaugeScene::config()));
    FAIL() << "a ROI outside the sensor was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("triangulation.roi = [0, 900, 2048, 256] is out of range"), std::string::npos) << e.what();
  }
  c = test::sensor_config(1);
  c.geometry.triangulation_deg = 90;
  EXPECT_THROW(TriangulationScanner(c, std::make_shared<PartsScene>(test::GaugeScene::config())), ConfigError);
  TargetSceneConfig tc;
  tc.profile = {{0, 0}, {200, 5}, {400, 0}};  // longer than the field of view
  tc.frames = 2;
  const TriangulationCamera cam{TriangulationGeometry{}};
  EXPECT_THROW(TargetScene(tc, cam, c.roi), ConfigError);
}

}  // namespace
}  // namespace stripeline
