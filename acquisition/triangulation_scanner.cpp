// A simulated sheet-of-light sensor with a real geometry. See triangulation_scanner.h.
//
// Rendering a frame: the scene's cross-section z = h(X) is sampled every
// 0.02 mm (~0.4 px) along the laser plane between its break points; each
// sample is projected through the camera; wherever the projected curve
// crosses a column's centre u = c, the crossing is solved to 1e-10 px
// (Illinois regula falsi on the exact projection), giving the stripe's true
// (u, v) and (X, Z). A crossing is kept when the laser lights it (no surface
// between it and the fan's origin, in the plane) and the camera sees it (no
// surface between it and the camera centre, in 3D). Each kept point is drawn
// in its column as a pixel-integrated Gaussian whose sigma along the column
// is the beam's sigma times sqrt(1 + slope^2) (a line crossing the column
// obliquely), on a noisy background (acquisition/stripe_render.h).
#include "acquisition/triangulation_scanner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "acquisition/stripe_render.h"
#include "core/errors.h"

namespace stripeline {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kDeg = kPi / 180.0;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kSampleMm = 0.02;      // cross-section sampling step
constexpr double kMarchMm = 0.1;        // occlusion test step
constexpr double kMarchStartMm = 0.02;  // first occlusion sample, off the surface itself

enum Salt : std::uint64_t { kSaltNoise = 11, kSaltSpeckle = 12, kSaltGain = 13 };

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

[[noreturn]] void out_of_range(const std::string& key, const std::string& value, const std::string& expected) {
  throw ConfigError("triangulation." + key + " = " + value + " is out of range (expected " + expected + ")");
}

void check(const char* key, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) out_of_range(key, num(v), num(lo) + ".." + num(hi));
}

}  // namespace

// ---------------------------------------------------------------------------
// Geometry and camera

void TriangulationGeometry::validate() const {
  if (sensor_width < 16 || sensor_width > kMaxWidth) out_of_range("sensor_width", std::to_string(sensor_width), "16.." + std::to_string(kMaxWidth));
  if (sensor_height < 8 || sensor_height > 65536) out_of_range("sensor_height", std::to_string(sensor_height), "8..65536");
  check("focal_px", focal_px, 10.0, 1e6);
  check("cx", cx, 0.0, sensor_width);
  check("cy", cy, 0.0, sensor_height);
  for (double k : {k1, k2, k3}) check("k", k, -2.0, 2.0);
  for (double p : {p1, p2}) check("p", p, -0.1, 0.1);
  check("triangulation_deg", triangulation_deg, 5.0, 80.0);
  check("working_distance_mm", working_distance_mm, 10.0, 1e5);
  check("roll_deg", roll_deg, -45.0, 45.0);
  check("yaw_deg", yaw_deg, -45.0, 45.0);
  if (!(laser_z_mm > reference_z_mm)) out_of_range("laser_z_mm", num(laser_z_mm), "above reference_z_mm");
}

TriangulationCamera::TriangulationCamera(const TriangulationGeometry& g) : g_(g) {
  g_.validate();
  const double t = g.triangulation_deg * kDeg;
  // Unrotated axes: x along world X, z the optical axis (toward +Y and down), y = z cross x.
  double x[3] = {1.0, 0.0, 0.0};
  double z[3] = {0.0, std::sin(t), -std::cos(t)};
  double y[3] = {z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0]};
  // Yaw: every axis turned about world Z.
  const double cy = std::cos(g.yaw_deg * kDeg), sy = std::sin(g.yaw_deg * kDeg);
  auto yaw = [&](double a[3]) {
    const double ax = cy * a[0] - sy * a[1], ay = sy * a[0] + cy * a[1];
    a[0] = ax;
    a[1] = ay;
  };
  yaw(x);
  yaw(y);
  yaw(z);
  // Roll about the optical axis.
  const double cr = std::cos(g.roll_deg * kDeg), sr = std::sin(g.roll_deg * kDeg);
  for (int i = 0; i < 3; ++i) {
    const double xi = cr * x[i] + sr * y[i], yi = -sr * x[i] + cr * y[i];
    r_[i] = xi;
    r_[3 + i] = yi;
    r_[6 + i] = z[i];
  }
  c_[0] = g.reference_x_mm - g.working_distance_mm * z[0];
  c_[1] = 0.0 - g.working_distance_mm * z[1];
  c_[2] = g.reference_z_mm - g.working_distance_mm * z[2];
}

void TriangulationCamera::centre(double c[3]) const {
  for (int i = 0; i < 3; ++i) c[i] = c_[i];
}

