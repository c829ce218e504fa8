// Steger's ridge detector in double precision: the tests' independent
// reference for real images (see steger_reference.h).
#include "steger_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stripeline::test {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Pixel-integrated Gaussian kernels at scale sigma, taps j = -r..r, applied as
// out(y) = sum_j k[j] in(y - j):
//   smooth: the Gaussian's integral over [j - 1/2, j + 1/2]
//   first:  phi(j + 1/2) - phi(j - 1/2)     (derivative of the smoothed signal)
//   second: phi'(j + 1/2) - phi'(j - 1/2)
struct Kernels {
  int radius = 0;
  std::vector<double> smooth, first, second;  // index j + radius
};

Kernels make_kernels(double sigma) {
  Kernels k;
  k.radius = static_cast<int>(std::ceil(4.0 * sigma)) + 1;
  const int n = 2 * k.radius + 1;
  k.smooth.resize(n);
  k.first.resize(n);
  k.second.resize(n);
  auto phi = [sigma](double x) { return std::exp(-0.5 * x * x / (sigma * sigma)) / (std::sqrt(2.0 * kPi) * sigma); };
  auto dphi = [sigma, phi](double x) { return -x / (sigma * sigma) * phi(x); };
  auto cdf = [sigma](double x) { return 0.5 * (1.0 + std::erf(x / (std::sqrt(2.0) * sigma))); };
  for (int j = -k.radius; j <= k.radius; ++j) {
    k.smooth[j + k.radius] = cdf(j + 0.5) - cdf(j - 0.5);
    k.first[j + k.radius] = phi(j + 0.5) - phi(j - 0.5);
    k.second[j + k.radius] = dphi(j + 0.5) - dphi(j - 0.5);
  }
  return k;
}

// Separable convolution with replicated borders: kx along rows, ky along columns.
std::vector<double> convolve(const std::vector<double>& in, int w, int h, const std::vector<double>& kx, const std::vector<double>& ky,
                             int r) {
  std::vector<double> mid(in.size()), out(in.size());
  auto clampi = [](int i, int n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); };
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double a = 0.0;
      for (int j = -r; j <= r; ++j) a += kx[j + r] * in[static_cast<std::size_t>(y) * w + clampi(x - j, w)];
      mid[static_cast<std::size_t>(y) * w + x] = a;
    }
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double a = 0.0;
      for (int j = -r; j <= r; ++j) a += ky[j + r] * mid[static_cast<std::size_t>(clampi(y - j, h)) * w + x];
      out[static_cast<std::size_t>(y) * w + x] = a;
    }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const std::size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  const double hi = v[m];
  if (v.size() % 2) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m));
  return 0.5 * (lo + hi);
}

}  // namespace

