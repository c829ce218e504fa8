// Sheet-of-light calibration (issue 12, phase 1): the model, its file, the
// targets, the fit, and the acceptance figures on the synthetic triangulation
// sensor (docs/calibration.md).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "example_models.h"
#include "calibration/calibrate.h"
#include "calibration/calibration_file.h"
#include "calibration/fit_residuals.h"
#include "calibration/stripe_trace.h"
#include "calibration/target.h"
#include "calibration_fixtures.h"
#include "core/errors.h"
#include "core/sheet_of_light.h"
#include "io/image_writer.h"
#include "test_helpers.h"

namespace stripeline {
namespace {

using test::kDeg;
using test::realistic_model;

// Every message of a bad file: one line, naming the file.
void expect_one_line(const std::string& message, const std::string& origin, const std::string& needle) {
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.rfind(origin, 0), 0u) << message;
  EXPECT_NE(message.find(needle), std::string::npos) << "'" << needle << "' not in: " << message;
}

// ---------------------------------------------------------------------------
// The model

TEST(SheetOfLightModel, LinearCalibrationIsTheSimplestModel) {
  LinearCalibration lin;
  lin.enabled = true;
  lin.x_scale = 0.05;
  lin.x_offset = -51.2;
  lin.y_scale = 0.25;
  lin.y_offset = 3.0;
  lin.z_scale = -0.1;
  lin.z_offset = 30.0;
  const SheetOfLightModel m = from_linear(lin);
  EXPECT_EQ(m.unit, "mm");
  const auto map = m.map<double>();
  for (double u : {0.0, 17.25, 1023.5, 2047.0})
    for (double v : {0.0, 3.5, 51.0}) {
      double X = 0, Z = 0;
      ASSERT_TRUE(image_to_plane(map, u, v, X, Z));
      EXPECT_DOUBLE_EQ(X, lin.x(u));
      EXPECT_DOUBLE_EQ(Z, lin.z(v));
      double wx, wy, wz;
      ASSERT_TRUE(image_to_world(map, u, v, 40, 0, wx, wy, wz));
      EXPECT_DOUBLE_EQ(wy, lin.y(40.0));
    }
  lin.y_from_encoder = true;
  EXPECT_DOUBLE_EQ(motion_y(from_linear(lin).map<double>(), 40, 160), lin.y(160.0));

  // Disabled: the identity in pixels, y = the frame index.
  const SheetOfLightModel id = from_linear(LinearCalibration{});
  EXPECT_EQ(id.unit, "px");
  double X, Z;
  ASSERT_TRUE(id.image_to_plane(12.0, 7.25, X, Z));
  EXPECT_EQ(X, 12.0);
  EXPECT_EQ(Z, 7.25);
  EXPECT_EQ(motion_y(id.map<double>(), 9, 1234), 9.0);

  // And it is a file of the same format.
  CalibrationFile f;
  f.model = from_linear(lin);
  f.y_step_mm = 1.0;
  f.y_per_tick_mm = lin.y_scale;
  const CalibrationFile back = parse_calibration(format_calibration(f), "linear.toml");
  EXPECT_EQ(back.model.kind, SheetOfLightModel::Kind::Linear);
  EXPECT_TRUE(back.model.y_from_encoder);
  ASSERT_TRUE(back.model.image_to_plane(100.0, 20.0, X, Z));
  EXPECT_DOUBLE_EQ(X, lin.x(100.0));
  EXPECT_DOUBLE_EQ(Z, lin.z(20.0));
  EXPECT_DOUBLE_EQ(motion_y(back.model.map<double>(), 0, 160), lin.y(160.0));
}

// A kernel may evaluate in float: over the whole sensor it stays within 1e-4
// mm of double (the CPU/CUDA agreement the GPU path must meet).
TEST(SheetOfLightModel, FloatStaysCloseToDoubleOverTheSensor) {
  const SheetOfLightModel m = realistic_model();
  const auto md = m.map<double>();
  const auto mf = m.map<float>();
  double worst = 0;
  for (int v = 0; v < 1088; v += 7)
    for (int u = 0; u < 2048; u += 13) {
      const double vv = v + 0.390625, uu = u;  // a sub-pixel row, as the extraction gives (1/256 px)
      double Xd, Zd;
      float Xf, Zf;
      ASSERT_TRUE(image_to_plane(md, uu, vv, Xd, Zd));
      ASSERT_TRUE(image_to_plane(mf, static_cast<float>(uu), static_cast<float>(vv), Xf, Zf));
      worst = std::max({worst, std::abs(Xf - Xd), std::abs(Zf - Zd)});
    }
  std::printf("[ model ] float vs double over the 2048x1088 sensor: max %.2e mm\n", worst);
  EXPECT_LT(worst, 5e-5);  // well inside the 1e-4 mm CPU/CUDA budget
}

TEST(SheetOfLightModel, SkewTurnsTheLaserPlaneInTheWorld) {
  SheetOfLightModel m = realistic_model();
  m.y_step = 0.5;
  m.y_offset = 1.0;
  double wx, wy, wz;
  plane_to_world(m.map<double>(), 10.0, 4.0, motion_y(m.map<double>(), 6, 0), wx, wy, wz);
  EXPECT_DOUBLE_EQ(wx, 10.0);
  EXPECT_DOUBLE_EQ(wy, 4.0);
  EXPECT_DOUBLE_EQ(wz, 4.0);
  m.skew_about_x_deg = 10.0;  // the plane leans back: a higher point sits at a smaller Y
  plane_to_world(m.map<double>(), 10.0, 4.0, 4.0, wx, wy, wz);
  EXPECT_NEAR(wx, 10.0, 1e-12);
  EXPECT_NEAR(wy, 4.0 - 4.0 * std::sin(10 * kDeg), 1e-12);
  EXPECT_NEAR(wz, 4.0 * std::cos(10 * kDeg), 1e-12);
  m.skew_about_x_deg = 0.0;
  m.skew_about_z_deg = 5.0;  // the line is not square to the motion
  plane_to_world(m.map<double>(), 10.0, 4.0, 0.0, wx, wy, wz);
  EXPECT_NEAR(wx, 10.0 * std::cos(5 * kDeg), 1e-12);
  EXPECT_NEAR(wy, 10.0 * std::sin(5 * kDeg), 1e-12);
  EXPECT_NEAR(wz, 4.0, 1e-12);
  // The plane's axes stay orthonormal and (ax, motion, az) right-handed for any skew.
  m.skew_about_x_deg = 7.0;
  const auto map = m.map<double>();
  const Eigen::Vector3d ax(map.ax[0], map.ax[1], map.ax[2]), az(map.az[0], map.az[1], map.az[2]);
  EXPECT_NEAR(ax.norm(), 1.0, 1e-12);
  EXPECT_NEAR(az.norm(), 1.0, 1e-12);
  EXPECT_NEAR(ax.dot(az), 0.0, 1e-12);
  EXPECT_GT(ax.cross(Eigen::Vector3d(0, 1, 0)).dot(az), 0.9);
}

TEST(SheetOfLightModel, PointsBeyondThePlanesHorizonAreNoPoints) {
  SheetOfLightModel m = realistic_model();
  double X = 7, Z = 8;
  // h31, h32 put the horizon (W = 0) at normalised y = 1 / 0.346: below row ~3500.
  EXPECT_FALSE(m.image_to_plane(1000.0, 543.5 + 1024.0 * 3.0, X, Z));
  EXPECT_EQ(X, 7);
  EXPECT_EQ(Z, 8);
  EXPECT_TRUE(m.image_to_plane(1000.0, 600.0, X, Z));
}

// Why the correction direction: on the simulated lens (projection-direction
// Brown-Conrady, k1 = -0.12, k2 = 0.25 at f = 5120 px), the best correction
// polynomial about the sensor centre (with the affine part a homography
// absorbs) against the exact inverse, and the projection model inverted by a
// fixed number of fixed-point iterations, over the calibrated ROI and the
// whole sensor. Figures in docs/calibration.md.
TEST(SheetOfLightModel, CorrectionPolynomialInvertsTheLens) {
  const TriangulationGeometry g;
  auto exact_ideal = [&](double u, double v, double& xn, double& yn) {  // Newton, to 1e-15
    const double xd = (u - g.cx) / g.focal_px, yd = (v - g.cy) / g.focal_px;
    xn = xd;
    yn = yd;
    for (int it = 0; it < 50; ++it) {
      const double r2 = xn * xn + yn * yn, rad = 1 + r2 * (g.k1 + r2 * (g.k2 + r2 * g.k3));
      const double fx = xn * rad + 2 * g.p1 * xn * yn + g.p2 * (r2 + 2 * xn * xn) - xd;
      const double fy = yn * rad + g.p1 * (r2 + 2 * yn * yn) + 2 * g.p2 * xn * yn - yd;
      const double dr = g.k1 + r2 * (2 * g.k2 + 3 * g.k3 * r2);
      const double a = rad + 2 * xn * xn * dr + 2 * g.p1 * yn + 6 * g.p2 * xn, b = 2 * xn * yn * dr + 2 * g.p1 * xn + 2 * g.p2 * yn;
      const double e = rad + 2 * yn * yn * dr + 6 * g.p1 * yn + 2 * g.p2 * xn;
      const double det = a * e - b * b;
      xn -= (e * fx - b * fy) / det;
      yn -= (a * fy - b * fx) / det;
    }
  };
  auto iterate_ideal = [&](double u, double v, int n, double& xn, double& yn) {  // x <- (xd - tangential(x)) / radial(x)
    const double xd = (u - g.cx) / g.focal_px, yd = (v - g.cy) / g.focal_px;
    xn = xd;
    yn = yd;
    for (int it = 0; it < n; ++it) {
      const double r2 = xn * xn + yn * yn, rad = 1 + r2 * (g.k1 + r2 * (g.k2 + r2 * g.k3));
      const double tx = 2 * g.p1 * xn * yn + g.p2 * (r2 + 2 * xn * xn), ty = g.p1 * (r2 + 2 * yn * yn) + 2 * g.p2 * xn * yn;
      xn = (xd - tx) / rad;
      yn = (yd - ty) / rad;
    }
  };
  const double cu = 1023.5, cv = 543.5, s = 1024.0;
  struct Region {
    const char* name;
    double v0, v1;
  };
  double roi_error = 0;
  for (const Region& r : {Region{"ROI rows 428..683", 428, 683}, Region{"whole sensor", 0, 1087}}) {
    // Least squares: xu - x = sum c_k basis_k (the model's 5 terms + affine 1, x, y per axis).
    std::vector<std::array<double, 4>> pts;  // x, y (normalised distorted), xu, yu (normalised ideal)
    for (double v = r.v0; v <= r.v1; v += 8)
      for (double u = 0; u <= 2047; u += 16) {
        double xn, yn;
        exact_ideal(u, v, xn, yn);
        pts.push_back({(u - cu) / s, (v - cv) / s, (g.focal_px * xn + g.cx - cu) / s, (g.focal_px * yn + g.cy - cv) / s});
      }
    const int K = 5 + 6;
    Eigen::MatrixXd A(2 * static_cast<Eigen::Index>(pts.size()), K);
    Eigen::VectorXd b(A.rows());
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const double x = pts[i][0], y = pts[i][1], r2 = x * x + y * y;
      const auto ri = static_cast<Eigen::Index>(2 * i);
      A.row(ri) << x * r2, x * r2 * r2, x * r2 * r2 * r2, 2 * x * y, r2 + 2 * x * x, 1, x, y, 0, 0, 0;
      A.row(ri + 1) << y * r2, y * r2 * r2, y * r2 * r2 * r2, r2 + 2 * y * y, 2 * x * y, 0, 0, 0, 1, x, y;
      b[ri] = pts[i][2] - x;
      b[ri + 1] = pts[i][3] - y;
    }
    const Eigen::VectorXd c = A.colPivHouseholderQr().solve(b);
    const double correction_px = (A * c - b).cwiseAbs().maxCoeff() * s;
    double iterated_px[5] = {0, 0, 0, 0, 0};
    for (double v = r.v0; v <= r.v1; v += 8)
      for (double u = 0; u <= 2047; u += 16) {
        double xe, ye;
        exact_ideal(u, v, xe, ye);
        for (int n = 1; n <= 5; ++n) {
          double xi, yi;
          iterate_ideal(u, v, n, xi, yi);
          iterated_px[n - 1] = std::max(iterated_px[n - 1], g.focal_px * std::hypot(xi - xe, yi - ye));
        }
      }
    std::printf("[ model ] %s: correction polynomial max error %.5f px; projection model inverted by 1..5 iterations: %.4f %.5f %.6f %.7f %.8f px\n",
                r.name, correction_px, iterated_px[0], iterated_px[1], iterated_px[2], iterated_px[3], iterated_px[4]);
    if (r.v0 > 0) roi_error = correction_px;
    EXPECT_LT(correction_px, 0.05) << r.name;
  }
  EXPECT_LT(roi_error, 0.01);
}

