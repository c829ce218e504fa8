// Scenes for the simulated sheet-of-light sensor. See triangulation_scenes.h.
#include "acquisition/triangulation_scenes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "acquisition/stripe_render.h"
#include "core/errors.h"

namespace stripeline {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kDeg = kPi / 180.0;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxTries = 4000;

enum Salt : std::uint64_t { kSaltKind = 21, kSaltPose = 22 };

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

double nan_max(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return std::max(a, b);
}

}  // namespace

const char* to_string(TargetFrameKind k) {
  switch (k) {
    case TargetFrameKind::InView: return "in-view";
    case TargetFrameKind::PartlyOutOfView: return "partly-out-of-view";
    case TargetFrameKind::DoubleExposure: return "double-exposure";
    case TargetFrameKind::Foreign: return "foreign";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// TargetScene

TargetScene::TargetScene(TargetSceneConfig config, const TriangulationCamera& camera, SensorRoi roi) : config_(std::move(config)) {
  const auto& c = config_;
  if (c.profile.size() < 2) throw ConfigError("target scene: the target profile needs at least 2 vertices");
  for (std::size_t i = 1; i < c.profile.size(); ++i)
    if (!(c.profile[i].x > c.profile[i - 1].x)) throw ConfigError("target scene: the target profile's x must increase strictly");
  if (c.frames == 0 || c.frames > 100000) throw ConfigError("target scene: frames = " + std::to_string(c.frames) + " (expected 1..100000)");
  if (!(c.z_max_mm > c.z_min_mm)) throw ConfigError("target scene: z_max_mm must be above z_min_mm");
  if (!(c.max_tilt_deg >= 0 && c.max_tilt_deg <= 30)) throw ConfigError("target scene: max_tilt_deg = " + num(c.max_tilt_deg) + " (expected 0..30)");
  if (!(c.out_of_view_fraction >= 0 && c.corrupted_fraction >= 0 && c.out_of_view_fraction + c.corrupted_fraction <= 0.9))
    throw ConfigError("target scene: out_of_view_fraction + corrupted_fraction must be within 0..0.9");

  const double length = c.profile.back().x - c.profile.front().x;
  const double u_lo = roi.x, u_hi = roi.x + roi.width - 1.0, v_lo = roi.y, v_hi = roi.y + roi.height - 1.0;
  const double m = c.margin_px;

  // Frame kinds: exact counts, placed by ranking a hash of the frame index.
  const std::uint64_t N = c.frames;
  const auto n_corrupt = static_cast<std::uint64_t>(std::llround(c.corrupted_fraction * static_cast<double>(N)));
  const auto n_partial = static_cast<std::uint64_t>(std::llround(c.out_of_view_fraction * static_cast<double>(N)));
  std::vector<std::uint64_t> order;
  for (std::uint64_t f = c.first_flat ? 1 : 0; f < N; ++f) order.push_back(f);
  std::sort(order.begin(), order.end(), [&](std::uint64_t a, std::uint64_t b) {
    return render::hash(c.seed, kSaltKind, a) < render::hash(c.seed, kSaltKind, b);
  });
  frames_.resize(N);
  for (std::size_t i = 0; i < order.size(); ++i) {
    TargetFrameKind k = TargetFrameKind::InView;
    if (i < n_corrupt)
      k = (i % 2 == 0) ? TargetFrameKind::DoubleExposure : TargetFrameKind::Foreign;
    else if (i < n_corrupt + n_partial)
      k = TargetFrameKind::PartlyOutOfView;
    frames_[order[i]].kind = k;
  }

  // Projected vertices of a placed polyline: how many interior vertices are
  // well inside, and whether everything is inside (with the margin).
  auto inside = [&](double u, double v, double margin) { return u >= u_lo + margin && u <= u_hi - margin && v >= v_lo + margin && v <= v_hi - margin; };
  auto monotone = [](const std::vector<PlanePoint>& p) {
    for (std::size_t i = 1; i < p.size(); ++i)
      if (!(p[i].x > p[i - 1].x)) return false;
    return true;
  };
  auto heights_ok = [&](const std::vector<PlanePoint>& p) {
    for (const auto& q : p)
      if (q.z < c.z_min_mm - 1e-9 || q.z > c.z_max_mm + 1e-9) return false;
    return true;
  };
  auto all_in_view = [&](const std::vector<PlanePoint>& p) {
    if (!monotone(p) || !heights_ok(p)) return false;
    for (const auto& q : p) {
      double u, v;
      if (!camera.project(q.x, 0.0, q.z, u, v) || !inside(u, v, m)) return false;
    }
    return true;
  };
  auto partly_in_view = [&](const std::vector<PlanePoint>& p) {
    if (!monotone(p) || !heights_ok(p)) return false;
    int corners_in = 0, beyond_side = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
      double u, v;
      if (!camera.project(p[i].x, 0.0, p[i].z, u, v)) return false;
      if (u < u_lo || u > u_hi) {
        ++beyond_side;
        continue;
      }
      if (v < v_lo + m || v > v_hi - m) return false;  // only the sides may cut it
      if (i > 0 && i + 1 < p.size() && u >= u_lo + m && u <= u_hi - m) ++corners_in;
    }
    return beyond_side > 0 && corners_in >= 2;
  };

  for (std::uint64_t f = 0; f < N; ++f) {
    Frame& fr = frames_[f];
    auto rnd = [&, draw = std::uint64_t{0}]() mutable { return render::unit(render::hash(c.seed, kSaltPose, f, draw++)); };
    auto random_pose = [&](double x_lo, double x_hi) {
      TargetPose p;
      p.angle_deg = (2.0 * rnd() - 1.0) * c.max_tilt_deg;
      p.z = c.z_min_mm + rnd() * (c.z_max_mm - c.z_min_mm);
      p.x = x_lo + rnd() * (x_hi - x_lo);
      return p;
    };
    bool ok = false;
    if (f == 0 && c.first_flat) {
      fr.kind = TargetFrameKind::InView;
      // Flat on the conveyor, centred on the ROI's middle column at z_min.
      double X = 0, Z = 0;
      camera.back_project(roi.x + 0.5 * (roi.width - 1), v_hi, X, Z);  // any point of that column
      for (int t = 0; t < kMaxTries && !ok; ++t) {
        fr.pose = {X - 0.5 * length + (t == 0 ? 0.0 : (2.0 * rnd() - 1.0) * 20.0), c.z_min_mm, 0.0};
        fr.a = placed(fr.pose);
        ok = all_in_view(fr.a);
      }
    } else if (fr.kind == TargetFrameKind::InView) {
      for (int t = 0; t < kMaxTries && !ok; ++t) {
        fr.pose = random_pose(-80.0, 80.0 - length);
        fr.a = placed(fr.pose);
        ok = all_in_view(fr.a);
      }
    } else if (fr.kind == TargetFrameKind::PartlyOutOfView) {
      for (int t = 0; t < kMaxTries && !ok; ++t) {
        fr.pose = random_pose(-80.0 - 0.5 * length, 80.0 - 0.5 * length);
        fr.a = placed(fr.pose);
        ok = partly_in_view(fr.a);
      }
    } else if (fr.kind == TargetFrameKind::DoubleExposure) {
      for (int t = 0; t < kMaxTries && !ok; ++t) {
        fr.pose = random_pose(-80.0, 80.0 - length);
        fr.a = placed(fr.pose);
        if (!all_in_view(fr.a)) continue;
        const double dx = (rnd() < 0.5 ? -1.0 : 1.0) * (2.0 + 4.0 * rnd());
        const double dz = (rnd() < 0.5 ? -1.0 : 1.0) * (1.0 + 2.0 * rnd());
        fr.second = {fr.pose.x + dx, fr.pose.z + dz, fr.pose.angle_deg + (2.0 * rnd() - 1.0) * 2.0};
        fr.b = placed(fr.second);
        ok = all_in_view(fr.b);
      }
    } else {  // Foreign: a smooth wave across most of the view
      for (int t = 0; t < kMaxTries && !ok; ++t) {
        fr.foreign_amp = 1.0 + 3.0 * rnd();
        fr.foreign_period = 12.0 + 30.0 * rnd();
        fr.foreign_phase = 2.0 * kPi * rnd();
        fr.foreign_z = c.z_min_mm + fr.foreign_amp + rnd() * (c.z_max_mm - c.z_min_mm - 2.0 * fr.foreign_amp);
        fr.foreign_x0 = -40.0 + 20.0 * rnd();
        fr.foreign_x1 = fr.foreign_x0 + 50.0 + 20.0 * rnd();
        fr.pose = {fr.foreign_x0, fr.foreign_z, 0.0};
        std::vector<PlanePoint> probe;
        for (int i = 0; i <= 20; ++i) {
          const double x = fr.foreign_x0 + (fr.foreign_x1 - fr.foreign_x0) * i / 20.0;
          probe.push_back({x, fr.foreign_z + fr.foreign_amp * std::sin(2.0 * kPi * x / fr.foreign_period + fr.foreign_phase)});
        }
        ok = c.z_max_mm - c.z_min_mm > 2.0 * fr.foreign_amp && all_in_view(probe);
      }
    }
    if (!ok)
      throw ConfigError("target scene: no " + std::string(to_string(fr.kind)) + " pose of the target (" + num(length) +
                        " mm long) fits the view between z " + num(c.z_min_mm) + " and " + num(c.z_max_mm) +
                        " mm (expected a target shorter than the field of view and a height range it fits in)");
  }
}

std::vector<PlanePoint> TargetScene::placed(const TargetPose& pose) const {
  const double ca = std::cos(pose.angle_deg * kDeg), sa = std::sin(pose.angle_deg * kDeg);
  std::vector<PlanePoint> out;
  out.reserve(config_.profile.size());
  for (const auto& p : config_.profile) out.push_back({pose.x + ca * p.x - sa * p.z, pose.z + sa * p.x + ca * p.z});
  return out;
}

const TargetScene::Frame& TargetScene::frame_of(std::uint64_t frame) const { return frames_[frame % frames_.size()]; }

TargetFrameKind TargetScene::kind(std::uint64_t frame) const { return frame_of(frame).kind; }
TargetPose TargetScene::pose(std::uint64_t frame) const { return frame_of(frame).pose; }

double TargetScene::polyline_height(const std::vector<PlanePoint>& v, double x) {
  if (v.empty() || x < v.front().x || x > v.back().x) return kNaN;
  const auto it = std::upper_bound(v.begin(), v.end(), x, [](double a, const PlanePoint& p) { return a < p.x; });
  const std::size_t i = it == v.end() ? v.size() - 1 : static_cast<std::size_t>(it - v.begin());
  if (i == 0) return v.front().z;
  const PlanePoint &a = v[i - 1], &b = v[i];
  return a.z + (b.z - a.z) * (x - a.x) / (b.x - a.x);
}

double TargetScene::height(std::uint64_t frame, double x, double) const {
  const Frame& f = frame_of(frame);
  switch (f.kind) {
    case TargetFrameKind::InView:
    case TargetFrameKind::PartlyOutOfView: return polyline_height(f.a, x);
    case TargetFrameKind::DoubleExposure: return nan_max(polyline_height(f.a, x), polyline_height(f.b, x));
    case TargetFrameKind::Foreign:
      if (x < f.foreign_x0 || x > f.foreign_x1) return kNaN;
      return f.foreign_z + f.foreign_amp * std::sin(2.0 * kPi * x / f.foreign_period + f.foreign_phase);
  }
  return kNaN;
}

void TargetScene::breaks(std::uint64_t frame, std::vector<double>& xs) const {
  const Frame& f = frame_of(frame);
  xs.clear();
  if (f.kind == TargetFrameKind::Foreign) {
    xs = {f.foreign_x0, f.foreign_x1};
    return;
  }
  for (const auto& p : f.a) xs.push_back(p.x);
  for (const auto& p : f.b) xs.push_back(p.x);
  std::sort(xs.begin(), xs.end());
}

double TargetScene::top(std::uint64_t frame) const {
  const Frame& f = frame_of(frame);
  if (f.kind == TargetFrameKind::Foreign) return f.foreign_z + f.foreign_amp;
  double t = -1e30;
  for (const auto& p : f.a) t = std::max(t, p.z);
  for (const auto& p : f.b) t = std::max(t, p.z);
  return t;
}

std::string TargetScene::describe() const {
  std::ostringstream s;
  s << "calibration target (" << config_.profile.size() << " vertices) at " << frames_.size() << " poses";
  return s.str();
}

// ---------------------------------------------------------------------------
// PartsScene

PartsScene::PartsScene(PartsSceneConfig config) : config_(std::move(config)) {
  for (const auto& b : config_.blocks)
    if (!(b.x1 > b.x0 && b.y1 > b.y0 && b.height > 0)) throw ConfigError("parts scene: a gauge block needs x1 > x0, y1 > y0 and height > 0");
  for (const auto& s : config_.spheres)
    if (!(s.radius > 0 && s.z + s.radius > 0)) throw ConfigError("parts scene: a sphere needs radius > 0 and its top above the conveyor");
  for (const auto& p : config_.planes)
    if (!(p.x1 > p.x0 && p.y1 > p.y0 && p.slope_x != 0.0 && p.top > 0)) throw ConfigError("parts scene: a tilted plane needs x1 > x0, y1 > y0, slope_x != 0 and top > 0");
  if (!(config_.y_step_mm != 0.0)) throw ConfigError("parts scene: y_step_mm must not be 0");
}

double PartsScene::height_at(double x, double y) const {
  double h = 0.0;  // the conveyor
  for (const auto& b : config_.blocks) {
    const double xs = x - b.skew * (y - b.y0);
    if (xs >= b.x0 && xs <= b.x1 && y >= b.y0 && y <= b.y1) h = std::max(h, b.height);
  }
  for (const auto& s : config_.spheres) {
    const double r2 = (x - s.x) * (x - s.x) + (y - s.y) * (y - s.y);
    if (r2 < s.radius * s.radius) h = std::max(h, s.z + std::sqrt(s.radius * s.radius - r2));
  }
  for (const auto& p : config_.planes)
    if (x >= p.x0 && x <= p.x1 && y >= p.y0 && y <= p.y1) {
      const double z = p.slope_x * (x - p.foot_x) + p.slope_y * (y - p.foot_y);
      if (z > 0) h = std::max(h, std::min(z, p.top));
    }
  return h;
}

double PartsScene::height(std::uint64_t frame, double x, double dy) const { return height_at(x, y_of(frame) + dy); }

void PartsScene::breaks(std::uint64_t frame, std::vector<double>& xs) const {
  const double y = y_of(frame);
  xs.clear();
  for (const auto& b : config_.blocks)
    if (y >= b.y0 && y <= b.y1) {
      xs.push_back(b.x0 + b.skew * (y - b.y0));
      xs.push_back(b.x1 + b.skew * (y - b.y0));
    }
  for (const auto& s : config_.spheres) {
    const double dy = y - s.y;
    const double chord2 = s.radius * s.radius - dy * dy;
    if (chord2 <= 0) continue;
    xs.push_back(s.x - std::sqrt(chord2));  // silhouette
    xs.push_back(s.x + std::sqrt(chord2));
    const double base2 = chord2 - s.z * s.z;  // where the cap meets the conveyor (z < 0)
    if (s.z < 0 && base2 > 0) {
      xs.push_back(s.x - std::sqrt(base2));
      xs.push_back(s.x + std::sqrt(base2));
    }
  }
  for (const auto& p : config_.planes)
    if (y >= p.y0 && y <= p.y1) {
      xs.push_back(p.x0);
      xs.push_back(p.x1);
      xs.push_back(p.foot_x - p.slope_y * (y - p.foot_y) / p.slope_x);
      xs.push_back(p.foot_x + (p.top - p.slope_y * (y - p.foot_y)) / p.slope_x);
    }
  std::sort(xs.begin(), xs.end());
}

double PartsScene::top(std::uint64_t) const {
  double t = 0.0;
  for (const auto& b : config_.blocks) t = std::max(t, b.height);
  for (const auto& s : config_.spheres) t = std::max(t, s.z + s.radius);
  for (const auto& p : config_.planes) {
    double m = 0.0;
    for (double x : {p.x0, p.x1})
      for (double y : {p.y0, p.y1}) m = std::max(m, p.slope_x * (x - p.foot_x) + p.slope_y * (y - p.foot_y));
    t = std::max(t, std::min(m, p.top));
  }
  return t;
}

std::string PartsScene::describe() const {
  std::ostringstream s;
  s << "parts on a conveyor (" << config_.blocks.size() << " gauge blocks, " << config_.spheres.size() << " spheres, " << config_.planes.size()
    << " tilted planes), " << config_.y_step_mm << " mm per frame";
  return s.str();
}

// ---------------------------------------------------------------------------
// ReversedScene

ReversedScene::ReversedScene(std::shared_ptr<const TriangulationScene> inner, double x_origin_mm) : inner_(std::move(inner)), x_origin_mm_(x_origin_mm) {
  if (!inner_) throw ConfigError("reversed scene: no scene");
  if (!std::isfinite(x_origin_mm_)) throw ConfigError("reversed scene: x_origin_mm = " + num(x_origin_mm_) + " (expected a finite X in mm)");
}

double ReversedScene::height(std::uint64_t frame, double x, double dy) const { return inner_->height(frame, inner_x(x), -dy); }

void ReversedScene::breaks(std::uint64_t frame, std::vector<double>& xs) const {
  inner_->breaks(frame, xs);
  for (double& x : xs) x = inner_x(x);
  std::reverse(xs.begin(), xs.end());
}

std::string ReversedScene::describe() const {
  return inner_->describe() + ", seen by a head turned 180 deg about Z (X and the motion reversed, its X origin at " + num(x_origin_mm_) + " mm)";
}

// ---------------------------------------------------------------------------
// Named scenes

namespace {

enum : std::uint64_t { kSaltConveyor = 31 };

// Parts on y in [5, 35] mm, scanned at 0.2 mm per frame from y = 0.
PartsPreset finite(double y_step = 0.2, std::uint64_t frames = 200) {
  PartsPreset p;
  p.config.y_step_mm = y_step;
  p.frames = frames;
  return p;
}

}  // namespace

bool is_parts_preset(const std::string& name) {
  for (const char* n : {"gauge", "sphere-ramp", "gauge-blocks", "sphere", "tilted-plane", "groove", "panels", "conveyor"})
    if (name == n) return true;
  return false;
}

const char* parts_preset_names() { return "gauge, sphere-ramp, gauge-blocks, sphere, tilted-plane, groove, panels or conveyor"; }

PartsPreset parts_preset(const std::string& name, std::uint64_t seed) {
  PartsPreset p;
  auto& c = p.config;
  if (name == "gauge") {  // the calibration's acceptance (tests/calibration_fixtures.h GaugeScene)
    c.y_step_mm = 0.2;
    const double x0[4] = {-42.0, -22.0, -2.0, 18.0}, h[4] = {1.0, 2.0, 5.0, 10.0};
    for (int i = 0; i < 4; ++i) c.blocks.push_back({x0[i], x0[i] + 12.0, -100.0, 100.0, h[i]});
  } else if (name == "sphere-ramp") {  // (tests/calibration_fixtures.h SphereRampScene)
    c.y_step_mm = 0.4;
    c.spheres.push_back({-22.0, 10.0, -1.0, 8.0});
    c.planes.push_back({5.0, 40.0, -100.0, 100.0, 10.0, 10.0, std::tan(20.0 * kDeg), 0.08, 30.0});
  } else if (name == "gauge-blocks") {
    // One part: blocks 12 mm wide, 30 mm long, of 1, 2, 5 and 10 mm (sides
    // leaning 0.003 along Y).
    p = finite();
    const double x0[4] = {-42.0, -22.0, -2.0, 18.0}, h[4] = {1.0, 2.0, 5.0, 10.0};
    for (int i = 0; i < 4; ++i) p.config.blocks.push_back({x0[i], x0[i] + 12.0, 5.1, 35.1, h[i], 0.003});
  } else if (name == "sphere") {
    // A ball of radius 8 mm sunk 1 mm into the conveyor (a 7 mm cap).
    p = finite();
    p.config.spheres.push_back({0.0, 20.0, -1.0, 8.0});
  } else if (name == "tilted-plane") {
    // A wedge 40 x 30 mm: its top tilted 10 deg across the scan and 1.15 deg
    // along it, 1.76 to 8.82 mm high (its foot line x = -30 at y = 5).
    p = finite();
    p.config.planes.push_back({-20.0, 20.0, 5.1, 35.1, -30.0, 5.0, std::tan(10.0 * kDeg), 0.02, 30.0});
  } else if (name == "groove") {
    // A block 40 x 30 mm, 8 mm high, with a groove 3 mm wide and 2 mm deep
    // along Y, its centre at x = 0; the sides lean 0.004 along Y.
    p = finite();
    p.config.blocks.push_back({-20.0, 20.0, 5.1, 35.1, 6.0, 0.004});
    p.config.blocks.push_back({-20.0, -1.5, 5.1, 35.1, 8.0, 0.004});
    p.config.blocks.push_back({1.5, 20.0, 5.1, 35.1, 8.0, 0.004});
  } else if (name == "panels") {
    // Two panels 28.9 mm wide, 30 mm long: the left one 5.0 mm high, the
    // right one 5.3 mm: gap 2.2 mm, flush +0.3 mm (sides lean 0.005 along Y).
    p = finite();
    p.config.blocks.push_back({-30.0, -1.1, 5.1, 35.1, 5.0, 0.005});
    p.config.blocks.push_back({1.1, 30.0, 5.1, 35.1, 5.3, 0.005});
  } else if (name == "conveyor") {
    // 50 blocks, 8..16 mm long, 10..25 mm wide, 2..10 mm high, 4..12 mm apart
    // along Y, at 0.5 mm per frame.
    p.config.y_step_mm = 0.5;
    double y = 5.05;
    for (std::uint64_t i = 0; i < 50; ++i) {
      auto rnd = [&, draw = std::uint64_t{0}]() mutable { return render::unit(render::hash(seed, kSaltConveyor, i, draw++)); };
      const double length = 8.0 + 8.0 * rnd(), width = 10.0 + 15.0 * rnd(), height = 2.0 + 8.0 * rnd(), gap = 4.0 + 8.0 * rnd();
      const double x0 = -25.0 + (40.0 - width) * rnd();
      p.config.blocks.push_back({x0, x0 + width, y, y + length, height});
      y += length + gap;
    }
    p.frames = static_cast<std::uint64_t>(std::ceil((y + 5.0) / p.config.y_step_mm));
  } else {
    throw ConfigError("parts scene '" + name + "' is not known (expected " + parts_preset_names() + ")");
  }
  return p;
}

}  // namespace stripeline