bool TriangulationCamera::project(double x, double y, double z, double& u, double& v) const {
  const double d[3] = {x - c_[0], y - c_[1], z - c_[2]};
  const double pz = r_[6] * d[0] + r_[7] * d[1] + r_[8] * d[2];
  if (!(pz > 1e-9)) return false;
  const double xn = (r_[0] * d[0] + r_[1] * d[1] + r_[2] * d[2]) / pz;
  const double yn = (r_[3] * d[0] + r_[4] * d[1] + r_[5] * d[2]) / pz;
  const double r2 = xn * xn + yn * yn;
  const double radial = 1.0 + r2 * (g_.k1 + r2 * (g_.k2 + r2 * g_.k3));
  const double xd = xn * radial + 2.0 * g_.p1 * xn * yn + g_.p2 * (r2 + 2.0 * xn * xn);
  const double yd = yn * radial + g_.p1 * (r2 + 2.0 * yn * yn) + 2.0 * g_.p2 * xn * yn;
  u = g_.focal_px * xd + g_.cx;
  v = g_.focal_px * yd + g_.cy;
  return true;
}

bool TriangulationCamera::back_project(double u, double v, double& X, double& Z) const {
  const double xd = (u - g_.cx) / g_.focal_px, yd = (v - g_.cy) / g_.focal_px;
  double xn = xd, yn = yd;
  for (int it = 0; it < 30; ++it) {
    const double r2 = xn * xn + yn * yn;
    const double radial = 1.0 + r2 * (g_.k1 + r2 * (g_.k2 + r2 * g_.k3));
    const double dr = g_.k1 + r2 * (2.0 * g_.k2 + 3.0 * g_.k3 * r2);  // d radial / d r2
    const double fx = xn * radial + 2.0 * g_.p1 * xn * yn + g_.p2 * (r2 + 2.0 * xn * xn) - xd;
    const double fy = yn * radial + g_.p1 * (r2 + 2.0 * yn * yn) + 2.0 * g_.p2 * xn * yn - yd;
    const double a = radial + 2.0 * xn * xn * dr + 2.0 * g_.p1 * yn + 6.0 * g_.p2 * xn;
    const double b = 2.0 * xn * yn * dr + 2.0 * g_.p1 * xn + 2.0 * g_.p2 * yn;
    const double c = 2.0 * xn * yn * dr + 2.0 * g_.p1 * xn + 2.0 * g_.p2 * yn;
    const double e = radial + 2.0 * yn * yn * dr + 6.0 * g_.p1 * yn + 2.0 * g_.p2 * xn;
    const double det = a * e - b * c;
    const double dx = (e * fx - b * fy) / det, dy = (a * fy - c * fx) / det;
    xn -= dx;
    yn -= dy;
    if (std::abs(dx) + std::abs(dy) < 1e-16) break;
  }
  // Ray direction in world: R^T (xn, yn, 1).
  const double dir[3] = {r_[0] * xn + r_[3] * yn + r_[6], r_[1] * xn + r_[4] * yn + r_[7], r_[2] * xn + r_[5] * yn + r_[8]};
  if (std::abs(dir[1]) < 1e-12) return false;
  const double t = -c_[1] / dir[1];
  if (!(t > 0)) return false;
  X = c_[0] + t * dir[0];
  Z = c_[2] + t * dir[2];
  return true;
}

// ---------------------------------------------------------------------------
// Scanner

void TriangulationScannerConfig::validate() const {
  geometry.validate();
  if (roi.width < 1 || roi.height < 8 || roi.x < 0 || roi.y < 0 || roi.x + roi.width > geometry.sensor_width ||
      roi.y + roi.height > geometry.sensor_height || roi.height > kMaxFrameHeight)
    out_of_range("roi", std::string("[") + std::to_string(roi.x) + ", " + std::to_string(roi.y) + ", " + std::to_string(roi.width) + ", " +
                            std::to_string(roi.height) + "]",
                 "a window of at least 1x8 pixels inside the " + std::to_string(geometry.sensor_width) + "x" +
                     std::to_string(geometry.sensor_height) + " sensor, at most " + std::to_string(kMaxFrameHeight) + " rows");
  if (format != PixelFormat::Mono8 && format != PixelFormat::Mono16) out_of_range("format", std::to_string(static_cast<int>(format)), "Mono8 or Mono16");
  check("beam_sigma", beam_sigma, 0.3, 20.0);
  check("peak", peak, 1.0, 1000.0);
  check("peak_variation", peak_variation, 0.0, 0.9);
  check("background", background, 0.0, 255.0);
  check("noise", noise, 0.0, 100.0);
  check("speckle", speckle, 0.0, 1.0);
  check("frame_rate", frame_rate, 1e-3, 1e7);
  if (!(x_max_mm > x_min_mm)) out_of_range("x_max_mm", num(x_max_mm), "more than x_min_mm");
}