// ---------------------------------------------------------------------------
// The calibration file

TEST(CalibrationFile, WritesAndReadsBackBitIdentical) {
  CalibrationFile f = test::realistic_calibration_file();
  f.model.skew_about_x_deg = 0.3;
  f.fit.target = "saw \"60\"";  // a quote inside the string survives the round trip
  const std::string text = format_calibration(f);
  const CalibrationFile back = parse_calibration(text, "cal.toml");
  for (int i = 0; i < 9; ++i) EXPECT_EQ(back.model.homography[i], f.model.homography[i]) << i;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(back.model.distortion[i], f.model.distortion[i]) << i;
  EXPECT_EQ(back.model.cu, f.model.cu);
  EXPECT_EQ(back.model.scale, f.model.scale);
  EXPECT_EQ(back.model.y_step, 0.1);
  EXPECT_EQ(back.model.y_offset, -0.1);
  EXPECT_EQ(back.model.skew_about_x_deg, 0.3);
  EXPECT_EQ(back.roi, f.roi);
  EXPECT_EQ(back.sensor_width, 2048);
  EXPECT_EQ(back.fit.target, f.fit.target);
  EXPECT_EQ(back.fit.frames_used, 40u);
  EXPECT_EQ(back.id, model_id(f.model));
  EXPECT_EQ(format_calibration(back), text);
  EXPECT_NE(text.find("direction = \"correction\""), std::string::npos);

  test::TempDir dir;
  save_calibration(dir / "cal.toml", f);
  EXPECT_EQ(load_calibration(dir / "cal.toml").id, back.id);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"cal.toml"});
}

