#include "calibration/head_alignment.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <sstream>

#include "calibration/fit.h"
#include "calibration/toml_table.h"
#include "calibration/toml_text.h"
#include "core/errors.h"
#include "io/atomic_file.h"

namespace stripeline {

namespace {

using toml_table::exact;
using toml_table::quoted;
using toml_table::shown;
using toml_table::Table;

constexpr double kDeg = 3.14159265358979323846 / 180.0;
constexpr const char* kFormat = "stripeline-head-transforms";

// Checks R is a rotation: R R^T = I to 1e-6 and det R = +1.
bool is_rotation(const double* r) {
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const double d = r[3 * i] * r[3 * j] + r[3 * i + 1] * r[3 * j + 1] + r[3 * i + 2] * r[3 * j + 2];
      if (std::abs(d - (i == j ? 1.0 : 0.0)) > 1e-6) return false;
    }
  const double det = r[0] * (r[4] * r[8] - r[5] * r[7]) - r[1] * (r[3] * r[8] - r[5] * r[6]) + r[2] * (r[3] * r[7] - r[4] * r[6]);
  return std::abs(det - 1.0) < 1e-6;
}

// The target's profile with its base continued flat 10 m beyond both ends.
std::vector<PlanePoint> extended(const CalibrationTarget& t) {
  std::vector<PlanePoint> p;
  p.push_back({t.profile.front().x - 10000.0, t.profile.front().z});
  p.insert(p.end(), t.profile.begin(), t.profile.end());
  p.push_back({t.profile.back().x + 10000.0, t.profile.back().z});
  return p;
}

// Height of the polyline at x (x increasing).
double height_at(const std::vector<PlanePoint>& p, double x) {
  auto it = std::upper_bound(p.begin(), p.end(), x, [](double v, const PlanePoint& q) { return v < q.x; });
  if (it == p.begin()) return p.front().z;
  if (it == p.end()) return p.back().z;
  const PlanePoint& b = *it;
  const PlanePoint& a = *(it - 1);
  return a.z + (b.z - a.z) * (x - a.x) / (b.x - a.x);
}

// Signed distance from w to the polyline (positive above a segment) and the
// unit normal at the nearest point (toward w where that is a vertex).
double distance_to(const std::vector<PlanePoint>& p, double wx, double wz, double& nx, double& nz) {
  double best = std::numeric_limits<double>::infinity(), bx = 0, bz = 0;
  for (std::size_t i = 0; i + 1 < p.size(); ++i) {
    const double ax = p[i].x, az = p[i].z, dx = p[i + 1].x - ax, dz = p[i + 1].z - az;
    const double len2 = dx * dx + dz * dz;
    const double s = std::clamp(((wx - ax) * dx + (wz - az) * dz) / len2, 0.0, 1.0);
    const double cx = ax + s * dx, cz = az + s * dz;
    const double d = std::hypot(wx - cx, wz - cz);
    if (d >= best) continue;
    best = d, bx = cx, bz = cz;
    const double len = std::sqrt(len2);
    nx = -dz / len, nz = dx / len;  // the segment's upward normal (x increases)
    if ((s <= 0.0 || s >= 1.0) && d > 1e-12) nx = (wx - cx) / d, nz = (wz - cz) / d;
  }
  return (wx - bx) * nx + (wz - bz) * nz;
}

struct Pose {
  double angle = 0, tx = 0, tz = 0;  // radians, mm
  void apply(const PlanePoint& p, double& wx, double& wz) const {
    const double c = std::cos(angle), s = std::sin(angle);
    wx = c * p.x - s * p.z + tx;
    wz = s * p.x + c * p.z + tz;
  }
};

double median(std::vector<double>& v) {
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// Coarse search: turns in 0.5 degree steps, shifts along X in search_step
// steps over every placement where the head's points overlap the target;
// the Z shift is the median vertical residual; the score, the mean of the
// smallest 80 % vertical residuals after it.
Pose coarse_search(const std::vector<PlanePoint>& pts, const std::vector<PlanePoint>& poly, const CalibrationTarget& target,
                   const AlignOptions& o) {
  std::vector<PlanePoint> sample;
  const std::size_t step = std::max<std::size_t>(1, pts.size() / 400);
  for (std::size_t i = 0; i < pts.size(); i += step) sample.push_back(pts[i]);
  Pose best;
  double best_cost = std::numeric_limits<double>::infinity();
  std::vector<double> dz(sample.size()), ad(sample.size());
  for (double a = -o.search_angle_deg; a <= o.search_angle_deg + 1e-9; a += 0.5) {
    const double c = std::cos(a * kDeg), s = std::sin(a * kDeg);
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& p : sample) lo = std::min(lo, c * p.x - s * p.z), hi = std::max(hi, c * p.x - s * p.z);
    for (double tx = target.profile.front().x - hi; tx <= target.profile.back().x - lo; tx += o.search_step_mm) {
      for (std::size_t i = 0; i < sample.size(); ++i) {
        const double wx = c * sample[i].x - s * sample[i].z + tx, wz = s * sample[i].x + c * sample[i].z;
        dz[i] = height_at(poly, wx) - wz;
      }
      ad = dz;
      const double tz = median(ad);
      for (std::size_t i = 0; i < dz.size(); ++i) ad[i] = std::abs(dz[i] - tz);
      const auto keep = static_cast<std::ptrdiff_t>(ad.size() * 8 / 10);
      std::nth_element(ad.begin(), ad.begin() + keep, ad.end());
      double cost = 0;
      for (std::ptrdiff_t i = 0; i < keep; ++i) cost += ad[static_cast<std::size_t>(i)];
      if (cost < best_cost) best_cost = cost, best = Pose{a * kDeg, tx, tz};
    }
  }
  return best;
}

// Solves the 3x3 system A x = b (Gaussian elimination with pivoting); false when singular.
bool solve3(double A[3][3], double b[3], double x[3]) {
  for (int c = 0; c < 3; ++c) {
    int piv = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::abs(A[r][c]) > std::abs(A[piv][c])) piv = r;
    if (std::abs(A[piv][c]) < 1e-12) return false;
    std::swap(A[c], A[piv]);
    std::swap(b[c], b[piv]);
    for (int r = c + 1; r < 3; ++r) {
      const double f = A[r][c] / A[c][c];
      for (int k = c; k < 3; ++k) A[r][k] -= f * A[c][k];
      b[r] -= f * b[c];
    }
  }
  for (int c = 2; c >= 0; --c) {
    double s = b[c];
    for (int k = c + 1; k < 3; ++k) s -= A[c][k] * x[k];
    x[c] = s / A[c][c];
  }
  return true;
}

}  // namespace

