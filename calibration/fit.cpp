// The sheet-of-light fit. The steps are listed in fit.h; docs/calibration.md
// gives the conventions and the residual's definition.
#include "calibration/fit.h"

#include <ceres/ceres.h>

#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "acquisition/pixel_bits.h"
#include "acquisition/source.h"
#include "calibration/fit_residuals.h"
#include "calibration/stripe_trace.h"
#include "core/errors.h"

namespace stripeline {

namespace {

using fit_detail::CornerResidual;
using fit_detail::ImageCorner;
using fit_detail::ImageLine;
using fit_detail::Trace;
using fit_detail::trace_frame;
using fit_detail::PointCost;
using fit_detail::PointResidual;

constexpr double kPi = 3.14159265358979323846;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string num(double v, int precision = 3) {
  std::ostringstream s;
  s.precision(precision);
  s << v;
  return s.str();
}

// ---------------------------------------------------------------------------
// In-plane rigid poses: P = R(a) t + (x, z), t in target coordinates.

struct Pose2 {
  double x = 0, z = 0, a = 0;  // a in radians
};

PlanePoint apply(const Pose2& p, const PlanePoint& t) {
  const double c = std::cos(p.a), s = std::sin(p.a);
  return {p.x + c * t.x - s * t.z, p.z + s * t.x + c * t.z};
}
PlanePoint unapply(const Pose2& p, const PlanePoint& w) {
  const double c = std::cos(p.a), s = std::sin(p.a), dx = w.x - p.x, dz = w.z - p.z;
  return {c * dx + s * dz, -s * dx + c * dz};
}
Pose2 compose(const Pose2& g, const Pose2& p) {  // g after p
  const PlanePoint o = apply(g, {p.x, p.z});
  return {o.x, o.z, g.a + p.a};
}
Pose2 inverse(const Pose2& p) {
  const double c = std::cos(p.a), s = std::sin(p.a);
  return {-(c * p.x + s * p.z), -(-s * p.x + c * p.z), -p.a};
}
// H <- G H: the plane coordinates moved by the rigid transform g.
void move_homography(const Pose2& g, double h[9]) {
  const double c = std::cos(g.a), s = std::sin(g.a);
  const double G[9] = {c, -s, g.x, s, c, g.z, 0, 0, 1};
  double out[9];
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) out[r * 3 + k] = G[r * 3] * h[k] + G[r * 3 + 1] * h[3 + k] + G[r * 3 + 2] * h[6 + k];
  std::copy(out, out + 9, h);
}

// Least-squares rigid transform taking points t to points p (2D Kabsch), weighted.
Pose2 procrustes(const std::vector<PlanePoint>& t, const std::vector<PlanePoint>& p, const std::vector<double>& w) {
  double sw = 0, tx = 0, tz = 0, px = 0, pz = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    sw += w[i];
    tx += w[i] * t[i].x;
    tz += w[i] * t[i].z;
    px += w[i] * p[i].x;
    pz += w[i] * p[i].z;
  }
  tx /= sw;
  tz /= sw;
  px /= sw;
  pz /= sw;
  double sc = 0, ss = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const double ax = t[i].x - tx, az = t[i].z - tz, bx = p[i].x - px, bz = p[i].z - pz;
    sc += w[i] * (ax * bx + az * bz);
    ss += w[i] * (ax * bz - az * bx);
  }
  Pose2 r;
  r.a = std::atan2(ss, sc);
  const double c = std::cos(r.a), s = std::sin(r.a);
  r.x = px - (c * tx - s * tz);
  r.z = pz - (s * tx + c * tz);
  return r;
}

// ---------------------------------------------------------------------------
// The target's segments.

struct Segment {
  PlanePoint a;       // start vertex
  double dx, dz;      // unit direction
  double length;
};

std::vector<Segment> segments_of(const CalibrationTarget& t) {
  std::vector<Segment> s;
  for (std::size_t i = 0; i + 1 < t.profile.size(); ++i) {
    const PlanePoint &a = t.profile[i], &b = t.profile[i + 1];
    const double len = std::hypot(b.x - a.x, b.z - a.z);
    s.push_back({a, (b.x - a.x) / len, (b.z - a.z) / len, len});
  }
  return s;
}

struct SegmentHit {
  int segment = -1;
  double distance = 0;   // signed distance to the segment's line (+ on its left normal, toward +z for a rising x)
  double clamped = 0;    // distance to the segment itself
  double along = 0;      // position along the segment, 0..length when on it
};

SegmentHit nearest_segment(const std::vector<Segment>& segs, const PlanePoint& p) {
  SegmentHit best;
  best.clamped = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const Segment& s = segs[i];
    const double rx = p.x - s.a.x, rz = p.z - s.a.z;
    const double along = rx * s.dx + rz * s.dz;
    const double l = std::clamp(along, 0.0, s.length);
    const double cx = rx - l * s.dx, cz = rz - l * s.dz;
    const double d = std::hypot(cx, cz);
    if (d < best.clamped) best = {static_cast<int>(i), -rx * s.dz + rz * s.dx, d, along};
  }
  return best;
}

// Raw image turn (sign of the cross product) as the target's turn (+1 peak,
// -1 valley) under orientation o (+1: v grows with Z).
int as_target_turn(double cross, int o) { return cross * o < 0 ? +1 : -1; }

// ---------------------------------------------------------------------------
// The fit's state.

enum PointStatus : std::uint8_t { kUsed, kEdge, kSkipped, kNearVertex, kSteep, kOutlier, kNoPoint };
const char* status_name(std::uint8_t s) {
  switch (s) {
    case kEdge: return "near_roi_border";
    case kSkipped: return "column_step";
    case kNearVertex: return "near_vertex";
    case kSteep: return "edge_on_face";
    case kOutlier: return "outlier";
    case kNoPoint: return "beyond_horizon";
    default: return "used";
  }
}

struct FitFrame {
  std::uint64_t frame = 0;
  const FrameObservation* obs = nullptr;
  Trace trace;
  bool whole = false;     // used for the start (whole target, all corners)
  bool active = false;
  double pose[3] = {0, 0, 0};
  std::vector<std::uint8_t> status;
  std::vector<int> segment;
  std::vector<double> weight, r_px, d_mm;
};