TEST(CalibrationFile, AnEditedValueNoLongerMatchesItsId) {
  CalibrationFile f;
  f.model = realistic_model();
  std::string text = format_calibration(f);
  const auto at = text.find("scale = 1024.0");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 14, "scale = 1000.0");
  try {
    parse_calibration(text, "edited.toml");
    FAIL() << "an edited file was accepted";
  } catch (const InputError& e) {
    expect_one_line(e.what(), "edited.toml", "calibration.id");
  }
  // Without the id line the values are taken as they are.
  const auto id_at = text.find("id = ");
  text.erase(id_at, text.find('\n', id_at) - id_at);
  EXPECT_EQ(parse_calibration(text, "edited.toml").model.scale, 1000.0);
}

TEST(CalibrationFile, BadFilesGiveOneClearLine) {
  CalibrationFile good;
  good.model = realistic_model();
  good.sensor_width = 2048;
  good.sensor_height = 1088;
  good.roi = {0, 428, 2048, 256};
  std::string base = format_calibration(good);
  base.erase(base.find("id = "), base.find('\n', base.find("id = ")) - base.find("id = "));  // so edits are allowed
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = base;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not toml [", "bad.toml:"},
      {"[target]\nunit = \"mm\"\n", "bad.toml: target: unknown section"},
      {"[sensor]\nwidth = 10\n", "calibration: missing"},
      {with("version = 1", "version = 2"), "calibration.version: 2 is not supported (expected 1)"},
      {with("format = \"stripeline-calibration\"", "format = \"other\""), "calibration.format"},
      {with("model = \"sheet-of-light\"", "model = \"spline\""), "calibration.model: \"spline\" is not known"},
      {with("unit = \"mm\"", "unit = \"inch\""), "calibration.unit"},
      {with("direction = \"correction\"", "direction = \"projection\""), "distortion.direction: \"projection\" is not supported (expected \"correction\""},
      {with("k = [", "k = [1.0, "), "distortion.k: expected an array of 3 numbers"},
      {with("p = [", "pp = ["), "distortion.p: missing"},
      {with("scale = 1024.0", "scale = -3.0"), "distortion.scale: -3"},
      {with("scale = 1024.0", "scale = \"big\""), "distortion.scale: expected a number"},
      {with("h = [[", "h = [[1.0, "), "homography.h: expected 3 rows of 3 numbers"},
      {with("[homography]", "[homograph]"), "homograph: unknown section"},
      {with("roi = [0, 428, 2048, 256]", "roi = [0, 900, 2048, 256]"), "sensor.roi: [0, 900, 2048, 256] reaches outside the 2048x1088 sensor"},
      {with("roi = [0, 428, 2048, 256]", "roi = [0, 428.5, 2048, 256]"), "sensor.roi: expected [x, y, width, height]"},
      {with("width = 2048", "width = 2048\ncolour = true"), "sensor.colour: unknown key"},
      {with("y_source = \"frame\"", "y_source = \"wheel\""), "motion.y_source: \"wheel\" is not known"},
      {with("y_source = \"frame\"", "y_source = \"encoder\""), "motion.y_per_tick_mm: missing or 0"},
      {with("y_step_mm = 1.0", "y_step_mm = 0.0"), "motion.y_step_mm: 0"},
      {with("skew_about_x_deg = 0.0", "skew_about_x_deg = 60.0"), "motion.skew_about_x_deg: 60"},
      {with("1.0]]", "-1.0]]"), "homography.h: maps the image point"},
  };
  for (const auto& [text, needle] : cases) {
    try {
      parse_calibration(text, "bad.toml");
      ADD_FAILURE() << "accepted a file that should give: " << needle;
    } catch (const InputError& e) {
      expect_one_line(e.what(), "bad.toml", needle);
    }
  }
  try {
    load_calibration("/nonexistent/cal.toml");
    ADD_FAILURE() << "a missing file was accepted";
  } catch (const InputError& e) {
    expect_one_line(e.what(), "/nonexistent/cal.toml", "cannot open");
  }
}

