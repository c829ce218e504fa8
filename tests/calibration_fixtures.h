#pragma once
// Shared by the calibration tests: the simulated sheet-of-light sensor, target
// recordings, scans of parts with known geometry, and the measurements made on
// calibrated points (planes, spheres, lines) with Eigen.
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "acquisition/triangulation_scanner.h"
#include "acquisition/triangulation_scenes.h"
#include "calibration/calibrate.h"
#include "calibration/target.h"
#include "test_helpers.h"

namespace stripeline::test {

inline constexpr double kDeg = 3.14159265358979323846 / 180.0;

inline std::string target_path(const std::string& name) { return source_dir() + "/configs/targets/" + name; }

// The simulated sensor: 2048x1088, a 2048x256 ROI at (0, 428): Z about -1..24 mm.
inline TriangulationScannerConfig sensor_config(std::uint64_t frames, SensorRoi roi = {0, 428, 2048, 256}) {
  TriangulationScannerConfig c;
  c.frames = frames;
  c.roi = roi;
  return c;
}

inline std::unique_ptr<TriangulationScanner> target_recording(const CalibrationTarget& target, std::uint64_t frames, double out_of_view,
                                                              double corrupted, std::uint64_t seed = 1, double z_max_mm = 22.0) {
  TriangulationScannerConfig sc = sensor_config(frames);
  sc.seed = seed;
  TriangulationCamera camera(sc.geometry);
  TargetSceneConfig tc;
  tc.profile = target.profile;
  tc.frames = frames;
  tc.seed = seed;
  tc.out_of_view_fraction = out_of_view;
  tc.corrupted_fraction = corrupted;
  tc.z_max_mm = z_max_mm;
  return std::make_unique<TriangulationScanner>(sc, std::make_shared<TargetScene>(tc, camera, sc.roi));
}

inline CalibrateOptions calibrate_options(const TriangulationScannerConfig& sc) {
  CalibrateOptions o;
  o.roi_x = sc.roi.x;
  o.roi_y = sc.roi.y;
  o.fit.sensor_width = sc.geometry.sensor_width;
  o.fit.sensor_height = sc.geometry.sensor_height;
  o.fit.origin = "synthetic target recording";
  return o;
}

// The truth frame's X of the point where the sensor's centre column meets
// Z = 0: the fit's X origin (docs/calibration.md, the gauge).
inline double truth_x_origin(const TriangulationCamera& cam) {
  const double uc = 0.5 * (cam.geometry().sensor_width - 1);
  double v = cam.geometry().cy, X = 0, Z = 0;
  for (int i = 0; i < 60; ++i) {
    double Xa, Za, Xb, Zb;
    cam.back_project(uc, v, X, Z);
    cam.back_project(uc, v - 0.5, Xa, Za);
    cam.back_project(uc, v + 0.5, Xb, Zb);
    v -= Z / (Zb - Za);
  }
  cam.back_project(uc, v, X, Z);
  return X;
}

struct TruthComparison {
  double max_px = 0, rms_px = 0;     // fitted mapping vs truth, after a rigid alignment, mapped back through the true camera
  double max_mm = 0;
  double rotation_deg = 0, shift_x = 0, shift_z = 0;  // truth = R fit + shift
  std::size_t points = 0;
};

// Compares the fitted (u, v) -> (X, Z) with the simulator's exact one on a
// grid over [u0, u1] x [v0, v1]: the two frames differ by the gauge, so the
// best rigid transform is removed first; each fitted point is then projected
// through the true camera and compared with the pixel it came from.
inline TruthComparison compare_with_truth(const SheetOfLightModel& m, const TriangulationCamera& cam, double u0, double u1, double v0, double v1,
                                          double step = 4.0) {
  struct Pair {
    double u, v, xf, zf, xt, zt;
  };
  std::vector<Pair> g;
  for (double v = v0; v <= v1; v += step)
    for (double u = u0; u <= u1; u += step) {
      Pair p{u, v, 0, 0, 0, 0};
      if (m.image_to_plane(u, v, p.xf, p.zf) && cam.back_project(u, v, p.xt, p.zt)) g.push_back(p);
    }
  double mfx = 0, mfz = 0, mtx = 0, mtz = 0;
  for (const auto& p : g) {
    mfx += p.xf;
    mfz += p.zf;
    mtx += p.xt;
    mtz += p.zt;
  }
  const double n = static_cast<double>(g.size());
  mfx /= n;
  mfz /= n;
  mtx /= n;
  mtz /= n;
  double sc = 0, ss = 0;
  for (const auto& p : g) {
    const double ax = p.xf - mfx, az = p.zf - mfz, bx = p.xt - mtx, bz = p.zt - mtz;
    sc += ax * bx + az * bz;
    ss += ax * bz - az * bx;
  }
  const double th = std::atan2(ss, sc), c = std::cos(th), s = std::sin(th);
  TruthComparison r;
  r.rotation_deg = th / kDeg;
  r.shift_x = mtx - (c * mfx - s * mfz);
  r.shift_z = mtz - (s * mfx + c * mfz);
  double sum = 0;
  for (const auto& p : g) {
    const double X = r.shift_x + c * p.xf - s * p.zf, Z = r.shift_z + s * p.xf + c * p.zf;
    r.max_mm = std::max(r.max_mm, std::hypot(X - p.xt, Z - p.zt));
    double u, v;
    cam.project(X, 0.0, Z, u, v);
    const double e = std::hypot(u - p.u, v - p.v);
    r.max_px = std::max(r.max_px, e);
    sum += e * e;
  }
  r.points = g.size();
  r.rms_px = std::sqrt(sum / n);
  return r;
}

// ---------------------------------------------------------------------------
// Parts with known geometry, and measurements on calibrated points.

struct Point3 {
  double x, y, z;
  Eigen::Vector3d v() const { return {x, y, z}; }
};

struct PlaneFit {
  Eigen::Vector3d centre, normal;  // normal points up (+Z)
  double rms = 0;                  // flatness: RMS distance to the plane
  double distance(const Point3& p) const { return (p.v() - centre).dot(normal); }
};

inline PlaneFit fit_plane(const std::vector<Point3>& pts) {
  Eigen::Vector3d c = Eigen::Vector3d::Zero();
  for (const auto& p : pts) c += p.v();
  c /= static_cast<double>(pts.size());
  Eigen::Matrix3d C = Eigen::Matrix3d::Zero();
  for (const auto& p : pts) C += (p.v() - c) * (p.v() - c).transpose();
  Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> es(C);
  Eigen::Vector3d n = es.eigenvectors().col(0);
  if (n[2] < 0) n = -n;
  PlaneFit f{c, n, 0.0};
  double ss = 0;
  for (const auto& p : pts) ss += f.distance(p) * f.distance(p);
  f.rms = std::sqrt(ss / static_cast<double>(pts.size()));
  return f;
}

struct SphereFit {
  Eigen::Vector3d centre;
  double radius = 0, rms = 0;
};

// Algebraic start, then Gauss-Newton on the geometric distance.
inline SphereFit fit_sphere(const std::vector<Point3>& pts) {
  const auto n = static_cast<Eigen::Index>(pts.size());
  Eigen::MatrixXd A(n, 4);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& p = pts[static_cast<std::size_t>(i)];
    A.row(i) << 2 * p.x, 2 * p.y, 2 * p.z, 1.0;
    b[i] = p.v().squaredNorm();
  }
  const Eigen::Vector4d s = A.colPivHouseholderQr().solve(b);
  SphereFit f{s.head<3>(), std::sqrt(s[3] + s.head<3>().squaredNorm()), 0.0};
  for (int it = 0; it < 30; ++it) {
    Eigen::MatrixXd J(n, 4);
    Eigen::VectorXd r(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const Eigen::Vector3d d = pts[static_cast<std::size_t>(i)].v() - f.centre;
      const double dn = d.norm();
      r[i] = dn - f.radius;
      J.row(i) << -d.transpose() / dn, -1.0;
    }
    const Eigen::Vector4d dx = J.colPivHouseholderQr().solve(-r);
    f.centre += dx.head<3>();
    f.radius += dx[3];
    if (dx.norm() < 1e-13) break;
  }
  double ss = 0;
  for (const auto& p : pts) ss += std::pow((p.v() - f.centre).norm() - f.radius, 2);
  f.rms = std::sqrt(ss / static_cast<double>(pts.size()));
  return f;
}