struct Model {
  double h[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  double d[sol::kDistortionCount] = {0, 0, 0, 0, 0};
  double cu = 0, cv = 0, inv_scale = 1;
  bool map(double u, double v, double& X, double& Z) const { return sol::image_to_plane(h, d, cu, cv, inv_scale, u, v, X, Z); }
};

Pose2 pose_of(const double p[3]) { return {p[0], p[1], p[2]}; }
void set_pose(double p[3], const Pose2& q) {
  p[0] = q.x;
  p[1] = q.z;
  p[2] = q.a;
}

[[noreturn]] void cannot_fit(const FitOptions& o, const std::string& why) {
  throw InputError(o.origin + ": the target cannot be fitted: " + why);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

void configure(ceres::Solver::Options& opt) {
  opt.linear_solver_type = ceres::DENSE_SCHUR;
  opt.max_num_iterations = 100;
  opt.num_threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  opt.logging_type = ceres::SILENT;
  opt.minimizer_progress_to_stdout = false;
  opt.function_tolerance = 1e-9;
  opt.parameter_tolerance = 1e-10;
  opt.gradient_tolerance = 1e-12;
}

}  // namespace

// ---------------------------------------------------------------------------

ObservationSet extract_observations(FrameSource& source, const ChainConfig& chain, int roi_x, int roi_y) {
  BatchLayout layout = source.frame_layout();
  layout.frames = 16;
  ChainConfig c = chain;
  validate_chain(c, layout);  // the configured values checked before any frame is read
  Batch batch(layout, &allocate_host);
  // The significant bits, as the pipeline decides them (acquisition/pixel_bits.h):
  // the first batch is read first when they must be inferred.
  bool filled = false;
  std::optional<std::uint32_t> first_max;
  if (pixel_bits_need_data(c.adaptive.pixel_bits, source) && (filled = source.fill(batch))) first_max = max_pixel_value(batch);
  ObservationSet set;
  set.pixel_bits = decide_pixel_bits(c.adaptive.pixel_bits, source, first_max);
  c.adaptive.pixel_bits = set.pixel_bits.bits;
  auto processor = make_processor(Backend::Cpu, layout, c);
  ProfileBatch profiles(layout.width, layout.frames, output_slots(c, layout.frame_height), &allocate_host);
  set.roi = {roi_x, roi_y, layout.width, layout.frame_height};
  for (std::uint64_t first = 0; filled || source.fill(batch); first += static_cast<std::uint64_t>(batch.frames)) {
    filled = false;
    batch.first_index = first;  // we are the pipeline here: we number the frames
    processor->process(batch, profiles);
    for (int f = 0; f < profiles.frames; ++f) {
      FrameObservation o;
      o.frame = first + static_cast<std::uint64_t>(f);
      o.missing = batch.meta[static_cast<std::size_t>(f)].missing;
      if (!o.missing)
        for (int x = 0; x < layout.width; ++x) {
          if (profiles.peaks(f, x) < 1) continue;
          const std::int32_t p = profiles.position[profiles.slot_index(f, 0, x)];
          o.u.push_back(roi_x + x);
          o.v.push_back(roi_y + static_cast<double>(p) / kPositionOne);
        }
      set.frames.push_back(std::move(o));
    }
  }
  return set;
}

namespace {

// fit_sheet_of_light, step by step: one object holds the fit's state (the
// model, the frames and their poses, the gauge) and each step is a member
// function, called in order by fit_sheet_of_light below.
class SheetFit {
 public:
  SheetFit(const ObservationSet& observations, const CalibrationTarget& target, const FitOptions& opt)
      : observations_(observations), target_(target), opt_(opt), roi_(observations.roi), segs_(segments_of(target)),
        n_vertices_(static_cast<int>(target.profile.size())) {
    fit_.roi = roi_;
    fit_.sensor_width = opt.sensor_width;
    fit_.sensor_height = opt.sensor_height;
    fit_.frames_total = observations.frames.size();
    // Distortion centre and normalisation: the sensor's centre and half its
    // width when the sensor is known, else the ROI's.
    sensor_known_ = opt.sensor_width > 0 && opt.sensor_height > 0;
    model_.cu = sensor_known_ ? 0.5 * (opt.sensor_width - 1) : roi_.x + 0.5 * (roi_.width - 1);
    model_.cv = sensor_known_ ? 0.5 * (opt.sensor_height - 1) : roi_.y + 0.5 * (roi_.height - 1);
    scale_ = 0.5 * (sensor_known_ ? opt.sensor_width : roi_.width);
    model_.inv_scale = 1.0 / scale_;
  }

  void trace_frames();           // 1. per frame: points, trace
  void choose_orientation();     // 2. orientation from the frames showing the whole target
  void start_model();            // 3. start: metric from known distances, then a homography on the corners
  void place_frames();           // 4. place every frame on the target
  void fit_rounds();             // 5. the fit: points on segments, rounds until nothing changes
  void fix_gauge();              // 6. the gauge: lowest pose, then X = 0 on the centre column at Z = 0
  void covariance();             // 7. covariance: J^T J of the final problem, lowest pose held
  CalibrationFit results();      // 8. results, coverage and its warnings

 private:
  void reject(std::uint64_t frame, const std::string& reason, const std::string& detail) { fit_.rejected.push_back({frame, reason, detail}); }
  bool matches_all(const Trace& tr, int o) const;
  std::vector<PlanePoint> vertex_points(const FitFrame& f) const;
  double vertex_weight(int j) const { return (j == 0 || j == n_vertices_ - 1) ? 0.3 : 1.0; }  // ends are found to ~1 px only
  void metric_start();
  void refine_start();
  void regauge(std::size_t ref);
  std::size_t lowest_of(const std::vector<std::size_t>& candidates) const;
  void plane_points(const FitFrame& f, std::vector<PlanePoint>& out) const;
  double placement_cost(const Pose2& pose, const std::vector<PlanePoint>& pts) const;
  bool place_partial_frame(FitFrame& f, const std::vector<PlanePoint>& pts);
  std::vector<std::size_t> active_frames() const;
  std::vector<std::size_t> active_whole_frames() const;
  void mark_points();
  void assign(FitFrame& f);
  bool fit_round(int round);
  void add_point_costs(ceres::Problem& problem, const std::vector<std::size_t>& act, bool robust);
  void record_point(FitFrame& f, std::size_t i, PoseResult& pr, double& fs_px, double& fs_mm);
  void coverage_warnings();