// ---------------------------------------------------------------------------
// Targets

TEST(CalibrationTarget, ShippedTargetsParse) {
  const CalibrationTarget saw = load_target(test::target_path("sawtooth.toml"));
  EXPECT_EQ(saw.name, "sawtooth-60x5");
  EXPECT_EQ(saw.profile.size(), 13u);
  EXPECT_EQ(saw.corners(), 11);
  EXPECT_DOUBLE_EQ(saw.length(), 60.0);
  EXPECT_DOUBLE_EQ(saw.height(), 5.0);
  for (int i = 1; i <= saw.corners(); ++i) EXPECT_EQ(saw.turn(i), i % 2 ? +1 : -1) << i;  // peaks at odd vertices
  const CalibrationTarget step = load_target(test::target_path("step.toml"));
  EXPECT_EQ(step.corners(), 8);
  EXPECT_EQ(step.turn(1), -1);  // flat then up: a valley
  EXPECT_EQ(step.turn(2), +1);
  EXPECT_EQ(step.turn(5), +1);  // the top's far edge
}

TEST(CalibrationTarget, BadTargetsGiveOneClearLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[target\nunit = \"mm\"", "t.toml:1:"},
      {"unit = \"mm\"\n", "t.toml: unit: unknown section or key (expected [target])"},
      {"[other]\n", "expected [target]"},
      {"[target]\nprofile = [[0, 0], [5, 5], [10, 0]]\n", "target.unit: missing"},
      {"[target]\nunit = \"inch\"\nprofile = [[0, 0], [5, 5], [10, 0]]\n", "target.unit: \"inch\" is not supported (expected \"mm\")"},
      {"[target]\nunit = \"mm\"\n", "target.profile: missing"},
      {"[target]\nunit = \"mm\"\nprofile = [[0, 0], [5, 5]]\n", "target.profile: 2 vertices (expected at least 3"},
      {"[target]\nunit = \"mm\"\nprofile = [[0, 0], [5], [10, 0]]\n", "target.profile[1]: expected a pair [x, z] of numbers"},
      {"[target]\nunit = \"mm\"\nprofile = [[0, 0], [5, \"a\"], [10, 0]]\n", "target.profile[1]: expected a pair"},
      {"[target]\nunit = \"mm\"\nprofile = [[0, 0], [5, 5], [5, 0]]\n", "target.profile[2]: x = 5 after x = 5 (expected x strictly increasing"},
      {"[target]\nunit = \"mm\"\nprofile = [[0, 0], [5, 0], [10, 0.1]]\n", "target.profile[1]: turns by 1.1"},
      {"[target]\nunit = \"mm\"\nprofile = [[0, 0], [0.2, 0.2], [10, 0]]\n", "target.profile[1]: segment of 0.28"},
      {"[target]\nunit = \"mm\"\nprofile = [[0, 0], [5, 5], [10, 0]]\ncolour = 1\n", "target.colour: unknown key"},
      {"[target]\nunit = \"mm\"\nprofile = [[0, 0], [5, 5], [10, nan]]\n", "target.profile[2]: [10, nan] (expected finite"},
  };
  for (const auto& [text, needle] : cases) {
    try {
      parse_target(text, "t.toml");
      ADD_FAILURE() << "accepted a target that should give: " << needle;
    } catch (const InputError& e) {
      expect_one_line(e.what(), "t.toml", needle);
    }
  }
}