HeadTransform HeadTransform::in_plane(std::string name, double angle_deg, double tx, double tz) {
  HeadTransform h;
  h.name = std::move(name);
  const double c = std::cos(angle_deg * kDeg), s = std::sin(angle_deg * kDeg);
  const double r[9] = {c, 0, -s, 0, 1, 0, s, 0, c};
  std::copy(r, r + 9, h.r);
  h.t[0] = tx, h.t[1] = 0, h.t[2] = tz;
  return h;
}

HeadTransform HeadTransform::facing_back(std::string name) {
  HeadTransform h;
  h.name = std::move(name);
  h.r[0] = -1.0, h.r[4] = -1.0;
  return h;
}

HeadTransform HeadTransform::after(const HeadTransform& o) const {
  HeadTransform h;
  h.name = name;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) h.r[3 * i + j] = r[3 * i] * o.r[j] + r[3 * i + 1] * o.r[3 + j] + r[3 * i + 2] * o.r[6 + j];
    h.t[i] = r[3 * i] * o.t[0] + r[3 * i + 1] * o.t[1] + r[3 * i + 2] * o.t[2] + t[i];
  }
  return h;
}

HeadTransform HeadTransform::inverse() const {
  HeadTransform h;
  h.name = name;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) h.r[3 * i + j] = r[3 * j + i];
  for (int i = 0; i < 3; ++i) h.t[i] = -(h.r[3 * i] * t[0] + h.r[3 * i + 1] * t[1] + h.r[3 * i + 2] * t[2]);
  return h;
}

const HeadTransform* HeadTransforms::find(const std::string& name) const {
  for (const auto& h : heads)
    if (h.name == name) return &h;
  return nullptr;
}