// Distance from a point to the line where two planes meet.
inline double distance_to_intersection(const Eigen::Vector3d& p, const PlaneFit& a, const PlaneFit& b) {
  const Eigen::Vector3d dir = a.normal.cross(b.normal).normalized();
  Eigen::Matrix3d M;
  M.row(0) = a.normal.transpose();
  M.row(1) = b.normal.transpose();
  M.row(2) = dir.transpose();
  const Eigen::Vector3d on = M.colPivHouseholderQr().solve(Eigen::Vector3d(a.normal.dot(a.centre), b.normal.dot(b.centre), 0.0));
  const Eigen::Vector3d w = p - on;
  return (w - w.dot(dir) * dir).norm();
}

// Every detected stripe point of a scan, calibrated through the model:
// (u, v) -> (X, Z), Y = frame * y_step (the pipeline's mapping comes in phase 2).
inline std::vector<Point3> calibrated_points(const ObservationSet& obs, const SheetOfLightModel& m, double y_step) {
  std::vector<Point3> pts;
  for (const auto& f : obs.frames)
    for (std::size_t i = 0; i < f.u.size(); ++i) {
      double X, Z;
      if (m.image_to_plane(f.u[i], f.v[i], X, Z)) pts.push_back({X, static_cast<double>(f.frame) * y_step, Z});
    }
  return pts;
}