// ---------------------------------------------------------------------------
// The fit's pieces

// The analytic derivatives of the point residual equal Ceres' dual numbers.
TEST(CalibrationFit, AnalyticResidualMatchesDualNumbers) {
  const SheetOfLightModel m = realistic_model();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> U(-1, 1);
  for (int trial = 0; trial < 50; ++trial) {
    const fit_detail::PointResidual p{1024 + 1000 * U(rng), 550 + 120 * U(rng), m.cu, m.cv, 1.0 / m.scale, 5 + 5 * U(rng), 2.5 * U(rng),
                                      std::cos(0.8 * U(rng)), 0.0, 0.3 + U(rng) * 0.1};
    fit_detail::PointResidual q = p;
    q.dz = std::sqrt(1 - q.dx * q.dx) * (U(rng) > 0 ? 1 : -1);
    double pose[3] = {-30 + 10 * U(rng), 5 * U(rng), 0.1 * U(rng)};
    double h[9], d[5];
    std::copy(m.homography, m.homography + 9, h);
    for (int i = 0; i < 5; ++i) d[i] = m.distortion[i] * (1 + 0.5 * U(rng));
    const double* params[3] = {pose, h, d};
    double ja[3][9], jb[3][9], ra = 0, rb = 0;
    double* jac_a[3] = {ja[0], ja[1], ja[2]};
    double* jac_b[3] = {jb[0], jb[1], jb[2]};
    ceres::AutoDiffCostFunction<fit_detail::PointResidual, 1, 3, 9, 5> dual(new fit_detail::PointResidual(q));
    fit_detail::PointCost analytic(q);
    ASSERT_TRUE(dual.Evaluate(params, &ra, jac_a));
    ASSERT_TRUE(analytic.Evaluate(params, &rb, jac_b));
    EXPECT_NEAR(ra, rb, 1e-12 * (1 + std::abs(ra)));
    const int sizes[3] = {3, 9, 5};
    for (int b = 0; b < 3; ++b)
      for (int k = 0; k < sizes[b]; ++k) EXPECT_NEAR(ja[b][k], jb[b][k], 1e-9 * (1 + std::abs(ja[b][k]))) << "block " << b << " entry " << k;
  }
}

// A noisy sawtooth in image pixels: one corner per vertex, at the vertex,
// with its turn; the ends are not corners.
TEST(CalibrationFit, TraceFindsTheCornersOfAPolyline) {
  const double vu[5][2] = {{300, 600}, {400, 550}, {500, 600}, {600, 550}, {700, 600}};
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0.0, 0.05);
  std::vector<double> u, v;
  for (int c = 300; c <= 700; ++c) {
    const int k = std::min(3, (c - 300) / 100);
    const double t = (c - vu[k][0]) / (vu[k + 1][0] - vu[k][0]);
    u.push_back(c);
    v.push_back(vu[k][1] + t * (vu[k + 1][1] - vu[k][1]) + noise(rng));
  }
  const SensorRoi roi{0, 428, 2048, 256};
  const fit_detail::Trace tr = fit_detail::trace_frame(u, v, roi, 4.0);
  EXPECT_EQ(tr.runs, 1);
  EXPECT_TRUE(tr.whole);
  ASSERT_EQ(tr.corners.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(tr.corners[static_cast<std::size_t>(i)].u, vu[i + 1][0], 0.05) << i;
    EXPECT_NEAR(tr.corners[static_cast<std::size_t>(i)].v, vu[i + 1][1], 0.05) << i;
    // A minimum of v (a peak on screen, rows growing downward) turns counter-clockwise in (u, v).
    EXPECT_EQ(tr.corners[static_cast<std::size_t>(i)].cross > 0, i % 2 == 0) << i;
  }
  EXPECT_EQ(tr.u_first, 300);
  EXPECT_EQ(tr.u_last, 700);
  // A gap cuts the run; touching the ROI's side means not whole.
  u.erase(u.begin() + 150, u.begin() + 160);
  v.erase(v.begin() + 150, v.begin() + 160);
  EXPECT_EQ(fit_detail::trace_frame(u, v, roi, 4.0).runs, 2);
  for (auto& x : u) x -= 295;
  EXPECT_FALSE(fit_detail::trace_frame(u, v, roi, 4.0).whole);
}