HeadTransforms parse_head_transforms(const std::string& text, const std::string& origin) {
  const toml::table doc = parse_toml<InputError>(text, origin);
  HeadTransforms out;
  out.origin = origin;
  for (const auto& [k, v] : doc)
    if (k.str() != "alignment" && k.str() != "head") throw InputError(origin + ": " + std::string(k.str()) + ": unknown table (expected [alignment] and [[head]])");
  Table a(doc["alignment"].as_table(), "alignment", origin);
  if (!a.present()) throw InputError(origin + ": alignment: missing (expected an [alignment] table with format = \"" + kFormat + "\")");
  if (a.string("format", true) != kFormat) a.fail("format", "expected \"" + std::string(kFormat) + "\"");
  const std::int64_t version = a.integer("version", true);
  if (version != kHeadTransformsVersion) a.fail("version", std::to_string(version) + " is not supported (expected " + std::to_string(kHeadTransformsVersion) + ")");
  out.target = a.string("target", false);
  a.finish();
  const toml::array* heads = doc["head"].as_array();
  if (!heads || heads->empty()) throw InputError(origin + ": head: missing (expected one [[head]] table per head)");
  for (std::size_t i = 0; i < heads->size(); ++i) {
    const std::string name = "head[" + std::to_string(i) + "]";
    Table h((*heads)[i].as_table(), name, origin);
    if (!h.present()) throw InputError(origin + ": " + name + ": expected a table");
    HeadTransform t;
    t.name = h.string("name", true);
    if (t.name.empty()) h.fail("name", "is empty (expected the head's name, as merge --head NAME=... gives it)");
    if (out.find(t.name)) h.fail("name", "'" + t.name + "' is given twice (expected one [[head]] per head)");
    const std::vector<double> r = h.numbers("rotation", true, 9), tr = h.numbers("translation", true, 3);
    std::copy(r.begin(), r.end(), t.r);
    std::copy(tr.begin(), tr.end(), t.t);
    if (!is_rotation(t.r)) h.fail("rotation", "is not a rotation (expected an orthonormal row-major 3x3 with determinant +1, to 1e-6)");
    t.residual_rms_mm = h.number("residual_rms_mm", false, 0.0);
    const std::int64_t n = h.integer("points", false, 0);
    if (n < 0) h.fail("points", shown(static_cast<double>(n)) + " (expected a count >= 0)");
    t.points = static_cast<std::uint64_t>(n);
    h.finish();
    out.heads.push_back(t);
  }
  return out;
}

HeadTransforms load_head_transforms(const std::filesystem::path& path) {
  return parse_head_transforms(read_toml_file(path, "head transforms file"), path.string());
}

std::string format_head_transforms(const HeadTransforms& t) {
  std::ostringstream s;
  s << "# Head-to-world transforms (stripeline align; docs/scale-out.md): world = R * head + t, mm.\n";
  s << "[alignment]\nformat = " << quoted(kFormat) << "\nversion = " << kHeadTransformsVersion << "\n";
  if (!t.target.empty()) s << "target = " << quoted(t.target) << "\n";
  for (const auto& h : t.heads) {
    s << "\n[[head]]\nname = " << quoted(h.name) << "\n";
    // The comment names the turn where it is one about a single axis: in
    // the laser plane (about Y), or about Z (180: a head facing the other way).
    const auto zero = [&](std::initializer_list<int> is) {
      for (int i : is)
        if (std::abs(h.r[i]) > 1e-9) return false;
      return true;
    };
    if (zero({1, 3, 5, 7}) && h.r[4] > 1.0 - 1e-9) s << "# in-plane turn " << shown(h.angle_deg()) << " degrees\n";
    else if (zero({2, 5, 6, 7}) && h.r[8] > 1.0 - 1e-9) s << "# turn about Z " << shown(std::atan2(h.r[3], h.r[0]) * 57.295779513082320876798) << " degrees\n";
    s << "rotation = [";
    for (int i = 0; i < 9; ++i) s << (i ? ", " : "") << exact(h.r[i]);
    s << "]\ntranslation = [" << exact(h.t[0]) << ", " << exact(h.t[1]) << ", " << exact(h.t[2]) << "]\n";
    if (h.points > 0) s << "residual_rms_mm = " << exact(h.residual_rms_mm) << "\npoints = " << h.points << "\n";
  }
  return s.str();
}

void save_head_transforms(const std::filesystem::path& path, const HeadTransforms& t) {
  io::write_file_atomically(path, format_head_transforms(t));
}