// Gauge blocks 12 mm wide of 1, 2, 5 and 10 mm on the conveyor, long along Y.
struct GaugeScene {
  static constexpr double kHeights[4] = {1.0, 2.0, 5.0, 10.0};
  static constexpr double kX0[4] = {-42.0, -22.0, -2.0, 18.0};
  static constexpr double kWidth = 12.0;
  static constexpr double kYStep = 0.2;
  static PartsSceneConfig config() { return parts_preset("gauge").config; }  // these blocks (acquisition/triangulation_scenes.h)
};

// A ball of radius 8 mm sitting 1 mm deep in the conveyor, and a plane tilted
// 20 degrees across the scan and 4.6 degrees along it, whose foot line passes
// through (10, 10).
struct SphereRampScene {
  static constexpr double kCentre[3] = {-22.0, 10.0, -1.0};
  static constexpr double kRadius = 8.0;
  static constexpr double kFootX = 10.0, kFootY = 10.0, kSlopeY = 0.08;
  static double slope_x() { return std::tan(20.0 * kDeg); }
  static constexpr double kYStep = 0.4;
  static PartsSceneConfig config() { return parts_preset("sphere-ramp").config; }  // these parts (acquisition/triangulation_scenes.h)
  // Truth: the sphere's centre to the plane's foot line (on the conveyor, Z = 0).
  static double centre_to_foot_line() {
    const Eigen::Vector3d dir = Eigen::Vector3d(-kSlopeY, slope_x(), 0.0).normalized();
    const Eigen::Vector3d w = Eigen::Vector3d(kCentre[0], kCentre[1], kCentre[2]) - Eigen::Vector3d(kFootX, kFootY, 0.0);
    return (w - w.dot(dir) * dir).norm();
  }
};

// Scans are rendered and extracted once per process and ROI.
inline const ObservationSet& parts_scan(const std::string& which, SensorRoi roi, std::uint64_t frames) {
  static std::map<std::string, ObservationSet> cache;
  const std::string key = which + "@" + std::to_string(roi.x) + "," + std::to_string(roi.y) + "," + std::to_string(roi.width) + "," +
                          std::to_string(roi.height);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const PartsSceneConfig pc = which == "gauge" ? GaugeScene::config() : SphereRampScene::config();
  TriangulationScanner scanner(sensor_config(frames, roi), std::make_shared<PartsScene>(pc));
  return cache[key] = extract_observations(scanner, ChainConfig{}, roi.x, roi.y);
}

struct GaugeMeasurement {
  double height[4] = {0, 0, 0, 0};  // each block's top above the conveyor's fitted plane
  double base_rms = 0;
  std::size_t top_points[4] = {0, 0, 0, 0};
};