TEST(CalibrationFit, TheWrongTargetCannotBeFitted) {
  const CalibrationTarget saw = load_target(test::target_path("sawtooth.toml"));
  const CalibrationTarget step = load_target(test::target_path("step.toml"));
  auto rec = test::target_recording(saw, 8, 0.0, 0.0);
  const ObservationSet obs = extract_observations(*rec, ChainConfig{}, rec->config().roi.x, rec->config().roi.y);
  FitOptions o = test::calibrate_options(rec->config()).fit;
  o.origin = "saw.tiff";
  try {
    fit_sheet_of_light(obs, step, o);
    FAIL() << "a sawtooth recording fitted the step target";
  } catch (const InputError& e) {
    expect_one_line(e.what(), "saw.tiff", "the target cannot be fitted: only 0 of 8 frames show the whole target with its 8 corners");
  }
  // Frames without a stripe: nothing to fit either.
  ObservationSet empty = obs;
  for (auto& f : empty.frames) {
    f.u.resize(10);
    f.v.resize(10);
  }
  try {
    fit_sheet_of_light(empty, saw, o);
    FAIL() << "frames without a stripe were fitted";
  } catch (const InputError& e) {
    expect_one_line(e.what(), "saw.tiff", "cannot be fitted");
  }
}

// Poses kept below 9 mm leave the upper part of the measuring range (and the
// rows that see it) without target points: the fit says so.
TEST(CalibrationFit, WarnsWhenPartOfTheMeasuringRangeIsUncovered) {
  const CalibrationTarget saw = load_target(test::target_path("sawtooth.toml"));
  auto rec = test::target_recording(saw, 16, 0.0, 0.0, 5, 9.0);
  const CalibrationRun run = calibrate(*rec, saw, test::calibrate_options(rec->config()));
  bool rows_warned = false;
  for (const auto& w : run.fit.warnings) rows_warned = rows_warned || w.rfind("sensor rows 428..", 0) == 0;
  EXPECT_TRUE(rows_warned) << run.report["warnings"].dump();
  for (const auto& w : run.fit.warnings) std::printf("[ calibration ] warning: %s\n", w.c_str());
  EXPECT_LT(run.fit.coverage.covered_fraction, 0.75);
  EXPECT_LT(run.fit.coverage.z_max_mm, 14.5);
  EXPECT_EQ(run.report["warnings"].size(), run.fit.warnings.size());
}

// ---------------------------------------------------------------------------
// Acceptance on the synthetic triangulation sensor (the issue's figures):
// calibrate on a recording of the sawtooth with the default extraction, then
// measure parts of known geometry through the calibration.

struct Scenario {
  const char* name;
  std::uint64_t frames;
  double out_of_view, corrupted;
};

void PrintTo(const Scenario& s, std::ostream* os) { *os << s.name; }

class CalibrationAcceptance : public ::testing::TestWithParam<Scenario> {};