TriangulationScanner::TriangulationScanner(TriangulationScannerConfig config, std::shared_ptr<const TriangulationScene> scene)
    : config_(std::move(config)), scene_(std::move(scene)), camera_(config_.geometry) {
  config_.validate();
  if (!scene_) throw ConfigError("triangulation scanner: no scene");
}

BatchLayout TriangulationScanner::frame_layout() const {
  return BatchLayout{config_.roi.width, config_.roi.height, 0, config_.format};
}

std::optional<std::uint64_t> TriangulationScanner::total_frames() const {
  if (config_.frames == 0) return std::nullopt;
  return config_.frames;
}

std::string TriangulationScanner::describe() const {
  std::ostringstream s;
  const auto& g = config_.geometry;
  s << "triangulation scanner " << config_.roi.width << "x" << config_.roi.height << " " << to_string(config_.format) << " at ("
    << config_.roi.x << ", " << config_.roi.y << ") of a " << g.sensor_width << "x" << g.sensor_height << " sensor, "
    << g.triangulation_deg << " deg, " << scene_->describe() << ", seed " << config_.seed;
  return s.str();
}

void TriangulationScanner::stripe_points(std::uint64_t frame, std::vector<StripePoint>& visible, int& hidden) const {
  const TriangulationScene& scene = *scene_;
  const SensorRoi& roi = config_.roi;
  const double v_lo = roi.y - 6.0 * config_.beam_sigma - 1.0;
  const double v_hi = roi.y + roi.height - 1 + 6.0 * config_.beam_sigma + 1.0;
  const int c_lo = roi.x, c_hi = roi.x + roi.width - 1;
  const double top = scene.top(frame);
  double cam[3];
  camera_.centre(cam);
  const double lx = config_.geometry.laser_x_mm, lz = config_.geometry.laser_z_mm;

  auto uv = [&](double X, double& u, double& v, double& z) {
    z = scene.height(frame, X, 0.0);
    if (std::isnan(z)) return false;
    return camera_.project(X, 0.0, z, u, v);
  };
  // Occlusion: does the surface rise above the straight path from P toward Q?
  auto blocked = [&](const double p[3], const double q[3]) {
    const double d[3] = {q[0] - p[0], q[1] - p[1], q[2] - p[2]};
    const double len = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    for (double s = kMarchStartMm; s < len; s += kMarchMm) {
      const double t = s / len;
      const double z = p[2] + t * d[2];
      if (z > top + 1e-6) return false;
      const double h = scene.height(frame, p[0] + t * d[0], p[1] + t * d[1]);
      if (!std::isnan(h) && h > z + 1e-7) return true;
    }
    return false;
  };

  std::vector<double> br;
  scene.breaks(frame, br);
  std::vector<double> edges{config_.x_min_mm};
  for (double b : br)
    if (b > config_.x_min_mm && b < config_.x_max_mm) edges.push_back(b);
  edges.push_back(config_.x_max_mm);
  std::sort(edges.begin(), edges.end());

  std::vector<int> candidates(static_cast<std::size_t>(roi.width), 0);
  for (std::size_t piece = 0; piece + 1 < edges.size(); ++piece) {
    const double a = edges[piece], b = edges[piece + 1];
    if (b - a < 1e-9) continue;
    const double inset = std::max(1e-9, (b - a) * 1e-9);
    const int n = std::max(1, static_cast<int>(std::ceil((b - a) / kSampleMm)));
    double xa = a + inset, ua = 0, va = 0, za = 0;
    bool oka = uv(xa, ua, va, za);
    for (int i = 1; i <= n; ++i) {
      const double xb = i == n ? b - inset : a + (b - a) * i / n;
      double ub = 0, vb = 0, zb = 0;
      const bool okb = uv(xb, ub, vb, zb);
      if (oka && okb && ua != ub) {
        const double lo_u = std::min(ua, ub), hi_u = std::max(ua, ub);
        const int c0 = std::max(c_lo, static_cast<int>(std::floor(lo_u)) + 1);
        const int c1 = std::min(c_hi, static_cast<int>(std::floor(hi_u)));
        // The sample pair's chord also gives the image slope of the stripe.
        const double slope = (vb - va) / (ub - ua);
        for (int c = c0; c <= c1; ++c) {
          // Illinois regula falsi on g(X) = u(X) - c within [xa, xb].
          double x0 = xa, x1 = xb, g0 = ua - c, g1 = ub - c;
          double xr = x0, ur = 0, vr = 0, zr = 0;
          int side = 0;
          for (int it = 0; it < 100; ++it) {
            xr = (x0 * g1 - x1 * g0) / (g1 - g0);
            if (!uv(xr, ur, vr, zr)) break;
            const double gr = ur - c;
            if (std::abs(gr) < 1e-10 || std::abs(x1 - x0) < 1e-13) break;
            if ((gr > 0) == (g1 > 0)) {
              x1 = xr;
              g1 = gr;
              if (side == -1) g0 *= 0.5;
              side = -1;
            } else {
              x0 = xr;
              g0 = gr;
              if (side == +1) g1 *= 0.5;
              side = +1;
            }
          }
          if (vr < v_lo || vr > v_hi) continue;
          ++candidates[static_cast<std::size_t>(c - roi.x)];
          const double p[3] = {xr, 0.0, zr};
          const double laser[3] = {lx, 0.0, lz};
          if (blocked(p, laser) || blocked(p, cam)) continue;
          visible.push_back({c - roi.x, ur, vr, xr, zr, slope});
        }
      }
      xa = xb;
      ua = ub;
      va = vb;
      za = zb;
      oka = okb;
    }
  }
  std::vector<int> seen(static_cast<std::size_t>(roi.width), 0);
  for (const auto& p : visible) ++seen[static_cast<std::size_t>(p.column)];
  hidden = 0;
  for (int c = 0; c < roi.width; ++c) hidden += candidates[static_cast<std::size_t>(c)] > 0 && seen[static_cast<std::size_t>(c)] == 0;
}