// x_origin: the truth frame's X of the fit's X = 0 (truth_x_origin), to find the parts.
// From calibrated points (a PLY's, or calibrated_points()).
inline GaugeMeasurement measure_gauge_blocks(const std::vector<Point3>& pts, double x_origin) {
  std::vector<Point3> base;
  for (const auto& p : pts) {
    const double x = p.x + x_origin;
    bool near = false;
    for (double x0 : GaugeScene::kX0) near = near || (x > x0 - 2.5 && x < x0 + GaugeScene::kWidth + 2.5);
    if (!near && std::abs(p.z) < 0.5) base.push_back(p);
  }
  const PlaneFit conveyor = fit_plane(base);
  GaugeMeasurement g;
  g.base_rms = conveyor.rms;
  for (int i = 0; i < 4; ++i) {
    double sum = 0;
    std::size_t n = 0;
    for (const auto& p : pts) {
      const double x = p.x + x_origin;
      if (x > GaugeScene::kX0[i] + 1.5 && x < GaugeScene::kX0[i] + GaugeScene::kWidth - 1.5 && std::abs(p.z - GaugeScene::kHeights[i]) < 0.5) {
        sum += conveyor.distance(p);
        ++n;
      }
    }
    g.height[i] = n ? sum / static_cast<double>(n) : 0.0;
    g.top_points[i] = n;
  }
  return g;
}

inline GaugeMeasurement measure_gauge_blocks(const ObservationSet& scan, const SheetOfLightModel& m, double x_origin) {
  return measure_gauge_blocks(calibrated_points(scan, m, GaugeScene::kYStep), x_origin);
}

struct SphereRampMeasurement {
  SphereFit sphere;
  PlaneFit ramp, conveyor;
  double centre_to_foot = 0;
  std::size_t sphere_points = 0, ramp_points = 0;
};

inline SphereRampMeasurement measure_sphere_and_ramp(const ObservationSet& scan, const SheetOfLightModel& m, double x_origin) {
  using S = SphereRampScene;
  const auto pts = calibrated_points(scan, m, S::kYStep);
  std::vector<Point3> sphere, ramp, conveyor;
  for (const auto& p : pts) {
    const double x = p.x + x_origin;
    const double to_sphere = std::sqrt(std::pow(x - S::kCentre[0], 2) + std::pow(p.y - S::kCentre[1], 2) + std::pow(p.z - S::kCentre[2], 2));
    if (std::abs(to_sphere - S::kRadius) < 0.3 && p.z > 1.0) sphere.push_back(p);
    const double z_ramp = S::slope_x() * (x - S::kFootX) + S::kSlopeY * (p.y - S::kFootY);
    if (x > 6.0 && x < 39.0 && z_ramp > 1.0 && std::abs(p.z - z_ramp) < 0.3) ramp.push_back(p);
    if (std::abs(p.z) < 0.3 && z_ramp < -1.5 && std::hypot(x - S::kCentre[0], p.y - S::kCentre[1]) > S::kRadius + 1.5 && (x < 3.0 || x > 42.0))
      conveyor.push_back(p);
  }
  SphereRampMeasurement r;
  r.sphere = fit_sphere(sphere);
  r.ramp = fit_plane(ramp);
  r.conveyor = fit_plane(conveyor);
  r.centre_to_foot = distance_to_intersection(r.sphere.centre, r.ramp, r.conveyor);
  r.sphere_points = sphere.size();
  r.ramp_points = ramp.size();
  return r;
}

// A fixed cross-section (a calibration target's polyline, flat beyond its
// ends) extruded along the motion, at the same place in every frame.
class ProfileScene final : public TriangulationScene {
 public:
  explicit ProfileScene(std::vector<PlanePoint> p) : p_(std::move(p)) {}
  double height(std::uint64_t, double x, double) const override {
    if (x <= p_.front().x) return p_.front().z;
    if (x >= p_.back().x) return p_.back().z;
    const auto it = std::upper_bound(p_.begin(), p_.end(), x, [](double v, const PlanePoint& q) { return v < q.x; });
    const PlanePoint &a = *(it - 1), &b = *it;
    return a.z + (b.z - a.z) * (x - a.x) / (b.x - a.x);
  }
  void breaks(std::uint64_t, std::vector<double>& xs) const override {
    xs.clear();
    for (const auto& q : p_) xs.push_back(q.x);
  }
  double top(std::uint64_t) const override {
    double t = 0;
    for (const auto& q : p_) t = std::max(t, q.z);
    return t;
  }
  std::string describe() const override { return "a fixed profile"; }

 private:
  std::vector<PlanePoint> p_;
};

}  // namespace stripeline::test