TEST_P(CalibrationAcceptance, MeetsTheIssuesFigures) {
  const Scenario& sc = GetParam();
  const CalibrationTarget target = load_target(test::target_path("sawtooth.toml"));
  auto rec = test::target_recording(target, sc.frames, sc.out_of_view, sc.corrupted);
  const CalibrateOptions options = test::calibrate_options(rec->config());
  const CalibrationRun run = calibrate(*rec, target, options);
  const CalibrationFit& fit = run.fit;
  const auto& scene = dynamic_cast<const TargetScene&>(rec->scene());

  // Corrupted frames are rejected, nothing else is.
  std::set<std::uint64_t> corrupted, rejected, partial;
  for (std::uint64_t f = 0; f < sc.frames; ++f) {
    if (is_corrupted(scene.kind(f))) corrupted.insert(f);
    if (scene.kind(f) == TargetFrameKind::PartlyOutOfView) partial.insert(f);
  }
  for (const auto& r : fit.rejected) {
    rejected.insert(r.frame);
    EXPECT_FALSE(r.reason.empty());
    EXPECT_FALSE(r.detail.empty());
  }
  EXPECT_EQ(rejected, corrupted);
  EXPECT_EQ(corrupted.size(), static_cast<std::size_t>(std::llround(sc.corrupted * sc.frames)));
  std::size_t partial_used = 0;
  for (const auto& p : fit.poses) partial_used += partial.count(p.frame);
  EXPECT_EQ(partial_used, partial.size());

  // Residuals, and the mapping against truth over the region the target covered.
  const test::TruthComparison truth =
      test::compare_with_truth(fit.model, rec->camera(), fit.coverage.u_min, fit.coverage.u_max, fit.coverage.v_min, fit.coverage.v_max);
  const SensorRoi& roi = rec->config().roi;
  const test::TruthComparison whole_roi = test::compare_with_truth(fit.model, rec->camera(), roi.x, roi.x + roi.width - 1, roi.y, roi.y + roi.height - 1);
  const double x_origin = test::truth_x_origin(rec->camera());

  // Parts through the calibration.
  const test::GaugeMeasurement gauge =
      test::measure_gauge_blocks(test::parts_scan("gauge", roi, 20), fit.model, x_origin);
  const test::SphereRampMeasurement sr = test::measure_sphere_and_ramp(test::parts_scan("sphere-ramp", roi, 50), fit.model, x_origin);
  const double distance_error = sr.centre_to_foot - test::SphereRampScene::centre_to_foot_line();

  std::printf("[ calibration ] %s: %llu frames (%zu partly out of view, %zu corrupted), %zu rejected, %zu used, %llu points, %.2f s\n", sc.name,
              static_cast<unsigned long long>(sc.frames), partial.size(), corrupted.size(), fit.rejected.size(), fit.poses.size(),
              static_cast<unsigned long long>(fit.points_used), fit.seconds);
  std::printf("[ calibration ]   residual RMS %.4f px (%.2f um), max %.3f px; vs truth: max %.4f px, RMS %.4f px over the covered region"
              " (%.4f px over the whole ROI); gauge: rotation %.5f deg, Z shift %.2f um, X shift %.2f um\n",
              fit.residual_rms_px, fit.residual_rms_mm * 1000, fit.residual_max_px, truth.max_px, truth.rms_px, whole_roi.max_px,
              truth.rotation_deg, truth.shift_z * 1000, (truth.shift_x - x_origin) * 1000);
  std::printf("[ calibration ]   gauge blocks 1, 2, 5, 10 mm: errors %.2f %.2f %.2f %.2f um; sphere radius error %.2f um (RMS %.2f um);"
              " tilted plane flatness RMS %.2f um; sphere centre to foot line error %.2f um\n",
              (gauge.height[0] - 1) * 1000, (gauge.height[1] - 2) * 1000, (gauge.height[2] - 5) * 1000, (gauge.height[3] - 10) * 1000,
              (sr.sphere.radius - test::SphereRampScene::kRadius) * 1000, sr.sphere.rms * 1000, sr.ramp.rms * 1000, distance_error * 1000);

  EXPECT_LE(fit.residual_rms_px, 0.1);
  EXPECT_LE(truth.max_px, 0.05);
  // The documented gauge: the lowest pose lay flat on Z = 0 in the simulation,
  // and X = 0 is where the centre column meets Z = 0.
  EXPECT_LT(std::abs(truth.rotation_deg), 0.01);
  EXPECT_LT(std::abs(truth.shift_z), 0.005);
  EXPECT_LT(std::abs(truth.shift_x - x_origin), 0.005);
  for (int i = 0; i < 4; ++i) {
    EXPECT_GT(gauge.top_points[i], 1000u) << i;
    EXPECT_NEAR(gauge.height[i], test::GaugeScene::kHeights[i], 0.010) << "block " << i;
  }
  EXPECT_GT(sr.sphere_points, 2000u);
  EXPECT_GT(sr.ramp_points, 5000u);
  EXPECT_NEAR(sr.sphere.radius, test::SphereRampScene::kRadius, 0.020);
  EXPECT_LE(sr.ramp.rms, 0.010);
  EXPECT_NEAR(sr.centre_to_foot, test::SphereRampScene::centre_to_foot_line(), 0.020);

  // The file and the report carry the fit.
  EXPECT_EQ(run.file.roi, roi);
  EXPECT_EQ(run.file.fit.frames_used, fit.poses.size());
  EXPECT_EQ(parse_calibration(format_calibration(run.file), "cal.toml").id, run.file.id);
  const nlohmann::json& r = run.report;
  EXPECT_EQ(r["residual_rms_px"].get<double>(), fit.residual_rms_px);
  EXPECT_EQ(r["frames_rejected"].size(), corrupted.size());
  EXPECT_EQ(r["per_pose"].size(), fit.poses.size());
  for (const char* key : {"residual_max_px", "residual_rms_mm", "residual_max_mm", "coverage", "parameters", "warnings", "gauge", "points"})
    EXPECT_TRUE(r.contains(key)) << key;
  EXPECT_GT(r["parameters"]["h11"]["std"].get<double>(), 0.0);
  EXPECT_GT(r["coverage"]["covered_fraction"].get<double>(), 0.5);
}

INSTANTIATE_TEST_SUITE_P(Sawtooth, CalibrationAcceptance,
                         ::testing::Values(Scenario{"clean", 40, 0.0, 0.0}, Scenario{"partial_and_corrupted", 100, 1.0 / 3.0, 0.02}),
                         [](const ::testing::TestParamInfo<Scenario>& i) { return std::string(i.param.name); });