std::vector<double> steger_centres(const std::vector<double>& img, int w, int h, const StegerOptions& o) {
  const Kernels k = make_kernels(o.sigma);
  const int r = k.radius;
  // Partial derivatives of the smoothed image (x along a row, y down a column).
  const auto rx = convolve(img, w, h, k.first, k.smooth, r);
  const auto ry = convolve(img, w, h, k.smooth, k.first, r);
  const auto rxx = convolve(img, w, h, k.second, k.smooth, r);
  const auto ryy = convolve(img, w, h, k.smooth, k.second, r);
  const auto rxy = convolve(img, w, h, k.first, k.first, r);
  const auto at = [w](int x, int y) { return static_cast<std::size_t>(y) * w + x; };

  // The column's noise of -r_yy, robustly (1.4826 x the median absolute
  // deviation): the thresholds scale with it.
  std::vector<double> noise(static_cast<std::size_t>(w));
  {
    std::vector<double> column(static_cast<std::size_t>(h)), dev(static_cast<std::size_t>(h));
    for (int x = 0; x < w; ++x) {
      for (int y = 0; y < h; ++y) column[static_cast<std::size_t>(y)] = -ryy[at(x, y)];
      const double med = median(column);
      for (int y = 0; y < h; ++y) dev[static_cast<std::size_t>(y)] = std::abs(column[static_cast<std::size_t>(y)] - med);
      noise[static_cast<std::size_t>(x)] = 1.4826 * median(dev);
    }
  }

  // Line points: pixels whose ridge centre lies inside them, at least the
  // lower threshold strong.
  struct LinePoint {
    bool valid = false;
    double px = 0.0, py = 0.0;  // sub-pixel centre
    double nx = 0.0, ny = 0.0;  // unit normal (across the line)
    double t = 0.0;             // centre = pixel + t n
    double strength = 0.0;      // -lambda
    int line = -1;              // the line it was linked into
  };
  std::vector<LinePoint> pts(static_cast<std::size_t>(w) * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const std::size_t i = at(x, y);
      // Hessian eigen-decomposition: the most negative eigenvalue and its direction.
      const double a = rxx[i], b = rxy[i], c = ryy[i];
      const double mean = 0.5 * (a + c), root = std::sqrt(0.25 * (a - c) * (a - c) + b * b);
      const double lambda = mean - root, other = mean + root;
      if (!(lambda < 0.0) || std::abs(lambda) < std::abs(other)) continue;
      double nx, ny;
      if (std::abs(b) > 1e-12) {
        nx = b;
        ny = lambda - a;
      } else if (a < c) {  // diagonal Hessian: the smaller entry's axis
        nx = 1.0;
        ny = 0.0;
      } else {
        nx = 0.0;
        ny = 1.0;
      }
      const double norm = std::hypot(nx, ny);
      nx /= norm;
      ny /= norm;
      const double t = -(rx[i] * nx + ry[i] * ny) / lambda;
      if (std::abs(t * nx) > o.pixel_boundary || std::abs(t * ny) > o.pixel_boundary) continue;
      const double strength = -lambda;
      if (strength < o.min_strength || strength < o.link_strength_noise * noise[static_cast<std::size_t>(x)]) continue;
      pts[i] = {true, x + t * nx, y + t * ny, nx, ny, t, strength, -1};
    }

  // Linking (Steger 1998, section 3.3): from the strongest unlinked point
  // above the upper threshold, follow the line both ways. From a point, the
  // next is one of the three 8-neighbours in the line's direction (the
  // tangent, perpendicular to n): the unlinked line point with the smallest
  // distance between the two centres plus the angle between the two
  // tangents. A line ends where no neighbour is a line point.
  std::vector<std::size_t> seeds;
  for (std::size_t i = 0; i < pts.size(); ++i)
    if (pts[i].valid && pts[i].strength >= o.min_strength_noise * noise[i % static_cast<std::size_t>(w)]) seeds.push_back(i);
  std::stable_sort(seeds.begin(), seeds.end(), [&](std::size_t a, std::size_t b) { return pts[a].strength > pts[b].strength; });
  struct Line {
    double weight = 0.0;  // sum of strengths
    int length = 0;       // points
  };
  std::vector<Line> lines;
  constexpr int kStep[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1}, {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
  const auto link = [&](std::size_t point, int id) {
    pts[point].line = id;
    lines[static_cast<std::size_t>(id)].weight += pts[point].strength;
    lines[static_cast<std::size_t>(id)].length += 1;
  };
  for (std::size_t seed : seeds) {
    if (pts[seed].line >= 0) continue;
    const int id = static_cast<int>(lines.size());
    lines.push_back({});
    link(seed, id);
    for (int way : {1, -1}) {
      std::size_t cur = seed;
      double dx = -pts[seed].ny * way, dy = pts[seed].nx * way;  // tangent
      for (;;) {
        const int cx = static_cast<int>(cur % static_cast<std::size_t>(w)), cy = static_cast<int>(cur / static_cast<std::size_t>(w));
        const int octant = static_cast<int>(std::lround(std::atan2(dy, dx) / (kPi / 4.0))) & 7;
        double best_cost = std::numeric_limits<double>::infinity();
        std::size_t best = 0;
        double best_dx = 0.0, best_dy = 0.0;
        for (int s : {octant, (octant + 1) & 7, (octant + 7) & 7}) {
          const int x = cx + kStep[s][0], y = cy + kStep[s][1];
          if (x < 0 || x >= w || y < 0 || y >= h) continue;
          const LinePoint& p = pts[at(x, y)];
          if (!p.valid || p.line >= 0) continue;
          double tx = -p.ny, ty = p.nx;
          if (tx * dx + ty * dy < 0.0) tx = -tx, ty = -ty;
          const double angle = std::acos(std::clamp(tx * dx + ty * dy, -1.0, 1.0));
          const double cost = std::hypot(p.px - pts[cur].px, p.py - pts[cur].py) + angle;
          if (cost < best_cost) {
            best_cost = cost;
            best = at(x, y);
            best_dx = tx;
            best_dy = ty;
          }
        }
        if (!std::isfinite(best_cost)) break;
        link(best, id);
        cur = best;
        dx = best_dx;
        dy = best_dy;
      }
    }
  }

  // Per column, the stripe is the heaviest line crossing it (at least
  // min_line_length points): its centre moved along the line onto the column,
  // row y + t / n_y (of its points in the column, the one whose centre lies
  // nearest the pixel: the most accurate expansion). Where it
  // crosses the column steeper than 60 degrees (|n_y| < 0.5) only, the column
  // holds a stripe without a centre (+infinity).
  std::vector<double> centre(static_cast<std::size_t>(w), std::numeric_limits<double>::quiet_NaN());
  for (int x = 0; x < w; ++x) {
    int best_line = -1;
    for (int y = 0; y < h; ++y) {
      const LinePoint& p = pts[at(x, y)];
      if (p.line < 0 || lines[static_cast<std::size_t>(p.line)].length < o.min_line_length) continue;
      if (best_line < 0 || lines[static_cast<std::size_t>(p.line)].weight > lines[static_cast<std::size_t>(best_line)].weight) best_line = p.line;
    }
    if (best_line < 0) continue;
    double nearest = std::numeric_limits<double>::infinity(), row = std::numeric_limits<double>::infinity();
    for (int y = 0; y < h; ++y) {
      const LinePoint& p = pts[at(x, y)];
      if (p.line != best_line || std::abs(p.ny) < 0.5 || std::abs(p.t) >= nearest) continue;
      nearest = std::abs(p.t);
      row = y + p.t / p.ny;
    }
    centre[static_cast<std::size_t>(x)] = row;
  }
  return centre;
}

ReferenceScore score_against_reference(const std::vector<double>& got, const std::vector<double>& ref) {
  ReferenceScore s;
  s.columns = static_cast<int>(std::min(got.size(), ref.size()));
  std::vector<double> distances;
  for (int x = 0; x < s.columns; ++x) {
    if (std::isinf(ref[x])) {  // a stripe crossing steeply: present, no centre to compare
      ++s.steep;
      continue;
    }
    const bool g = !std::isnan(got[x]), r = !std::isnan(ref[x]);
    s.reference += r;
    s.detected += g;
    if (g && !r) ++s.extra;
    if (!(g && r)) continue;
    ++s.both;
    const double d = std::abs(got[x] - ref[x]);
    distances.push_back(d);
    s.over_3px += d > 3.0;
  }
  s.median = median(distances);
  return s;
}

}  // namespace stripeline::test