AlignResult align_to_target(const std::vector<PlanePoint>& pts, const CalibrationTarget& target, const std::string& name, const AlignOptions& o) {
  if (o.reversed) {  // in the plane the turn about Z mirrors X: fit the mirrored points, then turn first
    std::vector<PlanePoint> mirrored(pts);
    for (PlanePoint& p : mirrored) p.x = -p.x;
    AlignOptions plain = o;
    plain.reversed = false;
    AlignResult r = align_to_target(mirrored, target, name, plain);
    const HeadTransform fit = r.transform;
    r.transform = fit.after(HeadTransform::facing_back(name));
    r.transform.residual_rms_mm = fit.residual_rms_mm;
    r.transform.points = fit.points;
    return r;
  }
  if (pts.size() < o.min_points)
    throw InputError("align: head '" + name + "': " + std::to_string(pts.size()) + " target points (expected at least " + std::to_string(o.min_points) +
                     ": does the head see the target?)");
  const std::vector<PlanePoint> poly = extended(target);
  Pose pose = coarse_search(pts, poly, target, o);
  std::vector<double> res(pts.size()), absr;
  std::vector<char> used(pts.size(), 1);
  double limit = std::numeric_limits<double>::infinity();
  for (int it = 0; it < o.iterations; ++it) {
    double A[3][3] = {}, b[3] = {};
    const double c = std::cos(pose.angle), s = std::sin(pose.angle);
    absr.clear();
    for (std::size_t i = 0; i < pts.size(); ++i) {
      double wx, wz, nx = 0, nz = 1;
      pose.apply(pts[i], wx, wz);
      const double r = distance_to(poly, wx, wz, nx, nz);
      res[i] = r;
      absr.push_back(std::abs(r));
      used[i] = std::abs(r) <= limit;
      if (!used[i]) continue;
      const double j[3] = {nx * (-s * pts[i].x - c * pts[i].z) + nz * (c * pts[i].x - s * pts[i].z), nx, nz};
      for (int a = 0; a < 3; ++a) {
        for (int k = 0; k < 3; ++k) A[a][k] += j[a] * j[k];
        b[a] -= j[a] * r;
      }
    }
    limit = std::max(o.outlier_floor_mm, 4.0 * 1.4826 * median(absr));
    double dx[3] = {0, 0, 0};
    if (!solve3(A, b, dx))
      throw InputError("align: head '" + name + "': its points do not fix its pose, no corner of the target in view (expected a corner of " +
                       target.name + ": the flat base alone does not fix X)");
    pose.angle += dx[0], pose.tx += dx[1], pose.tz += dx[2];
    if (std::abs(dx[0]) < 1e-12 && std::abs(dx[1]) < 1e-10 && std::abs(dx[2]) < 1e-10 && it > 3) break;
  }
  AlignResult r;
  r.points_total = pts.size();
  double ss = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (std::abs(res[i]) > limit) continue;
    ++r.points_used;
    ss += res[i] * res[i];
    r.max_mm = std::max(r.max_mm, std::abs(res[i]));
    double wx, wz;
    pose.apply(pts[i], wx, wz);
    lo = std::min(lo, wx), hi = std::max(hi, wx);
  }
  r.rms_mm = r.points_used ? std::sqrt(ss / static_cast<double>(r.points_used)) : 0.0;
  bool corner = false;
  for (int v = 1; v + 1 < static_cast<int>(target.profile.size()); ++v)
    corner = corner || (target.profile[static_cast<std::size_t>(v)].x > lo + 1.0 && target.profile[static_cast<std::size_t>(v)].x < hi - 1.0);
  if (!corner)
    throw InputError("align: head '" + name + "': sees X " + shown(lo) + ".." + shown(hi) + " mm of the target, no corner (expected a corner of " +
                     target.name + " in view: the flat base alone does not fix X)");
  if (r.points_used < o.min_points || r.rms_mm > 0.5)
    throw InputError("align: head '" + name + "': the fit leaves " + shown(r.rms_mm) + " mm RMS over " + std::to_string(r.points_used) +
                     " points (expected at most 0.5 mm: is it the target " + target.name + "?)");
  r.transform = HeadTransform::in_plane(name, pose.angle / kDeg, pose.tx, pose.tz);
  r.transform.residual_rms_mm = r.rms_mm;
  r.transform.points = r.points_used;
  return r;
}

std::vector<PlanePoint> target_scan_points(FrameSource& source, const CalibrationFile& calibration, int roi_x, int roi_y, const ChainConfig& chain) {
  const ObservationSet obs = extract_observations(source, chain, roi_x, roi_y);
  const SheetOfLightMap<double> m = calibration.model.map<double>();
  std::map<long, std::vector<PlanePoint>> by_column;
  std::size_t frames = 0;
  for (const auto& f : obs.frames) {
    if (f.missing) continue;
    ++frames;
    for (std::size_t i = 0; i < f.u.size(); ++i) {
      double X, Z, wx, wy, wz;
      if (!image_to_plane(m, f.u[i], f.v[i], X, Z)) continue;
      plane_to_world(m, X, Z, 0.0, wx, wy, wz);
      by_column[std::lround(f.u[i])].push_back({wx, wz});
    }
  }
  std::vector<PlanePoint> out;
  std::vector<double> xs, zs;
  for (auto& [u, v] : by_column) {
    if (v.size() * 2 < frames) continue;  // seen in fewer than half the frames: an edge or a glint
    xs.clear(), zs.clear();
    for (const auto& p : v) xs.push_back(p.x), zs.push_back(p.z);
    out.push_back({median(xs), median(zs)});
  }
  return out;
}

}  // namespace stripeline