// A calibration made with one ROI measures a recording taken with another:
// image points are full-sensor pixels.
TEST(CalibrationRoi, ACalibrationAppliesToAnotherRoi) {
  const CalibrationTarget target = load_target(test::target_path("sawtooth.toml"));
  auto rec = test::target_recording(target, 30, 0.0, 0.0);
  const CalibrationRun run = calibrate(*rec, target, test::calibrate_options(rec->config()));
  const SensorRoi other{160, 460, 1700, 232};
  const double x_origin = test::truth_x_origin(rec->camera());
  const test::GaugeMeasurement g = test::measure_gauge_blocks(test::parts_scan("gauge", other, 20), run.fit.model, x_origin);
  std::printf("[ calibration ] made at ROI (0, 428) 2048x256, measured at ROI (160, 460) 1700x232: block errors %.2f %.2f %.2f %.2f um\n",
              (g.height[0] - 1) * 1000, (g.height[1] - 2) * 1000, (g.height[2] - 5) * 1000, (g.height[3] - 10) * 1000);
  for (int i = 0; i < 4; ++i) {
    EXPECT_GT(g.top_points[i], 1000u) << i;
    EXPECT_NEAR(g.height[i], test::GaugeScene::kHeights[i], 0.010) << "block " << i;
  }
  // Ignoring the offsets (reading rows as if the ROI started at the sensor's
  // top-left) would be millimetres off: the test can tell.
  ObservationSet shifted = test::parts_scan("gauge", other, 20);
  for (auto& f : shifted.frames)
    for (auto& v : f.v) v -= other.y - 428;
  const test::GaugeMeasurement wrong = test::measure_gauge_blocks(shifted, run.fit.model, x_origin);
  EXPECT_GT(std::abs(wrong.height[3] - 10.0), 0.1);
}

// ---------------------------------------------------------------------------
// `stripeline calibrate`

TEST(CalibrateCommand, WritesTheFileAndTheReport) {
  test::TempDir dir;
  const CalibrationTarget step = load_target(test::target_path("step.toml"));
  auto rec = test::target_recording(step, 24, 0.25, 0.0, 3);
  const BatchLayout layout = rec->frame_layout();
  std::vector<std::uint8_t> image(layout.frame_pixels() * 24);
  for (std::uint64_t f = 0; f < 24; ++f) rec->render(f, reinterpret_cast<std::byte*>(image.data() + f * layout.frame_pixels()));
  io::write_image(dir / "rec.tiff", image.data(), layout.width, 24 * layout.frame_height, PixelFormat::Mono8);

  std::string out;
  const std::string common =
      (dir / "rec.tiff").string() + " -H 256 --target " + test::target_path("step.toml") + " --roi-offset 0,428 --sensor 2048x1088";
  const int rc = test::run_cli("calibrate " + common + " --y-step 0.2 --out " + (dir / "cal.toml").string() + " --report " +
                                   (dir / "report.json").string(),
                               &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("calibrated"), std::string::npos) << out;
  const CalibrationFile cal = load_calibration(dir / "cal.toml");
  EXPECT_EQ(cal.model.kind, SheetOfLightModel::Kind::SheetOfLight);
  EXPECT_EQ(cal.roi, (SensorRoi{0, 428, 2048, 256}));
  EXPECT_EQ(cal.y_step_mm, 0.2);
  EXPECT_EQ(cal.fit.target, "step-2x4");
  std::ifstream in(dir / "report.json");
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_LE(report["residual_rms_px"].get<double>(), 0.1);
  EXPECT_TRUE(report["frames_rejected"].is_array());
  const test::TruthComparison truth = test::compare_with_truth(cal.model, rec->camera(), report["coverage"]["u_range"][0], report["coverage"]["u_range"][1],
                                                         report["coverage"]["v_range"][0], report["coverage"]["v_range"][1]);
  std::printf("[ calibration ] step target through the CLI: residual RMS %.4f px, vs truth max %.4f px\n", report["residual_rms_px"].get<double>(),
              truth.max_px);
  EXPECT_LE(truth.max_px, 0.05);

  // Bad input: one line, exit 2, nothing written.
  auto args = [&](const std::string& target, const std::string& extra, int frame_height = 256) {
    return (dir / "rec.tiff").string() + " -H " + std::to_string(frame_height) + " --target " + target + " --out " + (dir / "x.toml").string() +
           " " + extra;
  };
  const std::string step_file = test::target_path("step.toml");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {args("/nonexistent.toml", "--roi-offset 0,428"), "/nonexistent.toml: cannot open the target file"},
      {args(step_file, "--roi-offset 5"), "--roi-offset '5' is not understood"},
      {args(step_file, "--roi-offset 0,900 --sensor 2048x1088"), "reach outside the 2048x1088 sensor"},
      {args(step_file, "--y-step 0"), "--y-step"},
      {args(test::target_path("sawtooth.toml"), "--roi-offset 0,428"), "the target cannot be fitted"},
      {args(step_file, "", 100), "rec.tiff"},
  };
  for (const auto& [a, needle] : bad) {
    std::string msg;
    EXPECT_EQ(test::run_cli("calibrate " + a, &msg), 2) << a << "\n" << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_EQ(std::count(msg.begin(), msg.end(), '\n'), 1) << msg;
  }
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"cal.toml", "rec.tiff", "report.json"}));
}

}  // namespace
}  // namespace stripeline