  const ObservationSet& observations_;
  const CalibrationTarget& target_;
  const FitOptions& opt_;
  const SensorRoi& roi_;
  const std::vector<Segment> segs_;
  const int n_vertices_;
  CalibrationFit fit_;
  Model model_;
  bool sensor_known_ = false;
  double scale_ = 1.0;
  std::vector<FitFrame> frames_;
  int orientation_ = +1;
  std::vector<std::size_t> whole_;      // frames showing the whole target, as traced
  std::size_t reference_ = 0;           // the frame whose pose is held (the gauge)
  double threshold_px_ = std::numeric_limits<double>::infinity();
  bool distortion_free_ = false;
  std::vector<std::uint8_t> previous_outliers_;
  std::vector<std::size_t> act_;        // the frames used, after the rounds
};

void SheetFit::trace_frames() {
  const std::size_t min_points = 50;
  for (const FrameObservation& o : observations_.frames) {
    if (o.missing) {
      reject(o.frame, "missing", "the source marked the frame missing");
      continue;
    }
    if (o.u.size() < min_points) {
      reject(o.frame, "too-few-points", std::to_string(o.u.size()) + " stripe points (expected at least " + std::to_string(min_points) + ")");
      continue;
    }
    FitFrame f;
    f.frame = o.frame;
    f.obs = &o;
    f.trace = trace_frame(o.u, o.v, roi_, opt_.edge_margin_px);
    if (spdlog::should_log(spdlog::level::debug)) {
      std::string corners;
      for (const auto& c : f.trace.corners) corners += " (" + num(c.u, 6) + ", " + num(c.v, 6) + (c.cross > 0 ? " +)" : " -)");
      spdlog::debug("calibrate: frame {}: {} points, {} runs, whole {}, corners{}", o.frame, o.u.size(), f.trace.runs, f.trace.whole, corners);
    }
    if (f.trace.corners.empty()) {
      reject(o.frame, "no-corners", "no corner in the stripe: a straight piece alone cannot place the target");
      continue;
    }
    frames_.push_back(std::move(f));
  }
}

bool SheetFit::matches_all(const Trace& tr, int o) const {
  if (static_cast<int>(tr.corners.size()) != target_.corners()) return false;
  for (int j = 0; j < target_.corners(); ++j)
    if (as_target_turn(tr.corners[static_cast<std::size_t>(j)].cross, o) != target_.turn(j + 1)) return false;
  return true;
}

void SheetFit::choose_orientation() {
  int votes[2] = {0, 0};  // o = +1, o = -1
  for (const FitFrame& f : frames_)
    if (f.trace.whole) {
      votes[0] += matches_all(f.trace, +1);
      votes[1] += matches_all(f.trace, -1);
    }
  const int o = votes[0] >= votes[1] ? +1 : -1;
  orientation_ = o;
  fit_.orientation = o;
  for (std::size_t i = 0; i < frames_.size(); ++i)
    if (frames_[i].trace.whole && matches_all(frames_[i].trace, o)) {
      frames_[i].whole = true;
      whole_.push_back(i);
    }
  if (static_cast<int>(whole_.size()) < opt_.min_whole_frames)
    cannot_fit(opt_, "only " + std::to_string(whole_.size()) + " of " + std::to_string(observations_.frames.size()) +
                         " frames show the whole target with its " + std::to_string(target_.corners()) + " corners (expected at least " +
                         std::to_string(opt_.min_whole_frames) +
                         "; is it the right target file, held with its first vertex toward column 0, and the whole target in view in "
                         "some frames?)");
}

// Normalised image points of a whole frame's vertices: its two ends, then its corners.
std::vector<PlanePoint> SheetFit::vertex_points(const FitFrame& f) const {
  std::vector<PlanePoint> q(static_cast<std::size_t>(n_vertices_));
  q.front() = {(f.trace.u_first - model_.cu) * model_.inv_scale, (f.trace.v_first - model_.cv) * model_.inv_scale};
  q.back() = {(f.trace.u_last - model_.cu) * model_.inv_scale, (f.trace.v_last - model_.cv) * model_.inv_scale};
  for (int j = 0; j < target_.corners(); ++j) {
    const ImageCorner& c = f.trace.corners[static_cast<std::size_t>(j)];
    q[static_cast<std::size_t>(j) + 1] = {(c.u - model_.cu) * model_.inv_scale, (c.v - model_.cv) * model_.inv_scale};
  }
  return q;
}

void SheetFit::start_model() {
  metric_start();
  // The gauge: the lowest pose is moved to the identity (its base line is
  // Z = 0 and horizontal). "Up" is the poses' mean z axis.
  reference_ = whole_.front();
  regauge(lowest_of(whole_));
  refine_start();
}

// Metric M = A^T A from the known distances between vertices, A from M, and
// each whole frame's pose by Procrustes.
void SheetFit::metric_start() {
  Eigen::Matrix3d N = Eigen::Matrix3d::Zero();
  Eigen::Vector3d b = Eigen::Vector3d::Zero();
  for (std::size_t i : whole_) {
    const auto q = vertex_points(frames_[i]);
    for (int j = 0; j < n_vertices_; ++j)
      for (int k = j + 1; k < n_vertices_; ++k) {
        const double dx = q[k].x - q[j].x, dy = q[k].z - q[j].z;
        const double tx = target_.profile[k].x - target_.profile[j].x, tz = target_.profile[k].z - target_.profile[j].z;
        const double w = vertex_weight(j) * vertex_weight(k);
        const Eigen::Vector3d row(dx * dx, 2.0 * dx * dy, dy * dy);
        N += w * row * row.transpose();
        b += w * row * (tx * tx + tz * tz);
      }
  }
  const Eigen::Vector3d m = N.ldlt().solve(b);
  const double a = m[0], bb = m[1], c = m[2];
  if (!(a > 0 && a * c - bb * bb > 0))
    cannot_fit(opt_, "the corners' spacing does not fit one linear scale (is it the right target file?)");
  // M = U^T U, U upper triangular; A = diag(1, o) U (X grows with u; det A has the orientation's sign).
  const double u00 = std::sqrt(a), u01 = bb / u00, u11 = std::sqrt(c - u01 * u01);
  const double h[9] = {u00, u01, 0, 0, orientation_ * u11, 0, 0, 0, 1};
  std::copy(h, h + 9, model_.h);
  for (std::size_t i : whole_) {
    const auto q = vertex_points(frames_[i]);
    std::vector<PlanePoint> p;
    std::vector<double> w;
    for (int j = 0; j < n_vertices_; ++j) {
      double X = 0, Z = 0;  // W = 1 here: the start is affine
      sol::apply_homography(model_.h, q[j].x, q[j].z, X, Z);
      p.push_back({X, Z});
      w.push_back(vertex_weight(j));
    }
    set_pose(frames_[i].pose, procrustes(target_.profile, p, w));
  }
}

void SheetFit::regauge(std::size_t ref) {
  const Pose2 g = inverse(pose_of(frames_[ref].pose));
  move_homography(g, model_.h);
  for (FitFrame& f : frames_) set_pose(f.pose, compose(g, pose_of(f.pose)));
  set_pose(frames_[ref].pose, Pose2{});
  reference_ = ref;
}

// The lowest pose: of the frames showing the whole target (a partial view of
// a repetitive target may sit one period off along it), the one whose base
// line has every other's base-line midpoint on or above it. Found as a fixed
// point: heights along the candidate's own z axis (first the poses' mean).
std::size_t SheetFit::lowest_of(const std::vector<std::size_t>& candidates) const {
  double ux = 0, uz = 0;
  for (std::size_t i : candidates) {
    ux += -std::sin(frames_[i].pose[2]);
    uz += std::cos(frames_[i].pose[2]);
  }
  const double mid = 0.5 * (target_.profile.front().x + target_.profile.back().x);
  std::size_t best = candidates.front();
  std::vector<std::size_t> visited;
  for (int iteration = 0; iteration < 20; ++iteration) {
    const double n = std::hypot(ux, uz);
    double lowest = std::numeric_limits<double>::infinity();
    std::size_t next = best;
    for (std::size_t i : candidates) {
      const PlanePoint m = apply(pose_of(frames_[i].pose), {mid, 0.0});
      const double height = (m.x * ux + m.z * uz) / n;
      if (height < lowest - 1e-12) {
        lowest = height;
        next = i;
      }
    }
    if (iteration > 0 && std::find(visited.begin(), visited.end(), next) != visited.end()) break;  // fixed point (or a cycle)
    visited.push_back(next);
    best = next;
    ux = -std::sin(frames_[best].pose[2]);
    uz = std::cos(frames_[best].pose[2]);
  }
  return best;
}

// Refine the start to a homography on the corners (no distortion yet).
void SheetFit::refine_start() {
  ceres::Problem problem;
  for (std::size_t i : whole_) {
    const auto q = vertex_points(frames_[i]);
    for (int j = 0; j < n_vertices_; ++j)
      problem.AddResidualBlock(new ceres::AutoDiffCostFunction<CornerResidual, 2, 3, 9>(
                                   new CornerResidual{q[j].x, q[j].z, target_.profile[j].x, target_.profile[j].z, vertex_weight(j)}),
                               nullptr, frames_[i].pose, model_.h);
  }
  problem.SetManifold(model_.h, new ceres::SubsetManifold(9, {8}));
  problem.SetParameterBlockConstant(frames_[reference_].pose);
  ceres::Solver::Options so;
  configure(so);
  ceres::Solver::Summary summary;
  ceres::Solve(so, &problem, &summary);
}

void SheetFit::plane_points(const FitFrame& f, std::vector<PlanePoint>& out) const {
  out.clear();
  const auto& u = f.obs->u;
  const auto& v = f.obs->v;
  for (std::size_t i = 0; i < u.size(); ++i) {
    double X = kNaN, Z = kNaN;
    model_.map(u[i], v[i], X, Z);
    out.push_back({X, Z});
  }
}

double SheetFit::placement_cost(const Pose2& pose, const std::vector<PlanePoint>& pts) const {
  double cost = 0;
  for (const auto& p : pts) {
    if (std::isnan(p.x)) continue;
    cost += std::min(nearest_segment(segs_, unapply(pose, p)).clamped, 2.0);
  }
  return cost;
}

// A frame showing part of the target: its corners tried at every offset
// along the target whose turns match; the pose with the lowest cost wins.
// False (the frame rejected) when no offset matches.
bool SheetFit::place_partial_frame(FitFrame& f, const std::vector<PlanePoint>& pts) {
  const int o = orientation_;
  // Corners in the plane, with their target turn.
  const auto& cs = f.trace.corners;
  std::vector<PlanePoint> cp;
  for (const auto& c : cs) {
    double X = kNaN, Z = kNaN;
    model_.map(c.u, c.v, X, Z);
    cp.push_back({X, Z});
  }
  const int K = static_cast<int>(cs.size());
  double best_cost = std::numeric_limits<double>::infinity();
  Pose2 best;
  for (int k = 1 - K; k <= n_vertices_ - 2; ++k) {  // corner i <-> vertex i + k
    std::vector<PlanePoint> t, p;
    std::vector<double> w;
    bool ok = true;
    for (int i = 0; i < K && ok; ++i) {
      const int j = i + k;
      if (j < 1 || j > n_vertices_ - 2) continue;  // this corner lies beyond the target at this offset
      ok = as_target_turn(cs[static_cast<std::size_t>(i)].cross, o) == target_.turn(j);
      t.push_back(target_.profile[static_cast<std::size_t>(j)]);
      p.push_back(cp[static_cast<std::size_t>(i)]);
      w.push_back(1.0);
    }
    if (!ok || t.empty()) continue;
    Pose2 pose;
    if (t.size() >= 2) {
      pose = procrustes(t, p, w);
    } else {
      // One corner: the tilt from its two pieces' directions in the plane.
      int i = 0;
      while (i < K && (i + k < 1 || i + k > n_vertices_ - 2)) ++i;
      const ImageCorner& c = cs[static_cast<std::size_t>(i)];
      const int j = i + k;
      auto plane_angle = [&](const ImageLine& l) {
        double x0 = kNaN, z0 = kNaN, x1 = kNaN, z1 = kNaN;
        model_.map(l.cu - 10 * l.du, l.cv - 10 * l.dv, x0, z0);
        model_.map(l.cu + 10 * l.du, l.cv + 10 * l.dv, x1, z1);
        return std::atan2(z1 - z0, x1 - x0);
      };
      const Segment &sa = segs_[static_cast<std::size_t>(j) - 1], &sb = segs_[static_cast<std::size_t>(j)];
      const double ta = plane_angle(c.before) - std::atan2(sa.dz, sa.dx);
      const double tb = plane_angle(c.after) - std::atan2(sb.dz, sb.dx);
      pose.a = std::atan2(std::sin(ta) + std::sin(tb), std::cos(ta) + std::cos(tb));
      const PlanePoint r = apply({0, 0, pose.a}, target_.profile[static_cast<std::size_t>(j)]);
      pose.x = cp[static_cast<std::size_t>(i)].x - r.x;
      pose.z = cp[static_cast<std::size_t>(i)].z - r.z;
    }
    const double cost = placement_cost(pose, pts);
    if (cost < best_cost) {
      best_cost = cost;
      best = pose;
    }
  }
  if (!std::isfinite(best_cost)) {
    reject(f.frame, "not-the-target", "its corners' turns match the target at no position");
    return false;
  }
  set_pose(f.pose, best);
  return true;
}

void SheetFit::place_frames() {
  std::vector<PlanePoint> pts;
  for (std::size_t fi = 0; fi < frames_.size(); ++fi) {
    FitFrame& f = frames_[fi];
    plane_points(f, pts);
    if (!f.whole && !place_partial_frame(f, pts)) continue;
    std::vector<double> dist;
    for (const auto& p : pts)
      if (!std::isnan(p.x)) dist.push_back(nearest_segment(segs_, unapply(pose_of(f.pose), p)).clamped);
    const double med = median(dist);
    if (med > opt_.place_tolerance_mm) {
      reject(f.frame, "not-the-target", "placed on the target at best, its points lie a median " + num(med) +
                                            " mm off it (expected within " + num(opt_.place_tolerance_mm) + " mm)");
      continue;
    }
    f.active = true;
  }
  if (active_whole_frames().empty()) cannot_fit(opt_, "no frame showing the whole target fits it");
  if (!frames_[reference_].active) regauge(lowest_of(active_whole_frames()));
}

std::vector<std::size_t> SheetFit::active_frames() const {
  std::vector<std::size_t> a;
  for (std::size_t i = 0; i < frames_.size(); ++i)
    if (frames_[i].active) a.push_back(i);
  return a;
}

std::vector<std::size_t> SheetFit::active_whole_frames() const {
  std::vector<std::size_t> a;
  for (std::size_t i = 0; i < frames_.size(); ++i)
    if (frames_[i].active && frames_[i].whole) a.push_back(i);
  return a;
}

// Every point starts used, unless it lies in the ROI's margin or between the column step's columns.
void SheetFit::mark_points() {
  for (FitFrame& f : frames_) {
    const std::size_t n = f.obs->u.size();
    f.status.assign(n, kUsed);
    f.segment.assign(n, -1);
    f.weight.assign(n, 0.0);
    f.r_px.assign(n, kNaN);
    f.d_mm.assign(n, kNaN);
    for (std::size_t i = 0; i < n; ++i) {
      const double u = f.obs->u[i], v = f.obs->v[i];
      const double m = opt_.edge_margin_px;
      if (u < roi_.x + m || u > roi_.x + roi_.width - 1 - m || v < roi_.y + m || v > roi_.y + roi_.height - 1 - m)
        f.status[i] = kEdge;
      else if (opt_.column_step > 1 && static_cast<long long>(std::llround(u)) % opt_.column_step != 0)
        f.status[i] = kSkipped;
    }
  }
}

// Assign each point to its segment with the current model; its residual in
// px (NaN when the point is left out for a reason other than outlier).
void SheetFit::assign(FitFrame& f) {
  const Pose2 pose = pose_of(f.pose);
  for (std::size_t i = 0; i < f.status.size(); ++i) {
    if (f.status[i] == kEdge || f.status[i] == kSkipped) continue;
    f.status[i] = kUsed;
    const double u = f.obs->u[i], v = f.obs->v[i];
    double X, Z, Xu, Zu, Xa, Za, Xb, Zb;
    if (!model_.map(u, v, X, Z) || !model_.map(u + 1.0, v, Xu, Zu) || !model_.map(u, v - 0.5, Xa, Za) || !model_.map(u, v + 0.5, Xb, Zb)) {
      f.status[i] = kNoPoint;
      continue;
    }
    const SegmentHit hit = nearest_segment(segs_, unapply(pose, {X, Z}));
    const Segment& s = segs_[static_cast<std::size_t>(hit.segment)];
    const double margin_mm = opt_.corner_margin_px * std::hypot(Xu - X, Zu - Z);
    f.segment[i] = hit.segment;
    if (hit.along < margin_mm || hit.along > s.length - margin_mm) {
      f.status[i] = kNearVertex;
      continue;
    }
    // The segment's normal in the plane, and how far one row moves along it.
    const double c = std::cos(pose.a), sn = std::sin(pose.a);
    const double nx = -(sn * s.dx + c * s.dz), nz = c * s.dx - sn * s.dz;
    const double gx = Xb - Xa, gz = Zb - Za;
    const double g = nx * gx + nz * gz;
    if (std::abs(g) < opt_.steep_ratio * std::hypot(gx, gz)) {
      f.status[i] = kSteep;
      continue;
    }
    f.weight[i] = 1.0 / std::abs(g);
    f.d_mm[i] = hit.distance;
    f.r_px[i] = hit.distance * f.weight[i];
    if (std::abs(f.r_px[i]) > threshold_px_) f.status[i] = kOutlier;
  }
}

// One residual per used point of the frames `act`: pose, homography, distortion.
void SheetFit::add_point_costs(ceres::Problem& problem, const std::vector<std::size_t>& act, bool robust) {
  for (std::size_t fi : act) {
    FitFrame& f = frames_[fi];
    for (std::size_t i = 0; i < f.status.size(); ++i) {
      if (f.status[i] != kUsed) continue;
      const Segment& s = segs_[static_cast<std::size_t>(f.segment[i])];
      problem.AddResidualBlock(new PointCost(PointResidual{f.obs->u[i], f.obs->v[i], model_.cu, model_.cv, model_.inv_scale, s.a.x, s.a.z,
                                                           s.dx, s.dz, f.weight[i]}),
                               robust ? new ceres::HuberLoss(opt_.huber_px) : nullptr, f.pose, model_.h, model_.d);
    }
  }
}

void SheetFit::fit_rounds() {
  mark_points();
  for (int round = 0; round < opt_.max_rounds; ++round) {
    fit_.rounds = round + 1;
    if (!fit_round(round)) break;
  }
}

// One round: solve, then judge frames and points by the new residuals.
// False when nothing changed (the fit has converged).
bool SheetFit::fit_round(int round) {
  const auto act = active_frames();
  if (static_cast<int>(act.size()) < opt_.min_frames)
    cannot_fit(opt_, "only " + std::to_string(act.size()) + " frames fit the target (expected at least " + std::to_string(opt_.min_frames) +
                         "; " + std::to_string(fit_.rejected.size()) + " rejected: see the report's frames_rejected)");
  if (active_whole_frames().empty()) cannot_fit(opt_, "no frame showing the whole target fits it");
  if (!frames_[reference_].active) regauge(lowest_of(active_whole_frames()));
  for (std::size_t i : act) assign(frames_[i]);

  ceres::Problem problem;
  add_point_costs(problem, act, true);
  if (!problem.HasParameterBlock(model_.h)) cannot_fit(opt_, "no stripe point lies on the target's segments");
  problem.SetManifold(model_.h, new ceres::SubsetManifold(9, {8}));
  problem.SetParameterBlockConstant(frames_[reference_].pose);
  if (!distortion_free_) problem.SetParameterBlockConstant(model_.d);
  ceres::Solver::Options so;
  configure(so);
  if (!distortion_free_) so.max_num_iterations = 10;  // only a start for the distortion
  ceres::Solver::Summary summary;
  ceres::Solve(so, &problem, &summary);
  spdlog::debug("calibrate: round {}: {} frames, {} residuals, distortion {}: {}; {:.3f} s", round, act.size(), summary.num_residuals,
                distortion_free_ ? "fitted" : "held", summary.BriefReport(), summary.total_time_in_seconds);

  // Residuals with the new model; the outlier threshold from them.
  std::vector<double> abs_r;
  for (std::size_t fi : act) {
    threshold_px_ = std::numeric_limits<double>::infinity();
    assign(frames_[fi]);
    for (std::size_t i = 0; i < frames_[fi].status.size(); ++i)
      if (frames_[fi].status[i] == kUsed) abs_r.push_back(std::abs(frames_[fi].r_px[i]));
  }
  const double sigma = 1.4826 * median(abs_r);
  threshold_px_ = std::max(opt_.outlier_sigmas * sigma, opt_.outlier_floor_px);

  // Frames: too many points off, or too large a residual.
  std::vector<double> frame_rms(act.size(), 0.0);
  std::vector<double> off_fraction(act.size(), 0.0);
  for (std::size_t k = 0; k < act.size(); ++k) {
    const FitFrame& f = frames_[act[k]];
    double ss = 0;
    std::size_t in = 0, off = 0;
    for (std::size_t i = 0; i < f.status.size(); ++i) {
      if (f.status[i] != kUsed) continue;
      if (std::abs(f.r_px[i]) > threshold_px_) {
        ++off;
      } else {
        ss += f.r_px[i] * f.r_px[i];
        ++in;
      }
    }
    frame_rms[k] = in ? std::sqrt(ss / static_cast<double>(in)) : std::numeric_limits<double>::infinity();
    off_fraction[k] = (in + off) ? static_cast<double>(off) / static_cast<double>(in + off) : 1.0;
  }
  const double median_rms = median(frame_rms);
  // Without the distortion the model is only a start: judge nothing yet.
  const bool judge = distortion_free_ || !opt_.fit_distortion;
  bool changed = false;
  for (std::size_t k = 0; k < act.size(); ++k) {
    FitFrame& f = frames_[act[k]];
    if (!judge) continue;
    if (off_fraction[k] > opt_.frame_outlier_fraction) {
      reject(f.frame, "outliers",
             num(100.0 * off_fraction[k], 3) + " % of its points lie more than " + num(threshold_px_) +
                 " px off the target (expected at most " + num(100.0 * opt_.frame_outlier_fraction, 3) +
                 " %): a torn, doubled or foreign frame?");
      f.active = false;
      changed = true;
    } else if (frame_rms[k] > std::max(opt_.frame_rms_factor * median_rms, opt_.frame_rms_floor_px)) {
      reject(f.frame, "residual",
             "residual RMS " + num(frame_rms[k]) + " px, " + num(frame_rms[k] / median_rms) + " times the median frame's " +
                 num(median_rms) + " px (expected at most " + num(opt_.frame_rms_factor) + " times)");
      f.active = false;
      changed = true;
    }
  }
  // Outliers for the next round.
  if (!judge) threshold_px_ = std::numeric_limits<double>::infinity();
  std::vector<std::uint8_t> outliers;
  for (std::size_t fi : active_frames())
    for (std::size_t i = 0; i < frames_[fi].status.size(); ++i)
      outliers.push_back(frames_[fi].status[i] == kUsed && std::abs(frames_[fi].r_px[i]) > threshold_px_);
  changed = changed || outliers != previous_outliers_;
  previous_outliers_ = std::move(outliers);
  if (!changed && (distortion_free_ || !opt_.fit_distortion)) return false;
  distortion_free_ = opt_.fit_distortion;  // round 0 fits the homography alone
  return true;
}

void SheetFit::fix_gauge() {
  act_ = active_frames();
  if (static_cast<int>(act_.size()) < opt_.min_frames)
    cannot_fit(opt_, "only " + std::to_string(act_.size()) + " frames fit the target (expected at least " + std::to_string(opt_.min_frames) + ")");
  if (active_whole_frames().empty()) cannot_fit(opt_, "no frame showing the whole target fits it");
  {
    const std::size_t low = lowest_of(active_whole_frames());
    if (low != reference_ || !frames_[reference_].active) regauge(low);
    const double uc = sensor_known_ ? 0.5 * (opt_.sensor_width - 1) : roi_.x + 0.5 * (roi_.width - 1);
    double v = roi_.y + 0.5 * (roi_.height - 1), X = 0, Z = 0;
    for (int it = 0; it < 50; ++it) {  // Newton on Z(uc, v) = 0
      double Xa, Za, Xb, Zb;
      if (!model_.map(uc, v, X, Z) || !model_.map(uc, v - 0.5, Xa, Za) || !model_.map(uc, v + 0.5, Xb, Zb) || Zb == Za) break;
      const double step = Z / (Zb - Za);
      v -= std::clamp(step, -200.0, 200.0);
      if (std::abs(step) < 1e-9) break;
    }
    model_.map(uc, v, X, Z);
    const Pose2 shift{-X, 0.0, 0.0};
    move_homography(shift, model_.h);
    for (FitFrame& f : frames_) set_pose(f.pose, compose(shift, pose_of(f.pose)));
  }
  threshold_px_ = std::numeric_limits<double>::infinity();
  for (std::size_t fi : act_) assign(frames_[fi]);
  // Keep the last round's outliers out of the statistics.
  std::size_t k = 0;
  for (std::size_t fi : act_)
    for (std::size_t i = 0; i < frames_[fi].status.size(); ++i, ++k)
      if (k < previous_outliers_.size() && previous_outliers_[k] && frames_[fi].status[i] == kUsed) frames_[fi].status[i] = kOutlier;
}

void SheetFit::covariance() {
  ceres::Problem problem;
  std::vector<double*> blocks;
  for (std::size_t fi : act_) {
    FitFrame& f = frames_[fi];
    bool any = false;
    for (std::size_t i = 0; i < f.status.size(); ++i) {
      if (f.status[i] != kUsed) continue;
      const Segment& s = segs_[static_cast<std::size_t>(f.segment[i])];
      problem.AddResidualBlock(new PointCost(PointResidual{f.obs->u[i], f.obs->v[i], model_.cu, model_.cv, model_.inv_scale, s.a.x, s.a.z,
                                                           s.dx, s.dz, f.weight[i]}),
                               nullptr, f.pose, model_.h, model_.d);
      any = true;
    }
    if (any && fi != reference_) blocks.push_back(f.pose);
  }
  problem.SetManifold(model_.h, new ceres::SubsetManifold(9, {8}));
  blocks.push_back(model_.h);
  if (distortion_free_) blocks.push_back(model_.d);
  ceres::Problem::EvaluateOptions eo;
  eo.parameter_blocks = blocks;
  double cost = 0;
  std::vector<double> residuals;
  ceres::CRSMatrix J;
  problem.Evaluate(eo, &cost, &residuals, nullptr, &J);
  const int n = J.num_cols, m = J.num_rows;
  Eigen::MatrixXd JtJ = Eigen::MatrixXd::Zero(n, n);
  for (int r = 0; r < m; ++r)
    for (int a = J.rows[r]; a < J.rows[r + 1]; ++a)
      for (int b = J.rows[r]; b < J.rows[r + 1]; ++b) JtJ(J.cols[a], J.cols[b]) += J.values[a] * J.values[b];
  const double dof = std::max(1, m - n);
  const double s2 = 2.0 * cost / dof;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(JtJ);
  std::vector<double> var(static_cast<std::size_t>(n), kNaN);
  if (es.info() == Eigen::Success && es.eigenvalues().maxCoeff() > 0) {
    const double cutoff = es.eigenvalues().maxCoeff() * 1e-14;
    Eigen::VectorXd inv = es.eigenvalues();
    bool singular = false;
    for (int i = 0; i < n; ++i) {
      if (inv[i] > cutoff) {
        inv[i] = 1.0 / inv[i];
      } else {
        inv[i] = 0.0;
        singular = true;
      }
    }
    const Eigen::MatrixXd C = es.eigenvectors() * inv.asDiagonal() * es.eigenvectors().transpose();
    for (int i = 0; i < n; ++i) var[static_cast<std::size_t>(i)] = s2 * C(i, i);
    if (singular) fit_.warnings.push_back("the fit's normal matrix is singular: some standard deviations are not meaningful");
  }
  // Columns: poses (3 each), then H's 8 free entries, then the distortion's 5.
  const std::size_t h0 = static_cast<std::size_t>(n) - 8 - (distortion_free_ ? 5 : 0);
  const char* hn[9] = {"h11", "h12", "h13", "h21", "h22", "h23", "h31", "h32", "h33"};
  for (int i = 0; i < 9; ++i)
    fit_.parameters.push_back({hn[i], model_.h[i], i < 8 ? std::sqrt(var[h0 + static_cast<std::size_t>(i)]) : 0.0});
  const char* dn[5] = {"k1", "k2", "k3", "p1", "p2"};
  for (int i = 0; i < 5; ++i)
    fit_.parameters.push_back({dn[i], model_.d[i], distortion_free_ ? std::sqrt(var[h0 + 8 + static_cast<std::size_t>(i)]) : 0.0});
}

// One used point into its frame's pose result, the fit's maxima and the coverage.
void SheetFit::record_point(FitFrame& f, std::size_t i, PoseResult& pr, double& fs_px, double& fs_mm) {
  Coverage& cov = fit_.coverage;
  const double r = f.r_px[i], d = f.d_mm[i];
  ++pr.points;
  fs_px += r * r;
  fs_mm += d * d;
  pr.max_px = std::max(pr.max_px, std::abs(r));
  fit_.residual_max_px = std::max(fit_.residual_max_px, std::abs(r));
  fit_.residual_max_mm = std::max(fit_.residual_max_mm, std::abs(d));
  const double u = f.obs->u[i], v = f.obs->v[i];
  const int cu = std::clamp(static_cast<int>((u - roi_.x) * cov.cells_u / roi_.width), 0, cov.cells_u - 1);
  const int cv = std::clamp(static_cast<int>((v - roi_.y) * cov.cells_v / roi_.height), 0, cov.cells_v - 1);
  ++cov.counts[static_cast<std::size_t>(cv * cov.cells_u + cu)];
  cov.u_min = std::min(cov.u_min, u);
  cov.u_max = std::max(cov.u_max, u);
  cov.v_min = std::min(cov.v_min, v);
  cov.v_max = std::max(cov.v_max, v);
  double X, Z;
  if (model_.map(u, v, X, Z)) {
    cov.z_min_mm = std::min(cov.z_min_mm, Z);
    cov.z_max_mm = std::max(cov.z_max_mm, Z);
  }
}

CalibrationFit SheetFit::results() {
  fit_.model.kind = SheetOfLightModel::Kind::SheetOfLight;
  fit_.model.unit = "mm";
  fit_.model.cu = model_.cu;
  fit_.model.cv = model_.cv;
  fit_.model.scale = scale_;
  std::copy(model_.h, model_.h + 9, fit_.model.homography);
  std::copy(model_.d, model_.d + 5, fit_.model.distortion);
  fit_.reference_frame = frames_[reference_].frame;

  double ss_px = 0, ss_mm = 0;
  Coverage& cov = fit_.coverage;
  cov.cells_u = opt_.coverage_cells_u;
  cov.cells_v = opt_.coverage_cells_v;
  cov.counts.assign(static_cast<std::size_t>(cov.cells_u * cov.cells_v), 0);
  cov.u_min = cov.v_min = cov.z_min_mm = std::numeric_limits<double>::infinity();
  cov.u_max = cov.v_max = cov.z_max_mm = -std::numeric_limits<double>::infinity();
  for (std::size_t fi : act_) {
    FitFrame& f = frames_[fi];
    PoseResult pr;
    pr.frame = f.frame;
    pr.x_mm = f.pose[0];
    pr.z_mm = f.pose[1];
    pr.angle_deg = f.pose[2] * 180.0 / kPi;
    pr.whole = f.whole;
    double fs_px = 0, fs_mm = 0;
    for (std::size_t i = 0; i < f.status.size(); ++i)
      if (f.status[i] == kUsed) record_point(f, i, pr, fs_px, fs_mm);
    ss_px += fs_px;
    ss_mm += fs_mm;
    fit_.points_used += pr.points;
    if (pr.points) {
      pr.rms_px = std::sqrt(fs_px / static_cast<double>(pr.points));
      pr.rms_mm = std::sqrt(fs_mm / static_cast<double>(pr.points));
    }
    fit_.poses.push_back(pr);
  }
  if (fit_.points_used) {
    fit_.residual_rms_px = std::sqrt(ss_px / static_cast<double>(fit_.points_used));
    fit_.residual_rms_mm = std::sqrt(ss_mm / static_cast<double>(fit_.points_used));
  }
  for (const FitFrame& f : frames_)
    for (std::uint8_t s : f.status)
      if (s != kUsed || !f.active) ++fit_.points_excluded[f.active ? status_name(s) : "rejected_frame"];
  for (const FrameObservation& o : observations_.frames)  // frames rejected before they were traced or placed
    if (std::none_of(frames_.begin(), frames_.end(), [&](const FitFrame& f) { return f.obs == &o; }))
      fit_.points_excluded["rejected_frame"] += o.u.size();
  std::sort(fit_.rejected.begin(), fit_.rejected.end(), [](const RejectedFrame& a, const RejectedFrame& b) { return a.frame < b.frame; });
  coverage_warnings();
  return std::move(fit_);
}

// Coverage: cells with at least 10 points; warn about uncovered bands.
void SheetFit::coverage_warnings() {
  Coverage& cov = fit_.coverage;
  int covered = 0;
  for (auto c : cov.counts) covered += c >= 10;
  cov.covered_fraction = static_cast<double>(covered) / static_cast<double>(cov.counts.size());
  const double ucentre = roi_.x + 0.5 * (roi_.width - 1);
  auto band_warning = [&](bool rows, int first, int last) {
    std::ostringstream s;
    if (rows) {
      const int r0 = roi_.y + first * roi_.height / cov.cells_v, r1 = roi_.y + (last + 1) * roi_.height / cov.cells_v - 1;
      double X, Z0 = kNaN, Z1 = kNaN;
      model_.map(ucentre, r0, X, Z0);
      model_.map(ucentre, r1, X, Z1);
      s << "sensor rows " << r0 << ".." << r1 << " (Z about " << num(std::min(Z0, Z1)) << ".." << num(std::max(Z0, Z1))
        << " mm on the centre column) hold no target points: that part of the measuring range is extrapolated; move the target there too";
    } else {
      const int c0 = roi_.x + first * roi_.width / cov.cells_u, c1 = roi_.x + (last + 1) * roi_.width / cov.cells_u - 1;
      s << "sensor columns " << c0 << ".." << c1
        << " hold no target points: that part of the field of view is extrapolated; move the target there too";
    }
    fit_.warnings.push_back(s.str());
  };
  for (int pass = 0; pass < 2; ++pass) {
    const bool rows = pass == 0;
    const int bands = rows ? cov.cells_v : cov.cells_u;
    int run_start = -1;
    for (int b = 0; b <= bands; ++b) {
      std::uint64_t total = 0;
      if (b < bands)
        for (int k = 0; k < (rows ? cov.cells_u : cov.cells_v); ++k)
          total += rows ? cov.counts[static_cast<std::size_t>(b * cov.cells_u + k)] : cov.counts[static_cast<std::size_t>(k * cov.cells_u + b)];
      const bool empty = b < bands && total < 10;
      if (empty && run_start < 0) run_start = b;
      if (!empty && run_start >= 0) {
        band_warning(rows, run_start, b - 1);
        run_start = -1;
      }
    }
  }
  if (act_.size() < 15)
    fit_.warnings.push_back("only " + std::to_string(act_.size()) +
                            " frames were used: 20 or more, spread over the measuring range and tilted a little, give a steadier fit");
}

}  // namespace

CalibrationFit fit_sheet_of_light(const ObservationSet& observations, const CalibrationTarget& target, const FitOptions& opt) {
  const auto t_start = std::chrono::steady_clock::now();
  validate_target(target);
  SheetFit s(observations, target, opt);
  s.trace_frames();
  s.choose_orientation();
  s.start_model();
  s.place_frames();
  s.fit_rounds();
  s.fix_gauge();
  s.covariance();
  CalibrationFit fit = s.results();
  fit.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return fit;
}

}  // namespace stripeline