StripeTruth TriangulationScanner::truth(std::uint64_t frame) const {
  const int W = config_.roi.width;
  StripeTruth t;
  t.u.assign(static_cast<std::size_t>(W), kNaN);
  t.v = t.x = t.z = t.u;
  std::vector<StripePoint> pts;
  stripe_points(frame, pts, t.hidden);
  std::vector<int> count(static_cast<std::size_t>(W), 0);
  for (const auto& p : pts) ++count[static_cast<std::size_t>(p.column)];
  for (const auto& p : pts) {
    const auto c = static_cast<std::size_t>(p.column);
    if (count[c] != 1 || p.v < config_.roi.y || p.v > config_.roi.y + config_.roi.height - 1) continue;
    t.u[c] = p.u;
    t.v[c] = p.v;
    t.x[c] = p.x;
    t.z[c] = p.z;
  }
  for (int c : count) t.multiple += c > 1;
  return t;
}

void TriangulationScanner::render(std::uint64_t frame, std::byte* dst) const {
  const auto& c = config_;
  const int W = c.roi.width, H = c.roi.height;
  const std::size_t n = static_cast<std::size_t>(W) * H;
  std::vector<float> buf(n);
  render::fill_background(buf.data(), n, static_cast<float>(c.background), static_cast<float>(c.noise),
                          render::hash(c.seed, kSaltNoise, frame));
  std::vector<StripePoint> pts;
  int hidden = 0;
  stripe_points(frame, pts, hidden);
  const std::uint64_t speckle_key = render::hash(c.seed, kSaltSpeckle, frame);
  const std::uint64_t gain_key = render::hash(c.seed, kSaltGain, 0);
  const double ph1 = render::unit(gain_key), ph2 = render::unit(render::mix64(gain_key));
  for (const auto& p : pts) {
    // Smooth power variation along the line (by sensor column, so a ROI change keeps it).
    const double s = p.u / c.geometry.sensor_width;
    const double g = 0.6 * std::sin(2.0 * kPi * (1.3 * s + ph1)) + 0.4 * std::sin(2.0 * kPi * (3.7 * s + ph2));
    const double amplitude = c.peak * (1.0 + c.peak_variation * g);
    const double sigma = c.beam_sigma * std::sqrt(1.0 + p.slope * p.slope);
    render::add_beam(buf.data(), W, H, p.column, p.v - c.roi.y, sigma, amplitude, c.speckle, speckle_key);
  }
  render::quantise(buf.data(), n, c.format, dst);
}

bool TriangulationScanner::fill(Batch& batch) {
  check_fill_target(batch, frame_layout(), "triangulation scanner");
  return render::fill_frames(batch, next_, config_.frames, config_.frame_rate, config_.encoder_step,
                             [this](std::uint64_t index, std::byte* dst) { render(index, dst); });
}

}  // namespace stripeline
